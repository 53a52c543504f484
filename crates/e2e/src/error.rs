use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Why an e2e step failed. Tests return `Result<(), Error>`; the test runner prints the
/// failure with `Debug`, which here is the readable message plus its source chain.
#[derive(thiserror::Error)]
pub enum Error {
    /// The cluster cannot be reached: e2e tests fail (never skip) with a hint to start one.
    #[error(
        "cannot reach the Kubernetes cluster of {kubeconfig} ({reason}).\n\
         Start the local test bed with `make cluster-up` (or run `make e2e`, which starts it), \
         or point KUBECONFIG at a cluster you want to test against."
    )]
    NoCluster { kubeconfig: PathBuf, reason: String },

    /// An API call failed; `context` says what the test was doing.
    #[error("{context}")]
    Kube {
        context: String,
        #[source]
        source: kube::Error,
    },

    /// A [`wait_for`](crate::wait_for) condition did not hold in time.
    #[error("timed out after {after:?} waiting for {what}; last seen: {last_seen}")]
    Timeout {
        what: String,
        after: Duration,
        last_seen: String,
    },

    /// A process the test runs (webhook, controller, kubectl) could not be used.
    #[error("{what}: {reason}")]
    Process { what: String, reason: String },

    /// A manifest from the repository could not be read or parsed.
    #[error("cannot use manifest {path}: {reason}")]
    Manifest { path: PathBuf, reason: String },
}

impl Error {
    /// A [`Error::Process`]: `what` was being done, `reason` is why it failed.
    pub fn process(what: impl Into<String>, reason: impl ToString) -> Self {
        Error::Process {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")?;
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            write!(f, "\n  caused by: {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

/// Adds what the test was doing to a failed API call.
pub trait Context<T> {
    fn context(self, context: impl Into<String>) -> Result<T, Error>;
}

impl<T> Context<T> for Result<T, kube::Error> {
    fn context(self, context: impl Into<String>) -> Result<T, Error> {
        self.map_err(|source| Error::Kube {
            context: context.into(),
            source,
        })
    }
}

/// Inside a [`wait_for`](crate::wait_for) check an error is an observation, retried like any
/// other "not yet": its message and causes.
impl From<Error> for String {
    fn from(error: Error) -> Self {
        format!("{error:?}")
    }
}
