//! TLS to the redis-server (`--tls-ca-file`): rustls with the ring provider, as the controller
//! speaks it, the CAs from a PEM file, an optional client certificate (for `tls-auth-clients`),
//! and the name the server's certificate must carry.

use crate::Error;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most certificates read from one PEM file (a bound on work).
const MAX_CERTIFICATES: usize = 64;

/// Where the TLS material is, as the flags give it.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub ca_file: PathBuf,
    /// `(certificate chain, key)`.
    pub client: Option<(PathBuf, PathBuf)>,
    /// The name the server's certificate is checked against.
    pub server_name: String,
}

/// A ready TLS client.
#[derive(Clone)]
pub struct TlsClient {
    pub config: Arc<rustls::ClientConfig>,
    pub name: ServerName<'static>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl TlsFiles {
    /// Reads the files; `Err` ([`Error::BadConfig`]) names the file that cannot be used.
    pub fn load(&self) -> Result<TlsClient, Error> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in certificates(&self.ca_file)? {
            roots.add(cert).map_err(|e| {
                Error::BadConfig(format!(
                    "{} holds a CA certificate rustls cannot use: {e}",
                    self.ca_file.display()
                ))
            })?;
        }
        let builder = rustls::ClientConfig::builder_with_provider(api::tls::crypto_provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::BadConfig(format!("TLS versions: {e}")))?
            .with_root_certificates(roots);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert_file, key_file)) => {
                let chain = certificates(cert_file)?;
                let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
                    Error::BadConfig(format!(
                        "{} is not a PEM private key: {e}",
                        key_file.display()
                    ))
                })?;
                // Checked here: a key of another certificate would otherwise only show as a
                // refused handshake.
                rustls::sign::CertifiedKey::from_der(
                    chain.clone(),
                    key.clone_key(),
                    &api::tls::crypto_provider(),
                )
                .map_err(|e| {
                    Error::BadConfig(format!(
                        "{} and {} cannot be used as a client certificate: {e}",
                        cert_file.display(),
                        key_file.display()
                    ))
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    Error::BadConfig(format!(
                        "{} and {} cannot be used as a client certificate: {e}",
                        cert_file.display(),
                        key_file.display()
                    ))
                })?
            }
        };
        let name = ServerName::try_from(self.server_name.clone()).map_err(|e| {
            Error::BadConfig(format!(
                "{:?} cannot be a TLS server name: {e}",
                self.server_name
            ))
        })?;
        Ok(TlsClient {
            config: Arc::new(config),
            name,
        })
    }
}

/// Makes the workspace's provider ([`api::tls::crypto_provider`]) the process's default
/// (object_store's HTTP client, reqwest without a provider of its own, takes the process's); a
/// provider already installed stays.
pub fn install_provider() {
    let provider = Arc::unwrap_or_clone(api::tls::crypto_provider());
    let _ = rustls::crypto::CryptoProvider::install_default(provider);
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bad = |what: String| Error::BadConfig(format!("{}: {what}", path.display()));
    let mut found = Vec::new();
    let iter = CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    for cert in iter {
        let cert = cert.map_err(|e| bad(format!("not PEM certificates: {e}")))?;
        if found.len() == MAX_CERTIFICATES {
            return Err(bad(format!("more than {MAX_CERTIFICATES} certificates")));
        }
        found.push(cert);
    }
    if found.is_empty() {
        return Err(bad("no PEM certificate".to_owned()));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_garbage_files_are_named() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let garbage = dir.path().join("ca.crt");
        std::fs::write(&garbage, "not pem").expect("written");
        let files = TlsFiles {
            ca_file: garbage.clone(),
            client: None,
            server_name: "redis".into(),
        };
        let error = files.load().expect_err("no certificate");
        assert_eq!(error.reason(), crate::Reason::BadConfig);
        assert!(error.to_string().contains("ca.crt"), "{error}");
        let missing = TlsFiles {
            ca_file: dir.path().join("nope"),
            ..files
        };
        assert!(
            missing
                .load()
                .expect_err("missing")
                .to_string()
                .contains("nope")
        );
    }

    #[test]
    fn a_ca_and_a_client_pair_load() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let ca_key = rcgen::KeyPair::generate().expect("a key");
        let mut ca_params = rcgen::CertificateParams::default();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("a CA");
        let key = rcgen::KeyPair::generate().expect("a key");
        let cert = rcgen::CertificateParams::new(vec!["backup".to_owned()])
            .expect("params")
            .signed_by(&key, &ca)
            .expect("a certificate");
        let write = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("written");
            path
        };
        let files = TlsFiles {
            ca_file: write("ca.crt", ca.pem()),
            client: Some((
                write("tls.crt", cert.pem()),
                write("tls.key", key.serialize_pem()),
            )),
            server_name: "10.0.0.1".into(),
        };
        let client = files.load().expect("loads");
        assert!(matches!(client.name, ServerName::IpAddress(_)));
        let mismatched = TlsFiles {
            client: Some((
                write("other.crt", ca.pem()),
                write("other.key", key.serialize_pem()),
            )),
            ..files
        };
        assert!(mismatched.load().is_err(), "a key for another certificate");
    }
}
