//! The operations port of both binaries (/healthz, /readyz, /metrics) cannot be taken from the
//! kubelet by a pod: requests that never finish their headers are cut, and one address gets a
//! small share of the connections. Before, 8,000 half-sent requests held 147 MiB and every file
//! descriptor, and the probes failed.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Stops a test that would otherwise hang; never a measure of speed.
const GUARD: Duration = Duration::from_secs(60);
/// Where the attacking connections come from (another pod).
const ATTACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

async fn connect_from(source: Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind((source, 0).into())?;
    socket.connect(to).await
}

/// `GET path` as the kubelet's probe sends it; the status code of the answer.
async fn probe(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut tcp = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).await?;
    let text = String::from_utf8_lossy(&answer);
    Ok(text.split(' ').nth(1).unwrap_or_default().to_owned())
}

/// Reads until the server closes the connection (end of stream or an error).
async fn closed_by_server(mut stream: TcpStream) {
    let mut buf = [0_u8; 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[tokio::test]
async fn half_sent_requests_are_cut_and_the_probes_answered() {
    const HALF_SENT: usize = 300;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = ops::operations_router(Arc::new(AtomicBool::new(true)), "not ready", || {
        "# EOF\n".to_owned()
    });
    tokio::spawn(ops::serve_operations(
        listener,
        router,
        std::future::pending(),
    ));

    let mut half_sent = Vec::new();
    for _ in 0..HALF_SENT {
        let mut tcp = connect_from(ATTACKER, addr).await.expect("connects");
        // The request line and one header; the blank line that ends the headers never comes.
        let _ = tcp
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n")
            .await;
        half_sent.push(tcp);
    }

    // The kubelet (another address) still gets its answers.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let status = tokio::time::timeout(GUARD, probe(addr, path))
            .await
            .unwrap_or_else(|_| panic!("{path} was not answered during the attack"))
            .expect("probe");
        assert_eq!(status, "200", "{path}");
    }

    // The server ends every half-sent request.
    for (i, tcp) in half_sent.into_iter().enumerate() {
        tokio::time::timeout(GUARD, closed_by_server(tcp))
            .await
            .unwrap_or_else(|_| panic!("half-sent request {i} was never cut"));
    }
}
