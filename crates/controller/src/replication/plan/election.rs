//! Choosing a primary when there is none to keep (DESIGN §3b rules 2, 4 and 6, §9.1-9.3): the
//! failover's cut and promotion, a live master labelled instead, and the election after a
//! primary existed. Pure.

use super::model::{Decision, Health, Label, LastRead, Member, Settings, Step};
use crate::redis_server::info::RedisRole;
use std::time::Duration;

/// How long an election after a full restart waits for the last primary to come back (its pod
/// recreated, started and read) before electing another pod: longer than `failoverAfter`, as
/// the pods of a full restart come back one by one, and nobody serves meanwhile anyway; bounded,
/// as a pod whose node is gone (and with it its volume) does not come back.
pub(super) const LAST_PRIMARY_WAIT: Duration = Duration::from_secs(60);

/// Rule 2 after a primary existed and no server holds a primary's stream (every pod restarted):
/// every pod is read first, and the one holding the most (keys, then replication offset: what it
/// loaded from disk, with `spec.storage`) is elected, the last primary (`status.primary`) first
/// as it alone is known to hold every write it acknowledged. So the last primary is waited for
/// until it is read, at most [`LAST_PRIMARY_WAIT`]; a pod still loading its dataset is waited
/// for until it has loaded (it answers, so it comes); any other pod that could not be read, at
/// most `failoverAfter` since the primary was lost, and beyond that as long as every pod read is
/// empty: an empty pod is never elected over one that may hold keys.
pub(super) fn reelect(in_range: &[&Member], live: &[&Member], settings: &Settings) -> Decision {
    let waited = settings
        .primary_unhealthy_for
        .unwrap_or(settings.failover_after);
    let waiting = |what: String| Decision {
        steps: Vec::new(),
        primary: None,
        health: Health::FailingOver(format!(
            "no primary: {what} before electing the pod that holds the most"
        )),
        event: None,
    };
    let loading: Vec<&str> = in_range
        .iter()
        .filter(|m| m.loading && m.redis.is_some())
        .map(|m| m.name.as_str())
        .collect();
    if !loading.is_empty() {
        return waiting(format!(
            "waiting for {} to finish loading its dataset",
            loading.join(", ")
        ));
    }
    // In range and not terminating: `in_range` holds no terminating pod.
    let last_primary_read = settings
        .last_primary
        .filter(|o| *o < settings.replicas)
        .is_none_or(|o| {
            in_range
                .iter()
                .any(|m| m.ordinal == Some(o) && m.redis.is_some() && m.ip.is_some())
        });
    let last_primary_wait = LAST_PRIMARY_WAIT.max(settings.failover_after);
    if !last_primary_read && waited < last_primary_wait {
        let ordinal = settings.last_primary.unwrap_or_default();
        // Its pod may not exist yet: named as its siblings are (`<redis>-<ordinal>`).
        let name = live
            .iter()
            .find_map(|m| {
                let base = m.name.strip_suffix(&format!("-{}", m.ordinal?))?;
                Some(format!("{base}-{ordinal}"))
            })
            .unwrap_or_else(|| format!("ordinal {ordinal}"));
        return waiting(format!(
            "waiting for the last primary {name} to come back ({}s of {}s)",
            waited.as_secs(),
            last_primary_wait.as_secs()
        ));
    }
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
                m.keys > 0 && m.ordinal.is_some() && m.ordinal == settings.last_primary,
                m.keys,
                std::cmp::Reverse(m.ordinal),
            )
        });
    let Some(best) = best else {
        return electing();
    };
    if !unread.is_empty() && (waited < settings.failover_after || best.keys == 0) {
        return waiting(format!(
            "reading {} ({}s of {}s)",
            unread.join(", "),
            waited.as_secs(),
            settings.failover_after.as_secs()
        ));
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

/// The live members whose ordinal stays (below `replicas`).
pub(super) fn in_range<'a>(live: &[&'a Member], settings: &Settings) -> Vec<&'a Member> {
    live.iter()
        .copied()
        .filter(|m| m.ordinal.is_some_and(|o| o < settings.replicas))
        .collect()
}

