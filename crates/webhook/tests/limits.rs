//! A client inside the cluster cannot take the webhook from the API server: connections that
//! stall are cut, a flood of HTTP/2 streams is held to the limits, and real reviews are answered
//! meanwhile. Behaviour only: the timeouts are short here so the tests end quickly, but nothing
//! asserts how long anything took (a generous guard only stops a test that would hang).

mod common;

use clap::Parser;
use common::{client_config, connect, post_on, redis, review};
use http_body_util::BodyExt;
use hyper::body::{Body, Bytes, Frame};
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Stops a test that would otherwise hang; never a measure of speed.
const GUARD: Duration = Duration::from_secs(60);

fn valid_review() -> Vec<u8> {
    serde_json::to_vec(&review("CREATE", redis("limits", json!({})), Value::Null)).expect("encodes")
}

fn tls_config(running: &common::Running, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut config = (*client_config(
        &[&running.certs.ca_pem],
        &[&rustls::version::TLS13, &rustls::version::TLS12],
    ))
    .clone();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

async fn tls(
    running: &common::Running,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(running.addr).await.expect("connects");
    let name = ServerName::try_from("localhost").expect("name");
    TlsConnector::from(tls_config(running, alpn))
        .connect(name, tcp)
        .await
        .expect("TLS handshake")
}

/// Reads until the server closes the connection (end of stream or an error).
async fn closed_by_server(mut stream: Box<dyn AsyncRead + Unpin + Send>) {
    let mut buf = [0_u8; 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[tokio::test]
async fn stalled_connections_are_cut_and_reviews_still_answered() {
    let running = common::start_with(|c| {
        c.limits.max_connections = 4;
        c.limits.header_read_timeout = Duration::from_millis(300);
        c.limits.idle_timeout = Duration::from_millis(500);
        c.limits.request_timeout = Duration::from_millis(500);
    })
    .await;

    // As many stalled connections as the limit allows, each stalled differently.
    let raw = TcpStream::connect(running.addr).await.expect("connects");
    let silent_http1 = tls(&running, &[b"http/1.1"]).await;
    let silent_http2 = tls(&running, &[b"h2"]).await;
    let mut partial = tls(&running, &[]).await;
    partial
        .write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: app")
        .await
        .expect("writes");
    partial.flush().await.expect("flushes");
    let stalled: Vec<Box<dyn AsyncRead + Unpin + Send>> = vec![
        Box::new(raw),
        Box::new(silent_http1),
        Box::new(silent_http2),
        Box::new(partial),
    ];

    // A review still gets through: the stalled connections give their slots back.
    let answered = tokio::time::timeout(GUARD, async {
        let (mut sender, _) = connect(running.addr, tls_config(&running, &[]))
            .await
            .expect("connects");
        post_on(&mut sender, "/validate", valid_review())
            .await
            .expect("posts")
    })
    .await
    .expect("a review was not answered while stalled connections held every slot");
    assert_eq!(answered.0, StatusCode::OK);

    for (i, stream) in stalled.into_iter().enumerate() {
        tokio::time::timeout(GUARD, closed_by_server(stream))
            .await
            .unwrap_or_else(|_| panic!("stalled connection {i} was never closed"));
    }
}

/// A request body that sends `chunks` chunks and then never ends, as a flooding client would.
struct Stalling {
    chunk: Bytes,
    chunks: usize,
}

impl Body for Stalling {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.chunks == 0 {
            return Poll::Pending;
        }
        self.chunks -= 1;
        Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))))
    }
}

/// The configuration `redis-webhook` runs with when given no flags.
fn shipped() -> webhook::Config {
    let cli = webhook::cli::Cli::try_parse_from(["redis-webhook"]).expect("parses");
    webhook::Config::from(cli.serve)
}

