//! Admission rules (DESIGN §2): what the validating webhook refuses, and what it warns about.
//!
//! Every rule reports the field path and a message a `kubectl` user can act on, and a denial
//! lists every violated rule at once. Rules read the effective spec (defaults applied), since
//! that is what the controller will run.
//!
//! This module holds the [`Policy`], the [`Verdict`], the entry points (CREATE, UPDATE with its
//! ratchet, DELETE, the `scale` subresource), the rules the policy configures on `spec.replicas`
//! and `spec.port`, and the order in which every rule and warning is reported. The other rules
//! live by the part of the spec they judge:
//! - `violation`: [`Violation`], what every rule reports, and [`shown`], how every message echoes
//!   a tenant's string (cut and escaped).
//! - `meta`: the name rules and deletion protection.
//! - `image`: image references (`spec.image`, `spec.exporter.image`) and the `:latest` warning.
//! - `replication`: Replication mode and `spec.replication`, with their warnings (§3b).
//! - `auth`: the Secret name and key of `spec.auth` (§3c).
//! - `pdb`: `spec.podDisruptionBudget.maxUnavailable`.
//! - `storage`: `spec.storage`, from the claim rules of [`crate::storage`] (§3d).
//! - `exporter`: `spec.exporter` (§3e).
//! - `placement`: `spec.nodeSelector`, `affinity`, `tolerations`, `topologySpreadConstraints`,
//!   `priorityClassName`, `podLabels` and `podAnnotations`, with the warning about a Replication
//!   Redis held on one node (§3h).
//! - `network_policy`: `spec.networkPolicy`'s peers, with the warnings about who can (or
//!   cannot) connect (§3j).
//! - `tls`: `spec.tls`'s Secret name and plaintext port, with the plaintext port's warning (§3k).
//! - `acl`: `spec.acl`'s users (names, rules, password Secrets), with their warnings (§3l).
//! - `config`: `spec.config`'s directives and `spec.maxMemoryPercentOfLimit`, with the warnings
//!   about maxmemory and the memory limit (§3m).
//! - `service`: `spec.service`'s annotations, CIDRs, and the settings only some types take
//!   (§3n).
//! - `backup`: `spec.backup`'s destination, schedule and count, and `spec.restore`, which is
//!   never changed after creation (§3o).
//! - `syntax`: the syntax of Kubernetes names, label keys and values, which the others check.

mod acl;
mod auth;
mod backup;
mod config;
mod exporter;
mod image;
mod meta;
mod network_policy;
mod pdb;
mod placement;
mod replication;
mod service;
mod storage;
mod syntax;
mod tls;
mod violation;

use crate::types::Redis;
use image::{ParsedImage, parse_image};

pub use auth::{MAX_SECRET_KEY_LENGTH, MAX_SECRET_NAME_LENGTH};
pub use meta::MAX_NAME_LENGTH;
pub use replication::{MAX_FAILOVER_AFTER, MIN_FAILOVER_AFTER};
pub use violation::{MAX_SHOWN_CHARS, Violation, shown, shown_list};
// The schema's bounds, which these rules check too: defined in `crate::schema`, and still
// reachable here (`api::validation::SCHEMA_*`) as before.
pub use crate::schema::{SCHEMA_MAX_PORT, SCHEMA_MAX_REPLICAS, SCHEMA_MIN_PORT};

/// The configurable part of the rules (webhook flags `--reserved-names`, `--min-port`,
/// `--max-replicas`; chart values of the same names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Names a `Redis` may not have (the tutorial refuses `tangx-in`).
    pub reserved_names: Vec<String>,
    /// Lowest `spec.port` accepted (the tutorial's rule: 6379).
    pub min_port: i32,
    /// Highest `spec.replicas` accepted.
    pub max_replicas: i32,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            reserved_names: vec!["tangx-in".to_owned()],
            min_port: 6379,
            max_replicas: 100,
        }
    }
}

