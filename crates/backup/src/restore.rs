//! Restore: one backup into the data directory of a redis-server that has not started yet (an
//! init container). A directory that already holds a dataset is left alone: a restarted pod
//! keeps its own data.
//!
//! Without `--append-only` the RDB becomes `<dbfilename>`. With it, Redis 7 loads only the
//! multi-part AOF (and ignores `dump.rdb` when there is none), so the RDB becomes the AOF's base
//! instead: `<appenddirname>/<appendfilename>.1.base.rdb` with the manifest
//! `<appenddirname>/<appendfilename>.manifest` naming it (redis `src/aof.c`:
//! `getAofManifestAsString`, `BASE_FILE_SUFFIX`, `RDB_FORMAT_SUFFIX`).
//!
//! The bytes go to a temporary file (or directory) in the data directory, are checked (the
//! SHA-256 recorded for it, the RDB's magic and CRC-64), fsynced, and only then
//! renamed into place, the directory fsynced after: a crash or a failure leaves either nothing
//! or the whole dataset, never a part of it under Redis's names.

use crate::Error;
use crate::rdb::{RdbCheck, is_sha256_hex};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Bytes gathered before a write to the file.
const WRITE_BUFFER: usize = 1024 * 1024;

/// Where the dataset goes, as redis-server's `dir`, `dbfilename`, `appendonly`,
/// `appendfilename` and `appenddirname` name it.
#[derive(Debug, Clone)]
pub struct Layout {
    pub data_dir: PathBuf,
    pub dbfilename: String,
    pub append_only: bool,
    pub appendfilename: String,
    pub appenddirname: String,
}

impl Layout {
    /// Redis's defaults in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Layout {
            data_dir: data_dir.into(),
            dbfilename: "dump.rdb".into(),
            append_only: false,
            appendfilename: "appendonly.aof".into(),
            appenddirname: "appendonlydir".into(),
        }
    }

    /// `Err` for a name that is not a plain file name Redis writes unquoted in its manifest.
    pub fn check(&self) -> Result<(), Error> {
        for (flag, name) in [
            ("--dbfilename", &self.dbfilename),
            ("--appendfilename", &self.appendfilename),
            ("--appenddirname", &self.appenddirname),
        ] {
            let plain = !name.is_empty()
                && name != "."
                && name != ".."
                && name.len() <= 200
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !plain {
                return Err(Error::BadConfig(format!(
                    "{flag} {name:?} is not a plain file name (letters, digits, '.', '_', '-')"
                )));
            }
        }
        Ok(())
    }

    /// Whether the directory holds a dataset already: `<dbfilename>` or `<appenddirname>`.
    pub fn present(&self) -> Result<bool, Error> {
        for name in [&self.dbfilename, &self.appenddirname] {
            let path = self.data_dir.join(name);
            match std::fs::symlink_metadata(&path) {
                Ok(_) => return Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("looking at {}", path.display()), e)),
            }
        }
        Ok(false)
    }

    /// The base file of the append-only layout: `<appendfilename>.1.base.rdb`.
    pub fn base_name(&self) -> String {
        format!("{}.1.base.rdb", self.appendfilename)
    }

    /// `<appendfilename>.manifest`.
    pub fn manifest_name(&self) -> String {
        format!("{}.manifest", self.appendfilename)
    }

    /// The manifest naming the base as Redis 7 writes it.
    pub fn manifest(&self) -> String {
        format!("file {} seq 1 type b\n", self.base_name())
    }

    /// Where the bytes are written first: a hidden name in the data directory.
    fn staging(&self) -> PathBuf {
        if self.append_only {
            self.data_dir
                .join(format!(".{}.restoring", self.appenddirname))
        } else {
            self.data_dir
                .join(format!(".{}.restoring", self.dbfilename))
        }
    }
}

/// A finished restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub size: u64,
    pub sha256: String,
}

