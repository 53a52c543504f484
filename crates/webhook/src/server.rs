//! The admission server: axum routes over tokio-rustls, plus the plain-HTTP operations port
//! (/healthz, /readyz, /metrics). Thin I/O around `admission::answer` (DESIGN §4).

use crate::Error;
use crate::admission::{self, Endpoint};
use crate::loose::LooseReader;
use crate::metrics::{Metrics, RequestLabels};
use crate::tls::{self, CertReloader, ReloadingResolver};
use api::Policy;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use kube::core::admission::Operation;
use ops::clients::{ClientConnection, Clients};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_rustls::TlsAcceptor;

/// What one client may take of the webhook, so that nobody inside the cluster can starve the
/// API server's reviews (slowloris connections, silent handshakes, trickled bodies, stream
/// floods, bodies at the limit).
///
/// Memory: request bodies being read hold at most `body_bytes_in_flight` bytes, a client
/// address at most `body_bytes_per_client` of them; at most `max_in_flight` bodies are decoded
/// at once (a decoded review takes about twice its size), one of them at most by the loose
/// reading that explains a bad review; each connection buffers at most its HTTP/2 window.
/// With the defaults that stays under 64 MiB, half the chart's limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Open connections; more wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// Open connections per client address; past it a new one is closed at once. The API
    /// server's connections come from its own addresses, not from the pods'.
    pub max_connections_per_client: usize,
    /// Reviews decided at once, over all connections (taken once the body is read).
    pub max_in_flight: usize,
    /// HTTP/2 streams per connection (hyper's default is 200).
    pub max_concurrent_streams: u32,
    /// The TLS handshake must end within this.
    pub handshake_timeout: Duration,
    /// (HTTP/1.1) A request's line and headers must arrive within this.
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this (408 after).
    pub body_timeout: Duration,
    /// Bytes of request bodies held while they are read, over all clients.
    pub body_bytes_in_flight: usize,
    /// Bytes of request bodies one client address may hold while they are read.
    pub body_bytes_per_client: usize,
    /// A connection with no request in flight for this long is closed (HTTP/2: after a GOAWAY).
    pub idle_timeout: Duration,
    /// Receiving a request and answering it; at most the registration's `timeoutSeconds`, after
    /// which the API server has given up anyway.
    pub request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 128,
            max_connections_per_client: 32,
            max_in_flight: 16,
            max_concurrent_streams: 16,
            handshake_timeout: Duration::from_secs(3),
            header_read_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            body_bytes_in_flight: 16 * 1024 * 1024,
            body_bytes_per_client: 4 * 1024 * 1024,
            idle_timeout: Duration::from_secs(90),
            // The chart registers the webhooks with timeoutSeconds: 10.
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// HTTP/2 flow-control windows: how much one stream, and one connection, may send before the
/// webhook reads it. Small, so waiting streams buffer little; reviews are a few KiB.
const H2_STREAM_WINDOW: u32 = 64 * 1024;
const H2_CONNECTION_WINDOW: u32 = 256 * 1024;
/// How often an HTTP/2 connection is pinged, and how long the answer may take, so a vanished
/// peer does not hold its connection.
const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything the server needs, decided by the command line.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    /// The operations port: /healthz, /readyz and /metrics, plain HTTP (`--ops-bind`).
    pub ops_bind: SocketAddr,
    pub tls_cert_file: PathBuf,
    pub tls_key_file: PathBuf,
    pub policy: Policy,
    pub max_body_bytes: usize,
    pub cert_reload_interval: Duration,
    pub shutdown_timeout: Duration,
    pub limits: Limits,
}

