//! `redis-controller`: reconciles `Redis` resources into pods (DESIGN §3). One folder per
//! feature, each with its pure rules beside the async step that applies them:
//!
//! - [`reconcile`]: the shell: finalizer, the fixed sequence of feature steps (the pass, in its
//!   module doc), status writes, requeue policy; undecodable objects; cleanup on deletion.
//! - [`step`]: what every feature step reads (`Step`) and what its outcome answers (`Outcome`:
//!   holds back pod creation?, next pass when?, what it says in the status).
//! - [`pods`]: the pods: the plan (creates, deletes, rolling updates), the pod built for each
//!   ordinal, the status they amount to, and the pod writes with their Events (§3).
//! - [`children`]: the Services, the PodDisruptionBudget and the NetworkPolicy (§3, §3j), one
//!   file per child kind.
//! - [`storage`]: the claims of `spec.storage` (§3d).
//! - [`auth`]: the password from the Secret, and its live rotation on the pods (§3c).
//! - [`tls`]: the TLS Secret, the controller's TLS client, the live certificate reload (§3k).
//! - [`acl`]: ACL users: the operator's own users and Secret, every user set live on the pods
//!   (§3l).
//! - [`config`]: Redis's own configuration: the directives set live on the pods (§3m).
//! - [`backup`]: backups to object storage (the `RedisBackup` reconciler, its Jobs, the
//!   schedules) and the restore of a new Redis from one (§3o).
//! - [`replication`]: roles, failover and switchover in Replication mode (§3b, §9).
//! - [`redis_server`]: the one client of the pods' redis-servers.
//! - [`k8s`]: Kubernetes plumbing shared by every feature: the cached watch, the untyped Redis
//!   watch both reconcilers read, Events, conditions, the field manager, ownership, terminating
//!   namespaces.
//! - [`cached`]: what the pod cache keeps of a pod (only what the controller reads).
//! - [`run`]: wiring: caches, the kube-runtime Controller, leader election ([`leader`]), the
//!   operations port ([`metrics`]); [`cli`] its flags.

pub mod acl;
pub mod auth;
pub mod backup;
pub mod cached;
pub mod children;
pub mod cli;
pub mod config;
mod error;
#[cfg(test)]
mod fixtures;
pub mod k8s;
pub mod leader;
pub mod metrics;
pub mod pods;
pub mod reconcile;
pub mod redis_server;
pub mod replication;
pub mod run;
pub mod step;
pub mod storage;
pub mod tls;

pub use error::{Error, RetryClass, backoff};
