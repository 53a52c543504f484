//! [`Violation`], one broken admission rule (DESIGN §2): the field path as `kubectl` users write
//! it, a message they can act on, and the effective value the update ratchet compares. Every rule
//! module of `validation` reports through it.

use std::fmt;

/// One broken rule: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Field path as kubectl users write it, e.g. `spec.port`.
    pub field: String,
    pub message: String,
    /// The effective value the rule judged (default applied), as the update ratchet compares it.
    pub value: String,
}

impl Violation {
    pub(super) fn new(
        field: impl Into<String>,
        value: impl ToString,
        message: impl Into<String>,
    ) -> Self {
        Violation {
            field: field.into(),
            message: message.into(),
            value: value.to_string(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
