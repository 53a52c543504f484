//! The controller's TLS client and the live certificate reload against real redis-server
//! processes on 127.0.0.1 serving TLS from files, as a pod serves them from its Secret volume
//! (DESIGN §3k): the files are replaced as the kubelet replaces them, and the controller has
//! redis-server load them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use controller::redis_server::{Server, TlsClient};
use controller::tls::{client_config, material};
use e2e::certs::{Issued, TestCa};
use e2e::local_redis::LocalRedis;
use e2e::{Error, wait_for};

const NAME: &str = "cache.apps.svc";

/// Writes ca.crt, tls.crt and tls.key into `dir` (each replaced whole, as the kubelet's atomic
/// writer does).
fn write_files(dir: &Path, ca: &TestCa, issued: &Issued) -> Result<(), Error> {
    for (file, text) in [
        ("ca.crt", ca.pem()),
        ("tls.crt", issued.cert.clone()),
        ("tls.key", issued.key.clone()),
    ] {
        let staged = dir.join(format!(".{file}.new"));
        std::fs::write(&staged, text).map_err(|e| Error::process(format!("writing {file}"), e))?;
        std::fs::rename(&staged, dir.join(file))
            .map_err(|e| Error::process(format!("replacing {file}"), e))?;
    }
    Ok(())
}

/// The controller's client for a Secret holding `issued` and `ca`, verifying `name`.
fn client(ca: &TestCa, issued: &Issued, name: &str) -> Result<TlsClient, Error> {
    let data: BTreeMap<String, Vec<u8>> = ca
        .secret_data(issued)
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    let material = material::parse(&data).map_err(|e| Error::process("the Secret", e))?;
    client_config(&material, &[], name).map_err(|e| Error::process("the client", e))
}

fn leaf(issued: &Issued) -> Result<Vec<u8>, Error> {
    let data: BTreeMap<String, Vec<u8>> = [
        ("ca.crt".to_owned(), issued.cert.clone().into_bytes()),
        ("tls.crt".to_owned(), issued.cert.clone().into_bytes()),
        ("tls.key".to_owned(), issued.key.clone().into_bytes()),
    ]
    .into_iter()
    .collect();
    let material = material::parse(&data).map_err(|e| Error::process("a certificate", e))?;
    Ok(material
        .leaf()
        .map(|c| c.as_ref().to_vec())
        .unwrap_or_default())
}

/// A redis-server serving TLS only, from the files in `dir`, without persistence; not waited
/// for.
fn start(dir: &Path, auth_clients: &str) -> Result<LocalRedis, Error> {
    LocalRedis::builder()
        .no_persistence()
        .tls(dir, auth_clients)
        .spawn()
}

/// The controller's client for `redis` over TLS with `tls`.
fn over_tls<'a>(redis: &LocalRedis, tls: &'a TlsClient) -> Server<'a> {
    Server {
        tls: Some(tls),
        ..redis.server("cache-0")
    }
}

async fn served(server: &Server<'_>) -> Result<Vec<u8>, Error> {
    let cert = server
        .served_certificate()
        .await
        .map_err(|e| Error::process("the served certificate", e))?;
    Ok(cert.map(|c| c.as_ref().to_vec()).unwrap_or_default())
}

/// A renewal (new key and serial, same CA) written over the files is served once the
/// controller tells redis-server to reload, by the same process; a key of another certificate
/// is refused by redis-server, which keeps serving the last good one.
#[tokio::test]
async fn a_renewed_certificate_is_served_after_a_reload_and_a_bad_key_changes_nothing()
-> Result<(), Error> {
    let dir = tempfile::tempdir().map_err(|e| Error::process("a directory", e))?;
    let ca = TestCa::new("redis test CA")?;
    let first = ca.issue(&[NAME.to_owned()])?;
    write_files(dir.path(), &ca, &first)?;
    let redis = start(dir.path(), "yes")?;
    let tls = client(&ca, &first, NAME)?;
    let server = over_tls(&redis, &tls);
    wait_for("redis-server over TLS", Duration::from_secs(30), || async {
        server.observe().await.map_err(|e| e.to_string())
    })
    .await?;
    assert_eq!(served(&server).await?, leaf(&first)?);

    let renewed = ca.issue(&[NAME.to_owned()])?;
    write_files(dir.path(), &ca, &renewed)?;
    assert_eq!(
        served(&server).await?,
        leaf(&first)?,
        "redis-server keeps what it loaded until told"
    );
    server
        .reload_tls()
        .await
        .map_err(|e| Error::process("the reload", e))?;
    assert_eq!(served(&server).await?, leaf(&renewed)?);

    // A key that is not the certificate's: redis-server refuses the reload.
    let other = ca.issue(&[NAME.to_owned()])?;
    let mismatched = Issued {
        cert: other.cert.clone(),
        key: first.key.clone(),
    };
    write_files(dir.path(), &ca, &mismatched)?;
    assert!(server.reload_tls().await.is_err(), "a mismatched key loads");
    assert_eq!(served(&server).await?, leaf(&renewed)?);
    // Still serving: the one process throughout.
    server
        .observe()
        .await
        .map_err(|e| Error::process("reading it after the refused reload", e))?;
    Ok(())
}

/// The client verifies what it connects to: a certificate for another name, or from another CA,
/// gets no connection; without TLS it gets none either.
#[tokio::test]
async fn the_controller_connects_only_to_the_certificate_it_expects() -> Result<(), Error> {
    let dir = tempfile::tempdir().map_err(|e| Error::process("a directory", e))?;
    let ca = TestCa::new("redis test CA")?;
    let issued = ca.issue(&[NAME.to_owned()])?;
    write_files(dir.path(), &ca, &issued)?;
    let redis = start(dir.path(), "no")?;
    let good = client(&ca, &issued, NAME)?;
    wait_for("redis-server over TLS", Duration::from_secs(30), || async {
        over_tls(&redis, &good)
            .observe()
            .await
            .map_err(|e| e.to_string())
    })
    .await?;

    // The operator's own Secret names another Redis: the server's certificate does not.
    let elsewhere = ca.issue(&["other.apps.svc".to_owned()])?;
    let other_name = client(&ca, &elsewhere, "other.apps.svc")?;
    let error = over_tls(&redis, &other_name)
        .observe()
        .await
        .expect_err("another name");
    assert!(error.to_string().contains("cache-0"), "{error}");

    let stranger = TestCa::new("another CA")?;
    let foreign = stranger.issue(&[NAME.to_owned()])?;
    let other_ca = client(&stranger, &foreign, NAME)?;
    assert!(over_tls(&redis, &other_ca).observe().await.is_err());

    let plaintext = Server {
        tls: None,
        ..over_tls(&redis, &good)
    };
    assert!(plaintext.observe().await.is_err(), "a plaintext connection");
    Ok(())
}
