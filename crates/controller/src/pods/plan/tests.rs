//! Tests of `pods::plan`.

use super::*;
use crate::pods::build::SPEC_HASH_ANNOTATION;
use crate::pods::status::converged;

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
        lost: false,
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
    assert!(!view.lost, "deleted by someone: its kubelet will confirm");
    // Evicted by the taint manager from a node that stopped answering, long past its deadline.
    let evicted = crate::cached::pod(serde_json::json!({
        "metadata": {"name": "r-1", "deletionTimestamp": "2026-01-01T00:00:00Z"},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
             "message": "Taint manager: deleting due to NoExecute taint"}]}
    }));
    assert!(PodView::from_pod("r", &evicted).lost);
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

#[test]
fn a_pod_promoted_in_this_pass_is_not_deleted_by_it() {
    // Scaling 3 -> 2 while the primary r-0 is lost: the replication step of the same pass
    // promoted r-2 (the most data), whose primary label this pass's cache has not seen yet.
    let mut lost = pod(0);
    lost.ready = false;
    lost.primary = true;
    let views = with_primary(vec![lost, pod(1), pod(2)], Some("r-2"));
    let steps = plan(2, H, &views);
    assert!(
        !deletes(&steps).iter().any(|(name, _)| *name == "r-2"),
        "the new primary hands over (a switchover) before its pod goes: {steps:?}"
    );
    assert!(
        views
            .iter()
            .filter(|p| p.primary)
            .map(|p| &p.name)
            .eq(["r-2"])
    );
    // Standalone mode (no replication decision): the views are as the cache has them.
    let unchanged = with_primary(vec![pod(0), pod(1)], None);
    assert_eq!(unchanged, vec![pod(0), pod(1)]);
}

fn lost(i: u32) -> PodView {
    PodView {
        terminating: true,
        lost: true,
        ready: false,
        ..pod(i)
    }
}

#[test]
fn a_pod_lost_with_its_node_is_deleted_without_its_kubelet_and_replaced_once_gone() {
    // Its node stopped answering: the taint manager evicted it, and no kubelet will confirm.
    let pods = [pod(0), lost(1), pod(2)];
    assert_eq!(
        deletes(&plan(3, H, &pods)),
        vec![("r-1", DeleteReason::NodeLost)]
    );
    assert!(
        creates(&plan(3, H, &pods)).is_empty(),
        "its name is still taken"
    );
    // A pod that is merely terminating waits for its kubelet.
    let slow = PodView {
        terminating: true,
        ..pod(1)
    };
    assert!(plan(3, H, &[pod(0), slow, pod(2)]).is_empty());
}

#[test]
fn a_lost_primary_waits_for_the_failover_to_move_its_label() {
    let primary = PodView {
        primary: true,
        ..lost(0)
    };
    assert!(deletes(&plan(3, H, &[primary.clone(), pod(1), pod(2)])).is_empty());
    // Alone (nothing to fail over to), or once the label moved, it goes.
    assert_eq!(
        deletes(&plan(1, H, std::slice::from_ref(&primary))),
        vec![("r-0", DeleteReason::NodeLost)]
    );
    let moved = PodView {
        primary: true,
        ..pod(1)
    };
    assert_eq!(
        deletes(&plan(3, H, &[lost(0), moved, pod(2)])),
        vec![("r-0", DeleteReason::NodeLost)]
    );
}

#[test]
fn a_pod_counts_as_lost_only_when_evicted_by_taint_and_past_its_deadline() {
    use crate::cached::CachedPod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let deadline: Timestamp = "2026-12-04T10:00:00Z".parse().expect("a timestamp");
    let mut pod = CachedPod::default();
    pod.metadata.deletion_timestamp = Some(Time(deadline));
    let after = deadline + LOST_POD_GRACE;
    assert!(
        !is_lost(&pod, after),
        "deleted by someone, its kubelet will confirm"
    );
    pod.evicted_by_taint = true;
    assert!(!is_lost(&pod, deadline), "its grace period is not over");
    assert!(is_lost(&pod, after));
    pod.metadata.deletion_timestamp = None;
    assert!(!is_lost(&pod, after), "not being deleted");
}
