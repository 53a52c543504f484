//! The entry points of [`Policy`] (CREATE, UPDATE with its ratchet, DELETE, `scale`), the
//! rules on `spec.replicas` and `spec.port`, and the order of a denial's violations.

use super::*;

#[test]
fn create_accepts_a_valid_redis_without_warnings() {
    let v = Policy::default().validate_create(&valid());
    assert!(v.allowed(), "{}", v.message());
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
}

#[test]
fn create_accepts_an_empty_spec_through_its_defaults() {
    let v = Policy::default().validate_create(&redis("r", json!({})));
    assert!(v.allowed(), "{}", v.message());
}

#[test]
fn port_below_min_port_is_refused_with_value() {
    let v = Policy::default().validate_create(&redis("r", json!({"port": 6000})));
    assert_eq!(v.message(), "spec.port: must be >= 6379, got 6000");
    assert!(
        Policy::default()
            .validate_create(&redis("r", json!({"port": 6379})))
            .allowed()
    );
    assert!(
        Policy::default()
            .validate_create(&redis("r", json!({"port": 54321})))
            .allowed()
    );
}

#[test]
fn min_port_is_configurable_and_applies_to_the_default_port() {
    let policy = Policy {
        min_port: 7000,
        ..Policy::default()
    };
    let v = policy.validate_create(&redis("r", json!({})));
    assert_eq!(
        v.message(),
        "spec.port: must be >= 7000, got 6379 (the default)"
    );
    let lax = Policy {
        min_port: 2000,
        ..Policy::default()
    };
    assert!(
        lax.validate_create(&redis("r", json!({"port": 6000})))
            .allowed()
    );
}

#[test]
fn schema_port_bounds_hold_even_with_a_lax_policy() {
    let lax = Policy {
        min_port: 0,
        ..Policy::default()
    };
    assert_eq!(
        lax.validate_create(&redis("r", json!({"port": 1000})))
            .message(),
        "spec.port: must be >= 1234, got 1000"
    );
    assert_eq!(
        lax.validate_create(&redis("r", json!({"port": 60000})))
            .message(),
        "spec.port: must be <= 54321, got 60000"
    );
}

#[test]
fn replicas_above_the_maximum_are_refused() {
    let v = Policy::default().validate_create(&redis("r", json!({"replicas": 101})));
    assert_eq!(v.message(), "spec.replicas: must be <= 100, got 101");
    assert!(
        Policy::default()
            .validate_create(&redis("r", json!({"replicas": 100})))
            .allowed()
    );
    let small = Policy {
        max_replicas: 3,
        ..Policy::default()
    };
    assert!(
        !small
            .validate_create(&redis("r", json!({"replicas": 4})))
            .allowed()
    );
    let v = Policy::default().validate_create(&redis("r", json!({"replicas": -1})));
    assert_eq!(v.message(), "spec.replicas: must be >= 0, got -1");
}

#[test]
fn a_denial_lists_every_violation() {
    let v = Policy::default().validate_create(&redis(
        "tangx-in",
        json!({"replicas": 500, "image": "Bad Image", "port": 6000}),
    ));
    assert_eq!(
        fields(&v),
        vec!["metadata.name", "spec.replicas", "spec.image", "spec.port"]
    );
    assert_eq!(v.message().matches("; ").count(), 3);
}

#[test]
fn zero_replicas_warn_but_pass() {
    let v = Policy::default().validate_create(&redis("r", json!({"replicas": 0})));
    assert!(v.allowed());
    assert_eq!(
        v.other_warnings(),
        vec!["spec.replicas: 0 runs no Redis pods".to_owned()]
    );
}

#[test]
fn update_applies_the_field_rules_to_the_new_object() {
    let old = valid();
    let new = redis(
        "my-op-redis",
        json!({"replicas": 2, "image": "redis:7.2-alpine", "port": 6000}),
    );
    let v = Policy::default().validate_update(&new, &old);
    assert_eq!(v.message(), "spec.port: must be >= 6379, got 6000");
    assert!(Policy::default().validate_update(&valid(), &old).allowed());
}

#[test]
fn update_lets_an_unchanged_stored_violation_through_with_a_warning() {
    // Stored when the policy allowed port 6000; the policy has since been tightened.
    let old = redis(
        "my-op-redis",
        json!({"replicas": 2, "image": "redis:7.2-alpine", "port": 6000}),
    );
    let mut new = old.clone();
    new.metadata.finalizers = Some(vec![]);
    let v = Policy::default().validate_update(&new, &old);
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.warnings
            .iter()
            .any(|w| w.starts_with("spec.port: must be >= 6379, got 6000 (allowed")),
        "{:?}",
        v.warnings
    );
    // ...but changing it to another bad value is refused.
    let worse = redis(
        "my-op-redis",
        json!({"replicas": 2, "image": "redis:7.2-alpine", "port": 5000}),
    );
    assert_eq!(
        Policy::default().validate_update(&worse, &old).message(),
        "spec.port: must be >= 6379, got 5000"
    );
}

