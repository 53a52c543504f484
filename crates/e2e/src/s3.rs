//! The test bed's S3-compatible object store (versitygw, started by `hack/cluster/up.sh` on the
//! host address `10.88.0.1`, which the real nodes' pods reach too): where it is and the bed's one
//! identity, read from `<repo>/.cluster/s3/env`, which up.sh writes once the server answers and
//! the bucket `backups` exists. A missing or incomplete file is an error, never a skip.
//!
//! ```no_run
//! # fn f() -> Result<(), e2e::Error> {
//! let s3 = e2e::s3::S3Bed::from_bed()?;
//! assert_eq!(s3.bucket, "backups");
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::{Error, repo_root};

/// The bed's S3 endpoint, region, credentials (full rights) and the pre-created bucket.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Bed {
    /// `http://10.88.0.1:<port>`: path-style addressing, plain HTTP.
    pub endpoint: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// A bucket that exists when the bed is up (`backups`).
    pub bucket: String,
}

impl S3Bed {
    /// Reads the local bed's `<repo>/.cluster/s3/env`.
    pub fn from_bed() -> Result<S3Bed, Error> {
        S3Bed::from_file(&env_file())
    }

    /// Reads an env file in the format `up.sh` writes (`KEY=value` lines).
    pub fn from_file(path: &Path) -> Result<S3Bed, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::process(
                format!("reading the test bed's S3 settings {}", path.display()),
                format!(
                    "{e}; hack/cluster/up.sh (make cluster-up) writes it when it starts the \
                     bed's S3 server (versitygw): start the bed, or restart it if it predates \
                     the S3 server"
                ),
            )
        })?;
        S3Bed::parse(&text).map_err(|reason| {
            Error::process(
                format!("reading the test bed's S3 settings {}", path.display()),
                reason,
            )
        })
    }

    fn parse(text: &str) -> Result<S3Bed, String> {
        let mut vars: HashMap<&str, &str> = HashMap::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| format!("line {} is not KEY=value: {line:?}", number + 1))?;
            vars.insert(key.trim(), value.trim());
        }
        let get = |key: &str| -> Result<String, String> {
            match vars.get(key) {
                Some(value) if !value.is_empty() => Ok((*value).to_string()),
                _ => Err(format!("{key} is missing or empty")),
            }
        };
        Ok(S3Bed {
            endpoint: get("S3_ENDPOINT")?,
            region: get("S3_REGION")?,
            access_key_id: get("S3_ACCESS_KEY_ID")?,
            secret_access_key: get("S3_SECRET_ACCESS_KEY")?,
            bucket: get("S3_BUCKET")?,
        })
    }
}

/// `<repo>/.cluster/s3/env`.
pub fn env_file() -> PathBuf {
    repo_root().join(".cluster").join("s3").join("env")
}

/// Never prints the secret.
impl fmt::Debug for S3Bed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Bed")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field("bucket", &self.bucket)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = "S3_ENDPOINT=http://10.88.0.1:7070\nS3_REGION=us-east-1\n\
        S3_ACCESS_KEY_ID=AKID\nS3_SECRET_ACCESS_KEY=s3cr3t-value\nS3_BUCKET=backups\n";

    #[test]
    fn parses_what_up_sh_writes() {
        let s3 = S3Bed::parse(ENV).expect("a complete file");
        assert_eq!(s3.endpoint, "http://10.88.0.1:7070");
        assert_eq!(s3.region, "us-east-1");
        assert_eq!(s3.access_key_id, "AKID");
        assert_eq!(s3.secret_access_key, "s3cr3t-value");
        assert_eq!(s3.bucket, "backups");
        assert!(!format!("{s3:?}").contains("s3cr3t-value"));
    }

    #[test]
    fn a_missing_key_is_an_error() {
        let text = ENV.replace("S3_BUCKET=backups\n", "");
        assert_eq!(
            S3Bed::parse(&text).expect_err("no bucket"),
            "S3_BUCKET is missing or empty"
        );
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let err = S3Bed::from_file(Path::new("/nonexistent/s3/env")).expect_err("no file");
        assert!(format!("{err}").contains("make cluster-up"), "{err}");
    }
}
