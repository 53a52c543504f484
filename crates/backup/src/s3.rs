//! The bucket: object_store's S3 client (ring, no aws-lc), plus the few signed requests it has
//! no API for.
//!
//! Writing a backup: the SHA-256 of the RDB is known only once the last byte has streamed by,
//! but S3 takes an object's user metadata when its multipart upload is *created*, never when
//! it completes. So the RDB streams into a staging object `<key>.partial` (object_store's
//! [`WriteMultipart`], parts of `--part-size`, at most two in flight), and once its hash is
//! known the object `<key>` is made from it by a server-side multipart copy
//! (`UploadPartCopy`, no byte through this process) created with `x-amz-meta-sha256`; then a
//! HEAD checks the object's size and metadata, and the staging object is deleted. `<key>`
//! exists only whole and with its checksum; every failure aborts what was started and deletes
//! what was written.

use crate::replica::Snapshot;
use crate::{Error, Reason, Sink};
use bytes::{Bytes, BytesMut};
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use object_store::aws::{AmazonS3, AmazonS3Builder, AwsAuthorizer};
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpErrorKind, HttpRequestBody, ReqwestConnector,
};
use object_store::path::Path;
use object_store::{
    Attribute, BackoffConfig, GetOptions, ObjectStore, ObjectStoreExt, RetryConfig, WriteMultipart,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use std::time::Duration;

/// The user metadata holding the RDB's SHA-256 (`x-amz-meta-sha256`).
pub const SHA256_METADATA: &str = "sha256";
/// Appended to the key for the object the RDB streams into before it is copied to the key.
pub const STAGING_SUFFIX: &str = ".partial";
/// S3's bounds on a multipart upload's parts.
pub const MIN_PART_SIZE: usize = 5 * 1024 * 1024;
pub const MAX_PARTS: usize = 10_000;
/// The size of the ranges the staging object is copied in (S3 copies at most 5 GiB per part).
const COPY_PART_SIZE: u64 = 512 * 1024 * 1024;
/// Parts uploading at once, at most: with the one being filled, the RDB's bytes in memory are
/// at most three parts.
const PARTS_IN_FLIGHT: usize = 2;
/// Tries of a request of our own (object_store retries its own).
const RAW_TRIES: u32 = 4;

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
    /// The URL of the bucket, as object_store forms it.
    fn bucket_endpoint(&self) -> String {
        let (bucket, region) = (&self.bucket, &self.region);
        match (&self.endpoint, self.force_path_style) {
            (Some(endpoint), true) => format!("{}/{bucket}", endpoint.trim_end_matches('/')),
            // A virtual-hosted endpoint names the bucket already.
            (Some(endpoint), false) => endpoint.trim_end_matches('/').to_owned(),
            (None, true) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
            (None, false) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
        }
    }

    /// `s3://<bucket>/<key>`.
    pub fn location(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

/// How long requests may take.
#[derive(Debug, Clone, Copy)]
pub enum Purpose {
    /// Part uploads and copies: each request whole within 5 minutes.
    Upload,
    /// One GET streaming the whole object: no total bound, but no byte for `read_timeout` fails.
    Download { read_timeout: Duration },
}

/// A client of one bucket.
pub struct S3 {
    store: AmazonS3,
    http: HttpClient,
    settings: S3Settings,
    bucket_endpoint: String,
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
            .with_client_options(options.clone())
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
        let http = ReqwestConnector::default()
            .connect(&options)
            .map_err(|e| Error::BadConfig(format!("S3 HTTP client: {e}")))?;
        Ok(S3 {
            store,
            http,
            bucket_endpoint: settings.bucket_endpoint(),
            settings,
        })
    }

    pub fn settings(&self) -> &S3Settings {
        &self.settings
    }

    /// Starts the upload of a backup to `key`: the multipart upload of the staging object
    /// (which also proves the credentials before any redis-server is asked for a snapshot).
    pub async fn start_upload(&self, key: &str, part_size: usize) -> Result<S3Upload<'_>, Error> {
        if !(MIN_PART_SIZE..=crate::MAX_PART_SIZE).contains(&part_size) {
            return Err(Error::BadConfig(format!(
                "a part size of {part_size} bytes is out of bounds ({MIN_PART_SIZE}..={})",
                crate::MAX_PART_SIZE
            )));
        }
        let key = object_key(key)?;
        let staging = object_key(&format!("{key}{STAGING_SUFFIX}"))?;
        let upload =
            self.store.put_multipart(&staging).await.map_err(|e| {
                Error::s3_no_not_found(format!("starting the upload of {staging}"), e)
            })?;
        Ok(S3Upload {
            s3: self,
            key,
            staging,
            writer: Some(WriteMultipart::new_with_chunk_size(upload, part_size)),
            part: BytesMut::new(),
            part_size,
            parts: 0,
        })
    }

    /// The object `key`: its size, its `sha256` metadata (if any), and its bytes as a stream.
    pub async fn open(&self, key: &str) -> Result<Object, Error> {
        let path = object_key(key)?;
        let result = self
            .store
            .get(&path)
            .await
            .map_err(|e| Error::s3(format!("reading {key}"), e))?;
        let sha256 = result
            .attributes
            .get(&Attribute::Metadata(SHA256_METADATA.into()))
            .map(|v| v.as_ref().to_owned());
        Ok(Object {
            size: result.meta.size,
            sha256,
            stream: result.into_stream(),
        })
    }

    /// The size and `sha256` metadata of `key` (a HEAD).
    pub async fn head(&self, key: &str) -> Result<(u64, Option<String>), Error> {
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
        let sha256 = result
            .attributes
            .get(&Attribute::Metadata(SHA256_METADATA.into()))
            .map(|v| v.as_ref().to_owned());
        Ok((result.meta.size, sha256))
    }

    /// Deletes `key` and a staging object of it left by a killed backup. An object already
    /// gone is no error (S3's DELETE says the same).
    pub async fn delete(&self, key: &str) -> Result<(), Error> {
        for target in [key.to_owned(), format!("{key}{STAGING_SUFFIX}")] {
            let path = object_key(&target)?;
            match self.store.delete(&path).await {
                Ok(()) => {}
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(Error::s3(format!("deleting {target}"), e)),
            }
        }
        Ok(())
    }

    /// The URL of `key`, its path encoded as object_store encodes it.
    fn url(&self, key: &Path) -> String {
        format!("{}/{}", self.bucket_endpoint, encode_key(key))
    }

    /// One signed request of our own; the body of a 2xx reply that is not an S3 `<Error>`.
    async fn request(
        &self,
        op: &str,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<Bytes, Error> {
        let mut tries = 0;
        loop {
            tries += 1;
            let outcome = self
                .request_once(op, &method, url, headers, body.clone())
                .await;
            match outcome {
                Ok(body) => return Ok(body),
                Err((error, retry)) if retry && tries < RAW_TRIES => {
                    eprintln!("redis-backup: {}; trying again", error.line());
                    tokio::time::sleep(Duration::from_millis(250 << tries)).await;
                }
                Err((error, _)) => return Err(error),
            }
        }
    }

    /// One try: `Err((error, whether to try again))`.
    async fn request_once(
        &self,
        op: &str,
        method: &Method,
        url: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<Bytes, (Error, bool)> {
        let fail = |reason: Reason, detail: String| Error::S3 {
            reason,
            op: op.to_owned(),
            source: detail.into(),
        };
        let credential = self
            .store
            .credentials()
            .get_credential()
            .await
            .map_err(|e| (Error::s3(op, e), false))?;
        let mut request = http::Request::builder().method(method.clone()).uri(url);
        for (name, value) in headers {
            let name = HeaderName::try_from(*name)
                .map_err(|e| (fail(Reason::S3Error, e.to_string()), false))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|e| (fail(Reason::S3Error, e.to_string()), false))?;
            request = request.header(name, value);
        }
        let mut request = request
            .body(HttpRequestBody::from(body))
            .map_err(|e| (fail(Reason::S3Error, e.to_string()), false))?;
        AwsAuthorizer::new(&credential, "s3", &self.settings.region)
            .try_authorize(&mut request, None)
            .map_err(|e| (Error::s3(op, e), false))?;
        let response = match self.http.execute(request).await {
            Ok(response) => response,
            Err(e) => {
                let unreachable =
                    matches!(e.kind(), HttpErrorKind::Connect | HttpErrorKind::Timeout);
                let reason = if unreachable {
                    Reason::S3Unreachable
                } else {
                    Reason::S3Error
                };
                return Err((fail(reason, e.to_string()), true));
            }
        };
        let status = response.status();
        let body = response
            .into_body()
            .bytes()
            .await
            .map_err(|e| (fail(Reason::S3Error, e.to_string()), true))?;
        // S3 may answer a copy or a completion 200 and put the error in the body.
        let error_body = body.starts_with(b"<Error") || find_bytes(&body, b"<Error>").is_some();
        if status.is_success() && !error_body {
            return Ok(body);
        }
        let detail = format!("HTTP {status}: {}", error_text(&body));
        let reason = match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Reason::S3Denied,
            _ => Reason::S3Error,
        };
        let retry = status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS;
        Err((fail(reason, detail), retry))
    }
}

