//! What `redis-backup` (the `backup` crate) takes and says, as the controller runs it (DESIGN
//! §3o): its subcommands, the flags and environment variables the controller's Jobs and restore
//! step give it, the JSON line it writes on success and the `<Reason>: <what happened>` line it
//! writes on failure (both on its output and in its termination message). Both sides use these
//! definitions, so the compiler checks that they agree; the tests below pin the bytes.

use serde::{Deserialize, Serialize};

/// The subcommands.
pub mod subcommand {
    /// A full RDB of one redis-server, streamed into an object (a Job).
    pub const BACKUP: &str = "backup";
    /// One object into a data directory that holds no dataset yet (an init container).
    pub const RESTORE: &str = "restore";
    /// A backup's object and its checksum deleted (a Job).
    pub const DELETE: &str = "delete";
}

/// The long flags the controller passes, without their `--` (as clap's `long` takes them); [`arg`]
/// gives the argument.
pub mod flag {
    /// `backup`: the redis-server to read (a name or an IP).
    pub const HOST: &str = "host";
    /// `backup`: its port.
    pub const PORT: &str = "port";
    /// `backup`: CA certificates (PEM) of the redis-server's certificate; turns TLS on.
    pub const TLS_CA_FILE: &str = "tls-ca-file";
    /// `backup`: the client certificate (PEM) shown to the redis-server.
    pub const TLS_CERT_FILE: &str = "tls-cert-file";
    /// `backup`: the key (PEM) of [`TLS_CERT_FILE`].
    pub const TLS_KEY_FILE: &str = "tls-key-file";
    /// `backup`: the name the redis-server's certificate must carry.
    pub const TLS_SERVER_NAME: &str = "tls-server-name";
    /// `restore`: redis-server's `dir`.
    pub const DATA_DIR: &str = "data-dir";
    /// `restore`: the SHA-256 (hex) the object must have.
    pub const EXPECTED_SHA256: &str = "expected-sha256";
    /// `restore`: place the RDB as the base of Redis 7's multi-part AOF.
    pub const APPEND_ONLY: &str = "append-only";
    /// `restore`: redis-server's `appendfilename`.
    pub const APPENDFILENAME: &str = "appendfilename";
    /// `restore`: redis-server's `appenddirname`.
    pub const APPENDDIRNAME: &str = "appenddirname";
}

/// `--<flag>`, the argument of a [`flag`].
pub fn arg(flag: &str) -> String {
    format!("--{flag}")
}

/// The environment variables the controller sets: the object store's settings and the login.
/// Secrets come from the environment only (the kubelet reads them from Secrets), never from
/// flags, so they never show in a command line. The credentials are
/// [`crate::backup::ACCESS_KEY_ID_KEY`] and [`crate::backup::SECRET_ACCESS_KEY_KEY`].
pub mod env {
    /// The S3 endpoint (AWS's for the region when unset).
    pub const S3_ENDPOINT: &str = "S3_ENDPOINT";
    /// The region the requests are signed for.
    pub const S3_REGION: &str = "S3_REGION";
    /// The bucket.
    pub const S3_BUCKET: &str = "S3_BUCKET";
    /// The object's key.
    pub const S3_KEY: &str = "S3_KEY";
    /// Path-style addressing (`true` or `false`).
    pub const S3_FORCE_PATH_STYLE: &str = "S3_FORCE_PATH_STYLE";
    /// `backup`: the redis-server user to log in as.
    pub const REDIS_USERNAME: &str = "REDIS_USERNAME";
    /// `backup`: its password.
    pub const REDIS_PASSWORD: &str = "REDIS_PASSWORD";
}

/// What `redis-backup backup` reports on success: one JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupResult {
    /// `s3://<bucket>/<key>`.
    pub location: String,
    pub size: u64,
    /// Lower-case hex.
    pub sha256: String,
    /// The source's replication offset at the snapshot. Always written; read as absent when a
    /// result lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_offset: Option<i64>,
    /// The source's replication id at the snapshot.
    #[serde(default)]
    pub replid: String,
}

