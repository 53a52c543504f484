//! The admission server: axum routes over tokio-rustls, plus the plain-HTTP operations port
//! (/healthz, /readyz, /metrics). Thin I/O around `admission::answer` (DESIGN §4).

use crate::Error;
use crate::admission::{self, Endpoint};
use crate::metrics::{EndpointLabels, Metrics, RequestLabels};
use crate::tls::{self, CertReloader, ReloadingResolver};
use api::Policy;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use kube::core::admission::Operation;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A client that opens TCP but never finishes the TLS handshake must not hold a task forever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything the server needs, decided by the command line.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub metrics_bind: SocketAddr,
    pub tls_cert_file: PathBuf,
    pub tls_key_file: PathBuf,
    pub policy: Policy,
    pub max_body_bytes: usize,
    pub cert_reload_interval: Duration,
    pub shutdown_timeout: Duration,
}

struct AppState {
    policy: Policy,
    metrics: Arc<Metrics>,
    /// True while the TLS listener accepts with a loaded certificate; false again while draining.
    ready: Arc<AtomicBool>,
    max_body_bytes: usize,
}

/// A webhook whose certificate is loaded and whose ports are bound, ready to `run`.
pub struct Webhook {
    config: Config,
    admission: TcpListener,
    operations: TcpListener,
    acceptor: TlsAcceptor,
    reloader: CertReloader,
    resolver: Arc<ReloadingResolver>,
    state: Arc<AppState>,
}

impl Webhook {
    /// Loads the certificate (failing clearly if it is unusable) and binds both ports.
    pub async fn bind(config: Config) -> Result<Self, Error> {
        let (key, seen) = tls::load_certified_key(&config.tls_cert_file, &config.tls_key_file)?;
        let resolver = Arc::new(ReloadingResolver::new(key));
        let acceptor = TlsAcceptor::from(Arc::new(tls::server_config(resolver.clone())?));
        let reloader = CertReloader::new(
            config.tls_cert_file.clone(),
            config.tls_key_file.clone(),
            resolver.clone(),
            seen,
        );
        let admission = TcpListener::bind(config.bind)
            .await
            .map_err(|e| Error::Bind(config.bind, e))?;
        let operations = TcpListener::bind(config.metrics_bind)
            .await
            .map_err(|e| Error::Bind(config.metrics_bind, e))?;
        let state = Arc::new(AppState {
            policy: config.policy.clone(),
            metrics: Arc::new(Metrics::default()),
            ready: Arc::new(AtomicBool::new(false)),
            max_body_bytes: config.max_body_bytes,
        });
        Ok(Webhook {
            config,
            admission,
            operations,
            acceptor,
            reloader,
            resolver,
            state,
        })
    }

    /// Where the TLS admission endpoints listen (useful with port 0).
    pub fn admission_addr(&self) -> Result<SocketAddr, Error> {
        self.admission
            .local_addr()
            .map_err(|e| Error::Bind(self.config.bind, e))
    }

    /// Where /healthz, /readyz and /metrics listen.
    pub fn operations_addr(&self) -> Result<SocketAddr, Error> {
        self.operations
            .local_addr()
            .map_err(|e| Error::Bind(self.config.metrics_bind, e))
    }

    /// The certificate resolver (tests read the served certificate from it).
    pub fn resolver(&self) -> Arc<ReloadingResolver> {
        self.resolver.clone()
    }