struct AppState {
    policy: Policy,
    metrics: Arc<Metrics>,
    /// True while the TLS listener accepts with a loaded certificate; false again while draining.
    ready: Arc<AtomicBool>,
    max_body_bytes: usize,
    /// The loose reading of the reviews the typed one refused, one at a time.
    loose: LooseReader,
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
        let operations = TcpListener::bind(config.ops_bind)
            .await
            .map_err(|e| Error::Bind(config.ops_bind, e))?;
        let state = Arc::new(AppState {
            policy: config.policy.clone(),
            metrics: Arc::new(Metrics::default()),
            ready: Arc::new(AtomicBool::new(false)),
            max_body_bytes: config.max_body_bytes,
            loose: LooseReader::start(config.policy.clone())?,
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
            .map_err(|e| Error::Bind(self.config.ops_bind, e))
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
        let operations_task = tokio::spawn(ops::serve_operations(
            operations,
            operations_router(&state),
            async move {
                let _ = operations_stopped.await;
            },
        ));

        state.ready.store(true, Ordering::SeqCst);
        tracing::info!(admission = %config.bind, operations = %config.ops_bind, "redis-webhook serving");
        serve_admission(
            admission,
            acceptor,
            admission_router(state.clone()),
            shutdown,
            &config,
            &state,
        )
        .await;

        reload.abort();
        let _ = stop_operations.send(());
        operations_task
            .await
            .map_err(|e| Error::MetricsServer(std::io::Error::other(e)))
    }
}

async fn serve_admission(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    shutdown: impl Future<Output = ()>,
    config: &Config,
    state: &AppState,
) {
    let limits = Arc::new(config.limits.clone());
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight));
    // Budgets smaller than one body would hold such a body back for ever.
    let per_client = limits.body_bytes_per_client.max(config.max_body_bytes);
    let clients = Clients::new(limits.max_connections_per_client, per_client);
    let body_bytes = Arc::new(Semaphore::new(limits.body_bytes_in_flight.max(per_client)));
    let (stop, stopping) = watch::channel(false);
    let builders = Arc::new(Builders::new(&limits));
    tokio::pin!(shutdown);
    loop {
        // A slot first: at the limit, new connections wait in the kernel's backlog.
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
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
        let Some(client) = clients.admit(peer.ip()) else {
            tracing::debug!(%peer, "the client has its share of connections: closed");
            continue;
        };
        let connection = Connection {
            acceptor: acceptor.clone(),
            router: router.clone(),
            builders: builders.clone(),
            limits: limits.clone(),
            in_flight: in_flight.clone(),
            bodies: BodyBudget {
                client,
                all: body_bytes.clone(),
                max_body_bytes: config.max_body_bytes,
            },
            stopping: stopping.clone(),
        };
        tokio::spawn(async move {
            connection.serve(stream, peer).await;
            drop(permit);
        });
    }
    drop(listener);
    state.ready.store(false, Ordering::SeqCst);
    tracing::info!("shutting down: no new connections, finishing in-flight requests");
    let _ = stop.send(true);
    // Every connection holds a slot until it ends: all slots back means all drained.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(config.shutdown_timeout, connections.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(timeout = ?config.shutdown_timeout, "in-flight requests did not finish in time");
    }
}

/// One hyper builder per protocol. The protocol is the one ALPN chose (HTTP/1.1 when the
/// client offered none): hyper-util's auto-detection waits for the first bytes with no
/// timeout, so a client that sends nothing would hold its connection for ever.
struct Builders {
    http1: auto::Builder<TokioExecutor>,
    http2: auto::Builder<TokioExecutor>,
}

