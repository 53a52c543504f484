use std::net::SocketAddr;
use std::time::Duration;

/// The one error type of the controller crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API error: {0}")]
    Kube(#[source] kube::Error),

    // Boxed: the finalizer error wraps this type.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),

    #[error("waiting for {0} pod(s) to be gone before releasing the Redis")]
    PodsRemaining(usize),

    #[error("pod {0} exists and is not controlled by this Redis; delete or rename it")]
    PodNameConflict(String),

    /// A Service or PodDisruptionBudget the Redis needs has a name another object holds.
    #[error("{kind} {name} exists and is not controlled by this Redis; delete or rename it")]
    NameConflict { kind: String, name: String },

    #[error("{kind} {name}: {source}")]
    Child {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },

    #[error("the Redis has no {0} yet")]
    IncompleteObject(&'static str),

    /// A watch ended before it had listed its objects once, so no plan could see them.
    #[error("the {what} watch stopped before its cache was filled: {source}")]
    CacheNotSynced {
        what: &'static str,
        #[source]
        source: kube::runtime::reflector::store::WriterDropped,
    },

    /// A patch the controller builds could not be encoded (a bug, not an input).
    #[error("could not encode a patch: {0}")]
    EncodePatch(#[source] serde_json::Error),

    #[error(
        "the Redis CRD (redis.myapp.tangx.in/v1) is not installed in this cluster ({0}); \
         install it with `kubectl apply -f deploy/crd.yaml` (or the Helm chart)"
    )]
    CrdMissing(#[source] kube::Error),

    #[error("could not load a kubeconfig or in-cluster configuration: {0}")]
    Config(#[source] kube::Error),

    #[error("leader election: {0}")]
    Lease(#[source] kube_lease_manager::LeaseManagerError),

    #[error("lost the leader lease; exiting so that another replica takes over")]
    LeadershipLost,

    #[error("could not listen on {0}: {1}")]
    Bind(SocketAddr, #[source] std::io::Error),

    /// A call to a pod's redis-server failed: no answer in time, a refusal, or an error reply.
    #[error("redis-server of pod {pod}: {source}")]
    Redis {
        pod: String,
        #[source]
        source: redis::RedisError,
    },

    /// A pod's redis-server answered, but not as the step needed (or the pod has no IP yet).
    #[error("redis-server of pod {pod}: {reason}")]
    RedisState { pod: String, reason: String },

    /// A backup's step awaits a Job (the delete of its object).
    #[error("backup: waiting for {0}")]
    BackupPending(String),

    /// The ACL step could not build what it keeps (no randomness for a password, say).
    #[error("ACL users: {0}")]
    Acl(String),
}

impl Error {
    /// A low-cardinality label for the failure metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(kube::Error::Api(status)) if status.code == 409 => "conflict",
            Error::Kube(_) => "api",
            Error::Finalizer(inner) => match inner.as_ref() {
                kube::runtime::finalizer::Error::ApplyFailed(e)
                | kube::runtime::finalizer::Error::CleanupFailed(e) => e.metric_label(),
                _ => "finalizer",
            },
            Error::Child {
                source: kube::Error::Api(status),
                ..
            } if status.code == 409 => "conflict",
            Error::Child { .. } => "child",
            Error::PodsRemaining(_) => "pods_remaining",
            Error::BackupPending(_) => "backup_pending",
            Error::PodNameConflict(_) => "pod_name_conflict",
            Error::NameConflict { .. } => "name_conflict",
            Error::IncompleteObject(_) => "incomplete_object",
            Error::Redis { .. } | Error::RedisState { .. } => "redis",
            _ => "other",
        }
    }

    /// How a reconcile that failed with this error is retried.
    pub fn retry_class(&self) -> RetryClass {
        match self {
            Error::PodsRemaining(_) | Error::BackupPending(_) => RetryClass::Waiting,
            // A redis-server loading its dataset (after a full sync, or from disk) refuses
            // REPLICAOF and CONFIG until it is done, which takes minutes for a large one. That
            // is waiting, not failing: backing off would stretch each pass's wait towards five
            // minutes, and a failover due meanwhile would wait that long too.
            Error::Redis { source, .. }
                if source.kind()
                    == redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading) =>
            {
                RetryClass::Waiting
            }
            Error::Kube(kube::Error::Api(status))
            | Error::Child {
                source: kube::Error::Api(status),
                ..
            } => match status.code {
                409 => RetryClass::Conflict,
                403 => RetryClass::Forbidden,
                _ => RetryClass::Transient,
            },
            Error::Finalizer(inner) => match inner.as_ref() {
                kube::runtime::finalizer::Error::ApplyFailed(e)
                | kube::runtime::finalizer::Error::CleanupFailed(e) => e.retry_class(),
                _ => RetryClass::Transient,
            },
            _ => RetryClass::Transient,
        }
    }
}

/// How a failed reconcile is retried, from what went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryClass {
    /// Pods still going away: waiting, not failing; looked at again soon and logged quietly.
    Waiting,
    /// 409 from the API server: someone else wrote first; retry at once with fresh state.
    Conflict,
    /// 403 from the API server (RBAC, a quota, an admission webhook): it lasts until someone
    /// changes something, so it backs off as [`RetryClass::Transient`] does.
    Forbidden,
    /// Anything else (the API server or a redis-server not answering, a pod name held by another
    /// owner): back off exponentially, per Redis.
    Transient,
}

