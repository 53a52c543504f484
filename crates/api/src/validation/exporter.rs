//! The admission rules on `spec.exporter` (DESIGN §2, for §3e the metrics exporter): a valid
//! image and a port of its own. Here rather than in [`crate::exporter`] because they read the
//! whole spec (Redis's port), and the spec holds the exporter's type.

use super::image::{image_violation, parse_image};
use super::violation::Violation;
use crate::types::RedisSpec;

/// `spec.exporter` (checked when set, even turned off, so turning it on cannot fail later): a
/// valid image, a port other than Redis's.
pub(super) fn exporter_violations(spec: &RedisSpec) -> Vec<Violation> {
    let Some(exporter) = &spec.exporter else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    violations.extend(image_violation(
        "spec.exporter.image",
        exporter.image(),
        &parse_image(exporter.image()),
    ));
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
