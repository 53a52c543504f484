//! `redis-controller`: reconciles `Redis` resources into pods (DESIGN §3).
//!
//! - [`auth`]: the password from the Secret, and its live rotation on the pods.
//! - [`cached`]: what the pod cache keeps of a pod (only what the controller reads).
//! - [`plan`]: desired replicas + spec hash + the real pods → creates and deletes (pure).
//! - [`pod`]: the pod for each ordinal and its spec hash (pure).
//! - [`children`]: the Services and the PodDisruptionBudget of a Redis (pure builders, and the
//!   shell that applies what differs from the watch cache).
//! - [`status`]: the status the pods amount to (pure).
//! - [`terminating`]: namespaces being deleted, learnt from the API server's refusals.
//! - [`watched`]: Redis objects watched untyped and decoded one by one, so one bad object does
//!   not stop the others.
//! - [`reconcile`]: the async shell: finalizer, pod steps, Events, status writes, requeue policy.
//! - [`run`]: caches, the kube-runtime Controller, leader election ([`leader`]), the operations port.

pub mod auth;
pub mod cached;
pub mod children;
pub mod cli;
mod error;
#[cfg(test)]
mod fixtures;
pub mod leader;
pub mod metrics;
pub mod plan;
pub mod pod;
pub mod reconcile;
pub mod replication;
pub mod run;
pub mod status;
pub mod storage;
pub mod terminating;
pub mod watched;

pub use error::{Error, RetryClass, backoff};