    /// Serves until `shutdown` completes, then stops accepting, lets in-flight requests finish
    /// (up to the shutdown timeout) and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let Webhook {
            config,
            admission,
            operations,
            acceptor,
            reloader,
            state,
            ..
        } = self;
        let reload = tokio::spawn(reloader.run(config.cert_reload_interval, state.metrics.clone()));

        let (stop_operations, operations_stopped) = tokio::sync::oneshot::channel::<()>();
        let operations_server = axum::serve(operations, operations_router(&state))
            .with_graceful_shutdown(async move {
                let _ = operations_stopped.await;
            });
        let operations_task = tokio::spawn(async move { operations_server.await });

        state.ready.store(true, Ordering::SeqCst);
        tracing::info!(admission = %config.bind, operations = %config.metrics_bind, "redis-webhook serving");
        serve_admission(
            admission,
            acceptor,
            admission_router(state.clone()),
            shutdown,
            config.shutdown_timeout,
            &state,
        )
        .await;

        reload.abort();
        let _ = stop_operations.send(());
        match operations_task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::MetricsServer(e)),
            Err(e) => Err(Error::MetricsServer(std::io::Error::other(e))),
        }
    }
}

async fn serve_admission(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    shutdown: impl Future<Output = ()>,
    shutdown_timeout: Duration,
    state: &AppState,
) {
    let graceful = GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
            };
            let connection = builder.serve_connection(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(connection).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    state.ready.store(false, Ordering::SeqCst);
    tracing::info!("shutting down: no new connections, finishing in-flight requests");
    if tokio::time::timeout(shutdown_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(timeout = ?shutdown_timeout, "in-flight requests did not finish in time");
    }
}

fn admission_router(state: Arc<AppState>) -> Router {
    let limit = state.max_body_bytes;
    Router::new()
        .route("/mutate", post(mutate))
        .route("/validate", post(validate))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

fn operations_router(state: &AppState) -> Router {
    let metrics = state.metrics.clone();
    ops::operations_router(
        state.ready.clone(),
        "not ready: the TLS listener is not serving",
        move || metrics.render(),
    )
}

async fn mutate(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    handle(Endpoint::Mutate, &state, body)
}

async fn validate(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    handle(Endpoint::Validate, &state, body)
}

/// Reads, decides and answers one review, recording metrics and a log line.
fn handle(endpoint: Endpoint, state: &AppState, body: Result<Bytes, BytesRejection>) -> Response {
    let started = Instant::now();
    let (response, operation, result) = match body {
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            let message = format!(
                "request body exceeds the limit of {} bytes (--max-body-bytes)",
                state.max_body_bytes
            );
            (
                (StatusCode::PAYLOAD_TOO_LARGE, message).into_response(),
                "none",
                "too_large",
            )
        }
        Err(rejection) => (
            (rejection.status(), rejection.body_text()).into_response(),
            "none",
            "bad_request",
        ),
        Ok(bytes) => match admission::answer(endpoint, &state.policy, &bytes) {
            Ok(answer) => {
                let operation = operation_label(&answer.operation);
                let result = answer.outcome.as_str();
                let denied = answer.outcome == admission::Outcome::Denied;
                let message = answer
                    .review
                    .response
                    .as_ref()
                    .map(|r| r.result.message.as_str())
                    .unwrap_or_default();
                if denied {
                    tracing::info!(endpoint = endpoint.as_str(), operation, subject = %answer.subject(), message, "denied");
                } else {
                    tracing::debug!(endpoint = endpoint.as_str(), operation, subject = %answer.subject(), result, "answered");
                }
                let response = match answer.to_json() {
                    Ok(body) => ([(CONTENT_TYPE, "application/json")], body).into_response(),
                    // Unreachable in practice (plain strings and numbers always serialize).
                    Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
                };
                (response, operation, result)
            }
            Err(bad) => {
                tracing::warn!(endpoint = endpoint.as_str(), error = %bad, "bad admission request");
                (
                    (StatusCode::BAD_REQUEST, bad.to_string()).into_response(),
                    "none",
                    "bad_request",
                )
            }
        },
    };
    let endpoint_label = endpoint.as_str();
    state
        .metrics
        .requests
        .get_or_create(&RequestLabels {
            endpoint: endpoint_label,
            operation,
            result,
        })
        .inc();
    state
        .metrics
        .duration
        .get_or_create(&EndpointLabels {
            endpoint: endpoint_label,
        })
        .observe(started.elapsed().as_secs_f64());
    response
}

fn operation_label(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}
