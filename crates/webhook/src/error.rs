use std::net::SocketAddr;
use std::path::PathBuf;

/// The one error type of the webhook crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("could not read {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a usable certificate or key: {reason}", path.display())]
    BadCertificate { path: PathBuf, reason: String },
    #[error("invalid TLS configuration: {0}")]
    Tls(#[source] rustls::Error),
    #[error("could not listen on {0}: {1}")]
    Bind(SocketAddr, #[source] std::io::Error),
    #[error("gen-certs needs at least one --dns NAME or --ip ADDRESS")]
    NoSubjectNames,
    #[error("could not generate certificates: {0}")]
    CertGen(#[source] rcgen::Error),
    #[error("could not write {}: {source}", path.display())]
    WriteFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not start a thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the metrics server failed: {0}")]
    MetricsServer(#[source] std::io::Error),
}
