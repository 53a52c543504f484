//! The backup's side of the replication protocol (the async shell around [`crate::resp`]):
//! connect (TCP, or TLS with [`crate::tls`]), log in, ask for an RDB-only full resync as
//! `redis-cli --rdb` does, and hand the payload to a [`Sink`] as it arrives, checking it with
//! [`crate::rdb::RdbCheck`].
//!
//! The handshake (redis `src/replication.c`, `syncCommand` and `replconfCommand`):
//! `AUTH [user] password` when there is a password; `REPLCONF capa eof` (the master may then
//! send a diskless transfer: `$EOF:<40-byte mark>`, the payload, the mark); `REPLCONF rdb-only 1`
//! (Redis 7+: only the RDB, no command stream after it; an `-ERR` from an older server is
//! ignored); `PSYNC ? -1`, answered `+FULLRESYNC <replid> <offset>`; then, after any `\n`
//! keepalives sent while the snapshot is being made, `$<len>` and `len` bytes, or the marked
//! payload.
//!
//! Every read is bounded: reply lines to [`crate::resp::MAX_LINE`], each read to the read
//! timeout (no byte for that long is [`Error::Timeout`]), the payload to what its header said.

use crate::rdb::RdbCheck;
use crate::resp::{self, BulkHeader, EofScanner, Fed, LineAssembler, Reply, Scanned};
use crate::tls::TlsClient;
use crate::{Error, Sink};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The buffer the connection is read through: the largest read handed on at once.
const READ_BUFFER: usize = 64 * 1024;

/// A redis-server to back up, and how to reach it.
#[derive(Clone)]
pub struct RedisSource {
    pub host: String,
    pub port: u16,
    /// `None`: the default user (or no login at all without a password).
    pub username: Option<String>,
    pub password: Option<String>,
    pub tls: Option<TlsClient>,
    /// How long any read (and the connection, and each command sent) may wait.
    pub read_timeout: Duration,
}

impl std::fmt::Debug for RedisSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSource")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "******"))
            .field("tls", &self.tls)
            .field("read_timeout", &self.read_timeout)
            .finish()
    }
}

impl RedisSource {
    /// A source on `host:port` without login or TLS, reads bounded to 60 s.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        RedisSource {
            host: host.into(),
            port,
            username: None,
            password: None,
            tls: None,
            read_timeout: Duration::from_secs(60),
        }
    }

    fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// What a finished transfer was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The RDB's bytes (the end mark of a diskless transfer not counted).
    pub size: u64,
    /// Lowercase hex SHA-256 of the RDB.
    pub sha256: String,
    /// The master's replication ID and offset the RDB is a snapshot of (`+FULLRESYNC`).
    pub replid: String,
    pub replication_offset: i64,
    /// The master sent a diskless transfer (`$EOF:<mark>`) rather than a file (`$<len>`).
    pub diskless: bool,
}

trait Connection: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Connection for T {}

/// Takes a full RDB of `source` and writes it to `sink` as it arrives; the sink sees every byte
/// of the RDB exactly once, and nothing else. On `Err` the sink may have seen part of it: the
/// caller discards it (the S3 upload is aborted).
pub async fn fetch_rdb<S: Sink>(source: &RedisSource, sink: &mut S) -> Result<Snapshot, Error> {
    let mut session = Session::connect(source).await?;
    session.handshake(source).await?;
    let (replid, replication_offset) = session.psync().await?;
    eprintln!(
        "redis-backup: full resync from {} (replid {replid}, offset {replication_offset})",
        source.addr()
    );
    let header = session.bulk_header().await?;
    let diskless = matches!(header, BulkHeader::EofMark(_));
    let check = session.payload(header, sink).await?;
    let (summary, verdict) = check.finish();
    verdict.map_err(Error::BadStream)?;
    Ok(Snapshot {
        size: summary.size,
        sha256: summary.sha256,
        replid,
        replication_offset,
        diskless,
    })
}

struct Session {
    io: BufReader<Box<dyn Connection>>,
    timeout: Duration,
}

