//! Admission rules (DESIGN §2): what the validating webhook refuses, and what it warns about.
//!
//! Every rule reports the field path and a message a `kubectl` user can act on, and a denial
//! lists every violated rule at once. Rules read the effective spec (defaults applied), since
//! that is what the controller will run.

use crate::DELETION_PROTECTION_ANNOTATION;
use crate::types::Redis;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use oci_spec::distribution::Reference;
use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};

/// Longest `Redis` name: it becomes the value of pod labels, which are limited to 63 characters.
pub const MAX_NAME_LENGTH: usize = 63;
/// Characters the API server appends to `metadata.generateName`.
const GENERATED_SUFFIX_LENGTH: usize = 5;
/// The schema's port bounds (the tutorial's markers), repeated here so callers other than the
/// API server get the same answer.
pub const SCHEMA_MIN_PORT: i32 = 1234;
pub const SCHEMA_MAX_PORT: i32 = 54321;
/// The schema's hard ceiling on `spec.replicas`, enforced by the API server even when the
/// webhook is bypassed (down with `failurePolicy: Ignore`, or a write it is not sent). It bounds
/// what the controller can be asked to plan: 100x the webhook's default `--max-replicas`, so
/// no policy a user would choose is capped by it, yet `kubectl scale --replicas=2147483647`
/// cannot make the planner build billions of actions.
pub const SCHEMA_MAX_REPLICAS: i32 = 10_000;

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

/// One broken rule: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Field path as kubectl users write it, e.g. `spec.port`.
    pub field: String,
    pub message: String,
    /// The effective value the rule judged (default applied), as the update ratchet compares it.
    pub value: String,
}

impl Violation {
    fn new(field: impl Into<String>, value: impl ToString, message: impl Into<String>) -> Self {
        Violation {
            field: field.into(),
            message: message.into(),
            value: value.to_string(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
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
        let protected = old
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DELETION_PROTECTION_ANNOTATION))
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let mut verdict = Verdict::default();
        if protected {
            let name = old.metadata.name.as_deref().unwrap_or("<name>");
            verdict.violations.push(Violation::new(
                format!("metadata.annotations[{DELETION_PROTECTION_ANNOTATION}]"),
                "true",
                format!(
                    "deletion is refused while this annotation is \"true\" \
                     (remove it first: kubectl annotate redis/{name} {DELETION_PROTECTION_ANNOTATION}-)"
                ),
            ));
        }
        verdict
    }

    fn object_violations(&self, redis: &Redis, image: &ParsedImage) -> Vec<Violation> {
        let mut violations = self.name_violations(&redis.metadata);
        violations.extend(self.spec_violations(redis, image));
        violations
    }

    fn name_violations(&self, meta: &ObjectMeta) -> Vec<Violation> {
        let mut violations = Vec::new();
        match (
            meta.name.as_deref().filter(|n| !n.is_empty()),
            meta.generate_name.as_deref(),
        ) {
            (Some(name), _) => {
                if self.reserved_names.iter().any(|reserved| reserved == name) {
                    violations.push(Violation::new(
                        "metadata.name",
                        name,
                        format!("\"{name}\" is a reserved name"),
                    ));
                }
                if name.len() > MAX_NAME_LENGTH {
                    violations.push(Violation::new(
                        "metadata.name",
                        name,
                        format!(
                            "must be no more than {MAX_NAME_LENGTH} characters (it becomes a pod label value), got {}",
                            name.len()
                        ),
                    ));
                }
            }
            (None, Some(prefix)) if prefix.len() + GENERATED_SUFFIX_LENGTH > MAX_NAME_LENGTH => {
                violations.push(Violation::new(
                    "metadata.generateName",
                    prefix,
                    format!(
                        "must be no more than {} characters so the generated name fits in {MAX_NAME_LENGTH}, got {}",
                        MAX_NAME_LENGTH - GENERATED_SUFFIX_LENGTH,
                        prefix.len()
                    ),
                ));
            }
            (None, _) => {}
        }
        violations
    }

