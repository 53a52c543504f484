//! TLS behaviour of the admission port: versions, chains, certificate rotation the way kubelet
//! does it, a broken new pair, graceful shutdown, and the binary's own start and stop.

mod common;

use common::{client_config, connect, post_on, redis, review, start, start_config};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::version::{TLS12, TLS13};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn leaf_der(cert_pem: &str) -> CertificateDer<'static> {
    CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .next()
        .expect("a cert")
        .expect("pem")
}

fn valid_review() -> Vec<u8> {
    serde_json::to_vec(&review("CREATE", redis("tls", json!({})), Value::Null)).expect("encodes")
}

/// A TLS 1.1 ClientHello, byte by byte (no TLS library here will send one).
fn tls11_client_hello() -> Vec<u8> {
    let mut body = vec![0x03, 0x02]; // client_version TLS 1.1
    body.extend([0x42; 32]); // random
    body.push(0); // session id
    body.extend([0x00, 0x04, 0xc0, 0x09, 0x00, 0x2f]); // two TLS 1.1-era cipher suites
    body.extend([0x01, 0x00]); // null compression
    let mut handshake = vec![0x01, 0x00, 0x00, u8::try_from(body.len()).expect("small")];
    handshake.extend(body);
    let mut record = vec![
        0x16,
        0x03,
        0x01,
        0x00,
        u8::try_from(handshake.len()).expect("small"),
    ];
    record.extend(handshake);
    record
}

#[tokio::test]
async fn tls_1_1_is_refused_and_1_2_and_1_3_are_served() {
    let server = start().await;
    let mut tcp = TcpStream::connect(server.addr).await.expect("tcp");
    tcp.write_all(&tls11_client_hello())
        .await
        .expect("hello sent");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer)).await;
    assert!(
        answer.is_empty() || answer[0] == 0x15,
        "a TLS 1.1 hello must get an alert or a close, not a ServerHello: {answer:02x?}"
    );
    assert_ne!(
        answer.first(),
        Some(&0x16),
        "server must not negotiate TLS 1.1"
    );

    for version in [&TLS12, &TLS13] {
        let config = client_config(&[&server.certs.ca_pem], &[version]);
        let (mut sender, _) = connect(server.addr, config).await.expect("handshake");
        let (status, _) = post_on(&mut sender, "/validate", valid_review())
            .await
            .expect("posts");
        assert_eq!(status, 200, "{version:?}");
    }
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_certificate_chain_is_served_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = common::generate();
    // tls.crt as cert-manager writes it: leaf, then the issuing CA.
    std::fs::write(
        dir.path().join("tls.crt"),
        format!("{}{}", certs.cert_pem, certs.ca_pem),
    )
    .expect("cert");
    std::fs::write(dir.path().join("tls.key"), &certs.key_pem).expect("key");
    let cfg = common::config(dir.path());
    let server = start_config(cfg, certs.clone(), dir).await;
    let config = client_config(&[&certs.ca_pem], &[&TLS13]);
    let tcp = TcpStream::connect(server.addr).await.expect("tcp");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .expect("handshake");
    assert_eq!(
        tls.get_ref().1.peer_certificates().map(<[_]>::len),
        Some(2),
        "leaf and CA are both sent"
    );
    drop(tls);
    server.shutdown().await.expect("clean shutdown");
}

/// Lays out `dir` as kubelet mounts a Secret: files are links through `..data`, a link to a
/// timestamped folder; an update writes a new folder and atomically renames a new `..data` link.
fn kubelet_write(dir: &Path, generation: usize, cert_pem: &str, key_pem: &str) {
    let folder = format!("..gen_{generation}");
    std::fs::create_dir(dir.join(&folder)).expect("data folder");
    std::fs::write(dir.join(&folder).join("tls.crt"), cert_pem).expect("cert");
    std::fs::write(dir.join(&folder).join("tls.key"), key_pem).expect("key");
    std::os::unix::fs::symlink(&folder, dir.join("..data_tmp")).expect("tmp link");
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).expect("atomic swap");
    for file in ["tls.crt", "tls.key"] {
        if std::fs::symlink_metadata(dir.join(file)).is_err() {
            std::os::unix::fs::symlink(Path::new("..data").join(file), dir.join(file))
                .expect("file link");
        }
    }
    if generation > 0 {
        let _ = std::fs::remove_dir_all(dir.join(format!("..gen_{}", generation - 1)));
    }
}

