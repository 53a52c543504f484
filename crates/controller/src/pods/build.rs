//! The pod a `Redis` wants at each ordinal (DESIGN §3), and the hash that tells a pod built from
//! an older spec from a current one. Pure: the reconciler only sends what this builds.
//!
//! Placement (§3h): the spec's nodeSelector, affinity, tolerations, topologySpreadConstraints and
//! priorityClassName go into the pod spec as written; its podLabels and podAnnotations go on the
//! pods under the operator's own; with neither affinity nor topologySpreadConstraints the pods
//! get the default spread ([`default_spread`]), which the hash leaves out.
//!
//! Here the pod spec and the pod; in its modules, by part:
//! - `launch`: how the `redis` container starts (redis-server's options, the auth and ACL
//!   launchers, their environment);
//! - `containers`: the `redis` container with its ports and probes, and the exporter sidecar;
//! - `volumes`: `/data` and the TLS Secret;
//! - `placement`: the default spread, the spec's pod labels and annotations;
//! - `hash`: [`spec_hash`] and [`pod_hash`];
//! - [`pieces`]: what the backup Jobs share with the pods (environment, restricted security
//!   contexts, the TLS volume).
//!
//! The container names and the spec-hash annotation are in `api::pods` (the pod cache reads them
//! too); they are re-exported here.

use api::pods::{pod_labels, pod_name};
use api::{Redis, RedisSpec};
use k8s_openapi::api::core::v1::{Pod, PodSecurityContext, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

mod containers;
mod hash;
mod launch;
pub(crate) mod pieces;
mod placement;
mod volumes;

use containers::{exporter_container, redis_container};
use pieces::{restricted_container_context, restricted_pod_context};
use placement::{user_annotations, user_labels};

pub use api::pods::{CONTAINER, EXPORTER_CONTAINER, SPEC_HASH_ANNOTATION};
pub use hash::{pod_hash, spec_hash};
pub use launch::{ACL_LAUNCHER, ACL_USERS_ENV, AUTH_LAUNCHER, MASTERAUTH_ENV, PASSWORD_ENV};
pub use placement::default_spread;
pub use volumes::DATA_PATH;

/// uid of the `redis` user in the official Redis images (Debian-based and alpine alike); the pod
/// runs as it, never root.
const REDIS_UID: i64 = 999;
/// The pod's primary group, set explicitly (runAsGroup, and fsGroup for /data). It is the `redis`
/// group of the Debian-based official images (999:999); the alpine ones give `redis` gid 1000, so
/// there the process runs with gid 999, a group the image does not name. Nothing needs the image's
/// group: /data is the emptyDir, group-owned 999 through fsGroup, and the rest is world-readable.
const REDIS_GID: i64 = 999;

/// The pod spec every pod of Redis `name` runs (the same for all ordinals).
pub fn pod_spec(name: &str, spec: &RedisSpec) -> PodSpec {
    build_pod_spec(name, spec, false)
}

/// The pod spec as [`pod_hash`] covers it: without the `spec.config` directives redis-server
/// takes live (§3m), which the controller sets on the running pods instead of replacing them.
pub fn hashed_pod_spec(name: &str, spec: &RedisSpec) -> PodSpec {
    build_pod_spec(name, spec, true)
}

fn build_pod_spec(name: &str, spec: &RedisSpec, restart_only: bool) -> PodSpec {
    let mut containers = vec![redis_container(name, spec, restart_only)];
    if let Some(exporter) = spec.exporter() {
        containers.push(exporter_container(
            name,
            spec,
            exporter,
            restricted_container_context(),
        ));
    }
    PodSpec {
        containers,
        security_context: Some(PodSecurityContext {
            run_as_user: Some(REDIS_UID),
            run_as_group: Some(REDIS_GID),
            fs_group: Some(REDIS_GID),
            ..restricted_pod_context()
        }),
        volumes: Some(volumes::pod_volumes(spec)),
        // Redis never talks to the API server.
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        // Placement, as written. An empty map, list or name says nothing: left out, so that it
        // hashes as unset. Empty affinity or spread constraints do say something (no default
        // spread), so they are kept.
        node_selector: spec.node_selector.clone().filter(|s| !s.is_empty()),
        affinity: spec.affinity.clone(),
        tolerations: spec.tolerations.clone().filter(|t| !t.is_empty()),
        topology_spread_constraints: spec.topology_spread_constraints.clone(),
        priority_class_name: spec.priority_class_name.clone().filter(|n| !n.is_empty()),
        ..PodSpec::default()
    }
}

/// The complete pod for `ordinal`, owned by `redis` (controller reference, so the garbage
/// collector removes it even without the operator), with the default spread when the spec sets
/// no placement of its own, and the spec's pod labels and annotations under the operator's.
/// `None` if `redis` has no name or uid yet.
pub fn desired_pod(redis: &Redis, ordinal: u32, spec: &PodSpec, hash: &str) -> Option<Pod> {
    let name = redis.metadata.name.as_deref()?;
    let mut owner = redis.controller_owner_ref(&())?;
    // Foreground deletion of the Redis waits for its pods (needs update on redis/finalizers).
    owner.block_owner_deletion = Some(true);
    let mut spec = spec.clone();
    for volume in spec.volumes.iter_mut().flatten() {
        if let Some(claim) = volume.persistent_volume_claim.as_mut() {
            claim.claim_name = api::storage::claim_name(name, ordinal);
        }
    }
    // The pod's DNS name through the headless Service, `<pod>.<name>-headless.<ns>.svc` (what
    // a certificate names each pod by): the cluster's DNS serves it only for a pod whose
    // subdomain names that Service. Not in the hash: pods made before keep running without it
    // (a pod's subdomain cannot change) and get it when next replaced.
    if redis.spec.mode() == api::Mode::Replication {
        spec.subdomain = Some(api::pods::headless_service_name(name));
    }
    if redis.spec.affinity.is_none() && redis.spec.topology_spread_constraints.is_none() {
        let (constraints, affinity) = default_spread(name, redis.spec.mode());
        spec.topology_spread_constraints = Some(constraints);
        spec.affinity = affinity;
    }
    // The operator's labels and annotation win over the spec's.
    let mut labels = user_labels(&redis.spec);
    labels.extend(pod_labels(name));
    // Not in the hash: pods made before it are labelled in place (`children`), never replaced.
    labels.insert(
        api::pods::POD_NAME_LABEL.to_owned(),
        pod_name(name, ordinal),
    );
    let mut annotations = user_annotations(&redis.spec);
    annotations.insert(SPEC_HASH_ANNOTATION.to_owned(), hash.to_owned());
    Some(Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(name, ordinal)),
            namespace: redis.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

#[cfg(test)]
mod tests;
