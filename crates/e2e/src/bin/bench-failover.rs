//! `make bench-failover`: how long writes stop when the primary is lost, and how many writes
//! that were acknowledged are lost, over N failovers; for redis-operator on the test bed's real
//! nodes (the primary's process, pod or whole node lost: `--kill`), and for the reference, a Redis Sentinel setup of Debian's `redis-sentinel` and
//! `redis-server` as processes on 127.0.0.1 with the same timeout.
//!
//! One writer per setup does `SET k<n> <n>` + `WAIT 1 1000` in a loop: a write is acknowledged
//! when a replica has it too. Time to writable: from the kill to the first acknowledged write
//! that started after the kill on a redis-server other than the killed one (its run_id). Lost:
//! acknowledged keys missing on the primary once replication is whole again. It prints figures
//! and asserts nothing.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use controller::redis_server::TlsClient;
use e2e::bench::{ProfileArg, load_average, progress, secs};
use e2e::certs::{TestCa, redis_dns_names};
use e2e::node::{self, NodeFault};
use e2e::operator::Operator;
use e2e::replicated::Replicated;
use e2e::{Cluster, Context, Error, NamespaceOptions, TestNamespace, seen, wait_for};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use redis::aio::MultiplexedConnection;

/// The Redis object of the operator part.
const NAME: &str = "bench";
const PORT: u16 = 6379;
/// The master name the sentinels monitor.
const MASTER: &str = "bench";
/// How long a setup may take to be replicating again (all members in place).
const CONVERGE: Duration = Duration::from_secs(180);
/// How long a round waits for the first acknowledged write after the kill.
const OUTAGE_LIMIT: Duration = Duration::from_secs(120);
/// The writer's pause after a failed write or connection attempt.
const RETRY: Duration = Duration::from_millis(20);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Above WAIT's own 1000 ms.
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(1500);

#[derive(Parser, Debug)]
#[command(
    name = "bench-failover",
    about = "Time from the loss of the primary to a new primary acknowledging writes, and \
             acknowledged writes lost, over N failovers: redis-operator on the local test bed vs \
             Redis Sentinel (Debian's redis-sentinel) on 127.0.0.1. Prints figures; asserts \
             nothing."
)]
struct Args {
    /// Failovers per setup.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,

    /// spec.replication.failoverAfter of the Redis, and the sentinels' down-after-milliseconds.
    #[arg(long, default_value = "5s")]
    failover_after: String,

    /// What is lost on the operator's side, one part each (comma-separated): the primary's
    /// redis-server (SIGKILL; kubelet restarts the container), its pod (deleted with grace
    /// period 0), or its whole node (hack/cluster/fault.sh: stopped, frozen or cut off; healed
    /// once another pod is primary).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "process")]
    kill: Vec<Kill>,

    /// Pause of the writer between two writes, in milliseconds.
    #[arg(long, default_value_t = 5)]
    write_interval_ms: u64,

    /// Serve the operator's Redis over TLS only (spec.tls, a CA of the benchmark's own): its
    /// replication, the operator and the writer speak TLS. The sentinel parts stay plaintext.
    #[arg(long)]
    tls: bool,

    /// Skip the operator part.
    #[arg(long)]
    no_operator: bool,

    /// Skip the sentinel parts.
    #[arg(long)]
    no_sentinel: bool,

    #[command(flatten)]
    profile: ProfileArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kill {
    Pod,
    Process,
    NodeStop,
    NodeFreeze,
    NodePartition,
}

impl Kill {
    fn describe(self) -> &'static str {
        match self {
            Kill::Process => "redis-server SIGKILLed (kubelet restarts it)",
            Kill::Pod => "pod deleted with grace period 0",
            Kill::NodeStop => "node stopped",
            Kill::NodeFreeze => "node frozen",
            Kill::NodePartition => "node cut off",
        }
    }

