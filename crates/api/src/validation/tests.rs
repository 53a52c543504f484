//! The admission rules' tests (DESIGN §2), through the entry points of [`Policy`], as a
//! `kubectl` user meets the rules.

use super::image::{parse_image, parse_image_uncached};
use super::*;
use crate::DELETION_PROTECTION_ANNOTATION;
use crate::types::RedisSpec;
use serde_json::json;
use std::collections::BTreeMap;

fn redis(name: &str, spec: serde_json::Value) -> Redis {
    let spec: RedisSpec = serde_json::from_value(spec).expect("test spec decodes");
    let mut r = Redis::new(name, spec);
    r.metadata.namespace = Some("default".into());
    r
}

fn valid() -> Redis {
    redis(
        "my-op-redis",
        json!({"replicas": 2, "image": "redis:7.2-alpine", "port": 6379}),
    )
}

impl Verdict {
    /// The warnings other than the NetworkPolicy's (which every Redis without auth and a
    /// policy gets): what the tests of the other rules look at.
    fn other_warnings(&self) -> Vec<String> {
        self.warnings
            .iter()
            .filter(|w| !w.starts_with("spec.networkPolicy"))
            .cloned()
            .collect()
    }
}

fn fields(v: &Verdict) -> Vec<&str> {
    v.violations.iter().map(|v| v.field.as_str()).collect()
}

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
fn reserved_name_is_refused_and_others_are_not() {
    let v = Policy::default().validate_create(&redis("tangx-in", json!({})));
    assert_eq!(
        v.message(),
        "metadata.name: \"tangx-in\" is a reserved name"
    );
    let policy = Policy {
        reserved_names: vec!["a".into(), "b".into()],
        ..Policy::default()
    };
    assert!(!policy.validate_create(&redis("b", json!({}))).allowed());
    assert!(
        policy
            .validate_create(&redis("tangx-in", json!({})))
            .allowed(),
        "list is configurable"
    );
    assert!(
        Policy::default()
            .validate_create(&redis("tangx-in-2", json!({})))
            .allowed()
    );
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
fn long_names_are_refused() {
    let ok = "a".repeat(63);
    let long = "a".repeat(64);
    assert!(
        Policy::default()
            .validate_create(&redis(&ok, json!({})))
            .allowed()
    );
    let v = Policy::default().validate_create(&redis(&long, json!({})));
    assert_eq!(fields(&v), vec!["metadata.name"]);
    assert!(
        v.message().contains("no more than 63 characters"),
        "{}",
        v.message()
    );
}

#[test]
fn generate_name_must_leave_room_for_the_suffix() {
    let mut r = redis("", json!({}));
    r.metadata.name = None;
    r.metadata.generate_name = Some("a".repeat(58));
    assert!(Policy::default().validate_create(&r).allowed());
    r.metadata.generate_name = Some("a".repeat(59));
    assert_eq!(
        fields(&Policy::default().validate_create(&r)),
        vec!["metadata.generateName"]
    );
}

#[test]
fn remembered_image_answers_are_the_fresh_ones() {
    let long = format!("redis:{}", "a".repeat(600));
    let images: Vec<String> = [
        "redis",
        "redis:latest",
        "redis:7",
        "Redis:7",
        "",
        "r@sha256:ab",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain((0..600).map(|i| format!("registry.local/redis-{i}:7")))
    .chain([long])
    .collect();
    // Twice: the second round answers from memory, after it has been emptied at least once.
    for _ in 0..2 {
        for image in &images {
            assert_eq!(parse_image(image), parse_image_uncached(image), "{image}");
        }
    }
}

#[test]
fn image_references_are_checked_properly() {
    for good in [
        "redis",
        "redis:7.2-alpine",
        "library/redis:7",
        "docker.io/library/redis:7.2",
        "localhost:5000/team/redis:1.0",
        "ghcr.io/acme/redis@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": good})));
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for bad in [
        "Redis:7",
        "redis:",
        "redis::7",
        "redis 7",
        " redis",
        "redis@sha256:abc",
        "-redis",
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": bad})));
        assert_eq!(fields(&v), vec!["spec.image"], "{bad} should be refused");
        assert!(
            v.message().contains("is not a valid image reference"),
            "{}",
            v.message()
        );
    }
    let v = Policy::default().validate_create(&redis("r", json!({"image": ""})));
    assert_eq!(v.message(), "spec.image: must not be empty");
    // As Go's distribution/reference (what containerd and the kubelet use) reads them.
    for (image, allowed) in [
        ("[::1]:5000/redis:7", true),
        ("registry.example.com:443/a/b/c:v1_2.3-x", true),
        ("redis:é", false),
        (
            "redis@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
            false,
        ),
        ("redis@md5:0123456789abcdef0123456789abcdef", false),
        ("a__b/c---d:1", true),
        ("a___b:1", false),
        (&format!("{}:1", "a".repeat(256)), false),
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": image})));
        assert_eq!(v.allowed(), allowed, "{image}: {}", v.message());
    }
}

