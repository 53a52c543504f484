//! The one error type of the crate. Every error carries a stable reason word ([`Reason`], defined
//! in `api::backup_run` with the line's format, which the controller reads), the first word of
//! the line `redis-backup` writes to stderr and to its result file, so that the controller can
//! tell a refused password from an unreachable bucket without parsing prose.

use std::time::Duration;

pub use api::backup_run::Reason;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot connect to redis-server {addr}: {source}")]
    RedisUnreachable {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("redis-server refused {step}: {reply}")]
    RedisRefused { step: &'static str, reply: String },
    #[error("redis-server refused the login ({step}): {reply}")]
    AuthFailed { step: &'static str, reply: String },
    #[error("no progress with redis-server for {after:?} while {during}")]
    Timeout { during: String, after: Duration },
    #[error("{0}")]
    BadStream(String),
    #[error("S3 {op}: {source}")]
    S3 {
        reason: Reason,
        op: String,
        #[source]
        source: BoxError,
    },
    #[error(
        "the object's SHA-256 is {actual}, {expected} was recorded for it: it is not the backup \
         that was written"
    )]
    ChecksumMismatch { expected: String, actual: String },
    #[error("{0}")]
    NoChecksum(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    BadConfig(String),
    #[error("{0}")]
    Interrupted(String),
}

impl Error {
    pub fn reason(&self) -> Reason {
        match self {
            Error::RedisUnreachable { .. } => Reason::RedisUnreachable,
            Error::RedisRefused { .. } => Reason::RedisRefused,
            Error::AuthFailed { .. } => Reason::AuthFailed,
            Error::Timeout { .. } => Reason::Timeout,
            Error::BadStream(_) => Reason::BadStream,
            Error::S3 { reason, .. } => *reason,
            Error::ChecksumMismatch { .. } => Reason::ChecksumMismatch,
            Error::NoChecksum(_) => Reason::NoChecksum,
            Error::Io { .. } => Reason::Io,
            Error::BadConfig(_) => Reason::BadConfig,
            Error::Interrupted(_) => Reason::Interrupted,
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }

    /// An error of an object_store call, its reason read from the error: 401/403 are
    /// [`Reason::S3Denied`], a failed connection [`Reason::S3Unreachable`], a missing object
    /// [`Reason::S3NotFound`], anything else [`Reason::S3Error`].
    pub(crate) fn s3(op: impl Into<String>, source: object_store::Error) -> Self {
        let reason = s3_reason(&source);
        Error::S3 {
            reason,
            op: op.into(),
            source: Box::new(source),
        }
    }

    /// As [`Error::s3`], for a call where a missing object is not the caller's question (the
    /// bucket of a backup): reported as [`Reason::S3Error`].
    pub(crate) fn s3_no_not_found(op: impl Into<String>, source: object_store::Error) -> Self {
        match Error::s3(op, source) {
            Error::S3 {
                reason: Reason::S3NotFound,
                op,
                source,
            } => Error::S3 {
                reason: Reason::S3Error,
                op,
                source,
            },
            other => other,
        }
    }

    /// The line written to stderr and the result file: the reason word, then the error and its
    /// causes, on one line and at most [`MAX_LINE`] bytes (a termination message holds 4 KiB).
    pub fn line(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
        one_line(
            &api::backup_run::failure_line(self.reason(), &text),
            MAX_LINE,
        )
    }
}

/// An object_store error of a stream (the object being read).
impl From<object_store::Error> for Error {
    fn from(error: object_store::Error) -> Self {
        Error::s3("reading the object", error)
    }
}

/// The longest failure line written.
pub const MAX_LINE: usize = 2048;

/// `text` with every control character (newlines included) replaced by a space, cut to at most
/// `max` bytes on a character boundary.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() + c.len_utf8() > max {
            break;
        }
        out.push(c);
    }
    out
}

fn s3_reason(error: &object_store::Error) -> Reason {
    use object_store::Error as E;
    match error {
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => return Reason::S3Denied,
        E::NotFound { .. } => return Reason::S3NotFound,
        _ => {}
    }
    // A connection that failed (refused, no route, no DNS, timed out) is somewhere down the
    // chain of causes, as object_store's HttpError.
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(http) = e.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as K;
            if matches!(http.kind(), K::Connect | K::Timeout) {
                return Reason::S3Unreachable;
            }
        }
        cause = e.source();
    }
    Reason::S3Error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_starts_with_the_reason_and_holds_no_newline() {
        let error = Error::RedisRefused {
            step: "PSYNC",
            reply: "NOPERM this user has no\r\npermissions".to_owned(),
        };
        let line = error.line();
        assert!(line.starts_with("RedisRefused: redis-server refused PSYNC: NOPERM"));
        assert!(!line.contains('\n') && !line.contains('\r'), "{line}");
    }

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let text = "é".repeat(5000);
        let cut = one_line(&text, 101);
        assert_eq!(cut.len(), 100);
        assert!(cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn the_causes_are_on_the_line_once() {
        let error = Error::io(
            "writing /data/x",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left"),
        );
        assert_eq!(error.line(), "Io: writing /data/x: no space left");
    }

    #[test]
    fn object_store_errors_get_their_reasons() {
        let denied = object_store::Error::PermissionDenied {
            path: "k".into(),
            source: "403".into(),
        };
        assert_eq!(Error::s3("put", denied).reason(), Reason::S3Denied);
        let missing = || object_store::Error::NotFound {
            path: "k".into(),
            source: "404".into(),
        };
        assert_eq!(Error::s3("get", missing()).reason(), Reason::S3NotFound);
        assert_eq!(
            Error::s3_no_not_found("create", missing()).reason(),
            Reason::S3Error
        );
        let generic = object_store::Error::Generic {
            store: "S3",
            source: "500".into(),
        };
        assert_eq!(Error::s3("put", generic).reason(), Reason::S3Error);
    }
}