/// Writes the RDB `stream` into `layout`, checked against `expected_sha256` (as recorded
/// for the object); each item of the stream must come within `read_timeout`. On `Err` nothing is
/// left in the data directory. The caller has checked [`Layout::present`].
pub async fn restore_stream<S, E>(
    layout: &Layout,
    expected_sha256: &str,
    stream: S,
    read_timeout: Duration,
) -> Result<Restored, Error>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Into<Error>,
{
    layout.check()?;
    if !is_sha256_hex(expected_sha256) {
        return Err(Error::NoChecksum(format!(
            "the expected checksum {:?} is not a SHA-256 in hex",
            crate::error::one_line(expected_sha256, 100)
        )));
    }
    let staging = layout.staging();
    remove(&staging).await?;
    let result = write_checked(layout, &staging, expected_sha256, stream, read_timeout).await;
    if result.is_err()
        && let Err(e) = remove(&staging).await
    {
        eprintln!("redis-backup: warning: {}", e.line());
    }
    result
}

async fn write_checked<S, E>(
    layout: &Layout,
    staging: &Path,
    expected_sha256: &str,
    mut stream: S,
    read_timeout: Duration,
) -> Result<Restored, Error>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Into<Error>,
{
    let rdb_path = if layout.append_only {
        tokio::fs::create_dir(staging)
            .await
            .map_err(|e| Error::io(format!("creating {}", staging.display()), e))?;
        staging.join(layout.base_name())
    } else {
        staging.to_owned()
    };
    let file = tokio::fs::File::create(&rdb_path)
        .await
        .map_err(|e| Error::io(format!("creating {}", rdb_path.display()), e))?;
    let mut out = tokio::io::BufWriter::with_capacity(WRITE_BUFFER, file);
    let mut check = RdbCheck::new();
    let written = |e| Error::io(format!("writing {}", rdb_path.display()), e);
    loop {
        let next = tokio::time::timeout(read_timeout, stream.next())
            .await
            .map_err(|_| Error::S3 {
                reason: crate::Reason::S3Unreachable,
                op: "reading the object".to_owned(),
                source: format!("no byte for {read_timeout:?}").into(),
            })?;
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(Into::into)?;
        check.update(&chunk);
        out.write_all(&chunk).await.map_err(written)?;
    }
    out.flush().await.map_err(written)?;
    let file = out.into_inner();
    file.sync_all().await.map_err(written)?;
    drop(file);
    // A different object first: its bytes are not the backup's, whatever they are.
    let (summary, verdict) = check.finish();
    if summary.sha256 != expected_sha256 {
        return Err(Error::ChecksumMismatch {
            expected: expected_sha256.to_owned(),
            actual: summary.sha256,
        });
    }
    verdict.map_err(Error::BadStream)?;
    let (from, to) = if layout.append_only {
        let manifest = staging.join(layout.manifest_name());
        tokio::fs::write(&manifest, layout.manifest())
            .await
            .map_err(|e| Error::io(format!("writing {}", manifest.display()), e))?;
        sync(&manifest).await?;
        sync(staging).await?;
        (staging, layout.data_dir.join(&layout.appenddirname))
    } else {
        (staging, layout.data_dir.join(&layout.dbfilename))
    };
    tokio::fs::rename(from, &to).await.map_err(|e| {
        Error::io(
            format!("renaming {} to {}", from.display(), to.display()),
            e,
        )
    })?;
    sync(&layout.data_dir).await?;
    Ok(Restored {
        size: summary.size,
        sha256: summary.sha256,
    })
}

/// fsync of a file or a directory.
async fn sync(path: &Path) -> Result<(), Error> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| Error::io(format!("opening {} to sync it", path.display()), e))?;
    file.sync_all()
        .await
        .map_err(|e| Error::io(format!("syncing {}", path.display()), e))
}

