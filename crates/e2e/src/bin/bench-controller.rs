//! `make bench-controller` (DESIGN §8): how long redis-controller takes to converge N Redis x 3
//! pods on the local test bed, how many API writes it makes for that (from the bed's audit
//! log, as a ratio to the minimum), how many it makes during an idle minute (should be 0), its
//! peak RSS, and, as the API server's own speed limit, the time a bare loop of pod creates takes
//! to get the same pods Ready. It prints figures and asserts nothing.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use api::{Redis, RedisSpec};
use clap::Parser;
use e2e::operator::{
    Controller, ControllerIdentity, PROFILE_ENV, Process, Webhook, workspace_binary,
};
use e2e::{Cluster, Context, Error, NamespaceOptions, seen, wait_for};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

/// The verbs that write (the bed's audit policy logs only these).
const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];
/// How long deleting a namespace (and the controller's cleanup in it) may take.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Parser, Debug)]
#[command(
    name = "bench-controller",
    about = "Time and API writes for redis-controller to converge N Redis x replicas pods on the \
             local test bed, writes during an idle period, controller peak RSS, and a bare loop \
             of pod creates as the reference. Prints figures; asserts nothing."
)]
struct Args {
    /// Redis objects to create.
    #[arg(long, default_value_t = 100)]
    count: usize,

    /// Pods per Redis (spec.replicas).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=100))]
    replicas: i32,

    /// Concurrent creators: of the Redis objects, and of the pods in the bare loop.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    creators: u16,

    /// Seconds to stay idle after convergence, counting the controller's writes.
    #[arg(long, default_value_t = 60)]
    idle: u64,

    /// Seconds after everything is Ready during which late writes still count to the run.
    #[arg(long, default_value_t = 5)]
    settle: u64,

    /// Seconds to wait for everything to be Ready before giving up on a run.
    #[arg(long, default_value_t = 600)]
    timeout: u64,

    /// Skip the bare-loop reference run.
    #[arg(long)]
    no_bare: bool,

    /// Extra argument for redis-controller (repeatable), e.g. `--controller-arg=--concurrency=16`.
    #[arg(long = "controller-arg", allow_hyphen_values = true)]
    controller_args: Vec<String>,

    /// Build profile of the operator binaries (target/<profile>/redis-controller, redis-webhook).
    #[arg(long, env = PROFILE_ENV, default_value = "release", value_parser = ["release", "debug"])]
    profile: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // The harness finds the binaries through E2E_PROFILE; a process cannot safely change its
    // own environment, so run again with it set.
    if std::env::var(PROFILE_ENV).ok().as_deref() != Some(args.profile.as_str()) {
        return run_again_with_profile(&args.profile);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("bench-controller: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        tokio::select! {
            outcome = bench(&args) => outcome,
            _ = tokio::signal::ctrl_c() => Err(failure("bench-controller", "interrupted")),
        }
    });
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("bench-controller: incomplete: not everything became Ready in time");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("bench-controller: {e:?}");
            ExitCode::FAILURE
        }
    }
}