/// An object being read.
pub struct Object {
    pub size: u64,
    pub sha256: Option<String>,
    pub stream: BoxStream<'static, object_store::Result<Bytes>>,
}

/// A backup streaming into the bucket; a [`Sink`]. End it with [`S3Upload::finish`] or
/// [`S3Upload::abort`].
pub struct S3Upload<'a> {
    s3: &'a S3,
    key: Path,
    staging: Path,
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
                op: format!("uploading {}", self.staging),
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
            .map_err(|e| Error::s3_no_not_found(format!("uploading {}", self.staging), e))?;
        let part = std::mem::take(&mut self.part).freeze();
        writer.put(part);
        self.parts += 1;
        Ok(())
    }

    /// Completes the staging object, makes `key` from it with the snapshot's SHA-256 as
    /// metadata, checks `key` with a HEAD, deletes the staging object. On `Err` nothing is left
    /// (but what a failed delete leaves, named on stderr).
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
            .map_err(|e| Error::s3_no_not_found(format!("completing {}", self.staging), e))?;
        let started = std::time::Instant::now();
        let published = self.publish(snapshot).await;
        eprintln!(
            "redis-backup: {} copied to {} with its sha256 metadata in {:.1} s",
            self.staging,
            self.key,
            started.elapsed().as_secs_f64()
        );
        if let Err(e) = self.s3.store.delete(&self.staging).await {
            eprintln!(
                "redis-backup: warning: the staging object {} was not deleted: {e}",
                self.staging
            );
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
                self.staging
            );
        }
    }

    async fn publish(&self, snapshot: &Snapshot) -> Result<(), Error> {
        let s3 = self.s3;
        let url = s3.url(&self.key);
        let op = format!("copying {} to {}", self.staging, self.key);
        let created = s3
            .request(
                &op,
                Method::POST,
                &format!("{url}?uploads="),
                &[
                    (
                        &format!("x-amz-meta-{SHA256_METADATA}"),
                        snapshot.sha256.clone(),
                    ),
                    ("content-type", "application/octet-stream".to_owned()),
                ],
                Bytes::new(),
            )
            .await?;
        let upload_id = xml::<InitiateMultipartUploadResult>(&op, &created)?.upload_id;
        let query_id = utf8_percent_encode(&upload_id, STRICT).to_string();
        let copied = async {
            let source = format!("{}/{}", s3.settings.bucket, encode_key(&self.staging));
            let mut etags = Vec::new();
            for (n, (start, end)) in copy_ranges(snapshot.size, COPY_PART_SIZE).enumerate() {
                let reply = s3
                    .request(
                        &op,
                        Method::PUT,
                        &format!("{url}?partNumber={}&uploadId={query_id}", n + 1),
                        &[
                            ("x-amz-copy-source", source.clone()),
                            ("x-amz-copy-source-range", format!("bytes={start}-{end}")),
                        ],
                        Bytes::new(),
                    )
                    .await?;
                etags.push(xml::<CopyPartResult>(&op, &reply)?.e_tag);
            }
            s3.request(
                &op,
                Method::POST,
                &format!("{url}?uploadId={query_id}"),
                &[("content-type", "application/xml".to_owned())],
                Bytes::from(complete_body(&etags)),
            )
            .await
        }
        .await;
        if let Err(e) = copied {
            let abort = s3
                .request(
                    &op,
                    Method::DELETE,
                    &format!("{url}?uploadId={query_id}"),
                    &[],
                    Bytes::new(),
                )
                .await;
            if let Err(abort) = abort {
                eprintln!("redis-backup: warning: {}", abort.line());
            }
            return Err(e);
        }
        let checked = self.check(snapshot).await;
        if checked.is_err()
            && let Err(e) = s3.store.delete(&self.key).await
        {
            eprintln!("redis-backup: warning: {} was not deleted: {e}", self.key);
        }
        checked
    }

    /// The object as written: the size streamed, the SHA-256 in its metadata.
    async fn check(&self, snapshot: &Snapshot) -> Result<(), Error> {
        let (size, sha256) = self.s3.head(self.key.as_ref()).await?;
        if size != snapshot.size || sha256.as_deref() != Some(snapshot.sha256.as_str()) {
            return Err(Error::S3 {
                reason: Reason::S3Error,
                op: format!("checking {}", self.key),
                source: format!(
                    "the object has {size} bytes and sha256 metadata {sha256:?}; {} bytes and \
                     {} were written",
                    snapshot.size, snapshot.sha256
                )
                .into(),
            });
        }
        Ok(())
    }
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

