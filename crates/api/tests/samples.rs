//! The samples in deploy/samples/ do what their comments promise, as far as the shared rules
//! decide it (the e2e suite proves the same against a real API server and webhook).

use api::{Mode, Policy, Redis};
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;

fn sample_path(name: &str) -> PathBuf {
    // The runtime value first: a target dir shared between clones may not recompile this test.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
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

/// Every YAML document of a sample file.
/// The sample's Redis, and what the webhook says of its creation.
fn the_redis(docs: &[Value]) -> (Redis, api::Verdict) {
    let redis: Redis = serde_json::from_value(
        docs.iter()
            .find(|d| d["kind"] == "Redis")
            .cloned()
            .expect("a Redis"),
    )
    .expect("Redis decodes");
    let verdict = Policy::default().validate_create(&redis);
    (redis, verdict)
}

fn documents(name: &str) -> Vec<Value> {
    let path = sample_path(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_norway::Deserializer::from_str(&text)
        .map(|doc| {
            Value::deserialize(doc).unwrap_or_else(|e| panic!("decode {}: {e}", path.display()))
        })
        .collect()
}

#[test]
fn the_replication_sample_is_valid_quiet_and_brings_its_secret() {
    let docs = documents("redis-replication.yaml");
    let of_kind = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("redis-replication.yaml has no {kind}"))
    };
    let redis: Redis = serde_json::from_value(of_kind("Redis").clone()).expect("Redis decodes");
    assert_eq!(redis.spec.mode(), Mode::Replication);
    assert_eq!(redis.spec.replicas(), 3);
    let verdict = Policy::default().validate_create(&redis);
    assert!(verdict.allowed(), "{}", verdict.message());
    assert!(verdict.warnings.is_empty(), "{:?}", verdict.warnings);

    // The Secret it names, with the key it reads (after defaulting).
    let (name, key) = redis.spec.auth_secret().expect("auth is set");
    let secret = of_kind("Secret");
    assert_eq!(secret["apiVersion"], "v1");
    assert_eq!(secret["metadata"]["name"], name);
    assert!(
        secret["stringData"][key]
            .as_str()
            .is_some_and(|p| !p.is_empty()),
        "the Secret has a {key:?} entry"
    );
    assert!(
        redis.spec.with_defaults().auth_secret() == Some((name, "password")),
        "the sample relies on the default key"
    );
}

