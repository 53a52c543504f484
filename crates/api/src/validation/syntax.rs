//! The syntax of Kubernetes names and keys, as the API server checks them (apimachinery's
//! `validation` package): DNS-1123 subdomains, qualified names (label and annotation keys) and
//! label values. The rule modules of `validation` report through these, with their own fields.

use super::violation::shown;

/// Longest DNS-1123 subdomain (a Secret's or PriorityClass's name, a key's prefix).
pub(super) const MAX_SUBDOMAIN_LENGTH: usize = 253;
/// Longest label value, and longest name part of a qualified name.
pub(super) const MAX_LABEL_LENGTH: usize = 63;

/// A DNS-1123 subdomain, length aside: dot-separated parts of lowercase letters, digits and `-`,
/// each starting and ending with a letter or digit.
pub(super) fn is_dns1123_subdomain(name: &str) -> bool {
    let part_ok = |part: &str| {
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        part.starts_with(alnum)
            && part.ends_with(alnum)
            && part.chars().all(|c| alnum(c) || c == '-')
    };
    name.split('.').all(part_ok)
}

/// Why `name` is not a DNS-1123 subdomain of at most 253 characters, if it is not.
pub(super) fn subdomain_problem(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if name.len() > MAX_SUBDOMAIN_LENGTH {
        return Err(format!(
            "must be no more than {MAX_SUBDOMAIN_LENGTH} characters, got {}",
            name.len()
        ));
    }
    if !is_dns1123_subdomain(name) {
        return Err(format!(
            "must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"{}\"",
            shown(name)
        ));
    }
    Ok(())
}

/// The name part of a qualified name, and a non-empty label value: at most 63 letters, digits,
/// `-`, `_` or `.`, starting and ending with a letter or digit.
fn is_label_word(text: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    text.len() <= MAX_LABEL_LENGTH
        && text.starts_with(alnum)
        && text.ends_with(alnum)
        && text
            .chars()
            .all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// Why `key` is not a label key (a qualified name: an optional DNS-1123 subdomain prefix and `/`,
/// then a name of at most 63 characters), if it is not.
pub(super) fn label_key_problem(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty() && p.len() <= MAX_SUBDOMAIN_LENGTH && is_dns1123_subdomain(p)
    });
    if prefix_ok && is_label_word(name) {
        return Ok(());
    }
    Err(format!(
        "must be a valid label key (an optional DNS subdomain prefix and '/', then at most {MAX_LABEL_LENGTH} letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"{}\"",
        shown(key)
    ))
}

/// Why `key` is not an annotation key, if it is not: a label key, except that the API server
/// reads the prefix without regard to case.
pub(super) fn annotation_key_problem(key: &str) -> Result<(), String> {
    label_key_problem(&key.to_ascii_lowercase()).map_err(|_| {
        format!(
            "must be a valid annotation key (an optional DNS subdomain prefix and '/', then at most {MAX_LABEL_LENGTH} letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"{}\"",
            shown(key)
        )
    })
}

/// Why `value` is not a label value (empty, or at most 63 letters, digits, `-`, `_` or `.`,
/// starting and ending with a letter or digit), if it is not.
pub(super) fn label_value_problem(value: &str) -> Result<(), String> {
    if value.is_empty() || is_label_word(value) {
        return Ok(());
    }
    Err(format!(
        "must be a valid label value (empty, or at most {MAX_LABEL_LENGTH} letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"{}\"",
        shown(value)
    ))
}