#[test]
fn update_ratchets_on_the_effective_value_not_the_message() {
    // Stored without `port` (webhook bypassed), then `--min-port` raised: the mutating
    // webhook fills the default 6379 on the next UPDATE (the finalizer's removal too).
    let policy = Policy {
        min_port: 7000,
        ..Policy::default()
    };
    let old = redis("r", json!({"replicas": 1}));
    let mut new = redis("r", json!({"replicas": 1, "port": 6379}));
    new.metadata.finalizers = Some(vec![]);
    let v = policy.validate_update(&new, &old);
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.warnings
            .iter()
            .any(|w| w.starts_with("spec.port: must be >= 7000, got 6379 (allowed")),
        "{:?}",
        v.warnings
    );
    // The other way round too: written 6379, now unset.
    let v = policy.validate_update(&old, &new);
    assert!(v.allowed(), "{}", v.message());
    // A different value is still judged.
    let moved = redis("r", json!({"replicas": 1, "port": 6380}));
    assert_eq!(
        policy.validate_update(&moved, &old).message(),
        "spec.port: must be >= 7000, got 6380"
    );
}

#[test]
fn replicas_above_the_schema_ceiling_are_refused_whatever_the_policy() {
    let lax = Policy {
        max_replicas: i32::MAX,
        ..Policy::default()
    };
    assert!(
        lax.validate_create(&redis("r", json!({"replicas": SCHEMA_MAX_REPLICAS})))
            .allowed()
    );
    assert_eq!(
        lax.validate_create(&redis("r", json!({"replicas": i32::MAX})))
            .message(),
        format!("spec.replicas: must be <= 10000, got {}", i32::MAX)
    );
}

#[test]
fn scale_is_judged_by_the_replicas_rules() {
    let policy = Policy::default();
    assert!(policy.validate_scale(100, Some(1)).allowed());
    let v = policy.validate_scale(2_147_483_647, Some(1));
    assert_eq!(v.message(), "spec.replicas: must be <= 100, got 2147483647");
    assert_eq!(fields(&v), vec!["spec.replicas"]);
    assert_eq!(
        policy.validate_scale(-1, Some(1)).message(),
        "spec.replicas: must be >= 0, got -1"
    );
    // Ratcheted on the stored value, as an UPDATE of the Redis is.
    let v = policy.validate_scale(200, Some(200));
    assert!(v.allowed(), "{}", v.message());
    assert_eq!(v.warnings.len(), 1, "{:?}", v.warnings);
    assert!(!policy.validate_scale(200, None).allowed());
    assert_eq!(
        policy.validate_scale(0, Some(1)).warnings,
        vec!["spec.replicas: 0 runs no Redis pods".to_owned()]
    );
}

#[test]
fn a_denial_lists_every_new_violation_too() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({
            "replicas": 0, "mode": "Replication",
            "replication": {"minReplicasToWrite": -1, "minReplicasMaxLag": 0, "failoverAfter": "2h"},
            "auth": {"secretRef": {"name": "Bad", "key": "a/b"}},
            "podDisruptionBudget": {"maxUnavailable": "200%"}
        }),
    ));
    assert_eq!(
        fields(&v),
        vec![
            "spec.replicas",
            "spec.replication.minReplicasToWrite",
            "spec.replication.minReplicasMaxLag",
            "spec.replication.failoverAfter",
            "spec.auth.secretRef.name",
            "spec.auth.secretRef.key",
            "spec.podDisruptionBudget.maxUnavailable",
        ]
    );
}

#[test]
fn update_ratchets_the_new_rules_on_field_and_value() {
    // Stored before these rules (or with the webhook bypassed).
    let old = replicated(json!({
        "replicas": 0,
        "replication": {"failoverAfter": "2h"},
        "auth": {"secretRef": {"name": "Old_Name"}},
        "podDisruptionBudget": {"maxUnavailable": "150%"}
    }));
    // The controller removing its finalizer, or the mutating webhook filling defaults.
    let mut same = replicated(json!({
        "replicas": 0,
        "replication": {"failoverAfter": "2h", "minReplicasToWrite": 0, "minReplicasMaxLag": 10},
        "auth": {"secretRef": {"name": "Old_Name", "key": "password"}},
        "podDisruptionBudget": {"maxUnavailable": "150%"}
    }));
    same.metadata.finalizers = Some(vec![]);
    let v = Policy::default().validate_update(&same, &old);
    assert!(v.allowed(), "{}", v.message());
    assert_eq!(
        v.warnings
            .iter()
            .filter(|w| w.contains("(allowed because the stored object already has this value"))
            .count(),
        4,
        "{:?}",
        v.warnings
    );
    // Any changed value is judged.
    let changed = replicated(json!({
        "replicas": 0,
        "replication": {"failoverAfter": "3h"},
        "auth": {"secretRef": {"name": "Other_Name"}},
        "podDisruptionBudget": {"maxUnavailable": "-1%"}
    }));
    let v = Policy::default().validate_update(&changed, &old);
    assert_eq!(
        fields(&v),
        vec![
            "spec.replication.failoverAfter",
            "spec.auth.secretRef.name",
            "spec.podDisruptionBudget.maxUnavailable"
        ]
    );
    // Zero pods stored in Standalone mode do not let a switch to Replication through.
    let standalone = redis("r", json!({"replicas": 0}));
    let v = Policy::default().validate_update(&replicated(json!({"replicas": 0})), &standalone);
    assert_eq!(fields(&v), vec!["spec.replicas"]);
}
