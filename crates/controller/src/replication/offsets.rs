//! Where each pod's redis-server was last seen (DESIGN §10): a server that misses a read may
//! hold everything up to there, and the failover must not promote a replica that may lack it
//! (`plan::election::unread_ahead`). Seen is its own read, or the offset its primary says it
//! acknowledged (the count `WAIT` goes by), each in its replication history. By pod uid (a pod
//! recreated under the same name starts empty); the pods of a pass are all that is kept. In
//! memory: a new leader starts without it, as it starts without the failover clocks (and so
//! waits for a replica it cannot read, issue #41.2).

use super::plan::LastRead;
use crate::k8s::by_redis::ByRedis;
use crate::redis_server::info::{History, RedisRole};
use std::collections::HashMap;

/// Last reads by Redis uid, then pod uid.
#[derive(Default)]
pub struct LastOffsets {
    by_redis: ByRedis<HashMap<String, LastRead>>,
}

/// What one pass read of one pod, for [`LastOffsets::record_pass`].
pub struct PodRead<'a> {
    pub pod_uid: &'a str,
    pub ip: Option<&'a str>,
    /// Its answer: its role and replication history.
    pub read: Option<(&'a RedisRole, &'a History)>,
}

impl LastOffsets {
    /// Records what this pass read (see [`seen`]) and forgets the pods not in it.
    pub fn record_pass(&self, redis_uid: &str, reads: &[PodRead<'_>]) {
        let mut memory = self.by_redis.lock();
        let pods = memory.entry(redis_uid.to_owned()).or_default();
        pods.retain(|uid, _| reads.iter().any(|r| r.pod_uid == uid));
        for read in reads {
            if let Some(now) = seen(pods.get(read.pod_uid), read, reads) {
                pods.insert(read.pod_uid.to_owned(), now);
            }
        }
    }

    /// Where `pod_uid` of Redis `redis_uid` was last seen.
    pub fn last(&self, redis_uid: &str, pod_uid: &str) -> Option<LastRead> {
        self.by_redis.lock().get(redis_uid)?.get(pod_uid).cloned()
    }

    /// Forgets a Redis.
    pub fn forget(&self, redis_uid: &str) {
        self.by_redis.forget(redis_uid);
    }

    /// Forgets every Redis that `exists` says is gone.
    pub fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.by_redis.keep_only(exists);
    }
}

/// Where `pod` is seen after this pass, `before` what was remembered. Its own read is what it
/// says now (an offset may go down: it restarted, or resynced). Unread, a primary of this pass
/// listing it online says what it acknowledged: that raises what was remembered in the same
/// history, and replaces one of another history (it is newer). Else what was remembered.
pub fn seen(
    before: Option<&LastRead>,
    pod: &PodRead<'_>,
    pass: &[PodRead<'_>],
) -> Option<LastRead> {
    if let Some((role, history)) = pod.read {
        return Some(LastRead {
            replid: history.replid.clone(),
            offset: role.offset(),
        });
    }
    let listed = pod.ip.and_then(|ip| {
        pass.iter().find_map(|other| match other.read {
            Some((RedisRole::Primary { replicas, .. }, history)) => replicas
                .iter()
                .find(|link| link.ip == ip && link.online)
                .map(|link| LastRead {
                    replid: history.replid.clone(),
                    offset: link.offset,
                }),
            _ => None,
        })
    });
    match (before, listed) {
        (Some(b), Some(l)) if b.replid == l.replid => {
            Some(if l.offset > b.offset { l } else { b.clone() })
        }
        (_, Some(l)) => Some(l),
        (b, None) => b.cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_server::info::ReplicaLink;

    fn history(replid: &str) -> History {
        History {
            replid: replid.into(),
            ..History::default()
        }
    }

    fn at(replid: &str, offset: i64) -> LastRead {
        LastRead {
            replid: replid.into(),
            offset,
        }
    }

    fn replica(offset: i64) -> RedisRole {
        RedisRole::Replica {
            primary_host: "10.0.0.1".into(),
            primary_port: 6379,
            link_up: true,
            linked: true,
            offset,
            last_io: 0,
        }
    }

    fn primary(offset: i64, acknowledged: i64, online: bool) -> RedisRole {
        RedisRole::Primary {
            offset,
            replicas: vec![ReplicaLink {
                ip: "10.0.0.2".into(),
                port: 6379,
                online,
                offset: acknowledged,
                lag: 0,
            }],
        }
    }

    fn unread(pod_uid: &str) -> PodRead<'_> {
        PodRead {
            pod_uid,
            ip: Some("10.0.0.2"),
            read: None,
        }
    }

    fn read<'a>(pod_uid: &'a str, role: &'a RedisRole, history: &'a History) -> PodRead<'a> {
        PodRead {
            pod_uid,
            ip: Some(if pod_uid == "r-0" {
                "10.0.0.1"
            } else {
                "10.0.0.2"
            }),
            read: Some((role, history)),
        }
    }

    #[test]
    fn a_pod_is_seen_at_its_own_read_else_at_what_its_primary_says_it_acknowledged() {
        let (h, other) = (history("h"), history("other"));
        let own = replica(40);
        let listing = primary(100, 90, true);
        let offline = primary(100, 90, false);
        let cases = [
            (
                "read: what it says, even below what was remembered",
                Some(at("h", 95)),
                read("r-1", &own, &h),
                vec![read("r-0", &listing, &h)],
                Some(at("h", 40)),
            ),
            (
                "unread, listed: what it acknowledged",
                None,
                unread("r-1"),
                vec![read("r-0", &listing, &h)],
                Some(at("h", 90)),
            ),
            (
                "unread, listed below what was remembered: the memory",
                Some(at("h", 95)),
                unread("r-1"),
                vec![read("r-0", &listing, &h)],
                Some(at("h", 95)),
            ),
            (
                "unread, listed above what was remembered: raised",
                Some(at("h", 50)),
                unread("r-1"),
                vec![read("r-0", &listing, &h)],
                Some(at("h", 90)),
            ),
            (
                "unread, listed in another history: the newer listing",
                Some(at("h", 95)),
                unread("r-1"),
                vec![read("r-0", &listing, &other)],
                Some(at("other", 90)),
            ),
            (
                "unread, listed but not online: the memory",
                Some(at("h", 50)),
                unread("r-1"),
                vec![read("r-0", &offline, &h)],
                Some(at("h", 50)),
            ),
            (
                "unread, not listed, never seen: nothing",
                None,
                unread("r-1"),
                vec![],
                None,
            ),
        ];
        for (case, before, pod, pass, want) in cases {
            assert_eq!(seen(before.as_ref(), &pod, &pass), want, "{case}");
        }
    }

    #[test]
    fn the_last_read_is_kept_per_pod_and_pods_gone_are_forgotten() {
        let offsets = LastOffsets::default();
        let h = history("h");
        let (a, b) = (replica(15), replica(7));
        offsets.record_pass("r", &[read("pod-a", &a, &h), read("pod-b", &b, &h)]);
        assert_eq!(offsets.last("r", "pod-a"), Some(at("h", 15)));
        offsets.record_pass("r", &[read("pod-b", &b, &h)]);
        assert_eq!(offsets.last("r", "pod-a"), None);
        assert_eq!(offsets.last("r", "pod-b"), Some(at("h", 7)));
        offsets.forget("r");
        assert_eq!(offsets.last("r", "pod-b"), None);
    }
}
