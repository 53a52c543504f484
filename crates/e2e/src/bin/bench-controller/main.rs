//! `make bench-controller` (DESIGN §8): how long redis-controller takes to converge N Redis x 3
//! pods on the local test bed, how many API writes it makes for that (from the bed's audit
//! log, as a ratio to the minimum), how many it makes during an idle minute (should be 0), its
//! peak RSS, and, as the API server's own speed limit, the time a bare loop of pod creates takes
//! to get the same pods Ready. It prints figures and asserts nothing.

mod audit;
mod load;
mod report;
mod runs;

use std::process::ExitCode;

use clap::Parser;
use e2e::bench::{ProfileArg, load_average, progress, secs};
use e2e::operator::workspace_binary;
use e2e::{Cluster, Error};

use audit::AuditLog;
use report::file_size;
use runs::{bare_run, operator_run};

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
