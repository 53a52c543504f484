//! Creating objects concurrently, watching them become ready, deleting the namespace.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use e2e::bench::{progress, secs};
use e2e::{Cluster, Context, Error, seen, wait_for};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

/// How long deleting a namespace (and the controller's cleanup in it) may take.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(180);

pub(crate) struct Created {
    /// When each object's create returned.
    pub(crate) at: HashMap<String, Instant>,
    /// When the last create returned.
    pub(crate) done: Instant,
    pub(crate) retries: u32,
}

impl Created {
    /// `created <n> <what> in <time since start> (<n> retries)`.
    pub(crate) fn print(&self, what: &str, start: Instant) {
        println!(
            "created {} {what} in {} ({} retries)",
            self.at.len(),
            secs(self.done - start),
            self.retries
        );
    }
}

/// Creates `objects` with `creators` concurrent loops, retrying transient failures (429, 5xx,
/// transport errors); an object that already exists (a retried create that had worked) counts.
pub(crate) async fn create_all<K>(
    api: &Api<K>,
    objects: Vec<K>,
    creators: usize,
) -> Result<Created, Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let objects = Arc::new(objects);
    let next = Arc::new(AtomicUsize::new(0));
    let mut loops = JoinSet::new();
    for _ in 0..creators.max(1) {
        let (api, objects, next) = (api.clone(), objects.clone(), next.clone());
        loops.spawn(async move {
            let mut created = Vec::new();
            let mut retries = 0u32;
            let params = PostParams::default();
            loop {
                let Some(object) = objects.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return Ok((created, retries));
                };
                let name = object.name_any();
                let mut attempt = 0u32;
                loop {
                    match api.create(&params, object).await {
                        Ok(_) => break,
                        Err(kube::Error::Api(s)) if s.code == 409 && attempt > 0 => break,
                        Err(e) if attempt < 8 && transient(&e) => {
                            attempt += 1;
                            retries += 1;
                            tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                        }
                        Err(e) => return Err(e).context(format!("creating {name}")),
                    }
                }
                created.push((name, Instant::now()));
            }
        });
    }
    let mut at = HashMap::new();
    let mut retries = 0;
    while let Some(joined) = loops.join_next().await {
        let (created, r) = joined.map_err(|e| Error::process("a creator loop", e))??;
        at.extend(created);
        retries += r;
    }
    let done = at.values().max().copied().unwrap_or_else(Instant::now);
    Ok(Created { at, done, retries })
}

fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        _ => true,
    }
}

/// Watches a kind in one namespace and notes when each object is first seen ready.
pub(crate) struct Tracker {
    ready_at: Arc<Mutex<HashMap<String, Instant>>>,
    count: watch::Receiver<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Tracker {
    /// Starts watching; returns once the initial list is done.
    pub(crate) async fn start<K, F>(api: Api<K>, is_ready: F) -> Result<Self, Error>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
        K::DynamicType: Default,
        F: Fn(&K) -> bool + Send + 'static,
    {
        let ready_at = Arc::new(Mutex::new(HashMap::new()));
        let (count_tx, count) = watch::channel(0usize);
        let (init_tx, init_rx) = oneshot::channel::<()>();
        let map = ready_at.clone();
        let task = tokio::spawn(async move {
            let mut init_tx = Some(init_tx);
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = init_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object))
                        if is_ready(&object) =>
                    {
                        let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
                        map.entry(object.name_any()).or_insert_with(Instant::now);
                        count_tx.send_replace(map.len());
                    }
                    Ok(_) => {}
                    Err(e) => progress(format!("watch error (retrying): {e}")),
                }
            }
        });
        match tokio::time::timeout(Duration::from_secs(30), init_rx).await {
            Ok(Ok(())) => Ok(Tracker {
                ready_at,
                count,
                task,
            }),
            _ => {
                task.abort();
                Err(Error::process(
                    "starting a watch",
                    "the initial list did not complete",
                ))
            }
        }
    }

    /// Waits until `expected` objects have been Ready: when the last one was seen Ready, or
    /// how many were Ready at the timeout.
    pub(crate) async fn wait(
        &mut self,
        expected: usize,
        timeout: Duration,
    ) -> Result<Instant, usize> {
        let reached = tokio::time::timeout(timeout, self.count.wait_for(|n| *n >= expected)).await;
        let map = self.ready_at.lock().unwrap_or_else(PoisonError::into_inner);
        match reached {
            Ok(Ok(_)) => map.values().max().copied().ok_or(0),
            _ => Err(map.len()),
        }
    }

    /// Create-to-Ready time of every object seen Ready.
    pub(crate) fn latencies(&self, created: &HashMap<String, Instant>) -> Vec<Duration> {
        let map = self.ready_at.lock().unwrap_or_else(PoisonError::into_inner);
        map.iter()
            .filter_map(|(name, ready)| {
                created
                    .get(name)
                    .map(|c| ready.saturating_duration_since(*c))
            })
            .collect()
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Deletes a namespace and waits until it is gone. Dropped while armed (an error or an
/// interruption), it does so synchronously, so the controller, dropped after it, is still there
/// to remove its finalizers.
pub(crate) struct Drain {
    config: kube::Config,
    name: String,
    armed: bool,
}

impl Drain {
    pub(crate) fn new(cluster: &Cluster, name: &str) -> Self {
        Drain {
            config: cluster.config().clone(),
            name: name.to_owned(),
            armed: true,
        }
    }

    pub(crate) async fn run(&mut self) -> Result<Duration, Error> {
        self.armed = false;
        delete_namespace(self.config.clone(), self.name.clone()).await
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        progress(format!("cleaning up: deleting namespace {}", self.name));
        let (config, name) = (self.config.clone(), self.name.clone());
        let outcome = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::process("cleaning up", e))?;
            runtime.block_on(delete_namespace(config, name))
        })
        .join();
        match outcome {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => progress(format!("{e:?}")),
            Err(_) => progress("cleaning up panicked"),
        }
    }
}

