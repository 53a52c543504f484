//! redis-backup against real processes: the machine's redis-server on 127.0.0.1 (disk-based and
//! diskless masters, a password, an ACL user, TLS), fake "redis-servers" that misbehave (a
//! TcpListener in the test), and the bed's S3 server (`.cluster/s3/env`, written by
//! hack/cluster/up.sh) through the real `redis-backup` binary.
//!
//! The io-level tests need no bed. The `s3_` tests need the bed's S3 server and the binary
//! (`cargo build --bins`, which `make e2e` runs); without them they fail with a hint, never
//! skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use backup::restore::{Layout, restore_stream};
use backup::{Reason, RedisSource, Snapshot, Writer, fetch_rdb};
use bytes::Bytes;
use e2e::Error;
use e2e::certs::TestCa;
use e2e::local_redis::LocalRedis;
use e2e::operator::{free_port, workspace_binary};
use e2e::s3::S3Bed;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const KEYS: usize = 10_000;

fn fail<E: std::fmt::Display>(what: impl Into<String>) -> impl FnOnce(E) -> Error {
    let what = what.into();
    move |reason| Error::process(what, reason)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

fn value(i: usize) -> String {
    format!("value-{i}-{}", "x".repeat(i % 50))
}

/// `key:0..n` = `value(i)`, in batches.
async fn fill(redis: &LocalRedis, n: usize) -> Result<(), Error> {
    let mut con = redis
        .connection()
        .await
        .map_err(|e| Error::process("connecting", e))?;
    for start in (0..n).step_by(500) {
        let mut mset = redis::cmd("MSET");
        for i in start..(start + 500).min(n) {
            mset.arg(format!("key:{i}")).arg(value(i));
        }
        mset.query_async::<()>(&mut con)
            .await
            .map_err(|e| Error::process("MSET", e))?;
    }
    Ok(())
}

/// Every key of [`fill`] is there with its value, and nothing else.
async fn check_keys(redis: &LocalRedis, n: usize) -> Result<(), Error> {
    let mut con = redis
        .connection()
        .await
        .map_err(|e| Error::process("connecting", e))?;
    let size: usize = redis::cmd("DBSIZE")
        .query_async(&mut con)
        .await
        .map_err(|e| Error::process("DBSIZE", e))?;
    if size != n {
        return Err(Error::process(
            "counting the keys",
            format!("{size}, not {n}"),
        ));
    }
    for start in (0..n).step_by(500) {
        let end = (start + 500).min(n);
        let mut mget = redis::cmd("MGET");
        for i in start..end {
            mget.arg(format!("key:{i}"));
        }
        let values: Vec<Option<String>> = mget
            .query_async(&mut con)
            .await
            .map_err(|e| Error::process("MGET", e))?;
        for (i, got) in (start..end).zip(values) {
            if got.as_deref() != Some(value(i).as_str()) {
                return Err(Error::process(
                    format!("reading key:{i}"),
                    format!("{got:?}, not {:?}", value(i)),
                ));
            }
        }
    }
    Ok(())
}

/// A source redis-server writing its own files (a disk-based sync's RDB) into `dir`, not /tmp.
async fn source(dir: &Path, options: &[&str]) -> Result<LocalRedis, Error> {
    let mut all = strings(&["--save", "", "--dir"]);
    all.push(dir.display().to_string());
    all.extend(strings(options));
    LocalRedis::start(&all).await
}

/// A fresh redis-server on the data directory `dir`.
async fn load(dir: &Path, options: &[&str]) -> Result<LocalRedis, Error> {
    let mut all = strings(&["--save", "", "--dir"]);
    all.push(dir.display().to_string());
    all.extend(strings(options));
    LocalRedis::start(&all).await
}

/// The RDB of `source` into `path`.
async fn backup_to_file(source: &RedisSource, path: &Path) -> Result<Snapshot, backup::Error> {
    let file = tokio::fs::File::create(path)
        .await
        .map_err(|e| backup::Error::Io {
            what: format!("creating {}", path.display()),
            source: e,
        })?;
    let mut sink = Writer(file);
    let snapshot = fetch_rdb(source, &mut sink).await?;
    sink.0.sync_all().await.map_err(|e| backup::Error::Io {
        what: "syncing".into(),
        source: e,
    })?;
    Ok(snapshot)
}

fn local(port: u16) -> RedisSource {
    RedisSource {
        read_timeout: Duration::from_secs(10),
        ..RedisSource::new("127.0.0.1", port)
    }
}

fn tempdir() -> Result<tempfile::TempDir, Error> {
    tempfile::tempdir().map_err(|e| Error::process("creating a temp dir", e))
}

async fn round_trip(options: &[&str], diskless: bool) -> Result<(), Error> {
    let work = tempdir()?;
    let redis = source(work.path(), options).await?;
    fill(&redis, KEYS).await?;
    let restored = tempdir()?;
    let snapshot = backup_to_file(&local(redis.port), &restored.path().join("dump.rdb"))
        .await
        .map_err(|e| Error::process("backing up", e.line()))?;
    assert_eq!(
        snapshot.diskless, diskless,
        "the transfer was as configured"
    );
    assert_eq!(snapshot.replid.len(), 40, "{snapshot:?}");
    let size = std::fs::metadata(restored.path().join("dump.rdb"))
        .map_err(|e| Error::process("the dump", e))?
        .len();
    assert_eq!(size, snapshot.size, "the mark is not in the file");
    let fresh = load(restored.path(), &["--dbfilename", "dump.rdb"]).await?;
    check_keys(&fresh, KEYS).await
}

#[tokio::test]
async fn a_disk_based_master_backs_up_every_key() -> Result<(), Error> {
    round_trip(&["--repl-diskless-sync", "no"], false).await
}

#[tokio::test]
async fn a_diskless_master_backs_up_every_key() -> Result<(), Error> {
    round_trip(
        &[
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
        ],
        true,
    )
    .await
}

async fn config_set(redis: &LocalRedis, name: &str, value: &str) -> Result<(), Error> {
    let mut con = redis
        .connection()
        .await
        .map_err(|e| Error::process("connecting", e))?;
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query_async::<()>(&mut con)
        .await
        .map_err(|e| Error::process(format!("CONFIG SET {name}"), e))
}

#[tokio::test]
async fn a_server_behind_a_password_or_an_acl_user() -> Result<(), Error> {
    let work = tempdir()?;
    let redis = source(work.path(), &["--repl-diskless-sync-delay", "0"]).await?;
    fill(&redis, KEYS).await?;
    {
        // An ACL user that may take a replica's stream and nothing else.
        let mut con = redis
            .connection()
            .await
            .map_err(|e| Error::process("connecting", e))?;
        for rules in [
            &["backup", "on", ">backup-pw", "+psync", "+replconf"][..],
            &["nosync", "on", ">nosync-pw", "+replconf"][..],
        ] {
            redis::cmd("ACL")
                .arg("SETUSER")
                .arg(rules)
                .query_async::<()>(&mut con)
                .await
                .map_err(|e| Error::process("ACL SETUSER", e))?;
        }
    }
    // The default user last: the test's connections log in as nobody.
    config_set(&redis, "requirepass", "s3cret pass").await?;

    let with = |user: Option<&str>, password: Option<&str>| RedisSource {
        username: user.map(str::to_owned),
        password: password.map(str::to_owned),
        ..local(redis.port)
    };
    let restored = tempdir()?;
    let dump = restored.path().join("dump.rdb");
    backup_to_file(&with(None, Some("s3cret pass")), &dump)
        .await
        .map_err(|e| Error::process("backing up with the password", e.line()))?;
    backup_to_file(&with(Some("backup"), Some("backup-pw")), &dump)
        .await
        .map_err(|e| Error::process("backing up as the ACL user", e.line()))?;

    for (login, reason, words) in [
        (with(None, Some("wrong")), Reason::AuthFailed, "WRONGPASS"),
        (with(None, None), Reason::AuthFailed, "NOAUTH"),
        (
            with(Some("backup"), Some("wrong")),
            Reason::AuthFailed,
            "WRONGPASS",
        ),
        (
            with(Some("nosync"), Some("nosync-pw")),
            Reason::RedisRefused,
            "NOPERM",
        ),
    ] {
        let scratch = restored.path().join("scratch.rdb");
        let error = backup_to_file(&login, &scratch)
            .await
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(error.reason(), reason, "{}", error.line());
        assert!(error.line().contains(words), "{}", error.line());
    }

    // What the first backups wrote loads.
    let fresh = load(restored.path(), &["--dbfilename", "dump.rdb"]).await?;
    check_keys(&fresh, KEYS).await
}

#[tokio::test]
async fn a_server_over_tls_with_a_client_certificate() -> Result<(), Error> {
    let work = tempdir()?;
    let ca = TestCa::new("backup test CA")?;
    let server = ca.issue(&["redis.test".to_owned()])?;
    let client = ca.issue(&["backup-client".to_owned()])?;
    let write = |name: &str, text: &str| -> Result<PathBuf, Error> {
        let path = work.path().join(name);
        std::fs::write(&path, text).map_err(|e| Error::process(format!("writing {name}"), e))?;
        Ok(path)
    };
    let ca_file = write("ca.crt", &ca.pem())?;
    let cert = write("tls.crt", &server.cert)?;
    let key = write("tls.key", &server.key)?;
    let client_cert = write("client.crt", &client.cert)?;
    let client_key = write("client.key", &client.key)?;
    let tls_port = free_port()?;
    let redis = source(
        work.path(),
        &[
            "--tls-port",
            &tls_port.to_string(),
            "--tls-cert-file",
            &cert.display().to_string(),
            "--tls-key-file",
            &key.display().to_string(),
            "--tls-ca-cert-file",
            &ca_file.display().to_string(),
            "--tls-auth-clients",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
        ],
    )
    .await?;
    fill(&redis, 1000).await?;
    let files = |client: Option<(PathBuf, PathBuf)>, name: &str| backup::tls::TlsFiles {
        ca_file: ca_file.clone(),
        client,
        server_name: name.to_owned(),
    };
    let over_tls = |tls: backup::tls::TlsClient| RedisSource {
        tls: Some(tls),
        ..local(tls_port)
    };
    let restored = tempdir()?;
    let dump = restored.path().join("dump.rdb");
    let tls = files(
        Some((client_cert.clone(), client_key.clone())),
        "redis.test",
    )
    .load()
    .map_err(|e| Error::process("loading the TLS files", e.line()))?;
    backup_to_file(&over_tls(tls), &dump)
        .await
        .map_err(|e| Error::process("backing up over TLS", e.line()))?;

    // Another name than the certificate's, or no client certificate: no backup.
    for (client, name) in [
        (
            Some((client_cert.clone(), client_key.clone())),
            "other.test",
        ),
        (None, "redis.test"),
    ] {
        let tls = files(client, name)
            .load()
            .map_err(|e| Error::process("loading the TLS files", e.line()))?;
        let error = backup_to_file(&over_tls(tls), &restored.path().join("scratch.rdb"))
            .await
            .map(|_| ())
            .expect_err("refused");
        assert!(
            matches!(error.reason(), Reason::RedisUnreachable | Reason::BadStream),
            "{}",
            error.line()
        );
    }
    let fresh = load(restored.path(), &["--dbfilename", "dump.rdb"]).await?;
    check_keys(&fresh, 1000).await
}

#[tokio::test]
async fn a_restore_into_the_append_only_layout_is_loaded_by_redis_7() -> Result<(), Error> {
    let work = tempdir()?;
    let redis = source(work.path(), &["--repl-diskless-sync-delay", "0"]).await?;
    fill(&redis, KEYS).await?;
    let mut rdb = Writer(Vec::new());
    let snapshot = fetch_rdb(&local(redis.port), &mut rdb)
        .await
        .map_err(|e| Error::process("backing up", e.line()))?;
    let chunks: Vec<Bytes> = rdb.0.chunks(100_000).map(Bytes::copy_from_slice).collect();

    for append_only in [true, false] {
        let data = tempdir()?;
        let layout = Layout {
            append_only,
            ..Layout::new(data.path())
        };
        let restored = restore_stream(
            &layout,
            &snapshot.sha256,
            futures::stream::iter(chunks.iter().cloned().map(Ok::<_, backup::Error>)),
            Duration::from_secs(10),
        )
        .await
        .map_err(|e| Error::process("restoring", e.line()))?;
        assert_eq!(restored.size, snapshot.size);
        assert!(
            layout
                .present()
                .map_err(|e| Error::process("looking", e.line()))?
        );
        let fresh = if append_only {
            let manifest = std::fs::read_to_string(
                data.path()
                    .join("appendonlydir")
                    .join("appendonly.aof.manifest"),
            )
            .map_err(|e| Error::process("reading the manifest", e))?;
            assert_eq!(manifest, "file appendonly.aof.1.base.rdb seq 1 type b\n");
            assert!(!data.path().join("dump.rdb").exists());
            load(data.path(), &["--appendonly", "yes"]).await?
        } else {
            load(data.path(), &["--dbfilename", "dump.rdb"]).await?
        };
        check_keys(&fresh, KEYS).await?;
        if append_only {
            // Redis took the layout as its own: it went on with an incr file in the manifest.
            let manifest = std::fs::read_to_string(
                data.path()
                    .join("appendonlydir")
                    .join("appendonly.aof.manifest"),
            )
            .map_err(|e| Error::process("reading the manifest", e))?;
            assert!(manifest.contains("type i"), "{manifest}");
        }
    }
    Ok(())
}

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

// ----- The bed's S3 server and the real binary -----

/// A key of its own for each test run.
fn unique_key(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "e2e/backup_io/{test}-{}-{nanos}/dump.rdb",
        std::process::id()
    )
}

