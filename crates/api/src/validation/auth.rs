//! The rules on `spec.auth` (DESIGN §2, for §3c auth): the Secret it names must be one a Secret
//! can be, and the key one a Secret's data can have, as the API server reads them.

use super::syntax::is_dns1123_subdomain;
use super::violation::{Violation, shown};
use crate::types::RedisSpec;

/// Longest Secret name (a DNS-1123 subdomain) and Secret data key.
pub const MAX_SECRET_NAME_LENGTH: usize = 253;
pub const MAX_SECRET_KEY_LENGTH: usize = 253;

/// `spec.auth.secretRef` must name a Secret and a key a Secret can have.
pub(super) fn auth_violations(spec: &RedisSpec) -> Vec<Violation> {
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
pub(super) fn secret_name_problem(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if name.len() > MAX_SECRET_NAME_LENGTH {
        return Err(format!(
            "must be no more than {MAX_SECRET_NAME_LENGTH} characters, got {}",
            name.len()
        ));
    }
    if !is_dns1123_subdomain(name) {
        return Err(format!(
            "must be a valid Secret name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"{}\"",
            shown(name)
        ));
    }
    Ok(())
}

/// A Secret's data key: letters, digits, `-`, `_` and `.`, at most 253 characters, and not `.`,
/// `..` or starting with `..` (the API server's rule for Secret and ConfigMap keys).
pub(super) fn secret_key_problem(key: &str) -> Result<(), String> {
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
            "must be a valid Secret key (letters, digits, '-', '_' and '.'), got \"{}\"",
            shown(key)
        ));
    }
    if key == "." || key.starts_with("..") {
        return Err(format!(
            "must not be '.' or start with '..', got \"{}\"",
            shown(key)
        ));
    }
    Ok(())
}
