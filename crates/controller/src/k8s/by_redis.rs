//! What the controller remembers of each Redis between passes, keyed by the Redis's uid: one
//! generic map, [`ByRedis`], that every feature keeps its memory in, and one way to forget a
//! Redis from all of them ([`Remembers`]): on its finalizer's cleanup, and when it disappears
//! without one (the Redis watch's delete, or a sweep against the Redis cache after a re-list).
//!
//! A key is a Redis uid, or `<uid>/<part>` for a part of one Redis (an ACL user's password):
//! forgetting the uid forgets its parts too.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The map a [`ByRedis`] holds: key (a uid, or `<uid>/<part>`) to what is kept.
pub type Memory<K, T> = BTreeMap<K, T>;

/// One feature's memory of each Redis, by uid. In memory only: a new leader starts afresh.
/// Ordered, so a Redis's parts (`<uid>/...`) sit together and forgetting it is a range, not a
/// walk of every Redis (features forget a Redis on every pass where they are off for it).
#[derive(Debug)]
pub struct ByRedis<T> {
    by_uid: Mutex<BTreeMap<String, T>>,
}

impl<T> Default for ByRedis<T> {
    fn default() -> Self {
        ByRedis {
            by_uid: Mutex::default(),
        }
    }
}

impl<T> ByRedis<T> {
    /// The map itself, locked (a poisoned lock is taken over: the map is only a memory).
    pub fn lock(&self) -> MutexGuard<'_, BTreeMap<String, T>> {
        self.by_uid.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the Redis of `uid`, and its parts (`<uid>/...`).
    pub fn forget(&self, uid: &str) {
        let mut map = self.lock();
        map.remove(uid);
        let prefix = format!("{uid}/");
        let parts: Vec<String> = map
            .range(prefix.clone()..)
            .map(|(key, _)| key)
            .take_while(|key| key.starts_with(&prefix))
            .cloned()
            .collect();
        for key in parts {
            map.remove(&key);
        }
    }

    /// Forgets every Redis that `exists` says is gone.
    pub fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.lock().retain(|key, _| exists(redis_uid(key)));
    }
}

/// The Redis uid a key is kept under.
fn redis_uid(key: &str) -> &str {
    key.split_once('/').map_or(key, |(uid, _)| uid)
}

/// A feature's memory of each Redis, as the one place that forgets a Redis sees it.
pub trait Remembers {
    /// Forgets the Redis of `uid` (deleted).
    fn forget(&self, uid: &str);
    /// Forgets every Redis that `exists` says is gone (deleted while no finalizer ran).
    fn keep_only(&self, exists: &dyn Fn(&str) -> bool);
}

impl<T> Remembers for ByRedis<T> {
    fn forget(&self, uid: &str) {
        ByRedis::forget(self, uid);
    }

    fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        ByRedis::keep_only(self, exists);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_is_forgotten_with_its_parts_and_only_its_own() {
        let memory = ByRedis::<u8>::default();
        for key in [
            "u-1",
            "u-1/alice",
            "u-1/bob",
            "u-10",
            "u-10/carol",
            "u-2/bob",
        ] {
            memory.lock().insert(key.to_owned(), 1);
        }
        memory.forget("u-1");
        let mut left: Vec<String> = memory.lock().keys().cloned().collect();
        left.sort();
        assert_eq!(left, ["u-10", "u-10/carol", "u-2/bob"]);
        memory.keep_only(&|uid| uid == "u-2");
        let left: Vec<String> = memory.lock().keys().cloned().collect();
        assert_eq!(left, ["u-2/bob"]);
    }
}
