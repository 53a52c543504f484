//! The pods of a Redis (DESIGN §3): `<name>-<ordinal>`, created when missing, deleted highest
//! first on scale down, replaced one at a time on a spec change, each write said in an Event.
//!
//! - [`plan`]: desired replicas + spec hash + the real pods → creates and deletes (pure).
//! - [`build`]: the pod for each ordinal and its spec hash (pure).
//! - [`status`]: the status the pods amount to (pure).
//! - this module: the writes (create, delete, the refusals), with their Events.

pub mod build;
pub mod plan;
pub mod status;

use crate::Error;
use crate::cached::CachedPod;
use crate::k8s::events::{announce_pods, pod_ref, pods_phrase, publish};
use crate::k8s::{FIELD_MANAGER, controlled_by, controller_of, is_terminating};
use crate::metrics::Metrics;
use api::Redis;
use build::desired_pod;
use k8s_openapi::api::core::v1::{Container, ObjectReference, Pod, PodSpec};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::reflector::Store;
use plan::{DeleteReason, PodStep, PodView};
use status::PodFailure;
use std::sync::Arc;

/// The pods of `redis` as the watch cache has them: our labels, and `redis` as controller owner
/// (a pod left by an earlier Redis of the same name is not ours to count).
pub fn owned_pods(cache: &Store<CachedPod>, redis: &Redis) -> Vec<Arc<CachedPod>> {
    let (Some(name), Some(uid)) = (
        redis.metadata.name.as_deref(),
        redis.metadata.uid.as_deref(),
    ) else {
        return Vec::new();
    };
    let namespace = redis.metadata.namespace.as_deref();
    cache.state_filter(|pod| {
        pod.metadata.namespace.as_deref() == namespace
            && pod.instance.as_deref() == Some(name)
            && controlled_by(pod, uid)
    })
}

/// What the pod writes of one Redis need: the pods' API in its namespace, where their Events go
/// (the Redis `reference`, through `recorder`), and the counters.
pub struct PodWriter<'a> {
    pub pods: Api<Pod>,
    pub recorder: &'a Recorder,
    pub metrics: &'a Metrics,
    pub reference: &'a ObjectReference,
}

/// A pod write that failed: what the status says about it, and the error to back off on.
#[derive(Debug)]
pub struct Refused {
    pub failure: PodFailure,
    pub error: Error,
}

impl Refused {
    pub fn new(reason: &'static str, message: String, error: Error) -> Self {
        Refused {
            failure: PodFailure { reason, message },
            error,
        }
    }
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Self {
        refused.error
    }
}

/// A pod write refused in this pass, said in a Warning Event about the pod (with the reason and
/// message the status will show) and returned for the status and the backoff.
async fn refuse(
    w: &PodWriter<'_>,
    pod_name: &str,
    action: &str,
    failure: PodFailure,
    error: Error,
) -> Refused {
    publish(
        w.recorder,
        w.reference,
        Some(pod_ref(w.reference.namespace.as_deref(), pod_name)),
        EventType::Warning,
        failure.reason,
        action,
        failure.message.clone(),
    )
    .await;
    Refused { failure, error }
}

/// What the API server said, without the debug dump kube's error adds around it.
fn refusal(doing: &str, pod_name: &str, e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("Error {doing} pod {pod_name}: {}", status.message),
        e => format!("Error {doing} pod {pod_name}: {e}"),
    }
}

#[derive(Debug)]
pub enum Done {
    Yes,
    /// The namespace is terminating: the API refuses new content, and will delete the Redis.
    NamespaceTerminating,
    /// The API said the pod is already ours (create), or newer than planned (delete): our cache
    /// had not seen it yet.
    CacheBehind,
}

