//! Leader election on a coordination.k8s.io Lease (kube-lease-manager): a replica reconciles
//! only while it holds the lease, and exits when it loses it so it can never write as a standby.

use crate::Error;
use crate::cli::Cli;
use futures::{StreamExt, future};
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
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
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    tracing::info!(lease = %cli.lease_name, %namespace, %identity, "waiting for the leader lease");
    loop {
        let manager = LeaseManagerBuilder::new(client.clone(), &cli.lease_name)
            .with_namespace(&namespace)
            .with_identity(&identity)
            .with_duration(duration)
            .with_grace((duration / 3).max(1))
            .build()
            .await
            .map_err(Error::Lease)?;
        let (mut state, task) = manager.watch().await;
        tokio::select! {
            biased;
            held = held(&mut state) => {
                held?;
                tracing::info!(%identity, "acquired the leader lease");
                return Ok(Leadership {
                    state: Some(state),
                    task: Some(task),
                });
            }
            // kube-lease-manager's standby sleeps until the holder's term would end; a leader
            // that released the lease on shutdown would leave it idle that long. Start over
            // instead: a new manager takes a free lease at once. (Same identity, so a lock the
            // aborted task may have just taken is recognised as ours.)
            () = released(&leases, &cli.lease_name, &identity) => {
                task.abort();
                tracing::info!("the leader lease was released; taking it");
            }
        }
    }
}

/// Completes once the lease is ours.
async fn held(state: &mut watch::Receiver<bool>) -> Result<(), Error> {
    while !*state.borrow_and_update() {
        if state.changed().await.is_err() {
            return Err(Error::LeadershipLost);
        }
    }
    Ok(())
}

/// Completes when the lease, after being seen held by another replica, is seen with no holder.
/// A lease that is free from the start is the manager's to take; this does not interfere.
async fn released(leases: &Api<Lease>, name: &str, identity: &str) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(leases.clone(), config)
        .default_backoff()
        .applied_objects();
    futures::pin_mut!(events);
    let mut held_by_another = false;
    while let Some(event) = events.next().await {
        let lease = match event {
            Ok(lease) => lease,
            Err(e) => {
                tracing::debug!(error = %e, "watching the leader lease; retrying with backoff");
                continue;
            }
        };
        match lease
            .spec
            .and_then(|s| s.holder_identity)
            .filter(|h| !h.is_empty())
        {
            Some(holder) => held_by_another = holder != identity,
            None if held_by_another => return,
            None => {}
        }
    }
    // The watch never ends on its own; if it did, the manager's own timing still applies.
    future::pending::<()>().await;
}

/// Unique per process: the pod name in a cluster, plus the pid so two local runs differ.
fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "redis-controller".into());
    format!("{host}-{}", std::process::id())
}
