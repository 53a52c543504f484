//! The rule on `spec.podDisruptionBudget` (DESIGN §2): `maxUnavailable` is a count >= 0 or a
//! percentage from `0%` to `100%`, as the API server's PodDisruptionBudget validation reads it.

use super::violation::{Violation, shown};
use crate::types::RedisSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// `spec.podDisruptionBudget.maxUnavailable`: a count >= 0 or a percentage `0%`..`100%`.
pub(super) fn pdb_violations(spec: &RedisSpec) -> Vec<Violation> {
    let Some(max) = spec
        .pod_disruption_budget
        .as_ref()
        .and_then(|p| p.max_unavailable.as_ref())
    else {
        return Vec::new();
    };
    let field = "spec.podDisruptionBudget.maxUnavailable";
    match max {
        IntOrString::Int(n) if *n < 0 => {
            vec![Violation::new(field, n, format!("must be >= 0, got {n}"))]
        }
        IntOrString::Int(_) => Vec::new(),
        IntOrString::String(text) if percentage(text).is_some_and(|p| p <= 100) => Vec::new(),
        IntOrString::String(text) => vec![Violation::new(
            field,
            format!("{text:?}"),
            format!(
                "must be a number >= 0 or a percentage between \"0%\" and \"100%\", got \"{}\"",
                shown(text)
            ),
        )],
    }
}

/// `N` of a string `N%` (digits only, as the API server's PodDisruptionBudget validation reads
/// it), if it is one.
fn percentage(text: &str) -> Option<u64> {
    let digits = text.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Too many digits to fit is certainly more than 100.
    Some(digits.parse().unwrap_or(u64::MAX))
}