pub async fn create_pod(
    w: &PodWriter<'_>,
    redis: &Redis,
    ordinal: u32,
    spec: &PodSpec,
    hash: &str,
    init: Option<Container>,
) -> Result<Done, Refused> {
    let Some(mut pod) = desired_pod(redis, ordinal, spec, hash) else {
        let error = Error::IncompleteObject("name or uid");
        return Err(Refused::new("FailedCreate", error.to_string(), error));
    };
    // The restore step (§3o), outside the spec hash: it runs once, in the pods made while the
    // Redis restores.
    if let (Some(init), Some(pod_spec)) = (init, pod.spec.as_mut()) {
        pod_spec.init_containers = Some(vec![init]);
    }
    let pod_name = pod.name_any();
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    match w.pods.create(&params, &pod).await {
        // The Event comes once for all the pods of the pass (`announce_creates`).
        Ok(_) => {
            w.metrics.pods_created.inc();
            tracing::info!(pod = %pod_name, "created pod");
            Ok(Done::Yes)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            name_taken(w, redis, &pod_name).await
        }
        Err(e) if is_terminating(&e) => {
            tracing::debug!(pod = %pod_name, "namespace is terminating; not creating pods");
            Ok(Done::NamespaceTerminating)
        }
        Err(e) => {
            let failure = PodFailure {
                reason: "FailedCreate",
                message: refusal("creating", &pod_name, &e),
            };
            Err(refuse(w, &pod_name, "Create", failure, Error::Kube(e)).await)
        }
    }
}

/// A create found the name taken. Usually our cache had not seen our own pod yet; but the pod may
/// belong to someone else (`kubectl run cache-0`), and then retrying every second would never
/// end: say so (Warning Event, `PodNameConflict` in the Ready condition) and back off.
async fn name_taken(w: &PodWriter<'_>, redis: &Redis, pod_name: &str) -> Result<Done, Refused> {
    // A list by name, not a get: the controller's RBAC has list and watch on pods, not get.
    let by_name = ListParams::default().fields(&format!("metadata.name={pod_name}"));
    let holder = match w.pods.list(&by_name).await {
        Ok(list) => list.items.into_iter().next(),
        Err(e) => {
            let note = refusal("reading", pod_name, &e);
            return Err(Refused::new("FailedCreate", note, Error::Kube(e)));
        }
    };
    let uid = redis.metadata.uid.as_deref().unwrap_or_default();
    match holder {
        // Ours, or gone by now: the cache was behind.
        None => Ok(Done::CacheBehind),
        Some(pod) if controlled_by(&pod, uid) => Ok(Done::CacheBehind),
        Some(pod) => {
            let failure = PodFailure {
                reason: "PodNameConflict",
                message: conflict_note(pod_name, &pod),
            };
            let error = Error::PodNameConflict(pod_name.to_owned());
            Err(refuse(w, pod_name, "Create", failure, error).await)
        }
    }
}

/// What the user is told about a pod holding a name this Redis needs.
fn conflict_note(pod_name: &str, pod: &Pod) -> String {
    let owner = controller_of(pod);
    format!(
        "Pod {pod_name} already exists and is not controlled by this Redis ({owner}); \
         delete or rename it so the Redis can create its pod"
    )
}

/// What became of a pod `delete_pod` was asked to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// Deleted now (said in the pass's `announce_deletes` Event).
    Deleted,
    /// Already gone: what we wanted.
    Gone,
    /// The name now holds a newer pod than the one planned from (the uid precondition failed).
    Replaced,
}

impl Deletion {
    pub fn done(self) -> Done {
        match self {
            Deletion::Deleted | Deletion::Gone => Done::Yes,
            Deletion::Replaced => Done::CacheBehind,
        }
    }
}

pub async fn delete_pod(
    w: &PodWriter<'_>,
    pod_name: &str,
    uid: Option<&str>,
    why: &str,
    without_kubelet: bool,
) -> Result<Deletion, Refused> {
    // Only the pod the plan was made from: a leader acting on a stale view (or a lease that ran
    // out) never deletes a newer pod of the same name.
    let params = DeleteParams {
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        // Grace period 0 removes the object at once (`kubectl delete --force --grace-period=0`):
        // only for a pod whose kubelet stopped answering (`plan::is_lost`).
        grace_period_seconds: without_kubelet.then_some(0),
        ..DeleteParams::default()
    };
    match w.pods.delete(pod_name, &params).await {
        Ok(_) => {
            w.metrics.pods_deleted.inc();
            tracing::info!(pod = %pod_name, why, "deleted pod");
            Ok(Deletion::Deleted)
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Deletion::Gone),
        // Re-plan from the cache.
        Err(kube::Error::Api(status)) if status.code == 409 => {
            tracing::debug!(pod = %pod_name, "pod replaced since planned; not deleting it");
            Ok(Deletion::Replaced)
        }
        Err(e) => {
            let failure = PodFailure {
                reason: "FailedDelete",
                message: refusal("deleting", pod_name, &e),
            };
            Err(refuse(w, pod_name, "Delete", failure, Error::Kube(e)).await)
        }
    }
}

