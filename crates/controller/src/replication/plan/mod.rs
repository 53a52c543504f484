//! Who is the primary, and what to tell each redis-server (Replication mode). Pure: the inputs are
//! the pods as the API server and the redis-servers themselves describe them; the output is the
//! steps to take. The rules, numbered as in docs/design.md §3b:
//!
//! 1. The primary is the pod labelled `myapp.tangx.in/role=primary`; the `<name>` Service
//!    follows that label. At most one pod carries it: a label is removed before another is set.
//! 2. Every redis-server starts fenced (a replica of nowhere, see [`crate::redis_server::FENCE_HOST`]).
//!    With no primary and no data anywhere, the lowest ordinal is promoted (bootstrap); while a
//!    restore (§3o) is under way, only the pod restoring the backup.
//! 3. A healthy primary (Ready, answering as a primary): every other reachable server is told to
//!    replicate it, a server answering as a second primary included (fencing); replicas that follow
//!    it are labelled replica.
//! 4. A primary that is unreachable or not Ready is given `failoverAfter` (and one the operator
//!    cannot read is not failed over while a replica heard from it within `failoverAfter`,
//!    `heard_by`); one whose pod is gone
//!    or whose redis-server died or restarted (its container is not running, or it answers fenced:
//!    its data is lost either way) is replaced at once. First every server still on a stream is
//!    cut off (fenced, keeping its data), the old primary too when it answers; the servers that
//!    answered are read again, and the replica with the highest offset among those that were
//!    linked to a primary is promoted, the others repointed, and the labels moved last, in the
//!    same pass (see `election::fail_over`). A labelled replica that
//!    could not be read is waited for first, at most `failoverAfter` since the primary was lost:
//!    it may hold acknowledged writes the others lack; and nothing is promoted while a server
//!    unread now may hold acknowledged writes the candidate lacks: last seen beyond it in one
//!    replication history, in a history it holds nothing of, or a labelled replica never read
//!    (issue #41.2), until that server is read, its process is gone or its pod terminates or is
//!    deleted (`election::unread_ahead`; `Health::WaitingForMember`). When every server
//!    restarted in its pod, rule 2's election runs instead (`election::fail_over`).
//!    The live master (rule 4's last part; DESIGN §9.3, §10): when the labelled primary is
//!    positively not a primary (it answers as a replica or fenced, its process is gone, its pod
//!    is terminating or gone) and another server answers as a primary streaming in time to a
//!    replica (an earlier pass or leader promoted it and never moved the labels), that server
//!    gets the label and the others follow it; no replica is promoted over it. A labelled
//!    primary that is merely unread or not Ready is never replaced this way: the server beside
//!    it may be an old primary back from a freeze or a partition.
//! 5. A primary whose pod is about to go (scaled away or outdated) hands over first, Ready or
//!    not, as long as it answers as the primary: a switchover to an in-sync replica that stays,
//!    with writes paused until it has caught up.
//! 6. The status (`replication/status.rs`): primary, members, `Replicating`, `FailingOver` and
//!    `Spread` (`replication/spread.rs`: the primary shares its node with another pod).
//! 7. The split-brain bound: `min-replicas-to-write` (`api::defaults`, set on the pods by
//!    `pods::build`); this planner reads its lag, `Settings::max_lag_seconds`.

mod election;
mod model;

pub use model::{Decision, Health, Label, LastRead, Member, Settings, Step};

