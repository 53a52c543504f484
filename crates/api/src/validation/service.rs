//! The rules on `spec.service` (DESIGN §2, for §3n): what the API server would refuse in the
//! Services the controller builds (it would answer each apply with an error, and clients would
//! have no Service): annotation keys, CIDRs, the settings that only some types take, and the
//! Redis's name, which names its Services (`<name>`, `<name>-headless`, `<name>-<ordinal>`...).

use super::meta::GENERATED_SUFFIX_LENGTH;
use super::network_policy::parse_cidr;
use super::syntax::annotation_key_problem;
use super::violation::{Violation, shown};
use crate::pods::{OPERATOR_KEY_PREFIX, is_operator_annotation};
use crate::service::{MAX_SOURCE_RANGES, ServiceType};
use crate::types::{Mode, RedisSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Most bytes (keys and values) the API server accepts in an object's annotations.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

pub(super) fn service_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(service) = &spec.service else {
        return out;
    };
    let kind = service.type_();
    for key in service.annotations.iter().flatten().map(|(k, _)| k) {
        let field = format!("spec.service.annotations[{}]", shown(key));
        if is_operator_annotation(key) {
            out.push(Violation::new(
                &field,
                key,
                format!("\"{}\" is the operator's own (every {OPERATOR_KEY_PREFIX} key is); choose another key", shown(key)),
            ));
        } else if let Err(message) = annotation_key_problem(key) {
            out.push(Violation::new(&field, key, message));
        }
    }
    let bytes: usize = service
        .annotations
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if bytes > MAX_ANNOTATIONS_BYTES {
        out.push(Violation::new(
            "spec.service.annotations",
            bytes,
            format!("must be no more than {MAX_ANNOTATIONS_BYTES} bytes in total (keys and values), got {bytes}"),
        ));
    }
    if let Some(ranges) = &service.load_balancer_source_ranges {
        let field = "spec.service.loadBalancerSourceRanges";
        if kind != ServiceType::LoadBalancer {
            out.push(Violation::new(
                field,
                ranges.join(","),
                format!(
                    "only applies to type LoadBalancer, got type {}",
                    kind.as_str()
                ),
            ));
        }
        if ranges.len() > MAX_SOURCE_RANGES {
            out.push(Violation::new(
                field,
                ranges.len(),
                format!(
                    "must hold at most {MAX_SOURCE_RANGES} CIDRs, got {}",
                    ranges.len()
                ),
            ));
        }
        for (i, range) in ranges.iter().enumerate().take(MAX_SOURCE_RANGES) {
            if let Err(message) = parse_cidr(range.trim()) {
                out.push(Violation::new(format!("{field}[{i}]"), range, message));
            }
        }
    }
    if let Some(policy) = service.external_traffic_policy
        && kind == ServiceType::ClusterIP
    {
        out.push(Violation::new(
            "spec.service.externalTrafficPolicy",
            policy.as_str(),
            "only applies to types NodePort and LoadBalancer, got type ClusterIP",
        ));
    }
    out
}

/// Longest Service name: Services are named by DNS-1035 labels.
const MAX_SERVICE_NAME_LENGTH: usize = super::syntax::MAX_LABEL_LENGTH;

/// The Redis's name (or its `generateName` prefix) as its Services need it: a DNS-1035 label
/// (a Redis may be named `1cache` or `my.cache`, a Service not), with room for the longest suffix
/// of its Services: `-replicas`/`-headless` in Replication mode, `-<ordinal>` of the highest
/// ordinal `max_replicas` allows with `perPod` (so no later scale-up breaks it). Longer than 63
/// is the name rule's (`meta`) to say.
pub(super) fn service_name_violations(
    meta: &ObjectMeta,
    spec: &RedisSpec,
    max_replicas: i32,
) -> Vec<Violation> {
    let (field, name, generated) = match (
        meta.name.as_deref().filter(|n| !n.is_empty()),
        meta.generate_name.as_deref(),
    ) {
        (Some(name), _) => ("metadata.name", name, 0),
        (None, Some(prefix)) => ("metadata.generateName", prefix, GENERATED_SUFFIX_LENGTH),
        (None, None) => return Vec::new(),
    };
    let mut out = Vec::new();
    let letter_first = name.starts_with(|c: char| c.is_ascii_lowercase());
    let chars_ok = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    // A generated name ends with the API server's letters and digits.
    let end_ok =
        generated > 0 || name.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(letter_first && chars_ok && end_ok) {
        out.push(Violation::new(
            field,
            name,
            format!(
                "must start with a lowercase letter, hold only lowercase letters, digits and '-', and end with a letter or digit: it names the Redis's Services, whose names Kubernetes requires to be DNS-1035 labels, got \"{}\"",
                shown(name)
            ),
        ));
    }
    let mut suffixes = Vec::new();
    if spec.mode() == Mode::Replication {
        // The name's longest suffix there (`-replicas` is as long).
        suffixes.push((
            crate::pods::headless_service_name(""),
            "in Replication mode",
        ));
    }
    if spec.service.as_ref().is_some_and(|s| s.per_pod()) {
        let highest = max_replicas.max(1) - 1;
        suffixes.push((
            format!("-{highest}"),
            "with spec.service.perPod (the highest ordinal spec.replicas may reach)",
        ));
    }
    if let Some((suffix, why)) = suffixes.into_iter().max_by_key(|(s, _)| s.len()) {
        let budget = MAX_SERVICE_NAME_LENGTH - suffix.len() - generated;
        let total = name.len() + generated;
        if name.len() > budget && total <= MAX_SERVICE_NAME_LENGTH {
            out.push(Violation::new(
                field,
                name,
                format!(
                    "must be no more than {budget} characters {why}, so the Service <name>{suffix} fits in {MAX_SERVICE_NAME_LENGTH}, got {}",
                    name.len()
                ),
            ));
        }
    }
    out
}

/// A Redis reachable from outside the cluster without a password: said at every write.
pub(super) fn service_warnings(spec: &RedisSpec) -> Vec<String> {
    let kind = spec
        .service
        .as_ref()
        .map_or(ServiceType::ClusterIP, |s| s.type_());
    if kind != ServiceType::ClusterIP && spec.auth.is_none() && spec.acl.is_none() {
        vec![format!(
            "spec.service.type: {} makes the Redis reachable from outside the cluster, and it has no auth: anyone who reaches it can read and write",
            kind.as_str()
        )]
    } else {
        Vec::new()
    }
}