#[test]
fn latest_is_no_tag_or_the_latest_tag_without_a_digest() {
    let latest = |image: &str| parse_image_uncached(image).map(|f| f.latest);
    assert_eq!(latest("redis"), Ok(true));
    assert_eq!(latest("redis:latest"), Ok(true));
    assert_eq!(latest("redis:7"), Ok(false));
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_eq!(latest(&format!("redis@{digest}")), Ok(false));
    assert_eq!(latest(&format!("redis:latest@{digest}")), Ok(false));
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
fn latest_and_untagged_images_warn_but_pass() {
    for (image, hint) in [
        ("redis:latest", "uses the :latest tag"),
        ("redis", "has no tag"),
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": image})));
        assert!(v.allowed());
        assert_eq!(v.other_warnings().len(), 1, "{:?}", v.other_warnings());
        assert!(
            v.other_warnings()[0].starts_with("spec.image:")
                && v.other_warnings()[0].contains(hint),
            "{:?}",
            v.other_warnings()
        );
    }
    let pinned = "redis@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert!(
        Policy::default()
            .validate_create(&redis("r", json!({"image": pinned})))
            .other_warnings()
            .is_empty()
    );
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
fn delete_is_refused_only_while_protected() {
    let mut r = valid();
    assert!(Policy::default().validate_delete(&r).allowed());
    r.metadata.annotations = Some(BTreeMap::from([(
        DELETION_PROTECTION_ANNOTATION.to_owned(),
        "true".to_owned(),
    )]));
    let v = Policy::default().validate_delete(&r);
    assert_eq!(
        fields(&v),
        vec!["metadata.annotations[myapp.tangx.in/deletion-protection]"]
    );
    assert!(
        v.message()
            .contains("kubectl annotate redis/my-op-redis myapp.tangx.in/deletion-protection-")
    );
    r.metadata.annotations = Some(BTreeMap::from([(
        DELETION_PROTECTION_ANNOTATION.to_owned(),
        "false".to_owned(),
    )]));
    assert!(Policy::default().validate_delete(&r).allowed());
}

#[test]
fn delete_ignores_field_rules() {
    // An object stored with a now-invalid spec can still be deleted.
    let r = redis("tangx-in", json!({"port": 1000}));
    assert!(Policy::default().validate_delete(&r).allowed());
}

#[test]
fn the_exporter_needs_a_valid_image_and_its_own_port() {
    let policy = Policy::default();
    assert!(
        policy
            .validate_create(&redis("r", json!({"exporter": {}})))
            .allowed()
    );
    let clash = redis("r", json!({"port": 9121, "exporter": {}}));
    assert_eq!(
        fields(&policy.validate_create(&clash)),
        ["spec.exporter.port"]
    );
    let bad = redis(
        "r",
        json!({"exporter": {"image": "Not An Image", "enabled": false}}),
    );
    assert_eq!(
        fields(&policy.validate_create(&bad)),
        ["spec.exporter.image"]
    );
}

#[test]
fn storage_sizes_are_checked_and_only_grow() {
    let policy = Policy::default();
    let bad = redis(
        "r",
        json!({"storage": {"size": "lots", "accessModes": ["ReadOnlyMany"]}}),
    );
    let verdict = policy.validate_create(&bad);
    assert_eq!(
        fields(&verdict),
        ["spec.storage.size", "spec.storage.accessModes[0]"]
    );
    let small = redis("r", json!({"storage": {"size": "1Gi"}}));
    let big = redis("r", json!({"storage": {"size": "2Gi"}}));
    assert!(policy.validate_update(&big, &small).allowed());
    let shrink = policy.validate_update(&small, &big);
    assert_eq!(fields(&shrink), ["spec.storage.size"]);
    assert!(
        shrink.message().contains("cannot shrink from 2Gi to 1Gi"),
        "{}",
        shrink.message()
    );
    let added = policy.validate_update(&small, &redis("r", json!({})));
    assert!(added.allowed());
    assert!(
        added
            .warnings
            .iter()
            .any(|w| w.contains("new, empty claims")),
        "{added:?}"
    );
}

/// A Replication Redis that passes every rule without a warning.
fn replicated(extra: serde_json::Value) -> Redis {
    let mut spec = json!({
        "replicas": 3, "image": "redis:7.2-alpine", "mode": "Replication",
        "auth": {"secretRef": {"name": "my-redis-auth"}}
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    redis("r", spec)
}

#[test]
fn a_replication_redis_with_auth_passes_quietly() {
    let v = Policy::default().validate_create(&replicated(json!({})));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
    let v = Policy::default().validate_create(&replicated(json!({"replication": {
        "minReplicasToWrite": 2, "minReplicasMaxLag": 1, "failoverAfter": "1h"
    }})));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
}

#[test]
fn replication_needs_a_pod() {
    let v = Policy::default().validate_create(&replicated(json!({"replicas": 0})));
    assert_eq!(
        v.message(),
        "spec.replicas: must be >= 1 in Replication mode (one pod is the primary), got 0"
    );
    // Standalone may run no pods (with its warning).
    let v = Policy::default().validate_create(&redis("r", json!({"replicas": 0})));
    assert!(v.allowed(), "{}", v.message());
    let v = Policy::default()
        .validate_create(&redis("r", json!({"replicas": 0, "mode": "Standalone"})));
    assert!(v.allowed(), "{}", v.message());
}

#[test]
fn failover_after_must_parse_and_lie_between_1s_and_1h() {
    for good in ["1s", "10s", "1m30s", "500ms 1s", "1h", "60m"] {
        let v = Policy::default()
            .validate_create(&replicated(json!({"replication": {"failoverAfter": good}})));
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for (bad, says) in [
        (
            "soon",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"soon\"",
        ),
        (
            "10",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"10\"",
        ),
        (
            "",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"\"",
        ),
        ("999ms", "must be between 1s and 1h, got \"999ms\""),
        ("0s", "must be between 1s and 1h, got \"0s\""),
        ("1h1s", "must be between 1s and 1h, got \"1h1s\""),
        (
            "99999999999999999999s",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"99999999999999999999s\"",
        ),
    ] {
        let v = Policy::default()
            .validate_create(&replicated(json!({"replication": {"failoverAfter": bad}})));
        assert_eq!(fields(&v), vec!["spec.replication.failoverAfter"], "{bad}");
        assert_eq!(v.violations[0].message, says, "{bad}");
    }
}

#[test]
fn replication_counts_have_their_minimums() {
    let v = Policy::default().validate_create(&replicated(json!({"replication": {
        "minReplicasToWrite": -1, "minReplicasMaxLag": 0
    }})));
    assert_eq!(
        v.message(),
        "spec.replication.minReplicasToWrite: must be >= 0, got -1; \
         spec.replication.minReplicasMaxLag: must be >= 1 (seconds), got 0"
    );
}

#[test]
fn replication_values_are_checked_in_standalone_mode_too() {
    // Ignored while Standalone, but they would take effect on a switch of mode.
    let v = Policy::default()
        .validate_create(&redis("r", json!({"replication": {"failoverAfter": "2h"}})));
    assert_eq!(fields(&v), vec!["spec.replication.failoverAfter"]);
}

#[test]
fn secret_names_must_be_dns_subdomains() {
    let name_ok = |name: &str| {
        Policy::default()
            .validate_create(&replicated(json!({"auth": {"secretRef": {"name": name}}})))
    };
    for good in ["a", "my-redis-auth", "auth.v2", "0", &"a".repeat(253)] {
        let v = name_ok(good);
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for bad in ["My-Auth", "-a", "a-", "a..b", ".a", "a.", "a_b", "a b", ""] {
        let v = name_ok(bad);
        assert_eq!(fields(&v), vec!["spec.auth.secretRef.name"], "{bad}");
    }
    assert_eq!(
        name_ok("My-Auth").message(),
        "spec.auth.secretRef.name: must be a valid Secret name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"My-Auth\""
    );
    assert_eq!(
        name_ok(&"a".repeat(254)).message(),
        "spec.auth.secretRef.name: must be no more than 253 characters, got 254"
    );
}

#[test]
fn secret_keys_must_be_valid_data_keys() {
    let key_ok = |key: &str| {
        Policy::default().validate_create(&replicated(
            json!({"auth": {"secretRef": {"name": "s", "key": key}}}),
        ))
    };
    for good in [
        "password",
        "redis.pw",
        "A_b-1",
        "x",
        ".pw",
        &"k".repeat(253),
    ] {
        let v = key_ok(good);
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for bad in [
        "",
        "a/b",
        "pass word",
        "ü",
        ".",
        "..",
        "..pw",
        &"k".repeat(254),
    ] {
        let v = key_ok(bad);
        assert_eq!(fields(&v), vec!["spec.auth.secretRef.key"], "{bad}");
    }
    assert_eq!(
        key_ok("a/b").message(),
        "spec.auth.secretRef.key: must be a valid Secret key (letters, digits, '-', '_' and '.'), got \"a/b\""
    );
    // The default key is valid, and auth rules apply in Standalone mode too.
    let v = Policy::default()
        .validate_create(&redis("r", json!({"auth": {"secretRef": {"name": "Bad"}}})));
    assert_eq!(fields(&v), vec!["spec.auth.secretRef.name"]);
}

#[test]
fn max_unavailable_is_a_count_or_a_percentage() {
    let pdb = |max: serde_json::Value| {
        Policy::default().validate_create(&redis(
            "r",
            json!({"podDisruptionBudget": {"maxUnavailable": max}}),
        ))
    };
    for good in [
        json!(0),
        json!(1),
        json!(500),
        json!("0%"),
        json!("25%"),
        json!("100%"),
        json!("050%"),
    ] {
        let v = pdb(good.clone());
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    assert_eq!(
        pdb(json!(-1)).message(),
        "spec.podDisruptionBudget.maxUnavailable: must be >= 0, got -1"
    );
    for bad in [
        "101%",
        "1",
        "%",
        "-5%",
        "+5%",
        "5 %",
        "5.5%",
        "abc",
        "",
        "99999999999999999999999%",
    ] {
        let v = pdb(json!(bad));
        assert_eq!(
            fields(&v),
            vec!["spec.podDisruptionBudget.maxUnavailable"],
            "{bad}"
        );
        assert_eq!(
            v.violations[0].message,
            format!(
                "must be a number >= 0 or a percentage between \"0%\" and \"100%\", got {bad:?}"
            )
        );
    }
    assert!(
        Policy::default()
            .validate_create(&redis("r", json!({"podDisruptionBudget": {}})))
            .allowed()
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
fn replication_warnings() {
    let warns = |r: Redis| Policy::default().validate_create(&r).other_warnings();
    let one = warns(replicated(json!({"replicas": 1})));
    assert_eq!(one.len(), 1, "{one:?}");
    assert!(
        one[0].starts_with("spec.replicas: 1 in Replication mode")
            && one[0].contains("no failover is possible"),
        "{one:?}"
    );

    let open = warns(redis(
        "r",
        json!({"replicas": 3, "image": "redis:7", "mode": "Replication"}),
    ));
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(
        open[0].starts_with("spec.auth: not set in Replication mode")
            && open[0].contains("any pod that can reach the pods can read and write"),
        "{open:?}"
    );

    let strict = warns(replicated(
        json!({"replication": {"minReplicasToWrite": 3}}),
    ));
    assert_eq!(
        strict,
        vec!["spec.replication.minReplicasToWrite: 3 is more than the 2 replica(s) of 3 pods, so writes will be refused".to_owned()]
    );
    assert!(
        warns(replicated(
            json!({"replication": {"minReplicasToWrite": 2}})
        ))
        .is_empty()
    );
    // Two pods with a single required replica is fine; one pod with one is not.
    assert!(
        warns(replicated(
            json!({"replicas": 2, "replication": {"minReplicasToWrite": 1}})
        ))
        .is_empty()
    );
    assert_eq!(
        warns(replicated(
            json!({"replicas": 1, "replication": {"minReplicasToWrite": 1}})
        ))
        .len(),
        2
    );
    // Refused anyway with no pods: no replication warning piled on the denial.
    let v = Policy::default().validate_create(&replicated(json!({"replicas": 0})));
    assert_eq!(
        v.other_warnings(),
        vec!["spec.replicas: 0 runs no Redis pods".to_owned()]
    );
}

#[test]
fn standalone_stays_quiet_about_auth_and_warns_about_ignored_replication() {
    // The tutorial's Redis has no auth: no warning about it.
    let v = Policy::default().validate_create(&valid());
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"replicas": 1, "image": "redis:7", "mode": "Standalone"}),
    ));
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
    for spec in [
        json!({"image": "redis:7", "replication": {"failoverAfter": "30s"}}),
        json!({"image": "redis:7", "mode": "Standalone", "replication": {}}),
    ] {
        let v = Policy::default().validate_create(&redis("r", spec.clone()));
        assert!(v.allowed(), "{spec}: {}", v.message());
        assert_eq!(
            v.other_warnings(),
            vec!["spec.replication: ignored in Standalone mode (set spec.mode: Replication to use it)".to_owned()],
            "{spec}"
        );
    }
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

/// The violations of a Redis whose spec is `placement` (a valid Standalone Redis otherwise), as
/// `(field, message)`.
fn placement(placement: serde_json::Value) -> Vec<(String, String)> {
    let mut spec = json!({"replicas": 2, "image": "redis:7.2-alpine"});
    for (k, v) in placement.as_object().cloned().unwrap_or_default() {
        spec[k] = v;
    }
    Policy::default()
        .validate_create(&redis("r", spec))
        .violations
        .into_iter()
        .map(|v| (v.field, v.message))
        .collect()
}

/// The fields `placement` is refused on.
fn placement_fields(spec: serde_json::Value) -> Vec<String> {
    placement(spec).into_iter().map(|(f, _)| f).collect()
}

#[test]
fn a_valid_placement_passes_quietly() {
    let v = Policy::default().validate_create(&replicated(json!({
        "nodeSelector": {"disktype": "ssd", "example.com/pool": ""},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "pool", "operator": "In", "values": ["a", "b"]},
                        {"key": "spot", "operator": "DoesNotExist"},
                        {"key": "cpus", "operator": "Gt", "values": ["4"]}
                    ]},
                    {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": {"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "Exists"}
                    ]}}
                ]
            },
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "r"}}
                }}
            ]}
        },
        "tolerations": [
            {"operator": "Exists"},
            {"key": "dedicated", "value": "redis", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            {"key": "capacity", "operator": "Gt", "value": "-5"}
        ],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
             "minDomains": 3, "nodeTaintsPolicy": "Honor",
             "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["r"]}]}},
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "r"}}}
        ],
        "priorityClassName": "redis-critical.v2",
        "podLabels": {"team": "cache", "app.kubernetes.io/component": "database"},
        "podAnnotations": {"Example.com/Backup": "yes, please"}
    })));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
}

