//! What `redis-controller` and `redis-webhook` both run beside their work, in one place:
//! logging setup, the shutdown signal, and the plain-HTTP operations port.

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_subscriber::EnvFilter;

/// `--log-format`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Logs to stderr in `format`, at the level of `RUST_LOG` (default `info`).
pub fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Completes on SIGTERM (what kubelet sends) or SIGINT. Each caller gets its own listener, so
/// no other task loses the signal.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the process");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
        result = tokio::signal::ctrl_c() => match result {
            Ok(()) => tracing::info!("SIGINT received, shutting down"),
            Err(e) => tracing::warn!(error = %e, "cannot listen for SIGINT"),
        },
    }
}

/// The operations port: `/healthz` (the process runs), `/readyz` (200 while `ready`, else 503
/// with `not_ready`), `/metrics` (Prometheus/OpenMetrics text from `render`).
pub fn operations_router(
    ready: Arc<AtomicBool>,
    not_ready: &'static str,
    render: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || async move {
                if ready.load(Ordering::SeqCst) {
                    (StatusCode::OK, "ok").into_response()
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, not_ready).into_response()
                }
            }),
        )
        .route(
            "/metrics",
            get(move || async move { metrics_response(render()) }),
        )
}

fn metrics_response(text: String) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}
