//! `redis-backup`: backs up one redis-server into S3 (a Kubernetes Job) and restores a backup
//! into a data directory before redis-server starts (an init container).
//!
//! - [`replica`]: the RDB over the replication protocol, as `redis-cli --rdb` takes it, handed
//!   to any [`Sink`] as it arrives; [`resp`] and [`rdb`] are its pure parts (reply lines, bulk
//!   headers, the end mark of a diskless transfer, the RDB's magic and CRC-64).
//! - [`s3`]: the bucket (object_store): the RDB streams in parts of a bounded size, at most two
//!   in flight, into its key; its SHA-256 goes into `<key>.sha256` beside it.
//! - [`restore`]: the object back into `dump.rdb`, or into the base of Redis 7's multi-part
//!   AOF, checked and renamed into place.
//!
//! Nothing holds the dataset: the process's memory is bounded by the part size, whatever the
//! dataset's.

pub mod error;
pub mod rdb;
pub mod replica;
pub mod resp;
pub mod restore;
pub mod s3;
pub mod tls;

pub use error::{Error, Reason};
pub use replica::{RedisSource, Snapshot, fetch_rdb};
pub use restore::{Layout, Restored};
pub use s3::{S3, S3Settings};

use std::future::Future;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// `--part-size` by default.
pub const DEFAULT_PART_SIZE: usize = 8 * 1024 * 1024;
/// The largest `--part-size`: three parts of it are in memory at once.
pub const MAX_PART_SIZE: usize = 64 * 1024 * 1024;

/// Where the RDB goes as it streams: the S3 upload, or any [`AsyncWrite`] through [`Writer`].
pub trait Sink {
    /// Takes the next bytes of the RDB; returns once the sink can take more (back-pressure).
    fn write(&mut self, data: &[u8]) -> impl Future<Output = Result<(), Error>> + Send;
}

/// A [`Sink`] over an [`AsyncWrite`] (a file, a `Vec<u8>`); the caller flushes it.
pub struct Writer<W>(pub W);

impl<W: AsyncWrite + Unpin + Send> Sink for Writer<W> {
    async fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        self.0
            .write_all(data)
            .await
            .map_err(|e| Error::io("writing the RDB", e))
    }
}

/// A backup of `source` into the object `key`: the upload is started first (a bucket that
/// refuses the credentials fails before the redis-server is asked for a snapshot), aborted on
/// any failure, and when `stop` completes before the RDB has streamed (a SIGTERM).
pub async fn backup_to_s3(
    source: &RedisSource,
    s3: &S3,
    key: &str,
    part_size: usize,
    stop: impl Future<Output = ()>,
) -> Result<Snapshot, Error> {
    let mut upload = s3.start_upload(key, part_size).await?;
    let fetched = tokio::select! {
        fetched = fetch_rdb(source, &mut upload) => fetched,
        () = stop => Err(Error::Interrupted(
            "stopped by a signal while the RDB streamed; the upload was aborted".to_owned(),
        )),
    };
    match fetched {
        Ok(snapshot) => {
            upload.finish(&snapshot).await?;
            Ok(snapshot)
        }
        Err(e) => {
            upload.abort().await;
            Err(e)
        }
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The data directory holds a dataset already: nothing was read or written.
    DataPresent,
    Restored(Restored),
}

/// The object `key` into `layout`, unless it holds a dataset already; checked against
/// `expected_sha256` when given (the checksum its `RedisBackup` recorded), else against the
/// checksum object beside it.
pub async fn restore_from_s3(
    s3: &S3,
    key: &str,
    expected_sha256: Option<&str>,
    layout: &Layout,
    read_timeout: Duration,
) -> Result<RestoreOutcome, Error> {
    layout.check()?;
    if layout.present()? {
        return Ok(RestoreOutcome::DataPresent);
    }
    let expected = match expected_sha256 {
        Some(expected) => expected.to_owned(),
        None => match s3.checksum(key).await? {
            Some(recorded) => recorded,
            None => {
                // A missing object is said as such (S3NotFound), not as a missing checksum.
                s3.size(key).await?;
                return Err(Error::NoChecksum(format!(
                    "{} has no checksum beside it ({}): it was not written by redis-backup, \
                     or the checksum was deleted",
                    s3.settings().location(key),
                    s3::checksum_key(key)
                )));
            }
        },
    };
    let object = s3.open(key).await?;
    let restored = restore::restore_stream(layout, &expected, object.stream, read_timeout).await?;
    Ok(RestoreOutcome::Restored(restored))
}

/// A size in bytes: a number, optionally with a unit (`KiB`, `MiB`, `GiB`, or `Ki`, `Mi`,
/// `Gi`: powers of 1024; `K`/`KB`, `M`/`MB`, `G`/`GB`: powers of 1000).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 8388608, 8MiB)"))?;
    let factor: usize = match unit.trim() {
        "" | "B" => 1,
        "K" | "KB" | "k" | "kB" => 1000,
        "Ki" | "KiB" => 1 << 10,
        "M" | "MB" => 1000 * 1000,
        "Mi" | "MiB" => 1 << 20,
        "G" | "GB" => 1000 * 1000 * 1000,
        "Gi" | "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "{other:?} is not a unit of size (KiB, MiB, GiB, ...)"
            ));
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_and_without_units() {
        assert_eq!(parse_size("8388608"), Ok(8 * 1024 * 1024));
        assert_eq!(parse_size("8MiB"), Ok(8 * 1024 * 1024));
        assert_eq!(parse_size("8Mi"), Ok(8 * 1024 * 1024));
        assert_eq!(parse_size("5MB"), Ok(5_000_000));
        assert_eq!(parse_size(" 1 GiB "), Ok(1 << 30));
        for bad in ["", "MiB", "-1", "8XB", "1.5MiB", "99999999999999999999GiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_writer_sink_passes_bytes_on() {
        let mut sink = Writer(Vec::new());
        sink.write(b"REDIS").await.expect("written");
        sink.write(b"0010").await.expect("written");
        assert_eq!(sink.0, b"REDIS0010");
    }
}
