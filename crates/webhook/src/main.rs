use clap::Parser;
use std::process::ExitCode;
use webhook::cli::{Cli, Command};
use webhook::{Config, Error, Webhook, certs};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    ops::init_logging(cli.log_format);
    let result = match cli.command {
        Some(Command::GenCerts(args)) => certs::write(&args).map(|written| {
            for path in written {
                println!("wrote {}", path.display());
            }
        }),
        None => serve(Config::from(cli.serve)).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "redis-webhook failed");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> Result<(), Error> {
    Webhook::bind(config)
        .await?
        .run(ops::shutdown_signal())
        .await
}
