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
mod tests;