#[test]
fn node_selectors_and_pod_labels_need_valid_label_keys_and_values() {
    for field in ["nodeSelector", "podLabels"] {
        for good in [
            json!({"a": ""}),
            json!({"example.com/a-b_c.d": "V-1_x.y"}),
            json!({ "k".repeat(63): "v".repeat(63) }),
        ] {
            assert!(
                placement(json!({ field: good })).is_empty(),
                "{field} {good}"
            );
        }
        for (key, value) in [
            ("", "v"),
            ("-a", "v"),
            ("a/", "v"),
            ("/a", "v"),
            ("Example.com/a", "v"),
            ("a/b/c", "v"),
            (&"k".repeat(64), "v"),
            ("a", "-v"),
            ("a", "v v"),
            ("a", &"v".repeat(64)),
        ] {
            let refused = placement(json!({ field: {key: value} }));
            assert_eq!(
                refused.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
                [format!("spec.{field}[{key}]")],
                "{field} {key:?}: {value:?}"
            );
        }
    }
    assert_eq!(
        placement(json!({"nodeSelector": {"a b": "c d"}})),
        [
            (
                "spec.nodeSelector[a b]".to_owned(),
                "must be a valid label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"a b\"".to_owned()
            ),
            (
                "spec.nodeSelector[a b]".to_owned(),
                "must be a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"c d\"".to_owned()
            ),
        ]
    );
}

#[test]
fn pod_labels_and_annotations_may_not_take_the_operators_keys() {
    for key in [
        "app",
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/managed-by",
        "myapp.tangx.in/role",
    ] {
        let refused = placement(json!({"podLabels": {key: "x"}}));
        assert_eq!(refused.len(), 1, "{key}: {refused:?}");
        assert_eq!(refused[0].0, format!("spec.podLabels[{key}]"));
        assert!(
            refused[0]
                .1
                .starts_with(&format!("{key:?} is a label the operator sets on its pods")),
            "{refused:?}"
        );
    }
    let refused = placement(json!({"podAnnotations": {"myapp.tangx.in/pod-spec-hash": "x"}}));
    assert_eq!(
        refused,
        [(
            "spec.podAnnotations[myapp.tangx.in/pod-spec-hash]".to_owned(),
            "\"myapp.tangx.in/pod-spec-hash\" is the operator's own (every myapp.tangx.in/ key is); choose another key".to_owned()
        )]
    );
    // Annotations may reuse the operator's label keys: nothing selects on annotations.
    assert!(placement(json!({"podAnnotations": {"app": "x"}})).is_empty());
}

#[test]
fn pod_annotation_keys_must_be_valid_and_fit() {
    assert!(placement(json!({"podAnnotations": {"A.B/C": "any value at all: { }"}})).is_empty());
    assert_eq!(
        placement_fields(json!({"podAnnotations": {"a b": "x", "ok": "x"}})),
        ["spec.podAnnotations[a b]"]
    );
    let big = "x".repeat(200 * 1024);
    let refused = placement(json!({"podAnnotations": {"a": big, "b": big}}));
    assert_eq!(
        refused,
        [(
            "spec.podAnnotations".to_owned(),
            "must be no more than 262144 bytes in total (keys and values), got 409602".to_owned()
        )]
    );
}

#[test]
fn priority_class_name_must_be_a_dns_subdomain() {
    for good in ["high", "system-cluster-critical", "a.b-c", &"a".repeat(253)] {
        assert!(
            placement(json!({"priorityClassName": good})).is_empty(),
            "{good}"
        );
    }
    for (bad, says) in [
        ("", "must not be empty".to_owned()),
        (
            "High",
            "must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"High\"".to_owned(),
        ),
        ("a_b", "must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"a_b\"".to_owned()),
        (&"a".repeat(254), "must be no more than 253 characters, got 254".to_owned()),
    ] {
        assert_eq!(
            placement(json!({"priorityClassName": bad})),
            [("spec.priorityClassName".to_owned(), says)],
            "{bad}"
        );
    }
}

