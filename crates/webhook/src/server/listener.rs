//! The TLS listener: the accept loop with its connection limits, each connection's task (the
//! handshake, the protocol ALPN chose, the idle and shutdown deadlines), and the drain.

use super::config::Config;
use super::limits::{Activity, BodyBudget, Limits, Reviews};
use super::routes::AppState;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use ops::clients::Clients;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

/// HTTP/2 flow-control windows: how much one stream, and one connection, may send before the
/// webhook reads it. Small, so waiting streams buffer little; reviews are a few KiB.
const H2_STREAM_WINDOW: u32 = 64 * 1024;
const H2_CONNECTION_WINDOW: u32 = 256 * 1024;
/// How often an HTTP/2 connection is pinged, and how long the answer may take, so a vanished
/// peer does not hold its connection.
const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) async fn serve_admission(
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