impl Builders {
    fn new(limits: &Limits) -> Self {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .keep_alive(true)
            // Request line and headers; a review's are a few hundred bytes.
            .max_buf_size(64 * 1024);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(limits.max_concurrent_streams)
            .initial_stream_window_size(H2_STREAM_WINDOW)
            .initial_connection_window_size(H2_CONNECTION_WINDOW)
            .max_header_list_size(64 * 1024)
            .keep_alive_interval(H2_KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
        Builders {
            http1: builder.clone().http1_only(),
            http2: builder.http2_only(),
        }
    }
}

/// What a connection's task needs.
struct Connection {
    acceptor: TlsAcceptor,
    router: Router,
    builders: Arc<Builders>,
    limits: Arc<Limits>,
    in_flight: Arc<Semaphore>,
    bodies: BodyBudget,
    stopping: watch::Receiver<bool>,
}

impl Connection {
    async fn serve(self, stream: TcpStream, peer: SocketAddr) {
        let Connection {
            acceptor,
            router,
            builders,
            limits,
            in_flight,
            bodies,
            mut stopping,
        } = self;
        let tls =
            match tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
            };
        let builder = match tls.get_ref().1.alpn_protocol() {
            Some(b"h2") => &builders.http2,
            _ => &builders.http1,
        };
        let activity = Arc::new(Activity::new());
        let service = Reviews {
            inner: TowerToHyperService::new(router),
            activity: activity.clone(),
            in_flight,
            bodies: Arc::new(bodies),
            limits: limits.clone(),
        };
        let connection = builder.serve_connection(TokioIo::new(tls), service);
        tokio::pin!(connection);
        // Once closing, in-flight requests get at most the request timeout to finish.
        let mut closing: Option<tokio::time::Instant> = None;
        loop {
            let deadline =
                closing.unwrap_or_else(|| tokio::time::Instant::now() + limits.idle_timeout);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                    return;
                }
                _ = stopping.wait_for(|stop| *stop), if closing.is_none() => {
                    connection.as_mut().graceful_shutdown();
                    closing = Some(tokio::time::Instant::now() + limits.request_timeout);
                }
                () = tokio::time::sleep_until(deadline) => {
                    if closing.is_some() {
                        return tracing::debug!(%peer, "connection closed: it did not finish in time");
                    }
                    if activity.idle_for() >= limits.idle_timeout {
                        tracing::debug!(%peer, "closing an idle connection");
                        connection.as_mut().graceful_shutdown();
                        closing = Some(tokio::time::Instant::now() + limits.request_timeout);
                    }
                }
            }
        }
    }
}

/// When a connection last had a request in flight.
struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            in_flight: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
        }
    }

    fn touch(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = Instant::now();
        }
    }

    /// Zero while a request is in flight; else how long since the last one ended.
    fn idle_for(&self) -> Duration {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        self.last.lock().map(|l| l.elapsed()).unwrap_or_default()
    }
}

