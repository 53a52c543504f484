//! The controller's TLS client for the pods of a Redis with `spec.tls` (DESIGN §3k): rustls
//! through tokio-rustls under the `redis` crate's connection (which takes any stream; its own
//! TLS features are not used, so the reply cap stays under it as for plaintext).

use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// How the controller speaks TLS to the pods of one Redis: the client configuration (the CAs it
/// trusts them with, its certificate shown when asked) and the name each pod's certificate must
/// carry, whatever IP the pod has.
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

impl TlsClient {
    /// The handshake over `stream`: the pod's certificate verified against the CAs and the name.
    pub async fn handshake(&self, stream: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        TlsConnector::from(self.config.clone())
            .connect(self.name.clone(), stream)
            .await
    }
}

/// The certificate a pod served in a finished handshake.
pub fn served(stream: &TlsStream<TcpStream>) -> Option<CertificateDer<'static>> {
    let (_, connection) = stream.get_ref();
    connection
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|cert| cert.clone().into_owned())
}
