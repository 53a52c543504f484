//! The bucket, through object_store's S3 client (ring, no aws-lc).
//!
//! Writing a backup: the RDB streams straight into a multipart upload of `<key>` (object_store's
//! [`WriteMultipart`], parts of `--part-size`, at most two in flight); S3 shows `<key>` only once
//! the upload is completed, whole. Its SHA-256 is known only once the last byte has streamed
//! by, and S3 takes an object's metadata when its upload is *created*, so the checksum goes
//! into an object of its own beside it, `<key>.sha256`, in `sha256sum`'s format (`sha256sum -c`
//! checks a downloaded backup). A HEAD checks `<key>`'s size first; any failure deletes what
//! was written. (A server-side copy into an object created with the metadata cost 5-7 s per
//! GiB on the bed's store, a third of the backup's time: measured by `make bench-backup`.)
//! The backup's result, and so its `RedisBackup`'s status, carries the checksum too; a
//! restore from a `RedisBackup` is checked against that.

use crate::replica::Snapshot;
use crate::{Error, Reason, Sink};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::client::ClientOptions;
use object_store::path::Path;
use object_store::{
    BackoffConfig, GetOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig, WriteMultipart,
};
use std::time::Duration;

/// Appended to a backup's key for the object holding its SHA-256.
pub const CHECKSUM_SUFFIX: &str = ".sha256";
/// The most of a checksum object read: a line of `sha256sum`'s is 66 bytes and a name.
const CHECKSUM_OBJECT_MAX: usize = 4096;
/// S3's bounds on a multipart upload's parts.
pub const MIN_PART_SIZE: usize = 5 * 1024 * 1024;
pub const MAX_PARTS: usize = 10_000;
/// Parts uploading at once, at most: with the one being filled, the RDB's bytes in memory are
/// at most three parts.
const PARTS_IN_FLIGHT: usize = 2;

/// How to reach the bucket (the `--endpoint`, `--region`, `--bucket`, `--force-path-style`
/// flags and the `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` environment).
#[derive(Clone)]
pub struct S3Settings {
    /// `None`: AWS's endpoint for the region.
    pub endpoint: Option<String>,
    pub region: String,
    pub bucket: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// `https://host/bucket/key` rather than `https://bucket.host/key`.
    pub force_path_style: bool,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("bucket", &self.bucket)
            .field("access_key_id", &self.access_key_id)
            .field(
                "secret_access_key",
                &self.secret_access_key.as_ref().map(|_| "******"),
            )
            .field("force_path_style", &self.force_path_style)
            .finish()
    }
}

impl S3Settings {
    /// `s3://<bucket>/<key>`.
    pub fn location(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

/// How long requests may take.
#[derive(Debug, Clone, Copy)]
pub enum Purpose {
    /// Part uploads: each request whole within 5 minutes.
    Upload,
    /// One GET streaming the whole object: no total bound, but no byte for `read_timeout` fails.
    Download { read_timeout: Duration },
}

/// A client of one bucket.
pub struct S3 {
    store: AmazonS3,
    settings: S3Settings,
}

impl S3 {
    pub fn new(settings: S3Settings, purpose: Purpose) -> Result<S3, Error> {
        let mut options = ClientOptions::new()
            .with_allow_http(true)
            .with_connect_timeout(Duration::from_secs(10));
        options = match purpose {
            Purpose::Upload => options.with_timeout(Duration::from_secs(300)),
            Purpose::Download { read_timeout } => options
                .with_timeout_disabled()
                .with_read_timeout(read_timeout),
        };
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 5,
            retry_timeout: Duration::from_secs(120),
        };
        let mut builder = AmazonS3Builder::new()
            .with_client_options(options)
            .with_retry(retry)
            .with_allow_http(true)
            .with_virtual_hosted_style_request(!settings.force_path_style)
            .with_region(&settings.region)
            .with_bucket_name(&settings.bucket);
        if let Some(endpoint) = &settings.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(id) = &settings.access_key_id {
            builder = builder.with_access_key_id(id);
        }
        if let Some(secret) = &settings.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        let store = builder
            .build()
            .map_err(|e| Error::BadConfig(format!("S3 settings: {e}")))?;
        Ok(S3 { store, settings })
    }

    pub fn settings(&self) -> &S3Settings {
        &self.settings
    }

    /// Starts the multipart upload of a backup to `key` (which also proves the credentials
    /// before any redis-server is asked for a snapshot).
    pub async fn start_upload(&self, key: &str, part_size: usize) -> Result<S3Upload<'_>, Error> {
        if !(MIN_PART_SIZE..=crate::MAX_PART_SIZE).contains(&part_size) {
            return Err(Error::BadConfig(format!(
                "a part size of {part_size} bytes is out of bounds ({MIN_PART_SIZE}..={})",
                crate::MAX_PART_SIZE
            )));
        }
        let key = object_key(key)?;
        let checksum = object_key(&checksum_key(key.as_ref()))?;
        let upload = self
            .store
            .put_multipart(&key)
            .await
            .map_err(|e| Error::s3_no_not_found(format!("starting the upload of {key}"), e))?;
        Ok(S3Upload {
            s3: self,
            key,
            checksum,
            writer: Some(WriteMultipart::new_with_chunk_size(upload, part_size)),
            part: BytesMut::new(),
            part_size,
            parts: 0,
        })
    }

