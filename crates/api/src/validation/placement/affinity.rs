//! `spec.affinity`: node affinity terms that can match, pod (anti-)affinity terms with a topology
//! key and selectors that can match, weights the scheduler accepts.

use super::checks::{NODE_NAME_FIELD, is_integer, topology_key_violation, values_of};
use super::selector::selector_violations;
use crate::validation::syntax::label_key_problem;
use crate::validation::violation::{Violation, shown, shown_list};
use k8s_openapi::api::core::v1::{
    Affinity, NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, WeightedPodAffinityTerm,
};

/// `spec.affinity`: node affinity terms that can match, pod (anti-)affinity terms with a
/// topology key and selectors that can match, weights the scheduler accepts.
pub(super) fn affinity_violations(affinity: &Affinity, out: &mut Vec<Violation>) {
    if let Some(node) = &affinity.node_affinity {
        let base = "spec.affinity.nodeAffinity";
        if let Some(required) = &node.required_during_scheduling_ignored_during_execution {
            let field =
                format!("{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
            let terms = &required.node_selector_terms;
            if terms.is_empty() {
                out.push(Violation::new(
                    &field,
                    "[]",
                    "must hold at least one term: with none no node matches, so the pods could never be scheduled",
                ));
            } else if terms.iter().all(term_is_empty) {
                out.push(Violation::new(
                    &field,
                    format!("{} empty term(s)", terms.len()),
                    "every term is empty, and an empty term matches no node, so the pods could never be scheduled",
                ));
            }
            for (i, term) in terms.iter().enumerate() {
                node_term_violations(&format!("{field}[{i}]"), term, out);
            }
        }
        let preferred = node
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten();
        for (i, term) in preferred.enumerate() {
            let field = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
            weight_violation(&field, term.weight, out);
            node_term_violations(&format!("{field}.preference"), &term.preference, out);
        }
    }
    if let Some(pod) = &affinity.pod_affinity {
        pod_terms_violations(
            "spec.affinity.podAffinity",
            pod.required_during_scheduling_ignored_during_execution
                .as_deref(),
            pod.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            out,
        );
    }
    if let Some(anti) = &affinity.pod_anti_affinity {
        pod_terms_violations(
            "spec.affinity.podAntiAffinity",
            anti.required_during_scheduling_ignored_during_execution
                .as_deref(),
            anti.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            out,
        );
    }
}

/// A node selector term without a single requirement (it matches no node).
fn term_is_empty(term: &NodeSelectorTerm) -> bool {
    term.match_expressions
        .as_deref()
        .unwrap_or_default()
        .is_empty()
        && term.match_fields.as_deref().unwrap_or_default().is_empty()
}

fn node_term_violations(field: &str, term: &NodeSelectorTerm, out: &mut Vec<Violation>) {
    for (j, r) in term.match_expressions.iter().flatten().enumerate() {
        node_requirement_violations(&format!("{field}.matchExpressions[{j}]"), r, out);
    }
    for (j, r) in term.match_fields.iter().flatten().enumerate() {
        node_field_violations(&format!("{field}.matchFields[{j}]"), r, out);
    }
}

/// A node label requirement: In/NotIn with values, Exists/DoesNotExist without, Gt/Lt with one
/// integer (the scheduler compares it as a number; anything else matches no node).
fn node_requirement_violations(field: &str, r: &NodeSelectorRequirement, out: &mut Vec<Violation>) {
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
        "Gt" | "Lt" => (values.len() != 1 || !is_integer(&values[0])).then(|| {
            format!("must hold exactly one value, an integer, when the operator is {operator}, got {listed}")
        }),
        _ => {
            out.push(Violation::new(
                format!("{field}.operator"),
                format!("{operator:?}"),
                format!(
                    "must be In, NotIn, Exists, DoesNotExist, Gt or Lt, got \"{}\"",
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
}

/// A node field requirement: only the node's name, with In or NotIn and one value.
fn node_field_violations(field: &str, r: &NodeSelectorRequirement, out: &mut Vec<Violation>) {
    if r.key != NODE_NAME_FIELD {
        out.push(Violation::new(
            format!("{field}.key"),
            &r.key,
            format!(
                "must be {NODE_NAME_FIELD} (the only node field a selector can match), got \"{}\"",
                shown(&r.key)
            ),
        ));
    }
    let operator = r.operator.as_str();
    if !matches!(operator, "In" | "NotIn") {
        out.push(Violation::new(
            format!("{field}.operator"),
            format!("{operator:?}"),
            format!(
                "must be In or NotIn for a node field, got \"{}\"",
                shown(operator)
            ),
        ));
    } else if r.values.as_ref().is_none_or(|v| v.len() != 1) {
        out.push(Violation::new(
            format!("{field}.values"),
            format!("{operator} {}", values_of(r.values.as_ref())),
            format!(
                "must hold exactly one node name for a node field, got {}",
                shown_list(r.values.as_deref().unwrap_or_default())
            ),
        ));
    }
}

/// The required and preferred terms of a pod affinity or anti-affinity at `base`.
fn pod_terms_violations(
    base: &str,
    required: Option<&[PodAffinityTerm]>,
    preferred: Option<&[WeightedPodAffinityTerm]>,
    out: &mut Vec<Violation>,
) {
    for (i, term) in required.unwrap_or_default().iter().enumerate() {
        let field = format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]");
        pod_term_violations(&field, term, out);
    }
    for (i, term) in preferred.unwrap_or_default().iter().enumerate() {
        let field = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        weight_violation(&field, term.weight, out);
        pod_term_violations(
            &format!("{field}.podAffinityTerm"),
            &term.pod_affinity_term,
            out,
        );
    }
}

fn pod_term_violations(field: &str, term: &PodAffinityTerm, out: &mut Vec<Violation>) {
    if let Some(selector) = &term.label_selector {
        selector_violations(&format!("{field}.labelSelector"), selector, out);
    }
    if let Some(selector) = &term.namespace_selector {
        selector_violations(&format!("{field}.namespaceSelector"), selector, out);
    }
    topology_key_violation(&format!("{field}.topologyKey"), &term.topology_key, out);
}

fn weight_violation(field: &str, weight: i32, out: &mut Vec<Violation>) {
    if !(1..=100).contains(&weight) {
        out.push(Violation::new(
            format!("{field}.weight"),
            weight,
            format!("must be between 1 and 100, got {weight}"),
        ));
    }
}
