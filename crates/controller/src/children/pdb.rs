//! The PodDisruptionBudget of a Redis (DESIGN §3): `maxUnavailable` from the spec (default 1)
//! over every pod, so a node drain takes its pods down one at a time. Pure.

use super::meta::{metadata, metadata_differs};
use api::Redis;
use api::pods::selector_labels;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// The PodDisruptionBudget of `redis`: `maxUnavailable` of the spec over all of its pods.
pub fn pdb(redis: &Redis) -> Option<PodDisruptionBudget> {
    let redis_name = redis.metadata.name.as_deref()?;
    Some(PodDisruptionBudget {
        metadata: metadata(redis, redis_name.to_owned())?,
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(redis.spec.max_unavailable()),
            selector: Some(LabelSelector {
                match_labels: Some(selector_labels(redis_name)),
                match_expressions: None,
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    })
}

/// Whether applying `desired` would change the PodDisruptionBudget `current`.
pub fn pdb_differs(desired: &PodDisruptionBudget, current: Option<&PodDisruptionBudget>) -> bool {
    let Some(current) = current else {
        return true;
    };
    let want = desired.spec.clone().unwrap_or_default();
    let have = current.spec.clone().unwrap_or_default();
    metadata_differs(&desired.metadata, &current.metadata)
        || want.max_unavailable != have.max_unavailable
        || want.min_available != have.min_available
        || want.selector != have.selector
}