    /// The object `key`: its size, and its bytes as a stream.
    pub async fn open(&self, key: &str) -> Result<Object, Error> {
        let path = object_key(key)?;
        let result = self
            .store
            .get(&path)
            .await
            .map_err(|e| Error::s3(format!("reading {key}"), e))?;
        Ok(Object {
            size: result.meta.size,
            stream: result.into_stream(),
        })
    }

    /// The SHA-256 recorded beside `key` (in `<key>.sha256`); `None` when there is no such
    /// object. At most [`CHECKSUM_OBJECT_MAX`] bytes of it are read.
    pub async fn checksum(&self, key: &str) -> Result<Option<String>, Error> {
        let name = checksum_key(key);
        let path = object_key(&name)?;
        let result = match self.store.get(&path).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(Error::s3(format!("reading {name}"), e)),
        };
        let mut text = Vec::new();
        let mut stream = result.into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Error::s3(format!("reading {name}"), e))?;
            if text.len() + chunk.len() > CHECKSUM_OBJECT_MAX {
                return Err(Error::NoChecksum(format!(
                    "{} is larger than {CHECKSUM_OBJECT_MAX} bytes: not a checksum",
                    self.settings.location(&name)
                )));
            }
            text.extend_from_slice(&chunk);
        }
        parse_checksum(&text).map(Some).ok_or_else(|| {
            Error::NoChecksum(format!(
                "{} does not start with a SHA-256 in hex: {}",
                self.settings.location(&name),
                crate::resp::printable(&text[..text.len().min(100)])
            ))
        })
    }

    /// The size of `key` (a HEAD).
    pub async fn size(&self, key: &str) -> Result<u64, Error> {
        let path = object_key(key)?;
        let options = GetOptions {
            head: true,
            ..GetOptions::default()
        };
        let result = self
            .store
            .get_opts(&path, options)
            .await
            .map_err(|e| Error::s3(format!("HEAD {key}"), e))?;
        Ok(result.meta.size)
    }

    /// Deletes `key` and its checksum. An object already gone is no error (S3's DELETE says
    /// the same).
    pub async fn delete(&self, key: &str) -> Result<(), Error> {
        for target in [key.to_owned(), checksum_key(key)] {
            let path = object_key(&target)?;
            match self.store.delete(&path).await {
                Ok(()) => {}
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(Error::s3(format!("deleting {target}"), e)),
            }
        }
        Ok(())
    }
}

/// An object being read.
pub struct Object {
    pub size: u64,
    pub stream: BoxStream<'static, object_store::Result<Bytes>>,
}

/// A backup streaming into the bucket; a [`Sink`]. End it with [`S3Upload::finish`] or
/// [`S3Upload::abort`].
pub struct S3Upload<'a> {
    s3: &'a S3,
    key: Path,
    checksum: Path,
    writer: Option<WriteMultipart>,
    part: BytesMut,
    part_size: usize,
    parts: usize,
}

impl Sink for S3Upload<'_> {
    async fn write(&mut self, mut data: &[u8]) -> Result<(), Error> {
        while !data.is_empty() {
            if self.part.capacity() == 0 {
                self.part = BytesMut::with_capacity(self.part_size);
            }
            let take = (self.part_size - self.part.len()).min(data.len());
            self.part.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.part.len() == self.part_size {
                self.send_part().await?;
            }
        }
        Ok(())
    }
}

