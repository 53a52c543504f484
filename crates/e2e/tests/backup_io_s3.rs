//! redis-backup through the real `redis-backup` binary and the bed's S3 server
//! (`.cluster/s3/env`, written by hack/cluster/up.sh), from and to the machine's redis-server.
//! Needs the bed's S3 server and the binary (`cargo build --bins`, which `make e2e` runs);
//! without them the tests fail with a hint, never skip.

mod backup_io_common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use backup::{Writer, fetch_rdb};
use backup_io_common::*;
use bytes::Bytes;
use e2e::Error;
use e2e::operator::workspace_binary;
use e2e::s3::S3Bed;
use object_store::{ObjectStore, ObjectStoreExt};

fn fail<E: std::fmt::Display>(what: impl Into<String>) -> impl FnOnce(E) -> Error {
    let what = what.into();
    move |reason| Error::process(what, reason)
}

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
