//! Wiring: watch caches, the kube-runtime Controller, leader election, the operations port; the
//! Redis watch also forgets what the features remember of a Redis that goes (`forget_gone`).

use crate::Error;
use crate::cached::CachedPod;
use crate::cli::Cli;
use crate::k8s::watch::Cached;
use crate::k8s::{FIELD_MANAGER, redis_watch, scoped, watch};
use crate::metrics::Metrics;
use crate::reconcile::{self, Context};
use api::{Redis, RedisBackup};
use futures::{FutureExt, StreamExt, TryStreamExt, future};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::utils::predicates;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, ResourceExt};
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How long a clean shutdown waits for reconciles in flight.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the controller until `shutdown` completes (Ok) or leadership is lost (Err).
pub async fn run(
    cli: Cli,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), Error> {
    let client = Client::try_default().await.map_err(Error::Config)?;
    // Fail early, and clearly, when the CRD is missing.
    let redis_api: Api<Redis> = scoped(&client, cli.namespace.as_deref());
    redis_api
        .list(&ListParams::default().limit(1))
        .await
        .map_err(|e| match e {
            kube::Error::Api(ref s) if s.code == 404 => Error::CrdMissing(e),
            e => Error::Kube(e),
        })?;

    let metrics = Arc::new(Metrics::default());
    let ready = Arc::new(AtomicBool::new(false));
    let ops = serve_operations(cli.ops_bind, metrics.clone(), ready.clone()).await?;

    let pods = watch_pods(&client, cli.namespace.as_deref()).await?;
    // The Services, PodDisruptionBudgets and NetworkPolicies, cached (filled before any reconcile, so a restart
    // re-applies none of them) and watched so one deleted or edited by hand is put back.
    let children = crate::children::watch(&client, cli.namespace.as_deref()).await?;
    // Secrets, metadata only: a changed Secret triggers the Redis objects naming it (rotation).
    let secrets = crate::auth::watch(&client, cli.namespace.as_deref()).await?;
    // Ready from here on, leader or warm standby (as controller-runtime managers are): a standby
    // that stayed unready would hold a rolling update forever and show every Deployment with
    // more than one replica as unavailable.
    ready.store(true, Ordering::SeqCst);

    let mut leadership = if cli.leader_elect {
        Some(crate::leader::acquire(&client, &cli).await?)
    } else {
        None
    };
    metrics.leader.set(1);

    let pod_store = pods.store.clone();
    let ctx = Context::new(
        client.clone(),
        pod_store,
        recorder(&client),
        metrics.clone(),
    )
    .with_backup_image(cli.backup_image.clone())
    .with_children(children.stores.clone())
    .with_operator_pods(cli.operator_pods(std::env::var("POD_NAMESPACE").ok()))
    .with_secrets(secrets.store);
    let ctx = Arc::new(ctx);
    let resource = redis_watch::resource();
    let (redis_watch, redis_store) = watch_redis(&client, cli.namespace.as_deref(), &ctx);
    let named_by = (redis_store.clone(), resource.clone());

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    // Backups (§3o): a controller of its own, beside the Redis one, reading the same caches.
    let backups = backup_context(&ctx, redis_store.clone());
    let controller = Controller::for_stream_with(redis_watch, redis_store, resource)
        .owns_stream(pods.events)
        .owns_stream(children.services)
        .owns_stream(children.pdbs)
        .owns_stream(children.network_policies)
        .watches_stream(children.claims, {
            let resource = redis_watch::resource();
            move |claim| crate::storage::redis_for_claim(&resource, &claim)
        })
        .watches_stream(secrets.events, move |secret| {
            crate::auth::redis_for_secret(&named_by.0, &named_by.1, &secret)
        })
        .with_config(
            ControllerConfig::default()
                .concurrency(cli.concurrency)
                .debounce(cli.debounce),
        )
        .graceful_shutdown_on(async move {
            let _ = stop_rx.await;
        })
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| logged(result, "reconcile error"));
    let (backup_stop_tx, backup_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let backup_stop = async move {
        let _ = backup_stop_rx.await;
    };
    let (backup_controller, schedules) = backup_controller(
        &client,
        cli.namespace.as_deref(),
        backups,
        cli.concurrency,
        backup_stop,
    )
    .await?;
    let controller = future::join(controller, backup_controller).map(|_| ());
    tracing::info!(
        namespace = cli.namespace.as_deref().unwrap_or("<all>"),
        "redis-controller running"
    );

    let mut controller = Box::pin(controller);
    let outcome = tokio::select! {
        () = &mut controller => Ok(()),
        () = shutdown => Ok(()),
        () = lost(&mut leadership) => Err(Error::LeadershipLost),
    };
    // Let reconciles in flight finish, then stop, and hand the lease over. The pod watch goes
    // first: the Controller drains only once its trigger streams end, and the pod trigger ends
    // when that task drops its sender.
    let _ = stop_tx.send(());
    let _ = backup_stop_tx.send(());
    schedules.iter().for_each(tokio::task::JoinHandle::abort);
    pods.task.abort();
    children.tasks.abort();
    secrets.task.abort();
    if outcome.is_ok() {
        drain(controller, leadership).await;
    }
    metrics.leader.set(0);
    ops.abort();
    outcome
}

