//! The rules on Replication mode (DESIGN §2, for §3b replication): a primary to run, the values
//! of `spec.replication` (`failoverAfter` and its bounds among them), and the warnings about a
//! Replication Redis that is allowed but unwise (no failover possible, no auth, writes always
//! refused, or never refused by a primary cut off from its replicas), or replication settings
//! Standalone mode ignores.

use super::violation::{Violation, shown};
use crate::defaults::{MIN_REPLICAS_TO_WRITE_FROM_PODS, parse_duration};
use crate::types::{Mode, RedisSpec};
use std::time::Duration;

/// Bounds of `spec.replication.failoverAfter`: shorter fails over on a blip (a slow probe, a
/// GC pause); longer leaves writes down for longer than anyone would choose.
pub const MIN_FAILOVER_AFTER: Duration = Duration::from_secs(1);
pub const MAX_FAILOVER_AFTER: Duration = Duration::from_secs(60 * 60);

/// Replication mode needs a primary; `spec.replication`'s values are checked whenever they are
/// set, in either mode (Standalone ignores them, but they take effect once the mode changes).
pub(super) fn replication_violations(spec: &RedisSpec) -> Vec<Violation> {
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
        format!(
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"{}\"",
            shown(text)
        )
    })?;
    if duration < MIN_FAILOVER_AFTER || duration > MAX_FAILOVER_AFTER {
        return Err(format!(
            "must be between 1s and 1h, got \"{}\"",
            shown(text)
        ));
    }
    Ok(())
}

/// Replication mode allowed but unwise; replication settings that Standalone mode ignores.
pub(super) fn replication_warnings(spec: &RedisSpec) -> Vec<String> {
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
            "spec.auth: not set in Replication mode, so any pod that can reach the pods can read and write (and replicate or reconfigure them); set spec.auth.secretRef to a Secret holding a password, and spec.networkPolicy to choose who can reach them"
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
    // The split-brain bound (DESIGN §9.5): without it, a primary cut off from its replicas (a
    // partition) keeps taking writes for as long as it is cut off, and the failover discards them.
    if replicas >= 2 && to_write == 0 {
        let set = spec
            .replication
            .as_ref()
            .is_some_and(|r| r.min_replicas_to_write.is_some());
        let which = if set {
            "0".to_owned()
        } else {
            format!("0 (the default below {MIN_REPLICAS_TO_WRITE_FROM_PODS} pods)")
        };
        warnings.push(format!(
            "spec.replication.minReplicasToWrite: {which} lets a primary cut off from its replicas keep accepting writes, which a failover to a replica then discards; set it to 1 so that such a primary refuses writes after minReplicasMaxLag seconds (writes then also wait for a connected replica), or run {MIN_REPLICAS_TO_WRITE_FROM_PODS} or more pods, where 1 is the default"
        ));
    }
    warnings
}
