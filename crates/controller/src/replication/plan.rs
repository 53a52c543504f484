//! Who is the primary, and what to tell each redis-server (Replication mode). Pure: the inputs are
//! the pods as the API server and the redis-servers themselves describe them; the output is the
//! steps to take. The rules (docs/design.md, "Replication"):
//!
//! 1. The primary is the pod labelled `myapp.tangx.in/role=primary`; the `<name>` Service
//!    follows that label. At most one pod carries it: a label is removed before another is set.
//! 2. Every redis-server starts fenced (a replica of nowhere, see [`crate::redis_server::FENCE_HOST`]).
//!    With no primary and no data anywhere, the lowest ordinal is promoted (bootstrap).
//! 3. A healthy primary (Ready, answering as a primary): every other reachable server is told to
//!    replicate it, a server answering as a second primary included (fencing); replicas that follow
//!    it are labelled replica.
//! 4. A primary that is unreachable or not Ready is given `failoverAfter`; one whose pod is gone
//!    or whose redis-server died or restarted (its container is not running, or it answers fenced:
//!    its data is lost either way) is replaced at once. The
//!    reachable replica with the highest replication offset is promoted, the old primary's label
//!    removed first, and the others (the old primary too, when it returns) repointed. A labelled
//!    replica that could not be read is waited for first, at most `failoverAfter` since the
//!    primary was lost: it may hold acknowledged writes the others lack.
//! 5. A healthy primary whose pod is about to go (scaled away or outdated) hands over first: a
//!    switchover to an in-sync replica that stays, with writes paused until it has caught up.

use crate::redis_server::info::RedisRole;
use std::time::Duration;

/// The role label a pod carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Primary,
    Replica,
}

/// One pod of the Redis, as the API server and its redis-server describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub ordinal: Option<u32>,
    pub ip: Option<String>,
    /// Its Ready condition is True.
    pub ready: bool,
    pub terminating: bool,
    /// Runs the current pod spec (a rolling update will not replace it).
    pub current: bool,
    /// Its redis container is not running (exited, waiting to be restarted): the process that
    /// held the data is gone, whatever comes next.
    pub process_gone: bool,
    pub label: Option<Label>,
    /// What its redis-server answered; `None` when it could not be reached.
    pub redis: Option<RedisRole>,
}

/// What to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Set (or with `None` remove) the pod's role label.
    Label { pod: String, role: Option<Label> },
    /// `REPLICAOF NO ONE`.
    Promote { pod: String },
    /// `REPLICAOF <host> <port>`.
    Follow { pod: String, host: String },
    /// Planned handover: pause writes on `from`, wait until `to` has everything, promote `to`,
    /// move the label, make `from` follow `to`.
    Switchover { from: String, to: String },
}

/// The state of replication, for the status and Events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// A primary serves and every other pod replicates it in time.
    Replicating,
    /// A primary serves; some replicas are not linked or lag (the message says which).
    Degraded(String),
    /// The primary is unhealthy, for less than `failoverAfter` so far.
    PrimaryUnhealthy(String),
    /// A replica is promoted in this pass.
    FailingOver(String),
    /// The primary is lost and no replica can take over.
    NoCandidate(String),
    /// No primary yet: waiting for the first pod's redis-server.
    Electing,
}

/// The decision for one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub steps: Vec<Step>,
    /// The primary once the steps are done.
    pub primary: Option<String>,
    pub health: Health,
    /// An Event to record: (reason, note).
    pub event: Option<(&'static str, String)>,
}

/// The inputs besides the members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Desired number of pods: ordinals at or above it are going away.
    pub replicas: u32,
    pub port: u16,
    /// How long the labelled primary has been seen unhealthy (`None`: it is healthy or unknown).
    pub primary_unhealthy_for: Option<Duration>,
    pub failover_after: Duration,
    /// `minReplicasMaxLag`: a replica whose last acknowledgement is older lags.
    pub max_lag_seconds: i64,
}