/// `spec.affinity` with one required node term holding `requirement`.
fn node_requirement(requirement: serde_json::Value) -> Vec<(String, String)> {
    placement(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
        }}}}),
    )
}

const REQUIRED_TERM: &str = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]";

#[test]
fn node_selector_requirements_must_be_able_to_match() {
    let values = format!("{REQUIRED_TERM}.matchExpressions[0].values");
    for (requirement, says) in [
        (
            json!({"key": "a", "operator": "In"}),
            "must hold at least one value when the operator is In",
        ),
        (
            json!({"key": "a", "operator": "NotIn", "values": []}),
            "must hold at least one value when the operator is NotIn",
        ),
        (
            json!({"key": "a", "operator": "Exists", "values": ["x"]}),
            "must be empty when the operator is Exists (it matches on the key alone), got [\"x\"]",
        ),
        (
            json!({"key": "a", "operator": "DoesNotExist", "values": ["x"]}),
            "must be empty when the operator is DoesNotExist (it matches on the key alone), got [\"x\"]",
        ),
        (
            json!({"key": "a", "operator": "Gt"}),
            "must hold exactly one value, an integer, when the operator is Gt, got []",
        ),
        (
            json!({"key": "a", "operator": "Lt", "values": ["1", "2"]}),
            "must hold exactly one value, an integer, when the operator is Lt, got [\"1\", \"2\"]",
        ),
        (
            json!({"key": "a", "operator": "Gt", "values": ["4.5"]}),
            "must hold exactly one value, an integer, when the operator is Gt, got [\"4.5\"]",
        ),
    ] {
        assert_eq!(
            node_requirement(requirement.clone()),
            [(values.clone(), says.to_owned())],
            "{requirement}"
        );
    }
    assert_eq!(
        node_requirement(json!({"key": "a", "operator": "Has", "values": ["x"]})),
        [(
            format!("{REQUIRED_TERM}.matchExpressions[0].operator"),
            "must be In, NotIn, Exists, DoesNotExist, Gt or Lt, got \"Has\"".to_owned()
        )]
    );
    assert_eq!(
        placement_fields(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "bad key", "operator": "Exists"}]}]
            }}}})
        ),
        [format!("{REQUIRED_TERM}.matchExpressions[0].key")]
    );
    // Preferred terms are held to the same rules, and to a weight the scheduler takes.
    assert_eq!(
        placement_fields(
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
                {"weight": 101, "preference": {}}
            ]}}})
        ),
        [
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].weight",
        ]
    );
}

#[test]
fn a_required_node_affinity_needs_a_term_that_can_match() {
    let terms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    let required = |terms: serde_json::Value| {
        placement(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": terms
            }}}}),
        )
    };
    assert_eq!(
        required(json!([])),
        [(
            terms.to_owned(),
            "must hold at least one term: with none no node matches, so the pods could never be scheduled".to_owned()
        )]
    );
    assert_eq!(
        required(json!([{}, {"matchExpressions": [], "matchFields": []}])),
        [(
            terms.to_owned(),
            "every term is empty, and an empty term matches no node, so the pods could never be scheduled".to_owned()
        )]
    );
    // One term that can match is enough (terms are alternatives).
    assert!(
        required(json!([{}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]))
            .is_empty()
    );
}

#[test]
fn node_field_requirements_name_one_node() {
    let field = |requirement: serde_json::Value| {
        placement(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [requirement]}]
            }}}}),
        )
    };
    assert!(field(json!({"key": "metadata.name", "operator": "In", "values": ["n1"]})).is_empty());
    let at = format!("{REQUIRED_TERM}.matchFields[0]");
    assert_eq!(
        field(json!({"key": "metadata.labels", "operator": "In", "values": ["n1", "n2"]})),
        [
            (
                format!("{at}.key"),
                "must be metadata.name (the only node field a selector can match), got \"metadata.labels\"".to_owned()
            ),
            (
                format!("{at}.values"),
                "must hold exactly one node name for a node field, got [\"n1\", \"n2\"]".to_owned()
            ),
        ]
    );
    assert_eq!(
        field(json!({"key": "metadata.name", "operator": "Exists"})),
        [(
            format!("{at}.operator"),
            "must be In or NotIn for a node field, got \"Exists\"".to_owned()
        )]
    );
}

#[test]
fn pod_affinity_terms_need_a_topology_key_and_selectors_that_can_match() {
    for kind in ["podAffinity", "podAntiAffinity"] {
        let refused = placement(json!({"affinity": {kind: {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "",
                "labelSelector": {
                    "matchLabels": {"app": "bad value!"},
                    "matchExpressions": [
                        {"key": "a", "operator": "In"},
                        {"key": "b", "operator": "Exists", "values": ["x"]},
                        {"key": "c", "operator": "Gt", "values": ["1"]}
                    ]
                },
                "namespaceSelector": {"matchExpressions": [{"key": "d", "operator": "NotIn", "values": []}]}
            }],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 200, "podAffinityTerm": {"topologyKey": "bad key"}}
            ]
        }}}));
        let base = format!("spec.affinity.{kind}");
        let required = format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[0]");
        let preferred = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[0]");
        assert_eq!(
            refused,
            [
                (format!("{required}.labelSelector.matchLabels[app]"), "must be a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"bad value!\"".to_owned()),
                (format!("{required}.labelSelector.matchExpressions[0].values"), "must hold at least one value when the operator is In".to_owned()),
                (format!("{required}.labelSelector.matchExpressions[1].values"), "must be empty when the operator is Exists (it matches on the key alone), got [\"x\"]".to_owned()),
                (format!("{required}.labelSelector.matchExpressions[2].operator"), "must be In, NotIn, Exists or DoesNotExist, got \"Gt\"".to_owned()),
                (format!("{required}.namespaceSelector.matchExpressions[0].values"), "must hold at least one value when the operator is NotIn".to_owned()),
                (format!("{required}.topologyKey"), "must not be empty: it names the node label whose nodes count as one domain, such as kubernetes.io/hostname".to_owned()),
                (format!("{preferred}.weight"), "must be between 1 and 100, got 200".to_owned()),
                (format!("{preferred}.podAffinityTerm.topologyKey"), "must be a valid label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"bad key\"".to_owned()),
            ],
            "{kind}"
        );
    }
}

