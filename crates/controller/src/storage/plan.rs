//! The claims of a Redis (DESIGN §3d), planned from the cache of claims: which to create, grow,
//! own or release, and delete; which a pod of the Redis may mount; the patch of a claim's owner
//! references and the note of the Event that names the writes. Pure.

use api::Redis;
use api::storage::{
    ANNOTATION_CREATED_BY, RetentionPolicy, StorageSpec, claim_name, claim_ordinal, quantity_bytes,
};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use std::collections::BTreeSet;

/// The claim of `ordinal` as the operator creates it. `None` if the Redis has no name or uid.
pub fn desired_claim(
    redis: &Redis,
    storage: &StorageSpec,
    ordinal: u32,
) -> Option<PersistentVolumeClaim> {
    let name = redis.metadata.name.as_deref()?;
    let uid = redis.metadata.uid.clone()?;
    let owner = owner_reference(redis)?;
    Some(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim_name(name, ordinal)),
            namespace: redis.metadata.namespace.clone(),
            labels: Some(api::pods::selector_labels(name)),
            annotations: Some([(ANNOTATION_CREATED_BY.to_owned(), uid)].into()),
            owner_references: (storage.when_deleted() == RetentionPolicy::Delete)
                .then(|| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(storage.access_modes()),
            storage_class_name: storage.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some([("storage".to_owned(), storage.size.clone())].into()),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    })
}

/// The owner reference a claim carries under `whenDeleted: Delete`: not the controller
/// reference (the claim outlives pods, and a claim made by hand may have its own controller).
pub fn owner_reference(redis: &Redis) -> Option<OwnerReference> {
    let mut owner = redis.controller_owner_ref(&())?;
    owner.controller = None;
    owner.block_owner_deletion = None;
    Some(owner)
}

/// One write to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimStep {
    /// Create the claim of this ordinal.
    Create(u32),
    /// Add (`true`) or remove (`false`) the Redis's owner reference.
    SetOwned { claim: String, owned: bool },
    /// Write the larger size into the claim.
    Grow { claim: String },
    /// Delete the claim of an ordinal that is gone (`whenScaled: Delete`), if it is still this uid:
    /// only a claim this Redis made (see [`made_by`]).
    Delete { claim: String, uid: String },
}

/// What a pass does with the claims, and which claims could not grow.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ClaimPlan {
    pub steps: Vec<ClaimStep>,
    /// Claims smaller than the spec whose StorageClass does not allow expansion, with the class.
    pub cannot_grow: Vec<(String, Option<String>)>,
}

/// The claims of one Redis as the cache sees them, and what the pass knows of their classes.
pub struct ClaimsSeen<'a> {
    pub redis_name: &'a str,
    pub redis_uid: &'a str,
    /// Claims in the Redis's namespace carrying its labels.
    pub claims: &'a [&'a PersistentVolumeClaim],
    /// Ordinals that have a pod (terminating ones included).
    pub pod_ordinals: &'a BTreeSet<u32>,
    /// Whether a StorageClass allows expansion; `None` when it is not known (not asked yet).
    pub expandable: &'a dyn Fn(Option<&str>) -> Option<bool>,
}

/// Plans the claim writes of one pass. Nothing when every claim is as it should be.
pub fn plan(storage: &StorageSpec, replicas: u32, seen: &ClaimsSeen<'_>) -> ClaimPlan {
    let mut plan = ClaimPlan::default();
    let wanted_bytes = quantity_bytes(&storage.size.0);
    let owned_wanted = storage.when_deleted() == RetentionPolicy::Delete;
    let mut have = BTreeSet::new();
    for claim in seen.claims {
        let Some(name) = claim.metadata.name.as_deref() else {
            continue;
        };
        let Some(ordinal) = claim_ordinal(seen.redis_name, name) else {
            continue;
        };
        if claim.metadata.deletion_timestamp.is_some() {
            continue;
        }
        have.insert(ordinal);
        if ordinal >= replicas {
            if storage.when_scaled() == RetentionPolicy::Delete
                && !seen.pod_ordinals.contains(&ordinal)
                && made_by(claim, seen.redis_uid)
            {
                plan.steps.push(ClaimStep::Delete {
                    claim: name.to_owned(),
                    uid: claim.metadata.uid.clone().unwrap_or_default(),
                });
            }
            continue;
        }
        let owned = claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == seen.redis_uid);
        if owned != owned_wanted {
            plan.steps.push(ClaimStep::SetOwned {
                claim: name.to_owned(),
                owned: owned_wanted,
            });
        }
        if let (Some(requested), Some(wanted)) = (requested_bytes(claim), wanted_bytes)
            && requested < wanted
        {
            let class = claim
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.as_deref());
            match (seen.expandable)(class) {
                Some(true) => plan.steps.push(ClaimStep::Grow {
                    claim: name.to_owned(),
                }),
                _ => plan
                    .cannot_grow
                    .push((name.to_owned(), class.map(str::to_owned))),
            }
        }
    }
    for ordinal in 0..replicas {
        if !have.contains(&ordinal) {
            plan.steps.push(ClaimStep::Create(ordinal));
        }
    }
    plan
}

