//! Admission rules (DESIGN §2): what the validating webhook refuses, and what it warns about.
//!
//! Every rule reports the field path and a message a `kubectl` user can act on, and a denial
//! lists every violated rule at once. Rules read the effective spec (defaults applied), since
//! that is what the controller will run.

use crate::DELETION_PROTECTION_ANNOTATION;
use crate::defaults::parse_duration;
use crate::types::{Mode, Redis, RedisSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

// The schema's bounds, which these rules check too: defined in `crate::schema`, and still
// reachable here (`api::validation::SCHEMA_*`) as before.
pub use crate::schema::{SCHEMA_MAX_PORT, SCHEMA_MAX_REPLICAS, SCHEMA_MIN_PORT};

/// Longest `Redis` name: it becomes the value of pod labels, which are limited to 63 characters.
pub const MAX_NAME_LENGTH: usize = 63;
/// Characters the API server appends to `metadata.generateName`.
const GENERATED_SUFFIX_LENGTH: usize = 5;
/// Bounds of `spec.replication.failoverAfter`: shorter fails over on a blip (a slow probe, a
/// GC pause); longer leaves writes down for longer than anyone would choose.
pub const MIN_FAILOVER_AFTER: Duration = Duration::from_secs(1);
pub const MAX_FAILOVER_AFTER: Duration = Duration::from_secs(60 * 60);
/// Longest Secret name (a DNS-1123 subdomain) and Secret data key.
pub const MAX_SECRET_NAME_LENGTH: usize = 253;
pub const MAX_SECRET_KEY_LENGTH: usize = 253;

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
        // Claims exist already: they grow but never shrink or move (never ratcheted).
        verdict
            .violations
            .extend(storage_update_violations(&new.spec, &old.spec));
        match (&old.spec.storage, &new.spec.storage) {
            (None, Some(_)) => verdict.warnings.push(
                "spec.storage: the pods are replaced one at a time onto new, empty claims; what they hold in memory and their emptyDir is not copied".to_owned(),
            ),
            (Some(_), None) => verdict.warnings.push(
                "spec.storage: removed; the pods are replaced onto emptyDir volumes and the claims are kept (delete them by hand)".to_owned(),
            ),
            _ => {}
        }
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
        violations.extend(replication_violations(spec));
        violations.extend(auth_violations(spec));
        violations.extend(pdb_violations(spec));
        violations.extend(storage_violations(spec));
        violations.extend(exporter_violations(spec));
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

/// Replication mode needs a primary; `spec.replication`'s values are checked whenever they are
/// set, in either mode (Standalone ignores them, but they take effect once the mode changes).
fn replication_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut violations = Vec::new();
    let replicas = spec.replicas();
    if spec.mode() == Mode::Replication && replicas < 1 {
        violations.push(Violation::new(
            "spec.replicas",
            // The rule judges the pair: the same count in Standalone mode is another value.
            format!("{replicas} in Replication mode"),
            format!("must be >= 1 in Replication mode (one pod is the primary), got {replicas}"),
        ));
    }
    let Some(replication) = &spec.replication else {
        return violations;
    };
    if let Some(n) = replication.min_replicas_to_write
        && n < 0
    {
        violations.push(Violation::new(
            "spec.replication.minReplicasToWrite",
            n,
            format!("must be >= 0, got {n}"),
        ));
    }
    if let Some(lag) = replication.min_replicas_max_lag
        && lag < 1
    {
        violations.push(Violation::new(
            "spec.replication.minReplicasMaxLag",
            lag,
            format!("must be >= 1 (seconds), got {lag}"),
        ));
    }
    if let Some(text) = &replication.failover_after
        && let Err(message) = failover_after_problem(text)
    {
        violations.push(Violation::new(
            "spec.replication.failoverAfter",
            format!("{text:?}"),
            message,
        ));
    }
    violations
}

/// Why `failoverAfter` is refused, if it is.
fn failover_after_problem(text: &str) -> Result<(), String> {
    let duration = parse_duration(text).map_err(|_| {
        format!("must be a duration such as \"10s\", \"1m30s\" or \"1h\", got {text:?}")
    })?;
    if duration < MIN_FAILOVER_AFTER || duration > MAX_FAILOVER_AFTER {
        return Err(format!("must be between 1s and 1h, got {text:?}"));
    }
    Ok(())
}

/// `spec.auth.secretRef` must name a Secret and a key a Secret can have.
fn auth_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut violations = Vec::new();
    let Some(auth) = &spec.auth else {
        return violations;
    };
    let (name, key) = auth.secret();
    if let Err(message) = secret_name_problem(name) {
        violations.push(Violation::new(
            "spec.auth.secretRef.name",
            format!("{name:?}"),
            message,
        ));
    }
    if let Err(message) = secret_key_problem(key) {
        violations.push(Violation::new(
            "spec.auth.secretRef.key",
            format!("{key:?}"),
            message,
        ));
    }
    violations
}

