//! Planning (DESIGN §3): from the desired replicas and spec hash and the pods that really exist,
//! decide what to create and delete. Pure, so every branch is a unit test; the reconciler only
//! carries the steps out, and the next reconcile re-plans from the new real state.

use crate::cached::CachedPod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How long past its deletion deadline a pod evicted from an unanswering node may stay before it
/// is force-deleted: time for a kubelet that is merely slow to confirm the deletion itself.
pub const LOST_POD_GRACE: SignedDuration = SignedDuration::from_secs(5);

/// What the planner needs to know about one existing pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    pub name: String,
    /// Deletes carry it as a precondition, so a delete planned from an old view never hits a
    /// newer pod of the same name.
    pub uid: Option<String>,
    /// `Some(i)` if the name is `<redis>-<i>`.
    pub ordinal: Option<u32>,
    pub spec_hash: Option<String>,
    /// Its Ready condition is True.
    pub ready: bool,
    /// Phase Failed or Succeeded: it will never serve again.
    pub finished: bool,
    /// It has a deletionTimestamp: already going away.
    pub terminating: bool,
    /// Its node stopped answering (see [`is_lost`]): no kubelet will ever confirm its deletion,
    /// so it holds its name until force-deleted.
    pub lost: bool,
    /// Why it cannot become Ready on its own, when the kubelet or scheduler says so.
    pub trouble: Option<PodTrouble>,
    /// It carries the primary role label (Replication mode).
    pub primary: bool,
}

/// A pod stuck for a reason the user has to fix (a wrong image, a crashing process, no node):
/// the Redis's Ready condition says it, so `kubectl get`/`describe`/`wait` show why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTrouble {
    pub reason: String,
    pub message: String,
}

/// Container waiting reasons that do not resolve without a change (kubelet's names). A failed pull
/// is reported as `ImagePullBackOff` in both of its alternating states, so the condition does not
/// flip with every retry.
fn stuck_waiting_reason(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "ImagePullBackOff" | "ErrImagePull" => "ImagePullBackOff",
        "InvalidImageName" => "InvalidImageName",
        "ErrImageNeverPull" => "ErrImageNeverPull",
        "CrashLoopBackOff" => "CrashLoopBackOff",
        "CreateContainerConfigError" => "CreateContainerConfigError",
        "CreateContainerError" => "CreateContainerError",
        "RunContainerError" => "RunContainerError",
        _ => return None,
    })
}

impl PodTrouble {
    /// What keeps `pod` from serving, if it is stuck: a container waiting for a reason that does
    /// not pass by itself, else the scheduler finding no node.
    pub fn of(pod: &CachedPod) -> Option<Self> {
        let waiting = pod
            .containers
            .iter()
            .filter_map(|c| {
                let (reason, message) = c.state.as_ref()?.waiting.as_ref()?;
                let reason = stuck_waiting_reason(reason.as_deref()?)?;
                let image = c.image.as_str();
                let message = match message.as_deref() {
                    Some(m) if !m.is_empty() => m.to_owned(),
                    _ => format!("container {} (image {image:?})", c.name),
                };
                Some(PodTrouble {
                    reason: reason.to_owned(),
                    message,
                })
            })
            .next();
        waiting.or_else(|| {
            pod.unschedulable.as_ref().map(|message| PodTrouble {
                reason: "Unschedulable".to_owned(),
                message: message.clone(),
            })
        })
    }
}

impl PodView {
    pub fn from_pod(redis_name: &str, pod: &CachedPod) -> Self {
        let name = pod.metadata.name.clone().unwrap_or_default();
        PodView {
            uid: pod.metadata.uid.clone(),
            ordinal: api::pods::ordinal(redis_name, &name),
            spec_hash: pod.spec_hash.clone(),
            ready: pod.ready,
            finished: matches!(pod.phase.as_deref(), Some("Failed" | "Succeeded")),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            lost: is_lost(pod, Timestamp::now()),
            trouble: PodTrouble::of(pod),
            primary: pod.role.as_deref() == Some(api::pods::ROLE_PRIMARY),
            name,
        }
    }
}

/// A pod the taint manager evicted (its node is unreachable or not ready: the node lifecycle
/// controller's NoExecute taints, after the API server's default toleration of them) and whose
/// deletion deadline (the deletionTimestamp, grace period included) passed [`LOST_POD_GRACE`]
/// ago. A kubelet that answers removes its pod by then; one that does not never will, and the pod
/// keeps its name, so its replacement could not start on another node (a StatefulSet waits for
/// a person to force-delete it).
pub fn is_lost(pod: &CachedPod, now: Timestamp) -> bool {
    pod.evicted_by_taint
        && pod
            .metadata
            .deletion_timestamp
            .as_ref()
            .is_some_and(|deadline| deadline.0 + LOST_POD_GRACE <= now)
}

/// Why a pod is deleted (said in the event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// Its ordinal is >= replicas.
    ScaleDown,
    /// Phase Failed or Succeeded; it is recreated once gone.
    Finished,
    /// Built from an older spec; replaced by a rolling update.
    Outdated,
    /// Carries our labels and owner but not a name we make.
    Stray,
    /// Evicted from a node that stopped answering, and past its deadline ([`is_lost`]): deleted
    /// without waiting for the kubelet (grace period 0), so its replacement can start elsewhere.
    NodeLost,
}

impl DeleteReason {
    pub fn describe(self) -> &'static str {
        match self {
            DeleteReason::ScaleDown => "scale down",
            DeleteReason::Finished => {
                "the pod stopped (phase Failed or Succeeded); it will be recreated"
            }
            DeleteReason::Outdated => "rolling update to the new spec",
            DeleteReason::Stray => "not a pod name this Redis uses",
            DeleteReason::NodeLost => {
                "its node stopped answering; deleted without waiting for its kubelet"
            }
        }
    }
}

