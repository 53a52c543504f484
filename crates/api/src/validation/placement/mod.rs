//! The rules on pod placement (DESIGN §2, for §3h placement): `spec.nodeSelector`, `affinity`,
//! `tolerations`, `topologySpreadConstraints`, `priorityClassName`, `podLabels` and
//! `podAnnotations`. They refuse what the API server would refuse in the pods the controller
//! builds (it would answer each create with an error, and the Redis would never run), selectors
//! that can never match, and pod labels or annotations that would take the operator's own keys.
//! The warning: a Replication Redis whose required placement puts every pod on one node.
//!
//! This module holds the two entry points; the parts:
//! - `affinity`: `spec.affinity`'s node and pod (anti-)affinity terms.
//! - `tolerations`: `spec.tolerations`.
//! - `spread`: `spec.topologySpreadConstraints`.
//! - `selector`: label selectors, what they may hold and what they match.
//! - `checks`: the small checks the parts share (a label pair, a topology key, an integer).
//! - `one_node`: what the warning about one node reads (pinned nodes, the Redis's own pods).

mod affinity;
mod checks;
mod one_node;
mod selector;
mod spread;
mod tolerations;

use super::syntax::{annotation_key_problem, subdomain_problem};
use super::violation::{Violation, shown};
use crate::pods::{HOSTNAME_TOPOLOGY_KEY, is_operator_annotation, is_operator_label};
use crate::types::{Mode, Redis, RedisSpec};
use affinity::affinity_violations;
use checks::label_pair;
use one_node::{own_pod_labels, pinned_nodes, selects_own_pods};
use spread::spread_violations;
use tolerations::toleration_violations;

pub(super) use selector::selector_violations;

/// Most bytes (keys and values) the API server accepts in an object's annotations.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Every placement rule broken by `spec`, in the order of the fields.
pub(super) fn placement_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut out = Vec::new();
    if let Some(selector) = &spec.node_selector {
        for (key, value) in selector {
            let field = format!("spec.nodeSelector[{}]", shown(key));
            label_pair(&field, key, value, &mut out);
        }
    }
    if let Some(affinity) = &spec.affinity {
        affinity_violations(affinity, &mut out);
    }
    for (i, toleration) in spec.tolerations.iter().flatten().enumerate() {
        toleration_violations(&format!("spec.tolerations[{i}]"), toleration, &mut out);
    }
    let constraints = spec
        .topology_spread_constraints
        .as_deref()
        .unwrap_or_default();
    for (i, constraint) in constraints.iter().enumerate() {
        spread_violations(i, constraint, &constraints[..i], &mut out);
    }
    if let Some(name) = &spec.priority_class_name
        && let Err(message) = subdomain_problem(name)
    {
        out.push(Violation::new(
            "spec.priorityClassName",
            format!("{name:?}"),
            message,
        ));
    }
    if let Some(labels) = &spec.pod_labels {
        for (key, value) in labels {
            let field = format!("spec.podLabels[{}]", shown(key));
            if is_operator_label(key) {
                out.push(Violation::new(
                    &field,
                    key,
                    format!(
                        "\"{}\" is a label the operator sets on its pods (its selectors, Services and roles read it); choose another key",
                        shown(key)
                    ),
                ));
            } else {
                label_pair(&field, key, value, &mut out);
            }
        }
    }
    if let Some(annotations) = &spec.pod_annotations {
        for key in annotations.keys() {
            let field = format!("spec.podAnnotations[{}]", shown(key));
            if is_operator_annotation(key) {
                out.push(Violation::new(
                    &field,
                    key,
                    format!(
                        "\"{}\" is the operator's own (every {} key is); choose another key",
                        shown(key),
                        crate::pods::OPERATOR_KEY_PREFIX
                    ),
                ));
            } else if let Err(message) = annotation_key_problem(key) {
                out.push(Violation::new(&field, key, message));
            }
        }
        let bytes: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
        if bytes > MAX_ANNOTATIONS_BYTES {
            out.push(Violation::new(
                "spec.podAnnotations",
                bytes,
                format!(
                    "must be no more than {MAX_ANNOTATIONS_BYTES} bytes in total (keys and values), got {bytes}"
                ),
            ));
        }
    }
    out
}

/// Allowed but unwise placement: a Replication Redis of several pods whose required placement
/// puts them all on one node (losing it loses the primary and every replica at once), and spread
/// constraints without a selector (they count no pod, so spread nothing).
pub(super) fn placement_warnings(redis: &Redis) -> Vec<String> {
    let spec = &redis.spec;
    let mut warnings = Vec::new();
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        if c.label_selector.is_none() {
            warnings.push(format!(
                "spec.topologySpreadConstraints[{i}].labelSelector: not set, so the constraint counts no pods and spreads nothing; select this Redis's pods, e.g. app.kubernetes.io/instance: {}",
                redis
                    .metadata
                    .name
                    .as_deref()
                    .map_or_else(|| "<name>".to_owned(), shown)
            ));
        }
    }
    let replicas = spec.replicas();
    if spec.mode() != Mode::Replication || replicas < 2 {
        return warnings;
    }
    let one_node = |field: &str, how: String| {
        format!(
            "{field}: {how}, so the {replicas} pods of this Replication Redis share one node: losing it loses the primary and every replica at once"
        )
    };
    if let Some(node) = spec
        .node_selector
        .as_ref()
        .and_then(|s| s.get(HOSTNAME_TOPOLOGY_KEY))
    {
        warnings.push(one_node(
            &format!("spec.nodeSelector[{HOSTNAME_TOPOLOGY_KEY}]"),
            format!("pins every pod to node \"{}\"", shown(node)),
        ));
    }
    let affinity = spec.affinity.as_ref();
    let required_nodes = affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .and_then(|r| pinned_nodes(&r.node_selector_terms));
    if let Some(nodes) = required_nodes
        && let [node] = nodes.iter().collect::<Vec<_>>()[..]
    {
        warnings.push(one_node(
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            format!("allows node \"{}\" only", shown(node)),
        ));
    }
    let own_labels = own_pod_labels(redis);
    let together = affinity
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|p| {
            p.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    for (i, term) in together.iter().copied().flatten().enumerate() {
        if term.topology_key == HOSTNAME_TOPOLOGY_KEY
            && own_labels
                .as_ref()
                .is_some_and(|labels| selects_own_pods(redis, term, labels))
        {
            warnings.push(one_node(
                &format!(
                    "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                ),
                format!("requires each pod on the node of another pod of this Redis ({HOSTNAME_TOPOLOGY_KEY})"),
            ));
        }
    }
    warnings
}
