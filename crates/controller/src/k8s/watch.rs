//! The one cached watch: a watch stream reflected into a store, and the objects it touches sent
//! on as a trigger stream for kube-runtime's Controller (deletions included). Every cache of the
//! controller is made here (pods, Services, PodDisruptionBudgets, claims, Secret metadata).

use crate::Error;
use futures::{Stream, StreamExt, future};
use kube::Resource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use std::fmt::Debug;
use std::hash::Hash;

/// The objects a watch touched, as the Controller's trigger streams take them.
pub type Events<K> = futures::stream::BoxStream<'static, Result<K, watcher::Error>>;

/// A running cached watch: its store, its trigger stream and the task that drives it.
pub struct Cached<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    pub store: Store<K>,
    pub events: Events<K>,
    pub task: tokio::task::JoinHandle<()>,
    what: &'static str,
}

/// Reflects `stream` (a `watcher`, with its backoff and whatever `modify`/`map_ok` trims the
/// objects) into a new store, in a task of its own; every object it touches comes out of
/// [`Cached::events`]. `what` names the watch in logs and errors.
pub fn cached<K, S>(stream: S, what: &'static str) -> Cached<K>
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Hash + Eq + Clone + Send + Sync,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    cached_waking(stream, what, |_, _| true)
}

/// As [`cached`], but an object wakes its Redis only when it was deleted or differs from the
/// cached copy in more than its resourceVersion, as the stream's `modify` left it. For the
/// children: their status updates, stripped before the cache (a PodDisruptionBudget's counts
/// move with every pod's readiness), were a pass each with nothing to do.
pub fn cached_on_change<K, S>(stream: S, what: &'static str) -> Cached<K>
where
    K: Resource + Clone + Debug + PartialEq + Send + Sync + 'static,
    K::DynamicType: Default + Hash + Eq + Clone + Send + Sync,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    cached_waking(stream, what, |old, new| {
        old.is_none_or(|old| !same_but_version(old, new))
    })
}

/// Whether two copies of an object differ in nothing but their resourceVersion.
fn same_but_version<K: Resource + Clone + PartialEq>(old: &K, new: &K) -> bool {
    let mut old = old.clone();
    old.meta_mut()
        .resource_version
        .clone_from(&new.meta().resource_version);
    old == *new
}

/// The store, and the objects `wakes` (given the cached copy, if any, and the new one) passes
/// on; deletions always.
fn cached_waking<K, S>(
    stream: S,
    what: &'static str,
    wakes: fn(Option<&K>, &K) -> bool,
) -> Cached<K>
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Hash + Eq + Clone + Send + Sync,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    let mut writer = reflector::store::Writer::<K>::new(Default::default());
    let store = writer.as_reader();
    let cache = store.clone();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<K>();
    let task = stream.for_each(move |event| {
        match event {
            Ok(event) => {
                let woken = match &event {
                    watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => {
                        let cached = cache.get(&ObjectRef::from_obj(obj));
                        wakes(cached.as_deref(), obj).then(|| obj.clone())
                    }
                    watcher::Event::Delete(obj) => Some(obj.clone()),
                    watcher::Event::Init | watcher::Event::InitDone => None,
                };
                writer.apply_watcher_event(&event);
                // The Controller may have stopped; then nobody needs the trigger.
                if let Some(obj) = woken {
                    drop(tx.send(obj));
                }
            }
            Err(e) => tracing::warn!(error = %e, what, "watch error; retrying with backoff"),
        }
        future::ready(())
    });
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|obj| (Ok::<_, watcher::Error>(obj), rx))
    })
    .boxed();
    Cached {
        store,
        events,
        task: tokio::spawn(task),
        what,
    }
}

impl<K> Cached<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Hash + Eq + Clone,
{
    /// Waits until the store holds the first full list, so the first passes see what exists (a
    /// restarted controller creates no duplicates and rewrites nothing). The task is stopped
    /// when the watch ended before that.
    pub async fn ready(&self) -> Result<(), Error> {
        self.store.wait_until_ready().await.map_err(|source| {
            self.task.abort();
            Error::CacheNotSynced {
                what: self.what,
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;

    fn pdb(version: &str, max_unavailable: i32) -> PodDisruptionBudget {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "cache", "namespace": "ns", "resourceVersion": version},
            "spec": {"maxUnavailable": max_unavailable},
        }))
        .expect("pdb")
    }

    /// The events a watch of PodDisruptionBudgets (their status stripped, as the children's
    /// watch does) passes on: the first sight, a spec change and a deletion; not a status
    /// update, which the strip leaves as a new resourceVersion alone.
    #[tokio::test]
    async fn a_child_wakes_its_redis_on_a_change_or_a_deletion_not_on_its_status() {
        let events = vec![
            watcher::Event::Init,
            watcher::Event::InitApply(pdb("1", 1)),
            watcher::Event::InitDone,
            watcher::Event::Apply(pdb("2", 1)),
            watcher::Event::Apply(pdb("3", 1)),
            watcher::Event::Apply(pdb("4", 2)),
            watcher::Event::Delete(pdb("5", 2)),
        ];
        let stream = futures::stream::iter(events.into_iter().map(Ok));
        let mut cached = cached_on_change(stream, "PodDisruptionBudget");
        cached.ready().await.expect("ready");
        let mut woken = Vec::new();
        while woken.len() < 3 {
            let pdb = cached.events.next().await.expect("an event").expect("ok");
            woken.push(pdb.metadata.resource_version.unwrap_or_default());
        }
        assert_eq!(woken, ["1", "4", "5"]);
        cached.task.await.expect("the watch ends with its stream");
        assert!(cached.events.next().await.is_none(), "nothing else woke");
        assert!(cached.store.is_empty(), "the deletion reached the store");
    }
}
