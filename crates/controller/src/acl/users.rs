//! The users every pod of a Redis with `spec.acl` must have (DESIGN §3l), as `ACL SETUSER`
//! arguments and as the redis.conf `user` lines a starting container loads. Pure.
//!
//! Every user starts from `reset resetchannels` (no password, key, channel or command, off; no
//! channel even where an older Redis's `acl-pubsub-default` would give them all), then `on`, its
//! password as a SHA-256 hash (no password ever crosses the network or sits in a file in clear),
//! then its rules. So a user is the same wherever it is applied, and applying it again changes
//! nothing.

use api::acl::{
    AclSpec, DEFAULT_RULES, DEFAULT_USER, DefaultUser, OPERATOR_RULES, OPERATOR_USER,
    REPLICATION_RULES, REPLICATION_USER, parse_rules, user_name_problem,
};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// One user: its name and the arguments of `ACL SETUSER <name> ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub args: Vec<String>,
}

/// The passwords the users are built with.
#[derive(Debug, Clone, Copy)]
pub struct Passwords<'a> {
    /// `spec.auth`'s, for the default user.
    pub default: Option<&'a str>,
    /// The operator's generated ones.
    pub operator: &'a str,
    pub replication: &'a str,
    /// Each `spec.acl.users[]`'s, by name.
    pub users: &'a HashMap<String, String>,
}

/// Every user, in the order they are applied: the operator's own first (so a pass that stops
/// half-way has not locked the operator or the replicas out), the default user, then the
/// spec's. `Err` names a user whose name or rules the webhook should have refused, or whose
/// password is missing: nothing is applied then.
pub fn desired(acl: &AclSpec, passwords: Passwords<'_>) -> Result<Vec<User>, String> {
    let base = |password: &str| {
        ["reset", "resetchannels", "on"]
            .into_iter()
            .map(str::to_owned)
            .chain([format!("#{}", hash(password))])
    };
    let mut users = vec![
        User {
            name: OPERATOR_USER.to_owned(),
            args: base(passwords.operator)
                .chain(words(OPERATOR_RULES))
                .collect(),
        },
        User {
            name: REPLICATION_USER.to_owned(),
            args: base(passwords.replication)
                .chain(words(REPLICATION_RULES))
                .collect(),
        },
    ];
    let default_args: Vec<String> = match (acl.default_user(), passwords.default) {
        (DefaultUser::Disabled, _) => vec!["reset".to_owned(), "off".to_owned()],
        (DefaultUser::Enabled, Some(password)) => {
            base(password).chain(words(DEFAULT_RULES)).collect()
        }
        (DefaultUser::Enabled, None) => ["reset", "resetchannels", "on", "nopass"]
            .into_iter()
            .map(str::to_owned)
            .chain(words(DEFAULT_RULES))
            .collect(),
    };
    users.push(User {
        name: DEFAULT_USER.to_owned(),
        args: default_args,
    });
    for user in &acl.users {
        user_name_problem(&user.name).map_err(|why| format!("user name {why}"))?;
        let rules = parse_rules(&user.rules)
            .map_err(|why| format!("the rules of user {}: {why}", user.name))?;
        let password = passwords
            .users
            .get(&user.name)
            .ok_or_else(|| format!("no password for user {}", user.name))?;
        users.push(User {
            name: user.name.clone(),
            args: base(password).chain(rules.args).collect(),
        });
    }
    Ok(users)
}

/// The redis.conf lines of `users` (`user <name> <args>`): what a container loads at start.
/// Names and rules hold no quote, backslash or line break ([`desired`] checked them), so a
/// config line reads each argument as `ACL SETUSER` does.
pub fn config_lines(users: &[User]) -> String {
    users
        .iter()
        .map(|u| format!("user {} {}\n", u.name, u.args.join(" ")))
        .collect()
}

/// The words of a rule string.
fn words(rules: &str) -> impl Iterator<Item = String> + '_ {
    rules.split_ascii_whitespace().map(str::to_owned)
}

/// Redis's password hash (`ACL SETUSER ... #<hash>`): SHA-256, lowercase hex.
pub fn hash(password: &str) -> String {
    Sha256::digest(password.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `password` is one the operator generates (64 lowercase hex digits): anything else
/// found in its Secret was written by someone else, and is replaced.
pub fn is_generated(password: &str) -> bool {
    password.len() == 64
        && password
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A new password from 32 random bytes, as [`is_generated`] expects.
pub fn generate() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness from the system: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn acl(value: serde_json::Value) -> AclSpec {
        serde_json::from_value(value).expect("acl")
    }

    pub(crate) fn passwords(users: &HashMap<String, String>) -> Passwords<'_> {
        Passwords {
            default: Some("s3cr3t"),
            operator: "op",
            replication: "repl",
            users,
        }
    }

    #[test]
    fn the_operators_users_come_first_and_every_password_is_hashed() {
        let users = HashMap::from([("reader".to_owned(), "r-pass".to_owned())]);
        let spec = acl(
            json!({"users": [{"name": "reader", "rules": "~cache:* +@read",
            "passwordSecretRef": {"name": "s"}}]}),
        );
        let built = desired(&spec, passwords(&users)).expect("valid");
        let names: Vec<&str> = built.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["redis-operator", "masteruser", "default", "reader"]);
        let reader = &built[3];
        assert_eq!(
            reader.args,
            [
                "reset",
                "resetchannels",
                "on",
                &format!("#{}", hash("r-pass")),
                "~cache:*",
                "+@read"
            ]
        );
        let conf = config_lines(&built);
        for clear in ["r-pass", "s3cr3t", "op ", "repl "] {
            assert!(!conf.contains(clear), "{clear} in clear: {conf}");
        }
        assert!(conf.contains(&format!(
            "user default reset resetchannels on #{} ~* &* +@all\n",
            hash("s3cr3t")
        )));
    }

    #[test]
    fn the_default_user_is_off_when_disabled_and_open_without_a_password() {
        let none = HashMap::new();
        let off =
            desired(&acl(json!({"defaultUser": "Disabled"})), passwords(&none)).expect("valid");
        assert_eq!(off[2].args, ["reset", "off"]);
        let open = desired(
            &acl(json!({})),
            Passwords {
                default: None,
                ..passwords(&none)
            },
        )
        .expect("valid");
        assert!(open[2].args.contains(&"nopass".to_owned()), "{:?}", open[2]);
    }

    #[test]
    fn a_user_the_webhook_should_have_refused_applies_nothing() {
        let users = HashMap::from([("x".to_owned(), "p".to_owned())]);
        for user in [
            json!({"name": "default", "rules": "", "passwordSecretRef": {"name": "s"}}),
            json!({"name": "x", "rules": "\"~a b\"", "passwordSecretRef": {"name": "s"}}),
            json!({"name": "y", "rules": "", "passwordSecretRef": {"name": "s"}}),
        ] {
            let spec = acl(json!({"users": [user]}));
            assert!(desired(&spec, passwords(&users)).is_err(), "{spec:?}");
        }
    }

    #[test]
    fn generated_passwords() {
        let password = generate().expect("random");
        assert!(is_generated(&password), "{password}");
        assert_ne!(password, generate().expect("random"));
        assert!(!is_generated("short"));
        assert!(!is_generated(&"G".repeat(64)));
    }

    #[test]
    fn the_hash_is_redis_s() {
        // `ACL SETUSER u >foobar` then `ACL GETUSER u` on redis-server shows this hash.
        assert_eq!(
            hash("foobar"),
            "c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2"
        );
    }
}