#[test]
fn the_backup_sample_is_valid_and_restores_from_its_own_backup() {
    let docs = documents("redis-backup.yaml");
    let redis: Vec<Redis> = docs
        .iter()
        .filter(|d| d["kind"] == "Redis")
        .map(|d| serde_json::from_value(d.clone()).expect("Redis decodes"))
        .collect();
    assert_eq!(redis.len(), 2);
    for r in &redis {
        let verdict = Policy::default().validate_create(r);
        assert!(verdict.allowed(), "{}", verdict.message());
    }
    let backup: api::RedisBackup = serde_json::from_value(
        docs.iter()
            .find(|d| d["kind"] == "RedisBackup")
            .cloned()
            .expect("a RedisBackup"),
    )
    .expect("RedisBackup decodes");
    assert_eq!(backup.spec.redis_name, "my-saved-redis");
    let restore = redis[1].spec.restore.as_ref().expect("restore");
    assert_eq!(
        restore.backup_name.as_deref(),
        backup.metadata.name.as_deref()
    );
    let secret = docs
        .iter()
        .find(|d| d["kind"] == "Secret")
        .expect("the credentials");
    let destination = &redis[0].spec.backup.as_ref().expect("backup").destination;
    assert_eq!(
        secret["metadata"]["name"],
        destination.s3.credentials_secret_ref.name.as_str()
    );
    for key in [
        api::backup::ACCESS_KEY_ID_KEY,
        api::backup::SECRET_ACCESS_KEY_KEY,
    ] {
        assert!(secret["stringData"][key].is_string(), "{key}");
    }
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
        (
            "invalid/replication-without-pods.yaml",
            "spec.replicas",
            "must be >= 1 in Replication mode (one pod is the primary), got 0",
            "spec.replicas: must be >= 1 in Replication mode (one pod is the primary), got 0",
        ),
        (
            "invalid/failover-after-too-long.yaml",
            "spec.replication.failoverAfter",
            "must be between 1s and 1h, got \"2h\"",
            "spec.replication.failoverAfter: must be between 1s and 1h, got \"2h\"",
        ),
        (
            "invalid/auth-secret-name-invalid.yaml",
            "spec.auth.secretRef.name",
            "must be a valid Secret name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"Redis_Auth\"",
            "spec.auth.secretRef.name: must be a valid Secret name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"Redis_Auth\"",
        ),
        (
            "invalid/max-unavailable-over-100-percent.yaml",
            "spec.podDisruptionBudget.maxUnavailable",
            "must be a number >= 0 or a percentage between \"0%\" and \"100%\", got \"150%\"",
            "spec.podDisruptionBudget.maxUnavailable: must be a number >= 0 or a percentage between \"0%\" and \"100%\", got \"150%\"",
        ),
        (
            "invalid/config-directive-the-operator-sets.yaml",
            "spec.config[requirepass]",
            "is set by the operator: the password is spec.auth's (or spec.acl's users)",
            "spec.config[requirepass]: is set by the operator: the password is spec.auth's (or spec.acl's users)",
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

#[test]
fn every_invalid_sample_is_checked() {
    let dir = sample_path("invalid");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let source = include_str!("samples.rs");
    for file in files {
        assert!(
            source.contains(&format!("\"invalid/{file}\"")),
            "deploy/samples/invalid/{file} is not checked by each_invalid_sample_is_refused_for_the_reason_its_comment_gives"
        );
    }
}

#[test]
fn the_persistence_sample_is_valid_quiet_and_keeps_scaled_down_data() {
    let redis = load("redis-persistent.yaml");
    let verdict = Policy::default().validate_create(&redis);
    assert!(verdict.allowed(), "{}", verdict.message());
    assert!(verdict.warnings.is_empty(), "{:?}", verdict.warnings);
    let storage = redis.spec.storage.as_ref().expect("storage is set");
    assert!(storage.append_only());
    assert_eq!(storage.when_deleted(), api::RetentionPolicy::Delete);
    assert_eq!(storage.when_scaled(), api::RetentionPolicy::Retain);
}

#[test]
fn the_metrics_sample_is_valid_quiet_and_brings_its_secret() {
    let docs = documents("redis-metrics.yaml");
    let (redis, verdict) = the_redis(&docs);
    assert!(verdict.allowed(), "{}", verdict.message());
    assert!(verdict.warnings.is_empty(), "{:?}", verdict.warnings);
    assert_eq!(redis.spec.exporter().map(|e| e.port()), Some(9121));
    let (name, _) = redis.spec.auth_secret().expect("auth is set");
    assert!(
        docs.iter()
            .any(|d| d["kind"] == "Secret" && d["metadata"]["name"] == name)
    );
}

#[test]
fn the_tls_sample_is_valid_quiet_and_its_certificate_names_what_the_operator_checks() {
    let docs = documents("redis-tls.yaml");
    let (redis, verdict) = the_redis(&docs);
    assert!(verdict.allowed(), "{}", verdict.message());
    assert!(verdict.warnings.is_empty(), "{:?}", verdict.warnings);
    let tls = redis.spec.tls.as_ref().expect("spec.tls");
    let name = redis.metadata.name.as_deref().expect("a name");
    let certificate = docs
        .iter()
        .find(|d| d["kind"] == "Certificate" && d["spec"]["secretName"] == tls.secret_ref.name)
        .expect("the Certificate of spec.tls's Secret");
    let dns: Vec<&str> = certificate["spec"]["dnsNames"]
        .as_array()
        .expect("dnsNames")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        dns.contains(&api::tls::server_name(name, "default").as_str()),
        "{dns:?}"
    );
}

#[test]
fn the_acl_sample_is_valid_and_quiet() {
    let docs = documents("redis-acl.yaml");
    let (redis, verdict) = the_redis(&docs);
    assert!(verdict.allowed(), "{}", verdict.message());
    assert!(verdict.warnings.is_empty(), "{:?}", verdict.warnings);
    let acl = redis.spec.acl.as_ref().expect("spec.acl");
    for user in &acl.users {
        let (secret, _) = user.secret();
        assert!(
            docs.iter()
                .any(|d| d["kind"] == "Secret" && d["metadata"]["name"] == secret),
            "no Secret {secret} for user {}",
            user.name
        );
    }
}

#[test]
fn the_config_sample_is_valid_quiet_and_derives_maxmemory_from_its_limit() {
    let docs = documents("redis-config.yaml");
    let (redis, verdict) = the_redis(&docs);
    assert!(verdict.allowed(), "{}", verdict.message());
    assert!(verdict.warnings.is_empty(), "{:?}", verdict.warnings);
    let settings: Vec<(&str, String)> = api::config::settings(&redis.spec)
        .into_iter()
        .map(|s| (s.name, s.value))
        .collect();
    assert!(
        settings.contains(&("maxmemory", (256u64 * 1024 * 1024 * 80 / 100).to_string())),
        "{settings:?}"
    );
    assert_eq!(settings.len(), 4, "{settings:?}");
}
