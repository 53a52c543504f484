//! The plain-HTTP operations port: /healthz, /readyz, /metrics.

use crate::Error;
use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::task::JoinHandle;

struct Ops {
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
}

/// Binds `addr` and serves in the background.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Bind(addr, e))?;
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(Arc::new(Ops { metrics, ready }));
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %Error::MetricsServer(e), "operations port stopped");
        }
    }))
}

async fn readyz(State(ops): State<Arc<Ops>>) -> Response {
    if ops.ready.load(Ordering::SeqCst) {
        (StatusCode::OK, "ok").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: caches syncing or waiting for the leader lease",
        )
            .into_response()
    }
}

async fn metrics_text(State(ops): State<Arc<Ops>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        ops.metrics.render(),
    )
        .into_response()
}