use crate::redis_server::info::RedisRole;
use election::{
    adopt, adopted, electing, fail_over, holds_data, in_range, live_master, promote, reelect,
};

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
    // Rule 1 also for a primary whose pod terminates (a graceful delete): its label goes
    // before another pod is given it (issue #41.6).
    let labels_another = |pod: &str| {
        decision
            .steps
            .iter()
            .any(|s| matches!(s, Step::Label { pod: p, role: Some(Label::Primary) } if p != pod))
    };
    for leaving in members
        .iter()
        .filter(|m| m.terminating && m.label == Some(Label::Primary))
    {
        if labels_another(&leaving.name) {
            steps.push(Step::Label {
                pod: leaving.name.clone(),
                role: None,
            });
        }
    }
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
    // Rule 5 also for a primary that is not Ready but still answers as one: its pod is about to
    // be deleted, and a handover loses nothing where a failover after the deletion would have
    // to cut and elect.
    if matches!(primary.redis, Some(RedisRole::Primary { .. }))
        && let Some(handover) = handover(primary, &others, settings)
    {
        return handover;
    }
    // Rule 4, the live master: another server already answers as the primary (promoted by an earlier pass or
    // leader whose label writes never happened): it is labelled, never failed over. Only when
    // the labelled primary is positively not one any more (its redis-server answers as a
    // replica, fenced by the cut before that promotion, or its process is gone): one that is
    // merely unread or not Ready may be the newer primary, and a server answering as a master
    // beside it an old one back from a freeze or a partition (DESIGN §10, issue #41.1).
    if not_a_primary(primary)
        && let Some(master) = live_master(&others, settings)
    {
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
    // Rule 4a: the controller's own reads failing is not the primary lost while a replica's
    // link says it sent something within `failoverAfter`: the controller may be starved (a
    // loaded node) or cut off from that pod alone. A frozen, dead or cut-off primary falls
    // silent on every link too, within `failoverAfter` of the controller's last good read.
    if primary.redis.is_none()
        && !primary.process_gone
        && let Some((witness, ago)) = heard_by(primary, &others, settings)
    {
        return Decision {
            steps: Vec::new(),
            primary: Some(primary.name.clone()),
            health: Health::PrimaryUnhealthy(format!(
                "primary {} does not answer the operator, but replica {witness} heard from it {ago}s ago: not failed over while its replicas hear it",
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

/// A replica linked to `primary` that heard from it less than `failoverAfter` ago (the most
/// recent), with how many seconds ago.
fn heard_by<'a>(
    primary: &Member,
    others: &[&'a Member],
    settings: &Settings,
) -> Option<(&'a str, i64)> {
    let ip = primary.ip.as_deref()?;
    let within = i64::try_from(settings.failover_after.as_secs()).unwrap_or(i64::MAX);
    others
        .iter()
        .filter_map(|m| match &m.redis {
            Some(
                role @ RedisRole::Replica {
                    link_up: true,
                    last_io,
                    ..
                },
            ) if role.follows(ip, settings.port) && (0..within).contains(last_io) => {
                Some((m.name.as_str(), *last_io))
            }
            _ => None,
        })
        .min_by_key(|(_, ago)| *ago)
}

/// Rule 5: a primary whose pod is about to go (scaled away or outdated) hands over to the most
/// up-to-date in-sync replica that stays, if there is one.
fn handover(primary: &Member, others: &[&Member], settings: &Settings) -> Option<Decision> {
    let ip = primary.ip.as_deref()?;
    let port = settings.port;
    let leaving = !primary.current || primary.ordinal.is_none_or(|o| o >= settings.replicas);
    if !leaving {
        return None;
    }
    let heir = others
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
        })?;
    Some(Decision {
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
    })
}

/// Rule 3 (and 5): a healthy primary.
fn serving(primary: &Member, others: &[&Member], settings: &Settings) -> Decision {
    if let Some(handover) = handover(primary, others, settings) {
        return handover;
    }
    let ip = primary.ip.as_deref().unwrap_or_default();
    let port = settings.port;
    let mut steps = Vec::new();
    let mut lagging = Vec::new();
    let links = match &primary.redis {
        Some(RedisRole::Primary { replicas, .. }) => replicas.as_slice(),
        _ => &[],
    };
    for member in others {
        let Some(redis) = &member.redis else {
            // The primary vouches for a replica it lists online and acknowledging: the
            // controller's own read of it timing out under load is no news about the link.
            let vouched = member
                .ip
                .as_deref()
                .and_then(|mip| links.iter().find(|l| l.ip == mip))
                .is_some_and(|l| l.online && l.lag <= settings.max_lag_seconds);
            if !vouched {
                lagging.push(format!("{} unreachable", member.name));
            }
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
    // Rule 4's live master, as with a labelled primary that is not one any more: none is labelled (its pod
    // is gone or terminating).
    if let Some(master) = live_master(live, settings) {
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
    let in_range = in_range(live, settings);
    // A primary existed before (status.primary, or a role label left on a pod), or the pods
    // loaded data (a Redis created again over claims it retained, issue #41.5): never elect
    // over data (DESIGN §9.2). So the first election waits until every pod in range is read
    // (at most `failoverAfter`): the one holding the data may start last. A restore elects its
    // restoring pod, below.
    let waited = settings
        .primary_unhealthy_for
        .unwrap_or(settings.failover_after);
    let every_pod_read = (0..settings.replicas).all(|o| {
        in_range
            .iter()
            .any(|m| m.ordinal == Some(o) && m.redis.is_some() && !m.loading)
    });
    if settings.restored.is_none()
        && !settings.had_primary
        && !every_pod_read
        && waited < settings.failover_after
    {
        return electing();
    }
    let loaded = settings.restored.is_none() && live.iter().any(|m| m.keys > 0);
    if settings.had_primary || live.iter().any(|m| m.label.is_some()) || loaded {
        return reelect(&in_range, live, settings);
    }
    // Bootstrap of a new Redis: nobody has data; the lowest ordinal that exists is the primary,
    // or, restored from a backup, the pod that restores it (waited for while it downloads).
    let first = match settings.restored {
        Some(ordinal) => in_range
            .iter()
            .copied()
            .find(|m| m.ordinal == Some(ordinal)),
        None => in_range.iter().copied().min_by_key(|m| m.ordinal),
    };
    let Some(first) = first else {
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

/// The labelled primary is positively not a primary any more: its redis-server answers as a
/// replica (fenced by a cut, or following someone), or its container does not run.
fn not_a_primary(primary: &Member) -> bool {
    primary.process_gone || matches!(primary.redis, Some(RedisRole::Replica { .. }))
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
mod properties;
#[cfg(test)]
mod tests;
