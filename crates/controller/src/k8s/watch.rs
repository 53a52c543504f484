//! The one cached watch: a watch stream reflected into a store, and the objects it touches sent
//! on as a trigger stream for kube-runtime's Controller (deletions included). Every cache of the
//! controller is made here (pods, Services, PodDisruptionBudgets, claims, Secret metadata).

use crate::Error;
use futures::{Stream, StreamExt, future};
use kube::Resource;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
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
/// objects) into a new store, in a task of its own; the objects it touches come out of
/// [`Cached::events`]. `what` names the watch in logs and errors.
pub fn cached<K, S>(stream: S, what: &'static str) -> Cached<K>
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Hash + Eq + Clone + Send + Sync,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<K>();
    let task = stream
        .reflect(writer)
        .touched_objects()
        .for_each(move |obj| {
            match obj {
                // The Controller may have stopped; then nobody needs the trigger.
                Ok(obj) => drop(tx.send(obj)),
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
