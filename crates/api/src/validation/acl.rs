//! The rules on `spec.acl` (DESIGN §2, for §3l ACL users): user names (none reserved, none
//! twice), rules Redis would take (the grammar of [`crate::acl`]), and password Secrets a Secret
//! can be; on UPDATE, no removal that would lock the operator out of running pods.

use super::auth::{secret_key_problem, secret_name_problem};
use super::violation::{Violation, shown};
use crate::acl::{CATEGORIES, DefaultUser, MAX_USERS, parse_rules, user_name_problem};
use crate::types::{Mode, RedisSpec};

/// `spec.acl`: at most [`MAX_USERS`] users, each named once and not as the operator's, with rules
/// Redis takes and a Secret key a Secret can have.
pub(super) fn acl_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut violations = Vec::new();
    let Some(acl) = &spec.acl else {
        return violations;
    };
    if acl.users.len() > MAX_USERS {
        violations.push(Violation::new(
            "spec.acl.users",
            acl.users.len(),
            format!(
                "must list at most {MAX_USERS} users, got {}",
                acl.users.len()
            ),
        ));
    }
    for (i, user) in acl.users.iter().enumerate() {
        let field = |f: &str| format!("spec.acl.users[{i}].{f}");
        if let Err(message) = user_name_problem(&user.name) {
            violations.push(Violation::new(field("name"), &user.name, message));
        }
        if acl.users[..i].iter().any(|u| u.name == user.name) {
            violations.push(Violation::new(
                field("name"),
                &user.name,
                format!("user \"{}\" is listed twice", shown(&user.name)),
            ));
        }
        if let Err(message) = parse_rules(&user.rules) {
            violations.push(Violation::new(field("rules"), &user.rules, message));
        }
        let (name, key) = user.secret();
        if let Err(message) = secret_name_problem(name) {
            violations.push(Violation::new(
                field("passwordSecretRef.name"),
                format!("{name:?}"),
                message,
            ));
        }
        if let Err(message) = secret_key_problem(key) {
            violations.push(Violation::new(
                field("passwordSecretRef.key"),
                format!("{key:?}"),
                message,
            ));
        }
    }
    violations
}

/// Categories a Redis 7 server does not know, and a Redis nobody but the operator can log in to.
pub(super) fn acl_warnings(spec: &RedisSpec) -> Vec<String> {
    let Some(acl) = &spec.acl else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    for (i, user) in acl.users.iter().enumerate() {
        let Ok(rules) = parse_rules(&user.rules) else {
            continue;
        };
        if !rules.unknown_categories.is_empty() {
            warnings.push(format!(
                "spec.acl.users[{i}].rules: {} not a category of Redis 7 ({}); a server without it refuses the user",
                rules
                    .unknown_categories
                    .iter()
                    .map(|c| format!("@{}", shown(c)))
                    .collect::<Vec<_>>()
                    .join(", "),
                CATEGORIES.join(", ")
            ));
        }
    }
    if acl.default_user() == DefaultUser::Disabled && acl.users.is_empty() {
        warnings.push(
            "spec.acl: the default user is disabled and no user is listed: no client can log in"
                .to_owned(),
        );
    }
    if acl.default_user() == DefaultUser::Enabled && spec.auth.is_none() {
        warnings.push(
            "spec.acl: the default user is enabled without spec.auth: any client that reaches the pods logs in as it, with every right"
                .to_owned(),
        );
    }
    warnings
}

/// UPDATE: `spec.acl` is not removed while the default user is disabled on a running Replication
/// Redis with replicas. Its pods are replaced one at a time; the new ones, without ACLs, would
/// replicate (and the operator connect) as the default user, which the old ones refuse.
pub(super) fn acl_update_violations(new: &RedisSpec, old: &RedisSpec) -> Vec<Violation> {
    let replicated = |spec: &RedisSpec| spec.mode() == Mode::Replication && spec.replicas() > 1;
    let locked = old
        .acl
        .as_ref()
        .is_some_and(|a| a.default_user() == DefaultUser::Disabled);
    if new.acl.is_some() || !locked || !(replicated(new) && replicated(old)) {
        return Vec::new();
    }
    vec![Violation::new(
        "spec.acl",
        "unset",
        "cannot be removed while spec.acl.defaultUser is Disabled on a Replication Redis with replicas: the pods without ACLs would replicate as the default user, which the others refuse; set defaultUser to Enabled first, then remove spec.acl",
    )]
}
