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

mod operator;
mod redis_io;
mod results;
mod sentinel;
mod writer;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use e2e::Error;
use e2e::bench::{ProfileArg, load_average};
use e2e::node::NodeFault;

use operator::operator_part;
use sentinel::{Restart, sentinel_part};

/// The Redis object of the operator part.
pub(crate) const NAME: &str = "bench";
pub(crate) const PORT: u16 = 6379;
/// The master name the sentinels monitor.
pub(crate) const MASTER: &str = "bench";
/// How long a setup may take to be replicating again (all members in place).
pub(crate) const CONVERGE: Duration = Duration::from_secs(180);
/// How long a round waits for the first acknowledged write after the kill.
pub(crate) const OUTAGE_LIMIT: Duration = Duration::from_secs(120);
/// The writer's pause after a failed write or connection attempt.
pub(crate) const RETRY: Duration = Duration::from_millis(20);
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Above WAIT's own 1000 ms.
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_millis(1500);

#[derive(Parser, Debug)]
#[command(
    name = "bench-failover",
    about = "Time from the loss of the primary to a new primary acknowledging writes, and \
             acknowledged writes lost, over N failovers: redis-operator on the local test bed vs \
             Redis Sentinel (Debian's redis-sentinel) on 127.0.0.1. Prints figures; asserts \
             nothing."
)]
pub(crate) struct Args {
    /// Failovers per setup.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) rounds: u32,

    /// spec.replication.failoverAfter of the Redis, and the sentinels' down-after-milliseconds.
    #[arg(long, default_value = "5s")]
    pub(crate) failover_after: String,

    /// What is lost on the operator's side, one part each (comma-separated): the primary's
    /// redis-server (SIGKILL; kubelet restarts the container), its pod (deleted with grace
    /// period 0), or its whole node (hack/cluster/fault.sh: stopped, frozen or cut off; healed
    /// once another pod is primary).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "process")]
    pub(crate) kill: Vec<Kill>,

    /// Pause of the writer between two writes, in milliseconds.
    #[arg(long, default_value_t = 5)]
    pub(crate) write_interval_ms: u64,

    /// Serve the operator's Redis over TLS only (spec.tls, a CA of the benchmark's own): its
    /// replication, the operator and the writer speak TLS. The sentinel parts stay plaintext.
    #[arg(long)]
    pub(crate) tls: bool,

    /// Skip the operator part.
    #[arg(long)]
    pub(crate) no_operator: bool,

    /// Skip the sentinel parts.
    #[arg(long)]
    pub(crate) no_sentinel: bool,

    #[command(flatten)]
    pub(crate) profile: ProfileArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Kill {
    Pod,
    Process,
    NodeStop,
    NodeFreeze,
    NodePartition,
}

impl Kill {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Kill::Process => "redis-server SIGKILLed (kubelet restarts it)",
            Kill::Pod => "pod deleted with grace period 0",
            Kill::NodeStop => "node stopped",
            Kill::NodeFreeze => "node frozen",
            Kill::NodePartition => "node cut off",
        }
    }

    pub(crate) fn node_fault(self) -> Option<NodeFault> {
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