#[test]
fn tolerations_must_be_ones_the_api_server_accepts() {
    let toleration = |t: serde_json::Value| placement(json!({"tolerations": [t]}));
    for (t, field, says) in [
        (
            json!({"key": "a", "operator": "Exists", "value": "x"}),
            "value",
            "must be empty when the operator is Exists (it tolerates every value of the key), got \"x\"",
        ),
        (
            json!({"key": "a", "operator": "Matches", "value": "x"}),
            "operator",
            "must be Equal, Exists, Gt or Lt, got \"Matches\"",
        ),
        (
            json!({"key": "a", "value": "x", "effect": "NoRun"}),
            "effect",
            "must be NoSchedule, PreferNoSchedule or NoExecute (or empty for every effect), got \"NoRun\"",
        ),
        (
            json!({"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}),
            "tolerationSeconds",
            "needs effect NoExecute (it is how long a pod stays on a node tainted NoExecute), got effect \"NoSchedule\"",
        ),
        (
            json!({"key": "a", "operator": "Exists", "tolerationSeconds": 60}),
            "tolerationSeconds",
            "needs effect NoExecute (it is how long a pod stays on a node tainted NoExecute), got effect \"\"",
        ),
        (
            json!({"value": "x"}),
            "operator",
            "must be Exists when no key is given (a toleration of every taint), got \"Equal\"",
        ),
        (
            json!({"key": "a", "operator": "Lt", "value": "ten"}),
            "value",
            "must be an integer when the operator is Lt, got \"ten\"",
        ),
        (
            json!({"key": "a", "value": "not a label value"}),
            "value",
            "must be a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"not a label value\"",
        ),
        (
            json!({"key": "bad key", "operator": "Exists"}),
            "key",
            "must be a valid label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"bad key\"",
        ),
    ] {
        assert_eq!(
            toleration(t.clone()),
            [(format!("spec.tolerations[0].{field}"), says.to_owned())],
            "{t}"
        );
    }
}

#[test]
fn topology_spread_constraints_must_be_ones_the_scheduler_applies() {
    let selector = json!({"matchLabels": {"app": "r"}});
    let refused = placement(json!({"topologySpreadConstraints": [
        {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Sometimes", "labelSelector": selector},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2,
         "nodeAffinityPolicy": "Always", "labelSelector": selector},
        {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 0,
         "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector}
    ]}));
    let at = |i: usize, field: &str| format!("spec.topologySpreadConstraints[{i}]{field}");
    assert_eq!(
        refused,
        [
            (at(0, ".maxSkew"), "must be >= 1, got 0".to_owned()),
            (at(0, ".topologyKey"), "must not be empty: it names the node label whose nodes count as one domain, such as kubernetes.io/hostname".to_owned()),
            (at(0, ".whenUnsatisfiable"), "must be DoNotSchedule or ScheduleAnyway, got \"Sometimes\"".to_owned()),
            (at(1, ".minDomains"), "can only be set with whenUnsatisfiable DoNotSchedule, got \"ScheduleAnyway\"".to_owned()),
            (at(1, ".nodeAffinityPolicy"), "must be Honor or Ignore, got \"Always\"".to_owned()),
            (at(2, ".minDomains"), "must be >= 1, got 0".to_owned()),
            (at(2, ".labelSelector.matchExpressions[0].values"), "must hold at least one value when the operator is In".to_owned()),
            (at(3, ""), "repeats the topologyKey and whenUnsatisfiable of spec.topologySpreadConstraints[1] (\"zone\", \"ScheduleAnyway\"); merge them".to_owned()),
        ]
    );
}

#[test]
fn a_spread_constraint_without_a_selector_is_warned_about() {
    let v = Policy::default().validate_create(&redis(
        "cache",
        json!({"image": "redis:7", "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}
        ]}),
    ));
    assert!(v.allowed(), "{}", v.message());
    assert_eq!(
        v.other_warnings(),
        [
            "spec.topologySpreadConstraints[0].labelSelector: not set, so the constraint counts no pods and spreads nothing; select this Redis's pods, e.g. app.kubernetes.io/instance: cache"
        ]
    );
}

#[test]
fn a_replication_redis_held_on_one_node_is_warned_about() {
    let warns = |extra: serde_json::Value| Policy::default().validate_create(&replicated(extra));
    let one_node = |field: &str, how: &str| {
        format!(
            "{field}: {how}, so the 3 pods of this Replication Redis share one node: losing it loses the primary and every replica at once"
        )
    };
    let v = warns(json!({"nodeSelector": {"kubernetes.io/hostname": "n1"}}));
    assert!(v.allowed(), "{}", v.message());
    assert_eq!(
        v.other_warnings(),
        [one_node(
            "spec.nodeSelector[kubernetes.io/hostname]",
            "pins every pod to node \"n1\""
        )]
    );
    let required = |terms: serde_json::Value| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms
        }}}})
    };
    let pinned = one_node(
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        "allows node \"n1\" only",
    );
    for terms in [
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]),
        json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]),
        // Two terms naming the same node, and a term narrowed to one node by two requirements.
        json!([
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]},
            {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]},
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n3"]}
            ]}
        ]),
    ] {
        assert_eq!(
            warns(required(terms.clone())).other_warnings(),
            std::slice::from_ref(&pinned),
            "{terms}"
        );
    }
    for spread in [
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]}]}]),
        json!([
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]},
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["redis"]}]}
        ]),
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["n1"]}]}]),
    ] {
        assert!(
            warns(required(spread.clone())).other_warnings().is_empty(),
            "{spread}"
        );
    }
    // Required affinity to its own pods on the hostname: every pod follows the first.
    let together = |selector: serde_json::Value, namespaces: serde_json::Value| {
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": "kubernetes.io/hostname", "labelSelector": selector, "namespaces": namespaces
        }]}}})
    };
    let follows = one_node(
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
        "requires each pod on the node of another pod of this Redis (kubernetes.io/hostname)",
    );
    for selector in [
        json!({"matchLabels": {"app.kubernetes.io/instance": "r"}}),
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["r", "s"]}]}),
        json!({"matchLabels": {"app": "r"}, "matchExpressions": [{"key": "role", "operator": "DoesNotExist"}]}),
    ] {
        assert_eq!(
            warns(together(selector.clone(), json!(null))).other_warnings(),
            std::slice::from_ref(&follows),
            "{selector}"
        );
    }
    assert_eq!(
        warns(together(
            json!({"matchLabels": {"app": "r"}}),
            json!(["default"])
        ))
        .other_warnings(),
        [follows]
    );
    for (selector, namespaces) in [
        (json!({"matchLabels": {"app": "other"}}), json!(null)),
        (json!({"matchLabels": {"app": "r"}}), json!(["elsewhere"])),
    ] {
        assert!(
            warns(together(selector.clone(), namespaces))
                .other_warnings()
                .is_empty(),
            "{selector}"
        );
    }
    // One pod, or Standalone mode: nothing to keep apart.
    let pin = json!({"nodeSelector": {"kubernetes.io/hostname": "n1"}});
    let mut one = pin.clone();
    one["replicas"] = json!(1);
    assert_eq!(
        warns(one).other_warnings().len(),
        1,
        "only the one-pod warning"
    );
    let standalone = Policy::default().validate_create(&redis(
        "r",
        json!({"replicas": 3, "image": "redis:7", "nodeSelector": {"kubernetes.io/hostname": "n1"}}),
    ));
    assert!(
        standalone.other_warnings().is_empty(),
        "{:?}",
        standalone.other_warnings()
    );
}

#[test]
fn placement_violations_are_listed_with_the_others_and_ratcheted() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({
            "port": 6000,
            "nodeSelector": {"a": "b c"},
            "tolerations": [{"key": "a", "operator": "Exists", "value": "x"}],
            "priorityClassName": "High",
            "podLabels": {"app": "x"}
        }),
    ));
    assert_eq!(
        fields(&v),
        [
            "spec.port",
            "spec.nodeSelector[a]",
            "spec.tolerations[0].value",
            "spec.priorityClassName",
            "spec.podLabels[app]",
        ]
    );
    // Stored before these rules: an unchanged value passes with a warning, a new one is judged.
    let old = redis("r", json!({"podLabels": {"app": "x"}}));
    let v = Policy::default().validate_update(&old.clone(), &old);
    assert!(v.allowed(), "{}", v.message());
    let changed = redis(
        "r",
        json!({"podLabels": {"app": "x", "app.kubernetes.io/name": "y"}}),
    );
    assert_eq!(
        fields(&Policy::default().validate_update(&changed, &old)),
        ["spec.podLabels[app.kubernetes.io/name]"]
    );
}

