//! What Replication mode says in the status (DESIGN §3b): the primary, each member's role and
//! lag, the `Replicating` and `FailingOver` conditions, and `Ready` only while a primary serves.
//! Pure.

use super::plan::{Decision, Health, Member};
use super::spread::{self, SPREAD, Spread};
use crate::k8s::conditions::{READY, condition, set_not_ready};
use crate::redis_server::info;
use api::{MemberStatus, RedisStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// What one pass found and did.
pub struct Outcome {
    pub decision: Decision,
    pub members: Vec<MemberStatus>,
    /// Whether the primary shares its node with another pod.
    pub spread: Spread,
    /// A pod's redis-server refused the operator's password: the auth step checks every pod.
    pub refuses_auth: bool,
}

/// Replication mode: the primary, each member's role and lag, and the `Replicating` and
/// `FailingOver` conditions; `Ready` only while a primary serves. Standalone (`None`): unchanged.
pub fn with_replication(
    mut status: RedisStatus,
    outcome: Option<&Outcome>,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    let Some(outcome) = outcome else {
        return status;
    };
    let health = &outcome.decision.health;
    // The last primary stays while none is chosen (every pod restarted, a failover waiting):
    // it says a primary existed, so no pod is ever bootstrapped over data (DESIGN §9.2).
    status.primary = outcome
        .decision
        .primary
        .clone()
        .or_else(|| stored.and_then(|s| s.primary.clone()));
    status.members = steady_members(&outcome.members, stored.map(|s| s.members.as_slice()));
    let serving = matches!(health, Health::Replicating | Health::Degraded(_));
    if !serving
        && let Some(ready) = status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == READY && c.status == "True")
    {
        let [replicating, _] = conditions(health);
        set_not_ready(ready, replicating.2, replicating.3, stored, now.clone());
    }
    let generation = status.observed_generation;
    let (value, reason, message) = spread::condition(&outcome.spread);
    let spread = (SPREAD, value, reason, message);
    for (type_, value, reason, message) in conditions(health).into_iter().chain([spread]) {
        status.conditions.push(condition(
            stored,
            type_,
            value,
            reason,
            message,
            generation,
            now.clone(),
        ));
    }
    status
}

/// The members to report: the stored lags are kept while each is still of the same order of
/// magnitude, so a replica a few bytes behind between two acknowledgements (the primary's pings
/// move the offset every 10 s at rest) does not make a status write every pass.
fn steady_members(
    now: &[api::MemberStatus],
    stored: Option<&[api::MemberStatus]>,
) -> Vec<api::MemberStatus> {
    fn magnitude(lag: Option<i64>) -> Option<u32> {
        // 0: under 1 KiB, 1: under 1 MiB, 2: under 1 GiB, 3: more.
        lag.map(|l| (0..3).find(|i| l < 1 << (10 * (i + 1))).unwrap_or(3))
    }
    now.iter()
        .map(|m| {
            let kept = stored
                .and_then(|s| s.iter().find(|o| o.name == m.name && o.role == m.role))
                .filter(|o| magnitude(o.lag) == magnitude(m.lag));
            kept.cloned().unwrap_or_else(|| m.clone())
        })
        .collect()
}

/// Each live pod's role and lag behind the primary, for `status.members`.
pub(super) fn member_status(decision: &Decision, members: &[Member]) -> Vec<MemberStatus> {
    let primary = decision
        .primary
        .as_deref()
        .and_then(|p| members.iter().find(|m| m.name == p));
    let primary_offset = primary
        .and_then(|p| p.redis.as_ref())
        .map(info::RedisRole::offset);
    let primary_ip = primary.and_then(|p| p.ip.as_deref());
    let mut status: Vec<MemberStatus> = members
        .iter()
        .filter(|m| !m.terminating)
        .map(|m| {
            let is_primary = decision.primary.as_deref() == Some(m.name.as_str());
            let follows = m.redis.as_ref().zip(primary_ip).is_some_and(|(r, ip)| {
                matches!(r, info::RedisRole::Replica { primary_host, .. } if primary_host == ip)
            });
            // Not read this pass (a timeout under load), but listed online by the primary: its
            // offset as the primary last heard it.
            let vouched = match (&m.redis, primary.and_then(|p| p.redis.as_ref()), &m.ip) {
                (None, Some(info::RedisRole::Primary { replicas, .. }), Some(ip)) => {
                    replicas.iter().find(|l| &l.ip == ip && l.online)
                }
                _ => None,
            };
            let (role, lag) = if is_primary {
                ("primary", None)
            } else if follows {
                let lag = primary_offset
                    .zip(m.redis.as_ref())
                    .map(|(p, r)| (p - r.offset()).max(0));
                ("replica", lag)
            } else if let Some(link) = vouched {
                ("replica", primary_offset.map(|p| (p - link.offset).max(0)))
            } else {
                ("unknown", None)
            };
            MemberStatus {
                name: m.name.clone(),
                role: role.to_owned(),
                lag,
            }
        })
        .collect();
    status.sort_by(|a, b| a.name.cmp(&b.name));
    status
}

