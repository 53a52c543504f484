//! Label selectors (of pods or namespaces, here and in `spec.networkPolicy`): the requirements
//! that can match, and what a selector matches.

use super::checks::{label_pair, values_of};
use crate::validation::syntax::{label_key_problem, label_value_problem};
use crate::validation::violation::{Violation, shown, shown_list};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use std::collections::BTreeMap;

/// A label selector (of pods or namespaces): valid labels, requirements that can match.
pub(crate) fn selector_violations(field: &str, selector: &LabelSelector, out: &mut Vec<Violation>) {
    for (key, value) in selector.match_labels.iter().flatten() {
        let field = format!("{field}.matchLabels[{}]", shown(key));
        label_pair(&field, key, value, out);
    }
    for (j, r) in selector.match_expressions.iter().flatten().enumerate() {
        label_requirement_violations(&format!("{field}.matchExpressions[{j}]"), r, out);
    }
}

/// A label selector requirement: In/NotIn with values, Exists/DoesNotExist without.
fn label_requirement_violations(
    field: &str,
    r: &LabelSelectorRequirement,
    out: &mut Vec<Violation>,
) {
    if let Err(message) = label_key_problem(&r.key) {
        out.push(Violation::new(format!("{field}.key"), &r.key, message));
    }
    let values = r.values.as_deref().unwrap_or_default();
    let listed = shown_list(values);
    let written = values_of(r.values.as_ref());
    let operator = r.operator.as_str();
    let problem = match operator {
        "In" | "NotIn" => values
            .is_empty()
            .then(|| format!("must hold at least one value when the operator is {operator}")),
        "Exists" | "DoesNotExist" => (!values.is_empty()).then(|| {
            format!("must be empty when the operator is {operator} (it matches on the key alone), got {listed}")
        }),
        _ => {
            out.push(Violation::new(
                format!("{field}.operator"),
                format!("{operator:?}"),
                format!(
                    "must be In, NotIn, Exists or DoesNotExist, got \"{}\"",
                    shown(operator)
                ),
            ));
            None
        }
    };
    if let Some(message) = problem {
        out.push(Violation::new(
            format!("{field}.values"),
            format!("{operator} {written}"),
            message,
        ));
    }
    for value in values {
        if let Err(message) = label_value_problem(value) {
            out.push(Violation::new(
                format!("{field}.values"),
                format!("{value:?}"),
                message,
            ));
        }
    }
}

/// `{}`: every object (as a namespace selector, every namespace).
pub(super) fn is_empty_selector(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// Whether `selector` matches an object with `labels` (unknown operators match nothing).
pub(super) fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> bool {
    let pairs = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions = selector.match_expressions.iter().flatten().all(|r| {
        let values = r.values.as_deref().unwrap_or_default();
        let value = labels.get(&r.key);
        match r.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    pairs && expressions
}