#[test]
fn a_replication_primary_that_would_take_writes_cut_off_is_warned_about() {
    let warns = |extra: serde_json::Value| Policy::default().validate_create(&replicated(extra));
    let unbounded = |which: &str| {
        format!(
            "spec.replication.minReplicasToWrite: {which} lets a primary cut off from its replicas keep accepting writes, which a failover to a replica then discards; set it to 1 so that such a primary refuses writes after minReplicasMaxLag seconds (writes then also wait for a connected replica), or run 3 or more pods, where 1 is the default"
        )
    };
    // Two pods: the default is 0.
    assert_eq!(
        warns(json!({"replicas": 2})).warnings,
        [unbounded("0 (the default below 3 pods)")]
    );
    // Set to 0 by hand (or stored by an earlier webhook), whatever the count.
    assert_eq!(
        warns(json!({"replicas": 5, "replication": {"minReplicasToWrite": 0}})).warnings,
        [unbounded("0")]
    );
    // Bounded: nothing to say.
    for quiet in [
        json!({"replicas": 3}),
        json!({"replicas": 2, "replication": {"minReplicasToWrite": 1}}),
        json!({"replicas": 4, "replication": {"minReplicasToWrite": 2}}),
    ] {
        let v = warns(quiet.clone());
        assert!(v.warnings.is_empty(), "{quiet}: {:?}", v.warnings);
    }
    // One pod has no replica to lose writes to; Standalone mode has no failover.
    assert!(
        !warns(json!({"replicas": 1}))
            .warnings
            .iter()
            .any(|w| w.contains("cut off")),
    );
    let standalone = Policy::default().validate_create(&redis(
        "r",
        json!({"replicas": 2, "image": "redis:7", "replication": {"minReplicasToWrite": 0}}),
    ));
    assert!(
        !standalone.warnings.iter().any(|w| w.contains("cut off")),
        "{:?}",
        standalone.warnings
    );
    // The warning about a value above the replica count stays.
    assert_eq!(
        warns(json!({"replicas": 2, "replication": {"minReplicasToWrite": 2}})).warnings,
        [
            "spec.replication.minReplicasToWrite: 2 is more than the 1 replica(s) of 2 pods, so writes will be refused"
        ]
    );
}

/// A tenant's string as long as a request allows, with a newline and an ANSI escape sequence
/// that would recolour (or, in a log, forge lines of) whatever terminal shows a denial.
fn hostile(len: usize) -> String {
    let mut text = "evil\n\x1b[31m\u{202e}".to_owned();
    text.push_str(&"a".repeat(len - text.len()));
    text
}

fn assert_shown_safely(what: &str, text: &str, max_bytes: usize) {
    assert!(
        text.len() <= max_bytes,
        "{what}: {} bytes, more than {max_bytes}: {:?}",
        text.len(),
        text.chars().take(300).collect::<String>()
    );
    assert!(
        !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{what}: a control character is echoed raw: {text:?}"
    );
}

#[test]
fn a_huge_image_with_control_characters_is_denied_in_a_short_clean_message() {
    let v = Policy::default().validate_create(&redis("r", json!({"image": hostile(100 * 1024)})));
    assert!(!v.allowed());
    assert_shown_safely("denial", &v.message(), 1024);
    assert!(
        v.message().contains("…(102400 bytes)"),
        "the cut is marked with the value's size: {}",
        v.message()
    );
    assert!(
        v.message()
            .starts_with("spec.image: \"evil\\n\\u{1b}[31m\\u{202e}aaa")
    );
}

#[test]
fn every_echoed_tenant_value_is_cut_and_escaped() {
    let long = hostile(64 * 1024);
    let text = serde_json::Value::from(long.clone());
    let spec = json!({
        "image": text,
        "mode": "Replication",
        "replication": {"failoverAfter": text},
        "auth": {"secretRef": {"name": text, "key": text}},
        "podDisruptionBudget": {"maxUnavailable": text},
        "exporter": {"image": text},
        "nodeSelector": {long.clone(): text},
        "podLabels": {long.clone(): text, format!("app{long}"): "x"},
        "podAnnotations": {long.clone(): "x"},
        "priorityClassName": text,
        "tolerations": [{"key": "k", "operator": text, "effect": text},
                        {"key": "k", "operator": "Exists", "value": text}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": text,
                                       "whenUnsatisfiable": text}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": text, "operator": text, "values": [text, text]},
                {"key": "k", "operator": "Exists", "values": [text, text, text, text]}],
                "matchFields": [{"key": text, "operator": text}]}]}}}
    });
    let mut hostile_redis = redis("r", spec);
    hostile_redis.metadata.name = Some(long.clone());
    let v = Policy::default().validate_create(&hostile_redis);
    assert!(v.violations.len() > 15, "{}", v.violations.len());
    for violation in &v.violations {
        let line = violation.to_string();
        assert_shown_safely(&violation.field, &violation.field, 400);
        assert_shown_safely(&violation.field, &line, 2048);
    }
    for warning in &v.warnings {
        assert_shown_safely("warning", warning, 2048);
    }
}

// ---------------------------------------------------------------------------------------------
// spec.networkPolicy (§3j)

#[test]
fn network_policy_peers_the_api_server_would_refuse_are_refused() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"networkPolicy": {
            "allowedClients": [
                {},
                {"podSelector": {"matchLabels": {"app": "web"}}, "ipBlock": {"cidr": "10.0.0.0/8"}},
                {"ipBlock": {"cidr": "10.0.0.0/33"}},
                {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16", "10.0.0.0/8", "10.1.0.0/16"]}},
                {"podSelector": {"matchLabels": {"bad key!": "web"}}},
                {"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}},
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}},
                 "podSelector": {"matchLabels": {"app": "web"}}}
            ],
            "metricsFrom": [{"ipBlock": {"cidr": "fd00::/64"}}]
        }}),
    ));
    assert_eq!(
        fields(&v),
        [
            "spec.networkPolicy.allowedClients[0]",
            "spec.networkPolicy.allowedClients[1]",
            "spec.networkPolicy.allowedClients[2].ipBlock.cidr",
            "spec.networkPolicy.allowedClients[3].ipBlock.except[0]",
            "spec.networkPolicy.allowedClients[3].ipBlock.except[1]",
            "spec.networkPolicy.allowedClients[4].podSelector.matchLabels[bad key!]",
            "spec.networkPolicy.allowedClients[5].namespaceSelector.matchExpressions[0].values",
        ],
        "{}",
        v.message()
    );
    assert!(
        v.message()
            .contains("must be a strict subset of cidr 10.0.0.0/8"),
        "{}",
        v.message()
    );
}

#[test]
fn more_peers_than_the_operator_writes_are_refused_even_with_the_policy_off() {
    let peers: Vec<_> = (0..33)
        .map(|i| json!({"ipBlock": {"cidr": format!("10.0.{i}.0/24")}}))
        .collect();
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"networkPolicy": {"enabled": false, "allowedClients": peers}}),
    ));
    assert_eq!(fields(&v), ["spec.networkPolicy.allowedClients"]);
    assert!(
        v.message().contains("at most 32 peers, got 33"),
        "{}",
        v.message()
    );
}

#[test]
fn who_can_connect_is_warned_about() {
    let warns = |spec: serde_json::Value| {
        Policy::default()
            .validate_create(&redis("r", spec))
            .warnings
            .into_iter()
            .filter(|w| w.starts_with("spec.networkPolicy"))
            .collect::<Vec<_>>()
    };
    // Neither auth nor a policy: anyone in the cluster reads and writes.
    let open = warns(json!({}));
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(open[0].contains("any pod in the cluster can connect to port 6379"));
    assert_eq!(warns(json!({"networkPolicy": {"enabled": false}})), open);
    // Replication mode's own warning about auth says it there (once).
    assert!(warns(json!({"mode": "Replication", "replicas": 3})).is_empty());
    // With auth and no policy: quiet (today's behaviour, the password guards it).
    let auth = json!({"name": "pw"});
    assert!(warns(json!({"auth": {"secretRef": auth}})).is_empty());
    // A policy without clients: only the operator and the Redis's pods get through.
    let closed = warns(json!({"auth": {"secretRef": auth}, "networkPolicy": {}}));
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert!(closed[0].contains("allowedClients is empty"));
    let clients = json!([{"podSelector": {"matchLabels": {"app": "web"}}}]);
    assert!(warns(json!({"networkPolicy": {"allowedClients": clients}})).is_empty());
    // Metrics: settings without an exporter do nothing; an exporter nobody may scrape.
    let prometheus = json!([{"namespaceSelector": {"matchLabels": {"team": "obs"}}}]);
    let idle =
        warns(json!({"networkPolicy": {"allowedClients": clients, "metricsFrom": prometheus}}));
    assert_eq!(idle.len(), 1, "{idle:?}");
    assert!(idle[0].contains("no exporter runs"));
    let unscraped = warns(json!({"exporter": {}, "networkPolicy": {"allowedClients": clients}}));
    assert_eq!(unscraped.len(), 1, "{unscraped:?}");
    assert!(unscraped[0].contains("nothing can scrape the exporter's port 9121"));
    assert!(
        warns(json!({"exporter": {}, "networkPolicy": {"allowedClients": clients, "metricsFrom": prometheus}}))
            .is_empty()
    );
}