#[tokio::test]
async fn a_stream_flood_leaves_reviews_answered_and_memory_bounded() {
    const STREAMS: usize = 200;
    const CHUNK: usize = 64 * 1024;
    // The shipped limits (flags' defaults); only the request timeout is short, so the flood
    // ends quickly.
    let defaults = shipped();
    let max_body = defaults.max_body_bytes;
    let running = common::start_with(|c| {
        c.max_body_bytes = defaults.max_body_bytes;
        c.limits = defaults.limits;
        c.limits.request_timeout = Duration::from_millis(300);
    })
    .await;
    // Warm up, then take the baseline.
    common::post(&running, "/validate", valid_review()).await;
    let before = common::peak_rss();

    // One HTTP/2 connection opens STREAMS requests, each sending a body just under the limit
    // and never finishing it.
    let io = TokioIo::new(tls(&running, &[b"h2"]).await);
    let (sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .expect("HTTP/2 handshake");
    tokio::spawn(connection);
    let chunk = Bytes::from(vec![b' '; CHUNK]);
    let flood: Vec<_> = (0..STREAMS)
        .map(|_| {
            let mut sender = sender.clone();
            let body = Stalling {
                chunk: chunk.clone(),
                chunks: max_body / CHUNK - 1,
            };
            tokio::spawn(async move {
                let request = Request::post("/validate")
                    .header("content-type", "application/json")
                    .body(body)
                    .expect("request");
                match sender.send_request(request).await {
                    Ok(response) => {
                        let status = response.status();
                        let _ = response.into_body().collect().await;
                        Some(status)
                    }
                    Err(_) => None,
                }
            })
        })
        .collect();

    // Meanwhile, a review on another connection is answered.
    let (status, _) =
        tokio::time::timeout(GUARD, common::post(&running, "/validate", valid_review()))
            .await
            .expect("a review was not answered during the flood");
    assert_eq!(status, StatusCode::OK);

    // Every flooding stream ends: the webhook gives up on bodies that never finish.
    for stream in flood {
        let status = tokio::time::timeout(GUARD, stream)
            .await
            .expect("a flooding stream was never ended")
            .expect("stream task");
        assert!(
            status.is_none_or(|s| s == StatusCode::REQUEST_TIMEOUT),
            "{status:?}"
        );
    }

    // The flood pushed STREAMS x ~1 MiB at the webhook; it held at most its limits of it.
    let grown = common::peak_rss().saturating_sub(before);
    assert!(
        grown < 64 * 1024 * 1024,
        "peak RSS grew by {} MiB during the flood",
        grown / (1024 * 1024)
    );
}

/// The registration's `timeoutSeconds` (the chart's 10): a review the API server waited longer
/// for has failed, whatever the webhook answers after.
const API_SERVER_TIMEOUT: Duration = Duration::from_secs(10);

/// A TCP connection from `source` (another loopback address: another pod).
async fn connect_from(source: [u8; 4], to: std::net::SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind((std::net::Ipv4Addr::from(source), 0).into())?;
    socket.connect(to).await
}

/// One attacking connection: silent before the TLS handshake, silent after it, or trickling a
/// request body a byte every 2 s, as long as the server keeps it.
async fn attack(
    kind: usize,
    running_addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
) {
    let Ok(mut tcp) = connect_from(ATTACKER, running_addr).await else {
        return;
    };
    if kind.is_multiple_of(3) {
        let _ = tcp.read(&mut [0_u8; 16]).await;
        return;
    }
    let name = ServerName::try_from("localhost").expect("name");
    let Ok(mut tls) = TlsConnector::from(config).connect(name, tcp).await else {
        return;
    };
    if kind % 3 == 1 {
        let _ = tls.read(&mut [0_u8; 16]).await;
        return;
    }
    let head = "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
    if tls.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    loop {
        if tls.write_all(b" ").await.is_err() || tls.flush().await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Where the attacking connections come from.
const ATTACKER: [u8; 4] = [127, 0, 0, 2];

#[tokio::test]
async fn slow_and_silent_connections_from_a_pod_leave_the_api_servers_reviews_answered() {
    const ATTACKS: usize = 450;
    const REVIEWS: usize = 20;
    // The shipped limits, unchanged.
    let defaults = shipped();
    let running = common::start_with(|c| {
        c.max_body_bytes = defaults.max_body_bytes;
        c.limits = defaults.limits;
    })
    .await;
    let config = tls_config(&running, &[b"http/1.1"]);
    let attacks: Vec<_> = (0..ATTACKS)
        .map(|kind| tokio::spawn(attack(kind, running.addr, config.clone())))
        .collect();
    // Let the attack take hold before the reviews come.
    tokio::time::sleep(Duration::from_secs(1)).await;

    // The API server (another address) sends reviews, each on a new connection; each must be
    // answered before the API server gives up on it.
    for i in 0..REVIEWS {
        let answered = tokio::time::timeout(API_SERVER_TIMEOUT, async {
            let (mut sender, _) = connect(running.addr, tls_config(&running, &[]))
                .await
                .map_err(|e| format!("connecting: {e}"))?;
            post_on(&mut sender, "/validate", valid_review()).await
        })
        .await;
        match answered {
            Ok(Ok((status, _))) => assert_eq!(status, StatusCode::OK, "review {i}"),
            Ok(Err(e)) => panic!("review {i} failed during the attack: {e}"),
            Err(_) => panic!(
                "review {i} was not answered within the API server's {API_SERVER_TIMEOUT:?} during the attack"
            ),
        }
    }
    for attack in attacks {
        attack.abort();
    }
}
