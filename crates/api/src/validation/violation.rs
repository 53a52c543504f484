//! [`Violation`], one broken admission rule (DESIGN §2): the field path as `kubectl` users write
//! it, a message they can act on, and the effective value the update ratchet compares. Every rule
//! module of `validation` reports through it, and echoes a tenant's strings through [`shown`].

pub use crate::shown::{MAX_SHOWN_CHARS, shown, shown_list};
use std::fmt;

/// One broken rule: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Field path as kubectl users write it, e.g. `spec.port`.
    pub field: String,
    pub message: String,
    /// The effective value the rule judged (default applied), as the update ratchet compares it:
    /// whole, never shown (only `field` and `message` echo values, through [`shown`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_values_are_shown_as_they_are() {
        for value in [
            "",
            "redis:7.2",
            "docker.io/library/redis@sha256:abc",
            "a\"b'c\\d",
            "é日本",
        ] {
            assert_eq!(shown(value), value);
        }
        let longest = "x".repeat(MAX_SHOWN_CHARS);
        assert_eq!(shown(&longest), longest);
    }

    #[test]
    fn control_and_unprintable_characters_are_escaped() {
        assert_eq!(
            shown("a\nb\r\t\x1b[31m\x00\u{7f}\u{85}\u{202e}z"),
            "a\\nb\\r\\t\\u{1b}[31m\\0\\u{7f}\\u{85}\\u{202e}z"
        );
    }

    #[test]
    fn long_values_are_cut_on_a_character_and_marked_with_their_size() {
        let long = format!("{}日本語", "x".repeat(MAX_SHOWN_CHARS - 1));
        assert_eq!(
            shown(&long),
            format!(
                "{}日…({} bytes)",
                "x".repeat(MAX_SHOWN_CHARS - 1),
                long.len()
            )
        );
        // Escapes count: the cut bounds what is echoed, not what was sent.
        let escapes = "\x1b".repeat(1024 * 1024);
        let cut = shown(&escapes);
        assert!(cut.len() < MAX_SHOWN_CHARS + 32, "{}", cut.len());
        assert!(cut.ends_with("…(1048576 bytes)"), "{cut}");
        assert!(!cut.contains('\x1b'));
    }

    #[test]
    fn lists_are_shown_as_debug_writes_them_and_cut() {
        let few = ["ReadWriteOnce", "a b"];
        assert_eq!(shown_list(&few), format!("{few:?}"));
        assert_eq!(shown_list(&[] as &[&str]), "[]");
        let many = vec!["x".repeat(100); 10_000];
        let cut = shown_list(&many);
        assert!(cut.len() < 3 * MAX_SHOWN_CHARS, "{}", cut.len());
        assert!(cut.ends_with(", …(10000 values)]"), "{cut}");
    }
}