/// Every byte but the unreserved ones (`A-Za-z0-9-._~`) percent-encoded, as SigV4 wants.
const STRICT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
const STRICT_PATH: &AsciiSet = &STRICT.remove(b'/');

fn encode_key(key: &Path) -> String {
    utf8_percent_encode(key.as_ref(), STRICT_PATH).to_string()
}

/// Inclusive byte ranges of at most `part` bytes covering `size` bytes.
fn copy_ranges(size: u64, part: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..size.div_ceil(part)).map(move |n| (n * part, ((n + 1) * part).min(size) - 1))
}

fn complete_body(etags: &[String]) -> String {
    let mut body = String::from("<CompleteMultipartUpload>");
    for (n, etag) in etags.iter().enumerate() {
        body.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
            n + 1,
            quick_xml::escape::escape(etag.as_str())
        ));
    }
    body.push_str("</CompleteMultipartUpload>");
    body
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InitiateMultipartUploadResult {
    upload_id: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CopyPartResult {
    e_tag: String,
}

fn xml<T: serde::de::DeserializeOwned>(op: &str, body: &[u8]) -> Result<T, Error> {
    let text = std::str::from_utf8(body).map_err(|e| Error::S3 {
        reason: Reason::S3Error,
        op: op.to_owned(),
        source: format!("the reply is not UTF-8: {e}").into(),
    })?;
    quick_xml::de::from_str(text).map_err(|e| Error::S3 {
        reason: Reason::S3Error,
        op: op.to_owned(),
        source: format!("unexpected reply {}: {e}", crate::resp::printable(body)).into(),
    })
}

/// The `<Code>` and `<Message>` of an S3 error body, or the body's start.
fn error_text(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct S3Error {
        code: Option<String>,
        message: Option<String>,
    }
    match std::str::from_utf8(body)
        .ok()
        .and_then(|text| quick_xml::de::from_str::<S3Error>(text).ok())
    {
        Some(S3Error {
            code: Some(code),
            message,
        }) => format!("{code}: {}", message.unwrap_or_default()),
        _ => crate::resp::printable(body),
    }
}

fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
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
    fn the_bucket_url_follows_the_addressing_style() {
        let e = Some("http://10.88.0.1:9000/");
        assert_eq!(
            settings(e, true).bucket_endpoint(),
            "http://10.88.0.1:9000/backups"
        );
        assert_eq!(
            settings(e, false).bucket_endpoint(),
            "http://10.88.0.1:9000"
        );
        assert_eq!(
            settings(None, true).bucket_endpoint(),
            "https://s3.eu-west-1.amazonaws.com/backups"
        );
        assert_eq!(
            settings(None, false).bucket_endpoint(),
            "https://backups.s3.eu-west-1.amazonaws.com"
        );
        assert!(!format!("{:?}", settings(None, true)).contains("hunter2"));
    }

    #[test]
    fn keys_are_checked_and_encoded_per_segment() {
        let key = object_key("ns/my redis/2026-01-01T00:00:00Z.rdb").expect("a key");
        assert_eq!(
            encode_key(&key),
            "ns/my%20redis/2026-01-01T00%3A00%3A00Z.rdb"
        );
        for bad in ["/abs", "trailing/", "a//b", "a/../b", ""] {
            let error = object_key(bad).map(|_| ()).expect_err(bad);
            assert_eq!(error.reason(), Reason::BadConfig, "{bad}");
        }
    }

    #[test]
    fn copy_ranges_cover_the_object() {
        assert_eq!(
            copy_ranges(10, 4).collect::<Vec<_>>(),
            [(0, 3), (4, 7), (8, 9)]
        );
        assert_eq!(copy_ranges(8, 4).collect::<Vec<_>>(), [(0, 3), (4, 7)]);
        assert_eq!(copy_ranges(1, 4).collect::<Vec<_>>(), [(0, 0)]);
        assert_eq!(copy_ranges(0, 4).count(), 0);
    }

    #[test]
    fn replies_are_read_and_errors_named() {
        let created: InitiateMultipartUploadResult = xml(
            "op",
            b"<?xml version=\"1.0\"?><InitiateMultipartUploadResult><Bucket>b</Bucket>\
              <Key>k</Key><UploadId>abc.-_1</UploadId></InitiateMultipartUploadResult>",
        )
        .expect("parsed");
        assert_eq!(created.upload_id, "abc.-_1");
        let part: CopyPartResult = xml(
            "op",
            b"<CopyPartResult><LastModified>x</LastModified><ETag>&#34;e1&#34;</ETag></CopyPartResult>",
        )
        .expect("parsed");
        assert_eq!(part.e_tag, "\"e1\"");
        assert_eq!(
            complete_body(&[part.e_tag]),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag>\
             </Part></CompleteMultipartUpload>"
        );
        assert!(xml::<CopyPartResult>("op", b"garbage").is_err());
        assert_eq!(
            error_text(b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>"),
            "AccessDenied: no"
        );
        assert_eq!(error_text(b"oops\n"), "oops\\n");
    }
}