/// The Warning to give when a failover has just come to wait for a member it cannot read (the
/// stored `FailingOver` condition did not say so): once per wait, not every pass (the message
/// counts seconds).
pub fn waiting_warning(health: &Health, stored: Option<&RedisStatus>) -> Option<String> {
    let Health::WaitingForMember(message) = health else {
        return None;
    };
    let [_, (_, _, reason, _)] = conditions(health);
    let said =
        crate::k8s::conditions::stored(stored, "FailingOver").is_some_and(|c| c.reason == reason);
    (!said).then(|| message.clone())
}

/// The Replicating and FailingOver conditions' (status, reason, message) for a decision.
pub fn conditions(health: &Health) -> [(&'static str, &'static str, &'static str, String); 2] {
    let (replicating, failing_over) = match health {
        Health::Replicating => (
            (
                "True",
                "ReplicasInSync",
                "every replica is linked and within minReplicasMaxLag".to_owned(),
            ),
            ("False", "PrimaryServing", "the primary serves".to_owned()),
        ),
        Health::Degraded(m) => (
            ("False", "ReplicasBehind", m.clone()),
            ("False", "PrimaryServing", "the primary serves".to_owned()),
        ),
        Health::PrimaryUnhealthy(m) => (
            ("False", "PrimaryUnhealthy", m.clone()),
            ("False", "WaitingForPrimary", m.clone()),
        ),
        Health::FailingOver(m) => (
            ("False", "FailingOver", m.clone()),
            ("True", "Promoting", m.clone()),
        ),
        Health::WaitingForMember(m) => (
            ("False", "WaitingForUnreadMember", m.clone()),
            ("True", "WaitingForUnreadMember", m.clone()),
        ),
        Health::NoCandidate(m) => (
            ("False", "NoPrimary", m.clone()),
            ("True", "NoReplicaReachable", m.clone()),
        ),
        Health::Electing => (
            (
                "False",
                "NoPrimary",
                "waiting for the first pod's redis-server".to_owned(),
            ),
            ("False", "Electing", "no primary yet".to_owned()),
        ),
    };
    [
        ("Replicating", replicating.0, replicating.1, replicating.2),
        (
            "FailingOver",
            failing_over.0,
            failing_over.1,
            failing_over.2,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failover_waiting_for_an_unread_member_is_warned_of_once() {
        let waiting =
            Health::WaitingForMember("primary r-0 was unreachable for 12s: waiting for r-1".into());
        let stored = |health: &Health| {
            with_replication(
                RedisStatus::default(),
                Some(&Outcome {
                    decision: Decision {
                        steps: Vec::new(),
                        primary: Some("r-0".into()),
                        health: health.clone(),
                        event: None,
                    },
                    members: Vec::new(),
                    spread: Spread::Unknown,
                    refuses_auth: false,
                }),
                None,
                crate::k8s::conditions::now(),
            )
        };
        let before = stored(&Health::PrimaryUnhealthy("r-0 unreachable for 4s".into()));
        let note = waiting_warning(&waiting, Some(&before)).expect("a warning");
        assert!(note.contains("r-1"), "{note}");
        // The next pass: the condition says so already, whatever the seconds now.
        let later =
            Health::WaitingForMember("primary r-0 was unreachable for 13s: waiting for r-1".into());
        assert_eq!(waiting_warning(&later, Some(&stored(&waiting))), None);
        assert_eq!(waiting_warning(&Health::Replicating, Some(&before)), None);
        // The conditions say why: FailingOver True, Ready's reason too (Replicating's).
        let failing_over = stored(&waiting);
        let found = |t: &str| {
            failing_over
                .conditions
                .iter()
                .find(|c| c.type_ == t)
                .map(|c| (c.status.as_str(), c.reason.as_str()))
        };
        assert_eq!(
            found("FailingOver"),
            Some(("True", "WaitingForUnreadMember"))
        );
        assert_eq!(
            found("Replicating"),
            Some(("False", "WaitingForUnreadMember"))
        );
        assert_eq!(found(SPREAD), Some(("Unknown", "NoPrimaryNode")));
    }

    #[test]
    fn member_lags_are_rewritten_only_when_their_magnitude_changes() {
        let member = |lag| api::MemberStatus {
            name: "r-1".into(),
            role: "replica".into(),
            lag: Some(lag),
        };
        let stored = [member(0)];
        assert_eq!(
            steady_members(&[member(14)], Some(&stored)),
            vec![member(0)]
        );
        assert_eq!(
            steady_members(&[member(5000)], Some(&stored)),
            vec![member(5000)]
        );
        assert_eq!(steady_members(&[member(14)], None), vec![member(14)]);
    }
}