    fn spec_violations(&self, redis: &Redis, image: &ParsedImage) -> Vec<Violation> {
        let spec = &redis.spec;
        let mut violations = Vec::new();
        let defaulted = |set: bool| if set { "" } else { " (the default)" };

        violations.extend(self.replicas_violations(spec.replicas(), spec.replicas.is_some()));

        if let Err(reason) = image {
            violations.push(Violation::new("spec.image", spec.image(), reason.clone()));
        }

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

/// What the rules need from `spec.image`: whether it is a valid reference and, if so, whether
/// it means the `latest` tag; otherwise why not.
type ParsedImage = Result<ImageFacts, String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ImageFacts {
    /// Tagged `latest`, or untagged (which means `latest`), and not pinned by digest.
    latest: bool,
}

/// Parses an image reference the way container runtimes do (distribution's grammar), with a
/// message naming the image when it is not one.
///
/// The grammar is a large regex, about 1 µs a match, most of a review's decision time, and a
/// cluster uses few distinct images: answers are remembered. Only short strings are (a valid
/// reference is at most a few hundred bytes), and the memory is emptied when full, so it stays
/// bounded whatever clients send.
fn parse_image(image: &str) -> ParsedImage {
    const REMEMBERED_IMAGES: usize = 512;
    const REMEMBERED_LENGTH: usize = 512;
    static SEEN: LazyLock<Mutex<HashMap<String, ParsedImage>>> = LazyLock::new(Mutex::default);

    let remember = image.len() <= REMEMBERED_LENGTH;
    if remember
        && let Ok(seen) = SEEN.lock()
        && let Some(parsed) = seen.get(image)
    {
        return parsed.clone();
    }
    let parsed = parse_image_uncached(image);
    if remember && let Ok(mut seen) = SEEN.lock() {
        if seen.len() >= REMEMBERED_IMAGES {
            seen.clear();
        }
        seen.insert(image.to_owned(), parsed.clone());
    }
    parsed
}

fn parse_image_uncached(image: &str) -> ParsedImage {
    if image.is_empty() {
        return Err("must not be empty".to_owned());
    }
    let reference = image
        .parse::<Reference>()
        .map_err(|e| format!("\"{image}\" is not a valid image reference: {e}"))?;
    Ok(ImageFacts {
        latest: reference.digest().is_none() && reference.tag() == Some("latest"),
    })
}

/// Allowed but unwise: reported as admission warnings (kubectl prints them).
fn warnings(redis: &Redis, parsed: &ParsedImage) -> Vec<String> {
    let spec = &redis.spec;
    let mut warnings = Vec::new();
    let image = spec.image();
    if let Ok(ImageFacts { latest: true }) = parsed {
        let how = if image.ends_with(":latest") {
            "uses the :latest tag"
        } else {
            "has no tag, so it means :latest"
        };
        warnings.push(format!(
            "spec.image: \"{image}\" {how}; pods created at different times may run different Redis versions, pin a version"
        ));
    }
    if spec.replicas == Some(0) {
        warnings.push("spec.replicas: 0 runs no Redis pods".to_owned());
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn fields(v: &Verdict) -> Vec<&str> {
        v.violations.iter().map(|v| v.field.as_str()).collect()
    }

    #[test]
    fn create_accepts_a_valid_redis_without_warnings() {
        let v = Policy::default().validate_create(&valid());
        assert!(v.allowed(), "{}", v.message());
        assert!(v.warnings.is_empty(), "{:?}", v.warnings);
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
            assert_eq!(v.warnings.len(), 1, "{:?}", v.warnings);
            assert!(
                v.warnings[0].starts_with("spec.image:") && v.warnings[0].contains(hint),
                "{:?}",
                v.warnings
            );
        }
        let pinned =
            "redis@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert!(
            Policy::default()
                .validate_create(&redis("r", json!({"image": pinned})))
                .warnings
                .is_empty()
        );
    }

    #[test]
    fn zero_replicas_warn_but_pass() {
        let v = Policy::default().validate_create(&redis("r", json!({"replicas": 0})));
        assert!(v.allowed());
        assert_eq!(
            v.warnings,
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
}
