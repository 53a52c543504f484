//! Invariants of `replication::plan::decide` over random member sets (issue #41): whatever the
//! pods and their redis-servers say,
//! - the labelled primary, while it answers as a primary, is never told to follow another, and
//!   no other server gets the primary label;
//! - nothing is promoted below a replica holding a primary's stream that was read (linked), nor
//!   in a failover below what a server unread now was last seen at in the candidate's
//!   replication history, nor while a server unread now was last seen in another history or is
//!   a labelled replica never read (unless its process is gone or its pod goes: issue #41.2);
//! - at most one pod is labelled primary once the steps are done.

use super::*;
use crate::redis_server::info::{FENCE_HOST, FENCE_PORT, History, ReplicaLink};
use proptest::prelude::*;
use std::time::Duration;

const PORT: u16 = 6379;
const HISTORY: &str = "h";

fn ip(i: usize) -> String {
    format!("10.88.1.{i}")
}

/// What one pod's redis-server says, drawn: nothing, a primary streaming to some of the others,
/// or a replica of another pod or of the fence.
fn redis(i: usize, n: usize) -> impl Strategy<Value = Option<RedisRole>> {
    let primary = (
        0..1000i64,
        proptest::collection::vec((0..n, any::<bool>(), 0..20i64), 0..n),
    )
        .prop_map(move |(offset, links)| {
            Some(RedisRole::Primary {
                offset,
                replicas: links
                    .into_iter()
                    .filter(|(r, _, _)| *r != i)
                    .map(|(r, online, lag)| ReplicaLink {
                        ip: ip(r),
                        port: PORT,
                        online,
                        offset: 0,
                        lag,
                    })
                    .collect(),
            })
        });
    let replica = (0..=n, any::<bool>(), any::<bool>(), 0..1000i64, -1..15i64).prop_map(
        move |(of, link_up, linked, offset, last_io)| {
            let (host, port) = if of == n || of == i {
                (FENCE_HOST.to_owned(), FENCE_PORT)
            } else {
                (ip(of), PORT)
            };
            Some(RedisRole::Replica {
                primary_host: host,
                primary_port: port,
                link_up,
                linked: linked || link_up,
                offset,
                last_io: if link_up { last_io.max(0) } else { -1 },
            })
        },
    );
    prop_oneof![Just(None), primary, replica]
}

fn member(i: usize, n: usize) -> impl Strategy<Value = Member> {
    (
        redis(i, n),
        prop_oneof![
            Just(None),
            Just(Some(Label::Primary)),
            Just(Some(Label::Replica))
        ],
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        0..50u64,
        proptest::option::of((prop::bool::weighted(0.2), 0..1000i64)),
    )
        .prop_map(
            move |(redis, label, ready, terminating, process_gone, keys, last_read)| Member {
                name: format!("r-{i}"),
                ordinal: u32::try_from(i).ok(),
                ip: Some(ip(i)),
                ready,
                terminating,
                current: true,
                process_gone,
                loading: false,
                label,
                keys,
                refuses_auth: false,
                // One history for every server read; a server unread now was last seen in it, or
                // in another one.
                last_read: last_read
                    .filter(|_| redis.is_none())
                    .map(|(other, offset)| LastRead {
                        replid: if other { "other" } else { HISTORY }.to_owned(),
                        offset,
                    }),
                history: redis.as_ref().map(|_| History {
                    replid: HISTORY.to_owned(),
                    ..History::default()
                }),
                redis,
            },
        )
}

fn members() -> impl Strategy<Value = Vec<Member>> {
    (1..=4usize).prop_flat_map(|n| (0..n).map(|i| member(i, n)).collect::<Vec<_>>())
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        proptest::option::of(0..30u64),
        any::<bool>(),
        proptest::option::of(0..4u32),
    )
        .prop_map(|(unhealthy, had_primary, last_primary)| Settings {
            replicas: 3,
            port: PORT,
            primary_unhealthy_for: unhealthy.map(Duration::from_secs),
            failover_after: Duration::from_secs(10),
            max_lag_seconds: 10,
            had_primary,
            last_primary,
            restored: None,
        })
}

fn offset(m: &Member) -> i64 {
    m.redis.as_ref().map_or(0, RedisRole::offset)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn the_planner_keeps_its_invariants(members in members(), settings in settings()) {
        let decision = decide(&members, &settings);
        let by_name = |name: &str| members.iter().find(|m| m.name == name);
        // The labelled primary (as the planner keeps it: live, the best of several) answering
        // as a primary.
        let serving: Vec<&Member> = members
            .iter()
            .filter(|m| !m.terminating && m.label == Some(Label::Primary))
            .filter(|m| !m.process_gone && matches!(m.redis, Some(RedisRole::Primary { .. })))
            .collect();
        let labelled_count = members
            .iter()
            .filter(|m| !m.terminating && m.label == Some(Label::Primary))
            .count();
        if labelled_count == 1 && let [primary] = serving.as_slice() {
            for step in &decision.steps {
                match step {
                    Step::Follow { pod, .. } => prop_assert_ne!(
                        pod, &primary.name,
                        "the labelled primary answering as one told to follow: {:?}", decision
                    ),
                    Step::Label { pod, role: Some(Label::Primary) } => prop_assert_eq!(
                        pod, &primary.name,
                        "another server labelled beside a labelled primary answering as one: {:?}",
                        decision
                    ),
                    _ => {}
                }
            }
        }
        for step in &decision.steps {
            let Step::Promote { pod } = step else { continue };
            let Some(candidate) = by_name(pod) else {
                prop_assert!(false, "promoted a pod that is not there: {pod}");
                continue;
            };
            let floor = offset(candidate);
            for other in members.iter().filter(|m| m.name != *pod && !m.terminating) {
                let lost = other.label == Some(Label::Primary);
                if let Some(RedisRole::Replica { linked: true, offset, .. }) = &other.redis
                    && !lost
                    && !other.process_gone
                {
                    prop_assert!(
                        *offset <= floor,
                        "{pod} promoted at {floor} below {} read at {offset}: {:?}",
                        other.name, decision
                    );
                }
                // In a failover (an election after a full restart or of a new Redis ranks by
                // what was loaded, offsets there are not a stream's).
                let failover = matches!(decision.event, Some(("PrimaryFailedOver", _)));
                if failover && other.redis.is_none() && !other.process_gone && !lost {
                    match &other.last_read {
                        Some(last) if last.replid == HISTORY => prop_assert!(
                            last.offset <= floor,
                            "{pod} promoted at {floor} below {} last seen at {}: {:?}",
                            other.name, last.offset, decision
                        ),
                        Some(last) => prop_assert!(
                            last.offset <= 0,
                            "{pod} promoted while {} was last seen in another history: {:?}",
                            other.name, decision
                        ),
                        None => prop_assert!(
                            other.label != Some(Label::Replica),
                            "{pod} promoted while replica {} was never read: {:?}",
                            other.name, decision
                        ),
                    }
                }
            }
        }
        // At most one primary label once the steps are done.
        let mut labels: std::collections::BTreeMap<&str, Option<Label>> = members
            .iter()
            .filter(|m| !m.terminating)
            .map(|m| (m.name.as_str(), m.label))
            .collect();
        for step in &decision.steps {
            if let Step::Label { pod, role } = step
                && let Some(label) = labels.get_mut(pod.as_str())
            {
                *label = *role;
            }
        }
        let primaries = labels.values().filter(|l| **l == Some(Label::Primary)).count();
        prop_assert!(
            primaries <= 1.max(labelled_count),
            "{primaries} pods labelled primary after {:?}", decision.steps
        );
    }
}
