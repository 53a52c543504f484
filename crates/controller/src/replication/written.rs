//! The role labels this controller wrote, until its pod cache shows them (DESIGN §9.3). The
//! cache lags the API server: a pass that still saw the labels from before the last promotion
//! could take the old primary for the labelled one and decide again on what was already
//! decided. So a pass first compares the cache with the last label written to each pod; a pod
//! whose cached label is not that one yet is read from the API server directly, and that read
//! is the truth from then on (a label someone else changed since is not waited for).

use crate::cached::CachedPod;
use crate::k8s::by_redis::ByRedis;
use std::collections::HashMap;
use std::sync::Arc;

/// One role-label write: the pod (by uid: a pod recreated under the same name is another pod)
/// and the value set (`None`: removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub pod_uid: String,
    pub role: Option<String>,
}

/// The last role label written to each pod, per Redis (by uid). In memory: a new leader starts
/// from a fresh cache of its own.
#[derive(Default)]
pub struct LabelWrites {
    by_redis: ByRedis<HashMap<String, Written>>,
}

impl LabelWrites {
    /// Remembers that `pod` of Redis `redis_uid` was given `written`.
    pub fn record(&self, redis_uid: &str, pod: &str, written: Written) {
        self.lock()
            .entry(redis_uid.to_owned())
            .or_default()
            .insert(pod.to_owned(), written);
    }

    /// The pods of Redis `redis_uid` whose cached role label is not the last one written to
    /// them. Writes the cache already shows, or whose pod is gone or replaced, are forgotten.
    pub fn unseen(&self, redis_uid: &str, pods: &[Arc<CachedPod>]) -> Vec<String> {
        let mut map = self.lock();
        let Some(written) = map.get_mut(redis_uid) else {
            return Vec::new();
        };
        let stale = not_in_cache(written, pods);
        written.retain(|pod, _| stale.contains(pod));
        if written.is_empty() {
            map.remove(redis_uid);
        }
        stale
    }

    /// Forgets the writes to `pods` (read from the API server directly).
    pub fn settled(&self, redis_uid: &str, pods: &[String]) {
        let mut map = self.lock();
        if let Some(written) = map.get_mut(redis_uid) {
            written.retain(|pod, _| !pods.contains(pod));
            if written.is_empty() {
                map.remove(redis_uid);
            }
        }
    }

    /// Forgets a Redis.
    pub fn forget(&self, redis_uid: &str) {
        self.by_redis.forget(redis_uid);
    }

    /// Forgets every Redis that `exists` says is gone.
    pub fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.by_redis.keep_only(exists);
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, crate::k8s::by_redis::Memory<String, HashMap<String, Written>>>
    {
        self.by_redis.lock()
    }
}

/// The pods in `written` that the cache holds (same name and uid) with another role label.
pub fn not_in_cache(written: &HashMap<String, Written>, pods: &[Arc<CachedPod>]) -> Vec<String> {
    let mut stale: Vec<String> = written
        .iter()
        .filter(|(name, w)| {
            pods.iter().any(|p| {
                p.metadata.name.as_deref() == Some(name.as_str())
                    && p.metadata.uid.as_deref() == Some(w.pod_uid.as_str())
                    && p.role != w.role
            })
        })
        .map(|(name, _)| name.clone())
        .collect();
    stale.sort();
    stale
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cached(name: &str, uid: &str, role: Option<&str>) -> Arc<CachedPod> {
        let mut labels = serde_json::Map::new();
        if let Some(role) = role {
            labels.insert(api::pods::ROLE_LABEL.to_owned(), json!(role));
        }
        Arc::new(crate::cached::pod(json!({
            "metadata": {"name": name, "uid": uid, "labels": labels},
        })))
    }

    fn written(uid: &str, role: Option<&str>) -> Written {
        Written {
            pod_uid: uid.to_owned(),
            role: role.map(str::to_owned),
        }
    }

    #[test]
    fn a_promotion_the_cache_has_not_seen_yet_is_read_from_the_api_server() {
        // The last pass moved the primary label from r-0 to r-1; the cache still shows before.
        let writes = LabelWrites::default();
        writes.record("redis", "r-0", written("u0", None));
        writes.record("redis", "r-1", written("u1", Some("primary")));
        let before = [
            cached("r-0", "u0", Some("primary")),
            cached("r-1", "u1", Some("replica")),
            cached("r-2", "u2", Some("replica")),
        ];
        assert_eq!(writes.unseen("redis", &before), ["r-0", "r-1"]);
        // Half seen: only the other one is still read directly.
        let half = [
            cached("r-0", "u0", None),
            cached("r-1", "u1", Some("replica")),
            cached("r-2", "u2", Some("replica")),
        ];
        assert_eq!(writes.unseen("redis", &half), ["r-1"]);
        // Seen: nothing left to wait for, and nothing remembered.
        let after = [
            cached("r-0", "u0", None),
            cached("r-1", "u1", Some("primary")),
            cached("r-2", "u2", Some("replica")),
        ];
        assert!(writes.unseen("redis", &after).is_empty());
        assert!(writes.unseen("redis", &before).is_empty());
    }

    #[test]
    fn a_write_to_a_pod_since_replaced_or_gone_is_not_waited_for() {
        let writes = LabelWrites::default();
        writes.record("redis", "r-0", written("u0", Some("primary")));
        writes.record("redis", "r-1", written("u1", Some("replica")));
        let replaced = [cached("r-0", "u0-new", None)];
        assert!(writes.unseen("redis", &replaced).is_empty());
        assert!(
            writes
                .unseen("redis", &[cached("r-1", "u1", None)])
                .is_empty(),
            "forgotten with its pod"
        );
    }

    #[test]
    fn a_direct_read_settles_the_write_whatever_it_showed() {
        let writes = LabelWrites::default();
        writes.record("redis", "r-1", written("u1", Some("primary")));
        let stale = [cached("r-1", "u1", None)];
        assert_eq!(writes.unseen("redis", &stale), ["r-1"]);
        writes.settled("redis", &["r-1".to_owned()]);
        assert!(writes.unseen("redis", &stale).is_empty());
        // Other Redis are not mixed in.
        writes.record("other", "r-1", written("u1", Some("primary")));
        assert!(writes.unseen("redis", &stale).is_empty());
        assert_eq!(writes.unseen("other", &stale), ["r-1"]);
    }
}
