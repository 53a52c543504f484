use std::net::SocketAddr;

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

    #[error("{kind} {name}: {source}")]
    Child {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },

    #[error("the Redis has no {0} yet")]
    IncompleteObject(&'static str),

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

    #[error("the metrics server failed: {0}")]
    MetricsServer(#[source] std::io::Error),

    #[error("redis-server of pod {0}: {1}")]
    Redis(String, String),
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
            Error::PodNameConflict(_) => "pod_name_conflict",
            Error::IncompleteObject(_) => "incomplete_object",
            Error::Redis(..) => "redis",
            _ => "other",
        }
    }

    /// Waiting, not failing: retried soon and logged quietly.
    pub fn is_waiting(&self) -> bool {
        self.metric_label() == "pods_remaining"
    }

    /// A 409 from the API server: someone else wrote first; retry at once with fresh state.
    pub fn is_conflict(&self) -> bool {
        self.metric_label() == "conflict"
    }
}