fn run_again_with_profile(profile: &str) -> ExitCode {
    let status = std::env::current_exe().and_then(|exe| {
        Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(PROFILE_ENV, profile)
            .status()
    });
    match status {
        Ok(status) => status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .map_or(ExitCode::FAILURE, ExitCode::from),
        Err(e) => {
            eprintln!("bench-controller: cannot run again with {PROFILE_ENV}={profile}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn failure(what: impl Into<String>, reason: impl ToString) -> Error {
    Error::Process {
        what: what.into(),
        reason: reason.to_string(),
    }
}

fn progress(message: impl std::fmt::Display) {
    eprintln!("bench: {message}");
}

/// Runs everything; Ok(false) when a run did not converge in time (figures still printed).
async fn bench(args: &Args) -> Result<bool, Error> {
    let cluster = Cluster::connect().await?;
    let audit = if cluster.is_local_bed() {
        Some(AuditLog::new(
            e2e::repo_root().join(".cluster").join("audit.log"),
        ))
    } else {
        progress("not the local test bed (KUBECONFIG is set): no audit log, so no write counts");
        None
    };
    let controller_binary = workspace_binary("redis-controller")?;
    let webhook_binary = workspace_binary("redis-webhook")?;
    let version = cluster.server_version();
    println!("== bench-controller ==");
    println!(
        "cluster: {} (Kubernetes {}), {} CPUs, load average {}",
        cluster.config().cluster_url,
        version.git_version,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!(
        "binaries: {} ({} bytes), {}",
        controller_binary.display(),
        file_size(&controller_binary),
        webhook_binary.display()
    );
    println!(
        "workload: {} Redis x {} pods, {} concurrent creators; controller args: {:?}",
        args.count, args.replicas, args.creators, args.controller_args
    );

    let operator_time = operator_run(&cluster, audit.as_ref(), args).await?;
    let mut complete = operator_time.is_some();
    if args.no_bare {
        return Ok(complete);
    }
    let bare_time = bare_run(&cluster, args).await?;
    complete &= bare_time.is_some();
    println!();
    println!("== summary ==");
    match (operator_time, bare_time) {
        (Some(operator), Some(bare)) => println!(
            "time to Ready: operator {} vs bare loop {}: ratio operator/bare {:.2}",
            secs(operator),
            secs(bare),
            operator.as_secs_f64() / bare.as_secs_f64().max(1e-9)
        ),
        _ => println!("time to Ready: no ratio, a run did not converge"),
    }
    Ok(complete)
}

/// The operator's run; the time until all Redis were Ready (None: not within the timeout).
async fn operator_run(
    cluster: &Cluster,
    audit: Option<&AuditLog>,
    args: &Args,
) -> Result<Option<Duration>, Error> {
    e2e::install_redis_crd(&cluster.client()).await?;
    let ns = cluster
        .namespace_with(
            "bench-ctl",
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let audit_offset = audit.map(AuditLog::len);
    progress(format!("starting the operator for namespace {}", ns.name()));
    let webhook = Webhook::start(cluster, &ns, &[]).await?;
    let identity = ControllerIdentity::create(cluster, &ns).await?;
    let controller_args: Vec<&str> = args.controller_args.iter().map(String::as_str).collect();
    let mut controller =
        Controller::start(&ns, &identity, "redis-controller", &controller_args).await?;
    controller.wait_ready(Duration::from_secs(60)).await?;
    // Declared after the controller, so dropped before it: on an early return the namespace is
    // deleted while the controller still runs to remove its finalizers.
    let mut drain = Drain::new(cluster, ns.name());
    let user = identity.username.clone();

    let redis_api: Api<Redis> = ns.api();
    let replicas = args.replicas;
    let mut tracker =
        Tracker::start(redis_api.clone(), move |r: &Redis| redis_ready(r, replicas)).await?;
    let objects: Vec<Redis> = (0..args.count)
        .map(|i| {
            Redis::new(
                &format!("bench-{i:04}"),
                RedisSpec {
                    replicas: Some(args.replicas),
                    ..RedisSpec::default()
                },
            )
        })
        .collect();
    let cpu_before = cpu_seconds(controller.process.pid());

    println!();
    println!(
        "== operator: {} Redis x {} pods in {} ==",
        args.count,
        args.replicas,
        ns.name()
    );
    let start_wall = Timestamp::now();
    let start = Instant::now();
    let created = create_all(&redis_api, objects, usize::from(args.creators)).await?;
    println!(
        "created {} Redis in {} ({} retries)",
        created.at.len(),
        secs(created.done - start),
        created.retries
    );
    let converged = tracker
        .wait(args.count, Duration::from_secs(args.timeout))
        .await;
    let ready_time = match converged {
        Ok(last) => {
            let time = last - start;
            println!(
                "all Ready (status.readyReplicas={} and condition Ready=True) after {}",
                args.replicas,
                secs(time)
            );
            Some(time)
        }
        Err(ready) => {
            println!(
                "NOT converged: {ready}/{} Redis Ready after {}s",
                args.count, args.timeout
            );
            None
        }
    };
    println!(
        "per Redis, from its create to Ready: {}",
        percentiles(&tracker.latencies(&created.at))
    );
    let ready_wall = Timestamp::now();
    tokio::time::sleep(Duration::from_secs(args.settle)).await;
    let settled_wall = Timestamp::now();
    let cpu_run = cpu_seconds(controller.process.pid());

    if let (Some(audit), Some(offset)) = (audit, audit_offset) {
        let events = audit.read(offset, ns.name())?;
        let mine: Vec<&AuditEvent> = events.iter().filter(|e| e.user == user).collect();
        let before: Vec<_> = mine.iter().filter(|e| e.at < start_wall).collect();
        if !before.is_empty() {
            println!(
                "controller writes before the first create: {}",
                before.len()
            );
        }
        let run: Vec<&AuditEvent> = mine
            .iter()
            .copied()
            .filter(|e| e.at >= start_wall && e.at < settled_wall)
            .collect();
        report_run_writes(&run, args, ready_wall);
        report_stages(&events, &user);
        report_busiest(&events, &run, &user);
    }
    if let (Some(before), Some(after)) = (cpu_before, cpu_run) {
        println!(
            "controller CPU time during the run: {:.2} s",
            after - before
        );
    }
    print_metrics(&controller).await;

    println!();
    println!("== idle {} s ==", args.idle);
    progress(format!("idle for {} s", args.idle));
    tokio::time::sleep(Duration::from_secs(args.idle)).await;
    let idle_end_wall = Timestamp::now();
    let cpu_idle = cpu_seconds(controller.process.pid());
    if let (Some(audit), Some(offset)) = (audit, audit_offset) {
        let events = audit.read(offset, ns.name())?;
        let idle: Vec<&AuditEvent> = events
            .iter()
            .filter(|e| e.user == user && e.at >= settled_wall && e.at < idle_end_wall)
            .collect();
        println!(
            "controller writes during the idle {} s: {}",
            args.idle,
            idle.len()
        );
        for event in idle.iter().take(50) {
            println!("  {}", event.describe(&settled_wall, &user));
        }
    }
    if let (Some(before), Some(after)) = (cpu_run, cpu_idle) {
        println!("controller CPU time while idle: {:.2} s", after - before);
    }
    print_metrics(&controller).await;
    println!();
    println!("== memory ==");
    println!(
        "redis-controller: {}",
        memory(&controller.process).unwrap_or_else(|| "unknown".into())
    );
    println!(
        "redis-webhook: {}",
        memory(&webhook.process).unwrap_or_else(|| "unknown".into())
    );

    progress(format!(
        "deleting namespace {} (the controller removes its pods and finalizers)",
        ns.name()
    ));
    let teardown_wall = Timestamp::now();
    let teardown = drain.run().await;
    match teardown {
        Ok(time) => println!(
            "teardown: namespace with {} Redis deleted in {}",
            args.count,
            secs(time)
        ),
        Err(e) => println!("teardown: {e:?}"),
    }
    if let (Some(audit), Some(offset)) = (audit, audit_offset) {
        let events = audit.read(offset, ns.name())?;
        let down: Vec<&AuditEvent> = events
            .iter()
            .filter(|e| e.user == user && e.at >= teardown_wall)
            .collect();
        println!(
            "controller writes during teardown: {} ({})",
            down.len(),
            by_key(&down, |e| format!(
                "{} {} -> {}",
                e.verb, e.resource, e.code
            ))
        );
    }
    drop(drain);
    drop(controller);
    drop(identity);
    drop(webhook);
    drop(ns);
    Ok(ready_time)
}

/// The reference: the same pods, created by a bare loop with the same concurrency.
async fn bare_run(cluster: &Cluster, args: &Args) -> Result<Option<Duration>, Error> {
    let ns = cluster
        .namespace_with(
            "bench-bare",
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let mut drain = Drain::new(cluster, ns.name());
    let pods_api: Api<Pod> = ns.api();
    let total = args.count * usize::try_from(args.replicas).unwrap_or(0);
    let spec = RedisSpec {
        replicas: Some(args.replicas),
        ..RedisSpec::default()
    }
    .with_defaults();
    let pod_spec = controller::pod::pod_spec(&spec);
    let hash = controller::pod::spec_hash(&pod_spec);
    let objects: Vec<Pod> = (0..args.count)
        .flat_map(|i| (0..args.replicas).map(move |o| (i, o)))
        .map(|(i, o)| {
            let group = format!("bare-{i:04}");
            Pod {
                metadata: ObjectMeta {
                    name: Some(format!("{group}-{o}")),
                    labels: Some(api::pods::pod_labels(&group)),
                    annotations: Some(BTreeMap::from([(
                        controller::pod::SPEC_HASH_ANNOTATION.to_owned(),
                        hash.clone(),
                    )])),
                    ..ObjectMeta::default()
                },
                spec: Some(pod_spec.clone()),
                status: None,
            }
        })
        .collect();
    let mut tracker = Tracker::start(pods_api.clone(), e2e::pods::is_ready).await?;

    println!();
    println!(
        "== bare loop: {total} pods ({} creators, pod creates only) in {} ==",
        args.creators,
        ns.name()
    );
    let start = Instant::now();
    let created = create_all(&pods_api, objects, usize::from(args.creators)).await?;
    println!(
        "created {} pods in {} ({} retries)",
        created.at.len(),
        secs(created.done - start),
        created.retries
    );
    let ready_time = match tracker.wait(total, Duration::from_secs(args.timeout)).await {
        Ok(last) => {
            let time = last - start;
            println!("all pods Ready after {}", secs(time));
            Some(time)
        }
        Err(ready) => {
            println!(
                "NOT converged: {ready}/{total} pods Ready after {}s",
                args.timeout
            );
            None
        }
    };
    println!(
        "per pod, from its create to Ready: {}",
        percentiles(&tracker.latencies(&created.at))
    );
    progress(format!("deleting namespace {}", ns.name()));
    match drain.run().await {
        Ok(time) => println!(
            "teardown: namespace with {total} pods deleted in {}",
            secs(time)
        ),
        Err(e) => println!("teardown: {e:?}"),
    }
    drop(drain);
    drop(ns);
    Ok(ready_time)
}

fn redis_ready(redis: &Redis, replicas: i32) -> bool {
    let Some(status) = &redis.status else {
        return false;
    };
    status.replicas == replicas
        && status.ready_replicas == replicas
        && status.observed_generation == redis.metadata.generation
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

// ---------------------------------------------------------------------------------------------
// Creating and watching

struct Created {
    /// When each object's create returned.
    at: HashMap<String, Instant>,
    /// When the last create returned.
    done: Instant,
    retries: u32,
}

/// Creates `objects` with `creators` concurrent loops, retrying transient failures (429, 5xx,
/// transport errors); an object that already exists (a retried create that had worked) counts.
async fn create_all<K>(api: &Api<K>, objects: Vec<K>, creators: usize) -> Result<Created, Error>
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
        let (created, r) = joined.map_err(|e| failure("a creator loop", e))??;
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
struct Tracker {
    ready_at: Arc<Mutex<HashMap<String, Instant>>>,
    count: watch::Receiver<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Tracker {
    /// Starts watching; returns once the initial list is done.
    async fn start<K, F>(api: Api<K>, is_ready: F) -> Result<Self, Error>
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
                Err(failure(
                    "starting a watch",
                    "the initial list did not complete",
                ))
            }
        }
    }

    /// Waits until `expected` objects have been Ready: when the last one was seen Ready, or
    /// how many were Ready at the timeout.
    async fn wait(&mut self, expected: usize, timeout: Duration) -> Result<Instant, usize> {
        let reached = tokio::time::timeout(timeout, self.count.wait_for(|n| *n >= expected)).await;
        let map = self.ready_at.lock().unwrap_or_else(PoisonError::into_inner);
        match reached {
            Ok(Ok(_)) => map.values().max().copied().ok_or(0),
            _ => Err(map.len()),
        }
    }

    /// Create-to-Ready time of every object seen Ready.
    fn latencies(&self, created: &HashMap<String, Instant>) -> Vec<Duration> {
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
struct Drain {
    config: kube::Config,
    name: String,
    armed: bool,
}

impl Drain {
    fn new(cluster: &Cluster, name: &str) -> Self {
        Drain {
            config: cluster.config().clone(),
            name: name.to_owned(),
            armed: true,
        }
    }

    async fn run(&mut self) -> Result<Duration, Error> {
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
                .map_err(|e| failure("cleaning up", e))?;
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

async fn delete_namespace(config: kube::Config, name: String) -> Result<Duration, Error> {
    let client = kube::Client::try_from(config).map_err(|e| failure("a client", e))?;
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

// ---------------------------------------------------------------------------------------------
// The audit log

/// The test bed's audit log: one JSON event per write request (hack/cluster/audit-policy.yaml).
struct AuditLog {
    path: PathBuf,
}

/// One write request, as the audit log has it.
#[derive(Clone, Debug)]
struct AuditEvent {
    at: Timestamp,
    user: String,
    verb: String,
    /// `pods`, `redis`, `redis/status`, `events`, ...
    resource: String,
    name: String,
    code: i64,
}

impl AuditEvent {
    fn parse(line: &str, namespace: &str) -> Option<Self> {
        let event: Value = serde_json::from_str(line).ok()?;
        let object = &event["objectRef"];
        if event["stage"] != "ResponseComplete" || object["namespace"] != namespace {
            return None;
        }
        let verb = event["verb"].as_str()?;
        if !WRITE_VERBS.contains(&verb) {
            return None;
        }
        let mut resource = object["resource"].as_str().unwrap_or("?").to_owned();
        if let Some(sub) = object["subresource"].as_str() {
            resource = format!("{resource}/{sub}");
        }
        Some(AuditEvent {
            at: event["stageTimestamp"].as_str()?.parse().ok()?,
            user: event["user"]["username"].as_str()?.to_owned(),
            verb: verb.to_owned(),
            resource,
            name: object["name"].as_str().unwrap_or_default().to_owned(),
            code: event["responseStatus"]["code"].as_i64().unwrap_or(0),
        })
    }

    fn describe(&self, since: &Timestamp, controller_user: &str) -> String {
        let offset = self.at.duration_since(*since).as_secs_f64();
        let user = if self.user == controller_user {
            "redis-controller"
        } else {
            self.user.as_str()
        };
        format!(
            "{offset:+8.3}s  {user:<38} {:<7} {}/{} -> {}",
            self.verb, self.resource, self.name, self.code
        )
    }
}

impl AuditLog {
    fn new(path: PathBuf) -> Self {
        AuditLog { path }
    }

    /// Its current size: where events from now on start.
    fn len(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }

    /// Write events in `namespace` from `offset` on (complete lines only).
    fn read(&self, offset: u64, namespace: &str) -> Result<Vec<AuditEvent>, Error> {
        let what = || format!("reading {}", self.path.display());
        let mut file = std::fs::File::open(&self.path).map_err(|e| failure(what(), e))?;
        // A log rotated or truncated since: read it from its start.
        let start = if file.metadata().map_or(0, |m| m.len()) < offset {
            0
        } else {
            offset
        };
        file.seek(SeekFrom::Start(start))
            .map_err(|e| failure(what(), e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| failure(what(), e))?;
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        Ok(String::from_utf8_lossy(&bytes[..complete])
            .lines()
            .filter_map(|line| AuditEvent::parse(line, namespace))
            .collect())
    }
}

fn by_key(events: &[&AuditEvent], key: impl Fn(&AuditEvent) -> String) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for event in events {
        *counts.entry(key(event)).or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The controller's writes during the run: by resource and verb, against the minimum.
fn report_run_writes(run: &[&AuditEvent], args: &Args, ready_wall: Timestamp) {
    let verbs: Vec<&str> = WRITE_VERBS
        .iter()
        .copied()
        .filter(|v| run.iter().any(|e| e.verb == *v))
        .collect();
    let mut table: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for event in run {
        *table
            .entry(event.resource.as_str())
            .or_default()
            .entry(event.verb.as_str())
            .or_default() += 1;
    }
    println!(
        "controller writes during the run (first create to all Ready + {} s): {}",
        args.settle,
        run.len()
    );
    let mut header = format!("  {:<16}", "resource");
    for verb in &verbs {
        header.push_str(&format!("{verb:>8}"));
    }
    println!("{header}{:>8}", "total");
    for (resource, row) in &table {
        let mut line = format!("  {resource:<16}");
        for verb in &verbs {
            line.push_str(&format!("{:>8}", row.get(verb).copied().unwrap_or(0)));
        }
        println!("{line}{:>8}", row.values().sum::<usize>());
    }
    println!("  by verb: {}", by_key(run, |e| e.verb.clone()));
    let failed: Vec<&AuditEvent> = run
        .iter()
        .copied()
        .filter(|e| !(200..300).contains(&e.code))
        .collect();
    if !failed.is_empty() {
        println!(
            "  refused or failed: {} ({})",
            failed.len(),
            by_key(&failed, |e| format!("{} {} {}", e.code, e.verb, e.resource))
        );
    }

    let replicas = usize::try_from(args.replicas).unwrap_or(0);
    // Per Redis: its pods, the finalizer, one status write, and one apply each of its Service
    // and its PodDisruptionBudget.
    let minimum = args.count * (replicas + 4);
    let events = run.iter().filter(|e| e.resource == "events").count();
    println!(
        "minimum: {minimum} = {} x ({replicas} pod creates + 1 finalizer write + 1 status write \
         + 1 Service + 1 PodDisruptionBudget apply)",
        args.count
    );
    println!(
        "ratio to minimum: {:.2} ({:.2} without the {events} Event writes)",
        run.len() as f64 / minimum.max(1) as f64,
        (run.len() - events) as f64 / minimum.max(1) as f64
    );
    let per_redis = |resource: &str| {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for event in run.iter().filter(|e| e.resource == resource) {
            *counts.entry(event.name.as_str()).or_default() += 1;
        }
        let mut histogram: BTreeMap<usize, usize> = BTreeMap::new();
        for n in counts.values() {
            *histogram.entry(*n).or_default() += 1;
        }
        let untouched = args.count.saturating_sub(counts.len());
        if untouched > 0 {
            *histogram.entry(0).or_default() += untouched;
        }
        let total: usize = counts.values().sum();
        format!(
            "mean {:.2}; Redis by count: {}",
            total as f64 / args.count.max(1) as f64,
            histogram
                .iter()
                .map(|(n, redis)| format!("{n} writes: {redis}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    println!("status writes per Redis: {}", per_redis("redis/status"));
    println!(
        "writes of the Redis object itself (finalizer) per Redis: {}",
        per_redis("redis")
    );
    let late: Vec<&AuditEvent> = run.iter().copied().filter(|e| e.at >= ready_wall).collect();
    println!(
        "of which after all were Ready: {}{}",
        late.len(),
        if late.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                by_key(&late, |e| format!("{} {}", e.verb, e.resource))
            )
        }
    );
}

/// Where each Redis's time to Ready goes: from its create to the controller's first write
/// (the finalizer: its first reconcile), from there to its first pod create (the next
/// reconcile), and from there to the last status write (pods Ready, status written).
fn report_stages(events: &[AuditEvent], user: &str) {
    let mut created: HashMap<&str, Timestamp> = HashMap::new();
    let mut finalizer: HashMap<&str, Timestamp> = HashMap::new();
    let mut first_pod: HashMap<&str, Timestamp> = HashMap::new();
    let mut last_status: HashMap<&str, Timestamp> = HashMap::new();
    for event in events.iter().filter(|e| (200..300).contains(&e.code)) {
        let name = event.name.as_str();
        match (event.resource.as_str(), event.verb.as_str()) {
            ("redis", "create") => {
                created.entry(name).or_insert(event.at);
            }
            ("redis", _) if event.user == user => {
                finalizer.entry(name).or_insert(event.at);
            }
            ("pods", "create") if event.user == user => {
                let redis = name.rsplit_once('-').map_or(name, |(r, _)| r);
                first_pod.entry(redis).or_insert(event.at);
            }
            ("redis/status", _) if event.user == user => {
                last_status.insert(name, event.at);
            }
            _ => {}
        }
    }
    let stage = |from: &HashMap<&str, Timestamp>, to: &HashMap<&str, Timestamp>| {
        let gaps: Vec<Duration> = from
            .iter()
            .filter_map(|(name, start)| {
                let end = to.get(name)?;
                Duration::try_from(end.duration_since(*start)).ok()
            })
            .collect();
        percentiles(&gaps)
    };
    println!("per Redis, where the time goes:");
    println!(
        "  create -> finalizer write (1st reconcile):     {}",
        stage(&created, &finalizer)
    );
    println!(
        "  finalizer write -> first pod create (2nd):     {}",
        stage(&finalizer, &first_pod)
    );
    println!(
        "  first pod create -> last status write (Ready): {}",
        stage(&first_pod, &last_status)
    );
}

/// Evidence: every write about the Redis that got the most status writes, by anyone.
fn report_busiest(events: &[AuditEvent], run: &[&AuditEvent], user: &str) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for event in run.iter().filter(|e| e.resource == "redis/status") {
        *counts.entry(event.name.as_str()).or_default() += 1;
    }
    let Some((name, n)) = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
    else {
        return;
    };
    let pod_prefix = format!("{name}-");
    let event_prefix = format!("{name}.");
    let about: Vec<&AuditEvent> = events
        .iter()
        .filter(|e| {
            e.name == name
                || (e.resource.starts_with("pods") && e.name.starts_with(&pod_prefix))
                || (e.resource == "events" && e.name.starts_with(&event_prefix))
        })
        .collect();
    let Some(created) = about
        .iter()
        .find(|e| e.resource == "redis" && e.verb == "create")
        .map(|e| e.at)
    else {
        return;
    };
    println!("writes about {name} ({n} status writes, the most), by anyone, from its create:");
    for event in about.iter().take(80) {
        println!("  {}", event.describe(&created, user));
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

async fn print_metrics(controller: &Controller) {
    let mut figures = Vec::new();
    for name in [
        "redis_controller_reconciles_total",
        "redis_controller_pods_created_total",
        "redis_controller_status_writes_total",
    ] {
        match controller.metric(name).await {
            Ok(value) => figures.push(format!(
                "{} {value}",
                name.trim_start_matches("redis_controller_")
            )),
            Err(e) => figures.push(format!("{name}: {e}")),
        }
    }
    println!("controller /metrics: {}", figures.join(", "));
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn percentiles(values: &[Duration]) -> String {
    if values.is_empty() {
        return "none".into();
    }
    let mut sorted = values.to_vec();
    sorted.sort();
    let at = |p: f64| {
        let index = ((sorted.len() - 1) as f64 * p).round() as usize;
        secs(sorted[index.min(sorted.len() - 1)])
    };
    format!(
        "p50 {}, p90 {}, p99 {}, max {} (n={})",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0),
        sorted.len()
    )
}

/// Peak and current resident memory of a process (VmHWM, VmRSS), from /proc.
fn memory(process: &Process) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", process.pid())).ok()?;
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| format!("{:.1} MiB", kb / 1024.0))
    };
    Some(format!(
        "peak RSS (VmHWM) {}, RSS now (VmRSS) {}",
        field("VmHWM:")?,
        field("VmRSS:")?
    ))
}

/// User + system CPU time of a process so far, in seconds (USER_HZ = 100 on Linux).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}
