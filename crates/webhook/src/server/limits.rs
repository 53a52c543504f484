//! What one client may take of the webhook ([`Limits`]), and the per-request limits the routes
//! are served behind: the body read within its budget and timeout, one of the slots to decide
//! it, the request timeout over all of it, and when a connection was last busy.

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::http::header::CONTENT_LENGTH;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use hyper_util::service::TowerToHyperService;
use ops::clients::ClientConnection;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

/// When a connection last had a request in flight.
pub(super) struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    pub(super) fn new() -> Self {
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
    pub(super) fn idle_for(&self) -> Duration {
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
pub(super) struct Reviews {
    pub(super) inner: TowerToHyperService<Router>,
    pub(super) activity: Arc<Activity>,
    pub(super) in_flight: Arc<Semaphore>,
    pub(super) bodies: Arc<BodyBudget>,
    pub(super) limits: Arc<Limits>,
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
pub(super) struct BodyBudget {
    pub(super) client: ClientConnection,
    pub(super) all: Arc<Semaphore>,
    pub(super) max_body_bytes: usize,
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
