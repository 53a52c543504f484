//! Defaults of the spec (DESIGN §1 table). The mutating webhook fills exactly the fields that
//! [`RedisSpec::missing_defaults`] names; the controller reads the effective values through the
//! accessors, so a Redis stored while the webhook was down still runs with the same defaults.

use crate::types::{AuthSpec, ImagePullPolicy, Mode, RedisSpec, ReplicationSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use std::time::Duration;

pub const DEFAULT_REPLICAS: i32 = 1;
pub const DEFAULT_IMAGE: &str = "redis:7.2-alpine";
pub const DEFAULT_PORT: i32 = 6379;
pub const DEFAULT_IMAGE_PULL_POLICY: ImagePullPolicy = ImagePullPolicy::IfNotPresent;
pub const DEFAULT_MIN_REPLICAS_TO_WRITE: i32 = 0;
pub const DEFAULT_MIN_REPLICAS_MAX_LAG: i32 = 10;
pub const DEFAULT_FAILOVER_AFTER: &str = "10s";
pub const DEFAULT_SECRET_KEY: &str = "password";
pub const DEFAULT_MAX_UNAVAILABLE: i32 = 1;

/// A spec field that is missing, and the value the webhook puts there.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDefault {
    /// The field's JSON name under `spec` (e.g. `imagePullPolicy`).
    pub field: &'static str,
    pub value: Value,
}

impl RedisSpec {
    /// The defaulted fields that are absent (or null) in this spec, in a stable order.
    /// Fields the user set, even to a value the validator will refuse, are never listed:
    /// defaulting only fills gaps.
    pub fn missing_defaults(&self) -> Vec<FieldDefault> {
        let mut missing = Vec::new();
        if self.replicas.is_none() {
            missing.push(FieldDefault {
                field: "replicas",
                value: DEFAULT_REPLICAS.into(),
            });
        }
        if self.image.is_none() {
            missing.push(FieldDefault {
                field: "image",
                value: DEFAULT_IMAGE.into(),
            });
        }
        if self.port.is_none() {
            missing.push(FieldDefault {
                field: "port",
                value: DEFAULT_PORT.into(),
            });
        }
        if self.image_pull_policy.is_none() {
            missing.push(FieldDefault {
                field: "imagePullPolicy",
                value: DEFAULT_IMAGE_PULL_POLICY.as_str().into(),
            });
        }
        missing
    }

    /// This spec with every missing default filled in.
    pub fn with_defaults(&self) -> RedisSpec {
        RedisSpec {
            replicas: Some(self.replicas()),
            image: Some(self.image().to_owned()),
            port: Some(self.port()),
            image_pull_policy: Some(self.image_pull_policy()),
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
                .unwrap_or(DEFAULT_MIN_REPLICAS_TO_WRITE),
            min_replicas_max_lag: r.min_replicas_max_lag.unwrap_or(DEFAULT_MIN_REPLICAS_MAX_LAG),
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

/// Replication settings with every default applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveReplication {
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

impl ReplicationSpec {
    /// The spec's replication settings with the missing ones defaulted, as the webhook stores them.
    pub fn with_defaults(&self) -> ReplicationSpec {
        ReplicationSpec {
            min_replicas_to_write: Some(
                self.min_replicas_to_write
                    .unwrap_or(DEFAULT_MIN_REPLICAS_TO_WRITE),
            ),
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
                    field: "replicas",
                    value: json!(1)
                },
                FieldDefault {
                    field: "image",
                    value: json!("redis:7.2-alpine")
                },
                FieldDefault {
                    field: "port",
                    value: json!(6379)
                },
                FieldDefault {
                    field: "imagePullPolicy",
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
        let fields: Vec<_> = s.missing_defaults().into_iter().map(|d| d.field).collect();
        assert_eq!(fields, vec!["imagePullPolicy"]);
    }

    #[test]
    fn null_counts_as_missing() {
        let s = spec(json!({"port": null}));
        assert!(s.missing_defaults().iter().any(|d| d.field == "port"));
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
}
