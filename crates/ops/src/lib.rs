//! What `redis-controller` and `redis-webhook` both run beside their work, in one place:
//! logging setup, the shutdown signal, and the plain-HTTP operations port, served within
//! limits ([`serve_operations`]); [`clients`] counts connections per client address.

pub mod clients;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clients::Clients;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing_subscriber::EnvFilter;

/// Open connections to the operations port at most; past it a new one is closed at once.
pub const OPS_MAX_CONNECTIONS: usize = 64;
/// Open connections per client address: the kubelet's probes and a Prometheus scraper need one
/// or two each.
pub const OPS_MAX_CONNECTIONS_PER_CLIENT: usize = 8;
/// A request's line and headers must arrive within this.
const OPS_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection is closed after this long, between requests (a scraper opens another).
const OPS_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// Request line and headers of a probe or a scrape are a few hundred bytes.
const OPS_MAX_HEADER_BYTES: usize = 16 * 1024;

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

/// Serves the operations port's `router` (HTTP/1.1) on `listener` until `shutdown` completes,
/// within limits nobody inside the cluster can exhaust: headers within 5 s, connections capped
/// in all and per client address, and each connection closed after a minute. Without them,
/// 8,000 half-sent requests held 147 MiB and every file descriptor.
pub async fn serve_operations(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()>,
) {
    let clients = Clients::new(OPS_MAX_CONNECTIONS_PER_CLIENT, 0);
    let slots = Arc::new(Semaphore::new(OPS_MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(OPS_HEADER_READ_TIMEOUT)
        .max_buf_size(OPS_MAX_HEADER_BYTES);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "operations port: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(client) = clients.admit(peer.ip()) else {
            tracing::debug!(%peer, "operations port: the client has its share of connections");
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "operations port: every connection slot is taken");
            continue;
        };
        let connection = http.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        tokio::spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = tokio::time::sleep(OPS_CONNECTION_LIFETIME) => {
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(OPS_HEADER_READ_TIMEOUT, connection).await;
                }
            }
            drop((client, slot));
        });
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
