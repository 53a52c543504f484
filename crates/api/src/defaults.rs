//! Defaults of the spec (DESIGN §1 table). The mutating webhook fills exactly the fields that
//! [`RedisSpec::missing_defaults`] names; the controller reads the effective values through the
//! accessors, so a Redis stored while the webhook was down still runs with the same defaults.
//!
//! One default is never stored: `spec.replication.minReplicasToWrite`, which follows
//! `spec.replicas` ([`default_min_replicas_to_write`]). A value written at creation would outlive
//! the pod count it was chosen for: a Redis created with 3 pods and scaled down to 1 would keep a
//! stored 1 and refuse every write.

use crate::exporter::ExporterSpec;
use crate::network_policy::NetworkPolicySpec;
use crate::types::{AuthSpec, ImagePullPolicy, Mode, RedisSpec, ReplicationSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use std::time::Duration;

pub const DEFAULT_REPLICAS: i32 = 1;
pub const DEFAULT_IMAGE: &str = "redis:7.2-alpine";
pub const DEFAULT_PORT: i32 = 6379;
pub const DEFAULT_IMAGE_PULL_POLICY: ImagePullPolicy = ImagePullPolicy::IfNotPresent;
/// From this many pods on, `minReplicasToWrite` defaults to 1; below, to 0.
pub const MIN_REPLICAS_TO_WRITE_FROM_PODS: i32 = 3;
pub const DEFAULT_MIN_REPLICAS_MAX_LAG: i32 = 10;
pub const DEFAULT_FAILOVER_AFTER: &str = "10s";
pub const DEFAULT_SECRET_KEY: &str = "password";
pub const DEFAULT_MAX_UNAVAILABLE: i32 = 1;

/// A spec field that is missing, and the value the webhook puts there.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDefault {
    /// The field's path under `spec`, as JSON names: `["imagePullPolicy"]`, or for a nested field
    /// `["replication", "failoverAfter"]`. Every parent of a listed field is present in the spec
    /// (a missing parent is listed whole instead, as `["replication"]` with an object value), so
    /// a JSONPatch `add` at `/spec/<path>` always applies.
    pub path: &'static [&'static str],
    pub value: Value,
}

impl FieldDefault {
    /// The field as kubectl users write it, e.g. `spec.replication.failoverAfter`.
    pub fn field(&self) -> String {
        std::iter::once("spec")
            .chain(self.path.iter().copied())
            .collect::<Vec<_>>()
            .join(".")
    }
}

