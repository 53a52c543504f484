//! Serving certificate, loaded from disk and reloaded when the files change (DESIGN §4).
//!
//! One rustls `ServerConfig` lives for the whole process; its certificate resolver hands every
//! new handshake the current key pair, so a rotation never touches connections in flight. The
//! files are polled, not watched: kubelet updates a mounted Secret by swapping a `..data`
//! symlink, which a poll of the paths sees without any inotify subtleties. A new pair that does
//! not load (half-written, mismatched, garbage) is logged and the last good one is kept.

use crate::Error;
use crate::metrics::Metrics;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, version};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// The crypto provider for both loading keys and serving: the workspace's one
/// ([`api::tls::crypto_provider`]).
pub fn provider() -> Arc<CryptoProvider> {
    api::tls::crypto_provider()
}

/// Reads a PEM certificate chain (leaf first) and its private key, checking that they match.
pub fn load_certified_key(
    cert_file: &Path,
    key_file: &Path,
) -> Result<(CertifiedKey, FilesSeen), Error> {
    let seen = FilesSeen::read(cert_file, key_file)?;
    Ok((seen.certified_key(cert_file, key_file)?, seen))
}

/// The bytes of the two files as last read, to notice a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesSeen {
    cert: Vec<u8>,
    key: Vec<u8>,
}

impl FilesSeen {
    fn read(cert_file: &Path, key_file: &Path) -> Result<Self, Error> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| Error::ReadFile {
                path: path.to_owned(),
                source,
            })
        };
        Ok(FilesSeen {
            cert: read(cert_file)?,
            key: read(key_file)?,
        })
    }

    fn certified_key(&self, cert_file: &Path, key_file: &Path) -> Result<CertifiedKey, Error> {
        let bad_cert = |reason: String| Error::BadCertificate {
            path: cert_file.to_owned(),
            reason,
        };
        let chain = CertificateDer::pem_slice_iter(&self.cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad_cert(e.to_string()))?;
        if chain.is_empty() {
            return Err(bad_cert("no PEM CERTIFICATE block found".to_owned()));
        }
        let key = PrivateKeyDer::from_pem_slice(&self.key).map_err(|e| Error::BadCertificate {
            path: key_file.to_owned(),
            reason: e.to_string(),
        })?;
        CertifiedKey::from_der(chain, key, &provider()).map_err(|e| {
            bad_cert(format!(
                "does not match the key in {}: {e}",
                key_file.display()
            ))
        })
    }
}

/// Hands out the current certificate to every handshake.
#[derive(Debug)]
pub struct ReloadingResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ReloadingResolver {
    pub fn new(initial: CertifiedKey) -> Self {
        ReloadingResolver {
            current: RwLock::new(Arc::new(initial)),
        }
    }

    fn replace(&self, next: CertifiedKey) {
        // A poisoned lock only means a panic elsewhere while holding it; the value is still whole.
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
    }

    /// The certificate new handshakes get.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl ResolvesServerCert for ReloadingResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// TLS 1.2 and 1.3 only, HTTP/2 and HTTP/1.1 by ALPN, certificate from `resolver`.
pub fn server_config(resolver: Arc<ReloadingResolver>) -> Result<ServerConfig, Error> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&version::TLS13, &version::TLS12])
        .map_err(Error::Tls)?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// What one poll of the files found.
#[derive(Debug, PartialEq, Eq)]
pub enum Poll {
    Unchanged,
    Reloaded,
    /// The files changed but the new pair did not load; the previous one is still served.
    Failed(String),
}

/// Polls the certificate files and swaps the resolver's pair when they change.
#[derive(Debug)]
pub struct CertReloader {
    cert_file: PathBuf,
    key_file: PathBuf,
    resolver: Arc<ReloadingResolver>,
    last_seen: FilesSeen,
}

impl CertReloader {
    pub fn new(
        cert_file: PathBuf,
        key_file: PathBuf,
        resolver: Arc<ReloadingResolver>,
        seen: FilesSeen,
    ) -> Self {
        CertReloader {
            cert_file,
            key_file,
            resolver,
            last_seen: seen,
        }
    }

    /// Reads the files once; reloads if their bytes differ from the last read.
    pub fn poll(&mut self) -> Poll {
        let seen = match FilesSeen::read(&self.cert_file, &self.key_file) {
            Ok(seen) => seen,
            // Mid-swap a file can be briefly missing; the next poll sees the settled state.
            Err(e) => return Poll::Failed(e.to_string()),
        };
        if seen == self.last_seen {
            return Poll::Unchanged;
        }
        let outcome = match seen.certified_key(&self.cert_file, &self.key_file) {
            Ok(key) => {
                self.resolver.replace(key);
                Poll::Reloaded
            }
            Err(e) => Poll::Failed(e.to_string()),
        };
        // Remember these bytes either way, so a bad pair is reported once, not every poll.
        self.last_seen = seen;
        outcome
    }

    /// Polls every `interval` until the task is dropped.
    pub async fn run(mut self, interval: Duration, metrics: Arc<Metrics>) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_failure: Option<String> = None;
        loop {
            ticker.tick().await;
            match self.poll() {
                Poll::Unchanged => {}
                Poll::Reloaded => {
                    last_failure = None;
                    metrics.cert_reloads.inc();
                    tracing::info!(cert = %self.cert_file.display(), "reloaded the serving certificate");
                }
                Poll::Failed(reason) if last_failure.as_deref() != Some(&reason) => {
                    metrics.cert_reload_failures.inc();
                    tracing::warn!(%reason, "new certificate files did not load; still serving the previous certificate");
                    last_failure = Some(reason);
                }
                Poll::Failed(_) => {}
            }
        }
    }
}
