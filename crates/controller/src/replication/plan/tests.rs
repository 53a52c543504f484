//! Tests of `replication::plan`.

use super::*;
use crate::redis_server::info::{FENCE_HOST, FENCE_PORT, History, ReplicaLink};
use std::time::Duration;

const PORT: u16 = 6379;

fn ip(i: u32) -> String {
    format!("10.88.1.{i}")
}

/// The replication history of the primary of these tests and of its replicas.
const HISTORY: &str = "h";

fn history() -> History {
    History {
        replid: HISTORY.into(),
        ..History::default()
    }
}

/// Last seen at `offset` of the tests' history.
fn seen_at(offset: i64) -> Option<LastRead> {
    Some(LastRead {
        replid: HISTORY.into(),
        offset,
    })
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
        loading: false,
        label: None,
        keys: 0,
        refuses_auth: false,
        last_read: None,
        // Its own history: a new server that never synced.
        history: Some(History {
            replid: format!("own-{i}"),
            ..History::default()
        }),
        redis: Some(RedisRole::Replica {
            primary_host: FENCE_HOST.into(),
            primary_port: FENCE_PORT,
            link_up: false,
            linked: false,
            offset: 0,
            last_io: -1,
        }),
    }
}

fn primary(i: u32, offset: i64, replicas: &[u32]) -> Member {
    Member {
        label: Some(Label::Primary),
        history: Some(history()),
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
        history: Some(history()),
        redis: Some(RedisRole::Replica {
            primary_host: ip(of),
            primary_port: PORT,
            link_up: true,
            linked: true,
            offset,
            last_io: -1,
        }),
        ..fenced(i)
    }
}

/// `member` as the next pass reads it after the operator told it to follow the fence: cut off,
/// its data and offset kept. As Redis 7.0 says it, a replica that had been linked still says so
/// (seconds since the link went down), and a primary told to follow says it never was.
fn cut_off(member: Member) -> Member {
    let offset = member.redis.as_ref().map_or(0, RedisRole::offset);
    let linked = matches!(member.redis, Some(RedisRole::Replica { linked: true, .. }));
    Member {
        redis: Some(RedisRole::Replica {
            primary_host: FENCE_HOST.into(),
            primary_port: FENCE_PORT,
            link_up: false,
            linked,
            offset,
            last_io: -1,
        }),
        ..member
    }
}

/// The decision of the pass after the cut (DESIGN §9.1): the first pass must only cut every
/// server still on a stream off it; the next one reads them cut off, and decides.
fn decide_after_cut(members: &[Member], s: &Settings) -> Decision {
    let first = decide(members, s);
    let cut: Vec<String> = first
        .steps
        .iter()
        .map(|step| match step {
            Step::Fence { pod } => pod.clone(),
            other => panic!("{other:?} before every server was cut off: {first:?}"),
        })
        .collect();
    let members: Vec<Member> = members
        .iter()
        .cloned()
        .map(|m| if cut.contains(&m.name) { cut_off(m) } else { m })
        .collect();
    let second = decide(&members, s);
    assert!(
        !second.steps.iter().any(|s| matches!(s, Step::Fence { .. })),
        "cut twice: {second:?}"
    );
    second
}

fn fence(pod: &str) -> Step {
    Step::Fence { pod: pod.into() }
}

fn settings(replicas: u32) -> Settings {
    Settings {
        replicas,
        port: PORT,
        primary_unhealthy_for: None,
        failover_after: Duration::from_secs(10),
        max_lag_seconds: 10,
        had_primary: false,
        last_primary: None,
        restored: None,
    }
}

/// The labelled primary `i` as a pass finds it lost: unread, not Ready.
fn unread_primary(i: u32, offset: i64) -> Member {
    Member {
        redis: None,
        ready: false,
        ..primary(i, offset, &[])
    }
}