impl RedisSpec {
    /// The defaulted fields that are absent (or null) in this spec, in a stable order.
    /// Fields the user set, even to a value the validator will refuse, are never listed:
    /// defaulting only fills gaps.
    ///
    /// `mode` itself is never filled (a tutorial manifest gets exactly the four fields it always
    /// got); `spec.replication` is filled only in Replication mode (whole when absent, else its
    /// missing keys) but for `minReplicasToWrite`, whose default follows `replicas` and is never
    /// stored; `spec.auth.secretRef.key` whenever `spec.auth` is set; and `spec.backup.keep`
    /// whenever `spec.backup.schedule` is.
    pub fn missing_defaults(&self) -> Vec<FieldDefault> {
        let mut missing = Vec::new();
        let mut fill = |path: &'static [&'static str], absent: bool, value: Value| {
            if absent {
                missing.push(FieldDefault { path, value });
            }
        };
        fill(
            &["replicas"],
            self.replicas.is_none(),
            DEFAULT_REPLICAS.into(),
        );
        fill(&["image"], self.image.is_none(), DEFAULT_IMAGE.into());
        fill(&["port"], self.port.is_none(), DEFAULT_PORT.into());
        fill(
            &["imagePullPolicy"],
            self.image_pull_policy.is_none(),
            DEFAULT_IMAGE_PULL_POLICY.as_str().into(),
        );
        if self.mode() == Mode::Replication {
            match &self.replication {
                None => fill(&["replication"], true, default_replication_json()),
                Some(r) => {
                    fill(
                        &["replication", "minReplicasMaxLag"],
                        r.min_replicas_max_lag.is_none(),
                        DEFAULT_MIN_REPLICAS_MAX_LAG.into(),
                    );
                    fill(
                        &["replication", "failoverAfter"],
                        r.failover_after.is_none(),
                        DEFAULT_FAILOVER_AFTER.into(),
                    );
                }
            }
        }
        if let Some(auth) = &self.auth {
            fill(
                &["auth", "secretRef", "key"],
                auth.secret_ref.key.is_none(),
                DEFAULT_SECRET_KEY.into(),
            );
        }
        // How many scheduled backups are kept, shown where a schedule is set (§3o).
        if let Some(backup) = &self.backup {
            fill(
                &["backup", "keep"],
                backup.schedule.is_some() && backup.keep.is_none(),
                crate::backup::DEFAULT_KEEP.into(),
            );
        }
        missing
    }

    /// This spec with every missing default filled in (what [`Self::missing_defaults`] lists).
    pub fn with_defaults(&self) -> RedisSpec {
        let replication = match self.mode() {
            Mode::Replication => Some(
                self.replication
                    .as_ref()
                    .map_or_else(ReplicationSpec::default, ReplicationSpec::clone)
                    .with_defaults(),
            ),
            Mode::Standalone => self.replication.clone(),
        };
        let auth = self.auth.as_ref().map(|auth| {
            let mut auth = auth.clone();
            auth.secret_ref
                .key
                .get_or_insert_with(|| DEFAULT_SECRET_KEY.to_owned());
            auth
        });
        let backup = self.backup.as_ref().map(|backup| {
            let mut backup = backup.clone();
            if backup.schedule.is_some() {
                backup.keep.get_or_insert(crate::backup::DEFAULT_KEEP);
            }
            backup
        });
        RedisSpec {
            replicas: Some(self.replicas()),
            backup,
            image: Some(self.image().to_owned()),
            port: Some(self.port()),
            image_pull_policy: Some(self.image_pull_policy()),
            replication,
            auth,
            ..self.clone()
        }
    }

    /// Effective number of pods.
    pub fn replicas(&self) -> i32 {
        self.replicas.unwrap_or(DEFAULT_REPLICAS)
    }

    /// Effective container image.
    pub fn image(&self) -> &str {
        self.image.as_deref().unwrap_or(DEFAULT_IMAGE)
    }

    /// Effective redis-server port.
    pub fn port(&self) -> i32 {
        self.port.unwrap_or(DEFAULT_PORT)
    }

    /// Effective image pull policy.
    pub fn image_pull_policy(&self) -> ImagePullPolicy {
        self.image_pull_policy.unwrap_or(DEFAULT_IMAGE_PULL_POLICY)
    }

    /// Effective mode.
    pub fn mode(&self) -> Mode {
        self.mode.unwrap_or_default()
    }

    /// Effective replication settings (meaningful in Replication mode).
    pub fn replication(&self) -> EffectiveReplication {
        let r = self.replication.clone().unwrap_or_default();
        EffectiveReplication {
            min_replicas_to_write: r
                .min_replicas_to_write
                .unwrap_or_else(|| default_min_replicas_to_write(self.replicas())),
            min_replicas_max_lag: r
                .min_replicas_max_lag
                .unwrap_or(DEFAULT_MIN_REPLICAS_MAX_LAG),
            failover_after: r
                .failover_after
                .as_deref()
                .and_then(|d| parse_duration(d).ok())
                .unwrap_or(DEFAULT_FAILOVER_DURATION),
        }
    }

    /// The Secret name and key of the password, when auth is on.
    pub fn auth_secret(&self) -> Option<(&str, &str)> {
        self.auth.as_ref().map(AuthSpec::secret)
    }

    /// The exporter settings when the sidecar runs.
    pub fn exporter(&self) -> Option<&ExporterSpec> {
        self.exporter.as_ref().filter(|e| e.enabled())
    }

    /// The NetworkPolicy settings when the operator keeps one.
    pub fn network_policy(&self) -> Option<&NetworkPolicySpec> {
        self.network_policy.as_ref().filter(|p| p.enabled())
    }

    /// Effective `maxUnavailable` of the PodDisruptionBudget.
    pub fn max_unavailable(&self) -> IntOrString {
        self.pod_disruption_budget
            .as_ref()
            .and_then(|p| p.max_unavailable.clone())
            .unwrap_or(IntOrString::Int(DEFAULT_MAX_UNAVAILABLE))
    }
}

