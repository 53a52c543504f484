//! The rules on `spec.config` and `spec.maxMemoryPercentOfLimit` (DESIGN §2, for §3m): every
//! directive a known one of Redis 7.0, not one the operator sets, written once (a name and its
//! alias are the same directive), with a value of its shape; warnings where `maxmemory` leaves the
//! container no room.

use super::violation::{Violation, shown};
use crate::config::{
    self, HIGH_MAX_MEMORY_PERCENT, MAX_DIRECTIVES, directive, memory_bytes, not_a_directive, owned,
    refused, value_problem,
};
use crate::types::RedisSpec;
use std::collections::BTreeMap;

/// `spec.config`: one violation per refused directive, each naming it.
pub(super) fn config_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut violations = Vec::new();
    if let Some(percent) = spec.max_memory_percent_of_limit
        && !(1..=100).contains(&percent)
    {
        violations.push(Violation::new(
            "spec.maxMemoryPercentOfLimit",
            percent,
            format!("must be between 1 and 100, got {percent}"),
        ));
    }
    let Some(entries) = &spec.config else {
        return violations;
    };
    if entries.len() > MAX_DIRECTIVES {
        violations.push(Violation::new(
            "spec.config",
            entries.len(),
            format!(
                "must hold at most {MAX_DIRECTIVES} directives, got {}",
                entries.len()
            ),
        ));
        return violations;
    }
    // Canonical name → the name it was first written as.
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, value) in entries {
        let field = format!("spec.config[{}]", shown(name));
        let Some(d) = directive(name) else {
            let why = not_a_directive(&name.to_ascii_lowercase()).unwrap_or(
                "is not a redis.conf directive of Redis 7.0 (names are as redis.conf writes them, e.g. maxmemory-policy)",
            );
            violations.push(Violation::new(field, name, why));
            continue;
        };
        if let Some(why) = owned(d.name, spec) {
            violations.push(Violation::new(
                field,
                name,
                format!("is set by the operator: {why}"),
            ));
            continue;
        }
        if let Some(why) = refused(d.name) {
            violations.push(Violation::new(
                field,
                name,
                format!("is not allowed: {why}"),
            ));
            continue;
        }
        if let Some(first) = seen.insert(d.name, name) {
            violations.push(Violation::new(
                field,
                name,
                format!(
                    "is the same directive as {} (one name of it only)",
                    shown(first)
                ),
            ));
            continue;
        }
        if let Some(problem) = value_problem(d, value) {
            violations.push(Violation::new(
                field,
                value,
                format!("{problem}, got {:?}", shown(value)),
            ));
        }
    }
    violations
}

/// `maxmemory` above the container's memory limit (the kernel kills Redis before it evicts), or
/// a derived one that leaves little room; a percentage that nothing uses.
pub(super) fn config_warnings(spec: &RedisSpec) -> Vec<String> {
    let mut warnings = Vec::new();
    let limit = config::memory_limit(spec);
    let set = spec.config.iter().flatten().find_map(|(name, value)| {
        directive(name)
            .filter(|d| d.name == "maxmemory")
            .map(|_| value)
    });
    if let (Some(value), Some(limit)) = (set, limit)
        && let Some(bytes) = memory_bytes(value)
        && (bytes == 0 || u128::try_from(bytes).is_ok_and(|b| b > limit))
    {
        let what = if bytes == 0 {
            "0 (no limit)".to_owned()
        } else {
            format!("{bytes} bytes")
        };
        warnings.push(format!(
            "spec.config[maxmemory]: {what} lets Redis grow past the container's memory limit ({limit} bytes): the kernel kills it (OOMKilled) before it evicts"
        ));
    }
    if let Some(percent) = spec.max_memory_percent_of_limit {
        if set.is_some() {
            warnings.push(
                "spec.maxMemoryPercentOfLimit: not used, spec.config sets maxmemory".to_owned(),
            );
        } else if limit.is_none() {
            warnings.push(
                "spec.maxMemoryPercentOfLimit: not used, the redis container has no memory limit (spec.resources.limits.memory)".to_owned(),
            );
        } else if percent > HIGH_MAX_MEMORY_PERCENT {
            warnings.push(format!(
                "spec.maxMemoryPercentOfLimit: {percent}% leaves little room for a fork's copy-on-write (BGSAVE, a replica's full sync) and buffers: under writes the kernel may kill Redis (OOMKilled)"
            ));
        }
    }
    warnings
}
