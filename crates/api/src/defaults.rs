//! Defaults of the spec (DESIGN §1 table). The mutating webhook fills exactly the fields that
//! [`RedisSpec::missing_defaults`] names; the controller reads the effective values through the
//! accessors, so a Redis stored while the webhook was down still runs with the same defaults.

use crate::types::{ImagePullPolicy, RedisSpec};
use serde_json::Value;

pub const DEFAULT_REPLICAS: i32 = 1;
pub const DEFAULT_IMAGE: &str = "redis:7.2-alpine";
pub const DEFAULT_PORT: i32 = 6379;
pub const DEFAULT_IMAGE_PULL_POLICY: ImagePullPolicy = ImagePullPolicy::IfNotPresent;

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
            resources: self.resources.clone(),
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
