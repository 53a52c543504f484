//! End-to-end test harness: a real API server, real controllers, real admission.
//!
//! Tests run against the local test bed of `hack/cluster` (`make cluster-up` writes
//! `<repo>/.cluster/kubeconfig`), or against the cluster of `KUBECONFIG` when it is set.
//! A test that cannot reach its cluster fails with a hint to run `make cluster-up`; it never
//! skips.
//!
//! ```no_run
//! # async fn f() -> Result<(), e2e::Error> {
//! let cluster = e2e::Cluster::connect().await?;
//! let ns = cluster.namespace("my-test").await?; // deleted when `ns` drops
//! # Ok(()) }
//! ```

pub mod bench;
pub mod cert_manager;
pub mod certs;
mod cluster;
pub mod conditions;
mod crd;
mod error;
pub mod flight;
pub mod history;
pub mod local_redis;
mod namespace;
pub mod node;
pub mod operator;
pub mod pods;
pub mod replicated;
pub mod s3;
pub mod secrets;
mod wait;
pub mod witness;

pub use cluster::{Cluster, pinned_kubernetes_version, repo_root};
pub use crd::{FIELD_MANAGER, install_crds, redis_crd, redis_resource};
pub use error::{Context, Error};
pub use namespace::{E2E_LABEL, KEEP_ENV, NamespaceOptions, TestNamespace};
pub use wait::{seen, wait_for, wait_not_ready_because};
