//! The replication offset each pod's redis-server was last read at (DESIGN §10): a server that
//! misses a read may hold everything up to there, and the failover must not promote below it
//! (`plan::election::unread_ahead`). By pod uid (a pod recreated under the same name starts
//! empty); the pods of a pass are all that is kept. In memory: a new leader starts without it,
//! as it starts without the failover clocks.

use crate::k8s::by_redis::ByRedis;
use std::collections::HashMap;

/// Last offsets by Redis uid, then pod uid.
#[derive(Default)]
pub struct LastOffsets {
    by_redis: ByRedis<HashMap<String, i64>>,
}

impl LastOffsets {
    /// Records what `pod_uid` of Redis `redis_uid` was read at.
    pub fn record(&self, redis_uid: &str, pod_uid: &str, offset: i64) {
        self.lock()
            .entry(redis_uid.to_owned())
            .or_default()
            .insert(pod_uid.to_owned(), offset);
    }

    /// The offset `pod_uid` of Redis `redis_uid` was last read at.
    pub fn last(&self, redis_uid: &str, pod_uid: &str) -> Option<i64> {
        self.lock().get(redis_uid)?.get(pod_uid).copied()
    }

    /// Keeps only the pods of `pod_uids` (the pods of this pass).
    pub fn retain(&self, redis_uid: &str, pod_uids: &[&str]) {
        if let Some(pods) = self.lock().get_mut(redis_uid) {
            pods.retain(|uid, _| pod_uids.contains(&uid.as_str()));
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
    ) -> std::sync::MutexGuard<'_, crate::k8s::by_redis::Memory<String, HashMap<String, i64>>> {
        self.by_redis.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::LastOffsets;

    #[test]
    fn the_last_read_is_kept_per_pod_and_pods_gone_are_forgotten() {
        let offsets = LastOffsets::default();
        offsets.record("r", "pod-a", 10);
        offsets.record("r", "pod-a", 15);
        offsets.record("r", "pod-b", 7);
        assert_eq!(offsets.last("r", "pod-a"), Some(15));
        offsets.retain("r", &["pod-b"]);
        assert_eq!(offsets.last("r", "pod-a"), None);
        assert_eq!(offsets.last("r", "pod-b"), Some(7));
        offsets.forget("r");
        assert_eq!(offsets.last("r", "pod-b"), None);
    }
}