/// Whether the Redis of `uid` made this claim: the creator's annotation, or (claims made before
/// it was written) its owner reference under `whenDeleted: Delete`. A claim retained from an
/// earlier Redis of the same name is used by the new one but never deleted by it.
pub fn made_by(claim: &PersistentVolumeClaim, uid: &str) -> bool {
    let annotated = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_CREATED_BY))
        .is_some_and(|creator| creator == uid);
    annotated
        || claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid)
}

/// The storage a claim requests, in bytes.
pub fn requested_bytes(claim: &PersistentVolumeClaim) -> Option<u128> {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| quantity_bytes(&q.0))
}

/// The size request of a grown claim: only `spec.resources.requests.storage` changes.
pub fn grow_patch(size: &Quantity) -> serde_json::Value {
    serde_json::json!({"spec": {"resources": {"requests": {"storage": size}}}})
}

/// Whether a claim carries the labels of the Redis named `name`: made or retained by it (or by
/// an earlier Redis of that name), or labelled for it by hand. Only such a claim is mounted.
pub fn carries_labels_of(claim: &PersistentVolumeClaim, name: &str) -> bool {
    let labels = claim.labels();
    api::pods::selector_labels(name)
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value))
}

/// The merge patch that makes a claim's owner references its own without the Redis's (of
/// `uid`), plus `owner` when given. The whole list replaces the stored one, so it carries the
/// claim's resourceVersion: it applies only if nobody changed the claim since.
pub fn owners_patch(
    claim: &PersistentVolumeClaim,
    uid: &str,
    owner: Option<OwnerReference>,
) -> serde_json::Value {
    let owners: Vec<OwnerReference> = claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.uid != uid)
        .cloned()
        .chain(owner)
        .collect();
    serde_json::json!({"metadata": {
        "ownerReferences": owners,
        "resourceVersion": claim.resource_version(),
    }})
}

