//! `make bench-controller` (DESIGN §8): how long redis-controller takes to converge N Redis x 3
//! pods on the local test bed, how many API writes it makes for that (from the bed's audit
//! log, as a ratio to the minimum), how many it makes during an idle minute (should be 0), its
//! peak RSS, and, as the API server's own speed limit, the time a bare loop of pod creates takes
//! to get the same pods Ready, and the time when that loop also makes one ClusterIP Service per
//! Redis (allocated one at a time by the API server). With `--unrelated-pods`, it does all that twice, without and then
//! with that many pods of someone else in another namespace, to show they cost the controller
//! nothing (its pod watch is label-scoped). It prints figures and asserts nothing.

mod audit;
mod load;
mod report;
mod runs;
mod unrelated;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use e2e::bench::{ProfileArg, load_average, progress, secs};
use e2e::operator::workspace_binary;
use e2e::{Cluster, Error};

use audit::AuditLog;
use report::{file_size, mib};
use runs::{OperatorRun, bare_run, operator_run};
use unrelated::{ExtraNodes, UnrelatedPods};

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

    /// Pods of someone else (no label of ours, Ready on the kwok nodes) to create in another
    /// namespace after the first runs; then the runs are repeated with them there, each with a
    /// controller of its own, and the controller's peak RSS compared. 0: no second round.
    /// (`make bench-controller N=...` passes 5000, the figure.)
    #[arg(long, default_value_t = 0)]
    unrelated_pods: usize,

    /// Extra argument for redis-controller (repeatable), e.g. `--controller-arg=--concurrency=16`.
    #[arg(long = "controller-arg", allow_hyphen_values = true)]
    controller_args: Vec<String>,

    #[command(flatten)]
    profile: ProfileArg,
}

fn main() -> ExitCode {
    let args = Args::parse();
    e2e::bench::main("bench-controller", &args.profile, || async {
        Ok(if bench(&args).await? {
            ExitCode::SUCCESS
        } else {
            eprintln!("bench-controller: incomplete: not everything became Ready in time");
            ExitCode::from(2)
        })
    })
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
        "workload: {} Redis x {} pods, {} concurrent creators, {} unrelated pods; controller \
         args: {:?}",
        args.count, args.replicas, args.creators, args.unrelated_pods, args.controller_args
    );

    let pods = args.count * usize::try_from(args.replicas).unwrap_or(0);
    // The bed's two kwok nodes take 2,000 pods; the operator's (or the bare loop's) and the
    // unrelated pods are there at the same time.
    let nodes = ExtraNodes::ensure_room(&cluster, pods + args.unrelated_pods).await?;
    let outcome = rounds(&cluster, audit.as_ref(), args).await;
    nodes.remove().await;
    outcome
}

/// One round (operator, then bare loop) without unrelated pods; with `--unrelated-pods`, a
/// second round with them; then the summary.
async fn rounds(cluster: &Cluster, audit: Option<&AuditLog>, args: &Args) -> Result<bool, Error> {
    let mut rounds = vec![round(cluster, audit, args, "no unrelated pods").await?];
    if args.unrelated_pods > 0 {
        let creators = usize::from(args.creators) * 4;
        let timeout = Duration::from_secs(args.timeout);
        let unrelated =
            UnrelatedPods::create(cluster, args.unrelated_pods, creators, timeout).await?;
        let phase = format!("{} unrelated pods", args.unrelated_pods);
        let outcome = round(cluster, audit, args, &phase).await;
        unrelated.remove().await;
        rounds.push(outcome?);
    }
    summary(args, &rounds);
    Ok(rounds
        .iter()
        .all(|r| r.operator.ready.is_some() && (args.no_bare || r.bare.is_some())))
}

struct Round {
    phase: String,
    operator: OperatorRun,
    bare: Option<Duration>,
    /// The bare loop that also makes one ClusterIP Service per Redis, as the operator does: the
    /// API server allocates ClusterIPs one at a time, the floor of any controller's run.
    bare_services: Option<Duration>,
}

async fn round(
    cluster: &Cluster,
    audit: Option<&AuditLog>,
    args: &Args,
    phase: &str,
) -> Result<Round, Error> {
    let operator = operator_run(cluster, audit, args, phase).await?;
    let (bare, bare_services) = if args.no_bare {
        (None, None)
    } else {
        (
            bare_run(cluster, args, phase, false).await?,
            bare_run(cluster, args, phase, true).await?,
        )
    };
    Ok(Round {
        phase: phase.to_owned(),
        operator,
        bare,
        bare_services,
    })
}

/// A figure of a round, for the table.
type Cell = fn(&Round) -> String;

fn na() -> String {
    "n/a".to_owned()
}

fn ratio(operator: Option<Duration>, bare: Option<Duration>) -> String {
    match (operator, bare) {
        (Some(o), Some(b)) => format!("{:.2}", o.as_secs_f64() / b.as_secs_f64().max(1e-9)),
        _ => na(),
    }
}

/// The table: one column per round.
fn summary(args: &Args, rounds: &[Round]) {
    println!();
    println!(
        "== summary: {} Redis x {} pods, load average {} ==",
        args.count,
        args.replicas,
        load_average()
    );
    let rows: [(&str, Cell); 8] = [
        ("operator: time to all Ready", |r: &Round| {
            r.operator.ready.map_or_else(na, secs)
        }),
        ("bare loop: time to all Ready", |r: &Round| {
            r.bare.map_or_else(na, secs)
        }),
        ("time ratio operator/bare", |r: &Round| {
            ratio(r.operator.ready, r.bare)
        }),
        ("bare loop + Services: time", |r: &Round| {
            r.bare_services.map_or_else(na, secs)
        }),
        ("time ratio operator/bare+Services", |r: &Round| {
            ratio(r.operator.ready, r.bare_services)
        }),
        ("controller writes/minimum", |r: &Round| {
            r.operator.writes.map_or_else(na, |w| {
                format!("{}/{} = {:.3}", w.total, w.minimum, w.ratio())
            })
        }),
        ("controller writes while idle", |r: &Round| {
            r.operator.idle_writes.map_or_else(na, |n| n.to_string())
        }),
        ("controller peak RSS (VmHWM)", |r: &Round| {
            r.operator.peak_rss_kib.map_or_else(na, mib)
        }),
    ];
    let width = 34;
    let mut header = format!("{:<width$}", "");
    for r in rounds {
        header.push_str(&format!(" | {:<24}", r.phase));
    }
    println!("{header}");
    for (label, cell) in &rows {
        let mut line = format!("{label:<width$}");
        for r in rounds {
            line.push_str(&format!(" | {:<24}", cell(r)));
        }
        println!("{line}");
    }
    if let [without, with, ..] = rounds
        && let (Some(a), Some(b)) = (without.operator.peak_rss_kib, with.operator.peak_rss_kib)
    {
        println!(
            "peak RSS with the unrelated pods minus without: {:+.1} MiB",
            (b as f64 - a as f64) / 1024.0
        );
    }
}