/// The bed's bucket through object_store, to look at what the binary wrote.
fn bucket(bed: &S3Bed) -> Result<object_store::aws::AmazonS3, Error> {
    object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&bed.endpoint)
        .with_allow_http(true)
        .with_region(&bed.region)
        .with_bucket_name(&bed.bucket)
        .with_access_key_id(&bed.access_key_id)
        .with_secret_access_key(&bed.secret_access_key)
        .build()
        .map_err(|e| Error::process("the bed's bucket", e))
}

fn install_ring() {
    backup::tls::install_provider();
}

/// The objects under the prefix of `key` (its directory).
async fn objects_beside(store: &impl ObjectStore, key: &str) -> Result<Vec<String>, Error> {
    use futures::TryStreamExt;
    let prefix = key.rsplit_once('/').map(|(dir, _)| dir).unwrap_or(key);
    let prefix = object_store::path::Path::from(prefix);
    let listed: Vec<object_store::ObjectMeta> = store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(|e| Error::process("listing the bucket", e))?;
    Ok(listed.into_iter().map(|m| m.location.to_string()).collect())
}

async fn delete_beside(store: &impl ObjectStore, key: &str) {
    if let Ok(keys) = objects_beside(store, key).await {
        for key in keys {
            let _ = store.delete(&object_store::path::Path::from(key)).await;
        }
    }
}

