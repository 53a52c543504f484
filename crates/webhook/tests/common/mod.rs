//! A webhook started in-process on 127.0.0.1:0 with generated certificates, and a small TLS
//! client that talks to it the way kube-apiserver does (HTTP over TLS, JSON AdmissionReviews).
#![allow(dead_code)] // each test file uses a different part

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use webhook::certs::{self, Generated};
use webhook::{Config, Webhook};

pub struct Running {
    pub addr: SocketAddr,
    pub ops: SocketAddr,
    pub certs: Generated,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<Result<(), webhook::Error>>,
}

impl Running {
    /// Asks the server to shut down and waits for `run` to return.
    pub async fn shutdown(mut self) -> Result<(), webhook::Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.expect("server task")
    }

    pub fn trigger_shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub fn cert_path(&self) -> PathBuf {
        self.dir.path().join("tls.crt")
    }
}

pub fn generate() -> Generated {
    certs::generate(
        &["localhost".to_owned()],
        &["127.0.0.1".parse().expect("ip")],
        2,
    )
    .expect("certs")
}

pub fn config(dir: &Path) -> Config {
    Config {
        bind: "127.0.0.1:0".parse().expect("addr"),
        ops_bind: "127.0.0.1:0".parse().expect("addr"),
        tls_cert_file: dir.join("tls.crt"),
        tls_key_file: dir.join("tls.key"),
        policy: api::Policy::default(),
        max_body_bytes: 64 * 1024,
        cert_reload_interval: Duration::from_millis(100),
        shutdown_timeout: Duration::from_secs(5),
        limits: webhook::Limits::default(),
    }
}

/// Starts a webhook whose cert files are plain files in a temp dir.
pub async fn start() -> Running {
    start_with(|_| {}).await
}

pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = generate();
    std::fs::write(dir.path().join("tls.crt"), &certs.cert_pem).expect("write cert");
    std::fs::write(dir.path().join("tls.key"), &certs.key_pem).expect("write key");
    let mut cfg = config(dir.path());
    adjust(&mut cfg);
    start_config(cfg, certs, dir).await
}

pub async fn start_config(cfg: Config, certs: Generated, dir: tempfile::TempDir) -> Running {
    let webhook = Webhook::bind(cfg).await.expect("webhook binds");
    let addr = webhook.admission_addr().expect("addr");
    let ops = webhook.operations_addr().expect("ops addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(webhook.run(async move {
        let _ = stopped.await;
    }));
    wait_ready(ops).await;
    Running {
        addr,
        ops,
        certs,
        dir,
        stop: Some(stop),
        task,
    }
}

async fn wait_ready(ops: SocketAddr) {
    for _ in 0..100 {
        if let Ok((status, _)) = plain_get(ops, "/readyz").await
            && status == StatusCode::OK
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("webhook at {ops} never became ready");
}

pub fn client_config(
    cas: &[&str],
    versions: &[&'static SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for ca in cas {
        for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
            roots.add(cert.expect("ca pem")).expect("ca added");
        }
    }
    let provider = api::tls::crypto_provider();
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    // Every connection does a full handshake: a resumed session presents no certificate, and
    // the tests check which certificate new connections get.
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

pub type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// A new TLS connection (HTTP/1.1 keep-alive); also returns the certificate the server sent.
pub async fn connect(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> Result<(Sender, CertificateDer<'static>), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let tls = TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .cloned()
        .ok_or("no peer certificate")?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((sender, leaf))
}

/// POSTs `body` on an open connection.
pub async fn post_on(
    sender: &mut Sender,
    path: &str,
    body: Vec<u8>,
) -> Result<(StatusCode, Bytes), String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let request = Request::post(path)
        .header("content-type", "application/json")
        .header("host", "localhost")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, bytes))
}

/// One POST on a fresh connection trusting the server's CA.
pub async fn post(running: &Running, path: &str, body: Vec<u8>) -> (StatusCode, Bytes) {
    let config = client_config(
        &[&running.certs.ca_pem],
        &[&rustls::version::TLS13, &rustls::version::TLS12],
    );
    let (mut sender, _) = connect(running.addr, config).await.expect("connects");
    post_on(&mut sender, path, body).await.expect("posts")
}

/// POSTs a review and returns the decoded `response` of the AdmissionReview.
pub async fn review_response(running: &Running, path: &str, body: Value) -> Value {
    let (status, bytes) = post(running, path, serde_json::to_vec(&body).expect("encodes")).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    let review: Value = serde_json::from_slice(&bytes).expect("answer is JSON");
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    review["response"].clone()
}

/// Plain-HTTP GET on the operations port.
pub async fn plain_get(addr: SocketAddr, path: &str) -> Result<(StatusCode, String), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let request = Request::get(path)
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

/// An AdmissionReview shaped as kube-apiserver sends it.
pub fn review(operation: &str, object: Value, old_object: Value) -> Value {
    let name = object["metadata"]["name"]
        .as_str()
        .or(old_object["metadata"]["name"].as_str())
        .unwrap_or("")
        .to_owned();
    let options_kind = match operation {
        "CREATE" => "CreateOptions",
        "UPDATE" => "UpdateOptions",
        _ => "DeleteOptions",
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{operation}-{name}"),
            "kind": {"group": "myapp.tangx.in", "version": "v1", "kind": "Redis"},
            "resource": {"group": "myapp.tangx.in", "version": "v1", "resource": "redis"},
            "requestKind": {"group": "myapp.tangx.in", "version": "v1", "kind": "Redis"},
            "requestResource": {"group": "myapp.tangx.in", "version": "v1", "resource": "redis"},
            "name": name,
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "kubernetes-admin", "uid": "1", "groups": ["system:masters", "system:authenticated"]},
            "object": object,
            "oldObject": old_object,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind, "fieldManager": "kubectl-client-side-apply"}
        }
    })
}

pub fn redis(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "myapp.tangx.in/v1",
        "kind": "Redis",
        "metadata": {"name": name, "namespace": "default", "uid": "3f1c", "generation": 1,
                     "creationTimestamp": "2026-12-02T10:00:00Z"},
        "spec": spec
    })
}

/// The test process's peak resident memory (VmHWM), in bytes.
pub fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reads /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status")
        * 1024
}
