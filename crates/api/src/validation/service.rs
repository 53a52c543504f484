//! The rules on `spec.service` (DESIGN §2, for §3n): what the API server would refuse in the
//! client Service the controller builds (it would answer each apply with an error, and clients
//! would have no Service): annotation keys, CIDRs, and the settings that only some types take.

use super::network_policy::parse_cidr;
use super::syntax::annotation_key_problem;
use super::violation::{Violation, shown};
use crate::pods::{OPERATOR_KEY_PREFIX, is_operator_annotation};
use crate::service::{MAX_SOURCE_RANGES, ServiceType};
use crate::types::RedisSpec;

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
