//! The status a Redis should show (DESIGN §3), computed from the real pods. The reconciler
//! writes it only when it differs from what is stored, so a steady state makes no writes.

use super::plan::{self, PodView};
use crate::k8s::conditions::{READY, condition};
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// What the status of one Redis is computed from.
#[derive(Debug, Clone)]
pub struct StatusInput<'a> {
    pub redis_name: &'a str,
    /// `metadata.generation` of the Redis: the spec the status speaks of.
    pub generation: Option<i64>,
    pub replicas: u32,
    /// The spec hash the pods should carry.
    pub hash: &'a str,
    pub pods: &'a [PodView],
    /// The status stored now, whose `Ready` transition time is kept while the condition's
    /// status does not change.
    pub stored: Option<&'a RedisStatus>,
    /// The time to stamp a transition with.
    pub now: Time,
}

/// The status `input.pods` amount to.
pub fn desired_status(input: StatusInput<'_>) -> RedisStatus {
    let StatusInput {
        redis_name,
        generation,
        replicas,
        hash,
        pods,
        stored,
        now,
    } = input;
    let (existing, ready) = counts(pods);
    let converged = converged(replicas, hash, pods);
    let outdated = pods
        .iter()
        .filter(|p| !p.terminating && p.spec_hash.as_deref() != Some(hash))
        .count();
    let (status, reason, message) = if converged {
        (
            "True",
            "AllReplicasReady",
            format!("{ready}/{replicas} pods are Ready"),
        )
    } else if existing > replicas as i32 {
        (
            "False",
            "ScalingDown",
            format!("{existing} pods exist, {replicas} wanted"),
        )
    } else if existing < replicas as i32 {
        (
            "False",
            "ScalingUp",
            format!("{existing} of {replicas} pods exist, {ready} Ready"),
        )
    } else if outdated > 0 {
        (
            "False",
            "RollingUpdate",
            format!("{outdated} of {replicas} pods run an older spec, {ready} Ready"),
        )
    } else {
        (
            "False",
            "PodsNotReady",
            format!("{ready}/{replicas} pods are Ready"),
        )
    };
    let (reason, message) = match (status, stuck(pods)) {
        ("False", Some((count, pod, trouble))) => (
            trouble.reason.as_str(),
            format!("{count} pod(s) stuck, {}: {}", pod.name, trouble.message),
        ),
        _ => (reason, message),
    };
    RedisStatus {
        replicas: existing,
        ready_replicas: ready,
        selector: Some(api::pods::selector_string(redis_name)),
        observed_generation: generation,
        conditions: vec![condition(
            stored, READY, status, reason, message, generation, now,
        )],
        ..RedisStatus::default()
    }
}

/// Counts for status: pods that exist (not terminating), and of those the Ready ones.
pub fn counts(pods: &[PodView]) -> (i32, i32) {
    let live: Vec<_> = pods.iter().filter(|p| !p.terminating).collect();
    let ready = live.iter().filter(|p| p.ready && !p.finished).count();
    (
        i32::try_from(live.len()).unwrap_or(i32::MAX),
        i32::try_from(ready).unwrap_or(i32::MAX),
    )
}

/// Whether the Redis is fully converged: exactly the ordinals 0..replicas exist, all Ready on
/// the current spec, and nothing else is left.
pub fn converged(replicas: u32, hash: &str, pods: &[PodView]) -> bool {
    pods.len() == replicas as usize
        && (0..replicas).all(|i| {
            pods.iter()
                .any(|p| p.ordinal == Some(i) && serving(p, hash))
        })
}

/// The pod serves the current spec: Ready, running, staying.
fn serving(pod: &PodView, hash: &str) -> bool {
    pod.ready && !pod.finished && !pod.terminating && pod.spec_hash.as_deref() == Some(hash)
}

/// How many live pods are stuck (see [`plan::PodTrouble`]), and the one with the lowest ordinal:
/// what a user has to fix is said before how far the rollout got.
fn stuck(pods: &[PodView]) -> Option<(usize, &PodView, &plan::PodTrouble)> {
    let stuck = || {
        pods.iter()
            .filter(|p| !p.terminating && p.trouble.is_some())
    };
    let first = stuck().min_by_key(|p| (p.ordinal, &p.name))?;
    Some((stuck().count(), first, first.trouble.as_ref()?))
}