impl AuthSpec {
    /// The Secret's name and the key of the password in it.
    pub fn secret(&self) -> (&str, &str) {
        (
            self.secret_ref.name.as_str(),
            self.secret_ref.key.as_deref().unwrap_or(DEFAULT_SECRET_KEY),
        )
    }
}

/// [`DEFAULT_FAILOVER_AFTER`] as a duration.
pub const DEFAULT_FAILOVER_DURATION: Duration = Duration::from_secs(10);

/// `minReplicasToWrite` of a Redis of `replicas` pods that leaves it unset: 1 from
/// [`MIN_REPLICAS_TO_WRITE_FROM_PODS`] pods on, else 0. With 1, a primary cut off from all its
/// replicas (a partition) refuses writes once its last replica's acknowledgement is older than
/// `minReplicasMaxLag`, so at most that many seconds of plain writes reach a primary that a
/// failover is about to replace; and 3 pods can still lose one and take writes. With 2 pods, 1
/// would stop writes whenever the one replica is down (a restart, a node drain), so the default
/// stays 0 there, with a warning.
pub fn default_min_replicas_to_write(replicas: i32) -> i32 {
    i32::from(replicas >= MIN_REPLICAS_TO_WRITE_FROM_PODS)
}

/// Replication settings with every default applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveReplication {
    /// The spec's value, else [`default_min_replicas_to_write`] of its replicas.
    pub min_replicas_to_write: i32,
    /// Seconds.
    pub min_replicas_max_lag: i32,
    pub failover_after: Duration,
}

/// A duration as written in the spec ("10s", "1m30s", "500ms"). The validating webhook refuses
/// what this cannot read; the controller falls back to the default for a stored bad value.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim()).map_err(|e| format!("{text:?} is not a duration: {e}"))
}

/// `spec.replication` with every stored default (not `minReplicasToWrite`), as the webhook adds
/// it when it is absent.
fn default_replication_json() -> Value {
    serde_json::json!({
        "minReplicasMaxLag": DEFAULT_MIN_REPLICAS_MAX_LAG,
        "failoverAfter": DEFAULT_FAILOVER_AFTER,
    })
}