impl Session {
    async fn connect(source: &RedisSource) -> Result<Self, Error> {
        let addr = source.addr();
        let unreachable = |source: std::io::Error| Error::RedisUnreachable {
            addr: addr.clone(),
            source,
        };
        let timed_out = |what: &str| {
            unreachable(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no {what} within {:?}", source.read_timeout),
            ))
        };
        let tcp = tokio::time::timeout(
            source.read_timeout,
            TcpStream::connect((source.host.as_str(), source.port)),
        )
        .await
        .map_err(|_| timed_out("connection"))?
        .map_err(unreachable)?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn Connection> = match &source.tls {
            None => Box::new(tcp),
            Some(tls) => {
                let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
                let stream = tokio::time::timeout(
                    source.read_timeout,
                    connector.connect(tls.name.clone(), tcp),
                )
                .await
                .map_err(|_| timed_out("TLS handshake"))?
                .map_err(|e| {
                    unreachable(std::io::Error::new(e.kind(), format!("TLS handshake: {e}")))
                })?;
                Box::new(stream)
            }
        };
        Ok(Session {
            io: BufReader::with_capacity(READ_BUFFER, io),
            timeout: source.read_timeout,
        })
    }

    async fn send(&mut self, args: &[&[u8]], step: &'static str) -> Result<(), Error> {
        let command = resp::command(args);
        let write = async {
            self.io.get_mut().write_all(&command).await?;
            self.io.get_mut().flush().await
        };
        tokio::time::timeout(self.timeout, write)
            .await
            .map_err(|_| Error::Timeout {
                during: format!("sending {step}"),
                after: self.timeout,
            })?
            .map_err(|e| Error::BadStream(format!("the connection broke sending {step}: {e}")))
    }

    /// The next bytes, at least one; `Err` at the end of the stream or after the timeout.
    async fn fill(&mut self, during: &str) -> Result<&[u8], Error> {
        let timeout = self.timeout;
        let data = tokio::time::timeout(timeout, self.io.fill_buf())
            .await
            .map_err(|_| Error::Timeout {
                during: during.to_owned(),
                after: timeout,
            })?
            .map_err(|e| Error::BadStream(format!("the connection broke while {during}: {e}")))?;
        if data.is_empty() {
            return Err(Error::BadStream(format!(
                "redis-server closed the connection while {during}"
            )));
        }
        Ok(data)
    }

    /// One reply line, the keepalives before it skipped, at most [`resp::MAX_LINE`] bytes.
    async fn line(&mut self, during: &str) -> Result<Vec<u8>, Error> {
        let mut lines = LineAssembler::new(resp::MAX_LINE);
        loop {
            let data = self.fill(during).await?;
            let (consumed, line) = match lines.feed(data) {
                Ok(Fed::More) => (data.len(), None),
                Ok(Fed::Line { line, consumed }) => (consumed, Some(line)),
                Err(resp::LineTooLong) => {
                    return Err(Error::BadStream(format!(
                        "redis-server sent a line longer than {} bytes while {during}",
                        resp::MAX_LINE
                    )));
                }
            };
            self.io.consume(consumed);
            if let Some(line) = line {
                return Ok(line);
            }
        }
    }

    async fn reply(&mut self, step: &'static str) -> Result<Reply, Error> {
        let line = self
            .line(&format!("waiting for the reply to {step}"))
            .await?;
        resp::parse_reply(&line).map_err(|e| Error::BadStream(format!("{step}: {e}")))
    }

    /// AUTH (with a password), `REPLCONF capa eof`, `REPLCONF rdb-only 1`.
    async fn handshake(&mut self, source: &RedisSource) -> Result<(), Error> {
        if let Some(password) = &source.password {
            match &source.username {
                Some(user) => {
                    self.send(&[b"AUTH", user.as_bytes(), password.as_bytes()], "AUTH")
                        .await?
                }
                None => self.send(&[b"AUTH", password.as_bytes()], "AUTH").await?,
            }
            if let Reply::Error(reply) = self.reply("AUTH").await? {
                return Err(Error::AuthFailed {
                    step: "AUTH",
                    reply,
                });
            }
        }
        const CAPA: &str = "REPLCONF capa eof";
        self.send(&[b"REPLCONF", b"capa", b"eof"], CAPA).await?;
        let reply = self.reply(CAPA).await?;
        refused(CAPA, reply)?;
        const RDB_ONLY: &str = "REPLCONF rdb-only 1";
        self.send(&[b"REPLCONF", b"rdb-only", b"1"], RDB_ONLY)
            .await?;
        let reply = self.reply(RDB_ONLY).await?;
        match reply.code() {
            // Before Redis 7.0: "Unrecognized REPLCONF option"; the command stream that may
            // follow the RDB is never read.
            "ERR" => {
                eprintln!(
                    "redis-backup: the server does not know rdb-only (before Redis 7): {reply:?}"
                )
            }
            _ => refused(RDB_ONLY, reply)?,
        }
        Ok(())
    }

    /// `PSYNC ? -1`: the replication ID and offset of the full resync.
    async fn psync(&mut self) -> Result<(String, i64), Error> {
        const PSYNC: &str = "PSYNC";
        self.send(&[b"PSYNC", b"?", b"-1"], PSYNC).await?;
        match self.reply(PSYNC).await? {
            Reply::Status(status) => {
                resp::parse_fullresync(&status).map_err(|e| Error::BadStream(format!("PSYNC: {e}")))
            }
            Reply::Error(text) => Err(refusal(PSYNC, text)),
        }
    }

    async fn bulk_header(&mut self) -> Result<BulkHeader, Error> {
        let line = self
            .line("waiting for the RDB (the server may be saving it)")
            .await?;
        if line.first() == Some(&b'-') {
            let reply = resp::parse_reply(&line).map_err(Error::BadStream)?;
            refused("PSYNC", reply)?;
        }
        resp::parse_bulk_header(&line).map_err(Error::BadStream)
    }

    /// Streams the payload into `sink` (and the check).
    async fn payload<S: Sink>(
        &mut self,
        header: BulkHeader,
        sink: &mut S,
    ) -> Result<RdbCheck, Error> {
        let mut check = RdbCheck::new();
        match header {
            BulkHeader::Length(len) => {
                let mut left = len;
                while left > 0 {
                    let during = format!("reading the RDB ({} of {len} bytes)", len - left);
                    let data = self.fill(&during).await?;
                    let take = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let data = &data[..take];
                    check.update(data);
                    check.magic_ok().map_err(Error::BadStream)?;
                    sink.write(data).await?;
                    self.io.consume(take);
                    left -= take as u64;
                }
            }
            BulkHeader::EofMark(mark) => {
                let mut scanner = EofScanner::new(mark);
                let mut out = Vec::with_capacity(READ_BUFFER + resp::EOF_MARK_LEN);
                loop {
                    let during =
                        format!("reading the RDB ({} bytes, no end mark yet)", check.size());
                    let data = self.fill(&during).await?;
                    let taken = data.len();
                    out.clear();
                    let scanned = scanner.feed(data, |bytes| out.extend_from_slice(bytes));
                    self.io.consume(taken);
                    check.update(&out);
                    check.magic_ok().map_err(Error::BadStream)?;
                    sink.write(&out).await?;
                    if let Scanned::End { trailing } = scanned {
                        if trailing > 0 {
                            eprintln!(
                                "redis-backup: {trailing} bytes after the RDB's end mark ignored"
                            );
                        }
                        break;
                    }
                }
            }
        }
        Ok(check)
    }
}

/// `Ok` for a status reply, else [`refusal`].
fn refused(step: &'static str, reply: Reply) -> Result<(), Error> {
    match reply {
        Reply::Status(_) => Ok(()),
        Reply::Error(text) => Err(refusal(step, text)),
    }
}

/// An error reply: a refused login (NOAUTH, WRONGPASS) or a refused step (anything else:
/// NOPERM, ERR, LOADING, ...).
fn refusal(step: &'static str, text: String) -> Error {
    let code = text.split(' ').next().unwrap_or("");
    if matches!(code, "NOAUTH" | "WRONGPASS") {
        Error::AuthFailed { step, reply: text }
    } else {
        Error::RedisRefused { step, reply: text }
    }
}
