//! redis-backup's library against fake "redis-servers" that misbehave (a TcpListener in the
//! test): garbage, silence, cut streams, refusals. Needs no bed.

mod backup_io_common;

use std::time::{Duration, Instant};

use backup::{Reason, RedisSource, Writer, fetch_rdb};
use backup_io_common::*;
use e2e::Error;
use e2e::operator::free_port;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One connection to a fake redis-server on 127.0.0.1 doing `behave`; its port.
async fn fake_redis<F, Fut>(behave: F) -> Result<u16, Error>
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::process("binding a fake redis-server", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::process("its address", e))?
        .port();
    tokio::spawn(async move {
        if let Ok((stream, _)) = listener.accept().await {
            behave(stream).await;
        }
    });
    Ok(port)
}

/// Reads what the client sent, so that closing the socket is a clean end of stream.
async fn drain(stream: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await;
}

/// The replies of a master up to the RDB: three +OK and +FULLRESYNC, with keepalives.
const HANDSHAKE: &[u8] =
    b"+OK\r\n+OK\r\n+FULLRESYNC 0123456789012345678901234567890123456789 77\r\n\n\n";

/// A small, well-formed RDB (magic, an empty database, the EOF opcode and its CRC-64).
fn tiny_rdb() -> Vec<u8> {
    let mut rdb = b"REDIS0010\xfe\x00\xfb\x00\x00".to_vec();
    rdb.push(0xff);
    let crc = backup::rdb::crc64(0, &rdb);
    rdb.extend_from_slice(&crc.to_le_bytes());
    rdb
}

const MARK: &[u8; 40] = b"abcdefabcdefabcdefabcdefabcdefabcdef0123";

/// The error of a backup of a fake redis-server doing `behave`, reads bounded to 1 s, and how
/// long it took.
async fn misbehaving<F, Fut>(behave: F) -> (backup::Error, Duration)
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let port = fake_redis(behave).await.expect("a fake redis-server");
    let started = Instant::now();
    let source = RedisSource {
        read_timeout: Duration::from_secs(1),
        ..RedisSource::new("127.0.0.1", port)
    };
    let error = fetch_rdb(&source, &mut Writer(Vec::new()))
        .await
        .map(|_| ())
        .expect_err("the fake is refused");
    (error, started.elapsed())
}

#[tokio::test]
async fn a_fake_server_sending_garbage_is_a_bad_stream() {
    let (error, _) = misbehaving(|mut s: TcpStream| async move {
        drain(&mut s).await;
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        drain(&mut s).await;
    })
    .await;
    assert_eq!(error.reason(), Reason::BadStream, "{}", error.line());
    assert!(error.line().contains("HTTP/1.1 400"), "{}", error.line());
}