impl ReplicationSpec {
    /// The spec's replication settings with the missing ones defaulted, as the webhook stores them
    /// (`minReplicasToWrite` stays as written: its default follows the pod count).
    pub fn with_defaults(&self) -> ReplicationSpec {
        ReplicationSpec {
            min_replicas_to_write: self.min_replicas_to_write,
            min_replicas_max_lag: Some(
                self.min_replicas_max_lag
                    .unwrap_or(DEFAULT_MIN_REPLICAS_MAX_LAG),
            ),
            failover_after: Some(
                self.failover_after
                    .clone()
                    .unwrap_or_else(|| DEFAULT_FAILOVER_AFTER.to_owned()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: Value) -> RedisSpec {
        serde_json::from_value(v).expect("test spec decodes")
    }

    #[test]
    fn empty_spec_misses_every_default() {
        let missing = spec(json!({})).missing_defaults();
        assert_eq!(
            missing,
            vec![
                FieldDefault {
                    path: &["replicas"],
                    value: json!(1)
                },
                FieldDefault {
                    path: &["image"],
                    value: json!("redis:7.2-alpine")
                },
                FieldDefault {
                    path: &["port"],
                    value: json!(6379)
                },
                FieldDefault {
                    path: &["imagePullPolicy"],
                    value: json!("IfNotPresent")
                },
            ]
        );
    }

    #[test]
    fn full_spec_misses_nothing() {
        let s = spec(
            json!({"replicas": 0, "image": "redis:5-alpine", "port": 8333, "imagePullPolicy": "Always"}),
        );
        assert!(s.missing_defaults().is_empty());
    }

    #[test]
    fn set_fields_are_never_overwritten_even_when_invalid() {
        let s = spec(json!({"replicas": 0, "port": 1000, "image": ""}));
        let fields: Vec<_> = s
            .missing_defaults()
            .into_iter()
            .map(|d| d.field())
            .collect();
        assert_eq!(fields, vec!["spec.imagePullPolicy"]);
    }

    #[test]
    fn null_counts_as_missing() {
        let s = spec(json!({"port": null}));
        assert!(s.missing_defaults().iter().any(|d| d.path == ["port"]));
    }

    #[test]
    fn accessors_give_effective_values() {
        let empty = RedisSpec::default();
        assert_eq!(empty.replicas(), 1);
        assert_eq!(empty.image(), "redis:7.2-alpine");
        assert_eq!(empty.port(), 6379);
        assert_eq!(empty.image_pull_policy(), ImagePullPolicy::IfNotPresent);
        let set = spec(
            json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333, "imagePullPolicy": "Never"}),
        );
        assert_eq!(set.with_defaults(), set);
        assert!(empty.with_defaults().missing_defaults().is_empty());
    }

    /// The missing defaults beyond the four every spec gets, as `(field, value)`.
    fn extra_defaults(v: Value) -> Vec<(String, Value)> {
        let mut full = v;
        for (k, d) in [
            ("replicas", json!(1)),
            ("image", json!("redis:7")),
            ("port", json!(6379)),
            ("imagePullPolicy", json!("Always")),
        ] {
            full[k] = d;
        }
        spec(full)
            .missing_defaults()
            .into_iter()
            .map(|d| (d.field(), d.value))
            .collect()
    }

    #[test]
    fn mode_is_never_filled_and_standalone_gets_no_replication_defaults() {
        assert!(extra_defaults(json!({})).is_empty());
        assert!(extra_defaults(json!({"mode": "Standalone"})).is_empty());
        // Replication settings in Standalone mode are ignored, so not completed either.
        assert!(extra_defaults(json!({"replication": {"failoverAfter": "5s"}})).is_empty());
        assert!(
            extra_defaults(json!({"podDisruptionBudget": {}})).is_empty(),
            "the PDB default is the controller's, not written into the spec"
        );
    }

    #[test]
    fn replication_mode_without_settings_gets_the_whole_defaulted_object() {
        assert_eq!(
            extra_defaults(json!({"mode": "Replication"})),
            vec![(
                "spec.replication".to_owned(),
                json!({"minReplicasMaxLag": 10, "failoverAfter": "10s"})
            )]
        );
        assert_eq!(
            extra_defaults(json!({"mode": "Replication", "replication": null})),
            vec![(
                "spec.replication".to_owned(),
                json!({"minReplicasMaxLag": 10, "failoverAfter": "10s"})
            )]
        );
    }

    #[test]
    fn replication_mode_gets_only_the_missing_keys() {
        assert_eq!(
            extra_defaults(json!({"mode": "Replication", "replication": {"minReplicasMaxLag": 3}})),
            vec![("spec.replication.failoverAfter".to_owned(), json!("10s"))]
        );
        assert!(
            extra_defaults(json!({"mode": "Replication", "replication": {
                "minReplicasToWrite": 1, "minReplicasMaxLag": 3, "failoverAfter": "bogus"
            }}))
            .is_empty(),
            "set values, even invalid, are kept"
        );
        let all = extra_defaults(json!({"mode": "Replication", "replication": {}}));
        assert_eq!(all.len(), 2, "{all:?}");
    }

    #[test]
    fn min_replicas_to_write_is_never_stored_and_follows_the_pod_count_while_unset() {
        for replicas in [0, 1, 2, 3, 5] {
            let s = spec(json!({"mode": "Replication", "replicas": replicas}));
            assert!(
                s.missing_defaults()
                    .iter()
                    .all(|d| d.value.get("minReplicasToWrite").is_none()
                        && d.path != ["replication", "minReplicasToWrite"]),
                "{replicas}"
            );
            let expected = if replicas >= 3 { 1 } else { 0 };
            assert_eq!(
                s.replication().min_replicas_to_write,
                expected,
                "{replicas}"
            );
            // The webhook's defaults do not pin it: scaling moves it.
            assert_eq!(
                s.with_defaults().replication(),
                s.replication(),
                "{replicas}"
            );
        }
        // Created with 3 pods, scaled down to 2: writes no longer wait for a replica.
        let scaled = spec(json!({"mode": "Replication", "replicas": 3})).with_defaults();
        let scaled = RedisSpec {
            replicas: Some(2),
            ..scaled
        };
        assert_eq!(scaled.replication().min_replicas_to_write, 0);
        // A value the spec holds is kept, whatever the pod count (a stored 0 stays 0).
        for (replicas, set) in [(5, 0), (2, 1), (1, 3)] {
            let s = spec(json!({
                "mode": "Replication", "replicas": replicas,
                "replication": {"minReplicasToWrite": set}
            }));
            assert_eq!(s.replication().min_replicas_to_write, set);
        }
    }

    #[test]
    fn auth_without_a_key_gets_the_password_key() {
        assert_eq!(
            extra_defaults(json!({"auth": {"secretRef": {"name": "s"}}})),
            vec![("spec.auth.secretRef.key".to_owned(), json!("password"))]
        );
        assert!(
            extra_defaults(json!({"auth": {"secretRef": {"name": "s", "key": "pw"}}})).is_empty()
        );
        let both =
            extra_defaults(json!({"mode": "Replication", "auth": {"secretRef": {"name": "s"}}}));
        assert_eq!(
            both.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
            vec!["spec.replication", "spec.auth.secretRef.key"]
        );
    }

    #[test]
    fn with_defaults_fills_what_missing_defaults_lists() {
        for v in [
            json!({}),
            json!({"mode": "Replication"}),
            json!({"mode": "Replication", "replication": {"failoverAfter": "1m"}}),
            json!({"auth": {"secretRef": {"name": "s"}}}),
            json!({"replication": {"failoverAfter": "1m"}}),
        ] {
            let s = spec(v.clone());
            let filled = s.with_defaults();
            assert!(filled.missing_defaults().is_empty(), "{v}");
            // Only gaps were filled: every value the user set is unchanged.
            let mut merged = serde_json::to_value(&filled).expect("encodes");
            json_merge(&mut merged, &v);
            assert_eq!(
                merged,
                serde_json::to_value(&filled).expect("encodes"),
                "{v}"
            );
            assert_eq!(filled.replication(), s.replication(), "{v}");
            assert_eq!(filled.auth_secret(), s.auth_secret(), "{v}");
        }
        let s = spec(json!({"mode": "Replication", "replication": {"failoverAfter": "1m"}}));
        assert_eq!(
            s.with_defaults().replication,
            Some(ReplicationSpec {
                min_replicas_to_write: None,
                min_replicas_max_lag: Some(10),
                failover_after: Some("1m".into()),
            })
        );
    }

    #[test]
    fn an_empty_block_runs_the_default_exporter_and_false_turns_it_off() {
        let on: RedisSpec = spec(json!({"exporter": {}}));
        let exporter = on.exporter().expect("on");
        assert_eq!(exporter.image(), crate::exporter::DEFAULT_EXPORTER_IMAGE);
        assert_eq!(exporter.port(), 9121);
        let off: RedisSpec = spec(json!({"exporter": {"enabled": false, "port": 9200}}));
        assert!(off.exporter().is_none());
        assert!(RedisSpec::default().exporter().is_none());
    }

    /// Overwrites `into` with every value set in `from` (objects merged key by key).
    fn json_merge(into: &mut Value, from: &Value) {
        match (into, from) {
            (Value::Object(into), Value::Object(from)) => {
                for (k, v) in from {
                    json_merge(into.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            (into, from) => *into = from.clone(),
        }
    }
}
