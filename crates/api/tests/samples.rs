//! The samples in deploy/samples/ do what their comments promise, as far as the shared rules
//! decide it (the e2e suite proves the same against a real API server and webhook).

use api::{Policy, Redis};
use std::path::{Path, PathBuf};

fn sample_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/samples")
        .join(name)
}

fn load(name: &str) -> Redis {
    let path = sample_path(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("decode {}: {e}", path.display()))
}

#[test]
fn the_tutorial_sample_is_valid_and_unchanged() {
    let redis = load("redis.yaml");
    assert_eq!(redis.metadata.name.as_deref(), Some("my-op-redis"));
    assert_eq!(redis.spec.replicas, Some(2));
    assert_eq!(redis.spec.image.as_deref(), Some("redis:5-alpine"));
    assert_eq!(redis.spec.port, Some(8333));
    let verdict = Policy::default().validate_create(&redis);
    assert!(verdict.allowed(), "{}", verdict.message());
}

#[test]
fn each_invalid_sample_is_refused_for_the_reason_its_comment_gives() {
    // (sample, field, what the webhook would say, what the sample's comment quotes)
    for (file, field, says, quoted) in [
        (
            "invalid/port-below-schema-minimum.yaml",
            "spec.port",
            "must be >= 6379, got 1000",
            "should be greater than or equal to 1234",
        ),
        (
            "invalid/port-below-webhook-minimum.yaml",
            "spec.port",
            "must be >= 6379, got 6000",
            "spec.port: must be >= 6379, got 6000",
        ),
        (
            "invalid/reserved-name.yaml",
            "metadata.name",
            "\"tangx-in\" is a reserved name",
            "metadata.name: \"tangx-in\" is a reserved name",
        ),
    ] {
        let verdict = Policy::default().validate_create(&load(file));
        assert_eq!(verdict.violations.len(), 1, "{file}: {}", verdict.message());
        assert_eq!(verdict.violations[0].field, field, "{file}");
        assert_eq!(verdict.violations[0].message, says, "{file}");
        let comment = std::fs::read_to_string(sample_path(file)).unwrap_or_default();
        assert!(
            comment.contains(quoted),
            "{file}'s comment should quote {quoted:?}"
        );
    }
}