// spec.tls (§3k)

#[test]
fn tls_needs_a_secret_name_a_secret_can_have() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"tls": {"secretRef": {"name": "Bad_Name"}}}),
    ));
    assert_eq!(fields(&v), ["spec.tls.secretRef.name"]);
    assert!(
        v.message().contains("must be a valid Secret name"),
        "{}",
        v.message()
    );

    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"tls": {"secretRef": {"name": "redis-tls"}, "clientAuth": "Required"}}),
    ));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
}

#[test]
fn a_plaintext_port_must_be_a_port_of_its_own_within_the_bounds_of_spec_port() {
    let tls = |port: i32, exporter: bool| {
        let mut spec =
            json!({"port": 6379, "tls": {"secretRef": {"name": "t"}, "plaintextPort": port}});
        if exporter {
            spec["exporter"] = json!({});
        }
        Policy::default().validate_create(&redis("r", spec))
    };
    let low = tls(6000, false);
    assert_eq!(fields(&low), ["spec.tls.plaintextPort"]);
    assert!(
        low.message().contains("must be >= 6379, got 6000"),
        "{}",
        low.message()
    );
    let same = tls(6379, false);
    assert!(
        same.message().contains("must differ from spec.port"),
        "{}",
        same.message()
    );
    let metrics = tls(9121, true);
    assert!(
        metrics
            .message()
            .contains("must differ from spec.exporter.port"),
        "{}",
        metrics.message()
    );
    assert!(tls(9121, false).allowed());

    let open = tls(6380, false);
    assert!(open.allowed(), "{}", open.message());
    assert_eq!(
        open.other_warnings(),
        [
            "spec.tls.plaintextPort: port 6380 serves Redis without TLS; the data cross the network in clear there"
        ]
    );
}

#[test]
fn tls_client_auth_takes_only_its_three_values() {
    let decoded: Result<RedisSpec, _> = serde_json::from_value(
        json!({"tls": {"secretRef": {"name": "t"}, "clientAuth": "Sometimes"}}),
    );
    assert!(decoded.is_err());
}

#[test]
fn tls_is_not_turned_on_or_off_under_running_replication() {
    let plain = redis("r", json!({"mode": "Replication", "replicas": 3}));
    let tls = redis(
        "r",
        json!({"mode": "Replication", "replicas": 3, "tls": {"secretRef": {"name": "t"}}}),
    );
    let on = Policy::default().validate_update(&tls, &plain);
    assert_eq!(fields(&on), ["spec.tls"]);
    assert!(
        on.message()
            .contains("cannot be added to a Replication Redis"),
        "{}",
        on.message()
    );
    let off = Policy::default().validate_update(&plain, &tls);
    assert!(
        off.message().contains("cannot be removed from"),
        "{}",
        off.message()
    );

    // One pod, or Standalone: each pod is replaced on its own.
    let single = redis("r", json!({"mode": "Replication", "replicas": 1}));
    let single_tls = redis(
        "r",
        json!({"mode": "Replication", "replicas": 1, "tls": {"secretRef": {"name": "t"}}}),
    );
    assert!(
        Policy::default()
            .validate_update(&single_tls, &single)
            .allowed()
    );
    let standalone = redis("r", json!({"replicas": 3}));
    let standalone_tls = redis(
        "r",
        json!({"replicas": 3, "tls": {"secretRef": {"name": "t"}}}),
    );
    assert!(
        Policy::default()
            .validate_update(&standalone_tls, &standalone)
            .allowed()
    );

    let moved = redis(
        "r",
        json!({"mode": "Replication", "replicas": 3, "tls": {"secretRef": {"name": "u"}}}),
    );
    let v = Policy::default().validate_update(&moved, &tls);
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.other_warnings()
            .iter()
            .any(|w| w.starts_with("spec.tls.secretRef.name")),
        "{:?}",
        v.warnings
    );
}

// spec.acl (§3l)

fn acl_redis(acl: serde_json::Value) -> Redis {
    redis(
        "r",
        json!({"auth": {"secretRef": {"name": "pw"}}, "acl": acl}),
    )
}

#[test]
fn acl_users_with_rules_redis_takes_are_accepted() {
    let v = Policy::default().validate_create(&acl_redis(json!({
        "defaultUser": "Disabled",
        "users": [
            {"name": "reader", "rules": "~cache:* +@read", "passwordSecretRef": {"name": "reader-pw"}},
            {"name": "app.v2", "rules": "~app:* (%R~shared:* +get) +@all -flushall",
             "passwordSecretRef": {"name": "app-pw", "key": "secret"}},
        ],
    })));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
}

#[test]
fn acl_refuses_reserved_and_repeated_names_bad_rules_and_bad_secrets_at_once() {
    let v = Policy::default().validate_create(&acl_redis(json!({"users": [
        {"name": "redis-operator", "rules": "+get", "passwordSecretRef": {"name": "s"}},
        {"name": "app", "rules": "~* ~cache:*", "passwordSecretRef": {"name": "s"}},
        {"name": "app", "rules": ">hunter2 +get", "passwordSecretRef": {"name": "Bad_Name"}},
    ]})));
    assert_eq!(
        fields(&v),
        [
            "spec.acl.users[0].name",
            "spec.acl.users[1].rules",
            "spec.acl.users[2].name",
            "spec.acl.users[2].rules",
            "spec.acl.users[2].passwordSecretRef.name",
        ]
    );
    let message = v.message();
    for expected in [
        "is reserved",
        "has no effect; Redis refuses it",
        "listed twice",
        "the password comes from passwordSecretRef",
        "must be a valid Secret name",
    ] {
        assert!(message.contains(expected), "{expected}: {message}");
    }
    // The password never appears in what the webhook says.
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn acl_warns_of_unknown_categories_and_of_a_redis_nobody_can_log_in_to() {
    let v = Policy::default().validate_create(&acl_redis(json!({
        "defaultUser": "Disabled",
        "users": [{"name": "s", "rules": "+@search", "passwordSecretRef": {"name": "p"}}],
    })));
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.other_warnings()
            .iter()
            .any(|w| w.contains("@search not a category of Redis 7")),
        "{:?}",
        v.other_warnings()
    );
    let v = Policy::default().validate_create(&acl_redis(json!({"defaultUser": "Disabled"})));
    assert!(
        v.other_warnings()
            .iter()
            .any(|w| w.contains("no client can log in")),
        "{:?}",
        v.other_warnings()
    );
}

#[test]
fn acl_is_not_removed_while_running_replicas_refuse_the_default_user() {
    let with = |acl: serde_json::Value| {
        let mut spec = json!({"mode": "Replication", "replicas": 3,
            "auth": {"secretRef": {"name": "pw"}}});
        if !acl.is_null() {
            spec["acl"] = acl;
        }
        redis("r", spec)
    };
    let locked = with(json!({"defaultUser": "Disabled"}));
    let open = with(json!({}));
    let none = with(serde_json::Value::Null);
    let removed = Policy::default().validate_update(&none, &locked);
    assert_eq!(fields(&removed), ["spec.acl"]);
    assert!(
        removed
            .message()
            .contains("set defaultUser to Enabled first"),
        "{}",
        removed.message()
    );
    assert!(Policy::default().validate_update(&none, &open).allowed());
    assert!(Policy::default().validate_update(&open, &locked).allowed());
    assert!(Policy::default().validate_update(&locked, &none).allowed());
}

