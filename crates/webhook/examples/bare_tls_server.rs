//! The ceiling for `make bench-webhook`: hyper over the same rustls configuration as
//! redis-webhook, reading each request body and answering one fixed AdmissionReview, with no
//! routing, no decoding and no decision. redis-webhook's throughput is reported as a ratio to this.
//!
//! Usage: bare_tls_server BIND CERT_FILE KEY_FILE

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Response, service::service_fn};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use webhook::tls::{self, ReloadingResolver};

const ANSWER: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"bench","allowed":true,"status":{}}}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, bind, cert, key] = args.as_slice() else {
        return Err("usage: bare_tls_server BIND CERT_FILE KEY_FILE".into());
    };
    let (certified, _) = tls::load_certified_key(cert.as_ref(), key.as_ref())?;
    let resolver = Arc::new(ReloadingResolver::new(certified));
    let acceptor = TlsAcceptor::from(Arc::new(tls::server_config(resolver)?));
    let listener = TcpListener::bind(bind).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let service = service_fn(|request: hyper::Request<hyper::body::Incoming>| async {
                // Receive the review as any server must, then ignore it.
                let _ = request.into_body().collect().await;
                Ok::<_, std::convert::Infallible>(
                    Response::builder()
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from_static(ANSWER.as_bytes())))
                        .unwrap_or_default(),
                )
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}
