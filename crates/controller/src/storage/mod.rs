//! Persistence (DESIGN §3d): the claim of each ordinal, and what to do with claims, planned from
//! the cache of claims (pure), then done by [`apply`].
//!
//! - Every ordinal below `replicas` has its claim `data-<name>-<ordinal>` before its pod is made;
//!   a claim that exists already (retained from before) is used as it is.
//! - `retention.whenDeleted: Delete` is an owner reference from each claim to the Redis: the
//!   garbage collector deletes the claims after the Redis, even without the operator. Retain is
//!   no owner reference. Changing the policy adds or removes the reference.
//! - `retention.whenScaled: Delete` deletes the claims of ordinals at or above `replicas` once
//!   their pods are gone (never the claim of a pod that still exists).
//! - A larger `size` is written into the claims whose StorageClass allows expansion; for the
//!   others the `StorageResized` condition says which claims could not grow, and why.
//!
//! - [`plan`]: what to do with the claims, which claims a pod may mount, the owner patch and
//!   the Event's note (pure).
//! - [`status`]: the `StorageResized` condition (pure).
//! - this module: the writes, and the `ClaimsChanged` and `ClaimConflict` Events.

pub mod plan;
pub mod status;

use crate::Error;
use crate::cached::CachedPod;
use crate::k8s::events::publish;
use crate::k8s::{FIELD_MANAGER, controller_of};
use crate::step::Step;
use api::Redis;
use api::pods::LABEL_INSTANCE;
use api::storage::{StorageSpec, quantity_bytes};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::reflector::Store;
use kube::{Client, Resource, ResourceExt};
use plan::{
    ClaimStep, ClaimsSeen, carries_labels_of, desired_claim, grow_patch, owner_reference,
    owners_patch, requested_bytes,
};
use status::{CLAIM_CONFLICT, ClaimConflict, ClaimsReport};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The claims of `redis` in the cache: its namespace and instance label.
fn cached_claims(
    store: &Store<PersistentVolumeClaim>,
    redis: &Redis,
) -> Vec<Arc<PersistentVolumeClaim>> {
    let name = redis.metadata.name.as_deref();
    let namespace = redis.metadata.namespace.as_deref();
    store.state_filter(|claim| {
        claim.metadata.namespace.as_deref() == namespace
            && claim.labels().get(LABEL_INSTANCE).map(String::as_str) == name
    })
}

/// The Redis a claim's change concerns: the one its instance label names, in its namespace.
pub fn redis_for_claim(
    resource: &kube::core::ApiResource,
    claim: &PersistentVolumeClaim,
) -> Option<kube::runtime::reflector::ObjectRef<kube::core::DynamicObject>> {
    let name = claim.labels().get(LABEL_INSTANCE)?;
    let namespace = claim.metadata.namespace.as_deref()?;
    Some(kube::runtime::reflector::ObjectRef::new_with(name, resource.clone()).within(namespace))
}

/// The claims step of a pass (§3d): [`apply`] for the pods of `replicas` ordinals. Before the
/// pods that mount the claims.
pub async fn step(
    step: &Step<'_>,
    claims: &Store<PersistentVolumeClaim>,
    replicas: u32,
) -> Result<Option<ClaimsReport>, Error> {
    apply(
        step.client,
        step.recorder,
        claims,
        step.redis,
        replicas,
        step.pods,
    )
    .await
}

/// Makes the claims of `redis` what `spec.storage` says (see the module doc), before its pods
/// are created. `None` without `spec.storage`. No write when every claim is as it should be.
pub async fn apply(
    client: &Client,
    recorder: &Recorder,
    store: &Store<PersistentVolumeClaim>,
    redis: &Redis,
    replicas: u32,
    pods: &[Arc<CachedPod>],
) -> Result<Option<ClaimsReport>, Error> {
    let Some(storage) = &redis.spec.storage else {
        return Ok(None);
    };
    let (Some(name), Some(namespace), Some(uid)) = (
        redis.metadata.name.as_deref(),
        redis.metadata.namespace.as_deref(),
        redis.metadata.uid.as_deref(),
    ) else {
        return Err(Error::IncompleteObject("name, namespace or uid"));
    };
    let cached = cached_claims(store, redis);
    let claims: Vec<&PersistentVolumeClaim> = cached.iter().map(AsRef::as_ref).collect();
    let pod_ordinals: BTreeSet<u32> = pods
        .iter()
        .filter_map(|p| api::pods::ordinal(name, &p.name_any()))
        .collect();
    // Asked only when a claim is smaller than the spec: a StorageClass read per class.
    let classes = expandable_classes(client, storage, &claims).await?;
    let expandable = |class: Option<&str>| class.and_then(|c| classes.get(c).copied());
    let plan = plan::plan(
        storage,
        replicas,
        &ClaimsSeen {
            redis_name: name,
            redis_uid: uid,
            claims: &claims,
            pod_ordinals: &pod_ordinals,
            expandable: &expandable,
        },
    );
    let mut report = ClaimsReport {
        size: storage.size.0.clone(),
        cannot_grow: plan.cannot_grow,
        written: Vec::new(),
        conflicts: Vec::new(),
    };
    let writer = ClaimWriter {
        api: Api::namespaced(client.clone(), namespace),
        redis,
        storage,
        claims: &claims,
    };
    for step in plan.steps {
        writer.write(step, &mut report).await?;
    }
    for conflict in &report.conflicts {
        publish(
            recorder,
            &redis.object_ref(&()),
            None,
            EventType::Warning,
            CLAIM_CONFLICT,
            "Provision",
            conflict.message(),
        )
        .await;
    }
    if let Some(note) = plan::changed_note(&report.written) {
        publish(
            recorder,
            &redis.object_ref(&()),
            None,
            EventType::Normal,
            "ClaimsChanged",
            "Provision",
            note,
        )
        .await;
    }
    Ok(Some(report))
}

