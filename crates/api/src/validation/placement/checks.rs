//! The small checks the parts of placement share: a label key and value, a topology key, a
//! requirement's values as written, an integer as the scheduler reads one.

use crate::pods::HOSTNAME_TOPOLOGY_KEY;
use crate::validation::syntax::{label_key_problem, label_value_problem};
use crate::validation::violation::Violation;

/// The one node field a node selector term's `matchFields` can name.
pub(super) const NODE_NAME_FIELD: &str = "metadata.name";

/// A label key and value (`spec.nodeSelector`, `spec.podLabels`, a selector's `matchLabels`).
pub(super) fn label_pair(field: &str, key: &str, value: &str, out: &mut Vec<Violation>) {
    if let Err(message) = label_key_problem(key) {
        out.push(Violation::new(field, key, message));
    }
    if let Err(message) = label_value_problem(value) {
        // The key too: the field shows it cut, and two long keys must not read as one.
        out.push(Violation::new(field, format!("{key:?}={value:?}"), message));
    }
}

/// The values of a requirement, as written (the ratchet's value; messages show
/// [`shown_list`](crate::validation::shown_list)).
pub(super) fn values_of(values: Option<&Vec<String>>) -> String {
    format!("{:?}", values.map(Vec::as_slice).unwrap_or_default())
}

/// A topology key: the node label whose value makes one domain; never empty.
pub(super) fn topology_key_violation(field: &str, key: &str, out: &mut Vec<Violation>) {
    if key.is_empty() {
        out.push(Violation::new(
            field,
            "\"\"",
            format!(
                "must not be empty: it names the node label whose nodes count as one domain, such as {HOSTNAME_TOPOLOGY_KEY}"
            ),
        ));
    } else if let Err(message) = label_key_problem(key) {
        out.push(Violation::new(field, key, message));
    }
}

/// A decimal integer as the scheduler reads one (an optional `-`, digits, within 64 bits).
pub(super) fn is_integer(text: &str) -> bool {
    !text.starts_with('+') && text.parse::<i64>().is_ok()
}