/// The note of the Normal Event of a pass that wrote claims.
pub fn changed_note(written: &[String]) -> Option<String> {
    (!written.is_empty()).then(|| format!("Claims: {}", written.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redis(storage: serde_json::Value) -> (Redis, StorageSpec) {
        let spec = serde_json::from_value(json!({"replicas": 3})).expect("spec");
        let mut r = Redis::new("cache", spec);
        r.metadata.namespace = Some("ns".into());
        r.metadata.uid = Some("u-1".into());
        (r, serde_json::from_value(storage).expect("storage"))
    }

    fn claim(name: &str, size: &str, owner: Option<&str>) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {
                "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "ownerReferences": owner.map(|uid| vec![json!({
                    "apiVersion": "myapp.tangx.in/v1", "kind": "Redis", "name": "cache", "uid": uid
                })]),
            },
            "spec": {"storageClassName": "std", "resources": {"requests": {"storage": size}}},
        }))
        .expect("claim")
    }

    fn plan_with(
        storage: &StorageSpec,
        replicas: u32,
        claims: &[PersistentVolumeClaim],
        pods: &[u32],
        expandable: Option<bool>,
    ) -> ClaimPlan {
        let claims: Vec<&PersistentVolumeClaim> = claims.iter().collect();
        let pod_ordinals: BTreeSet<u32> = pods.iter().copied().collect();
        let expandable = move |_: Option<&str>| expandable;
        plan(
            storage,
            replicas,
            &ClaimsSeen {
                redis_name: "cache",
                redis_uid: "u-1",
                claims: &claims,
                pod_ordinals: &pod_ordinals,
                expandable: &expandable,
            },
        )
    }

    #[test]
    fn the_claim_has_the_statefulset_name_size_and_default_mode() {
        let (r, storage) = redis(json!({"size": "1Gi", "storageClassName": "fast"}));
        let c = desired_claim(&r, &storage, 2).expect("claim");
        assert_eq!(c.metadata.name.as_deref(), Some("data-cache-2"));
        assert_eq!(c.metadata.owner_references, None, "Retain: no owner");
        let spec = c.spec.expect("spec");
        assert_eq!(spec.access_modes, Some(vec!["ReadWriteOnce".to_owned()]));
        assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
        let requests = spec.resources.and_then(|r| r.requests).expect("requests");
        assert_eq!(requests["storage"], Quantity("1Gi".into()));
        assert_eq!(
            c.metadata.labels.expect("labels")["app.kubernetes.io/instance"],
            "cache"
        );
    }

    #[test]
    fn delete_on_deletion_is_an_owner_reference_that_is_not_the_controller() {
        let (r, storage) = redis(json!({"size": "1Gi", "retention": {"whenDeleted": "Delete"}}));
        let c = desired_claim(&r, &storage, 0).expect("claim");
        let owners = c.metadata.owner_references.expect("owner");
        assert_eq!(owners[0].uid, "u-1");
        assert_eq!(owners[0].controller, None);
    }

    #[test]
    fn missing_claims_are_created_and_existing_ones_reused() {
        let (_, storage) = redis(json!({"size": "1Gi"}));
        let p = plan_with(
            &storage,
            3,
            &[claim("data-cache-1", "1Gi", None)],
            &[],
            None,
        );
        assert_eq!(p.steps, vec![ClaimStep::Create(0), ClaimStep::Create(2)]);
        let at_rest = plan_with(
            &storage,
            2,
            &[
                claim("data-cache-0", "1Gi", None),
                claim("data-cache-1", "1Gi", None),
            ],
            &[0, 1],
            None,
        );
        assert_eq!(at_rest, ClaimPlan::default(), "no writes at rest");
    }

    /// A claim as the Redis of `uid` creates it (with its creator's annotation).
    fn made_by_redis(mut claim: PersistentVolumeClaim, uid: &str) -> PersistentVolumeClaim {
        claim.metadata.annotations =
            Some([(ANNOTATION_CREATED_BY.to_owned(), uid.to_owned())].into());
        claim
    }

    #[test]
    fn scaled_down_claims_are_kept_or_deleted_after_their_pod() {
        let claims = [
            made_by_redis(claim("data-cache-0", "1Gi", None), "u-1"),
            made_by_redis(claim("data-cache-1", "1Gi", None), "u-1"),
            made_by_redis(claim("data-cache-2", "1Gi", None), "u-1"),
        ];
        let (_, retain) = redis(json!({"size": "1Gi"}));
        assert_eq!(
            plan_with(&retain, 1, &claims, &[0], None),
            ClaimPlan::default()
        );
        let (_, delete) = redis(json!({"size": "1Gi", "retention": {"whenScaled": "Delete"}}));
        // Pod 2 is still terminating: its claim waits.
        let p = plan_with(&delete, 1, &claims, &[0, 2], None);
        assert_eq!(
            p.steps,
            vec![ClaimStep::Delete {
                claim: "data-cache-1".into(),
                uid: "uid-data-cache-1".into()
            }]
        );
    }

    #[test]
    fn claims_retained_from_an_earlier_redis_of_the_name_are_used_but_never_deleted_by_it() {
        let (_, delete) = redis(json!({"size": "1Gi", "retention": {"whenScaled": "Delete"}}));
        let claims = [
            made_by_redis(claim("data-cache-0", "1Gi", None), "u-old"),
            made_by_redis(claim("data-cache-1", "1Gi", None), "u-old"),
            made_by_redis(claim("data-cache-2", "1Gi", None), "u-1"),
            // Made before the creator's annotation: its owner reference says whose it is.
            claim("data-cache-3", "1Gi", Some("u-1")),
        ];
        let p = plan_with(&delete, 1, &claims, &[0], None);
        let deleted: Vec<&str> = p
            .steps
            .iter()
            .filter_map(|s| match s {
                ClaimStep::Delete { claim, .. } => Some(claim.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, vec!["data-cache-2", "data-cache-3"]);
    }

    #[test]
    fn a_created_claim_names_its_creator() {
        let (r, storage) = redis(json!({"size": "1Gi"}));
        let c = desired_claim(&r, &storage, 0).expect("claim");
        assert!(made_by(&c, "u-1"));
        assert!(!made_by(&c, "u-other"));
    }

    #[test]
    fn changing_when_deleted_moves_the_owner_reference() {
        let (_, delete) = redis(json!({"size": "1Gi", "retention": {"whenDeleted": "Delete"}}));
        let p = plan_with(
            &delete,
            1,
            &[claim("data-cache-0", "1Gi", None)],
            &[0],
            None,
        );
        assert_eq!(
            p.steps,
            vec![ClaimStep::SetOwned {
                claim: "data-cache-0".into(),
                owned: true
            }]
        );
        let (_, retain) = redis(json!({"size": "1Gi"}));
        let p = plan_with(
            &retain,
            1,
            &[claim("data-cache-0", "1Gi", Some("u-1"))],
            &[0],
            None,
        );
        assert_eq!(
            p.steps,
            vec![ClaimStep::SetOwned {
                claim: "data-cache-0".into(),
                owned: false
            }]
        );
        // Another Redis's reference (an earlier one of the same name) is not ours.
        let p = plan_with(
            &delete,
            1,
            &[claim("data-cache-0", "1Gi", Some("old"))],
            &[0],
            None,
        );
        assert_eq!(p.steps.len(), 1);
    }

    #[test]
    fn a_larger_size_grows_expandable_claims_and_names_the_others() {
        let (_, bigger) = redis(json!({"size": "2Gi"}));
        let claims = [claim("data-cache-0", "1Gi", None)];
        let p = plan_with(&bigger, 1, &claims, &[0], Some(true));
        assert_eq!(
            p.steps,
            vec![ClaimStep::Grow {
                claim: "data-cache-0".into()
            }]
        );
        let p = plan_with(&bigger, 1, &claims, &[0], Some(false));
        assert!(p.steps.is_empty());
        assert_eq!(
            p.cannot_grow,
            vec![("data-cache-0".to_owned(), Some("std".to_owned()))]
        );
        // Same size in other units is no change.
        let (_, same) = redis(json!({"size": "1024Mi"}));
        assert_eq!(
            plan_with(&same, 1, &claims, &[0], Some(true)),
            ClaimPlan::default()
        );
    }

    #[test]
    fn claims_of_other_redis_are_ignored() {
        let (_, storage) = redis(json!({"size": "1Gi", "retention": {"whenScaled": "Delete"}}));
        let p = plan_with(
            &storage,
            0,
            &[
                claim("data-cache-a-0", "1Gi", None),
                claim("other", "1Gi", None),
            ],
            &[],
            None,
        );
        assert!(p.steps.is_empty(), "{p:?}");
    }

    #[test]
    fn only_a_claim_with_the_redis_s_labels_is_mounted() {
        let (r, storage) = redis(json!({"size": "1Gi"}));
        let made = desired_claim(&r, &storage, 0).expect("claim");
        let mut relabelled = made.clone();
        relabelled
            .metadata
            .labels
            .as_mut()
            .expect("labels")
            .insert(api::pods::LABEL_INSTANCE.to_owned(), "other".to_owned());
        let cases = [
            ("made by the Redis", made.clone(), "cache", true),
            ("made for another of the name", made, "other", false),
            ("labelled for another", relabelled, "cache", false),
            (
                "made by hand, unlabelled",
                claim("data-cache-0", "1Gi", None),
                "cache",
                false,
            ),
        ];
        for (why, claim, name, mounted) in cases {
            assert_eq!(carries_labels_of(&claim, name), mounted, "{why}");
        }
    }

    #[test]
    fn the_owner_patch_keeps_other_owners_and_the_resource_version() {
        let (r, _) = redis(json!({"size": "1Gi"}));
        let ours = owner_reference(&r).expect("owner");
        let mut both = claim("data-cache-0", "1Gi", Some("old"));
        both.metadata.resource_version = Some("42".into());
        both.metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(ours.clone());
        let old = both.metadata.owner_references.as_ref().expect("owners")[0].clone();
        let cases = [
            (
                "owned: ours last, once",
                Some(ours.clone()),
                vec![old.clone(), ours],
            ),
            ("released: only the others", None, vec![old]),
        ];
        for (why, owner, owners) in cases {
            assert_eq!(
                owners_patch(&both, "u-1", owner),
                json!({"metadata": {"ownerReferences": owners, "resourceVersion": "42"}}),
                "{why}"
            );
        }
    }

    #[test]
    fn the_event_names_the_writes() {
        let written = [
            "created data-cache-0".to_owned(),
            "deleted data-cache-3".to_owned(),
        ];
        assert_eq!(
            changed_note(&written).as_deref(),
            Some("Claims: created data-cache-0, deleted data-cache-3")
        );
        assert_eq!(changed_note(&[]), None);
    }
}