pub fn decide(members: &[Member], settings: &Settings) -> Decision {
    let live: Vec<&Member> = members.iter().filter(|m| !m.terminating).collect();
    let mut labelled: Vec<&Member> = live
        .iter()
        .copied()
        .filter(|m| m.label == Some(Label::Primary))
        .collect();
    // Rule 1 broken from outside (never by us): keep the best one, unlabel the others first.
    labelled.sort_by_key(|m| {
        let serving = m.ready && matches!(m.redis, Some(RedisRole::Primary { .. }));
        (
            std::cmp::Reverse(serving),
            std::cmp::Reverse(m.redis.as_ref().map_or(-1, RedisRole::offset)),
            m.ordinal,
        )
    });
    let mut steps: Vec<Step> = labelled
        .iter()
        .skip(1)
        .map(|m| Step::Label {
            pod: m.name.clone(),
            role: None,
        })
        .collect();
    let mut decision = match labelled.first() {
        Some(primary) => with_primary(primary, &live, settings),
        None => without_primary(&live, settings),
    };
    steps.append(&mut decision.steps);
    decision.steps = steps;
    decision
}

fn with_primary(primary: &Member, live: &[&Member], settings: &Settings) -> Decision {
    let others: Vec<&Member> = live
        .iter()
        .copied()
        .filter(|m| m.name != primary.name)
        .collect();
    let healthy = primary.ready
        && primary.ip.is_some()
        && matches!(primary.redis, Some(RedisRole::Primary { .. }));
    if healthy {
        return serving(primary, &others, settings);
    }
    // Its redis-server died (the kubelet may take seconds to restart a container it restarted
    // before) or came back fenced and empty: nothing to wait for.
    let restarted =
        primary.process_gone || primary.redis.as_ref().is_some_and(RedisRole::is_fenced);
    let unhealthy_for = settings.primary_unhealthy_for.unwrap_or_default();
    if !restarted && unhealthy_for < settings.failover_after {
        return Decision {
            steps: Vec::new(),
            primary: Some(primary.name.clone()),
            health: Health::PrimaryUnhealthy(format!(
                "primary {} is {} for {}s of the {}s allowed before failover",
                primary.name,
                describe_unhealthy(primary),
                unhealthy_for.as_secs(),
                settings.failover_after.as_secs()
            )),
            event: None,
        };
    }
    let why = if restarted {
        format!(
            "the redis-server of primary {} died or restarted without its data",
            primary.name
        )
    } else {
        format!(
            "primary {} was {} for {}s",
            primary.name,
            describe_unhealthy(primary),
            unhealthy_for.as_secs()
        )
    };
    let candidate = best_replica(&others, primary.ip.as_deref(), settings.port);
    let Some(candidate) = candidate else {
        return Decision {
            steps: Vec::new(),
            primary: Some(primary.name.clone()),
            health: Health::NoCandidate(format!(
                "{why}, and no replica with its data is reachable"
            )),
            event: None,
        };
    };
    // As without a primary: a replica that could not be read may hold writes the candidate lacks.
    if let Some(reading) = unread_replicas(&others, candidate, settings) {
        return Decision {
            steps: Vec::new(),
            primary: Some(primary.name.clone()),
            health: Health::FailingOver(format!("{why}: {reading}")),
            event: None,
        };
    }
    let mut steps = vec![Step::Label {
        pod: primary.name.clone(),
        role: None,
    }];
    steps.extend(promote(candidate, live));
    Decision {
        steps,
        primary: Some(candidate.name.clone()),
        health: Health::FailingOver(format!("{why}: promoting {}", candidate.name)),
        event: Some((
            "PrimaryFailedOver",
            format!(
                "{why}; promoted {} (replication offset {})",
                candidate.name,
                candidate.redis.as_ref().map_or(0, RedisRole::offset)
            ),
        )),
    }
}