/// The outcome of admission: allowed when there is no violation; warnings either way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub violations: Vec<Violation>,
    pub warnings: Vec<String>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        self.violations.is_empty()
    }

    /// Every violation, `field: message`, joined by `; ` (the denial's `status.message`).
    pub fn message(&self) -> String {
        self.violations
            .iter()
            .map(Violation::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Policy {
    /// CREATE: the name rules and the field rules.
    pub fn validate_create(&self, redis: &Redis) -> Verdict {
        let image = parse_image(redis.spec.image());
        Verdict {
            violations: self.object_violations(redis, &image),
            warnings: warnings(redis, &image),
        }
    }

    /// UPDATE: the same rules on the new object, ratcheted: a violation of a field whose
    /// effective value the stored object already had is let through with a warning instead.
    /// Without this a policy tightened after creation (say `--min-port` raised) would refuse
    /// every later write to existing objects, including the controller's removal of its
    /// finalizer, and deletion would hang. The ratchet compares the field and its effective
    /// value, never the message: a port stored unset and filled with its default by the
    /// mutating webhook is the same 6379, though one message says "(the default)".
    /// A changed value is always checked.
    pub fn validate_update(&self, new: &Redis, old: &Redis) -> Verdict {
        let image = parse_image(new.spec.image());
        let mut verdict = Verdict {
            violations: Vec::new(),
            warnings: warnings(new, &image),
        };
        // Claims exist already: they grow but never shrink or move (never ratcheted).
        verdict
            .violations
            .extend(storage::storage_update_violations(&new.spec, &old.spec));
        verdict
            .warnings
            .extend(storage::storage_update_warnings(&new.spec, &old.spec));
        // TLS is not turned on or off under running replication (never ratcheted).
        verdict
            .violations
            .extend(tls::tls_update_violations(&new.spec, &old.spec));
        verdict
            .warnings
            .extend(tls::tls_update_warnings(&new.spec, &old.spec));
        // ACLs are not removed from under pods that refuse the default user (never ratcheted).
        verdict
            .violations
            .extend(acl::acl_update_violations(&new.spec, &old.spec));
        // The restore happened (or not) when the Redis was created (never ratcheted).
        verdict
            .violations
            .extend(backup::restore_update_violations(&new.spec, &old.spec));
        let violations = self.object_violations(new, &image);
        if violations.is_empty() {
            return verdict;
        }
        let stored = self.object_violations(old, &parse_image(old.spec.image()));
        for violation in violations {
            if stored
                .iter()
                .any(|s| s.field == violation.field && s.value == violation.value)
            {
                verdict.warnings.push(format!(
                    "{violation} (allowed because the stored object already has this value; it will be refused once changed)"
                ));
            } else {
                verdict.violations.push(violation);
            }
        }
        verdict
    }

    /// DELETE: refused while the deletion-protection annotation is `"true"`.
    pub fn validate_delete(&self, old: &Redis) -> Verdict {
        Verdict {
            violations: meta::deletion_violations(&old.metadata),
            warnings: Vec::new(),
        }
    }

    fn object_violations(&self, redis: &Redis, image: &ParsedImage) -> Vec<Violation> {
        let mut violations = meta::name_violations(&self.reserved_names, &redis.metadata);
        violations.extend(service::service_name_violations(
            &redis.metadata,
            &redis.spec,
            self.max_replicas.min(SCHEMA_MAX_REPLICAS),
        ));
        violations.extend(self.spec_violations(redis, image));
        violations
    }

    fn spec_violations(&self, redis: &Redis, image: &ParsedImage) -> Vec<Violation> {
        let spec = &redis.spec;
        let mut violations = Vec::new();
        let defaulted = |set: bool| if set { "" } else { " (the default)" };

        violations.extend(self.replicas_violations(spec.replicas(), spec.replicas.is_some()));

        violations.extend(image::image_violation("spec.image", spec.image(), image));

        let port = spec.port();
        let lowest = self.min_port.max(SCHEMA_MIN_PORT);
        if port < lowest {
            violations.push(Violation::new(
                "spec.port",
                port,
                format!(
                    "must be >= {lowest}, got {port}{}",
                    defaulted(spec.port.is_some())
                ),
            ));
        }
        if port > SCHEMA_MAX_PORT {
            violations.push(Violation::new(
                "spec.port",
                port,
                format!("must be <= {SCHEMA_MAX_PORT}, got {port}"),
            ));
        }
        violations.extend(replication::replication_violations(spec));
        violations.extend(auth::auth_violations(spec));
        violations.extend(pdb::pdb_violations(spec));
        violations.extend(storage::storage_violations(spec));
        violations.extend(exporter::exporter_violations(spec));
        violations.extend(placement::placement_violations(spec));
        violations.extend(network_policy::network_policy_violations(spec));
        violations.extend(tls::tls_violations(spec, lowest));
        violations.extend(acl::acl_violations(spec));
        violations.extend(config::config_violations(spec));
        violations.extend(service::service_violations(spec));
        violations.extend(backup::backup_violations(spec));
        violations
    }

    /// The rules on `spec.replicas` (`set`: whether the value was written or is the default).
    fn replicas_violations(&self, replicas: i32, set: bool) -> Vec<Violation> {
        let mut violations = Vec::new();
        let defaulted = if set { "" } else { " (the default)" };
        if replicas < 0 {
            violations.push(Violation::new(
                "spec.replicas",
                replicas,
                format!("must be >= 0, got {replicas}"),
            ));
        }
        let highest = self.max_replicas.min(SCHEMA_MAX_REPLICAS);
        if replicas > highest {
            violations.push(Violation::new(
                "spec.replicas",
                replicas,
                format!("must be <= {highest}, got {replicas}{defaulted}"),
            ));
        }
        violations
    }

    /// UPDATE of the `scale` subresource (`kubectl scale`, HorizontalPodAutoscaler): the
    /// `spec.replicas` rules on the new autoscaling/v1 Scale, ratcheted like
    /// [`Policy::validate_update`] on the stored Scale's value.
    pub fn validate_scale(&self, replicas: i32, stored: Option<i32>) -> Verdict {
        let mut verdict = Verdict::default();
        for violation in self.replicas_violations(replicas, true) {
            if stored == Some(replicas) {
                verdict.warnings.push(format!(
                    "{violation} (allowed because the stored object already has this value; it will be refused once changed)"
                ));
            } else {
                verdict.violations.push(violation);
            }
        }
        if replicas == 0 {
            verdict
                .warnings
                .push("spec.replicas: 0 runs no Redis pods".to_owned());
        }
        verdict
    }
}

/// Allowed but unwise: reported as admission warnings (kubectl prints them).
fn warnings(redis: &Redis, parsed: &ParsedImage) -> Vec<String> {
    let spec = &redis.spec;
    let mut warnings = image::image_warnings(spec.image(), parsed);
    if spec.replicas == Some(0) {
        warnings.push("spec.replicas: 0 runs no Redis pods".to_owned());
    }
    warnings.extend(replication::replication_warnings(spec));
    warnings.extend(placement::placement_warnings(redis));
    warnings.extend(network_policy::network_policy_warnings(spec));
    warnings.extend(tls::tls_warnings(spec));
    warnings.extend(acl::acl_warnings(spec));
    warnings.extend(config::config_warnings(spec));
    warnings.extend(service::service_warnings(spec));
    warnings
}

#[cfg(test)]
mod tests;