/// The first backoff delay; it doubles with each consecutive failure.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// The longest backoff: a Redis that keeps failing is still looked at every five minutes.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The delay before retry number `attempt` (1 after the first failure): 0.5 s doubled `attempt`
/// times, at most [`MAX_BACKOFF`].
pub fn backoff(attempt: u32) -> Duration {
    // The exponent is capped so the shift cannot overflow; 2^10 x 0.5 s is past the cap anyway.
    BACKOFF_BASE
        .saturating_mul(1 << attempt.min(10))
        .min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("refused", "Test")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn backoff_doubles_from_half_a_second_up_to_five_minutes() {
        assert_eq!(backoff(0), Duration::from_millis(500));
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(9), Duration::from_secs(256));
        assert_eq!(backoff(10), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
        assert!((0..40).all(|n| backoff(n) <= backoff(n + 1)));
    }

    #[test]
    fn a_redis_server_loading_its_dataset_is_waited_for_not_backed_off_from() {
        let reply = |text: &[u8]| match redis::parse_redis_value(text) {
            Ok(redis::Value::ServerError(e)) => redis::RedisError::from(e),
            other => panic!("not an error reply: {other:?}"),
        };
        let redis = |source| Error::Redis {
            pod: "r-1".into(),
            source,
        };
        let loading = redis(reply(
            b"-LOADING Redis is loading the dataset in memory\r\n",
        ));
        assert_eq!(loading.retry_class(), RetryClass::Waiting);
        // Through the finalizer helper, as the reconciler sees it.
        let wrapped = Error::Finalizer(Box::new(kube::runtime::finalizer::Error::ApplyFailed(
            loading,
        )));
        assert_eq!(wrapped.retry_class(), RetryClass::Waiting);
        // Any other refusal still backs off.
        let other = redis(reply(b"-ERR unknown command\r\n"));
        assert_eq!(other.retry_class(), RetryClass::Transient);
    }

    #[test]
    fn the_retry_class_comes_from_the_error() {
        assert_eq!(Error::PodsRemaining(2).retry_class(), RetryClass::Waiting);
        assert_eq!(
            Error::Kube(api_error(409)).retry_class(),
            RetryClass::Conflict
        );
        assert_eq!(
            Error::Kube(api_error(403)).retry_class(),
            RetryClass::Forbidden
        );
        assert_eq!(
            Error::Kube(api_error(500)).retry_class(),
            RetryClass::Transient
        );
        let child = |code| Error::Child {
            kind: "Service".into(),
            name: "r".into(),
            source: api_error(code),
        };
        assert_eq!(child(409).retry_class(), RetryClass::Conflict);
        assert_eq!(child(403).retry_class(), RetryClass::Forbidden);
        assert_eq!(
            Error::PodNameConflict("r-0".into()).retry_class(),
            RetryClass::Transient
        );
        let in_finalizer =
            |e| Error::Finalizer(Box::new(kube::runtime::finalizer::Error::ApplyFailed(e)));
        assert_eq!(
            in_finalizer(Error::Kube(api_error(409))).retry_class(),
            RetryClass::Conflict
        );
        assert_eq!(
            in_finalizer(Error::PodsRemaining(1)).retry_class(),
            RetryClass::Waiting
        );
    }

    #[test]
    fn metric_labels_stay_low_cardinality() {
        assert_eq!(Error::Kube(api_error(409)).metric_label(), "conflict");
        assert_eq!(Error::Kube(api_error(403)).metric_label(), "api");
        assert_eq!(Error::PodsRemaining(3).metric_label(), "pods_remaining");
    }
}
