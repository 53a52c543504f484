//! A tenant's image answers the controller's reads (DESIGN §9 tenancy): a redis-server that
//! announces a 2 GB reply and streams it must cost the controller a bounded read and an error
//! naming the pod, not its memory. A test binary of its own: the process's peak memory is
//! measured, and no other test shares it.

use controller::redis_server::{Login, MAX_REPLY_BYTES, Server};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How much the call may add to the process's peak resident memory.
const GROWTH_LIMIT_KIB: u64 = 8 * 1024;

/// A kernel figure from /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Answers the client's handshake (`CLIENT SETINFO`) as redis-server does, then answers
/// `INFO replication` with a bulk string announced as 2,000,000,000 bytes and streams it for as
/// long as the client reads.
async fn endless_replier() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("local addr").port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                loop {
                    let Ok(read) = socket.read(&mut request).await else {
                        return;
                    };
                    let text = String::from_utf8_lossy(&request[..read]);
                    if read == 0 {
                        return;
                    }
                    if text.contains("replication") {
                        break;
                    }
                    let handshake = "+OK\r\n".repeat(text.matches("SETINFO").count());
                    if socket.write_all(handshake.as_bytes()).await.is_err() {
                        return;
                    }
                }
                if socket.write_all(b"$2000000000\r\n").await.is_err() {
                    return;
                }
                let chunk = vec![b'x'; 64 * 1024];
                while socket.write_all(&chunk).await.is_ok() {}
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_streaming_an_endless_reply_costs_a_bounded_read_and_a_clear_error() {
    let port = endless_replier().await;
    let server = Server {
        pod: "cache-0",
        ip: "127.0.0.1",
        port,
        login: Login::default(),
        tls: None,
    };
    // Peak memory counts from here (writing 5 to clear_refs resets VmHWM to the current RSS).
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS");
    let before = status_kib("VmRSS");
    // A guard against a hang, not a measurement of speed.
    let result = tokio::time::timeout(Duration::from_secs(30), server.observe())
        .await
        .expect("the read ends by itself");
    let peak = status_kib("VmHWM");
    let growth = peak.saturating_sub(before);
    eprintln!("peak RSS grew by {growth} KiB");
    assert!(
        growth < GROWTH_LIMIT_KIB,
        "the call grew the peak RSS by {growth} KiB ({before} KiB before, {peak} KiB at peak)"
    );
    let error = result.expect_err("a reply over the cap is an error");
    let message = error.to_string();
    let chain = std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ");
    assert!(
        message.contains("cache-0"),
        "the error names the pod: {message}"
    );
    assert!(
        chain.contains(&MAX_REPLY_BYTES.to_string()),
        "the error says the reply was too long: {chain}"
    );
}
