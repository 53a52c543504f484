//! The rules on a `Redis`'s metadata (DESIGN §2): its name (reserved names, the 63 characters of a
//! pod label value, room for `generateName`'s suffix) and the deletion-protection annotation that
//! refuses a DELETE.

use super::violation::{Violation, shown};
use crate::DELETION_PROTECTION_ANNOTATION;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Longest `Redis` name: it becomes the value of pod labels, which are limited to 63 characters.
pub const MAX_NAME_LENGTH: usize = 63;
/// Characters the API server appends to `metadata.generateName`.
pub(super) const GENERATED_SUFFIX_LENGTH: usize = 5;

/// `metadata.name`: not one of the policy's `reserved_names`, and short enough to be a pod label
/// value; or, for a name the API server generates, a `metadata.generateName` prefix that leaves
/// room for its suffix.
pub(super) fn name_violations(reserved_names: &[String], meta: &ObjectMeta) -> Vec<Violation> {
    let mut violations = Vec::new();
    match (
        meta.name.as_deref().filter(|n| !n.is_empty()),
        meta.generate_name.as_deref(),
    ) {
        (Some(name), _) => {
            if reserved_names.iter().any(|reserved| reserved == name) {
                violations.push(Violation::new(
                    "metadata.name",
                    name,
                    format!("\"{}\" is a reserved name", shown(name)),
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

/// DELETE: refused while the deletion-protection annotation is `"true"`.
pub(super) fn deletion_violations(meta: &ObjectMeta) -> Vec<Violation> {
    let protected = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_PROTECTION_ANNOTATION))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let mut violations = Vec::new();
    if protected {
        let name = meta
            .name
            .as_deref()
            .map_or_else(|| "<name>".to_owned(), shown);
        violations.push(Violation::new(
            format!("metadata.annotations[{DELETION_PROTECTION_ANNOTATION}]"),
            "true",
            format!(
                "deletion is refused while this annotation is \"true\" \
                 (remove it first: kubectl annotate redis/{name} {DELETION_PROTECTION_ANNOTATION}-)"
            ),
        ));
    }
    violations
}
