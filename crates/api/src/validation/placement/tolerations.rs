//! `spec.tolerations`: tolerations the API server accepts.

use super::checks::is_integer;
use crate::validation::syntax::{label_key_problem, label_value_problem};
use crate::validation::violation::{Violation, shown};
use k8s_openapi::api::core::v1::Toleration;

/// A toleration the API server accepts: a known operator and effect, no value with Exists, an
/// integer with Gt/Lt, `tolerationSeconds` only with NoExecute, and Exists when no key is given.
pub(super) fn toleration_violations(field: &str, t: &Toleration, out: &mut Vec<Violation>) {
    let key = t.key.as_deref().unwrap_or_default();
    let value = t.value.as_deref().unwrap_or_default();
    let effect = t.effect.as_deref().unwrap_or_default();
    let operator = t.operator.as_deref().unwrap_or_default();
    if !key.is_empty()
        && let Err(message) = label_key_problem(key)
    {
        out.push(Violation::new(format!("{field}.key"), key, message));
    }
    match operator {
        // Empty means Equal.
        "" | "Equal" | "Gt" | "Lt" if key.is_empty() => out.push(Violation::new(
            format!("{field}.operator"),
            format!("{operator:?} with no key"),
            format!(
                "must be Exists when no key is given (a toleration of every taint), got {:?}",
                if operator.is_empty() { "Equal" } else { operator }
            ),
        )),
        "" | "Equal" => {
            if let Err(message) = label_value_problem(value) {
                out.push(Violation::new(format!("{field}.value"), format!("{value:?}"), message));
            }
        }
        "Exists" if !value.is_empty() => out.push(Violation::new(
            format!("{field}.value"),
            format!("{value:?}"),
            format!(
                "must be empty when the operator is Exists (it tolerates every value of the key), got \"{}\"",
                shown(value)
            ),
        )),
        "Exists" => {}
        // Numeric comparisons (Kubernetes' TaintTolerationComparisonOperators feature).
        "Gt" | "Lt" if !is_integer(value) => out.push(Violation::new(
            format!("{field}.value"),
            format!("{value:?}"),
            format!(
                "must be an integer when the operator is {operator}, got \"{}\"",
                shown(value)
            ),
        )),
        "Gt" | "Lt" => {}
        _ => out.push(Violation::new(
            format!("{field}.operator"),
            format!("{operator:?}"),
            format!(
                "must be Equal, Exists, Gt or Lt, got \"{}\"",
                shown(operator)
            ),
        )),
    }
    if !matches!(effect, "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        out.push(Violation::new(
            format!("{field}.effect"),
            format!("{effect:?}"),
            format!(
                "must be NoSchedule, PreferNoSchedule or NoExecute (or empty for every effect), got \"{}\"",
                shown(effect)
            ),
        ));
    }
    if let Some(seconds) = t.toleration_seconds
        && effect != "NoExecute"
    {
        out.push(Violation::new(
            format!("{field}.tolerationSeconds"),
            format!("{seconds} with effect {effect:?}"),
            format!(
                "needs effect NoExecute (it is how long a pod stays on a node tainted NoExecute), got effect \"{}\"",
                shown(effect)
            ),
        ));
    }
}
