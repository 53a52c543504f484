//! Leader election on a coordination.k8s.io Lease (kube-lease-manager): a replica reconciles
//! only while it holds the lease, and exits when it loses it so it can never write as a standby.
//! It also exits when its renewals stop succeeding, before the lease can run out (client-go's
//! renew deadline): kube-lease-manager only reports a loss once it sees another holder, and an
//! API server it cannot reach shows it none.

use crate::Error;
use crate::cli::Cli;
use futures::{StreamExt, future};
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;
use tokio::task::JoinHandle;

type RenewalTask = JoinHandle<Result<LeaseManager, kube_lease_manager::LeaseManagerError>>;

/// How long an awake lease manager may first take to lock a free lease before it is restarted.
const TAKE_FREE_LEASE_WITHIN: Duration = Duration::from_secs(1);
/// How long a clean shutdown waits for the lease to be given up.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// A held lease. Dropping it stops renewing (the lease then expires); `release` gives it up.
pub struct Leadership {
    state: Option<watch::Receiver<bool>>,
    task: Option<RenewalTask>,
    leases: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
    /// When this replica took the lease: the first renewal it can count on.
    acquired: SystemTime,
}

impl Leadership {
    /// Completes when the lease is no longer ours: another replica holds it, or this one's
    /// renewals have not succeeded for longer than [`renew_deadline`].
    pub async fn lost(&mut self) {
        let seen_other_holder = async {
            if let Some(state) = self.state.as_mut() {
                while *state.borrow_and_update() {
                    if state.changed().await.is_err() {
                        break;
                    }
                }
            }
        };
        let lapsed = renewals_lapsed(
            &self.leases,
            &self.name,
            &self.identity,
            self.duration,
            self.acquired,
        );
        tokio::select! {
            () = seen_other_holder => tracing::error!("leader lease lost"),
            () = lapsed => tracing::error!(
                renew_deadline = ?renew_deadline(self.duration),
                "the leader lease was not renewed in time; stepping down before it can expire"
            ),
        }
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
    // Renew halfway through the term: the renew deadline (3/4) then leaves room for retries.
    let renew_grace = duration / 2;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    tracing::info!(lease = %cli.lease_name, %namespace, %identity, "waiting for the leader lease");
    // Doubled after each restart, so a manager slowed by a slow API server still gets its turn.
    let mut grace = TAKE_FREE_LEASE_WITHIN;
    loop {
        let manager = LeaseManagerBuilder::new(client.clone(), &cli.lease_name)
            .with_namespace(&namespace)
            .with_identity(&identity)
            .with_duration(duration)
            .with_grace(renew_grace)
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
                    leases,
                    name: cli.lease_name.clone(),
                    identity,
                    duration: Duration::from_secs(duration),
                    acquired: SystemTime::now(),
                });
            }
            // kube-lease-manager's standby sleeps until the holder's term would end; a leader
            // that released the lease on shutdown would leave it idle that long. Start over
            // instead: a new manager takes a free lease at once. (Same identity, so a lock the
            // aborted task may have just taken is recognised as ours.)
            () = released(&leases, &cli.lease_name, grace) => {
                task.abort();
                grace = grace.saturating_mul(2).min(Duration::from_secs(duration));
                tracing::info!("the leader lease is free; trying for it again now");
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

/// Completes when the lease has been seen free and this replica's manager has not taken it
/// within a moment: the manager had gone to sleep for the holder's term and needs a restart.
async fn released(leases: &Api<Lease>, name: &str, grace: Duration) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(leases.clone(), config)
        .default_backoff()
        .applied_objects();
    futures::pin_mut!(events);
    while let Some(event) = events.next().await {
        match event {
            Ok(lease) if is_free(&lease) => {
                // A manager that is awake takes a free lease within a round trip, and then the
                // caller's `held` wins the race; only a sleeping one is left with a free lease.
                tokio::time::sleep(grace).await;
                return;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "watching the leader lease; retrying with backoff")
            }
        }
    }
    // The watch never ends on its own; if it did, the manager's own timing still applies.
    future::pending::<()>().await;
}

/// How long after its last successful renewal a leader keeps acting: 3/4 of the lease (client-go
/// uses 10 s of 15 s). The lease is renewed halfway through, so a renewal or two may fail first;
/// the last quarter keeps a stale leader's last writes clear of the next leader's first.
pub fn renew_deadline(lease_duration: Duration) -> Duration {
    lease_duration.saturating_mul(3) / 4
}

/// When `identity` last renewed `lease`, if it holds it.
fn renewed_by(lease: &Lease, identity: &str) -> Option<SystemTime> {
    let spec = lease.spec.as_ref()?;
    if spec.holder_identity.as_deref() != Some(identity) {
        return None;
    }
    let at = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?;
    Some(SystemTime::from(at.0))
}

/// Completes once `renew_deadline` has passed since the last renewal this replica has seen
/// succeed (the lease's renewTime, written with this machine's clock). Renewals are seen on a
/// watch of the Lease: if the API server cannot be reached, neither renewals nor events arrive,
/// and the deadline passes.
async fn renewals_lapsed(
    leases: &Api<Lease>,
    name: &str,
    identity: &str,
    lease_duration: Duration,
    acquired: SystemTime,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(leases.clone(), config)
        .default_backoff()
        .applied_objects();
    futures::pin_mut!(events);
    let mut last_renewal = acquired;
    loop {
        let stop_at = last_renewal + renew_deadline(lease_duration);
        let left = stop_at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        tokio::select! {
            () = tokio::time::sleep(left) => return,
            event = events.next() => match event {
                Some(Ok(lease)) => {
                    if let Some(at) = renewed_by(&lease, identity) {
                        last_renewal = last_renewal.max(at);
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "watching the leader lease; retrying with backoff")
                }
                // The watch never ends on its own; if it did, the deadline still applies.
                None => {
                    tokio::time::sleep(left).await;
                    return;
                }
            },
        }
    }
}

/// Released (no holder), as kube-lease-manager leaves a lease it gives up.
fn is_free(lease: &Lease) -> bool {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .is_none_or(str::is_empty)
}

/// Unique per process: the pod name in a cluster, plus the pid so two local runs differ.
fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "redis-controller".into());
    format!("{host}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed_at_second: i64) -> Lease {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "l"},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": 15,
                "renewTime": k8s_openapi::jiff::Timestamp::from_second(renewed_at_second)
                    .expect("time").to_string(),
            }
        }))
        .expect("lease")
    }

    #[test]
    fn the_renew_deadline_falls_between_the_renewal_and_the_expiry() {
        let duration = Duration::from_secs(15);
        let deadline = renew_deadline(duration);
        // Renewed halfway (grace = duration / 2), expires at the full duration.
        assert!(
            deadline > duration / 2 && deadline < duration,
            "{deadline:?}"
        );
        assert_eq!(
            renew_deadline(Duration::from_secs(4)),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn only_our_own_renewals_count() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(renewed_by(&lease("me-1", 1_700_000_000), "me-1"), Some(at));
        assert_eq!(renewed_by(&lease("other-2", 1_700_000_000), "me-1"), None);
        assert_eq!(renewed_by(&Lease::default(), "me-1"), None);
    }
}
