//! Leader election on a coordination.k8s.io Lease (kube-lease-manager): a replica reconciles
//! only while it holds the lease, and exits when it loses it so it can never write as a standby.

use crate::Error;
use crate::cli::Cli;
use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A held lease. Dropping it ends the renewal task.
pub struct Leadership {
    state: watch::Receiver<bool>,
    task: JoinHandle<Result<LeaseManager, kube_lease_manager::LeaseManagerError>>,
}

impl Leadership {
    /// Completes when the lease is no longer ours.
    pub async fn lost(&mut self) {
        while *self.state.borrow_and_update() {
            if self.state.changed().await.is_err() {
                break;
            }
        }
        tracing::error!("leader lease lost");
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits until this replica holds the lease.
pub async fn acquire(client: &Client, cli: &Cli) -> Result<Leadership, Error> {
    let namespace = cli.lease_namespace(std::env::var("POD_NAMESPACE").ok());
    let identity = identity();
    let duration = cli.lease_duration.max(2);
    let manager = LeaseManagerBuilder::new(client.clone(), &cli.lease_name)
        .with_namespace(&namespace)
        .with_identity(&identity)
        .with_duration(duration)
        .with_grace((duration / 3).max(1))
        .build()
        .await
        .map_err(Error::Lease)?;
    let (mut state, task) = manager.watch().await;
    tracing::info!(lease = %cli.lease_name, %namespace, %identity, "waiting for the leader lease");
    while !*state.borrow_and_update() {
        if state.changed().await.is_err() {
            return Err(Error::LeadershipLost);
        }
    }
    tracing::info!(%identity, "acquired the leader lease");
    Ok(Leadership { state, task })
}

/// Unique per process: the pod name in a cluster, plus the pid so two local runs differ.
fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "redis-controller".into());
    format!("{host}-{}", std::process::id())
}
