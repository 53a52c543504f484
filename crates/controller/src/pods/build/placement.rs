//! Placement (§3h) beyond what the spec says as written: the default spread, and the spec's pod
//! labels and annotations less the operator's own keys.

use api::Mode;
use api::RedisSpec;
use api::pods::{
    HOSTNAME_TOPOLOGY_KEY, ZONE_TOPOLOGY_KEY, is_operator_annotation, is_operator_label,
    selector_labels,
};
use k8s_openapi::api::core::v1::{
    Affinity, PodAffinityTerm, PodAntiAffinity, TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::BTreeMap;

/// The spread the pods of `redis_name` get when the spec sets neither affinity nor
/// topologySpreadConstraints: never a reason not to schedule, only a preference. Each pod
/// prefers a node with the fewest pods of this Redis (a spread constraint on the hostname,
/// maxSkew 1, ScheduleAnyway); in Replication mode each also prefers a zone without one (a
/// preferred pod anti-affinity on the zone label), so that losing a node or a zone leaves a
/// replica to fail over to.
///
/// The zone preference is an anti-affinity, not a second spread constraint, because the
/// scheduler scores only the nodes that carry every topology key of a pod's spread constraints:
/// on a cluster whose nodes have no zone label (bare metal, kubeadm, kwok) a zone constraint
/// would leave every node unscored, which would turn the hostname spread off too. A preferred
/// anti-affinity only counts on nodes that have the label and leaves the others neutral.
pub fn default_spread(
    redis_name: &str,
    mode: Mode,
) -> (Vec<TopologySpreadConstraint>, Option<Affinity>) {
    let own_pods = LabelSelector {
        match_labels: Some(selector_labels(redis_name)),
        match_expressions: None,
    };
    let nodes = TopologySpreadConstraint {
        max_skew: 1,
        topology_key: HOSTNAME_TOPOLOGY_KEY.into(),
        when_unsatisfiable: "ScheduleAnyway".into(),
        label_selector: Some(own_pods.clone()),
        ..TopologySpreadConstraint::default()
    };
    let zones = (mode == Mode::Replication).then(|| Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(own_pods),
                        topology_key: ZONE_TOPOLOGY_KEY.into(),
                        ..PodAffinityTerm::default()
                    },
                },
            ]),
            required_during_scheduling_ignored_during_execution: None,
        }),
        ..Affinity::default()
    });
    (vec![nodes], zones)
}

/// The spec's podLabels, less any key the operator sets itself (the webhook refuses those; a
/// Redis stored without it must not take the operator's selectors or role labels either).
pub(super) fn user_labels(spec: &RedisSpec) -> BTreeMap<String, String> {
    let labels = spec.pod_labels.iter().flatten();
    labels
        .filter(|(k, _)| !is_operator_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The spec's podAnnotations, less any key the operator sets itself.
pub(super) fn user_annotations(spec: &RedisSpec) -> BTreeMap<String, String> {
    let annotations = spec.pod_annotations.iter().flatten();
    annotations
        .filter(|(k, _)| !is_operator_annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