/// `redis-backup` with `args`, the bed's S3 settings and credentials in its environment
/// (`secret` in place of the bed's when given), optionally under `/usr/bin/time -v`.
fn binary_command(
    bed: &S3Bed,
    args: &[String],
    env: &[(&str, &str)],
    secret: Option<&str>,
    timed: bool,
) -> Result<Command, Error> {
    let binary = workspace_binary("redis-backup")?;
    let mut command = if timed {
        let mut time = Command::new("/usr/bin/time");
        time.arg("-v").arg(&binary);
        time
    } else {
        Command::new(&binary)
    };
    command
        .args(args)
        .env("S3_ENDPOINT", &bed.endpoint)
        .env("S3_REGION", &bed.region)
        .env("S3_BUCKET", &bed.bucket)
        .env("AWS_ACCESS_KEY_ID", &bed.access_key_id)
        .env(
            "AWS_SECRET_ACCESS_KEY",
            secret.unwrap_or(&bed.secret_access_key),
        )
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    Ok(command)
}

/// Runs [`binary_command`] to its end.
fn run_binary(
    bed: &S3Bed,
    args: &[String],
    env: &[(&str, &str)],
    secret: Option<&str>,
    timed: bool,
) -> Result<Output, Error> {
    binary_command(bed, args, env, secret, timed)?
        .output()
        .map_err(|e| Error::process("running redis-backup", e))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `backup --host 127.0.0.1 --port P --key K --result-file F`.
fn backup_args(port: u16, key: &str, result: &Path) -> Vec<String> {
    strings(&[
        "backup",
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--key",
        key,
        "--read-timeout",
        "20s",
        "--result-file",
        &result.display().to_string(),
    ])
}

fn restore_args(key: &str, data: &Path, result: &Path) -> Vec<String> {
    strings(&[
        "restore",
        "--key",
        key,
        "--data-dir",
        &data.display().to_string(),
        "--result-file",
        &result.display().to_string(),
    ])
}

fn json(line: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(line.trim()).map_err(|e| Error::process(format!("parsing {line:?}"), e))
}

#[tokio::test]
async fn s3_backup_and_restore_with_the_binary() -> Result<(), Error> {
    install_ring();
    let bed = S3Bed::from_bed()?;
    let store = bucket(&bed)?;
    let work = tempdir()?;
    let redis = source(work.path(), &["--repl-diskless-sync-delay", "0"]).await?;
    fill(&redis, KEYS).await?;
    let key = unique_key("round-trip");
    let result_file = work.path().join("result");
    let output = run_binary(
        &bed,
        &backup_args(redis.port, &key, &result_file),
        &[],
        None,
        false,
    )?;
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    let result = json(&stdout)?;
    let written = std::fs::read_to_string(&result_file).map_err(fail("the result file"))?;
    assert_eq!(
        json(&written)?,
        result,
        "the result file says what stdout says"
    );
    assert_eq!(result["location"], format!("s3://{}/{key}", bed.bucket));
    let sha256 = result["sha256"].as_str().unwrap_or_default().to_owned();
    assert_eq!(sha256.len(), 64, "{result}");
    assert_eq!(
        result["replid"].as_str().map(str::len),
        Some(40),
        "{result}"
    );
    assert!(result["replicationOffset"].is_i64(), "{result}");

    // The object, and its checksum beside it in sha256sum's format; nothing else.
    let path = object_store::path::Path::from(key.as_str());
    let head = store
        .get_opts(
            &path,
            object_store::GetOptions {
                head: true,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| Error::process("HEAD", e))?;
    assert_eq!(Some(head.meta.size), result["size"].as_u64());
    let checksum = store
        .get(&object_store::path::Path::from(format!("{key}.sha256")))
        .await
        .map_err(|e| Error::process("GET the checksum", e))?
        .bytes()
        .await
        .map_err(|e| Error::process("reading the checksum", e))?;
    assert_eq!(text(&checksum), format!("{sha256}  dump.rdb\n"));
    assert_eq!(
        objects_beside(&store, &key).await?,
        [key.clone(), format!("{key}.sha256")]
    );

    // Restored into an empty data directory, then left alone in a full one.
    let data = tempdir()?;
    let rresult = work.path().join("restore-result");
    let output = run_binary(
        &bed,
        &restore_args(&key, data.path(), &rresult),
        &[],
        None,
        false,
    )?;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let restored = json(&text(&output.stdout))?;
    assert_eq!(restored["restored"], true);
    assert_eq!(restored["sha256"], sha256.as_str());
    assert_eq!(restored["size"], result["size"]);
    let again = run_binary(
        &bed,
        &restore_args(&key, data.path(), &rresult),
        &[],
        None,
        false,
    )?;
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(
        text(&again.stdout).trim(),
        r#"{"restored":false,"reason":"DataPresent"}"#
    );
    let fresh = load(data.path(), &["--dbfilename", "dump.rdb"]).await?;
    check_keys(&fresh, KEYS).await?;

    // `delete` takes the object and its checksum.
    let output = run_binary(
        &bed,
        &strings(&[
            "delete",
            "--key",
            &key,
            "--result-file",
            &work.path().join("delete-result").display().to_string(),
        ]),
        &[],
        None,
        false,
    )?;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(objects_beside(&store, &key).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn s3_a_corrupted_object_is_a_checksum_mismatch() -> Result<(), Error> {
    install_ring();
    let bed = S3Bed::from_bed()?;
    let store = bucket(&bed)?;
    let work = tempdir()?;
    let redis = source(work.path(), &["--repl-diskless-sync-delay", "0"]).await?;
    fill(&redis, 100).await?;
    let key = unique_key("corrupted");
    let output = run_binary(
        &bed,
        &backup_args(redis.port, &key, &work.path().join("r")),
        &[],
        None,
        false,
    )?;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let sha256 = json(&text(&output.stdout))?["sha256"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Another dataset's RDB (a valid one), under a key with the first's checksum.
    fill(&redis, 200).await?;
    let mut other = Writer(Vec::new());
    fetch_rdb(&local(redis.port), &mut other)
        .await
        .map_err(|e| Error::process("backing up", e.line()))?;
    let corrupted = key.replace("dump.rdb", "corrupted.rdb");
    for (name, bytes) in [
        (corrupted.clone(), other.0),
        (
            format!("{corrupted}.sha256"),
            format!("{sha256}  corrupted.rdb\n").into_bytes(),
        ),
    ] {
        store
            .put(&object_store::path::Path::from(name), bytes.into())
            .await
            .map_err(|e| Error::process("putting the corrupted object", e))?;
    }

    let data = tempdir()?;
    let rresult = work.path().join("restore-result");
    let output = run_binary(
        &bed,
        &restore_args(&corrupted, data.path(), &rresult),
        &[],
        None,
        false,
    )?;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("ChecksumMismatch: "), "{stderr}");
    let written = std::fs::read_to_string(&rresult).map_err(fail("the result file"))?;
    assert!(written.starts_with("ChecksumMismatch: "), "{written}");
    assert_eq!(written.lines().count(), 1, "{written}");
    let left: Vec<_> = std::fs::read_dir(data.path())
        .map_err(|e| Error::process("listing the data dir", e))?
        .collect();
    assert!(left.is_empty(), "nothing is left in the data dir: {left:?}");

    // The good object, but another checksum given: the one given is what it is checked against.
    let output = run_binary(
        &bed,
        &restore_args(&key, data.path(), &rresult),
        &[("BACKUP_SHA256", &"0".repeat(64))],
        None,
        false,
    )?;
    assert!(
        text(&output.stderr).contains("ChecksumMismatch: "),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(1));

    // A missing object, one without a checksum, and one whose checksum object is not one.
    let output = run_binary(
        &bed,
        &restore_args(
            &key.replace("dump.rdb", "nothing.rdb"),
            data.path(),
            &rresult,
        ),
        &[],
        None,
        false,
    )?;
    assert!(
        text(&output.stderr).contains("S3NotFound: "),
        "{}",
        text(&output.stderr)
    );
    let bare = key.replace("dump.rdb", "bare.rdb");
    store
        .put(
            &object_store::path::Path::from(bare.as_str()),
            Bytes::from_static(b"REDIS0010").into(),
        )
        .await
        .map_err(|e| Error::process("putting an object", e))?;
    let output = run_binary(
        &bed,
        &restore_args(&bare, data.path(), &rresult),
        &[],
        None,
        false,
    )?;
    assert!(
        text(&output.stderr).contains("NoChecksum: "),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(1));
    store
        .put(
            &object_store::path::Path::from(format!("{bare}.sha256")),
            Bytes::from(vec![b'0'; 64 * 1024]).into(),
        )
        .await
        .map_err(|e| Error::process("putting a checksum object", e))?;
    let output = run_binary(
        &bed,
        &restore_args(&bare, data.path(), &rresult),
        &[],
        None,
        false,
    )?;
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("NoChecksum: ") && stderr.contains("larger than"),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(1));
    delete_beside(&store, &key).await;
    Ok(())
}

#[tokio::test]
async fn s3_a_wrong_secret_is_denied_and_leaves_no_object() -> Result<(), Error> {
    install_ring();
    let bed = S3Bed::from_bed()?;
    let store = bucket(&bed)?;
    let work = tempdir()?;
    let redis = source(work.path(), &["--repl-diskless-sync-delay", "0"]).await?;
    fill(&redis, 100).await?;
    let key = unique_key("denied");
    let result = work.path().join("result");
    let output = run_binary(
        &bed,
        &backup_args(redis.port, &key, &result),
        &[],
        Some("not-the-secret"),
        false,
    )?;
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with("S3Denied: ")),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&result).map_err(fail("the result file"))?;
    assert!(written.starts_with("S3Denied: "), "{written}");
    assert!(text(&output.stdout).is_empty());
    assert!(objects_beside(&store, &key).await?.is_empty());

    // A redis-server that refuses the backup: the upload is aborted, nothing is left either.
    config_set(&redis, "requirepass", "pw").await?;
    let output = run_binary(
        &bed,
        &backup_args(redis.port, &key, &result),
        &[],
        None,
        false,
    )?;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("AuthFailed: "),
        "{}",
        text(&output.stderr)
    );
    let output = run_binary(
        &bed,
        &backup_args(redis.port, &key, &result),
        &[("REDIS_PASSWORD", "pw")],
        None,
        false,
    )?;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        objects_beside(&store, &key).await?,
        [key.clone(), format!("{key}.sha256")]
    );
    delete_beside(&store, &key).await;
    Ok(())
}

