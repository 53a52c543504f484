//! [`Config`]: everything the server needs, decided by the command line.

use super::limits::Limits;
use api::Policy;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