/// What `redis-backup restore` reports on success: one JSON line, `{"restored":true,"size":..,
/// "sha256":..}` or `{"restored":false,"reason":"DataPresent"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreResult {
    pub restored: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Why nothing was restored ([`DATA_PRESENT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// [`RestoreResult::reason`] when the data directory held a dataset already: nothing was read
/// or written.
pub const DATA_PRESENT: &str = "DataPresent";

impl RestoreResult {
    /// `size` bytes whose SHA-256 is `sha256` were restored.
    pub fn restored(size: u64, sha256: String) -> Self {
        RestoreResult {
            restored: true,
            size: Some(size),
            sha256: Some(sha256),
            reason: None,
        }
    }

    /// The data directory held a dataset already.
    pub fn data_present() -> Self {
        RestoreResult {
            restored: false,
            size: None,
            sha256: None,
            reason: Some(DATA_PRESENT.to_owned()),
        }
    }
}

/// What `redis-backup delete` reports on success: one JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteResult {
    /// The location deleted, `s3://<bucket>/<key>`.
    pub deleted: String,
}

/// The stable first word of a failure line, `<Reason>: <what happened>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No TCP connection (or TLS handshake) to the redis-server.
    RedisUnreachable,
    /// The redis-server answered a step with an error (`-ERR`, `-NOPERM`, `-LOADING`, ...).
    RedisRefused,
    /// The redis-server refused the login (`-WRONGPASS`, `-NOAUTH`, ...).
    AuthFailed,
    /// S3 refused the credentials or the action (HTTP 401/403).
    S3Denied,
    /// No connection to S3.
    S3Unreachable,
    /// Any other S3 failure.
    S3Error,
    /// The object to restore does not exist (restore only).
    S3NotFound,
    /// What the redis-server (or the object) sent is not a well-formed RDB transfer.
    BadStream,
    /// The redis-server sent nothing for longer than the read timeout.
    Timeout,
    /// The object's bytes do not have the SHA-256 recorded for it (restore only).
    ChecksumMismatch,
    /// No (usable) SHA-256 is recorded for the object (restore only).
    NoChecksum,
    /// A local file operation failed.
    Io,
    /// A flag or a file it names cannot be used (a CA file that is not PEM, a part size out of
    /// bounds, an object key S3 cannot take).
    BadConfig,
    /// SIGTERM or SIGINT stopped the backup (the Job was deleted or ran out of time); the upload
    /// was aborted.
    Interrupted,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 14] = [
        Reason::RedisUnreachable,
        Reason::RedisRefused,
        Reason::AuthFailed,
        Reason::S3Denied,
        Reason::S3Unreachable,
        Reason::S3Error,
        Reason::S3NotFound,
        Reason::BadStream,
        Reason::Timeout,
        Reason::ChecksumMismatch,
        Reason::NoChecksum,
        Reason::Io,
        Reason::BadConfig,
        Reason::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::RedisUnreachable => "RedisUnreachable",
            Reason::RedisRefused => "RedisRefused",
            Reason::AuthFailed => "AuthFailed",
            Reason::S3Denied => "S3Denied",
            Reason::S3Unreachable => "S3Unreachable",
            Reason::S3Error => "S3Error",
            Reason::S3NotFound => "S3NotFound",
            Reason::BadStream => "BadStream",
            Reason::Timeout => "Timeout",
            Reason::ChecksumMismatch => "ChecksumMismatch",
            Reason::NoChecksum => "NoChecksum",
            Reason::Io => "Io",
            Reason::BadConfig => "BadConfig",
            Reason::Interrupted => "Interrupted",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The failure line of `reason` (before `redis-backup` bounds it to one line of limited length).
pub fn failure_line(reason: Reason, text: &str) -> String {
    format!("{reason}: {text}")
}

/// The most of a reason word a reader takes from a failure line.
pub const MAX_REASON_CHARS: usize = 40;

/// A failure line's reason word and the rest (trimmed), when the line starts with one: a word of
/// ASCII letters and digits, upper case first, at most [`MAX_REASON_CHARS`], then `:`. A reader
/// takes any such word, so that a reason added later reads as itself.
pub fn split_failure(line: &str) -> Option<(&str, &str)> {
    let (word, rest) = line.split_once(':')?;
    let is_reason = !word.is_empty()
        && word.len() <= MAX_REASON_CHARS
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && word.starts_with(|c: char| c.is_ascii_uppercase());
    is_reason.then(|| (word, rest.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backup_result_is_one_camel_case_line_and_reads_back() {
        let result = BackupResult {
            location: "s3://b/k.rdb".to_owned(),
            size: 42,
            sha256: "ab".repeat(32),
            replication_offset: Some(7),
            replid: "x".to_owned(),
        };
        let line = serde_json::to_string(&result).expect("json");
        assert_eq!(
            line,
            format!(
                "{{\"location\":\"s3://b/k.rdb\",\"size\":42,\"sha256\":\"{}\",\
                 \"replicationOffset\":7,\"replid\":\"x\"}}",
                "ab".repeat(32)
            )
        );
        assert_eq!(
            serde_json::from_str::<BackupResult>(&line).ok(),
            Some(result)
        );
        // A result without the offset or the replid still reads.
        let short: BackupResult =
            serde_json::from_str("{\"location\":\"l\",\"size\":1,\"sha256\":\"s\"}")
                .expect("reads");
        assert_eq!(
            (short.replication_offset, short.replid.as_str()),
            (None, "")
        );
    }

    #[test]
    fn the_restore_and_delete_results_keep_their_fields() {
        let restored = RestoreResult::restored(9, "ff".to_owned());
        let line = serde_json::to_string(&restored).expect("json");
        assert_eq!(line, "{\"restored\":true,\"size\":9,\"sha256\":\"ff\"}");
        assert_eq!(
            serde_json::from_str::<RestoreResult>(&line).ok(),
            Some(restored)
        );
        let present = RestoreResult::data_present();
        let line = serde_json::to_string(&present).expect("json");
        assert_eq!(line, "{\"restored\":false,\"reason\":\"DataPresent\"}");
        assert_eq!(
            serde_json::from_str::<RestoreResult>(&line).ok(),
            Some(present)
        );
        let deleted = DeleteResult {
            deleted: "s3://b/k".to_owned(),
        };
        let line = serde_json::to_string(&deleted).expect("json");
        assert_eq!(line, "{\"deleted\":\"s3://b/k\"}");
        assert_eq!(
            serde_json::from_str::<DeleteResult>(&line).ok(),
            Some(deleted)
        );
    }

    #[test]
    fn every_reason_reads_back_from_its_failure_line() {
        for reason in Reason::ALL {
            let line = failure_line(reason, " the bucket said no ");
            assert_eq!(
                split_failure(&line),
                Some((reason.as_str(), "the bucket said no"))
            );
        }
        assert_eq!(failure_line(Reason::S3Denied, "x"), "S3Denied: x");
        for not_a_reason in ["panic at the disco: x", "lower: x", "no colon", ": x"] {
            assert_eq!(split_failure(not_a_reason), None, "{not_a_reason}");
        }
        let long = format!("{}: x", "A".repeat(MAX_REASON_CHARS + 1));
        assert_eq!(split_failure(&long), None);
    }

    #[test]
    fn flags_are_long_arguments() {
        assert_eq!(arg(flag::EXPECTED_SHA256), "--expected-sha256");
        assert_eq!(arg(flag::HOST), "--host");
    }
}
