//! What the backup_io suites share: a LocalRedis as a backup's source or a restore's target, the
//! keys written into it and checked, a `RedisSource` on 127.0.0.1. Each suite uses a part.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use backup::RedisSource;
use e2e::Error;
use e2e::local_redis::LocalRedis;

pub const KEYS: usize = 10_000;

pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

pub fn value(i: usize) -> String {
    format!("value-{i}-{}", "x".repeat(i % 50))
}

/// `key:0..n` = `value(i)`, in batches.
pub async fn fill(redis: &LocalRedis, n: usize) -> Result<(), Error> {
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
pub async fn check_keys(redis: &LocalRedis, n: usize) -> Result<(), Error> {
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
pub async fn source(dir: &Path, options: &[&str]) -> Result<LocalRedis, Error> {
    let mut all = strings(&["--save", "", "--dir"]);
    all.push(dir.display().to_string());
    all.extend(strings(options));
    LocalRedis::start(&all).await
}

/// A fresh redis-server on the data directory `dir`.
pub async fn load(dir: &Path, options: &[&str]) -> Result<LocalRedis, Error> {
    let mut all = strings(&["--save", "", "--dir"]);
    all.push(dir.display().to_string());
    all.extend(strings(options));
    LocalRedis::start(&all).await
}

pub fn local(port: u16) -> RedisSource {
    RedisSource {
        read_timeout: Duration::from_secs(10),
        ..RedisSource::new("127.0.0.1", port)
    }
}

pub fn tempdir() -> Result<tempfile::TempDir, Error> {
    tempfile::tempdir().map_err(|e| Error::process("creating a temp dir", e))
}

pub async fn config_set(redis: &LocalRedis, name: &str, value: &str) -> Result<(), Error> {
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