    fn node_fault(self) -> Option<NodeFault> {
        match self {
            Kill::NodeStop => Some(NodeFault::Stop),
            Kill::NodeFreeze => Some(NodeFault::Freeze),
            Kill::NodePartition => Some(NodeFault::Partition),
            Kill::Pod | Kill::Process => None,
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    e2e::bench::main("bench-failover", &args.profile, || async {
        bench(&args).await.map(|()| ExitCode::SUCCESS)
    })
}

async fn bench(args: &Args) -> Result<(), Error> {
    let failover_after = api::defaults::parse_duration(&args.failover_after)
        .map_err(|e| Error::process("--failover-after", e))?;
    println!("== bench-failover ==");
    println!(
        "{} CPUs, load average {}; {} rounds per setup, failover after {} (sentinel \
         down-after-milliseconds {}), writer: SET + WAIT 1 1000 every {} ms",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
        args.rounds,
        args.failover_after,
        failover_after.as_millis(),
        args.write_interval_ms
    );
    let mut parts = Vec::new();
    if !args.no_operator {
        for kill in &args.kill {
            match operator_part(args, *kill).await {
                Ok(part) => parts.push(part),
                Err(e) => println!("operator part ({}) failed: {e:?}", kill.describe()),
            }
        }
    }
    if !args.no_sentinel {
        for restart in [Restart::AtOnce, Restart::AfterFailover] {
            match sentinel_part(args, failover_after, restart).await {
                Ok(part) => parts.push(part),
                Err(e) => println!("sentinel part ({}) failed: {e:?}", restart.describe()),
            }
        }
    }
    println!();
    println!("== summary (load average now {}) ==", load_average());
    println!(
        "{:<72} {:>6} {:>10} {:>10} {:>14} {:>12}",
        "setup", "rounds", "median", "max", "acked lost", "refused"
    );
    for part in &parts {
        part.summary_row();
    }
    println!(
        "time to writable: from the kill to the first write acknowledged (SET + WAIT 1) by \
         another redis-server; refused: writes refused or failed during the outages"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Results

struct Round {
    victim: String,
    successor: String,
    writable: Option<Duration>,
    refused: usize,
    lost_now: usize,
    acked_so_far: usize,
}

struct Part {
    name: String,
    rounds: Vec<Round>,
    acked: usize,
    lost: usize,
    refused_total: usize,
}

impl Part {
    fn new(name: String) -> Self {
        println!();
        println!("== {name} ==");
        Part {
            name,
            rounds: Vec::new(),
            acked: 0,
            lost: 0,
            refused_total: 0,
        }
    }

    fn record(&mut self, round: Round) {
        println!(
            "round {:>2}: {} -> {}: writable after {}, {} writes refused/failed meanwhile, \
             acknowledged writes lost {} (of {} acknowledged so far)",
            self.rounds.len() + 1,
            round.victim,
            round.successor,
            round
                .writable
                .map_or_else(|| format!("NOT within {}", secs(OUTAGE_LIMIT)), secs),
            round.refused,
            round.lost_now,
            round.acked_so_far
        );
        self.rounds.push(round);
    }

    fn times(&self) -> Vec<Duration> {
        let mut times: Vec<Duration> = self.rounds.iter().filter_map(|r| r.writable).collect();
        times.sort();
        times
    }

    /// `rounds` failovers, each by `round` from the current primary and the acknowledged keys
    /// missing so far, a second apart, until one fails: the last primary, and the acknowledged
    /// keys missing on it.
    async fn run_rounds<P>(
        &mut self,
        rounds: u32,
        mut primary: P,
        mut round: impl AsyncFnMut(&P, &BTreeSet<u64>) -> Result<(Round, P, BTreeSet<u64>), Error>,
    ) -> (P, BTreeSet<u64>) {
        let mut missing_before = BTreeSet::new();
        for _ in 0..rounds {
            match round(&primary, &missing_before).await {
                Ok((done, next, missing_now)) => {
                    self.record(done);
                    primary = next;
                    missing_before = missing_now;
                }
                Err(e) => {
                    println!("round {}: {e:?}", self.rounds.len() + 1);
                    break;
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        (primary, missing_before)
    }

    /// The part's figures: `acked` writes acknowledged, of which `lost` missing on the last
    /// primary `on` (when it cannot be checked: the `missing_before` of the last round),
    /// `refused_total` writes refused or failed over the whole run.
    fn finish(
        &mut self,
        on: &str,
        acked: usize,
        lost: Result<usize, String>,
        missing_before: usize,
        refused_total: usize,
    ) {
        let lost = lost.unwrap_or_else(|e| {
            println!("final check on {on}: {e}");
            missing_before
        });
        self.acked = acked;
        self.lost = lost;
        self.refused_total = refused_total;
        let times = self.times();
        let refused: usize = self.rounds.iter().map(|r| r.refused).sum();
        println!(
            "{}: time to writable median {}, max {} ({} of {} rounds writable within {}); \
             acknowledged writes lost {lost} of {acked}; writes refused/failed during the \
             outages {refused} (all run: {refused_total})",
            self.name,
            median(&times).map_or_else(|| "-".into(), secs),
            times.last().copied().map_or_else(|| "-".into(), secs),
            times.len(),
            self.rounds.len(),
            secs(OUTAGE_LIMIT)
        );
    }

    fn summary_row(&self) {
        let times = self.times();
        let refused: usize = self.rounds.iter().map(|r| r.refused).sum();
        println!(
            "{:<72} {:>6} {:>10} {:>10} {:>14} {:>12}",
            self.name,
            self.rounds.len(),
            median(&times).map_or_else(|| "-".into(), secs),
            times.last().copied().map_or_else(|| "-".into(), secs),
            format!("{} / {}", self.lost, self.acked),
            refused
        );
    }
}

fn median(sorted: &[Duration]) -> Option<Duration> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2),
    }
}

// ---------------------------------------------------------------------------------------------
// Talking to redis-server

/// A connection to `host:port`; over TLS with `tls` (the controller's own client: the Redis's CA,
/// the name `<name>.<namespace>.svc` whatever the address).
async fn connect(
    host: &str,
    port: u16,
    tls: Option<&TlsClient>,
) -> Result<MultiplexedConnection, String> {
    if let Some(tls) = tls {
        let config =
            redis::AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
        let opened = async {
            let stream = tokio::net::TcpStream::connect((host, port))
                .await
                .map_err(|e| e.to_string())?;
            let stream = tls.handshake(stream).await.map_err(|e| e.to_string())?;
            let (con, driver) = MultiplexedConnection::new_with_config(
                &redis::RedisConnectionInfo::default(),
                stream,
                config,
            )
            .await
            .map_err(|e| e.to_string())?;
            // It ends when the last handle of the connection is dropped.
            tokio::spawn(driver);
            Ok::<_, String>(con)
        };
        return tokio::time::timeout(CONNECT_TIMEOUT, opened)
            .await
            .map_err(|_| format!("connecting to {host}:{port}: no TLS connection in time"))?
            .map_err(|e| format!("connecting to {host}:{port}: {e}"));
    }
    let client = redis::Client::open(format!("redis://{host}:{port}/"))
        .map_err(|e| format!("{host}:{port}: {e}"))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("connecting to {host}:{port}: {e}"))
}

/// A field of `INFO <section>`.
async fn info_field(
    con: &mut MultiplexedConnection,
    section: &str,
    field: &str,
) -> Result<String, String> {
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(con)
        .await
        .map_err(|e| format!("INFO {section}: {e}"))?;
    info.lines()
        .find_map(|l| l.trim().strip_prefix(field)?.strip_prefix(':'))
        .map(str::to_owned)
        .ok_or_else(|| format!("INFO {section} has no {field}"))
}

/// The run_id of the redis-server at host:port (new at each start).
async fn run_id(host: &str, port: u16, tls: Option<&TlsClient>) -> Result<String, String> {
    let mut con = connect(host, port, tls).await?;
    info_field(&mut con, "server", "run_id").await
}

/// The acknowledged keys that are not on host:port with their value.
async fn missing(
    host: &str,
    port: u16,
    tls: Option<&TlsClient>,
    keys: &[u64],
) -> Result<BTreeSet<u64>, String> {
    let mut con = connect(host, port, tls).await?;
    let mut missing = BTreeSet::new();
    for chunk in keys.chunks(1000) {
        let names: Vec<String> = chunk.iter().map(|n| format!("k{n}")).collect();
        let values: Vec<Option<u64>> = redis::cmd("MGET")
            .arg(&names)
            .query_async(&mut con)
            .await
            .map_err(|e| format!("MGET on {host}:{port}: {e}"))?;
        for (n, value) in chunk.iter().zip(values) {
            if value != Some(*n) {
                missing.insert(*n);
            }
        }
    }
    Ok(missing)
}

// ---------------------------------------------------------------------------------------------
// The writer

/// Where the writer writes.
#[derive(Clone, Debug)]
enum Target {
    /// One address: the `<name>` Service's ClusterIP, which follows the primary (over TLS with
    /// `tls`).
    Direct {
        host: String,
        port: u16,
        tls: Option<TlsClient>,
    },
    /// Ask the sentinels for the master (the first that answers), and check that it says it is
    /// one, as a sentinel-aware client does; ask again after any error.
    Sentinels { ports: Vec<u16> },
}

impl Target {
    /// A connection to where writes go, and the run_id of the redis-server behind it.
    async fn connect(&self) -> Result<(MultiplexedConnection, Arc<str>), String> {
        let (host, port, tls) = match self {
            Target::Direct { host, port, tls } => (host.clone(), *port, tls.as_ref()),
            Target::Sentinels { ports } => {
                let (host, port) = master_from_sentinels(ports).await?;
                (host, port, None)
            }
        };
        let mut con = connect(&host, port, tls).await?;
        if matches!(self, Target::Sentinels { .. }) {
            let role = info_field(&mut con, "replication", "role").await?;
            if role != "master" {
                return Err(format!("{host}:{port} is a {role}"));
            }
        }
        let id = info_field(&mut con, "server", "run_id").await?;
        Ok((con, Arc::from(id)))
    }
}

/// The master's address as the first sentinel that answers has it.
async fn master_from_sentinels(ports: &[u16]) -> Result<(String, u16), String> {
    let mut errors = Vec::new();
    for port in ports {
        match sentinel_master(*port).await {
            Ok(address) => return Ok(address),
            Err(e) => errors.push(e),
        }
    }
    Err(errors.join("; "))
}

async fn sentinel_master(port: u16) -> Result<(String, u16), String> {
    let mut con = connect("127.0.0.1", port, None).await?;
    let address: Option<Vec<String>> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(MASTER)
        .query_async(&mut con)
        .await
        .map_err(|e| format!("sentinel {port}: {e}"))?;
    match address.as_deref() {
        Some([host, master_port]) => master_port
            .parse()
            .map(|p| (host.clone(), p))
            .map_err(|_| format!("sentinel {port}: bad port {master_port}")),
        _ => Err(format!("sentinel {port}: no master {MASTER}")),
    }
}

struct Ack {
    started: Instant,
    at: Instant,
    server: Arc<str>,
}

#[derive(Default)]
struct Journal {
    acked: Vec<(u64, Ack)>,
    /// When writes were refused or failed (or WAIT found no replica).
    failures: Vec<Instant>,
}

struct Writer {
    stop: Arc<AtomicBool>,
    journal: Arc<Mutex<Journal>>,
    task: tokio::task::JoinHandle<()>,
}

impl Writer {
    fn start(target: Target, interval: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let journal = Arc::new(Mutex::new(Journal::default()));
        let (flag, log) = (stop.clone(), journal.clone());
        let task = tokio::spawn(async move {
            let mut n = 0u64;
            let mut current: Option<(MultiplexedConnection, Arc<str>)> = None;
            while !flag.load(Ordering::Relaxed) {
                let Some((con, server)) = current.as_mut() else {
                    match target.connect().await {
                        Ok(connected) => current = Some(connected),
                        Err(_) => tokio::time::sleep(RETRY).await,
                    }
                    continue;
                };
                n += 1;
                let started = Instant::now();
                let written: redis::RedisResult<()> = redis::cmd("SET")
                    .arg(format!("k{n}"))
                    .arg(n)
                    .query_async(con)
                    .await;
                let replicas: redis::RedisResult<i64> = match written {
                    Ok(()) => redis::cmd("WAIT").arg(1).arg(1000).query_async(con).await,
                    Err(e) => Err(e),
                };
                let at = Instant::now();
                let server = server.clone();
                let broken = {
                    let mut journal = log.lock().unwrap_or_else(PoisonError::into_inner);
                    match replicas {
                        Ok(r) if r >= 1 => {
                            journal.acked.push((
                                n,
                                Ack {
                                    started,
                                    at,
                                    server,
                                },
                            ));
                            false
                        }
                        Ok(_) => {
                            journal.failures.push(at);
                            false
                        }
                        Err(_) => {
                            journal.failures.push(at);
                            true
                        }
                    }
                };
                if broken {
                    current = None;
                }
                let pause = if current.is_some() { interval } else { RETRY };
                tokio::time::sleep(pause).await;
            }
        });
        Writer {
            stop,
            journal,
            task,
        }
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the first write that started at or after `since` was acknowledged by a
    /// redis-server other than `not` (bounded by [`OUTAGE_LIMIT`]).
    async fn wait_writable(&self, since: Instant, not: &str) -> Option<Instant> {
        while since.elapsed() < OUTAGE_LIMIT {
            let found = self
                .journal()
                .acked
                .iter()
                .rev()
                .take_while(|(_, a)| a.started >= since)
                .filter(|(_, a)| &*a.server != not)
                .map(|(_, a)| a.at)
                .min();
            if found.is_some() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    fn failures_between(&self, from: Instant, to: Instant) -> usize {
        self.journal()
            .failures
            .iter()
            .filter(|t| **t >= from && **t <= to)
            .count()
    }

    fn acked_keys(&self) -> Vec<u64> {
        self.journal().acked.iter().map(|(n, _)| *n).collect()
    }

    /// Stops it; (acknowledged keys, failed writes).
    async fn stop(mut self) -> (Vec<u64>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.task).await;
        let journal = self.journal.lock().unwrap_or_else(PoisonError::into_inner);
        (
            journal.acked.iter().map(|(n, _)| *n).collect(),
            journal.failures.len(),
        )
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.abort();
    }
}

// ---------------------------------------------------------------------------------------------
// redis-operator on the test bed

async fn operator_part(args: &Args, kill: Kill) -> Result<Part, Error> {
    let cluster = Cluster::connect().await?;
    node::require_real_node(&cluster).await?;
    let ns = cluster
        .namespace_with(
            "bench-failover",
            NamespaceOptions::default()
                .pod_security("restricted")
                .real_node(),
        )
        .await?;
    progress(format!("starting the operator for namespace {}", ns.name()));
    let operator = Operator::start(&cluster, &ns).await?;
    // --tls: a CA of the benchmark's own, its certificate in the Secret spec.tls names.
    let tls = match args.tls {
        false => None,
        true => {
            let ca = TestCa::new("bench-failover CA")?;
            let issued = ca.issue(&redis_dns_names(NAME, ns.name()))?;
            secrets::put_secret(
                &ns,
                "bench-tls",
                Some("kubernetes.io/tls"),
                ca.secret_data(&issued),
            )
            .await?;
            Some(ca.client(&issued, NAME, ns.name())?)
        }
    };
    let mut redis = Replicated::new(NAME, 3, args.failover_after.clone());
    if tls.is_some() {
        redis = redis.tls("bench-tls");
    }
    let primary = redis.create_replicating(&ns, CONVERGE).await?;
    let service = service_ip(&ns).await?;
    let over = if tls.is_some() { ", over TLS" } else { "" };
    let mut part = Part::new(format!(
        "redis-operator{over}, primary's {}",
        kill.describe()
    ));
    let writer = Writer::start(
        Target::Direct {
            host: service,
            port: PORT,
            tls: tls.clone(),
        },
        Duration::from_millis(args.write_interval_ms),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pods: Api<Pod> = ns.api();
    let (primary, missing_before) = part
        .run_rounds(args.rounds, primary, async |primary, missing_before| {
            operator_round(
                kill,
                &pods,
                &ns,
                &writer,
                tls.as_ref(),
                primary,
                missing_before,
            )
            .await
        })
        .await;
    let (acked, failed) = writer.stop().await;
    let lost = match primary_ip(&pods, &primary).await {
        Ok(ip) => missing(&ip, PORT, tls.as_ref(), &acked)
            .await
            .map(|m| m.len()),
        Err(e) => Err(e),
    };
    part.finish(&primary, acked.len(), lost, missing_before.len(), failed);
    progress(format!("deleting namespace {}", ns.name()));
    drop(operator);
    drop(ns);
    Ok(part)
}

async fn primary_ip(pods: &Api<Pod>, name: &str) -> Result<String, String> {
    let pod = pods.get(name).await.map_err(seen)?;
    pods::ip(&pod)
        .map(str::to_owned)
        .ok_or_else(|| format!("{name} has no IP"))
}

/// One failover: kill the primary, wait for writes, then for replication to be whole again.
async fn operator_round(
    kill: Kill,
    pods: &Api<Pod>,
    ns: &TestNamespace,
    writer: &Writer,
    tls: Option<&TlsClient>,
    primary: &str,
    missing_before: &BTreeSet<u64>,
) -> Result<(Round, String, BTreeSet<u64>), Error> {
    let victim = pods
        .get(primary)
        .await
        .context(format!("reading {primary}"))?;
    let ip = pods::ip(&victim).unwrap_or_default().to_owned();
    let victim_id = run_id(&ip, PORT, tls)
        .await
        .map_err(|e| Error::process(format!("run_id of {primary}"), e))?;
    let pid = match kill {
        Kill::Process => Some(
            node::container_pid(&victim, "redis")
                .await
                .map_err(|e| Error::process(format!("finding {primary}'s redis-server"), e))?,
        ),
        _ => None,
    };
    let lost_node = node::node_of(&victim).unwrap_or_default().to_owned();
    progress(format!("killing {primary} ({kill:?}, on {lost_node})"));
    let killed = Instant::now();
    match (kill.node_fault(), pid) {
        (Some(fault), _) => node::fault(fault, &lost_node).await?,
        (None, Some(pid)) => node::signal(pid, "KILL")
            .await
            .map_err(|e| Error::process(format!("killing {primary}'s redis-server"), e))?,
        (None, None) => {
            pods.delete(primary, &DeleteParams::default().grace_period(0))
                .await
                .context(format!("deleting {primary}"))?;
        }
    }
    let writable = writer.wait_writable(killed, &victim_id).await;
    let refused = writer.failures_between(killed, writable.unwrap_or_else(Instant::now));
    if kill.node_fault().is_some() {
        // The node comes back once another pod is primary (its pods may have been replaced).
        let promoted = conditions::wait_promoted(ns, NAME, primary, CONVERGE).await;
        node::fault(NodeFault::Heal, &lost_node).await?;
        promoted?;
    }
    let next = conditions::wait_replicating(ns, NAME, 3, CONVERGE, Some(primary)).await?;
    let keys = writer.acked_keys();
    let ip = primary_ip(pods, &next)
        .await
        .map_err(|e| Error::process("the new primary", e))?;
    let missing_now = missing(&ip, PORT, tls, &keys)
        .await
        .map_err(|e| Error::process("checking acknowledged writes", e))?;
    let round = Round {
        victim: primary.to_owned(),
        successor: next.clone(),
        writable: writable.map(|at| at - killed),
        refused,
        lost_now: missing_now.difference(missing_before).count(),
        acked_so_far: keys.len(),
    };
    Ok((round, next, missing_now))
}

async fn service_ip(ns: &TestNamespace) -> Result<String, Error> {
    e2e::conditions::service_ip(ns, NAME, CONVERGE).await
}

// ---------------------------------------------------------------------------------------------
// Redis Sentinel on 127.0.0.1

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Restart {
    /// Like kubelet restarting a container: the killed master comes back at once, empty.
    AtOnce,
    /// Like a supervisor that waits for the failover: the killed master comes back once
    /// another is writable, and sentinel makes it a replica.
    AfterFailover,
}

impl Restart {
    fn describe(self) -> &'static str {
        match self {
            Restart::AtOnce => "killed and restarted at once",
            Restart::AfterFailover => "killed and restarted after failover",
        }
    }
}

/// A redis-server of the sentinel setup: its port and config file (which sentinel rewrites).
struct Server {
    port: u16,
    config: PathBuf,
    child: Option<Child>,
}

/// 3 redis-servers and 3 sentinels in a temporary directory: everything stopped and the
/// directory removed when dropped.
struct SentinelBed {
    dir: PathBuf,
    servers: Vec<Server>,
    sentinels: Vec<Child>,
    sentinel_ports: Vec<u16>,
}

impl Drop for SentinelBed {
    fn drop(&mut self) {
        let children = self
            .servers
            .iter_mut()
            .filter_map(|s| s.child.as_mut())
            .chain(self.sentinels.iter_mut());
        for child in children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn(program: &str, config: &std::path::Path, log: PathBuf) -> Result<Child, Error> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| Error::process(format!("creating {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| Error::process(format!("opening {}", log.display()), e))?;
    Command::new(program)
        .arg(config)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| {
            Error::process(
                format!("starting {program} (hack/cluster/node/packages.sh installs it)"),
                e,
            )
        })
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::process(format!("writing {}", path.display()), e))
}

/// Six distinct free ports on 127.0.0.1.
fn free_ports(n: usize) -> Result<Vec<u16>, Error> {
    let mut ports = Vec::new();
    for _ in 0..100 {
        let port = e2e::operator::free_port()?;
        if !ports.contains(&port) {
            ports.push(port);
        }
        if ports.len() == n {
            return Ok(ports);
        }
    }
    Err(Error::process(
        "finding free ports",
        "the same ports came back",
    ))
}

impl SentinelBed {
    fn start(down_after: Duration, restart: Restart) -> Result<Self, Error> {
        let tag = match restart {
            Restart::AtOnce => "at-once",
            Restart::AfterFailover => "after",
        };
        let dir = std::env::temp_dir().join(format!(
            "bench-failover-sentinel-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::process(format!("creating {}", dir.display()), e))?;
        let ports = free_ports(6)?;
        let (server_ports, sentinel_ports) = ports.split_at(3);
        let mut bed = SentinelBed {
            dir: dir.clone(),
            servers: Vec::new(),
            sentinels: Vec::new(),
            sentinel_ports: sentinel_ports.to_vec(),
        };
        let master = server_ports[0];
        for (i, port) in server_ports.iter().enumerate() {
            let data = dir.join(format!("server-{i}"));
            std::fs::create_dir_all(&data)
                .map_err(|e| Error::process(format!("creating {}", data.display()), e))?;
            let replica_of = if i == 0 {
                String::new()
            } else {
                format!("replicaof 127.0.0.1 {master}\n")
            };
            let config = dir.join(format!("server-{i}.conf"));
            write_file(
                &config,
                &format!(
                    "bind 127.0.0.1\nport {port}\ndaemonize no\nlogfile \"\"\nsave \"\"\n\
                     appendonly no\ndir {}\n{replica_of}",
                    data.display()
                ),
            )?;
            bed.servers.push(Server {
                port: *port,
                config,
                child: None,
            });
            bed.start_server(i)?;
        }
        let down_ms = down_after.as_millis().max(1);
        let failover_timeout = (down_ms * 3).max(10_000);
        for (i, port) in sentinel_ports.iter().enumerate() {
            let config = dir.join(format!("sentinel-{i}.conf"));
            write_file(
                &config,
                &format!(
                    "bind 127.0.0.1\nport {port}\ndaemonize no\nlogfile \"\"\ndir {}\n\
                     sentinel monitor {MASTER} 127.0.0.1 {master} 2\n\
                     sentinel down-after-milliseconds {MASTER} {down_ms}\n\
                     sentinel failover-timeout {MASTER} {failover_timeout}\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    dir.display()
                ),
            )?;
            let child = spawn(
                "redis-sentinel",
                &config,
                dir.join(format!("sentinel-{i}.log")),
            )?;
            bed.sentinels.push(child);
        }
        Ok(bed)
    }

    fn start_server(&mut self, i: usize) -> Result<(), Error> {
        let log = self.dir.join(format!("server-{i}.log"));
        let server = &mut self.servers[i];
        server.child = Some(spawn("redis-server", &server.config, log)?);
        Ok(())
    }

    /// SIGKILL, as a crash would.
    fn kill_server(&mut self, i: usize) {
        if let Some(mut child) = self.servers[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn index_of(&self, port: u16) -> Result<usize, Error> {
        self.servers
            .iter()
            .position(|s| s.port == port)
            .ok_or_else(|| Error::process("the sentinels' master", format!("unknown port {port}")))
    }

    /// Waits until the three sentinels agree on a master (other than port `not`), know each
    /// other and its two replicas as healthy, and the master has both replicas online.
    async fn wait_replicating(&self, not: Option<u16>) -> Result<u16, Error> {
        wait_for(
            &format!("sentinel setup replicating a master other than {not:?}"),
            CONVERGE,
            || async {
                let mut master = None;
                for port in &self.sentinel_ports {
                    let (_, m) = sentinel_master(*port).await?;
                    if master.is_some_and(|x| x != m) {
                        return Err(format!("sentinels disagree: {master:?} vs {m}"));
                    }
                    master = Some(m);
                    let mut con = connect("127.0.0.1", *port, None).await?;
                    let replicas = sentinel_list(&mut con, "replicas").await?;
                    let healthy = replicas
                        .iter()
                        .filter(|r| {
                            field(r, "flags") == Some("slave")
                                && field(r, "master-link-status") == Some("ok")
                        })
                        .count();
                    let others = sentinel_list(&mut con, "sentinels").await?.len();
                    if healthy != 2 || others != 2 {
                        return Err(format!(
                            "sentinel {port}: {healthy} healthy replicas, knows {others} other \
                             sentinels"
                        ));
                    }
                }
                let master = master.ok_or("no sentinel")?;
                if Some(master) == not {
                    return Err(format!("the master is still {master}"));
                }
                let mut con = connect("127.0.0.1", master, None).await?;
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut con)
                    .await
                    .map_err(|e| e.to_string())?;
                let online = info
                    .lines()
                    .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                    .count();
                if info.contains("role:master") && online == 2 {
                    Ok(master)
                } else {
                    Err(format!("master {master}: {online} replicas online"))
                }
            },
        )
        .await
    }
}

/// `SENTINEL replicas|sentinels <master>`: one list of alternating names and values each.
async fn sentinel_list(
    con: &mut MultiplexedConnection,
    what: &str,
) -> Result<Vec<Vec<String>>, String> {
    redis::cmd("SENTINEL")
        .arg(what)
        .arg(MASTER)
        .query_async(con)
        .await
        .map_err(|e| format!("SENTINEL {what}: {e}"))
}

fn field<'a>(pairs: &'a [String], name: &str) -> Option<&'a str> {
    pairs
        .chunks(2)
        .find(|kv| kv.first().map(String::as_str) == Some(name))
        .and_then(|kv| kv.get(1))
        .map(String::as_str)
}

async fn sentinel_part(args: &Args, down_after: Duration, restart: Restart) -> Result<Part, Error> {
    progress(format!(
        "starting the sentinel setup ({})",
        restart.describe()
    ));
    let mut bed = SentinelBed::start(down_after, restart)?;
    let master = bed.wait_replicating(None).await?;
    let mut part = Part::new(format!("sentinel, {}", restart.describe()));
    let writer = Writer::start(
        Target::Sentinels {
            ports: bed.sentinel_ports.clone(),
        },
        Duration::from_millis(args.write_interval_ms),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (master, missing_before) = part
        .run_rounds(args.rounds, master, async |master, missing_before| {
            sentinel_round(&mut bed, restart, &writer, *master, missing_before).await
        })
        .await;
    let (acked, failed) = writer.stop().await;
    let lost = missing("127.0.0.1", master, None, &acked)
        .await
        .map(|m| m.len());
    part.finish(
        &format!("127.0.0.1:{master}"),
        acked.len(),
        lost,
        missing_before.len(),
        failed,
    );
    drop(bed);
    Ok(part)
}

async fn sentinel_round(
    bed: &mut SentinelBed,
    restart: Restart,
    writer: &Writer,
    master: u16,
    missing_before: &BTreeSet<u64>,
) -> Result<(Round, u16, BTreeSet<u64>), Error> {
    let victim = bed.index_of(master)?;
    let victim_id = run_id("127.0.0.1", master, None)
        .await
        .map_err(|e| Error::process(format!("run_id of 127.0.0.1:{master}"), e))?;
    progress(format!("killing the master 127.0.0.1:{master}"));
    let killed = Instant::now();
    bed.kill_server(victim);
    if restart == Restart::AtOnce {
        bed.start_server(victim)?;
    }
    let writable = writer.wait_writable(killed, &victim_id).await;
    let refused = writer.failures_between(killed, writable.unwrap_or_else(Instant::now));
    let not = match restart {
        Restart::AtOnce => None,
        Restart::AfterFailover => {
            // The writer may have found a new master before all sentinels agree on it.
            let ports = bed.sentinel_ports.clone();
            let _ = wait_for("the sentinels' failover", OUTAGE_LIMIT, || async {
                match master_from_sentinels(&ports).await {
                    Ok((_, port)) if port != master => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            })
            .await;
            bed.start_server(victim)?;
            Some(master)
        }
    };
    let next = bed.wait_replicating(not).await?;
    let keys = writer.acked_keys();
    let missing_now = missing("127.0.0.1", next, None, &keys)
        .await
        .map_err(|e| Error::process("checking acknowledged writes", e))?;
    let round = Round {
        victim: format!("127.0.0.1:{master}"),
        successor: format!("127.0.0.1:{next}"),
        writable: writable.map(|at| at - killed),
        refused,
        lost_now: missing_now.difference(missing_before).count(),
        acked_so_far: keys.len(),
    };
    Ok((round, next, missing_now))
}