/// A pod write the API server refused in this pass: its Event reason and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFailure {
    /// `FailedCreate` or `FailedDelete`, as the Event.
    pub reason: &'static str,
    pub message: String,
}

/// The Ready condition's reason while the Redis is paused.
pub const PAUSED: &str = "Paused";

/// The stored status with Ready False/`Paused` (kept as it is when it already says so); every
/// other field stays as last written, since a paused controller does not look at the pods.
pub fn with_paused(
    mut status: RedisStatus,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    let already = stored
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == READY))
        .is_some_and(|c| c.status == "False" && c.reason == PAUSED);
    if already {
        return status;
    }
    status.conditions.retain(|c| c.type_ != READY);
    status.conditions.insert(
        0,
        Condition {
            type_: READY.to_owned(),
            status: "False".to_owned(),
            reason: PAUSED.to_owned(),
            message: format!(
                "the controller leaves this Redis alone while the annotation {} is \"true\"; remove it to resume (deleting the Redis still works)",
                api::PAUSED_ANNOTATION
            ),
            observed_generation: status.observed_generation,
            last_transition_time: now,
        },
    );
    status
}

/// The status with a refused pod write said in the `Ready` condition, as a ReplicaSet says it in
/// `ReplicaFailure`: `kubectl describe` and `kubectl wait` users see why it is not converging
/// (say, a ResourceQuota), not only that it is not. A converged status is left as it is.
pub fn with_failure(mut status: RedisStatus, failure: Option<&PodFailure>) -> RedisStatus {
    if let Some(failure) = failure
        && let Some(ready) = status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == READY && c.status != "True")
    {
        ready.reason = failure.reason.to_owned();
        ready.message = failure.message.clone();
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pausing_says_so_once_and_keeps_the_rest_of_the_status() {
        let time = |s: &str| Time(s.parse().expect("time"));
        let stored = RedisStatus {
            replicas: 2,
            ready_replicas: 2,
            conditions: vec![Condition {
                type_: READY.into(),
                status: "True".into(),
                reason: "AllPodsReady".into(),
                message: String::new(),
                observed_generation: Some(1),
                last_transition_time: time("2026-01-01T00:00:00Z"),
            }],
            ..RedisStatus::default()
        };
        let paused = with_paused(stored.clone(), Some(&stored), time("2026-01-02T00:00:00Z"));
        assert_eq!(paused.ready_replicas, 2);
        assert_eq!(paused.conditions.len(), 1);
        assert_eq!(paused.conditions[0].reason, PAUSED);
        assert_eq!(paused.conditions[0].status, "False");
        // A second pass changes nothing, so it writes nothing.
        let again = with_paused(paused.clone(), Some(&paused), time("2026-01-03T00:00:00Z"));
        assert_eq!(again, paused);
    }

    fn pod(i: u32, ready: bool) -> PodView {
        PodView {
            name: format!("r-{i}"),
            uid: None,
            ordinal: Some(i),
            spec_hash: Some("h".into()),
            ready,
            finished: false,
            terminating: false,
            lost: false,
            trouble: None,
            primary: false,
        }
    }

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).expect("time"))
    }

    /// Redis `r` at generation 1, pods on spec `h`, no stored status, at time 10.
    fn input(replicas: u32, pods: &[PodView]) -> StatusInput<'_> {
        StatusInput {
            redis_name: "r",
            generation: Some(1),
            replicas,
            hash: "h",
            pods,
            stored: None,
            now: at(10),
        }
    }

    fn ready_condition(s: &RedisStatus) -> &Condition {
        s.conditions
            .iter()
            .find(|c| c.type_ == READY)
            .expect("Ready condition")
    }

    #[test]
    fn converged_is_ready_with_counts_and_selector() {
        let s = desired_status(StatusInput {
            generation: Some(4),
            ..input(2, &[pod(0, true), pod(1, true)])
        });
        assert_eq!((s.replicas, s.ready_replicas), (2, 2));
        assert_eq!(s.observed_generation, Some(4));
        assert_eq!(
            s.selector.as_deref(),
            Some(api::pods::selector_string("r").as_str())
        );
        let c = ready_condition(&s);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "AllReplicasReady")
        );
        assert_eq!(c.observed_generation, Some(4));
    }

    #[test]
    fn a_refused_pod_write_is_the_reason_until_converged() {
        let failure = PodFailure {
            reason: "FailedCreate",
            message: "creating pod r-1: exceeded quota".into(),
        };
        let scaling = desired_status(input(2, &[pod(0, true)]));
        let failed = with_failure(scaling.clone(), Some(&failure));
        let c = ready_condition(&failed);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("False", "FailedCreate", "creating pod r-1: exceeded quota")
        );
        assert_eq!(failed.replicas, scaling.replicas);
        assert_eq!(with_failure(scaling.clone(), None), scaling);
        let converged = desired_status(input(1, &[pod(0, true)]));
        assert_eq!(with_failure(converged.clone(), Some(&failure)), converged);
    }

    #[test]
    fn reasons_say_what_is_going_on() {
        let reason = |replicas, pods: &[PodView]| {
            ready_condition(&desired_status(StatusInput {
                now: at(0),
                ..input(replicas, pods)
            }))
            .reason
            .clone()
        };
        assert_eq!(reason(3, &[pod(0, true)]), "ScalingUp");
        assert_eq!(reason(1, &[pod(0, true), pod(1, true)]), "ScalingDown");
        assert_eq!(reason(2, &[pod(0, true), pod(1, false)]), "PodsNotReady");
        let old = PodView {
            spec_hash: Some("old".into()),
            ..pod(1, true)
        };
        assert_eq!(reason(2, &[pod(0, true), old]), "RollingUpdate");
        assert_eq!(reason(0, &[]), "AllReplicasReady");
    }

    #[test]
    fn a_stuck_pod_is_the_reason_until_converged() {
        let stuck = |i: u32, reason: &str| PodView {
            trouble: Some(plan::PodTrouble {
                reason: reason.into(),
                message: format!("Back-off pulling image \"img-{i}\""),
            }),
            ..pod(i, false)
        };
        let s = desired_status(input(
            3,
            &[
                stuck(2, "ImagePullBackOff"),
                pod(0, true),
                stuck(1, "ImagePullBackOff"),
            ],
        ));
        let c = ready_condition(&s);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "False",
                "ImagePullBackOff",
                "2 pod(s) stuck, r-1: Back-off pulling image \"img-1\""
            )
        );
        // A terminating stuck pod is on its way out: it is not the reason.
        let leaving = PodView {
            terminating: true,
            ..stuck(1, "CrashLoopBackOff")
        };
        let s = desired_status(input(1, &[pod(0, false), leaving]));
        assert_eq!(ready_condition(&s).reason, "PodsNotReady");
    }

    #[test]
    fn the_same_state_gives_the_same_status_so_nothing_is_written() {
        let pods = [pod(0, true), pod(1, true)];
        let first = desired_status(input(2, &pods));
        let again = desired_status(StatusInput {
            stored: Some(&first),
            now: at(99),
            ..input(2, &pods)
        });
        assert_eq!(
            first, again,
            "the transition time is kept while Ready does not change"
        );
    }

    #[test]
    fn transition_time_moves_only_when_ready_flips() {
        let ready = desired_status(input(1, &[pod(0, true)]));
        let not_ready = desired_status(StatusInput {
            stored: Some(&ready),
            now: at(20),
            ..input(1, &[pod(0, false)])
        });
        assert_eq!(ready_condition(&not_ready).last_transition_time, at(20));
        let still_not = desired_status(StatusInput {
            stored: Some(&not_ready),
            now: at(30),
            ..input(1, &[])
        });
        assert_eq!(ready_condition(&still_not).last_transition_time, at(20));
    }

    #[test]
    fn counts_exclude_terminating_pods() {
        let mut going = pod(2, true);
        going.terminating = true;
        let mut unready = pod(1, true);
        unready.ready = false;
        assert_eq!(counts(&[pod(0, true), unready, going]), (2, 1));
    }
}