/// One pod write the plan asks for (not kube's `controller::Action`, which is when to requeue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodStep {
    Create {
        ordinal: u32,
    },
    Delete {
        name: String,
        uid: Option<String>,
        reason: DeleteReason,
    },
}

/// At most this many creates per pass, so the plan stays small whatever `replicas` says (a scale
/// to 2^31 would otherwise build billions of steps); the pod events of one batch bring the next.
pub const CREATE_BATCH: usize = 64;

impl PodView {
    fn delete(&self, reason: DeleteReason) -> PodStep {
        PodStep::Delete {
            name: self.name.clone(),
            uid: self.uid.clone(),
            reason,
        }
    }
}

/// The views with the primary the replication step left this pass (`None`: Standalone mode, or
/// no decision): its label write is not in this pass's cache yet, and a pod promoted now must be
/// protected as a primary (see [`held_as_primary`]) by the plan of the same pass.
pub fn with_primary(mut views: Vec<PodView>, primary: Option<&str>) -> Vec<PodView> {
    if let Some(primary) = primary {
        for view in &mut views {
            view.primary = view.name == primary;
        }
    }
    views
}

/// The plan for one reconcile, in the order to carry it out.
pub fn plan(replicas: u32, desired_hash: &str, pods: &[PodView]) -> Vec<PodStep> {
    let mut deletes: Vec<(Option<u32>, PodStep)> = Vec::new();
    for pod in pods.iter().filter(|p| !p.terminating) {
        let reason = match pod.ordinal {
            None => Some(DeleteReason::Stray),
            Some(i) if i >= replicas => Some(DeleteReason::ScaleDown),
            Some(_) if pod.finished => Some(DeleteReason::Finished),
            Some(_) => None,
        };
        if let Some(reason) = reason
            && !held_as_primary(pod, pods)
        {
            deletes.push((pod.ordinal, pod.delete(reason)));
        }
    }
    // A lost pod still labelled primary waits for the failover to move the label to a replica
    // (the replication step fails a primary it cannot read over): its replacement starts empty.
    for pod in pods.iter().filter(|p| p.lost) {
        let failover_pending = pod.primary
            && pods
                .iter()
                .any(|p| p.name != pod.name && !p.terminating && !p.finished);
        if !failover_pending {
            deletes.push((pod.ordinal, pod.delete(DeleteReason::NodeLost)));
        }
    }
    // Highest ordinal first (strays, having none, go last).
    deletes.sort_by_key(|(ordinal, _)| std::cmp::Reverse(*ordinal));

    // Every ordinal below replicas with no pod of that name, terminating or not: a terminating pod
    // still holds its name, so its replacement waits for it to be gone. Lowest first, and
    // lazily: only the first CREATE_BATCH missing ordinals are ever looked at.
    let creates = (0..replicas)
        .filter(|i| !pods.iter().any(|p| p.ordinal == Some(*i)))
        .take(CREATE_BATCH)
        .map(|ordinal| PodStep::Create { ordinal });

    let mut steps: Vec<PodStep> = deletes.into_iter().map(|(_, a)| a).collect();
    steps.extend(creates);
    if steps.is_empty() {
        steps = rolling_replacements(replicas, desired_hash, pods);
    }
    steps
}

/// Outdated pods to replace. Those that are not Ready (a typo image, a crashloop, unschedulable)
/// serve nothing, so they all go at once, whatever the others do: otherwise fixing a spec that
/// broke every pod would never roll out. A Ready outdated pod goes one at a time, highest ordinal
/// first, and only while every other pod is Ready and nothing is terminating: availability never
/// drops below replicas - 1.
fn rolling_replacements(replicas: u32, hash: &str, pods: &[PodView]) -> Vec<PodStep> {
    let in_range = |p: &&PodView| p.ordinal.is_some_and(|i| i < replicas);
    let mut outdated: Vec<&PodView> = pods
        .iter()
        .filter(in_range)
        .filter(|p| !p.terminating && p.spec_hash.as_deref() != Some(hash))
        .collect();
    outdated.sort_by_key(|p| std::cmp::Reverse(p.ordinal));
    // A serving primary is replaced after it has handed over (it is then a replica).
    outdated.retain(|p| !(p.ready && held_as_primary(p, pods)));
    let unready: Vec<PodStep> = outdated
        .iter()
        .filter(|p| !p.ready)
        .map(|p| p.delete(DeleteReason::Outdated))
        .collect();
    if !unready.is_empty() {
        return unready;
    }
    let Some(candidate) = outdated.first() else {
        return Vec::new();
    };
    let others_ready = pods
        .iter()
        .filter(in_range)
        .filter(|p| p.name != candidate.name)
        .all(|p| p.ready);
    if others_ready && !pods.iter().any(|p| p.terminating) {
        vec![candidate.delete(DeleteReason::Outdated)]
    } else {
        Vec::new()
    }
}

/// A Ready primary with other live pods beside it is not deleted: the replication engine first
/// hands its role to a replica that stays (a switchover loses no acknowledged write), and the
/// pod goes in a later pass. A primary that is not Ready, or alone, may go: there is nothing to
/// hand over to, or failover takes over anyway.
fn held_as_primary(pod: &PodView, pods: &[PodView]) -> bool {
    pod.primary
        && pod.ready
        && !pod.finished
        && pods
            .iter()
            .any(|p| p.name != pod.name && !p.terminating && !p.finished)
}

#[cfg(test)]
mod tests;
