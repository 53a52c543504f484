use clap::Parser;
use controller::cli::Cli;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    ops::init_logging(cli.log_format);
    match controller::run::run(cli, ops::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "redis-controller stopped");
            ExitCode::FAILURE
        }
    }
}