/// A splitmix64 stream: incompressible bytes (the RDB's LZF cannot shrink them).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A ~200 MB dataset through the binary under `/usr/bin/time -v`: its peak RSS stays within
/// 64 MiB (the bounded parts), printed with the throughput.
#[tokio::test]
async fn s3_a_200_mb_backup_stays_within_64_mib() -> Result<(), Error> {
    install_ring();
    let bed = S3Bed::from_bed()?;
    let store = bucket(&bed)?;
    let work = tempdir()?;
    let redis = source(work.path(), &["--repl-diskless-sync-delay", "0"]).await?;
    {
        let mut con = redis
            .connection()
            .await
            .map_err(|e| Error::process("connecting", e))?;
        for i in 0..200u64 {
            redis::cmd("SET")
                .arg(format!("blob:{i}"))
                .arg(noise(i, 1024 * 1024))
                .query_async::<()>(&mut con)
                .await
                .map_err(|e| Error::process("SET", e))?;
        }
    }
    let key = unique_key("large");
    let started = Instant::now();
    let output = run_binary(
        &bed,
        &backup_args(redis.port, &key, &work.path().join("result")),
        &[],
        None,
        true,
    )?;
    let elapsed = started.elapsed();
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let result = json(&text(&output.stdout))?;
    let size = result["size"].as_u64().unwrap_or_default();
    assert!(size > 200 * 1024 * 1024, "{result}");
    let peak_kib: u64 = stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| Error::process("reading /usr/bin/time's report", stderr.clone()))?;
    println!(
        "redis-backup: {size} bytes in {:.1} s ({:.1} MiB/s), peak RSS {peak_kib} KiB ({:.1} MiB)",
        elapsed.as_secs_f64(),
        size as f64 / 1048576.0 / elapsed.as_secs_f64(),
        peak_kib as f64 / 1024.0
    );
    println!("{stderr}");
    assert!(
        peak_kib <= 64 * 1024,
        "peak RSS {peak_kib} KiB is above 64 MiB"
    );
    delete_beside(&store, &key).await;
    Ok(())
}

/// SIGTERM while the master prepares the RDB (its default 5 s diskless delay): the upload is
/// aborted, the binary says so and leaves nothing.
#[tokio::test]
async fn s3_a_sigterm_aborts_the_backup() -> Result<(), Error> {
    install_ring();
    let bed = S3Bed::from_bed()?;
    let store = bucket(&bed)?;
    let work = tempdir()?;
    let redis = source(work.path(), &["--repl-diskless-sync-delay", "5"]).await?;
    fill(&redis, 100).await?;
    let key = unique_key("sigterm");
    let result = work.path().join("result");
    let child = binary_command(
        &bed,
        &backup_args(redis.port, &key, &result),
        &[],
        None,
        false,
    )?
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .map_err(|e| Error::process("running redis-backup", e))?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .map_err(|e| Error::process("kill -TERM", e))?;
    assert!(killed.success());
    let output = child
        .wait_with_output()
        .map_err(|e| Error::process("waiting for redis-backup", e))?;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(&result).map_err(fail("the result file"))?;
    assert!(written.starts_with("Interrupted: "), "{written}");
    assert!(objects_beside(&store, &key).await?.is_empty());
    Ok(())
}