/// A live server other than the labelled primary that answers as a primary and streams to a
/// replica in time (online, acknowledging within `minReplicasMaxLag`), as [`best_replica`]
/// ranks (most data, then current, Ready, lowest ordinal); only one with an IP whose process
/// runs. A primary the operator promoted has its replicas repointed to it in the same pass; an
/// old primary that comes back after a failover (it was frozen, or cut off) still answers as one
/// but streams to nobody in time, and must follow, not lead.
pub(super) fn live_master<'a>(others: &[&'a Member], settings: &Settings) -> Option<&'a Member> {
    others
        .iter()
        .copied()
        .filter(|m| m.ip.is_some() && !m.process_gone)
        .filter(|m| {
            matches!(&m.redis, Some(RedisRole::Primary { replicas, .. })
                if replicas.iter().any(|link| link.online && link.lag <= settings.max_lag_seconds))
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
pub(super) fn adopt(master: &Member, live: &[&Member]) -> Vec<Step> {
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

pub(super) fn adopted(master: &Member, steps: Vec<Step>) -> Decision {
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

pub(super) fn electing() -> Decision {
    Decision {
        steps: Vec::new(),
        primary: None,
        health: Health::Electing,
        event: None,
    }
}

/// Steps making `candidate` the primary and every other reachable server its replica (the
/// bootstrap: no server holds data).
pub(super) fn promote(candidate: &Member, live: &[&Member]) -> Vec<Step> {
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
pub(super) fn fail_over(
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
        // Every server restarted in its pod (a node reboot, a kubelet restart, an OOM kill of a
        // one-pod Redis): none holds a primary's stream, each holds what it loaded from disk.
        // As after a full restart, the one holding the most is elected, the last primary first
        // among equals; the stale label goes first (issue #41.4). Not while the lost primary is
        // merely unread: it may still hold its stream.
        let lost_restarted = lost
            .is_some_and(|l| l.process_gone || l.redis.as_ref().is_some_and(RedisRole::is_fenced));
        if lost_restarted && !live.iter().any(|m| holds_data(m)) {
            let mut decision = reelect(&in_range(live, settings), live, settings);
            if let Some(lost) = &lost_name
                && decision.primary.as_ref().is_some_and(|p| p != lost)
            {
                decision.steps.insert(
                    0,
                    Step::Label {
                        pod: lost.clone(),
                        role: None,
                    },
                );
            }
            return decision;
        }
        return keep(
            lost_name,
            Health::NoCandidate(format!("{why}, and no replica with its data is reachable")),
        );
    };
    // A replica that could not be read may hold writes the candidate lacks.
    if let Some(reading) = unread_replicas(&others, candidate, settings) {
        return keep(lost_name, Health::FailingOver(format!("{why}: {reading}")));
    }
    if let Some(waiting) = unread_ahead(&others, candidate) {
        return keep(
            lost_name,
            Health::WaitingForMember(format!("{why}: {waiting}")),
        );
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
pub(super) fn holds_data(m: &Member) -> bool {
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
pub(super) fn unread_replicas(
    live: &[&Member],
    candidate: &Member,
    settings: &Settings,
) -> Option<String> {
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

/// Never promote a replica that may lack acknowledged writes a server unread now holds (DESIGN
/// §10, issues #41.2 and #41.3). A server unread now, beyond the candidate, may hold writes
/// acknowledged by `WAIT 1` from it alone (say, the replica sharing the lost primary's node while
/// the candidate lagged), which the candidate lacks and which it would full-sync away once told
/// to follow. Beyond it is: last seen (its own read, or the count of what it acknowledged that
/// its primary gave) past what the candidate holds of that replication history, or in a history
/// the candidate holds nothing of (offsets of two histories are never compared); or a labelled
/// replica the controller never read (a new leader): nothing says it holds less. It is waited
/// for however long the primary has been lost, until it is read again (then it is ranked by
/// what it says), its process is gone (restarted: what it held in memory is gone either way) or
/// its pod terminates or is deleted (evicted from a lost node, the node-lost path, a person):
/// what it held goes with it. `Some(what is awaited)` while waiting.
pub(super) fn unread_ahead(live: &[&Member], candidate: &Member) -> Option<String> {
    let candidate_offset = candidate.redis.as_ref().map_or(0, RedisRole::offset);
    let ahead: Vec<String> = live
        .iter()
        .filter(|m| {
            m.name != candidate.name && m.redis.is_none() && !m.process_gone && !m.terminating
        })
        .filter_map(|m| match &m.last_read {
            Some(last) if !holds(candidate, last) => Some(format!(
                "{} (last seen at offset {} of replication ID {})",
                m.name, last.offset, last.replid
            )),
            None if m.label == Some(Label::Replica) => {
                Some(format!("{} (a replica this controller never read)", m.name))
            }
            _ => None,
        })
        .collect();
    if ahead.is_empty() {
        return None;
    }
    Some(format!(
        "waiting for {} to answer: it may hold acknowledged writes {} (offset {candidate_offset}) lacks; \
         deleting its pod gives them up",
        ahead.join(", "),
        candidate.name,
    ))
}

/// `candidate` holds everything a server last seen at `last` held: nothing to hold (offset 0),
/// or as much of that history as `last` says.
fn holds(candidate: &Member, last: &LastRead) -> bool {
    let offset = candidate.redis.as_ref().map_or(0, RedisRole::offset);
    last.offset <= 0
        || candidate
            .history
            .as_ref()
            .and_then(|h| h.holds_of(offset, &last.replid))
            .is_some_and(|held| held >= last.offset)
}

/// The reachable replica with the most data, of those that were linked to a primary (one that
/// never finished a sync holds nothing): highest replication offset first, then current, Ready,
/// lowest ordinal.
pub(super) fn best_replica<'a>(members: &[&'a Member]) -> Option<&'a Member> {
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