/// Rule 3 (and 5): a healthy primary.
fn serving(primary: &Member, others: &[&Member], settings: &Settings) -> Decision {
    let ip = primary.ip.as_deref().unwrap_or_default();
    let port = settings.port;
    let leaving = !primary.current || primary.ordinal.is_none_or(|o| o >= settings.replicas);
    if leaving
        && let Some(heir) = others
            .iter()
            .filter(|m| {
                m.ready
                    && m.current
                    && m.ordinal.is_some_and(|o| o < settings.replicas)
                    && m.redis.as_ref().is_some_and(|r| {
                        r.follows(ip, port) && matches!(r, RedisRole::Replica { link_up: true, .. })
                    })
            })
            .max_by_key(|m| {
                (
                    m.redis.as_ref().map_or(0, RedisRole::offset),
                    std::cmp::Reverse(m.ordinal),
                )
            })
    {
        return Decision {
            steps: vec![Step::Switchover {
                from: primary.name.clone(),
                to: heir.name.clone(),
            }],
            primary: Some(heir.name.clone()),
            health: Health::FailingOver(format!(
                "primary {} is going away: handing over to {}",
                primary.name, heir.name
            )),
            event: Some((
                "PrimarySwitchedOver",
                format!(
                    "{} handed over to {} before being {}",
                    primary.name,
                    heir.name,
                    if primary.current {
                        "scaled away"
                    } else {
                        "replaced"
                    }
                ),
            )),
        };
    }
    let mut steps = Vec::new();
    let mut lagging = Vec::new();
    let links = match &primary.redis {
        Some(RedisRole::Primary { replicas, .. }) => replicas.as_slice(),
        _ => &[],
    };
    for member in others {
        let Some(redis) = &member.redis else {
            lagging.push(format!("{} unreachable", member.name));
            continue;
        };
        if !redis.follows(ip, port) {
            steps.push(Step::Follow {
                pod: member.name.clone(),
                host: ip.to_owned(),
            });
            lagging.push(format!("{} not linked yet", member.name));
            continue;
        }
        if member.label != Some(Label::Replica) {
            steps.push(Step::Label {
                pod: member.name.clone(),
                role: Some(Label::Replica),
            });
        }
        let link = member
            .ip
            .as_deref()
            .and_then(|mip| links.iter().find(|l| l.ip == mip));
        match link {
            Some(l) if l.online && l.lag <= settings.max_lag_seconds => {}
            Some(l) if l.online => lagging.push(format!("{} lags {}s", member.name, l.lag)),
            _ => lagging.push(format!("{} not linked yet", member.name)),
        }
    }
    Decision {
        steps,
        primary: Some(primary.name.clone()),
        health: if lagging.is_empty() {
            Health::Replicating
        } else {
            Health::Degraded(lagging.join(", "))
        },
        event: None,
    }
}

/// Rule 2 and the rest of rule 4: no pod carries the primary label.
fn without_primary(live: &[&Member], settings: &Settings) -> Decision {
    // A server with data: it followed a primary (not only the fence), or it is one.
    if let Some(candidate) = best_replica(live, None, settings.port) {
        if let Some(reading) = unread_replicas(live, candidate, settings) {
            return Decision {
                steps: Vec::new(),
                primary: None,
                health: Health::FailingOver(format!("no primary: {reading}")),
                event: None,
            };
        }
        return Decision {
            steps: promote(candidate, live),
            primary: Some(candidate.name.clone()),
            health: Health::FailingOver(format!(
                "no pod is the primary: promoting {}",
                candidate.name
            )),
            event: Some((
                "PrimaryFailedOver",
                format!(
                    "the primary's pod is gone; promoted {} (replication offset {})",
                    candidate.name,
                    candidate.redis.as_ref().map_or(0, RedisRole::offset)
                ),
            )),
        };
    }
    // Bootstrap: nobody has data; the lowest ordinal that exists becomes the primary.
    let Some(first) = live
        .iter()
        .filter(|m| m.ordinal.is_some_and(|o| o < settings.replicas))
        .min_by_key(|m| m.ordinal)
    else {
        return electing();
    };
    if first.redis.is_none() || first.ip.is_none() {
        return electing();
    }
    Decision {
        steps: promote(first, live),
        primary: Some(first.name.clone()),
        health: Health::FailingOver(format!("electing {} as the first primary", first.name)),
        event: Some(("PrimaryElected", format!("{} is the primary", first.name))),
    }
}

fn electing() -> Decision {
    Decision {
        steps: Vec::new(),
        primary: None,
        health: Health::Electing,
        event: None,
    }
}

