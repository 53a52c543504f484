//! The admission server: axum routes over tokio-rustls, plus the plain-HTTP operations port
//! (/healthz, /readyz, /metrics). Thin I/O around `admission::answer` (DESIGN §4).
//!
//! This module binds both ports and runs them until shutdown; the parts:
//! - `config`: [`Config`], what the command line decided.
//! - `listener`: the TLS accept loop, each connection's task, and the drain on shutdown.
//! - `limits`: [`Limits`], what one client may take, and the per-request limits around the
//!   routes (the body budget, the slots, the request timeout, idleness).
//! - `routes`: the admission and operations routers, and the answer to one review.

mod config;
mod limits;
mod listener;
mod routes;

use crate::Error;
use crate::loose::LooseReader;
use crate::metrics::Metrics;
use crate::tls::{self, CertReloader, ReloadingResolver};
use listener::serve_admission;
use routes::{AppState, admission_router, operations_router};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

pub use config::Config;
pub use limits::Limits;

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