/// Waits until a new connection is presented `want`.
async fn wait_for_leaf(
    addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
    want: &CertificateDer<'_>,
) {
    for _ in 0..100 {
        if let Ok((_, leaf)) = connect(addr, config.clone()).await
            && &leaf == want
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = connect(addr, config.clone())
        .await
        .map(|(_, leaf)| leaf.len());
    panic!("new connections never saw the rotated certificate (last connect: {seen:?})");
}

#[tokio::test]
async fn rotation_the_kubelet_way_fails_no_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let generations: Vec<_> = (0..4).map(|_| common::generate()).collect();
    kubelet_write(
        dir.path(),
        0,
        &generations[0].cert_pem,
        &generations[0].key_pem,
    );
    let cfg = common::config(dir.path());
    let server = start_config(
        cfg,
        generations[0].clone(),
        tempfile::tempdir().expect("tempdir"),
    )
    .await;
    let cas: Vec<&str> = generations.iter().map(|g| g.ca_pem.as_str()).collect();
    let config = client_config(&cas, &[&TLS13, &TLS12]);

    let sent = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut clients = Vec::new();
    for keep_alive in [true, false] {
        let (addr, config, sent, failed, mut stop) = (
            server.addr,
            config.clone(),
            sent.clone(),
            failed.clone(),
            stop_rx.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut held = None;
            while !*stop.borrow_and_update() {
                if held.is_none() || !keep_alive {
                    held = connect(addr, config.clone()).await.ok().map(|(sender, _)| sender);
                }
                let ok = match held.as_mut() {
                    Some(sender) => matches!(post_on(sender, "/validate", valid_review()).await, Ok((s, _)) if s == 200),
                    None => false,
                };
                sent.fetch_add(1, Ordering::SeqCst);
                if !ok {
                    failed.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }

    for (generation, certs) in generations.iter().enumerate().skip(1) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        kubelet_write(dir.path(), generation, &certs.cert_pem, &certs.key_pem);
        wait_for_leaf(server.addr, config.clone(), &leaf_der(&certs.cert_pem)).await;
    }
    let _ = stop_tx.send(true);
    for client in clients {
        client.await.expect("client task");
    }
    let (sent, failed) = (sent.load(Ordering::SeqCst), failed.load(Ordering::SeqCst));
    assert!(
        sent > 20,
        "the clients kept sending during the rotations ({sent})"
    );
    assert_eq!(
        failed, 0,
        "{failed} of {sent} requests failed during rotation"
    );
    let (_, metrics) = common::plain_get(server.ops, "/metrics")
        .await
        .expect("metrics");
    assert!(
        metrics.contains("redis_webhook_certificate_reloads_total 3"),
        "{metrics}"
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_broken_new_pair_keeps_the_last_good_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = common::generate();
    let second = common::generate();
    kubelet_write(dir.path(), 0, &first.cert_pem, &first.key_pem);
    let server = start_config(
        common::config(dir.path()),
        first.clone(),
        tempfile::tempdir().expect("tempdir"),
    )
    .await;
    let config = client_config(&[&first.ca_pem, &second.ca_pem], &[&TLS13]);

    // A new certificate with the old key (a half-finished update), then garbage.
    kubelet_write(dir.path(), 1, &second.cert_pem, &first.key_pem);
    tokio::time::sleep(Duration::from_millis(400)).await;
    kubelet_write(dir.path(), 2, "not a certificate", "not a key");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (mut sender, leaf) = connect(server.addr, config.clone())
        .await
        .expect("still serving");
    assert_eq!(
        leaf,
        leaf_der(&first.cert_pem),
        "the last good certificate is still served"
    );
    assert_eq!(
        post_on(&mut sender, "/validate", valid_review())
            .await
            .expect("posts")
            .0,
        200
    );
    let (_, metrics) = common::plain_get(server.ops, "/metrics")
        .await
        .expect("metrics");
    assert!(
        metrics.contains("redis_webhook_certificate_reload_failures_total 2"),
        "{metrics}"
    );

    kubelet_write(dir.path(), 3, &second.cert_pem, &second.key_pem);
    wait_for_leaf(server.addr, config, &leaf_der(&second.cert_pem)).await;
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn shutdown_finishes_in_flight_requests_and_refuses_new_ones() {
    let mut server = start().await;
    let config = client_config(&[&server.certs.ca_pem], &[&TLS13]);
    let tcp = TcpStream::connect(server.addr).await.expect("tcp");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = tokio_rustls::TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .expect("handshake");
    let body = valid_review();
    let (first_half, second_half) = body.split_at(body.len() / 2);
    let head = format!(
        "POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.expect("head");
    tls.write_all(first_half).await.expect("first half");
    tls.flush().await.expect("flush");
    tokio::time::sleep(Duration::from_millis(100)).await;

    server.trigger_shutdown();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = common::plain_get(server.ops, "/readyz")
        .await
        .unwrap_or((hyper::StatusCode::SERVICE_UNAVAILABLE, String::new()));
    assert_ne!(status, 200, "not ready while draining");
    assert!(
        connect(server.addr, config).await.is_err(),
        "new connections are refused while draining"
    );

    tls.write_all(second_half).await.expect("second half");
    tls.flush().await.expect("flush");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut answer))
        .await
        .expect("answered in time")
        .expect("read");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains(r#""allowed":true"#), "{text}");
    server
        .task
        .await
        .expect("task")
        .expect("run returns Ok after draining");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[tokio::test]
async fn the_binary_generates_certs_serves_and_exits_0_on_sigterm() {
    let binary = env!("CARGO_BIN_EXE_redis-webhook");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("certs");
    let status = std::process::Command::new(binary)
        .args([
            "gen-certs",
            "--dns",
            "localhost",
            "--ip",
            "127.0.0.1",
            "--out",
        ])
        .arg(&out)
        .status()
        .expect("gen-certs runs");
    assert!(status.success());
    let ca = std::fs::read_to_string(out.join("ca.crt")).expect("ca.crt written");

    let (port, ops_port) = (free_port(), free_port());
    let mut child = std::process::Command::new(binary)
        .args([
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--ops-bind",
            &format!("127.0.0.1:{ops_port}"),
        ])
        .arg("--tls-cert-file")
        .arg(out.join("tls.crt"))
        .arg("--tls-key-file")
        .arg(out.join("tls.key"))
        .spawn()
        .expect("server starts");
    let ops: std::net::SocketAddr = format!("127.0.0.1:{ops_port}").parse().expect("addr");
    let mut ready = false;
    for _ in 0..200 {
        if matches!(common::plain_get(ops, "/readyz").await, Ok((s, _)) if s == 200) {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(ready, "the binary became ready");
    let config = client_config(&[&ca], &[&TLS13]);
    let (mut sender, _) = connect(format!("127.0.0.1:{port}").parse().expect("addr"), config)
        .await
        .expect("connects");
    assert_eq!(
        post_on(&mut sender, "/mutate", valid_review())
            .await
            .expect("posts")
            .0,
        200
    );

    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let exit = child.wait().expect("exits");
    assert!(exit.success(), "SIGTERM exits 0, got {exit:?}");
}

#[tokio::test]
async fn the_binary_refuses_to_start_without_a_usable_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("tls.crt"), "garbage").expect("write");
    std::fs::write(dir.path().join("tls.key"), "garbage").expect("write");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_redis-webhook"))
        .args([
            "--bind",
            "127.0.0.1:0",
            "--ops-bind",
            "127.0.0.1:0",
            "--tls-cert-file",
        ])
        .arg(dir.path().join("tls.crt"))
        .arg("--tls-key-file")
        .arg(dir.path().join("tls.key"))
        .output()
        .expect("runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is not a usable certificate or key"),
        "{stderr}"
    );
}
