//! `spec.topologySpreadConstraints`: constraints the scheduler can apply.

use super::checks::topology_key_violation;
use super::selector::selector_violations;
use crate::validation::violation::{Violation, shown};
use k8s_openapi::api::core::v1::TopologySpreadConstraint;

/// A topology spread constraint the scheduler can apply.
pub(super) fn spread_violations(
    i: usize,
    c: &TopologySpreadConstraint,
    earlier: &[TopologySpreadConstraint],
    out: &mut Vec<Violation>,
) {
    let field = format!("spec.topologySpreadConstraints[{i}]");
    if c.max_skew < 1 {
        out.push(Violation::new(
            format!("{field}.maxSkew"),
            c.max_skew,
            format!("must be >= 1, got {}", c.max_skew),
        ));
    }
    topology_key_violation(&format!("{field}.topologyKey"), &c.topology_key, out);
    let when = c.when_unsatisfiable.as_str();
    if !matches!(when, "DoNotSchedule" | "ScheduleAnyway") {
        out.push(Violation::new(
            format!("{field}.whenUnsatisfiable"),
            format!("{when:?}"),
            format!(
                "must be DoNotSchedule or ScheduleAnyway, got \"{}\"",
                shown(when)
            ),
        ));
    }
    if let Some(min) = c.min_domains {
        if min < 1 {
            out.push(Violation::new(
                format!("{field}.minDomains"),
                min,
                format!("must be >= 1, got {min}"),
            ));
        } else if when != "DoNotSchedule" {
            out.push(Violation::new(
                format!("{field}.minDomains"),
                format!("{min} with {when:?}"),
                format!(
                    "can only be set with whenUnsatisfiable DoNotSchedule, got \"{}\"",
                    shown(when)
                ),
            ));
        }
    }
    for (name, policy) in [
        ("nodeAffinityPolicy", &c.node_affinity_policy),
        ("nodeTaintsPolicy", &c.node_taints_policy),
    ] {
        if let Some(policy) = policy
            && !matches!(policy.as_str(), "Honor" | "Ignore")
        {
            out.push(Violation::new(
                format!("{field}.{name}"),
                format!("{policy:?}"),
                format!("must be Honor or Ignore, got \"{}\"", shown(policy)),
            ));
        }
    }
    if let Some(k) = earlier.iter().position(|e| {
        e.topology_key == c.topology_key && e.when_unsatisfiable == c.when_unsatisfiable
    }) {
        out.push(Violation::new(
            &field,
            format!("{:?} {when:?}", c.topology_key),
            format!(
                "repeats the topologyKey and whenUnsatisfiable of spec.topologySpreadConstraints[{k}] (\"{}\", \"{}\"); merge them",
                shown(&c.topology_key),
                shown(when)
            ),
        ));
    }
    if let Some(selector) = &c.label_selector {
        selector_violations(&format!("{field}.labelSelector"), selector, out);
    }
}