/// A Secret's name is a DNS-1123 subdomain: dot-separated labels of lowercase letters, digits
/// and `-`, each starting and ending with a letter or digit; at most 253 characters.
fn secret_name_problem(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if name.len() > MAX_SECRET_NAME_LENGTH {
        return Err(format!(
            "must be no more than {MAX_SECRET_NAME_LENGTH} characters, got {}",
            name.len()
        ));
    }
    let label_ok = |label: &str| {
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        label.starts_with(alnum)
            && label.ends_with(alnum)
            && label.chars().all(|c| alnum(c) || c == '-')
    };
    if !name.split('.').all(label_ok) {
        return Err(format!(
            "must be a valid Secret name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got {name:?}"
        ));
    }
    Ok(())
}

/// A Secret's data key: letters, digits, `-`, `_` and `.`, at most 253 characters, and not `.`,
/// `..` or starting with `..` (the API server's rule for Secret and ConfigMap keys).
fn secret_key_problem(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if key.len() > MAX_SECRET_KEY_LENGTH {
        return Err(format!(
            "must be no more than {MAX_SECRET_KEY_LENGTH} characters, got {}",
            key.len()
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !key.chars().all(allowed) {
        return Err(format!(
            "must be a valid Secret key (letters, digits, '-', '_' and '.'), got {key:?}"
        ));
    }
    if key == "." || key.starts_with("..") {
        return Err(format!("must not be '.' or start with '..', got {key:?}"));
    }
    Ok(())
}

/// `spec.storage`: a size that is a quantity above zero, access modes a pod can write through.
fn storage_violations(spec: &RedisSpec) -> Vec<Violation> {
    let Some(storage) = &spec.storage else {
        return Vec::new();
    };
    crate::storage::storage_violations(storage)
        .into_iter()
        .map(|(field, message)| {
            let value = match field.as_str() {
                "size" => storage.size.0.clone(),
                _ => format!("{:?}", storage.access_modes()),
            };
            Violation::new(format!("spec.storage.{field}"), value, message)
        })
        .collect()
}

/// `spec.exporter` (checked when set, even turned off, so turning it on cannot fail later): a
/// valid image, a port other than Redis's.
fn exporter_violations(spec: &RedisSpec) -> Vec<Violation> {
    let Some(exporter) = &spec.exporter else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    if let Err(reason) = parse_image(exporter.image()) {
        violations.push(Violation::new(
            "spec.exporter.image",
            exporter.image(),
            reason,
        ));
    }
    let port = exporter.port();
    if !(1..=65535).contains(&port) {
        violations.push(Violation::new(
            "spec.exporter.port",
            port,
            format!("must be between 1 and 65535, got {port}"),
        ));
    } else if port == spec.port() {
        violations.push(Violation::new(
            "spec.exporter.port",
            port,
            format!("must differ from spec.port ({port}): redis-server listens there"),
        ));
    }
    violations
}

/// UPDATE of `spec.storage` while claims may exist: see [`crate::storage::storage_update_violations`].
fn storage_update_violations(new: &RedisSpec, old: &RedisSpec) -> Vec<Violation> {
    let (Some(new), Some(old)) = (&new.storage, &old.storage) else {
        return Vec::new();
    };
    crate::storage::storage_update_violations(old, new)
        .into_iter()
        .map(|(field, message)| {
            Violation::new(format!("spec.storage.{field}"), &new.size.0, message)
        })
        .collect()
}

/// `spec.podDisruptionBudget.maxUnavailable`: a count >= 0 or a percentage `0%`..`100%`.
fn pdb_violations(spec: &RedisSpec) -> Vec<Violation> {
    let Some(max) = spec
        .pod_disruption_budget
        .as_ref()
        .and_then(|p| p.max_unavailable.as_ref())
    else {
        return Vec::new();
    };
    let field = "spec.podDisruptionBudget.maxUnavailable";
    match max {
        IntOrString::Int(n) if *n < 0 => {
            vec![Violation::new(field, n, format!("must be >= 0, got {n}"))]
        }
        IntOrString::Int(_) => Vec::new(),
        IntOrString::String(text) if percentage(text).is_some_and(|p| p <= 100) => Vec::new(),
        IntOrString::String(text) => vec![Violation::new(
            field,
            format!("{text:?}"),
            format!(
                "must be a number >= 0 or a percentage between \"0%\" and \"100%\", got {text:?}"
            ),
        )],
    }
}

/// `N` of a string `N%` (digits only, as the API server's PodDisruptionBudget validation reads
/// it), if it is one.
fn percentage(text: &str) -> Option<u64> {
    let digits = text.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Too many digits to fit is certainly more than 100.
    Some(digits.parse().unwrap_or(u64::MAX))
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
    let invalid = |reason: &str| format!("\"{image}\" is not a valid image reference: {reason}");
    let captures = image_reference_regex()
        .captures(image)
        .ok_or_else(|| invalid("invalid reference format"))?;
    let name = captures.get(1).map_or("", |m| m.as_str());
    if name.len() > IMAGE_NAME_MAX {
        return Err(invalid(&format!(
            "repository name must not be more than {IMAGE_NAME_MAX} characters"
        )));
    }
    let tag = captures.get(2).map(|m| m.as_str());
    let digest = captures.get(3).map(|m| m.as_str());
    if let Some(digest) = digest {
        // As go-digest: a known algorithm and its length of lowercase hex.
        let (algorithm, hex) = digest
            .split_once(':')
            .ok_or_else(|| invalid("invalid checksum digest format"))?;
        let length = match algorithm {
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            _ => return Err(invalid("unsupported digest algorithm")),
        };
        if hex.len() != length {
            return Err(invalid("invalid checksum digest length"));
        }
        if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(invalid("invalid checksum digest format"));
        }
    }
    Ok(ImageFacts {
        latest: digest.is_none() && tag.is_none_or(|t| t == "latest"),
    })
}

/// distribution/reference's limit on the name (domain and path).
const IMAGE_NAME_MAX: usize = 255;

/// distribution/reference's `ReferenceRegexp` (name, `:tag`, `@digest`), as Go's RE2 reads it:
/// `\w` is ASCII, and a domain may be an IPv6 address in brackets. regex-lite has exactly those
/// ASCII semantics and compiles this in microseconds into a few KiB; the `regex` crate's Unicode
/// `\w` made it a multi-MiB automaton and accepted tags such as "é" that no runtime pulls.
fn image_reference_regex() -> &'static regex_lite::Regex {
    const DOMAIN_COMPONENT: &str = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    const PATH_COMPONENT: &str = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
    static REGEX: LazyLock<Option<regex_lite::Regex>> = LazyLock::new(|| {
        let host = format!(r"(?:{DOMAIN_COMPONENT}(?:\.{DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])");
        let domain = format!(r"{host}(?::[0-9]+)?");
        let name = format!(r"(?:{domain}/)?{PATH_COMPONENT}(?:/{PATH_COMPONENT})*");
        let tag = r"[\w][\w.-]{0,127}";
        let digest = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";
        regex_lite::Regex::new(&format!(r"^({name})(?::({tag}))?(?:@({digest}))?$")).ok()
    });
    // The pattern is a constant: a test builds it, so this never fails in a release.
    REGEX
        .as_ref()
        .unwrap_or_else(|| unreachable!("the image reference pattern compiles"))
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
    warnings.extend(replication_warnings(spec));
    warnings
}

/// Replication mode allowed but unwise; replication settings that Standalone mode ignores.
fn replication_warnings(spec: &RedisSpec) -> Vec<String> {
    let mut warnings = Vec::new();
    if spec.mode() == Mode::Standalone {
        if spec.replication.is_some() {
            warnings.push(
                "spec.replication: ignored in Standalone mode (set spec.mode: Replication to use it)"
                    .to_owned(),
            );
        }
        return warnings;
    }
    let replicas = spec.replicas();
    if replicas == 1 {
        warnings.push(
            "spec.replicas: 1 in Replication mode runs only the primary, so no failover is possible; use at least 2 (3 to survive losing one pod with a replica to spare)"
                .to_owned(),
        );
    }
    if spec.auth.is_none() {
        warnings.push(
            "spec.auth: not set in Replication mode, so any pod that can reach the pods can read and write (and replicate or reconfigure them); set spec.auth.secretRef to a Secret holding a password"
                .to_owned(),
        );
    }
    let to_write = spec.replication().min_replicas_to_write;
    let available = replicas.saturating_sub(1);
    if replicas >= 1 && to_write > available {
        warnings.push(format!(
            "spec.replication.minReplicasToWrite: {to_write} is more than the {available} replica(s) of {replicas} pods, so writes will be refused"
        ));
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
        let warns = |r: Redis| Policy::default().validate_create(&r).warnings;
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
            v.warnings,
            vec!["spec.replicas: 0 runs no Redis pods".to_owned()]
        );
    }

    #[test]
    fn standalone_stays_quiet_about_auth_and_warns_about_ignored_replication() {
        // The tutorial's Redis has no auth: no warning about it.
        let v = Policy::default().validate_create(&valid());
        assert!(v.warnings.is_empty(), "{:?}", v.warnings);
        let v = Policy::default().validate_create(&redis(
            "r",
            json!({"replicas": 1, "image": "redis:7", "mode": "Standalone"}),
        ));
        assert!(v.warnings.is_empty(), "{:?}", v.warnings);
        for spec in [
            json!({"image": "redis:7", "replication": {"failoverAfter": "30s"}}),
            json!({"image": "redis:7", "mode": "Standalone", "replication": {}}),
        ] {
            let v = Policy::default().validate_create(&redis("r", spec.clone()));
            assert!(v.allowed(), "{spec}: {}", v.message());
            assert_eq!(
                v.warnings,
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
}