/// One `SuccessfulCreate` Event for all the pods a pass created, naming them, rather than one per
/// pod (a new Redis of 3 pods: 1 Event write, not 3). A single pod keeps the pod as the related
/// object, so a pod re-created again and again (deleted by hand) folds into one Event series;
/// several have none (the Event is about the Redis). The recorder folds an Event into the series
/// of an earlier one only when the Redis (resourceVersion included) and the related pod are the
/// same, so a later batch with other pods gets an Event, and a note, of its own. Failed creates
/// keep their Warning Event per pod (`refuse`).
pub async fn announce_creates(w: &PodWriter<'_>, created: &[String]) {
    let names: Vec<&str> = created.iter().map(String::as_str).collect();
    let note = format!("Created {}", pods_phrase(&names));
    announce_pods(
        w.recorder,
        w.reference,
        &names,
        "SuccessfulCreate",
        "Create",
        note,
    )
    .await;
}

/// As `announce_creates`, for the pods a pass deleted: one `SuccessfulDelete` Event naming
/// them, by reason (deleting a Redis of 3 pods: 1 Event write, not 3). One Event, not one per
/// reason: the recorder would fold a second one (same Redis, no related pod) into the first's
/// series, note and all. `deleted` holds (why, pod name) in the order deleted.
pub async fn announce_deletes(w: &PodWriter<'_>, deleted: &[(&'static str, String)]) {
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for (why, name) in deleted {
        match by_reason.iter_mut().find(|(w, _)| w == why) {
            Some((_, names)) => names.push(name),
            None => by_reason.push((why, vec![name])),
        }
    }
    let parts: Vec<String> = by_reason
        .iter()
        .map(|(why, names)| format!("{}: {why}", pods_phrase(names)))
        .collect();
    let note = format!("Deleted {}", parts.join("; "));
    let names: Vec<&str> = deleted.iter().map(|(_, name)| name.as_str()).collect();
    announce_pods(
        w.recorder,
        w.reference,
        &names,
        "SuccessfulDelete",
        "Delete",
        note,
    )
    .await;
}

/// One Event when a spec change makes the pod count move (as Deployments' ScalingReplicaSet).
pub async fn announce_scaling(
    w: &PodWriter<'_>,
    redis: &Redis,
    replicas: u32,
    views: &[PodView],
    steps: &[PodStep],
) {
    // A new Redis (never observed) is not scaling: its SuccessfulCreate Event says enough.
    let Some(observed) = redis.status.as_ref().and_then(|s| s.observed_generation) else {
        return;
    };
    let spec_changed = Some(observed) != redis.metadata.generation;
    let existing = views
        .iter()
        .filter(|p| !p.terminating && p.ordinal.is_some())
        .count();
    let scaling_down = steps.iter().any(|a| {
        matches!(
            a,
            PodStep::Delete {
                reason: DeleteReason::ScaleDown,
                ..
            }
        )
    });
    let scaling_up =
        existing < replicas as usize && steps.iter().any(|a| matches!(a, PodStep::Create { .. }));
    if !(spec_changed && (scaling_up || scaling_down)) {
        return;
    }
    let (reason, verb) = if scaling_down {
        ("ScalingDown", "down")
    } else {
        ("ScalingUp", "up")
    };
    let note = format!("Scaling {verb} from {existing} to {replicas} pods");
    publish(
        w.recorder,
        w.reference,
        None,
        EventType::Normal,
        reason,
        "Scale",
        note,
    )
    .await;
}

#[cfg(test)]
mod tests;