/// What the backup controller reads: the Redis controller's client, recorder, metrics, pod
/// cache and restore image, and the Redis cache.
fn backup_context(
    ctx: &Context,
    redis: reflector::Store<DynamicObject>,
) -> crate::backup::controller::Context {
    crate::backup::controller::Context {
        client: ctx.client.clone(),
        recorder: ctx.recorder.clone(),
        metrics: ctx.metrics.clone(),
        pods: ctx.pods.clone(),
        redis,
        image: ctx.backup_image.clone(),
    }
}

/// The `RedisBackup` controller (its Jobs owned and watched) and the schedules' loop; without the
/// RedisBackup CRD (a chart upgraded without its new CRD) backups are off, said once, and the
/// Redis controller runs as before.
async fn backup_controller(
    client: &Client,
    namespace: Option<&str>,
    ctx: crate::backup::controller::Context,
    concurrency: u16,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<
    (
        futures::future::BoxFuture<'static, ()>,
        Option<tokio::task::JoinHandle<()>>,
    ),
    Error,
> {
    let backups: Api<RedisBackup> = scoped(client, namespace);
    match backups.list(&ListParams::default().limit(1)).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {
            tracing::warn!(
                "the RedisBackup CRD (redisbackups.myapp.tangx.in) is not installed: backups are off; apply deploy/crd.yaml to turn them on"
            );
            return Ok((Box::pin(future::ready(())), None));
        }
        Err(e) => return Err(Error::Kube(e)),
    }
    let jobs: Api<Job> = scoped(client, namespace);
    let ctx = Arc::new(ctx);
    let (backup_store, backup_writer) = reflector::store();
    let backup_watch = watcher(backups, watcher::Config::default())
        .default_backoff()
        .modify(crate::backup::controller::strip)
        .reflect(backup_writer)
        .applied_objects();
    let controller = Controller::for_stream(backup_watch, backup_store)
        .owns(
            jobs,
            watcher::Config::default().labels(&format!(
                "{}={},app.kubernetes.io/component=backup",
                api::pods::LABEL_MANAGED_BY,
                api::pods::MANAGED_BY
            )),
        )
        .with_config(ControllerConfig::default().concurrency(concurrency));
    let store = controller.store();
    let schedules = tokio::spawn(crate::backup::scheduler::run(ctx.clone(), store));
    let running = controller
        .graceful_shutdown_on(stop)
        .run(
            crate::backup::controller::reconcile,
            crate::backup::controller::error_policy,
            ctx,
        )
        .for_each(|result| logged(result, "backup reconcile error"));
    Ok((Box::pin(running), Some(schedules)))
}

/// The Redis watch's events, passed on after forgetting what the features remember of a Redis
/// deleted (its delete), or of every Redis gone from the cache after a re-list.
fn forget_gone(
    ctx: &Context,
    redis: &reflector::Store<DynamicObject>,
    event: watcher::Event<DynamicObject>,
) -> watcher::Event<DynamicObject> {
    match &event {
        watcher::Event::Delete(gone) => ctx.forget_deleted(gone),
        watcher::Event::InitDone => ctx.sweep(redis),
        _ => {}
    }
    event
}

