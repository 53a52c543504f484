//! redis-backup's library against the machine's redis-server on 127.0.0.1: disk-based and
//! diskless masters, a password, an ACL user, TLS, and a restore loaded by Redis 7. Needs no bed.

mod backup_io_common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use backup::restore::{Layout, restore_stream};
use backup::{Reason, RedisSource, Snapshot, Writer, fetch_rdb};
use backup_io_common::*;
use bytes::Bytes;
use e2e::Error;
use e2e::certs::TestCa;
use e2e::operator::free_port;

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
