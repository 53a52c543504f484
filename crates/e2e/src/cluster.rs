use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::version::Info;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::Error;
use crate::namespace::{NamespaceOptions, TestNamespace};

/// How long connecting may take before the cluster counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The cluster under test: the local test bed (`<repo>/.cluster/kubeconfig`, started by
/// `make cluster-up`) unless `KUBECONFIG` is set, in which case that cluster.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    config: kube::Config,
    kubeconfig: PathBuf,
    local_bed: bool,
    version: Info,
}

impl Cluster {
    /// Connects and checks that the API server answers. An unreachable cluster is an
    /// error ([`Error::NoCluster`]) that tells to run `make cluster-up`: tests fail, never skip.
    pub async fn connect() -> Result<Self, Error> {
        let bed_kubeconfig = repo_root().join(".cluster").join("kubeconfig");
        let from_env = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty());
        let (kubeconfig, local_bed) = match &from_env {
            Some(paths) => {
                let first = std::env::split_paths(paths).next().unwrap_or_default();
                let local = same_file(&first, &bed_kubeconfig);
                (first, local)
            }
            None => (bed_kubeconfig, true),
        };
        let no_cluster = |reason: String| Error::NoCluster {
            kubeconfig: kubeconfig.clone(),
            reason,
        };

        let loaded = match &from_env {
            // KUBECONFIG may list several files; kube merges them as kubectl does.
            Some(_) => Kubeconfig::from_env()
                .map_err(|e| no_cluster(e.to_string()))?
                .ok_or_else(|| no_cluster("KUBECONFIG names no file".to_string()))?,
            None if !kubeconfig.exists() => {
                return Err(no_cluster("the file does not exist".to_string()));
            }
            None => Kubeconfig::read_from(&kubeconfig).map_err(|e| no_cluster(e.to_string()))?,
        };
        let config = kube::Config::from_custom_kubeconfig(loaded, &KubeConfigOptions::default())
            .await
            .map_err(|e| no_cluster(e.to_string()))?;
        let client = Client::try_from(config.clone()).map_err(|e| no_cluster(e.to_string()))?;
        let version = match tokio::time::timeout(CONNECT_TIMEOUT, client.apiserver_version()).await
        {
            Ok(Ok(version)) => version,
            Ok(Err(e)) => {
                return Err(no_cluster(format!(
                    "{} did not answer: {e}",
                    config.cluster_url
                )));
            }
            Err(_) => {
                return Err(no_cluster(format!(
                    "{} did not answer within {CONNECT_TIMEOUT:?}",
                    config.cluster_url
                )));
            }
        };
        Ok(Self {
            client,
            config,
            kubeconfig,
            local_bed,
            version,
        })
    }

    /// A client for this cluster (cheap to clone).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The client configuration, e.g. to build a client on another runtime.
    pub fn config(&self) -> &kube::Config {
        &self.config
    }

    /// The kubeconfig file in use.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// True when testing against this checkout's own test bed (`make cluster-up`), whose
    /// versions, nodes and audit log are known; false for a cluster from `KUBECONFIG`.
    pub fn is_local_bed(&self) -> bool {
        self.local_bed
    }

    /// What the API server reported at `/version` when connecting.
    pub fn server_version(&self) -> &Info {
        &self.version
    }

    /// A fresh namespace for one test, deleted when the returned guard drops (also when the
    /// test panics).
    pub async fn namespace(&self, prefix: &str) -> Result<TestNamespace, Error> {
        self.namespace_with(prefix, NamespaceOptions::default())
            .await
    }

    /// Like [`Cluster::namespace`], with labels (e.g. Pod Security levels).
    pub async fn namespace_with(
        &self,
        prefix: &str,
        options: NamespaceOptions,
    ) -> Result<TestNamespace, Error> {
        TestNamespace::create(self, prefix, options).await
    }
}

/// The repository this crate belongs to.
pub fn repo_root() -> PathBuf {
    // Cargo sets the variable when it runs a test or a bin; the compile-time value is only the
    // fallback, because a target dir shared between clones (CI's cache) can hand this crate to
    // a clone at another path without recompiling it.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let root = manifest_dir.join("..").join("..");
    root.canonicalize().unwrap_or(root)
}

/// The Kubernetes version the local test bed is built from: the `k8s.io/kubernetes`
/// requirement of `hack/cluster/kubernetes/go.mod`.
pub fn pinned_kubernetes_version() -> Result<String, Error> {
    let path = repo_root().join("hack/cluster/kubernetes/go.mod");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Manifest {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("require"), Some("k8s.io/kubernetes"), Some(v)) => Some(v.to_string()),
                (Some("k8s.io/kubernetes"), Some(v), _) if v.starts_with('v') => {
                    Some(v.to_string())
                }
                _ => None,
            }
        })
        .next()
        .ok_or_else(|| Error::Manifest {
            path,
            reason: "no k8s.io/kubernetes requirement".to_string(),
        })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
