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
//!    its data is lost either way) is replaced at once. First every server still on a stream is
//!    cut off (fenced, keeping its data), the old primary too when it answers; the next pass
//!    promotes the replica with the highest offset among those that were linked to a primary,
//!    repoints the others, and moves the labels last (see [`fail_over`]). A labelled replica that
//!    could not be read is waited for first, at most `failoverAfter` since the primary was lost:
//!    it may hold acknowledged writes the others lack.
//! 5. A healthy primary whose pod is about to go (scaled away or outdated) hands over first: a
//!    switchover to an in-sync replica that stays, with writes paused until it has caught up.
//! 6. A live master is labelled, not failed over (DESIGN §9.3): when the labelled primary is
//!    unhealthy or absent and another server answers as a primary (an earlier pass promoted it,
//!    and this pass's cache still shows the labels from before), that server gets the label and
//!    the others follow it; no replica is promoted over it.

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
    /// How many keys its redis-server holds (`INFO keyspace`); 0 when it could not be read.
    pub keys: u64,
    /// Its redis-server refused the operator's password (`WRONGPASS`, `NOAUTH`): it runs, and
    /// is not to be taken for unreachable.
    pub refuses_auth: bool,
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
    /// `REPLICAOF` the fence: cut off whatever stream it is on, keeping its data.
    Fence { pod: String },
    /// Planned handover: pause writes on `from`, wait until `to` has everything, promote `to`,
    /// make `from` follow `to`, then move the labels and unpause (see
    /// [`crate::redis_server::switchover`]).
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
    /// A primary was ever chosen (`status.primary` is set): some pod may hold data.
    pub had_primary: bool,
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
    let all: Vec<&Member> = members.iter().collect();
    let mut decision = match labelled.first() {
        Some(primary) => with_primary(primary, &live, &all, settings),
        None => without_primary(&live, &all, settings),
    };
    steps.append(&mut decision.steps);
    decision.steps = steps;
    decision
}