impl S3Upload<'_> {
    /// Hands the part filled so far to the upload, once fewer than [`PARTS_IN_FLIGHT`] are
    /// uploading (`wait_for_capacity(n)` waits for fewer than `n`): the back-pressure on the
    /// redis-server's stream.
    async fn send_part(&mut self) -> Result<(), Error> {
        if self.parts == MAX_PARTS {
            return Err(Error::S3 {
                reason: Reason::S3Error,
                op: format!("uploading {}", self.key),
                source: format!(
                    "the RDB is larger than S3's {MAX_PARTS} parts of {} bytes: raise --part-size",
                    self.part_size
                )
                .into(),
            });
        }
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::BadStream("the upload was already finished".to_owned()))?;
        writer
            .wait_for_capacity(PARTS_IN_FLIGHT)
            .await
            .map_err(|e| Error::s3_no_not_found(format!("uploading {}", self.key), e))?;
        let part = std::mem::take(&mut self.part).freeze();
        writer.put(part);
        self.parts += 1;
        Ok(())
    }

    /// Completes the upload, checks the object's size with a HEAD, and writes its checksum
    /// beside it. On `Err` nothing is left (but what a failed delete leaves, named on stderr).
    pub async fn finish(mut self, snapshot: &Snapshot) -> Result<(), Error> {
        if !self.part.is_empty()
            && let Err(e) = self.send_part().await
        {
            self.abort().await;
            return Err(e);
        }
        let Some(writer) = self.writer.take() else {
            return Err(Error::BadStream(
                "the upload was already finished".to_owned(),
            ));
        };
        // On error, finish aborts the upload itself.
        writer
            .finish()
            .await
            .map_err(|e| Error::s3_no_not_found(format!("completing {}", self.key), e))?;
        let published = self.publish(snapshot).await;
        if published.is_err()
            && let Err(e) = self.s3.delete(self.key.as_ref()).await
        {
            eprintln!("redis-backup: warning: {}", e.line());
        }
        published
    }

    /// Stops the upload: what was uploaded is discarded.
    pub async fn abort(mut self) {
        if let Some(writer) = self.writer.take()
            && let Err(e) = writer.abort().await
        {
            eprintln!(
                "redis-backup: warning: the upload of {} was not aborted: {e}",
                self.key
            );
        }
    }

    /// The object as written (the size streamed), then its checksum beside it.
    async fn publish(&self, snapshot: &Snapshot) -> Result<(), Error> {
        let size = self.s3.size(self.key.as_ref()).await?;
        if size != snapshot.size {
            return Err(Error::S3 {
                reason: Reason::S3Error,
                op: format!("checking {}", self.key),
                source: format!(
                    "the object has {size} bytes; {} were written",
                    snapshot.size
                )
                .into(),
            });
        }
        let line = checksum_line(&snapshot.sha256, self.key.as_ref());
        self.s3
            .store
            .put(&self.checksum, PutPayload::from(Bytes::from(line)))
            .await
            .map_err(|e| Error::s3_no_not_found(format!("writing {}", self.checksum), e))?;
        Ok(())
    }
}

/// The key of the object holding `key`'s checksum.
pub fn checksum_key(key: &str) -> String {
    format!("{key}{CHECKSUM_SUFFIX}")
}

/// `sha256sum`'s line for the object `key`: `<hex>  <file name>`.
fn checksum_line(sha256: &str, key: &str) -> String {
    let name = key.rsplit_once('/').map_or(key, |(_, name)| name);
    format!("{sha256}  {name}\n")
}

/// The SHA-256 a checksum object starts with (lower-case hex), as `sha256sum` writes it.
pub fn parse_checksum(text: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(text).ok()?;
    let first = text.split_ascii_whitespace().next()?.to_ascii_lowercase();
    crate::rdb::is_sha256_hex(&first).then_some(first)
}

/// A key as object_store takes it (no empty segment, no `.` or `..`, no leading `/`).
pub fn object_key(key: &str) -> Result<Path, Error> {
    let path =
        Path::parse(key).map_err(|e| Error::BadConfig(format!("the object key {key:?}: {e}")))?;
    // object_store would drop a leading or trailing `/`: the key would not be the one asked for.
    if path.as_ref() != key || key.is_empty() {
        return Err(Error::BadConfig(format!(
            "the object key {key:?} is not a plain key (no leading or trailing '/', no empty part)"
        )));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(endpoint: Option<&str>, path_style: bool) -> S3Settings {
        S3Settings {
            endpoint: endpoint.map(str::to_owned),
            region: "eu-west-1".into(),
            bucket: "backups".into(),
            access_key_id: None,
            secret_access_key: Some("hunter2".into()),
            force_path_style: path_style,
        }
    }

    #[test]
    fn settings_hide_the_secret() {
        let shown = format!("{:?}", settings(Some("http://10.88.0.1:9000"), true));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(
            settings(None, false).location("a/b.rdb"),
            "s3://backups/a/b.rdb"
        );
    }

    #[test]
    fn keys_are_checked() {
        assert!(object_key("ns/my redis/2026-01-01T00:00:00Z.rdb").is_ok());
        for bad in ["/abs", "trailing/", "a//b", "a/../b", ""] {
            let error = object_key(bad).map(|_| ()).expect_err(bad);
            assert_eq!(error.reason(), Reason::BadConfig, "{bad}");
        }
    }

    #[test]
    fn the_checksum_object_is_sha256sums_line() {
        let sha = "0123456789abcdef".repeat(4);
        let line = checksum_line(&sha, "ns/cache/cache-202612051030.rdb");
        assert_eq!(line, format!("{sha}  cache-202612051030.rdb\n"));
        assert_eq!(checksum_key("ns/x.rdb"), "ns/x.rdb.sha256");
        assert_eq!(parse_checksum(line.as_bytes()), Some(sha.clone()));
        assert_eq!(
            parse_checksum(sha.to_uppercase().as_bytes()),
            Some(sha.clone())
        );
        assert_eq!(parse_checksum(format!("  {sha}").as_bytes()), Some(sha));
        for bad in [&b""[..], b"abc  x.rdb\n", b"\xff\xfe", b"   \n"] {
            assert_eq!(parse_checksum(bad), None, "{bad:?}");
        }
    }
}
