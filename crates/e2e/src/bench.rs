//! What the benchmark binaries (`bench-controller`, `bench-failover`) share: which build of the
//! operator they run, their `main`, and how they print.

use std::future::Future;
use std::process::{Command, ExitCode};
use std::time::Duration;

use crate::Error;
use crate::operator::PROFILE_ENV;

/// Which build of the operator binaries a benchmark runs: `#[command(flatten)]` it into the
/// benchmark's arguments.
#[derive(clap::Args, Debug)]
pub struct ProfileArg {
    /// Build profile of the operator binaries (target/<profile>/redis-controller, redis-webhook).
    #[arg(long, env = PROFILE_ENV, default_value = "release", value_parser = ["release", "debug"])]
    pub profile: String,
}

/// A benchmark's `main`: runs `bench` on a multi-threaded runtime until it ends or Ctrl-C, and
/// exits with its code, or 1 with its error. The harness finds the operator's binaries through
/// E2E_PROFILE, and a process cannot safely change its own environment: when it is not
/// `profile` yet, the benchmark runs again as a child with it set.
pub fn main<F, Fut>(name: &str, profile: &ProfileArg, bench: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<ExitCode, Error>>,
{
    let profile = profile.profile.as_str();
    if std::env::var(PROFILE_ENV).ok().as_deref() != Some(profile) {
        return run_again_with_profile(name, profile);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{name}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        tokio::select! {
            outcome = bench() => outcome,
            _ = tokio::signal::ctrl_c() => Err(Error::process(name, "interrupted")),
        }
    });
    outcome.unwrap_or_else(|e| {
        eprintln!("{name}: {e:?}");
        ExitCode::FAILURE
    })
}

fn run_again_with_profile(name: &str, profile: &str) -> ExitCode {
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
            eprintln!("{name}: cannot run again with {PROFILE_ENV}={profile}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A line on stderr about what the benchmark is doing (figures go to stdout).
pub fn progress(message: impl std::fmt::Display) {
    eprintln!("bench: {message}");
}

/// `1.23 s`.
pub fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The machine's load averages over 1, 5 and 15 minutes, from /proc.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}