fn with_primary(
    primary: &Member,
    live: &[&Member],
    all: &[&Member],
    settings: &Settings,
) -> Decision {
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
    // Rule 6: another server already answers as the primary (promoted by an earlier pass whose
    // label writes this pass's cache has not seen yet): it is labelled, never failed over.
    if let Some(master) = live_master(&others) {
        let mut steps = vec![Step::Label {
            pod: primary.name.clone(),
            role: None,
        }];
        steps.extend(adopt(master, live));
        return adopted(master, steps);
    }
    // It runs but refuses the operator's password (changed by hand): it may still serve the
    // clients that know it, and a failover would leave it a primary beside the new one. Said,
    // and left to the user (the auth step reports the refusal too).
    if primary.refuses_auth {
        return Decision {
            steps: Vec::new(),
            primary: Some(primary.name.clone()),
            health: Health::PrimaryUnhealthy(format!(
                "primary {} refuses the operator's password: put the Secret's password back on it",
                primary.name
            )),
            event: None,
        };
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
    fail_over(Some(primary), live, all, settings, why)
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
            // It serves nothing of this primary's until it is linked (say, it restarted empty):
            // out of `<name>-replicas` meanwhile.
            if member.label == Some(Label::Replica) {
                steps.push(Step::Label {
                    pod: member.name.clone(),
                    role: None,
                });
            }
            lagging.push(format!("{} not linked yet", member.name));
            continue;
        }
        let link = member
            .ip
            .as_deref()
            .and_then(|mip| links.iter().find(|l| l.ip == mip));
        // Labelled (into `<name>-replicas`) once the primary lists it online: not during its
        // first full sync. A label already there stays while it lags: the failover rules wait
        // for a labelled replica that could not be read.
        let online = link.is_some_and(|l| l.online);
        if online && member.label != Some(Label::Replica) {
            steps.push(Step::Label {
                pod: member.name.clone(),
                role: Some(Label::Replica),
            });
        }
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
fn without_primary(live: &[&Member], all: &[&Member], settings: &Settings) -> Decision {
    // Rule 6, as with an unhealthy labelled primary.
    if let Some(master) = live_master(live) {
        return adopted(master, adopt(master, live));
    }
    // A server that holds a primary's data: fail over to it.
    if live.iter().any(|m| holds_data(m)) {
        return fail_over(
            None,
            live,
            all,
            settings,
            "no pod is the primary".to_owned(),
        );
    }
    let in_range: Vec<&Member> = live
        .iter()
        .copied()
        .filter(|m| m.ordinal.is_some_and(|o| o < settings.replicas))
        .collect();
    // A primary existed before (status.primary, or a role label left on a pod): never elect
    // over data (DESIGN §9.2).
    if settings.had_primary || live.iter().any(|m| m.label.is_some()) {
        return reelect(&in_range, live, settings);
    }
    // Bootstrap of a new Redis: nobody has data; the lowest ordinal that exists is the primary.
    let Some(first) = in_range.iter().copied().min_by_key(|m| m.ordinal) else {
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

/// Rule 2 after a primary existed and no server holds a primary's stream (every pod restarted):
/// every pod is read first, and the one holding the most (keys, then replication offset: what it
/// loaded from disk, with `spec.storage`) is elected. A pod that could not be read is waited
/// for, at most `failoverAfter` since the primary was lost, and beyond that as long as every pod
/// read is empty: an empty pod is never elected over one that may hold keys.
fn reelect(in_range: &[&Member], live: &[&Member], settings: &Settings) -> Decision {
    let unread: Vec<&str> = in_range
        .iter()
        .filter(|m| m.redis.is_none() && m.ip.is_some() && !m.process_gone)
        .map(|m| m.name.as_str())
        .collect();
    let best = in_range
        .iter()
        .copied()
        .filter(|m| m.redis.is_some() && m.ip.is_some())
        .max_by_key(|m| {
            (
                m.keys > 0,
                m.redis.as_ref().map_or(0, RedisRole::offset),
                m.keys,
                std::cmp::Reverse(m.ordinal),
            )
        });
    let waited = settings
        .primary_unhealthy_for
        .unwrap_or(settings.failover_after);
    let Some(best) = best else {
        return electing();
    };
    if !unread.is_empty() && (waited < settings.failover_after || best.keys == 0) {
        return Decision {
            steps: Vec::new(),
            primary: None,
            health: Health::FailingOver(format!(
                "no primary: reading {} before electing the pod that holds the most ({}s of {}s)",
                unread.join(", "),
                waited.as_secs(),
                settings.failover_after.as_secs()
            )),
            event: None,
        };
    }
    Decision {
        steps: promote(best, live),
        primary: Some(best.name.clone()),
        health: Health::FailingOver(format!(
            "no primary: electing {}, which holds the most",
            best.name
        )),
        event: Some((
            "PrimaryElected",
            format!(
                "{} is the primary: it holds {} keys (replication offset {})",
                best.name,
                best.keys,
                best.redis.as_ref().map_or(0, RedisRole::offset)
            ),
        )),
    }
}

/// A live server other than the labelled primary that answers as a primary and streams to a
/// replica (as [`best_replica`] ranks: most data, then current, Ready, lowest ordinal); only one
/// with an IP whose process runs. A primary the operator promoted has its replicas repointed to
/// it in the same pass; an old primary that comes back after a failover (it was frozen, or cut
/// off) still answers as one but streams to nobody, and must follow, not lead.
fn live_master<'a>(others: &[&'a Member]) -> Option<&'a Member> {
    others
        .iter()
        .copied()
        .filter(|m| m.ip.is_some() && !m.process_gone)
        .filter(|m| {
            matches!(&m.redis, Some(RedisRole::Primary { replicas, .. })
                if replicas.iter().any(|link| link.online))
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

/// Steps making `master`, which already answers as a primary, the labelled one: its label, and
/// every other reachable server that does not follow it yet told to.
fn adopt(master: &Member, live: &[&Member]) -> Vec<Step> {
    let mut steps = vec![Step::Label {
        pod: master.name.clone(),
        role: Some(Label::Primary),
    }];
    let Some(ip) = &master.ip else {
        return steps;
    };
    for member in live.iter().filter(|m| m.name != master.name) {
        let follows = member.redis.as_ref().is_some_and(
            |r| matches!(r, RedisRole::Replica { primary_host, .. } if primary_host == ip),
        );
        if member.redis.is_some() && !follows {
            steps.push(Step::Follow {
                pod: member.name.clone(),
                host: ip.clone(),
            });
        }
    }
    steps
}

fn adopted(master: &Member, steps: Vec<Step>) -> Decision {
    Decision {
        steps,
        primary: Some(master.name.clone()),
        health: Health::FailingOver(format!(
            "{} already answers as the primary: labelling it",
            master.name
        )),
        event: None,
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

/// Steps making `candidate` the primary and every other reachable server its replica (the
/// bootstrap: no server holds data).
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

/// Rule 4's order (DESIGN §9.1), in place of the primary `lost` (or of none: its pod gone).
/// First every server still on a primary's stream is cut off (told to follow the fence; it keeps
/// its data): the replicas, and the lost primary itself when it answers, terminating or not. A
/// replica left on the old stream could acknowledge writes the new primary never gets, and then
/// resync them away. The next pass reads the offsets after the cut, promotes the most advanced
/// server that was linked to a primary, repoints the others, and moves the labels last.
fn fail_over(
    lost: Option<&Member>,
    live: &[&Member],
    all: &[&Member],
    settings: &Settings,
    why: String,
) -> Decision {
    let keep = |primary: Option<String>, health: Health| Decision {
        steps: Vec::new(),
        primary,
        health,
        event: None,
    };
    let lost_name = lost.map(|m| m.name.clone());
    let on_a_stream: Vec<&Member> = all
        .iter()
        .copied()
        .filter(|m| m.ip.is_some() && !m.process_gone)
        .filter(|m| m.redis.as_ref().is_some_and(|r| !r.is_fenced()))
        .collect();
    if !on_a_stream.is_empty() {
        let names: Vec<&str> = on_a_stream.iter().map(|m| m.name.as_str()).collect();
        let mut decision = keep(
            lost_name,
            Health::FailingOver(format!(
                "{why}: cutting {} off the old primary's stream before choosing the most \
                 up-to-date replica",
                names.join(", ")
            )),
        );
        decision.steps = on_a_stream
            .iter()
            .map(|m| Step::Fence {
                pod: m.name.clone(),
            })
            .collect();
        return decision;
    }
    let others: Vec<&Member> = live
        .iter()
        .copied()
        .filter(|m| Some(&m.name) != lost_name.as_ref())
        .collect();
    let Some(candidate) = best_replica(&others) else {
        return keep(
            lost_name,
            Health::NoCandidate(format!("{why}, and no replica with its data is reachable")),
        );
    };
    // A replica that could not be read may hold writes the candidate lacks.
    if let Some(reading) = unread_replicas(&others, candidate, settings) {
        return keep(lost_name, Health::FailingOver(format!("{why}: {reading}")));
    }
    let mut steps = vec![Step::Promote {
        pod: candidate.name.clone(),
    }];
    if let Some(ip) = &candidate.ip {
        for member in live
            .iter()
            .filter(|m| m.name != candidate.name && m.redis.is_some() && m.ip.is_some())
        {
            steps.push(Step::Follow {
                pod: member.name.clone(),
                host: ip.clone(),
            });
        }
    }
    if let Some(lost) = &lost_name {
        steps.push(Step::Label {
            pod: lost.clone(),
            role: None,
        });
    }
    steps.push(Step::Label {
        pod: candidate.name.clone(),
        role: Some(Label::Primary),
    });
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

/// A server holding a primary's data: a replica linked to one since its process started (on
/// a stream now, or cut off by the operator), or a primary.
fn holds_data(m: &Member) -> bool {
    match &m.redis {
        Some(RedisRole::Replica { linked, .. }) => *linked,
        Some(RedisRole::Primary { .. }) => true,
        None => false,
    }
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

/// The reachable replica with the most data, of those that were linked to a primary (one that
/// never finished a sync holds nothing): highest replication offset first, then current, Ready,
/// lowest ordinal.
fn best_replica<'a>(members: &[&'a Member]) -> Option<&'a Member> {
    members
        .iter()
        .copied()
        .filter(|m| m.ip.is_some() && !m.process_gone)
        .filter(|m| matches!(m.redis, Some(RedisRole::Replica { linked: true, .. })))
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
mod tests;