/// The pod cache, filled before any reconcile, so the first plans see the pods that exist (a
/// restarted controller creates no duplicates and wastes no writes). Every pod it touches,
/// deletions included, triggers its Redis.
async fn watch_pods(client: &Client, namespace: Option<&str>) -> Result<Cached<CachedPod>, Error> {
    let pod_api: Api<Pod> = scoped(client, namespace);
    let pod_watch = watcher(
        pod_api,
        watcher::Config::default().labels(&api::pods::managed_pods_selector()),
    )
    .default_backoff()
    // The cache keeps only what the controller reads of a pod (`cached`): at 3,000 pods, full
    // Pods were most of the controller's memory.
    .map_ok(crate::cached::event);
    let pods = watch::cached(pod_watch, "Pod");
    pods.ready().await?;
    Ok(pods)
}

/// The Redis objects, watched untyped: the trigger stream of the Redis controller, the cache
/// it reads.
fn watch_redis(
    client: &Client,
    namespace: Option<&str>,
    ctx: &Arc<Context>,
) -> (
    impl futures::Stream<Item = Result<DynamicObject, watcher::Error>> + Send + use<>,
    reflector::Store<DynamicObject>,
) {
    // Untyped, so one stored object that does not decode cannot stop the watch of all the others
    // (see `k8s::redis_watch`); each object is decoded when it is reconciled.
    let resource = redis_watch::resource();
    let redis_untyped: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let redis_writer = reflector::store::Writer::<DynamicObject>::new(resource.clone());
    let redis_store = redis_writer.as_reader();
    let redis_watch = watcher(redis_untyped, watcher::Config::default())
        .default_backoff()
        .modify(redis_watch::strip)
        .reflect(redis_writer)
        // What the features remember of a Redis is forgotten when it goes, finalizer or not.
        .map_ok({
            let (ctx, redis) = (ctx.clone(), redis_store.clone());
            move |event| forget_gone(&ctx, &redis, event)
        })
        .applied_objects()
        // Our own status writes change neither of these, so they do not wake us.
        .predicate_filter(spec_or_lifecycle, Default::default());
    (redis_watch, redis_store)
}

/// Lets the reconciles in flight finish (for a while), then hands the lease over.
async fn drain(
    controller: impl Future<Output = ()>,
    leadership: Option<crate::leader::Leadership>,
) {
    if tokio::time::timeout(DRAIN_TIMEOUT, controller)
        .await
        .is_err()
    {
        tracing::warn!(timeout = ?DRAIN_TIMEOUT, "reconciles in flight did not finish in time");
    }
    if let Some(lease) = leadership {
        lease.release().await;
    }
}

/// The Events recorder: Events are reported under the name the controller's writes are
/// managed by.
fn recorder(client: &Client) -> Recorder {
    Recorder::new(
        client.clone(),
        Reporter {
            controller: FIELD_MANAGER.to_owned(),
            instance: instance_name(),
        },
    )
}

/// Logs a reconcile's error (the error policy already counted it and chose the retry).
fn logged<T, E: std::fmt::Display>(result: Result<T, E>, what: &str) -> future::Ready<()> {
    if let Err(e) = result {
        tracing::debug!(error = %e, "{what}");
    }
    future::ready(())
}

/// Completes when the lease is lost; never without leader election.
async fn lost(leadership: &mut Option<crate::leader::Leadership>) {
    match leadership {
        Some(lease) => lease.lost().await,
        None => future::pending::<()>().await,
    }
}

/// Changes that need a reconcile: the spec (generation), the finalizer or deletion state, and
/// pausing or resuming (an annotation, which moves no generation).
fn spec_or_lifecycle(redis: &DynamicObject) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    predicates::generation(redis).hash(&mut hasher);
    api::is_paused(&redis.metadata).hash(&mut hasher);
    redis.finalizers().hash(&mut hasher);
    redis
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// The reporting instance of Events: the pod name when in a cluster.
fn instance_name() -> Option<String> {
    std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
}

/// Binds the operations port and serves it in the background.
async fn serve_operations(
    addr: std::net::SocketAddr,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
) -> Result<tokio::task::JoinHandle<()>, Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Bind(addr, e))?;
    let not_ready = "not ready: the pod cache is syncing";
    let router = ops::operations_router(ready, not_ready, move || metrics.render());
    Ok(tokio::spawn(ops::serve_operations(
        listener,
        router,
        std::future::pending(),
    )))
}
