//! Leader election on a coordination.k8s.io Lease (kube-lease-manager): a replica reconciles
//! only while it holds the lease, and exits when it loses it so it can never write as a standby.

use crate::Error;
use crate::cli::Cli;
use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

type RenewalTask = JoinHandle<Result<LeaseManager, kube_lease_manager::LeaseManagerError>>;

/// How long a clean shutdown waits for the lease to be given up.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// A held lease. Dropping it stops renewing (the lease then expires); `release` gives it up.
pub struct Leadership {
    state: Option<watch::Receiver<bool>>,
    task: Option<RenewalTask>,
}

impl Leadership {
    /// Completes when the lease is no longer ours.
    pub async fn lost(&mut self) {
        if let Some(state) = self.state.as_mut() {
            while *state.borrow_and_update() {
                if state.changed().await.is_err() {
                    break;
                }
            }
        }
        tracing::error!("leader lease lost");
    }

    /// Gives the lease up on a clean shutdown, so a standby takes over at once instead of
    /// waiting for it to expire.
    pub async fn release(mut self) {
        // Closing the channel makes kube-lease-manager's task release the lease and return.
        self.state.take();
        let Some(task) = self.task.take() else { return };
        match tokio::time::timeout(RELEASE_TIMEOUT, task).await {
            Ok(Ok(Ok(_))) => tracing::info!("released the leader lease"),
            Ok(Ok(Err(e))) => {
                tracing::warn!(error = %e, "could not release the leader lease; it will expire")
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the lease task failed; the lease will expire")
            }
            Err(_) => tracing::warn!("releasing the leader lease timed out; it will expire"),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
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
    Ok(Leadership {
        state: Some(state),
        task: Some(task),
    })
}

/// Unique per process: the pod name in a cluster, plus the pid so two local runs differ.
fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "redis-controller".into());
    format!("{host}-{}", std::process::id())
}
