//! Planning (DESIGN §3): from the desired replicas and spec hash and the pods that really exist,
//! decide what to create and delete. Pure, so every branch is a unit test; the reconciler only
//! carries the steps out, and the next reconcile re-plans from the new real state.

use crate::cached::CachedPod;

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
            trouble: PodTrouble::of(pod),
            primary: pod.role.as_deref() == Some(api::pods::ROLE_PRIMARY),
            name,
        }
    }
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
mod tests {
    use super::super::build::SPEC_HASH_ANNOTATION;
    use super::super::status::converged;
    use super::*;

    const H: &str = "current";

    fn pod(i: u32) -> PodView {
        PodView {
            name: format!("r-{i}"),
            uid: Some(format!("uid-{i}")),
            ordinal: Some(i),
            spec_hash: Some(H.into()),
            ready: true,
            finished: false,
            terminating: false,
            trouble: None,
            primary: false,
        }
    }

    fn creates(steps: &[PodStep]) -> Vec<u32> {
        steps
            .iter()
            .filter_map(|a| {
                if let PodStep::Create { ordinal } = a {
                    Some(*ordinal)
                } else {
                    None
                }
            })
            .collect()
    }

    fn deletes(steps: &[PodStep]) -> Vec<(&str, DeleteReason)> {
        steps
            .iter()
            .filter_map(|a| {
                if let PodStep::Delete { name, reason, .. } = a {
                    Some((name.as_str(), *reason))
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn nothing_to_do_when_converged() {
        let pods = [pod(0), pod(1)];
        assert!(plan(2, H, &pods).is_empty());
        assert!(converged(2, H, &pods));
    }

    #[test]
    fn creates_every_missing_ordinal() {
        assert_eq!(creates(&plan(3, H, &[])), vec![0, 1, 2]);
        assert_eq!(
            creates(&plan(3, H, &[pod(1)])),
            vec![0, 2],
            "a pod deleted by hand comes back"
        );
    }

    #[test]
    fn scales_down_highest_first() {
        let pods = [pod(0), pod(1), pod(2), pod(3)];
        let steps = plan(1, H, &pods);
        assert_eq!(
            deletes(&steps),
            vec![
                ("r-3", DeleteReason::ScaleDown),
                ("r-2", DeleteReason::ScaleDown),
                ("r-1", DeleteReason::ScaleDown)
            ]
        );
        assert!(creates(&steps).is_empty());
    }

    #[test]
    fn replicas_zero_deletes_everything_and_is_converged_when_empty() {
        assert_eq!(deletes(&plan(0, H, &[pod(0), pod(1)])).len(), 2);
        assert!(plan(0, H, &[]).is_empty());
        assert!(converged(0, H, &[]));
    }

    #[test]
    fn finished_pods_are_deleted_then_recreated() {
        let mut failed = pod(1);
        failed.finished = true;
        failed.ready = false;
        let steps = plan(2, H, &[pod(0), failed.clone()]);
        assert_eq!(deletes(&steps), vec![("r-1", DeleteReason::Finished)]);
        assert!(
            creates(&steps).is_empty(),
            "the name is still taken until the pod is gone"
        );
        failed.terminating = true;
        assert!(
            plan(2, H, &[pod(0), failed]).is_empty(),
            "wait for it to go"
        );
        assert_eq!(creates(&plan(2, H, &[pod(0)])), vec![1]);
    }

    #[test]
    fn a_pod_in_deletion_is_left_alone_and_not_recreated_yet() {
        let mut going = pod(1);
        going.terminating = true;
        assert!(plan(2, H, &[pod(0), going.clone()]).is_empty());
        assert!(
            plan(1, H, &[pod(0), going]).is_empty(),
            "no second delete for a pod already going"
        );
    }

    #[test]
    fn stray_pods_are_deleted() {
        let stray = PodView {
            name: "r-x".into(),
            ordinal: None,
            ..pod(0)
        };
        assert_eq!(
            deletes(&plan(1, H, &[pod(0), stray])),
            vec![("r-x", DeleteReason::Stray)]
        );
    }

    #[test]
    fn rolling_update_replaces_one_pod_at_a_time_highest_first() {
        let old = |i| PodView {
            spec_hash: Some("old".into()),
            ..pod(i)
        };
        let pods = [old(0), old(1), old(2)];
        assert_eq!(
            deletes(&plan(3, H, &pods)),
            vec![("r-2", DeleteReason::Outdated)]
        );
        // r-2 going: wait.
        let mut going = old(2);
        going.terminating = true;
        assert!(plan(3, H, &[old(0), old(1), going]).is_empty());
        // r-2 recreated but not Ready yet: create done, wait for Ready.
        let mut fresh = pod(2);
        fresh.ready = false;
        assert!(plan(3, H, &[old(0), old(1), fresh]).is_empty());
        // r-2 Ready on the new spec: next is r-1.
        assert_eq!(
            deletes(&plan(3, H, &[old(0), old(1), pod(2)])),
            vec![("r-1", DeleteReason::Outdated)]
        );
        assert!(!converged(3, H, &[old(0), old(1), pod(2)]));
    }

    #[test]
    fn rolling_update_waits_for_missing_pods_first() {
        let old = |i| PodView {
            spec_hash: Some("old".into()),
            ..pod(i)
        };
        let steps = plan(3, H, &[old(0), old(1)]);
        assert_eq!(creates(&steps), vec![2]);
        assert!(
            deletes(&steps).is_empty(),
            "no pod is rolled while one is missing"
        );
    }

    #[test]
    fn an_unready_outdated_pod_is_replaced_when_the_others_are_ready() {
        // A bad image rolled to r-1 and never became Ready; the user fixed the spec.
        let mut broken = PodView {
            spec_hash: Some("bad".into()),
            ..pod(1)
        };
        broken.ready = false;
        let old0 = PodView {
            spec_hash: Some("old".into()),
            ..pod(0)
        };
        assert_eq!(
            deletes(&plan(2, H, &[old0, broken])),
            vec![("r-1", DeleteReason::Outdated)]
        );
    }

    #[test]
    fn rolling_update_never_takes_a_second_pod_down() {
        let old = |i| PodView {
            spec_hash: Some("old".into()),
            ..pod(i)
        };
        let mut unready = old(0);
        unready.ready = false;
        assert_eq!(
            deletes(&plan(3, H, &[unready, old(1), old(2)])),
            vec![("r-0", DeleteReason::Outdated)],
            "r-0 is not Ready, so it goes, and r-2 must stay"
        );
        let mut fresh_unready = pod(0);
        fresh_unready.ready = false;
        assert!(
            plan(3, H, &[fresh_unready, old(1), old(2)]).is_empty(),
            "r-0 runs the new spec but is not Ready yet: r-2 waits"
        );
    }

    #[test]
    fn unready_outdated_pods_are_replaced_without_waiting_for_the_others() {
        // Issue item 1: every pod crashloops (or is unschedulable) on a bad spec; the user fixes
        // the spec. None of them serves, so replacing them costs no availability.
        let broken = |i| PodView {
            spec_hash: Some("typo".into()),
            ready: false,
            ..pod(i)
        };
        assert_eq!(
            deletes(&plan(3, H, &[broken(0), broken(1), broken(2)])),
            vec![
                ("r-2", DeleteReason::Outdated),
                ("r-1", DeleteReason::Outdated),
                ("r-0", DeleteReason::Outdated)
            ]
        );
        // Two broken, one old but Ready: the broken ones go first, the Ready one stays.
        let old2 = PodView {
            spec_hash: Some("old".into()),
            ..pod(2)
        };
        assert_eq!(
            deletes(&plan(3, H, &[broken(0), broken(1), old2])),
            vec![
                ("r-1", DeleteReason::Outdated),
                ("r-0", DeleteReason::Outdated)
            ]
        );
    }

    #[test]
    fn an_unready_outdated_pod_goes_even_while_another_terminates() {
        let mut going = PodView {
            spec_hash: Some("typo".into()),
            ready: false,
            ..pod(2)
        };
        going.terminating = true;
        let broken = PodView {
            spec_hash: Some("typo".into()),
            ready: false,
            ..pod(1)
        };
        assert_eq!(
            deletes(&plan(3, H, &[pod(0), broken, going])),
            vec![("r-1", DeleteReason::Outdated)]
        );
    }

    #[test]
    fn a_huge_replica_count_plans_a_bounded_batch() {
        // Issue item 2: `kubectl scale --replicas=2147483647` must not build billions of steps.
        let steps = plan(1_000_000, H, &[pod(0), pod(2)]);
        assert!(!steps.is_empty() && steps.len() <= 64, "{}", steps.len());
        let first = creates(&steps);
        assert_eq!(first[..3], [1, 3, 4], "lowest missing ordinals first");
        assert_eq!(plan(u32::MAX, H, &[]).len(), CREATE_BATCH);
    }

    #[test]
    fn deletes_carry_the_uid_they_were_planned_from() {
        let steps = plan(1, H, &[pod(0), pod(1)]);
        assert_eq!(
            steps,
            vec![PodStep::Delete {
                name: "r-1".into(),
                uid: Some("uid-1".into()),
                reason: DeleteReason::ScaleDown
            }]
        );
    }

    #[test]
    fn pod_view_reads_a_real_pod() {
        let pod = crate::cached::pod(serde_json::json!({
            "metadata": {"name": "r-3", "uid": "u3", "annotations": {SPEC_HASH_ANNOTATION: "abc"},
                         "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }));
        let view = PodView::from_pod("r", &pod);
        assert_eq!(view.ordinal, Some(3));
        assert_eq!(view.uid.as_deref(), Some("u3"));
        assert_eq!(view.spec_hash.as_deref(), Some("abc"));
        assert!(view.ready && view.terminating && !view.finished);
        let failed = crate::cached::pod(
            serde_json::json!({"metadata": {"name": "r-0"}, "status": {"phase": "Failed"}}),
        );
        assert!(PodView::from_pod("r", &failed).finished);
    }

    #[test]
    fn trouble_is_a_stuck_container_or_no_node_and_nothing_else() {
        let with_status = |status: serde_json::Value| -> CachedPod {
            crate::cached::pod(serde_json::json!({
                "metadata": {"name": "r-0"},
                "status": status,
            }))
        };
        let waiting = |reason: &str| {
            with_status(serde_json::json!({"containerStatuses": [{
                "name": "redis", "image": "img", "imageID": "", "ready": false,
                "restartCount": 0, "state": {"waiting": {"reason": reason, "message": "m"}},
            }]}))
        };
        let trouble = |pod: &CachedPod| PodTrouble::of(pod).map(|t| (t.reason, t.message));
        let t = |r: &str| Some((r.to_owned(), "m".to_owned()));
        // Both states of a failing pull read the same, so the status does not flip each retry.
        assert_eq!(trouble(&waiting("ErrImagePull")), t("ImagePullBackOff"));
        assert_eq!(trouble(&waiting("ImagePullBackOff")), t("ImagePullBackOff"));
        assert_eq!(trouble(&waiting("CrashLoopBackOff")), t("CrashLoopBackOff"));
        // Passing states are not trouble.
        assert_eq!(trouble(&waiting("ContainerCreating")), None);
        assert_eq!(trouble(&with_status(serde_json::json!({}))), None);
        let unschedulable = with_status(serde_json::json!({"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available",
        }]}));
        assert_eq!(
            trouble(&unschedulable),
            Some((
                "Unschedulable".to_owned(),
                "0/3 nodes are available".to_owned()
            ))
        );
    }

    #[test]
    fn a_serving_primary_is_neither_scaled_away_nor_rolled_before_it_hands_over() {
        let primary = |i| PodView {
            primary: true,
            ..pod(i)
        };
        // Scale 3 -> 1 with the primary at ordinal 2: the replica at 1 goes, the primary waits.
        let pods = [pod(0), pod(1), primary(2)];
        let deleted: Vec<String> = plan(1, H, &pods)
            .into_iter()
            .filter_map(|a| match a {
                PodStep::Delete { name, .. } => Some(name),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, vec!["r-1".to_owned()]);
        // An outdated primary waits; the outdated replica beside it is replaced first.
        let old = |p: PodView| PodView {
            spec_hash: Some("old".into()),
            ..p
        };
        let steps = plan(3, H, &[pod(0), old(pod(1)), old(primary(2))]);
        assert!(
            matches!(steps.as_slice(), [PodStep::Delete { name, .. }] if name == "r-1"),
            "{steps:?}"
        );
        // Alone, or not Ready, it may go.
        assert!(!plan(0, H, &[primary(0)]).is_empty());
    }
}