#[test]
fn config_refuses_unknown_owned_duplicate_and_misshapen_directives_listing_each() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"config": {
            "maxmemory-policy": "allkeys-lru",
            "notify-keyspace-events": "Ex",
            "save": "",
            "no-such-directive": "1",
            "rename-command": "FLUSHALL \"\"",
            "requirepass": "hunter2",
            "tls-port": "6380",
            "replicaof": "10.0.0.1 6379",
            "dir": "/tmp",
            "maxmemory": "lots",
            "databases": "0",
            "slave-read-only": "no",
            "replica-read-only": "yes"
        }}),
    ));
    let refused: Vec<&str> = fields(&v);
    assert_eq!(
        refused,
        [
            "spec.config[databases]",
            "spec.config[dir]",
            "spec.config[maxmemory]",
            "spec.config[no-such-directive]",
            "spec.config[rename-command]",
            "spec.config[replicaof]",
            "spec.config[requirepass]",
            "spec.config[slave-read-only]",
            "spec.config[tls-port]",
        ],
        "{}",
        v.message()
    );
    let message = v.message();
    assert!(
        message.contains(
            "spec.config[rename-command]: not settable here: restrict commands with ACL users"
        ),
        "{message}"
    );
    assert!(
        message.contains("spec.config[requirepass]: is set by the operator"),
        "{message}"
    );
    assert!(
        message.contains("spec.config[maxmemory]: must be a size in bytes"),
        "{message}"
    );
    assert!(
        message.contains("is the same directive as replica-read-only"),
        "{message}"
    );
    assert!(
        !message.contains("hunter2"),
        "a refused owned directive's value is not echoed"
    );
}

#[test]
fn config_appendonly_is_the_storage_s_when_storage_is_set() {
    let plain = redis("r", json!({"config": {"appendonly": "yes"}}));
    assert!(Policy::default().validate_create(&plain).allowed());
    let stored = redis(
        "r",
        json!({"storage": {"size": "1Gi"}, "config": {"appendonly": "yes"}}),
    );
    let v = Policy::default().validate_create(&stored);
    assert_eq!(fields(&v), ["spec.config[appendonly]"], "{}", v.message());
}

#[test]
fn maxmemory_above_the_limit_and_a_percent_nothing_uses_warn() {
    let warned = |spec| {
        Policy::default()
            .validate_create(&redis("r", spec))
            .other_warnings()
    };
    let over = warned(json!({
        "resources": {"limits": {"memory": "128Mi"}},
        "config": {"maxmemory": "1gb"}
    }));
    assert!(over.iter().any(|w| w.contains("OOMKilled")), "{over:?}");
    assert!(
        warned(
            json!({"resources": {"limits": {"memory": "128Mi"}}, "config": {"maxmemory": "64mb"}})
        )
        .is_empty()
    );
    let unused = warned(json!({"maxMemoryPercentOfLimit": 70}));
    assert!(
        unused.iter().any(|w| w.contains("no memory limit")),
        "{unused:?}"
    );
    let high =
        warned(json!({"resources": {"limits": {"memory": "1Gi"}}, "maxMemoryPercentOfLimit": 95}));
    assert!(high.iter().any(|w| w.contains("95%")), "{high:?}");
    let v = Policy::default().validate_create(&redis("r", json!({"maxMemoryPercentOfLimit": 0})));
    assert_eq!(fields(&v), ["spec.maxMemoryPercentOfLimit"]);
}

#[test]
fn service_settings_only_where_their_type_takes_them_with_valid_keys_and_cidrs() {
    let ok = Policy::default().validate_create(&redis(
        "r",
        json!({"service": {"type": "LoadBalancer", "annotations": {"example.com/lb": "internal"},
                           "loadBalancerSourceRanges": ["10.0.0.0/8", "fd00::/64"],
                           "externalTrafficPolicy": "Local"}}),
    ));
    assert!(ok.allowed(), "{}", ok.message());
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"service": {"type": "NodePort",
                           "annotations": {"myapp.tangx.in/x": "1", "bad key!": "2"},
                           "loadBalancerSourceRanges": ["10.0.0.0/33"]}}),
    ));
    assert_eq!(
        fields(&v),
        [
            "spec.service.annotations[bad key!]",
            "spec.service.annotations[myapp.tangx.in/x]",
            "spec.service.loadBalancerSourceRanges",
            "spec.service.loadBalancerSourceRanges[0]",
        ],
        "{}",
        v.message()
    );
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"service": {"externalTrafficPolicy": "Local"}}),
    ));
    assert_eq!(fields(&v), ["spec.service.externalTrafficPolicy"]);
    let open =
        Policy::default().validate_create(&redis("r", json!({"service": {"type": "NodePort"}})));
    assert!(
        open.other_warnings().iter().any(|w| w.contains("no auth")),
        "{:?}",
        open.warnings
    );
}

#[test]
fn the_name_must_name_every_service_the_redis_gets() {
    let create =
        |name: &str, spec: serde_json::Value| Policy::default().validate_create(&redis(name, spec));
    // Kubernetes takes these as Redis names (DNS-1123 subdomains), but not as Service names.
    for name in ["1cache", "my.cache"] {
        let v = create(name, json!({}));
        assert_eq!(fields(&v), ["metadata.name"], "{name}");
        assert!(v.message().contains("DNS-1035"), "{}", v.message());
    }
    // <name>-headless and <name>-replicas must fit in 63 characters in Replication mode.
    let (fits, long) = ("a".repeat(54), "a".repeat(55));
    assert!(create(&fits, json!({"mode": "Replication"})).allowed());
    assert!(
        create(&long, json!({})).allowed(),
        "Standalone has only <name>"
    );
    let v = create(&long, json!({"mode": "Replication"}));
    assert_eq!(fields(&v), ["metadata.name"]);
    assert!(
        v.message().contains("<name>-headless fits in 63"),
        "{}",
        v.message()
    );
    // perPod: <name>-99 with the default maximum of 100 replicas, whatever spec.replicas is now.
    let per_pod = json!({"replicas": 1, "service": {"perPod": true}});
    assert!(create(&"a".repeat(60), per_pod.clone()).allowed());
    let v = create(&"a".repeat(61), per_pod.clone());
    assert!(
        v.message().contains("<name>-99 fits in 63"),
        "{}",
        v.message()
    );
    let few = Policy {
        max_replicas: 5,
        ..Policy::default()
    };
    assert!(
        few.validate_create(&redis(&"a".repeat(61), per_pod))
            .allowed(),
        "<name>-4"
    );
    // A generated name leaves room for the API server's five characters too.
    let mut r = redis("", json!({"mode": "Replication"}));
    r.metadata.name = None;
    r.metadata.generate_name = Some(format!("{}-", "a".repeat(48)));
    assert!(Policy::default().validate_create(&r).allowed());
    r.metadata.generate_name = Some(format!("{}-", "a".repeat(49)));
    assert_eq!(
        fields(&Policy::default().validate_create(&r)),
        ["metadata.generateName"]
    );
    r.metadata.generate_name = Some("9-".into());
    assert_eq!(
        fields(&Policy::default().validate_create(&r)),
        ["metadata.generateName"]
    );
}

#[test]
fn a_stored_name_its_services_cannot_take_still_takes_updates() {
    // Stored before the rule: its finalizer can still be removed, and it can be fixed.
    let old = redis("my.cache", json!({}));
    let mut new = old.clone();
    new.metadata.finalizers = Some(vec![]);
    let v = Policy::default().validate_update(&new, &old);
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.warnings.iter().any(|w| w.contains("DNS-1035")),
        "{:?}",
        v.warnings
    );
}