/// The writes to the claims of one Redis.
struct ClaimWriter<'a> {
    api: Api<PersistentVolumeClaim>,
    redis: &'a Redis,
    storage: &'a StorageSpec,
    /// The claims as cached.
    claims: &'a [&'a PersistentVolumeClaim],
}

/// A failed API call on claim `claim`.
fn claim_error(claim: &str, source: kube::Error) -> Error {
    Error::Child {
        kind: "PersistentVolumeClaim".into(),
        name: claim.to_owned(),
        source,
    }
}

impl ClaimWriter<'_> {
    /// Does `step`; what it wrote, or a conflict it met, goes into `report`.
    async fn write(&self, step: ClaimStep, report: &mut ClaimsReport) -> Result<(), Error> {
        let api = &self.api;
        match step {
            ClaimStep::Create(ordinal) => self.create(ordinal, report).await?,
            ClaimStep::SetOwned { claim, owned } => {
                let Some(current) = self.claims.iter().find(|c| c.name_any() == claim) else {
                    return Ok(());
                };
                let uid = self.redis.metadata.uid.as_deref().unwrap_or_default();
                let owner = owned.then(|| owner_reference(self.redis)).flatten();
                let patch = owners_patch(current, uid, owner);
                api.patch(&claim, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| claim_error(&claim, e))?;
            }
            ClaimStep::Grow { claim } => {
                let size = &self.storage.size;
                api.patch(
                    &claim,
                    &PatchParams::default(),
                    &Patch::Merge(&grow_patch(size)),
                )
                .await
                .map_err(|e| claim_error(&claim, e))?;
                report.written.push(format!("grew {claim} to {}", size.0));
            }
            ClaimStep::Delete { claim, uid } => {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match api.delete(&claim, &params).await {
                    Ok(_) => report.written.push(format!("deleted {claim}")),
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(claim_error(&claim, e)),
                }
            }
        }
        Ok(())
    }

    /// Creates the claim of `ordinal`.
    async fn create(&self, ordinal: u32, report: &mut ClaimsReport) -> Result<(), Error> {
        let Some(claim) = desired_claim(self.redis, self.storage, ordinal) else {
            return Ok(());
        };
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let claim_name = claim.name_any();
        match self.api.create(&params, &claim).await {
            Ok(_) => report.written.push(format!("created {claim_name}")),
            // There already: ours while the cache is behind (or being deleted), and the pod
            // waits for it; or a claim this Redis did not make, which no pod of it may mount.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                let holder = self
                    .api
                    .get_opt(&claim_name)
                    .await
                    .map_err(|e| claim_error(&claim_name, e))?;
                let name = self.redis.metadata.name.as_deref().unwrap_or_default();
                if let Some(holder) = holder.filter(|c| !carries_labels_of(c, name)) {
                    report.conflicts.push(ClaimConflict {
                        ordinal,
                        claim: claim_name,
                        holder: controller_of(&holder),
                    });
                }
            }
            Err(e) => return Err(claim_error(&claim_name, e)),
        }
        Ok(())
    }
}

/// Whether each StorageClass of a claim smaller than the spec allows expansion.
async fn expandable_classes(
    client: &Client,
    storage: &StorageSpec,
    claims: &[&PersistentVolumeClaim],
) -> Result<HashMap<String, bool>, Error> {
    let wanted = quantity_bytes(&storage.size.0);
    let mut classes = HashMap::new();
    for claim in claims {
        let requested = requested_bytes(claim);
        let Some(class) = claim
            .spec
            .as_ref()
            .and_then(|s| s.storage_class_name.as_deref())
        else {
            continue;
        };
        if classes.contains_key(class)
            || !matches!((requested, wanted), (Some(r), Some(w)) if r < w)
        {
            continue;
        }
        let found = Api::<StorageClass>::all(client.clone())
            .get_opt(class)
            .await
            .map_err(|source| Error::Child {
                kind: "StorageClass".into(),
                name: class.to_owned(),
                source,
            })?;
        let allowed = found
            .and_then(|c| c.allow_volume_expansion)
            .unwrap_or(false);
        classes.insert(class.to_owned(), allowed);
    }
    Ok(classes)
}