#[tokio::test]
async fn a_fake_server_sending_an_endless_line_is_cut_at_1_kib() {
    let (error, elapsed) = misbehaving(|mut s: TcpStream| async move {
        let chunk = [b'x'; 16 * 1024];
        while s.write_all(&chunk).await.is_ok() {}
    })
    .await;
    assert_eq!(error.reason(), Reason::BadStream, "{}", error.line());
    assert!(
        error.line().contains("longer than 1024"),
        "{}",
        error.line()
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn a_fake_server_saying_nothing_times_out() {
    let (error, elapsed) = misbehaving(|s: TcpStream| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(s);
    })
    .await;
    assert_eq!(error.reason(), Reason::Timeout, "{}", error.line());
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn a_fake_server_going_silent_in_the_payload_times_out() {
    let (error, elapsed) = misbehaving(|mut s: TcpStream| async move {
        drain(&mut s).await;
        let _ = s.write_all(HANDSHAKE).await;
        let _ = s.write_all(b"$100000\r\nREDIS0010").await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    assert_eq!(error.reason(), Reason::Timeout, "{}", error.line());
    assert!(
        error.line().contains("9 of 100000 bytes"),
        "{}",
        error.line()
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn a_fake_server_closing_at_once_is_a_bad_stream() {
    let (error, _) = misbehaving(|s: TcpStream| async move { drop(s) }).await;
    assert_eq!(error.reason(), Reason::BadStream, "{}", error.line());
}

#[tokio::test]
async fn a_fake_server_wanting_a_password_is_an_auth_failure() {
    let (error, _) = misbehaving(|mut s: TcpStream| async move {
        drain(&mut s).await;
        let _ = s.write_all(b"-NOAUTH Authentication required.\r\n").await;
        drain(&mut s).await;
    })
    .await;
    assert_eq!(error.reason(), Reason::AuthFailed, "{}", error.line());
}

#[tokio::test]
async fn a_fake_master_cutting_the_rdb_short_is_a_bad_stream() {
    let (error, _) = misbehaving(|mut s: TcpStream| async move {
        drain(&mut s).await;
        let _ = s.write_all(HANDSHAKE).await;
        let _ = s.write_all(b"$1000\r\nREDIS0010").await;
        drain(&mut s).await;
    })
    .await;
    assert_eq!(error.reason(), Reason::BadStream, "{}", error.line());
    assert!(error.line().contains("closed"), "{}", error.line());
}

#[tokio::test]
async fn a_fake_master_sending_no_rdb_is_a_bad_stream() {
    let (error, _) = misbehaving(|mut s: TcpStream| async move {
        drain(&mut s).await;
        let _ = s.write_all(HANDSHAKE).await;
        let mut body = b"$EOF:".to_vec();
        body.extend_from_slice(MARK);
        body.extend_from_slice(b"\r\nNOT AN RDB AT ALL");
        body.extend_from_slice(MARK);
        let _ = s.write_all(&body).await;
        drain(&mut s).await;
    })
    .await;
    assert_eq!(error.reason(), Reason::BadStream, "{}", error.line());
    assert!(error.line().contains("not an RDB"), "{}", error.line());
}

#[tokio::test]
async fn a_fake_master_refusing_psync_is_a_refusal() {
    let (error, _) = misbehaving(|mut s: TcpStream| async move {
        drain(&mut s).await;
        let _ = s
            .write_all(b"+OK\r\n-ERR Unrecognized REPLCONF option: rdb-only\r\n-NOMASTERLINK Can't SYNC while not connected with my master\r\n")
            .await;
        drain(&mut s).await;
    })
    .await;
    assert_eq!(error.reason(), Reason::RedisRefused, "{}", error.line());
    assert!(error.line().contains("NOMASTERLINK"), "{}", error.line());
}

#[tokio::test]
async fn nothing_listening_is_unreachable() -> Result<(), Error> {
    let port = free_port()?;
    let error = fetch_rdb(&local(port), &mut Writer(Vec::new()))
        .await
        .map(|_| ())
        .expect_err("nothing there");
    assert_eq!(error.reason(), Reason::RedisUnreachable, "{}", error.line());
    Ok(())
}

/// A master that sends the mark in pieces, a few milliseconds apart, with a pause in its
/// keepalives (an old server: rdb-only refused): the RDB arrives whole, the mark not in it.
#[tokio::test]
async fn a_fake_master_splitting_the_mark_across_writes_is_read_whole() -> Result<(), Error> {
    let port = fake_redis(|mut s: TcpStream| async move {
        let _ = s.set_nodelay(true);
        drain(&mut s).await;
        let _ = s
            .write_all(b"+OK\r\n-ERR Unrecognized REPLCONF option: rdb-only\r\n")
            .await;
        let _ = s
            .write_all(b"+FULLRESYNC 0123456789012345678901234567890123456789 77\r\n\n")
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _ = s.write_all(b"\n$EOF:").await;
        let mut rest = MARK.to_vec();
        rest.extend_from_slice(b"\r\n");
        rest.extend_from_slice(&tiny_rdb());
        rest.extend_from_slice(MARK);
        for piece in rest.chunks(13) {
            let _ = s.write_all(piece).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drain(&mut s).await;
    })
    .await?;
    let mut sink = Writer(Vec::new());
    let snapshot = fetch_rdb(&local(port), &mut sink)
        .await
        .map_err(|e| Error::process("backing up the fake", e.line()))?;
    assert_eq!(sink.0, tiny_rdb());
    assert!(snapshot.diskless);
    assert_eq!(snapshot.replication_offset, 77);
    assert_eq!(snapshot.size, tiny_rdb().len() as u64);
    Ok(())
}