/// Steps making `candidate` the primary and every other reachable server its replica.
fn promote(candidate: &Member, live: &[&Member]) -> Vec<Step> {
    let mut steps = Vec::new();
    if !matches!(candidate.redis, Some(RedisRole::Primary { .. })) {
        steps.push(Step::Promote {
            pod: candidate.name.clone(),
        });
    }
    steps.push(Step::Label {
        pod: candidate.name.clone(),
        role: Some(Label::Primary),
    });
    if let Some(ip) = &candidate.ip {
        for member in live
            .iter()
            .filter(|m| m.name != candidate.name && m.redis.is_some())
        {
            steps.push(Step::Follow {
                pod: member.name.clone(),
                host: ip.clone(),
            });
        }
    }
    steps
}

/// Before promoting `candidate`, in place of the primary lost (its pod gone, its redis-server
/// restarted, or unhealthy for `failoverAfter`): a replica whose container runs but whose
/// redis-server could not be read this pass (a labelled replica; under load a read can time out)
/// may hold more acknowledged writes than the candidate (a write acknowledged by `WAIT 1` from it
/// alone), and promoting another would repoint it and resync them away. So it is waited for, at
/// most `failoverAfter` since the primary was lost; then the best readable one is promoted.
/// `Some(what is awaited)` while waiting.
fn unread_replicas(live: &[&Member], candidate: &Member, settings: &Settings) -> Option<String> {
    let unread: Vec<&str> = live
        .iter()
        .filter(|m| {
            // Only a labelled replica followed the lost primary; a new, unlabelled pod has no
            // data to wait for.
            m.name != candidate.name
                && m.label == Some(Label::Replica)
                && m.ip.is_some()
                && !m.process_gone
                && !m.terminating
                && m.redis.is_none()
        })
        .map(|m| m.name.as_str())
        .collect();
    let waited = settings
        .primary_unhealthy_for
        .unwrap_or(settings.failover_after);
    if unread.is_empty() || waited >= settings.failover_after {
        return None;
    }
    Some(format!(
        "reading {} before choosing the most up-to-date replica ({}s of {}s)",
        unread.join(", "),
        waited.as_secs(),
        settings.failover_after.as_secs()
    ))
}

/// The reachable server with the most data: a replica that followed the lost primary (or any
/// primary but the fence) or a server answering as a primary, highest replication offset first,
/// then current, Ready, lowest ordinal.
fn best_replica<'a>(
    members: &[&'a Member],
    lost_ip: Option<&str>,
    port: u16,
) -> Option<&'a Member> {
    members
        .iter()
        .copied()
        .filter(|m| m.ip.is_some())
        .filter(|m| match &m.redis {
            Some(r @ RedisRole::Replica { .. }) => {
                !r.is_fenced() && (lost_ip.is_none_or(|ip| r.follows(ip, port)) || r.offset() > 0)
            }
            Some(RedisRole::Primary { .. }) => lost_ip.is_none(),
            None => false,
        })
        .max_by_key(|m| {
            (
                m.redis.as_ref().map_or(0, RedisRole::offset),
                m.current,
                m.ready,
                std::cmp::Reverse(m.ordinal),
            )
        })
}