/// Deletes every object of `api` and waits until none is left: for Redis, until the controller
/// has removed their pods and then their finalizers. Done before deleting the namespace, whose
/// deletion would also take the controller's ServiceAccount (its identity in the bench) and with
/// it the token it needs to remove the finalizers.
pub(crate) async fn delete_all<K>(api: &Api<K>, what: &str) -> Result<Duration, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let start = Instant::now();
    // One request deletes them all, and with a thousand Redis it can outlast the API server's
    // request timeout (the connection closes mid-way, some deleted and some not): then the wait
    // below asks again while one is left that is not being deleted.
    if let Err(e) = api
        .delete_collection(&DeleteParams::background(), &ListParams::default())
        .await
    {
        progress(format!(
            "deleting every {what}: {e}; asking again while waiting"
        ));
    }
    wait_for(
        &format!("every {what} to be gone"),
        TEARDOWN_TIMEOUT,
        || async {
            let left = api
                .list_metadata(&ListParams::default().limit(1))
                .await
                .map_err(seen)?;
            let undeleted = left
                .items
                .first()
                .is_some_and(|one| one.metadata.deletion_timestamp.is_none());
            if undeleted {
                let again = api
                    .delete_collection(&DeleteParams::background(), &ListParams::default())
                    .await;
                again.map_err(seen)?;
            }
            match left.items.first() {
                None => Ok(()),
                Some(one) => Err(format!(
                    "{} still there, {} among them",
                    left.metadata.remaining_item_count.unwrap_or(0) + 1,
                    one.metadata.name.as_deref().unwrap_or_default()
                )),
            }
        },
    )
    .await?;
    Ok(start.elapsed())
}

async fn delete_namespace(config: kube::Config, name: String) -> Result<Duration, Error> {
    let client = kube::Client::try_from(config).map_err(|e| Error::process("a client", e))?;
    let namespaces: Api<Namespace> = Api::all(client);
    let start = Instant::now();
    match namespaces.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(start.elapsed()),
        Err(e) => return Err(e).context(format!("deleting namespace {name}")),
    }
    wait_for(
        &format!("namespace {name} to be gone"),
        TEARDOWN_TIMEOUT,
        || async {
            match namespaces.get_opt(&name).await.map_err(seen)? {
                None => Ok(()),
                Some(ns) => Err(format!(
                    "still there: {:?}",
                    ns.status.and_then(|s| s.conditions).unwrap_or_default()
                )),
            }
        },
    )
    .await?;
    Ok(start.elapsed())
}
