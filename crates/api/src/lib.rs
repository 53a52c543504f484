//! The `Redis` custom resource (`myapp.tangx.in/v1`) and the pure rules that the controller and
//! the admission webhook share. Nothing here performs I/O.
//!
//! Where each rule of DESIGN.md lives:
//! - §1 the API and its schema: [`types`]; the schema's bounds and transforms: [`schema`]; the
//!   CRD YAML: [`crd`].
//! - §1 defaults (filled by the mutating webhook) and the effective values: [`defaults`].
//! - §2 admission rules (validating webhook): [`validation`] (the policy, the entry points and
//!   the ratchet), its private modules by part of the spec: `meta` (names, deletion protection),
//!   `image`, `replication` (§3b), `auth` (§3c), `pdb`, `storage` (§3d), `exporter` (§3e),
//!   `placement` (§3h), `network_policy` (§3j), `tls` (§3k), `acl` (§3l), and `syntax` (names, label keys and
//!   values).
//! - §3 pod names, labels and the selector, the keys the operator owns on its pods (the
//!   spec-hash annotation among them), the containers' names, the topology keys of the default
//!   spread: [`pods`].
//! - §3d persistence (claims, retention, sizes, the claim rules): [`storage`].
//! - §3e the metrics exporter sidecar: [`exporter`].
//! - §3j who may reach the pods (the NetworkPolicy's settings): [`network_policy`].
//! - §3k TLS (the Secret's files, the arguments of redis-server and redis-cli, the one crypto
//!   provider of every TLS connection): [`tls`].
//! - §3l ACL users (the operator's users, its Secret, the grammar of a user's rules): [`acl`].
//! - §3m Redis's own configuration (the directives, their values, live or restart, the derived
//!   maxmemory): [`config`].
//! - §3n how clients reach a Redis (its client Service's type and settings): [`service`].
//! - §3o backups and restores (the `RedisBackup` kind, `spec.backup`, `spec.restore`, object
//!   keys and labels): [`backup`]; what the `redis-backup` binary takes and says (its flags, its
//!   result and failure lines), for the `backup` crate and the controller alike: [`backup_run`].
//!
//! The modules form layers, each using only those below it: [`schema`] and [`secret`]; then
//! [`backup_run`]; then [`types`] (which holds [`storage`]'s, [`exporter`]'s, [`network_policy`]'s, [`tls`]'s,
//! [`acl`]'s, [`service`]'s and [`backup`]'s spec types) and [`pods`]; [`defaults`] and [`config`]; [`validation`]; [`crd`]. The crate root holds only constants and [`Error`], and re-exports.

pub mod acl;
pub mod backup;
pub mod backup_run;
pub mod config;
pub mod crd;
pub mod defaults;
pub mod exporter;
pub mod network_policy;
pub mod pods;
pub mod schema;
pub mod secret;
pub mod service;
pub mod shown;
pub mod storage;
pub mod tls;
pub mod types;
pub mod validation;

pub use acl::{AclSpec, AclUser, DefaultUser};
pub use backup::{BackupSpec, RedisBackup, RedisBackupSpec, RedisBackupStatus, RestoreSpec};
pub use exporter::ExporterSpec;
pub use network_policy::NetworkPolicySpec;
pub use storage::{RetentionPolicy, RetentionSpec, StorageSpec};
pub use tls::{TlsClientAuth, TlsSecretRef, TlsSpec};
pub use types::{
    AuthSpec, ImagePullPolicy, MemberStatus, Mode, PodConfigGeneration, PodDisruptionBudgetSpec,
    Redis, RedisSpec, RedisStatus, ReplicationSpec, SecretKeyRef,
};
pub use validation::{Policy, Verdict, Violation};

/// The API group of the `Redis` resource.
pub const GROUP: &str = "myapp.tangx.in";

/// The finalizer the controller keeps on every `Redis` until its pods are gone.
pub const FINALIZER: &str = "myapp.tangx.in/cleanup";

/// While this annotation is `"true"`, the validating webhook refuses to delete the `Redis`.
pub const DELETION_PROTECTION_ANNOTATION: &str = "myapp.tangx.in/deletion-protection";

/// While this annotation is `"true"`, the controller makes no writes for the `Redis` (its pods,
/// claims, Services, roles and status stay as they are) except to say so in the Ready condition
/// and to honour a deletion.
pub const PAUSED_ANNOTATION: &str = "myapp.tangx.in/paused";

/// Whether the object's metadata pauses it ([`PAUSED_ANNOTATION`] is `"true"`, any case).
pub fn is_paused(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(PAUSED_ANNOTATION))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The one error type of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("could not render the CustomResourceDefinition as YAML: {0}")]
    RenderCrd(#[source] serde_norway::Error),
}
