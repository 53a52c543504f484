use clap::Parser;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;
use webhook::cli::{Cli, Command, LogFormat};
use webhook::{Config, Error, Webhook, certs};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
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
    Webhook::bind(config).await?.run(shutdown_signal()).await
}

/// Completes on SIGTERM (what kubelet sends) or SIGINT.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the server");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = terminate => tracing::info!("SIGTERM received"),
        result = tokio::signal::ctrl_c() => match result {
            Ok(()) => tracing::info!("SIGINT received"),
            Err(e) => tracing::warn!(error = %e, "cannot listen for SIGINT"),
        },
    }
}

fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