/// Marks a request in flight on its connection until dropped.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(activity: Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::SeqCst);
        activity.touch();
        InFlight(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The admission router behind the per-request limits: the body read first, within the body
/// timeout and paid for byte by byte from the client's and the webhook's budgets; then one of
/// `max_in_flight` slots to decide it; the request timeout over all of it. A client trickling
/// its body holds its own budget, never a slot a real review needs.
#[derive(Clone)]
struct Reviews {
    inner: TowerToHyperService<Router>,
    activity: Arc<Activity>,
    in_flight: Arc<Semaphore>,
    bodies: Arc<BodyBudget>,
    limits: Arc<Limits>,
}

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for Reviews {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Response, Self::Error>> + Send>>;

    fn call(&self, request: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let marker = InFlight::new(self.activity.clone());
        let reviews = self.clone();
        Box::pin(async move {
            let timeout = reviews.limits.request_timeout;
            let answered = tokio::time::timeout(timeout, reviews.answer(request)).await;
            drop(marker);
            Ok(answered.unwrap_or_else(|_| {
                (
                    StatusCode::REQUEST_TIMEOUT,
                    format!("the request was not received and answered within {timeout:?}"),
                )
                    .into_response()
            }))
        })
    }
}

impl Reviews {
    async fn answer(self, request: hyper::Request<hyper::body::Incoming>) -> Response {
        let (parts, body) = request.into_parts();
        let read = tokio::time::timeout(
            self.limits.body_timeout,
            self.bodies.read(&parts.headers, body),
        )
        .await;
        let (bytes, _held) = match read {
            Ok(Ok(read)) => read,
            Ok(Err(refusal)) => return refusal.into_response(),
            Err(_) => {
                return (
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body was not received within {:?}",
                        self.limits.body_timeout
                    ),
                )
                    .into_response();
            }
        };
        let Ok(_slot) = self.in_flight.acquire_owned().await else {
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        };
        let request = hyper::Request::from_parts(parts, axum::body::Body::from(bytes));
        match hyper::service::Service::call(&self.inner, request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// What request bodies may hold while they are read: at most `max_body_bytes` each, paid for
/// from the client address's budget and from the webhook's.
struct BodyBudget {
    client: ClientConnection,
    all: Arc<Semaphore>,
    max_body_bytes: usize,
}

/// Why a body was not read.
enum BodyRefusal {
    TooLarge(usize),
    Broken(hyper::Error),
}

impl IntoResponse for BodyRefusal {
    fn into_response(self) -> Response {
        match self {
            BodyRefusal::TooLarge(max) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body exceeds the limit of {max} bytes (--max-body-bytes)"),
            )
                .into_response(),
            BodyRefusal::Broken(e) => (
                StatusCode::BAD_REQUEST,
                format!("the request body could not be read: {e}"),
            )
                .into_response(),
        }
    }
}

impl BodyBudget {
    /// The whole body, and the budget it holds until the review is answered.
    async fn read(
        &self,
        headers: &axum::http::HeaderMap,
        mut body: hyper::body::Incoming,
    ) -> Result<(Bytes, Vec<OwnedSemaphorePermit>), BodyRefusal> {
        let max = self.max_body_bytes;
        let declared = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|length| length > max) {
            return Err(BodyRefusal::TooLarge(max));
        }
        // Sized once from Content-Length (pages are only touched as the body arrives).
        let mut bytes = Vec::with_capacity(declared.unwrap_or(64 * 1024).min(max));
        let mut held = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(chunk) = frame.map_err(BodyRefusal::Broken)?.into_data() else {
                // Trailers: nothing a review carries.
                continue;
            };
            if bytes.len() + chunk.len() > max {
                return Err(BodyRefusal::TooLarge(max));
            }
            // Each chunk is at most `max`, and both budgets are at least that (`serve_admission`).
            let size = u32::try_from(chunk.len()).map_err(|_| BodyRefusal::TooLarge(max))?;
            if size > 0 {
                for budget in [&self.client.bytes, &self.all] {
                    if let Ok(permit) = budget.clone().acquire_many_owned(size).await {
                        held.push(permit);
                    }
                }
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((Bytes::from(bytes), held))
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
    handle(Endpoint::Mutate, &state, body).await
}

async fn validate(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    handle(Endpoint::Validate, &state, body).await
}

/// Reads, decides and answers one review, recording metrics and a log line.
async fn handle(
    endpoint: Endpoint,
    state: &AppState,
    body: Result<Bytes, BytesRejection>,
) -> Response {
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
        Ok(bytes) => match respond(endpoint, state, bytes).await {
            None => (
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the webhook's loose reading of reviews stopped",
                )
                    .into_response(),
                "none",
                "unavailable",
            ),
            Some(Ok(admission::Responded { answer, body })) => {
                let operation = operation_label(&answer.operation);
                let result = answer.outcome.as_str();
                let denied = answer.outcome == admission::Outcome::Denied;
                let message = answer.response.result.message.as_str();
                if denied {
                    tracing::info!(endpoint = endpoint.as_str(), operation, subject = %answer.subject(), message, "denied");
                } else {
                    tracing::debug!(endpoint = endpoint.as_str(), operation, subject = %answer.subject(), result, "answered");
                }
                let response = match body {
                    Ok(body) => ([(CONTENT_TYPE, "application/json")], body).into_response(),
                    // Unreachable in practice (plain strings and numbers always serialize).
                    Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
                };
                (response, operation, result)
            }
            Some(Err(bad)) => {
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
    state.metrics.count_request(RequestLabels {
        endpoint: endpoint_label,
        operation,
        result,
    });
    state
        .metrics
        .observe_duration(endpoint_label, started.elapsed().as_secs_f64());
    response
}

/// The answer by the typed reading, or else by the loose one (`None`: its thread is gone).
async fn respond(
    endpoint: Endpoint,
    state: &AppState,
    body: Bytes,
) -> Option<Result<admission::Responded, admission::BadReview>> {
    if let Some(responded) = admission::respond_typed(endpoint, &state.policy, &body) {
        return Some(Ok(responded));
    }
    state.loose.respond(endpoint, body).await
}

fn operation_label(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}