fn describe_unhealthy(m: &Member) -> &'static str {
    match (&m.redis, m.ready) {
        (None, _) => "unreachable",
        (Some(RedisRole::Replica { .. }), _) => "not answering as a primary",
        (Some(_), false) => "not Ready",
        (Some(_), true) => "unhealthy",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_server::info::{FENCE_HOST, FENCE_PORT, ReplicaLink};

    const PORT: u16 = 6379;

    fn ip(i: u32) -> String {
        format!("10.88.1.{i}")
    }

    fn fenced(i: u32) -> Member {
        Member {
            name: format!("r-{i}"),
            ordinal: Some(i),
            ip: Some(ip(i)),
            ready: true,
            terminating: false,
            current: true,
            process_gone: false,
            label: None,
            redis: Some(RedisRole::Replica {
                primary_host: FENCE_HOST.into(),
                primary_port: FENCE_PORT,
                link_up: false,
                offset: 0,
            }),
        }
    }

    fn primary(i: u32, offset: i64, replicas: &[u32]) -> Member {
        Member {
            label: Some(Label::Primary),
            redis: Some(RedisRole::Primary {
                offset,
                replicas: replicas
                    .iter()
                    .map(|r| ReplicaLink {
                        ip: ip(*r),
                        port: PORT,
                        online: true,
                        offset,
                        lag: 0,
                    })
                    .collect(),
            }),
            ..fenced(i)
        }
    }

    fn replica(i: u32, of: u32, offset: i64) -> Member {
        Member {
            label: Some(Label::Replica),
            redis: Some(RedisRole::Replica {
                primary_host: ip(of),
                primary_port: PORT,
                link_up: true,
                offset,
            }),
            ..fenced(i)
        }
    }

    fn settings(replicas: u32) -> Settings {
        Settings {
            replicas,
            port: PORT,
            primary_unhealthy_for: None,
            failover_after: Duration::from_secs(10),
            max_lag_seconds: 10,
        }
    }

    fn label(pod: &str, role: Option<Label>) -> Step {
        Step::Label {
            pod: pod.into(),
            role,
        }
    }

    fn follow(pod: &str, of: u32) -> Step {
        Step::Follow {
            pod: pod.into(),
            host: ip(of),
        }
    }

    #[test]
    fn bootstrap_promotes_ordinal_zero_and_points_the_others_at_it() {
        let d = decide(&[fenced(1), fenced(0), fenced(2)], &settings(3));
        assert_eq!(
            d.steps,
            vec![
                Step::Promote { pod: "r-0".into() },
                label("r-0", Some(Label::Primary)),
                follow("r-1", 0),
                follow("r-2", 0),
            ]
        );
        assert_eq!(d.primary.as_deref(), Some("r-0"));
        assert_eq!(d.event.map(|e| e.0), Some("PrimaryElected"));
    }

    #[test]
    fn bootstrap_waits_for_ordinal_zero_to_answer() {
        let zero = Member {
            redis: None,
            ..fenced(0)
        };
        let d = decide(&[zero, fenced(1)], &settings(2));
        assert_eq!(d.steps, vec![]);
        assert_eq!(d.health, Health::Electing);
    }

    #[test]
    fn a_healthy_primary_gets_linked_replicas_labelled_and_strays_repointed() {
        let unlabelled = Member {
            label: None,
            ..replica(1, 0, 100)
        };
        let d = decide(
            &[primary(0, 100, &[1]), unlabelled, fenced(2)],
            &settings(3),
        );
        assert_eq!(
            d.steps,
            vec![label("r-1", Some(Label::Replica)), follow("r-2", 0)]
        );
        assert_eq!(d.health, Health::Degraded("r-2 not linked yet".into()));
    }

    #[test]
    fn all_replicas_linked_in_time_is_replicating_and_does_nothing() {
        let d = decide(
            &[
                primary(0, 100, &[1, 2]),
                replica(1, 0, 100),
                replica(2, 0, 90),
            ],
            &settings(3),
        );
        assert_eq!(d.steps, vec![]);
        assert_eq!(d.health, Health::Replicating);
    }

    #[test]
    fn a_lagging_replica_degrades_replication() {
        let mut p = primary(0, 100, &[1]);
        if let Some(RedisRole::Primary { replicas, .. }) = &mut p.redis {
            replicas[0].lag = 30;
        }
        let d = decide(&[p, replica(1, 0, 40)], &settings(2));
        assert_eq!(d.steps, vec![]);
        assert_eq!(d.health, Health::Degraded("r-1 lags 30s".into()));
    }

    #[test]
    fn two_primaries_seen_the_unlabelled_one_is_fenced() {
        let rogue = Member {
            label: None,
            ..primary(1, 5, &[])
        };
        let d = decide(&[primary(0, 100, &[]), rogue], &settings(2));
        assert_eq!(d.steps, vec![follow("r-1", 0)]);
        assert_eq!(d.primary.as_deref(), Some("r-0"));
    }

    #[test]
    fn two_labelled_primaries_keep_the_serving_one() {
        let stale = Member {
            redis: Some(RedisRole::Replica {
                primary_host: ip(0),
                primary_port: PORT,
                link_up: true,
                offset: 100,
            }),
            ..primary(1, 0, &[])
        };
        let d = decide(&[stale, primary(0, 100, &[1])], &settings(2));
        assert_eq!(d.steps.first(), Some(&label("r-1", None)));
        assert_eq!(d.primary.as_deref(), Some("r-0"));
    }

    #[test]
    fn an_unreachable_primary_is_given_failover_after() {
        let lost = Member {
            redis: None,
            ready: false,
            ..primary(0, 100, &[])
        };
        let mut s = settings(3);
        s.primary_unhealthy_for = Some(Duration::from_secs(4));
        let members = [lost, replica(1, 0, 100), replica(2, 0, 80)];
        let d = decide(&members, &s);
        assert_eq!(d.steps, vec![]);
        assert!(
            matches!(d.health, Health::PrimaryUnhealthy(_)),
            "{:?}",
            d.health
        );
        assert_eq!(d.primary.as_deref(), Some("r-0"));

        s.primary_unhealthy_for = Some(Duration::from_secs(10));
        let d = decide(&members, &s);
        assert_eq!(
            d.steps,
            vec![
                label("r-0", None),
                Step::Promote { pod: "r-1".into() },
                label("r-1", Some(Label::Primary)),
                follow("r-2", 1),
            ]
        );
        assert_eq!(d.primary.as_deref(), Some("r-1"));
        assert_eq!(d.event.map(|e| e.0), Some("PrimaryFailedOver"));
    }

    #[test]
    fn the_replica_with_the_highest_offset_is_promoted() {
        let lost = Member {
            redis: None,
            ready: false,
            ..primary(0, 100, &[])
        };
        let mut s = settings(3);
        s.primary_unhealthy_for = Some(Duration::from_secs(60));
        let d = decide(&[lost, replica(1, 0, 70), replica(2, 0, 95)], &s);
        assert_eq!(d.primary.as_deref(), Some("r-2"));
    }

    #[test]
    fn a_restarted_primary_is_replaced_at_once_and_fenced() {
        // Its redis-server came back fenced and empty; the replicas kept the data.
        let restarted = Member {
            label: Some(Label::Primary),
            ..fenced(0)
        };
        let d = decide(
            &[restarted, replica(1, 0, 100), replica(2, 0, 100)],
            &settings(3),
        );
        assert_eq!(
            d.steps,
            vec![
                label("r-0", None),
                Step::Promote { pod: "r-1".into() },
                label("r-1", Some(Label::Primary)),
                follow("r-0", 1),
                follow("r-2", 1),
            ]
        );
    }

    #[test]
    fn no_replica_reachable_means_no_failover() {
        let lost = Member {
            redis: None,
            ready: false,
            ..primary(0, 100, &[])
        };
        let gone = Member {
            redis: None,
            ..replica(1, 0, 100)
        };
        let mut s = settings(3);
        s.primary_unhealthy_for = Some(Duration::from_secs(60));
        // A fenced, empty pod is no candidate: promoting it would lose every write.
        let d = decide(&[lost, gone, fenced(2)], &s);
        assert_eq!(d.steps, vec![]);
        assert!(matches!(d.health, Health::NoCandidate(_)), "{:?}", d.health);
    }

    #[test]
    fn with_the_primary_gone_an_unread_replica_is_waited_for_until_failover_after() {
        let mut unread = replica(1, 0, 0);
        unread.redis = None;
        let members = [fenced(0), unread, replica(2, 0, 100)];
        let mut s = settings(3);
        s.primary_unhealthy_for = Some(Duration::from_secs(1));
        let d = decide(&members, &s);
        assert!(d.steps.is_empty(), "{d:?}");
        assert!(
            matches!(&d.health, Health::FailingOver(m) if m.contains("r-1")),
            "{d:?}"
        );
        s.primary_unhealthy_for = Some(s.failover_after);
        let d = decide(&members, &s);
        assert_eq!(d.primary.as_deref(), Some("r-2"));
    }

    #[test]
    fn a_restarted_primary_waits_for_an_unread_replica_until_failover_after() {
        // r-0's redis-server restarted empty; r-1 did not answer this pass (a read timed out),
        // and may hold writes acknowledged by WAIT 1 that r-2 lacks.
        let restarted = Member {
            label: Some(Label::Primary),
            ..fenced(0)
        };
        let mut unread = replica(1, 0, 0);
        unread.redis = None;
        let members = [restarted, unread, replica(2, 0, 100)];
        let mut s = settings(3);
        s.primary_unhealthy_for = Some(Duration::from_secs(1));
        let d = decide(&members, &s);
        assert!(d.steps.is_empty(), "{d:?}");
        assert_eq!(d.primary.as_deref(), Some("r-0"));
        assert!(
            matches!(&d.health, Health::FailingOver(m) if m.contains("reading r-1")),
            "{d:?}"
        );
        // Read again, with more than r-2: r-1 is promoted.
        let members_read = [members[0].clone(), replica(1, 0, 120), replica(2, 0, 100)];
        let d = decide(&members_read, &s);
        assert_eq!(d.primary.as_deref(), Some("r-1"));
        // Never read: after failoverAfter, the best readable one.
        s.primary_unhealthy_for = Some(s.failover_after);
        let d = decide(&members, &s);
        assert_eq!(d.primary.as_deref(), Some("r-2"));
        assert!(d.steps.contains(&Step::Promote { pod: "r-2".into() }));
    }

    #[test]
    fn an_unreachable_primary_waits_for_no_replica_after_failover_after() {
        // The primary's own failoverAfter has run out: an unread replica has had that time too.
        let lost = Member {
            redis: None,
            ready: false,
            ..primary(0, 100, &[])
        };
        let mut unread = replica(1, 0, 0);
        unread.redis = None;
        let mut s = settings(3);
        s.primary_unhealthy_for = Some(s.failover_after);
        let d = decide(&[lost, unread, replica(2, 0, 100)], &s);
        assert_eq!(d.primary.as_deref(), Some("r-2"));
    }

    #[test]
    fn the_primary_pod_gone_promotes_a_replica_with_its_data_not_the_new_empty_pod() {
        // r-0 was deleted and recreated: a fresh fenced pod without a label.
        let d = decide(
            &[fenced(0), replica(1, 0, 100), replica(2, 0, 120)],
            &settings(3),
        );
        assert_eq!(d.primary.as_deref(), Some("r-2"));
        assert!(d.steps.contains(&follow("r-0", 2)));
        assert!(d.steps.contains(&follow("r-1", 2)));
    }

    #[test]
    fn a_primary_scaled_away_hands_over_to_an_in_sync_replica_that_stays() {
        let d = decide(
            &[
                replica(0, 3, 90),
                replica(1, 3, 100),
                primary(3, 100, &[0, 1]),
            ],
            &settings(2),
        );
        // The most up-to-date heir, so the pause waits least.
        assert_eq!(
            d.steps,
            vec![Step::Switchover {
                from: "r-3".into(),
                to: "r-1".into()
            }]
        );
        assert_eq!(d.event.map(|e| e.0), Some("PrimarySwitchedOver"));
    }

    #[test]
    fn an_outdated_primary_hands_over_only_to_a_current_replica() {
        let old = Member {
            current: false,
            ..primary(0, 100, &[1])
        };
        let stale_replica = Member {
            current: false,
            ..replica(1, 0, 100)
        };
        let d = decide(&[old.clone(), stale_replica], &settings(2));
        assert!(!d.steps.iter().any(|s| matches!(s, Step::Switchover { .. })));
        let d = decide(&[old, replica(1, 0, 100)], &settings(2));
        assert_eq!(
            d.steps,
            vec![Step::Switchover {
                from: "r-0".into(),
                to: "r-1".into()
            }]
        );
    }

    #[test]
    fn terminating_pods_take_no_part() {
        let leaving = Member {
            terminating: true,
            ..primary(0, 100, &[])
        };
        let d = decide(&[leaving, replica(1, 0, 100)], &settings(2));
        assert_eq!(d.primary.as_deref(), Some("r-1"));
    }

    #[test]
    fn a_primary_whose_container_is_not_running_is_replaced_at_once() {
        // Killed again: the kubelet holds the restart back, the pod is not Ready, nothing answers.
        let dead = Member {
            process_gone: true,
            ready: false,
            redis: None,
            ..primary(0, 100, &[])
        };
        let d = decide(&[dead, replica(1, 0, 100)], &settings(2));
        assert_eq!(d.primary.as_deref(), Some("r-1"));
    }
}