/// The settings of a Redis whose primary existed, the last one at ordinal `last_primary`.
fn after_a_primary(replicas: u32, last_primary: u32) -> Settings {
    Settings {
        had_primary: true,
        last_primary: Some(last_primary),
        ..settings(replicas)
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
fn a_restore_elects_only_the_restored_pod_never_an_empty_one() {
    // r-0 downloads the backup (its redis-server not started): r-1 is the lowest that answers,
    // yet electing it would make an empty primary.
    let downloading = Member {
        redis: None,
        ready: false,
        ..fenced(0)
    };
    let restoring = Settings {
        restored: Some(0),
        ..settings(3)
    };
    for members in [
        vec![downloading.clone(), fenced(1), fenced(2)],
        vec![fenced(1), fenced(2)],
    ] {
        let d = decide(&members, &restoring);
        assert_eq!(d.steps, vec![]);
        assert_eq!(d.health, Health::Electing);
    }
    let d = decide(&[fenced(1), fenced(0), fenced(2)], &restoring);
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    // Without a restore, the lowest ordinal that answers is elected as before.
    let d = decide(&[fenced(1), fenced(2)], &settings(3));
    assert_eq!(d.primary.as_deref(), Some("r-1"));
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
fn a_replica_the_primary_lists_online_stays_replicating_when_its_own_read_times_out() {
    // One INFO that timed out under load is no news: the primary still hears from it.
    let unread = Member {
        redis: None,
        ..replica(1, 0, 100)
    };
    let d = decide(
        &[primary(0, 100, &[1, 2]), unread.clone(), replica(2, 0, 90)],
        &settings(3),
    );
    assert_eq!(d.steps, vec![]);
    assert_eq!(d.health, Health::Replicating);
    // One the primary does not list (or lists lagging) degrades replication.
    let d = decide(
        &[primary(0, 100, &[2]), unread, replica(2, 0, 90)],
        &settings(3),
    );
    assert_eq!(d.health, Health::Degraded("r-1 unreachable".into()));
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
            linked: true,
            offset: 100,
            last_io: -1,
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
    let d = decide_after_cut(&members, &s);
    assert_eq!(
        d.steps,
        vec![
            Step::Promote { pod: "r-1".into() },
            follow("r-2", 1),
            label("r-0", None),
            label("r-1", Some(Label::Primary)),
        ]
    );
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    assert_eq!(d.event.map(|e| e.0), Some("PrimaryFailedOver"));
}

/// `member` as a replica that heard from its primary `ago` seconds before.
fn hearing(member: Member, ago: i64) -> Member {
    let redis = member.redis.clone().map(|role| match role {
        RedisRole::Replica {
            primary_host,
            primary_port,
            link_up,
            linked,
            offset,
            ..
        } => RedisRole::Replica {
            primary_host,
            primary_port,
            link_up,
            linked,
            offset,
            last_io: ago,
        },
        primary => primary,
    });
    Member { redis, ..member }
}

/// The controller's reads of the primary failing (its process starved on a loaded machine, or
/// its own path to that pod) is no failover while a replica's link says the primary sent
/// something within `failoverAfter` (seen in CI: a freshly elected primary failed over 12 s
/// after its election for 4 s of the controller's timed-out reads). Once no replica has heard
/// from it for `failoverAfter` (frozen, cut off, dead), it is failed over as before.
#[test]
fn an_unreachable_primary_its_replicas_still_hear_from_is_not_failed_over() {
    let lost = Member {
        redis: None,
        ready: false,
        ..primary(0, 100, &[])
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(12));
    let heard = [
        lost.clone(),
        hearing(replica(1, 0, 100), 0),
        hearing(replica(2, 0, 80), 9),
    ];
    let d = decide(&heard, &s);
    assert_eq!(d.steps, vec![]);
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    match &d.health {
        Health::PrimaryUnhealthy(message) => {
            assert!(message.contains("r-1 heard from it 0s ago"), "{message}")
        }
        other => panic!("{other:?}"),
    }

    // Silent on every link for failoverAfter (10 s in `settings`): failed over.
    let silent = [
        lost,
        hearing(replica(1, 0, 100), 10),
        hearing(replica(2, 0, 80), 15),
    ];
    let d = decide_after_cut(&silent, &s);
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
    let d = decide_after_cut(&[lost, replica(1, 0, 70), replica(2, 0, 95)], &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"));
}

#[test]
fn a_restarted_primary_is_replaced_at_once_and_fenced() {
    // Its redis-server came back fenced and empty; the replicas kept the data.
    let restarted = Member {
        label: Some(Label::Primary),
        ..fenced(0)
    };
    let d = decide_after_cut(
        &[restarted, replica(1, 0, 100), replica(2, 0, 100)],
        &settings(3),
    );
    assert_eq!(
        d.steps,
        vec![
            Step::Promote { pod: "r-1".into() },
            follow("r-0", 1),
            follow("r-2", 1),
            label("r-0", None),
            label("r-1", Some(Label::Primary)),
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
    // Last seen behind r-2 (at 80): waited for only while the loss is fresh. One never read is
    // waited for beyond (issue #41.2, below).
    let mut unread = replica(1, 0, 0);
    unread.redis = None;
    unread.last_read = seen_at(80);
    let members = [fenced(0), unread, replica(2, 0, 100)];
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(1));
    let d = decide_after_cut(&members, &s);
    assert!(d.steps.is_empty(), "{d:?}");
    assert!(
        matches!(&d.health, Health::FailingOver(m) if m.contains("r-1")),
        "{d:?}"
    );
    s.primary_unhealthy_for = Some(s.failover_after);
    let d = decide_after_cut(&members, &s);
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
    unread.last_read = seen_at(80);
    let members = [restarted, unread, replica(2, 0, 100)];
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(1));
    let d = decide_after_cut(&members, &s);
    assert!(d.steps.is_empty(), "{d:?}");
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    assert!(
        matches!(&d.health, Health::FailingOver(m) if m.contains("reading r-1")),
        "{d:?}"
    );
    // Read again, with more than r-2: r-1 is promoted.
    let members_read = [members[0].clone(), replica(1, 0, 120), replica(2, 0, 100)];
    let d = decide_after_cut(&members_read, &s);
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    // Unread, last seen behind r-2: after failoverAfter, the best readable one. (Never read,
    // it would be waited for until it answers or goes: issue #41.2.)
    s.primary_unhealthy_for = Some(s.failover_after);
    let d = decide_after_cut(&members, &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"));
    assert!(d.steps.contains(&Step::Promote { pod: "r-2".into() }));
}

#[test]
fn an_unreachable_primary_waits_after_failover_after_for_a_replica_never_read() {
    // Issue #41.2. This test said the opposite before ("waits for no replica after
    // failoverAfter"): on the timer path the primary's failoverAfter had run out, so an unread
    // replica was given no time at all. The issue found that wrong: r-1 may hold writes
    // acknowledged by WAIT 1 from it alone (it shares the lost primary's node; r-2 lagged), and
    // a controller that never read it (a new leader, its reads always timing out) cannot say it
    // holds less than r-2. So r-2 is not promoted while r-1 is unread, however long the primary
    // has been lost, until r-1 is read, its process is gone or its pod goes.
    let lost = Member {
        redis: None,
        ready: false,
        ..primary(0, 100, &[])
    };
    let mut unread = replica(1, 0, 0);
    unread.redis = None;
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(s.failover_after * 60);
    let d = decide_after_cut(&[lost.clone(), unread.clone(), replica(2, 0, 100)], &s);
    assert!(
        !d.steps.iter().any(|x| matches!(x, Step::Promote { .. })),
        "{:?}",
        d.steps
    );
    assert!(
        matches!(&d.health, Health::WaitingForMember(m) if m.contains("r-1") && m.contains("never read")),
        "{:?}",
        d.health
    );
    // Its pod terminating (evicted from its lost node, deleted by a person): its data is gone
    // with it, and r-2 is promoted.
    let going = Member {
        terminating: true,
        ..unread.clone()
    };
    let d = decide_after_cut(&[lost.clone(), going, replica(2, 0, 100)], &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"), "{:?}", d.steps);
    // Its container not running: what it held in memory is gone too.
    let stopped = Member {
        process_gone: true,
        ..unread
    };
    let d = decide_after_cut(&[lost, stopped, replica(2, 0, 100)], &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"), "{:?}", d.steps);
}

#[test]
fn the_primary_pod_gone_promotes_a_replica_with_its_data_not_the_new_empty_pod() {
    // r-0 was deleted and recreated: a fresh fenced pod without a label.
    let d = decide_after_cut(
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
fn a_primary_due_for_replacement_hands_over_even_when_not_ready() {
    // Outdated and not Ready (say its readiness probe times out under load), but it answers as
    // the primary: the pods plan deletes a not-Ready outdated pod at once, so it hands over now
    // rather than after failoverAfter, by which time its pod is gone.
    let old = Member {
        current: false,
        ready: false,
        ..primary(0, 100, &[1, 2])
    };
    let s = Settings {
        primary_unhealthy_for: Some(Duration::ZERO),
        ..settings(3)
    };
    let d = decide(&[old.clone(), replica(1, 0, 90), replica(2, 0, 100)], &s);
    assert_eq!(
        d.steps,
        vec![Step::Switchover {
            from: "r-0".into(),
            to: "r-2".into()
        }]
    );
    // Scaled away, not Ready: the same.
    let scaled = Member {
        ordinal: Some(3),
        name: "r-3".into(),
        ip: Some(ip(3)),
        ..old.clone()
    };
    let d = decide(
        &[replica(0, 3, 100), replica(1, 3, 100), scaled],
        &Settings {
            primary_unhealthy_for: Some(Duration::ZERO),
            ..settings(2)
        },
    );
    assert!(
        matches!(d.steps.as_slice(), [Step::Switchover { from, .. }] if from == "r-3"),
        "{d:?}"
    );
    // Not answering at all: nothing to hand over from; the failover rules wait.
    let silent = Member { redis: None, ..old };
    let d = decide(&[silent, replica(1, 0, 90), replica(2, 0, 100)], &s);
    assert!(d.steps.is_empty(), "{d:?}");
}

#[test]
fn terminating_pods_take_no_part() {
    let leaving = Member {
        terminating: true,
        ..primary(0, 100, &[])
    };
    let members = [leaving, replica(1, 0, 100)];
    // A terminating primary is never a candidate, but its redis-server is cut off too (its
    // container may run on while the pod terminates).
    assert_eq!(
        decide(&members, &settings(2)).steps,
        vec![fence("r-0"), fence("r-1")]
    );
    let d = decide_after_cut(&members, &settings(2));
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    assert!(!d.steps.contains(&follow("r-0", 1)), "{d:?}");
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
    let d = decide_after_cut(&[dead, replica(1, 0, 100)], &settings(2));
    assert_eq!(d.primary.as_deref(), Some("r-1"));
}

#[test]
fn a_live_master_other_than_the_lost_primary_is_labelled_not_failed_over() {
    // The pass before promoted r-1 and never moved the labels (its label write failed): r-0 is
    // still labelled primary and answers fenced (the cut before the promotion), r-1 answers as
    // the master that r-2 follows. r-1 is the primary to label, not a reason to promote r-2 (a
    // second failover, whose repointing would resync away what r-1 acknowledged).
    let lost = Member {
        label: Some(Label::Primary),
        ..cut_off(primary(0, 100, &[]))
    };
    let promoted = Member {
        label: Some(Label::Replica),
        ..primary(1, 120, &[2])
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(60));
    let d = decide(&[lost, promoted.clone(), replica(2, 1, 120)], &s);
    assert_eq!(
        d.steps,
        vec![
            label("r-0", None),
            label("r-1", Some(Label::Primary)),
            follow("r-0", 1)
        ]
    );
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    assert_eq!(d.event, None, "nothing was promoted");

    // r-0 merely unread (issue #41.1: it may be the newer primary, and r-1 an old one back):
    // not adopted; past failoverAfter a failover cuts r-1 too and promotes the most advanced,
    // which holds everything r-1 acknowledged (r-2, at r-1's offset 120), never r-0.
    let unread = unread_primary(0, 100);
    let first = decide(&[unread.clone(), promoted.clone(), replica(2, 1, 120)], &s);
    assert!(
        first.steps.contains(&fence("r-1")) && first.steps.contains(&fence("r-2")),
        "{first:?}"
    );
    let d = decide_after_cut(&[unread, promoted, replica(2, 1, 120)], &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"));

    // Without a labelled primary at all (its pod gone), the same: the live master is labelled.
    let promoted = Member {
        label: None,
        ..primary(1, 120, &[2])
    };
    let d = decide(&[promoted, replica(2, 1, 120)], &s);
    assert_eq!(d.steps, vec![label("r-1", Some(Label::Primary))]);
    assert_eq!(d.primary.as_deref(), Some("r-1"));
}

#[test]
fn an_old_primary_back_after_a_failover_is_not_labelled_again() {
    // r-0 was frozen past failoverAfter; r-1 was promoted and r-2 follows it. r-0 resumes,
    // still a primary in its own eyes, listing r-2 online (issue #41.1: the cut's FINs were
    // dropped), while r-1 is briefly not Ready: r-0 must not be made the primary again (its
    // data is behind r-1's), as r-1 still answers as the primary.
    let resumed = Member {
        label: None,
        ..primary(0, 100, &[2])
    };
    let briefly_unready = Member {
        ready: false,
        ..primary(1, 150, &[2])
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(1));
    let d = decide(&[resumed, briefly_unready, replica(2, 1, 150)], &s);
    assert!(
        !d.steps.contains(&label("r-0", Some(Label::Primary))),
        "{:?}",
        d.steps
    );
    assert_eq!(d.primary.as_deref(), Some("r-1"));
}

#[test]
fn a_failover_cuts_every_replica_off_the_old_stream_before_promoting_the_most_advanced() {
    // r-0 is not Ready but its redis-server still runs and streams to r-1 (its container was
    // force-deleted, or it is cut off from the kubelet): promoting r-2 while r-1 still follows
    // r-0 would let r-1 acknowledge writes r-2 never gets, then resync them away.
    let lost = Member {
        ready: false,
        ..primary(0, 130, &[1, 2])
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(60));
    let members = [lost.clone(), replica(1, 0, 120), replica(2, 0, 125)];
    let d = decide(&members, &s);
    assert_eq!(
        d.steps,
        vec![fence("r-0"), fence("r-1"), fence("r-2")],
        "the old primary too, since it answers; nothing promoted yet"
    );
    assert_eq!(
        d.primary.as_deref(),
        Some("r-0"),
        "the label stays until the promotion"
    );
    assert!(matches!(d.health, Health::FailingOver(_)), "{:?}", d.health);
    assert_eq!(d.event, None);

    // The next pass reads the offsets after the cut: r-1 got more in the meantime.
    let members = [
        cut_off(lost),
        cut_off(replica(1, 0, 128)),
        cut_off(replica(2, 0, 125)),
    ];
    let d = decide(&members, &s);
    assert_eq!(
        d.steps,
        vec![
            Step::Promote { pod: "r-1".into() },
            follow("r-0", 1),
            follow("r-2", 1),
            label("r-0", None),
            label("r-1", Some(Label::Primary)),
        ],
        "the rest repointed, the labels moved last"
    );
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    assert_eq!(d.event.map(|e| e.0), Some("PrimaryFailedOver"));
}

#[test]
fn a_replica_that_never_finished_a_sync_is_not_promoted() {
    // r-2 is in its first full sync from r-0 (offset ~1, never linked): it holds nothing.
    let lost = Member {
        redis: None,
        ready: false,
        ..primary(0, 100, &[])
    };
    let syncing = Member {
        redis: Some(RedisRole::Replica {
            primary_host: ip(0),
            primary_port: PORT,
            link_up: false,
            linked: false,
            offset: 1,
            last_io: -1,
        }),
        ..replica(2, 0, 1)
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(60));
    let d = decide_after_cut(
        &[lost.clone(), cut_off(replica(1, 0, 90)), syncing.clone()],
        &s,
    );
    assert_eq!(d.primary.as_deref(), Some("r-1"), "{:?}", d.steps);
    assert!(
        d.steps.contains(&follow("r-2", 1)),
        "it syncs from the new primary: {:?}",
        d.steps
    );
    let d = decide_after_cut(&[lost, syncing], &s);
    assert!(
        !d.steps.iter().any(|s| matches!(s, Step::Promote { .. })),
        "{:?}",
        d.steps
    );
    assert!(matches!(d.health, Health::NoCandidate(_)), "{:?}", d.health);
}

#[test]
fn only_a_linked_replica_serves_reads_behind_the_replicas_service() {
    // r-1 is in its first full sync from r-0 (it follows, the primary does not list it online
    // yet); r-2 restarted (fenced, empty) but still carries the replica label.
    let syncing = Member {
        label: None,
        redis: Some(RedisRole::Replica {
            primary_host: ip(0),
            primary_port: PORT,
            link_up: false,
            linked: false,
            offset: 1,
            last_io: -1,
        }),
        ..replica(1, 0, 1)
    };
    let restarted = Member {
        label: Some(Label::Replica),
        ..fenced(2)
    };
    let d = decide(&[primary(0, 100, &[]), syncing, restarted], &settings(3));
    assert_eq!(
        d.steps,
        vec![follow("r-2", 0), label("r-2", None)],
        "r-1 is labelled once linked; r-2 leaves <name>-replicas until it is"
    );
}

/// A pod whose redis-server came back from a full restart (every pod at once) and loaded what it
/// had on disk: fenced, never linked since, `keys` keys at replication `offset`.
fn reloaded(i: u32, keys: u64, offset: i64) -> Member {
    Member {
        keys,
        redis: Some(RedisRole::Replica {
            primary_host: FENCE_HOST.into(),
            primary_port: FENCE_PORT,
            link_up: false,
            linked: false,
            offset,
            last_io: -1,
        }),
        ..fenced(i)
    }
}

#[test]
fn after_a_primary_existed_no_pod_is_elected_over_one_not_read_yet() {
    // status.primary was set; every pod restarted; r-1 (which holds the data) did not answer
    // this pass. Electing r-0, empty, would make r-1 full-sync the empty dataset.
    let mut unread = fenced(1);
    unread.redis = None;
    let mut s = settings(3);
    s.had_primary = true;
    s.primary_unhealthy_for = Some(Duration::from_secs(2));
    let d = decide(&[fenced(0), unread.clone(), fenced(2)], &s);
    assert_eq!(d.steps, vec![], "{d:?}");
    assert!(
        matches!(&d.health, Health::FailingOver(m) if m.contains("r-1")),
        "{:?}",
        d.health
    );
    // Still nobody with keys after failoverAfter: waiting on, never an empty pod over it.
    s.primary_unhealthy_for = Some(s.failover_after);
    let d = decide(&[fenced(0), unread, fenced(2)], &s);
    assert_eq!(d.steps, vec![], "{d:?}");
}

#[test]
fn after_a_full_restart_the_pod_holding_the_most_is_elected() {
    let mut s = settings(3);
    s.had_primary = true;
    let d = decide(
        &[
            reloaded(0, 0, 0),
            reloaded(1, 500, 900),
            reloaded(2, 500, 1000),
        ],
        &s,
    );
    assert_eq!(d.primary.as_deref(), Some("r-2"), "{d:?}");
    assert_eq!(d.steps.first(), Some(&Step::Promote { pod: "r-2".into() }));
    // No data anywhere (no storage): the lowest ordinal, as a new Redis.
    let d = decide(&[fenced(1), fenced(0), fenced(2)], &s);
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    // A role label left on a pod says the same as status.primary.
    let mut labelled = fenced(1);
    labelled.label = Some(Label::Replica);
    labelled.redis = None;
    let d = decide(&[fenced(0), labelled, fenced(2)], &settings(3));
    assert_eq!(d.steps, vec![], "{d:?}");
}

#[test]
fn after_a_full_restart_the_last_primary_is_elected_over_a_replica_holding_more_keys() {
    // Storage, every pod deleted at once: the primary r-1 had deleted keys a lagging replica
    // still holds. The append-only files give no replication offsets back, so key counts would
    // elect r-2 and resurrect the deleted keys, and r-1's newest writes would be resynced away.
    let mut s = settings(3);
    s.had_primary = true;
    s.last_primary = Some(1);
    let d = decide(
        &[reloaded(0, 0, 0), reloaded(1, 700, 0), reloaded(2, 900, 0)],
        &s,
    );
    assert_eq!(d.primary.as_deref(), Some("r-1"), "{d:?}");
    // The last primary came back empty (its volume lost): the pod holding the most instead.
    let d = decide(
        &[reloaded(0, 0, 0), reloaded(1, 0, 0), reloaded(2, 900, 0)],
        &s,
    );
    assert_eq!(d.primary.as_deref(), Some("r-2"), "{d:?}");
}

#[test]
fn a_primary_refusing_the_operators_password_is_not_failed_over() {
    // Its password was changed by hand (CONFIG SET requirepass): it still serves the clients
    // that know it. Failing it over would leave it a primary beside the new one.
    let refusing = Member {
        redis: None,
        refuses_auth: true,
        ..primary(0, 100, &[1, 2])
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(60));
    let d = decide(&[refusing, replica(1, 0, 100), replica(2, 0, 100)], &s);
    assert_eq!(d.steps, vec![], "{d:?}");
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    assert!(
        matches!(&d.health, Health::PrimaryUnhealthy(m) if m.contains("password")),
        "{:?}",
        d.health
    );
}

#[test]
fn after_a_full_restart_the_last_primary_is_waited_for_while_its_pod_comes_back() {
    // Storage, every pod deleted at once (CI, storage-restart: 26 acknowledged writes lost):
    // r-0 and r-2 are back and read; the last primary r-1 is not yet (its pod is missing, still
    // terminating, has no IP, or did not answer). The append-only files give no offsets back,
    // so only r-1 is known to hold every acknowledged write: electing a replica that came back
    // first, once failoverAfter ran out, resyncs r-1's newest writes away.
    let mut s = after_a_primary(3, 1);
    s.primary_unhealthy_for = Some(s.failover_after * 2);
    let mut terminating = reloaded(1, 900, 0);
    terminating.terminating = true;
    let mut unread = reloaded(1, 0, 0);
    unread.redis = None;
    let mut no_ip = unread.clone();
    no_ip.ip = None;
    let mut starting = no_ip.clone();
    starting.process_gone = true;
    for last in [
        None,
        Some(terminating),
        Some(unread),
        Some(no_ip),
        Some(starting),
    ] {
        let mut members = vec![reloaded(0, 500, 0), reloaded(2, 600, 0)];
        members.extend(last.clone());
        let d = decide(&members, &s);
        assert_eq!(d.steps, vec![], "{last:?}: {d:?}");
        assert!(
            matches!(&d.health, Health::FailingOver(m) if m.contains("r-1")),
            "{last:?}: {:?}",
            d.health
        );
    }
    // Not forever: a pod that cannot come back (its node is gone, and its volume with it)
    // leaves the election to the pod holding the most once LAST_PRIMARY_WAIT is over.
    s.primary_unhealthy_for = Some(election::LAST_PRIMARY_WAIT);
    let d = decide(&[reloaded(0, 500, 0), reloaded(2, 600, 0)], &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"), "{d:?}");
}

#[test]
fn a_pod_still_loading_its_dataset_is_waited_for_not_ranked_by_what_it_loaded_so_far() {
    // Every pod restarted from its volume; r-2 holds the most but is still loading its
    // append-only file: INFO answers, with the keys loaded so far. Electing r-0 now would make
    // r-2 full-sync r-0's smaller dataset once it has loaded.
    let mut s = settings(3);
    s.had_primary = true;
    s.primary_unhealthy_for = Some(s.failover_after * 10);
    let mut loading = reloaded(2, 200, 0);
    loading.loading = true;
    let d = decide(
        &[reloaded(0, 500, 0), reloaded(1, 0, 0), loading.clone()],
        &s,
    );
    assert_eq!(d.steps, vec![], "{d:?}");
    assert!(
        matches!(&d.health, Health::FailingOver(m) if m.contains("r-2") && m.contains("loading")),
        "{:?}",
        d.health
    );
    // Loaded: the most keys win.
    loading.loading = false;
    loading.keys = 900;
    let d = decide(&[reloaded(0, 500, 0), reloaded(1, 0, 0), loading], &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"), "{d:?}");
}

#[test]
fn an_old_primary_back_with_a_replica_link_it_still_lists_is_not_labelled_while_the_new_one_is_unread()
 {
    // Issue #41.1: r-0's node was cut off; r-1 was promoted and acknowledged writes (WAIT 1 by
    // r-2). The node heals within repl-timeout: r-0 still answers as a primary listing r-2 as
    // online (the cut's FINs were dropped), and this pass's read of r-1 times out. r-1 is merely
    // unread, not positively not a primary: r-0 must not get the label, and nobody is told to
    // follow it (r-2 would resync r-1's acknowledged writes away).
    let back = Member {
        label: None,
        ..primary(0, 100, &[2])
    };
    let unread = Member {
        redis: None,
        ..primary(1, 150, &[2])
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(1));
    let d = decide(&[back, unread, replica(2, 1, 150)], &s);
    assert!(
        !d.steps.contains(&label("r-0", Some(Label::Primary))),
        "{:?}",
        d.steps
    );
    assert!(!d.steps.contains(&follow("r-2", 0)), "{:?}", d.steps);
    assert_eq!(d.primary.as_deref(), Some("r-1"));
}

#[test]
fn a_live_master_is_adopted_only_over_a_labelled_primary_positively_not_one() {
    // r-1 was promoted by an earlier pass (or leader) whose label writes never happened; the
    // labelled r-0 answers fenced (cut off before the promotion): r-1 is labelled, not failed
    // over again.
    let promoted = Member {
        label: Some(Label::Replica),
        ..primary(1, 120, &[2])
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(1));
    let cut = Member {
        label: Some(Label::Primary),
        ..cut_off(primary(0, 100, &[]))
    };
    let d = decide(&[cut, promoted.clone(), replica(2, 1, 120)], &s);
    assert_eq!(
        d.steps,
        vec![
            label("r-0", None),
            label("r-1", Some(Label::Primary)),
            follow("r-0", 1)
        ]
    );
    // Its container is not running: the same.
    let gone = Member {
        redis: None,
        process_gone: true,
        ..primary(0, 100, &[])
    };
    let d = decide(&[gone, promoted.clone(), replica(2, 1, 120)], &s);
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    // A live master whose only link lags past minReplicasMaxLag streams to nobody in time: not
    // adopted.
    let lagging = Member {
        label: None,
        redis: Some(RedisRole::Primary {
            offset: 120,
            replicas: vec![ReplicaLink {
                ip: ip(2),
                port: PORT,
                online: true,
                offset: 80,
                lag: 30,
            }],
        }),
        ..promoted
    };
    let d = decide(&[lagging, replica(2, 1, 80)], &s);
    assert!(
        !d.steps.contains(&label("r-1", Some(Label::Primary))),
        "{:?}",
        d.steps
    );
}

#[test]
fn every_server_restarted_in_place_elects_from_loaded_data_not_no_candidate_forever() {
    // Issue #41.4: every redis container restarted in its pod (a node reboot, a kubelet
    // restart, an OOM kill of a one-pod Redis): the labelled primary answers fenced with what it
    // loaded from disk, no replica is linked. The stale label goes and the pod holding the most
    // is elected, the last primary first among equals.
    let mut s = after_a_primary(3, 1);
    s.primary_unhealthy_for = Some(Duration::from_secs(1));
    let labelled = Member {
        label: Some(Label::Primary),
        ..reloaded(1, 100, 1)
    };
    let others = [
        Member {
            label: Some(Label::Replica),
            ..reloaded(0, 100, 1)
        },
        Member {
            label: Some(Label::Replica),
            ..reloaded(2, 90, 1)
        },
    ];
    let d = decide(
        &[others[0].clone(), labelled.clone(), others[1].clone()],
        &s,
    );
    assert!(
        !matches!(d.health, Health::NoCandidate(_)),
        "{:?}",
        d.health
    );
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    assert!(
        d.steps.contains(&Step::Promote { pod: "r-1".into() }),
        "{:?}",
        d.steps
    );
    assert!(d.steps.contains(&follow("r-0", 1)), "{:?}", d.steps);
    assert!(d.steps.contains(&follow("r-2", 1)), "{:?}", d.steps);

    // The labelled primary came back empty while r-0 loaded keys: r-0 is elected, and the
    // label leaves r-1 before it is set on r-0.
    let empty = Member {
        label: Some(Label::Primary),
        ..reloaded(1, 0, 0)
    };
    let d = decide(&[others[0].clone(), empty, others[1].clone()], &s);
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    let unlabel = d.steps.iter().position(|x| *x == label("r-1", None));
    let relabel = d
        .steps
        .iter()
        .position(|x| *x == label("r-0", Some(Label::Primary)));
    assert!(
        matches!((unlabel, relabel), (Some(u), Some(r)) if u < r),
        "{:?}",
        d.steps
    );

    // A one-pod Replication Redis after its container restarted: itself again.
    let one = after_a_primary(1, 0);
    let alone = Member {
        label: Some(Label::Primary),
        ..reloaded(0, 5, 1)
    };
    let d = decide(&[alone], &one);
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    assert!(
        d.steps.contains(&Step::Promote { pod: "r-0".into() }),
        "{:?}",
        d.steps
    );
}

#[test]
fn a_replica_unread_now_but_last_read_beyond_the_candidate_is_waited_for() {
    // Issue #41.3: r-2 was read at offset 150 (this pass before the cut, or the pass before)
    // and misses the read after it; r-1 is read at 120. r-2 may hold writes acknowledged by
    // WAIT 1 from it alone: r-1 is not promoted (r-2 would full-sync them away), however long
    // the primary has been lost, until r-2 is read, its process is gone or its pod goes.
    let lost = unread_primary(0, 150);
    let ahead = Member {
        redis: None,
        last_read: seen_at(150),
        ..replica(2, 0, 150)
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(600));
    let members = [lost.clone(), cut_off(replica(1, 0, 120)), ahead.clone()];
    let d = decide(&members, &s);
    assert!(
        !d.steps.iter().any(|x| matches!(x, Step::Promote { .. })),
        "{:?}",
        d.steps
    );
    assert!(
        matches!(&d.health, Health::WaitingForMember(m) if m.contains("r-2") && m.contains("150")),
        "{:?}",
        d.health
    );
    // Last read behind the candidate: no reason to wait past failoverAfter.
    let behind = Member {
        last_read: seen_at(100),
        ..ahead.clone()
    };
    let d = decide(&[lost.clone(), cut_off(replica(1, 0, 120)), behind], &s);
    assert_eq!(d.primary.as_deref(), Some("r-1"), "{:?}", d.steps);
    // Its container stopped: nothing left to wait for.
    let gone = Member {
        process_gone: true,
        ..ahead
    };
    let d = decide(&[lost, cut_off(replica(1, 0, 120)), gone], &s);
    assert_eq!(d.primary.as_deref(), Some("r-1"), "{:?}", d.steps);
}

#[test]
fn a_terminating_primary_loses_its_label_before_another_pod_gets_it() {
    // Issue #41.6: a graceful delete of the primary's pod: its successor is labelled while the
    // old pod terminates; the old one's label goes first (rule 1: one pod carries it).
    let leaving = Member {
        terminating: true,
        ..primary(0, 100, &[1])
    };
    let d = decide_after_cut(&[leaving, replica(1, 0, 100)], &settings(2));
    assert_eq!(d.primary.as_deref(), Some("r-1"));
    let unlabel = d.steps.iter().position(|x| *x == label("r-0", None));
    let relabel = d
        .steps
        .iter()
        .position(|x| *x == label("r-1", Some(Label::Primary)));
    assert!(
        matches!((unlabel, relabel), (Some(u), Some(r)) if u < r),
        "{:?}",
        d.steps
    );
}

#[test]
fn a_new_redis_over_retained_claims_elects_the_pod_holding_the_most_not_ordinal_zero() {
    // Issue #41.5: deleted with whenDeleted Retain and created again: no status.primary, no
    // label, but the pods loaded their claims. Ordinal 0 loaded nothing (its claim was made
    // later); r-1 holds the data: it is elected, and r-0 follows it.
    let members = [reloaded(0, 0, 1), reloaded(1, 50, 1), reloaded(2, 40, 1)];
    let d = decide(&members, &settings(3));
    assert_eq!(d.primary.as_deref(), Some("r-1"), "{:?}", d.steps);
    assert!(d.steps.contains(&follow("r-0", 1)), "{:?}", d.steps);
    // A new Redis whose pods hold nothing: ordinal 0, as before.
    let d = decide(
        &[reloaded(0, 0, 1), reloaded(1, 0, 1), reloaded(2, 0, 1)],
        &settings(3),
    );
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    // r-1 has not started yet (no IP): its claim may hold the data, so the first election waits
    // for every pod, at most failoverAfter, before ordinal 0 is taken for empty.
    let starting = Member {
        ip: None,
        redis: None,
        ..reloaded(1, 0, 1)
    };
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(Duration::from_secs(1));
    let members = [reloaded(0, 0, 1), starting, reloaded(2, 0, 1)];
    let d = decide(&members, &s);
    assert!(d.steps.is_empty(), "{:?}", d.steps);
    assert_eq!(d.health, Health::Electing);
    s.primary_unhealthy_for = Some(s.failover_after);
    let d = decide(&members, &s);
    assert_eq!(d.primary.as_deref(), Some("r-0"));
}

#[test]
fn the_far_replica_is_not_promoted_over_the_acknowledged_writes_of_the_one_cut_off_with_the_primary()
 {
    // Issue #41.2, as reproduced on the bed: three pods on two nodes; r-2 (the far node) lagged
    // at 1000 while r-1, beside the primary, acknowledged WAIT 1 writes up to 1500 (the primary
    // listed it there, or its own read said so); then that node was cut off. r-2 is not
    // promoted, however long the primary has been lost, and the conditions say why.
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(s.failover_after * 30);
    let near = Member {
        redis: None,
        ready: false,
        last_read: seen_at(1500),
        ..replica(1, 0, 1500)
    };
    let far = replica(2, 0, 1000);
    let d = decide_after_cut(&[unread_primary(0, 1500), near.clone(), far.clone()], &s);
    assert!(
        !d.steps.iter().any(|x| matches!(x, Step::Promote { .. })),
        "{:?}",
        d.steps
    );
    assert_eq!(d.primary.as_deref(), Some("r-0"));
    let Health::WaitingForMember(why) = &d.health else {
        panic!("{:?}", d.health)
    };
    assert!(
        why.contains("r-1") && why.contains("1500") && why.contains("r-2"),
        "{why}"
    );
    // Read again (the node is back): r-1 holds the most and is promoted.
    let back = cut_off(replica(1, 0, 1500));
    let d = decide_after_cut(&[unread_primary(0, 1500), back, far.clone()], &s);
    assert_eq!(d.primary.as_deref(), Some("r-1"), "{:?}", d.steps);
    // Gone for good: its pod evicted from the lost node (or deleted by the node-lost path, or
    // by a person accepting the loss): r-2 takes over.
    let evicted = Member {
        terminating: true,
        ..near
    };
    let d = decide_after_cut(&[unread_primary(0, 1500), evicted, far], &s);
    assert_eq!(d.primary.as_deref(), Some("r-2"), "{:?}", d.steps);
}

#[test]
fn offsets_are_compared_only_within_one_replication_history() {
    // Issue #41.2: r-1, unread, was last seen at `seen` in history `replid`; r-2, read at 900
    // in history "h", was promoted out of history "old" at 200 (it holds "old" up to 200).
    let promoted_from_old = History {
        replid: HISTORY.into(),
        replid2: "old".into(),
        second_offset: 201,
    };
    let cases = [
        ("same history, behind the candidate", HISTORY, 850, true),
        ("same history, beyond the candidate", HISTORY, 950, false),
        ("the history it left, within what it took", "old", 200, true),
        (
            "the history it left, beyond where it left it",
            "old",
            250,
            false,
        ),
        (
            "a history the candidate holds nothing of",
            "other",
            150,
            false,
        ),
        ("nothing held in any history", "other", 0, true),
    ];
    let mut s = settings(3);
    s.primary_unhealthy_for = Some(s.failover_after * 30);
    for (case, replid, seen, promoted) in cases {
        let unread = Member {
            redis: None,
            last_read: Some(LastRead {
                replid: replid.into(),
                offset: seen,
            }),
            ..replica(1, 0, 0)
        };
        let candidate = Member {
            history: Some(promoted_from_old.clone()),
            ..replica(2, 0, 900)
        };
        let d = decide_after_cut(&[unread_primary(0, 900), unread, candidate], &s);
        assert_eq!(
            d.primary.as_deref(),
            Some(if promoted { "r-2" } else { "r-0" }),
            "{case}: {:?} {:?}",
            d.steps,
            d.health
        );
    }
}