/// Removes a file or a directory tree; nothing there is fine.
async fn remove(path: &Path) -> Result<(), Error> {
    let removed = match tokio::fs::symlink_metadata(path).await {
        Ok(meta) if meta.is_dir() => tokio::fs::remove_dir_all(path).await,
        Ok(_) => tokio::fs::remove_file(path).await,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    };
    removed.map_err(|e| Error::io(format!("removing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_append_only_names_are_redis_7s() {
        let layout = Layout::new("/data");
        assert_eq!(layout.base_name(), "appendonly.aof.1.base.rdb");
        assert_eq!(layout.manifest_name(), "appendonly.aof.manifest");
        assert_eq!(
            layout.manifest(),
            "file appendonly.aof.1.base.rdb seq 1 type b\n"
        );
    }

    #[test]
    fn names_that_are_paths_or_need_quoting_are_refused() {
        for bad in ["", ".", "..", "a/b", "a b", "a\"b", "a\nb"] {
            let layout = Layout {
                dbfilename: bad.into(),
                ..Layout::new("/data")
            };
            assert!(layout.check().is_err(), "{bad:?}");
        }
        assert!(Layout::new("/data").check().is_ok());
    }

    #[test]
    fn a_dump_or_an_aof_dir_is_a_dataset() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let layout = Layout::new(dir.path());
        assert!(!layout.present().expect("readable"));
        std::fs::create_dir(dir.path().join("appendonlydir")).expect("created");
        assert!(layout.present().expect("readable"));
        std::fs::remove_dir(dir.path().join("appendonlydir")).expect("removed");
        std::fs::write(dir.path().join("dump.rdb"), b"").expect("written");
        assert!(layout.present().expect("readable"));
    }

    fn rdb() -> Vec<u8> {
        let mut out = b"REDIS0010\xfe\x00\x00\x01k\x01v".to_vec();
        out.push(0xFF);
        let crc = crate::rdb::crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn sha(data: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        crate::rdb::hex(&Sha256::digest(data))
    }

    fn chunks(data: &[u8]) -> impl Stream<Item = Result<Bytes, Error>> + Unpin {
        let parts: Vec<Result<Bytes, Error>> = data
            .chunks(7)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        futures::stream::iter(parts)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("readable")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    const T: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn an_rdb_lands_as_the_dump() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let layout = Layout::new(dir.path());
        let data = rdb();
        let restored = restore_stream(&layout, &sha(&data), chunks(&data), T)
            .await
            .expect("restored");
        assert_eq!(restored.size, data.len() as u64);
        assert_eq!(names(dir.path()), ["dump.rdb"]);
        assert_eq!(
            std::fs::read(dir.path().join("dump.rdb")).expect("read"),
            data
        );
    }

    #[tokio::test]
    async fn with_append_only_it_lands_as_the_aof_base_with_its_manifest() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let layout = Layout {
            append_only: true,
            ..Layout::new(dir.path())
        };
        let data = rdb();
        restore_stream(&layout, &sha(&data), chunks(&data), T)
            .await
            .expect("restored");
        assert_eq!(names(dir.path()), ["appendonlydir"]);
        let aof = dir.path().join("appendonlydir");
        assert_eq!(
            names(&aof),
            ["appendonly.aof.1.base.rdb", "appendonly.aof.manifest"]
        );
        assert_eq!(
            std::fs::read_to_string(aof.join("appendonly.aof.manifest")).expect("read"),
            "file appendonly.aof.1.base.rdb seq 1 type b\n"
        );
    }

    #[tokio::test]
    async fn other_bytes_a_broken_rdb_or_a_bad_checksum_leave_nothing() {
        let data = rdb();
        for append_only in [false, true] {
            let dir = tempfile::tempdir().expect("a temp dir");
            let layout = Layout {
                append_only,
                ..Layout::new(dir.path())
            };
            let other = b"REDIS0010 other".to_vec();
            let error = restore_stream(&layout, &sha(&data), chunks(&other), T)
                .await
                .expect_err("not the backup");
            assert_eq!(error.reason(), crate::Reason::ChecksumMismatch);
            assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));

            let mut broken = data.clone();
            broken.truncate(data.len() - 1);
            let error = restore_stream(&layout, &sha(&broken), chunks(&broken), T)
                .await
                .expect_err("cut short");
            assert_eq!(error.reason(), crate::Reason::BadStream);
            assert!(names(dir.path()).is_empty());

            let error = restore_stream(&layout, "nothex", chunks(&data), T)
                .await
                .expect_err("no checksum");
            assert_eq!(error.reason(), crate::Reason::NoChecksum);
            assert!(names(dir.path()).is_empty());
        }
    }

    #[tokio::test]
    async fn a_failing_stream_leaves_nothing() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let layout = Layout::new(dir.path());
        let data = rdb();
        let failing = futures::stream::iter(vec![
            Ok(Bytes::copy_from_slice(&data[..10])),
            Err(Error::BadStream("cut".into())),
        ]);
        let error = restore_stream(&layout, &sha(&data), failing, T)
            .await
            .expect_err("failed");
        assert_eq!(error.reason(), crate::Reason::BadStream);
        assert!(names(dir.path()).is_empty());
    }
}
