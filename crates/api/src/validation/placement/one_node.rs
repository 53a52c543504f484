//! What the warning about a Replication Redis held on one node reads: the nodes a required node
//! affinity pins, and whether a pod affinity term counts the Redis's own pods.

use super::checks::NODE_NAME_FIELD;
use super::selector::{is_empty_selector, selector_matches};
use crate::pods::{HOSTNAME_TOPOLOGY_KEY, pod_labels};
use crate::types::Redis;
use k8s_openapi::api::core::v1::{NodeSelectorTerm, PodAffinityTerm};
use std::collections::{BTreeMap, BTreeSet};

/// The nodes a required node affinity allows when every one of its terms names them (an `In` on
/// the hostname label, or on the node's name); `None` when some term allows nodes by anything else.
pub(super) fn pinned_nodes(terms: &[NodeSelectorTerm]) -> Option<BTreeSet<&str>> {
    let mut nodes = BTreeSet::new();
    for term in terms {
        let pins = term
            .match_expressions
            .iter()
            .flatten()
            .filter(|r| r.key == HOSTNAME_TOPOLOGY_KEY)
            .chain(
                term.match_fields
                    .iter()
                    .flatten()
                    .filter(|r| r.key == NODE_NAME_FIELD),
            )
            .filter(|r| r.operator == "In");
        // A term's requirements all hold: it allows the nodes every pin of it names.
        let mut allowed: Option<BTreeSet<&str>> = None;
        for pin in pins {
            let named: BTreeSet<&str> = pin.values.iter().flatten().map(String::as_str).collect();
            allowed = Some(match allowed {
                None => named,
                Some(before) => before.intersection(&named).copied().collect(),
            });
        }
        nodes.extend(allowed?);
    }
    Some(nodes)
}

/// The labels every pod of `redis` carries from its creation (the role label comes later):
/// the operator's and the spec's `podLabels`. `None` while the name is not known yet.
pub(super) fn own_pod_labels(redis: &Redis) -> Option<BTreeMap<String, String>> {
    let name = redis.metadata.name.as_deref().filter(|n| !n.is_empty())?;
    let mut labels = redis.spec.pod_labels.clone().unwrap_or_default();
    labels.extend(pod_labels(name));
    Some(labels)
}

/// Whether a pod affinity term counts the pods of `redis` itself: its namespaces include the
/// Redis's, and its label selector matches their labels.
pub(super) fn selects_own_pods(
    redis: &Redis,
    term: &PodAffinityTerm,
    labels: &BTreeMap<String, String>,
) -> bool {
    let own_namespace = match (&term.namespaces, &term.namespace_selector) {
        (_, Some(selector)) => is_empty_selector(selector),
        (Some(names), None) if !names.is_empty() => names
            .iter()
            .any(|n| Some(n.as_str()) == redis.metadata.namespace.as_deref()),
        _ => true,
    };
    own_namespace
        && term
            .label_selector
            .as_ref()
            .is_some_and(|s| selector_matches(s, labels))
}
