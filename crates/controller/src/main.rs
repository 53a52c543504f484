use clap::Parser;
use controller::cli::Cli;
use std::process::ExitCode;

/// The runtime's worker threads, whatever the node's CPU count (tokio's default). The controller
/// waits on the API server and the redis-servers (10 s of CPU converging 1,000 Redis, 2 cores
/// plenty), and each worker thread may give glibc's malloc an arena of its own: 8 workers instead
/// of 2 cost 1.5 MiB more peak RSS at 300 Redis, and a 64-core node would start 64.
const WORKER_THREADS: usize = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    ops::init_logging(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "redis-controller could not start its runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(controller::run::run(cli, ops::shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "redis-controller stopped");
            ExitCode::FAILURE
        }
    }
}
