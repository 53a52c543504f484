//! ACL users (`spec.acl`, DESIGN §3l): the type, the users the operator reserves, the Secret it
//! keeps their passwords in, and the grammar of a user's rules as redis-server's
//! `ACL SETUSER` reads them (Redis 7, `ACLSetUser`/`ACLSetSelector` in `src/acl.c`). The webhook
//! refuses what the grammar refuses (`validation`'s `acl` module); the controller checks again
//! before a rule reaches a pod (its `acl` folder), since what a tenant writes is hostile input.

use crate::secret::SecretKeyRef;
use crate::shown::shown;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Redis's own user: `spec.auth`'s password, enabled unless `defaultUser: Disabled`.
pub const DEFAULT_USER: &str = "default";
/// The operator's user: the commands the controller (and the exporter beside each pod) runs.
pub const OPERATOR_USER: &str = "redis-operator";
/// The user replicas authenticate as with their primary (`masteruser`).
pub const REPLICATION_USER: &str = "masteruser";
/// Names no `spec.acl.users[]` may take.
pub const RESERVED_USERS: [&str; 3] = [DEFAULT_USER, OPERATOR_USER, REPLICATION_USER];

/// What the operator's user may run: reads of the servers' state, the replication and failover
/// commands, the live settings (passwords, TLS files, the write guard), the ACL commands that
/// apply users, and what the metrics exporter reads. No key and no channel. Only commands every
/// Redis 7 has: redis-server does not start from a config whose user names one it lacks.
pub const OPERATOR_RULES: &str = "+ping +info +role +config|get +config|set +replicaof +slaveof \
     +client|pause +client|unpause +client|list +client|info +wait +acl|setuser \
     +acl|deluser +acl|users +slowlog +latency +dbsize +select +memory|stats +hello +command|count";
/// What a replica needs of its primary (Redis's documentation of `masteruser`).
pub const REPLICATION_RULES: &str = "+psync +replconf +ping";
/// The default user's rules when enabled: everything, as without ACLs.
pub const DEFAULT_RULES: &str = "~* &* +@all";

/// The Secret the operator keeps for a Redis with `spec.acl` (owned by the Redis): the generated
/// passwords of its own two users, and the users every pod loads when its container starts.
pub fn secret_name(redis: &str) -> String {
    format!("{redis}-acl")
}
/// Keys of that Secret.
pub const OPERATOR_PASSWORD_KEY: &str = "redis-operator";
pub const REPLICATION_PASSWORD_KEY: &str = "masteruser";
/// redis.conf `user` lines (passwords as SHA-256 hashes only).
pub const USERS_KEY: &str = "users.conf";

/// Most users `spec.acl.users` may list, and the longest user name and rule string.
pub const MAX_USERS: usize = 32;
pub const MAX_USER_NAME_LENGTH: usize = 64;
pub const MAX_RULES_LENGTH: usize = 4096;

/// Redis ACL users beside the operator's own.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AclSpec {
    /// Whether Redis's `default` user (the one clients get without a user name; its password is spec.auth's) may log in: Enabled (the default) or Disabled. Disabled: only the users listed here (and the operator's own) can connect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_user: Option<DefaultUser>,

    /// Users to create on every pod, each with its rules and a password read from a Secret. Added, changed and removed on the running pods (ACL SETUSER / ACL DELUSER), without a restart. At most 32.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub users: Vec<AclUser>,
}

/// Whether the `default` user is enabled.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum DefaultUser {
    /// Clients without a user name log in with spec.auth's password (or none without spec.auth).
    #[default]
    Enabled,
    /// The default user is off: every client names a user of spec.acl.users.
    Disabled,
}

/// One ACL user.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AclUser {
    /// The user name clients give to AUTH: 1 to 64 letters, digits, '-', '_' and '.'; not default, redis-operator or masteruser (the operator's).
    #[schemars(length(min = 1, max = 64))]
    pub name: String,

    /// What the user may do, in Redis's ACL rule syntax, e.g. "~cache:* +@read". The user starts with no key, channel or command; passwords are not given here (passwordSecretRef is) and neither is `reset`.
    #[schemars(length(max = 4096))]
    pub rules: String,

    /// The Secret (in the Redis's namespace) and key holding the user's password. A changed password is set on the running pods.
    pub password_secret_ref: SecretKeyRef,
}

impl AclSpec {
    /// The default user's setting in effect.
    pub fn default_user(&self) -> DefaultUser {
        self.default_user.unwrap_or_default()
    }
}

impl AclUser {
    /// The Secret and key of the password ("password" when no key is given).
    pub fn secret(&self) -> (&str, &str) {
        (
            &self.password_secret_ref.name,
            self.password_secret_ref
                .key
                .as_deref()
                .unwrap_or("password"),
        )
    }
}

/// The ACL categories of Redis 7 (`ACL CAT`), and `all`. A category outside them is refused by
/// a Redis 7 server; a later Redis (or a module) may add some, so they are only warned about.
pub const CATEGORIES: [&str; 22] = [
    "all",
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// What a rule string holds, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// The rules, one per `ACL SETUSER` argument (a selector, `(...)`, is one).
    pub args: Vec<String>,
    /// Categories Redis 7 does not know (`+@name`, `-@name`): a newer server's, or a typo.
    pub unknown_categories: Vec<String>,
}

/// The rules of `rules`, as `ACL SETUSER` would read them after the operator's own
/// `reset resetkeys resetchannels`, or why redis-server (or the operator) refuses them.
/// Commands are checked for their form only: which exist depends on the image's Redis version
/// and modules, and redis-server itself refuses an unknown one when the operator applies it.
pub fn parse_rules(rules: &str) -> Result<Rules, String> {
    if rules.len() > MAX_RULES_LENGTH {
        return Err(format!(
            "must be no more than {MAX_RULES_LENGTH} characters, got {}",
            rules.len()
        ));
    }
    // The rules reach redis-server in a redis.conf `user` line too, where quotes and backslashes
    // would be read as quoting: refused, with every other control character.
    if let Some(c) = rules
        .chars()
        .find(|c| matches!(c, '"' | '\'' | '\\') || (c.is_control() && !c.is_ascii_whitespace()))
    {
        return Err(format!("must not contain {c:?}"));
    }
    let mut parsed = Rules::default();
    let mut root = Selector::default();
    let mut tokens = rules.split_ascii_whitespace();
    while let Some(token) = tokens.next() {
        if token.starts_with('(') {
            // `ACLMergeSelectorArguments`: a selector runs to the first token ending in `)`.
            let mut parts = vec![token];
            while !parts.last().is_some_and(|t| t.ends_with(')')) {
                match tokens.next() {
                    Some(next) => parts.push(next),
                    None => return Err(format!("selector {} has no closing ')'", q(token))),
                }
            }
            let joined = parts.join(" ");
            let inner = &joined[1..joined.len() - 1];
            let mut selector = Selector::default();
            for op in inner.split_ascii_whitespace() {
                selector.apply(op, &mut parsed.unknown_categories)?;
            }
            parsed.args.push(joined);
            continue;
        }
        let lower = token.to_ascii_lowercase();
        match lower.as_str() {
            "on" | "off" | "sanitize-payload" | "skip-sanitize-payload" | "clearselectors" => {}
            "reset" => {
                return Err(
                    "must not contain \"reset\": every user starts from reset (no key, channel or command)"
                        .to_owned(),
                );
            }
            "nopass" | "resetpass" => {
                return Err(format!(
                    "must not contain {}: the password comes from passwordSecretRef",
                    q(token)
                ));
            }
            _ if token.starts_with(['>', '<', '#', '!']) => {
                return Err(format!(
                    "must not set passwords ({:?}...): the password comes from passwordSecretRef",
                    &token[..1]
                ));
            }
            _ if token.ends_with(')') => {
                return Err(format!("{} closes a selector never opened", q(token)));
            }
            _ => root.apply(token, &mut parsed.unknown_categories)?,
        }
        parsed.args.push(token.to_owned());
    }
    Ok(parsed)
}

/// A tenant's token as a message shows it: quoted, cut and escaped.
fn q(token: &str) -> String {
    format!("\"{}\"", shown(token))
}

/// The key and channel state of one selector that decides whether a pattern is refused.
#[derive(Default)]
struct Selector {
    all_keys: bool,
    all_channels: bool,
}

impl Selector {
    /// One selector rule (`ACLSetSelector`).
    fn apply(&mut self, op: &str, unknown: &mut Vec<String>) -> Result<(), String> {
        let lower = op.to_ascii_lowercase();
        match lower.as_str() {
            "allkeys" | "~*" => self.all_keys = true,
            "resetkeys" => self.all_keys = false,
            "allchannels" | "&*" => self.all_channels = true,
            "resetchannels" => self.all_channels = false,
            "allcommands" | "+@all" | "nocommands" | "-@all" => {}
            _ if op.starts_with(['~', '%']) => {
                if self.all_keys {
                    return Err(format!(
                        "{}: a key pattern after '~*' (or allkeys) has no effect; Redis refuses it (start with resetkeys)",
                        q(op)
                    ));
                }
                if let Some(rest) = op.strip_prefix('%') {
                    key_permission(rest).map_err(|why| format!("{}: {why}", q(op)))?;
                }
            }
            _ if op.starts_with('&') => {
                if self.all_channels {
                    return Err(format!(
                        "{}: a channel pattern after '&*' (or allchannels) has no effect; Redis refuses it (start with resetchannels)",
                        q(op)
                    ));
                }
            }
            _ if op.starts_with("+@") || op.starts_with("-@") => {
                let category = &lower[2..];
                if category.is_empty() {
                    return Err(format!("{}: no category after '@'", q(op)));
                }
                if !CATEGORIES.contains(&category) && !unknown.iter().any(|c| c == category) {
                    unknown.push(category.to_owned());
                }
            }
            _ if op.starts_with(['+', '-']) => {
                command(&op[1..]).map_err(|why| format!("{}: {why}", q(op)))?;
            }
            _ => {
                return Err(format!(
                    "{} is not an ACL rule (on, off, ~pattern, %R~pattern, &pattern, +command, -command, +@category, -@category, allkeys, resetkeys, allchannels, resetchannels, allcommands, nocommands, (selector), clearselectors)",
                    q(op)
                ));
            }
        }
        Ok(())
    }
}

/// The `R`/`W` flags of `%<flags>~<pattern>`: each at most once, at least one, then `~`.
fn key_permission(rest: &str) -> Result<(), String> {
    let (flags, _pattern) = rest
        .split_once('~')
        .ok_or("a key permission is %R~, %W~ or %RW~ followed by a pattern")?;
    let mut seen = (false, false);
    for flag in flags.chars() {
        match flag.to_ascii_uppercase() {
            'R' if !seen.0 => seen.0 = true,
            'W' if !seen.1 => seen.1 = true,
            _ => return Err(format!("{flag:?} is not R or W (each once)")),
        }
    }
    if !(seen.0 || seen.1) {
        return Err("no R or W before '~'".to_owned());
    }
    Ok(())
}

/// A command name, or `command|subcommand` (with `+`, also `command|first-arg`).
fn command(name: &str) -> Result<(), String> {
    let word = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    };
    match name.split_once('|') {
        None if word(name) => Ok(()),
        Some((command, sub)) if word(command) && word(sub) => Ok(()),
        _ => Err(
            "not a command name (letters, digits, '-', '_', '.', ':', and '|subcommand')"
                .to_owned(),
        ),
    }
}

/// Whether `name` is a user name `spec.acl.users` may take: 1 to 64 letters, digits, `-`, `_`
/// and `.` (Redis itself takes any name without spaces; these also read safely in a
/// redis.conf line, a log and an Event), and none the operator reserves.
pub fn user_name_problem(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".to_owned());
    }
    if name.len() > MAX_USER_NAME_LENGTH {
        return Err(format!(
            "must be no more than {MAX_USER_NAME_LENGTH} characters, got {}",
            name.len()
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err("must consist of letters, digits, '-', '_' and '.'".to_owned());
    }
    if RESERVED_USERS.iter().any(|r| r.eq_ignore_ascii_case(name)) {
        return Err(format!(
            "is reserved: {} are the operator's users",
            RESERVED_USERS.join(", ")
        ));
    }
    Ok(())
}

/// Rule strings [`parse_rules`] takes, each of which a real redis-server takes too (checked by
/// `e2e/tests/redis_acl.rs`).
pub const RULES_REDIS_TAKES: [&str; 8] = [
    "~cache:* +@read",
    "on ~* &* +@all",
    "%R~cache:* %W~out:* +get +set",
    "%RW~x allchannels -@dangerous +client|setname +select|0 -config|set",
    "resetkeys ~a allkeys",
    "~a (~b +get) (%R~c +@read)",
    "off ~app:* &news:* +@read +@write -flushall",
    "",
];

/// Rule strings [`parse_rules`] refuses for Redis's own reasons (not the operator's: passwords,
/// `reset`, quotes), each of which a real redis-server refuses too.
pub const RULES_REDIS_REFUSES: [&str; 10] = [
    "~* ~cache:*",
    "allkeys %R~x",
    "&* &news",
    "%X~a",
    "%RR~a",
    "%~a",
    "+get|",
    "+@",
    "get",
    "(~* ~a)",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_redis_accepts_are_accepted() {
        for rules in RULES_REDIS_TAKES.into_iter().chain(["+@search"]) {
            assert!(
                parse_rules(rules).is_ok(),
                "{rules}: {:?}",
                parse_rules(rules)
            );
        }
        assert_eq!(
            parse_rules("~a (~b +get)").map(|r| r.args),
            Ok(vec!["~a".to_owned(), "(~b +get)".to_owned()])
        );
        assert_eq!(
            parse_rules("+@search -@json").map(|r| r.unknown_categories),
            Ok(vec!["search".to_owned(), "json".to_owned()])
        );
    }

    #[test]
    fn rules_redis_refuses_are_refused() {
        for rules in RULES_REDIS_REFUSES {
            assert!(parse_rules(rules).is_err(), "{rules}");
        }
    }

    #[test]
    fn rules_redis_or_the_operator_refuses_are_refused_with_the_reason() {
        for (rules, why) in [
            ("~* ~cache:*", "after '~*'"),
            ("allkeys %R~x", "after '~*'"),
            ("&* &news", "after '&*'"),
            ("%X~a", "not R or W"),
            ("%RR~a", "not R or W"),
            ("%~a", "no R or W"),
            ("%R", "followed by a pattern"),
            ("+get|", "not a command name"),
            ("-config|", "not a command name"),
            ("+@", "no category"),
            ("get", "not an ACL rule"),
            (">secret", "passwordSecretRef"),
            ("#abc", "passwordSecretRef"),
            ("nopass", "passwordSecretRef"),
            ("reset", "starts from reset"),
            ("(~a +get", "no closing"),
            ("+get)", "never opened"),
            ("(~* ~a)", "after '~*'"),
            ("~\"a b\"", "must not contain"),
            ("~a\\b", "must not contain"),
        ] {
            let got = parse_rules(rules);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(why)),
                "{rules}: {got:?}"
            );
        }
    }

    #[test]
    fn user_names() {
        assert!(user_name_problem("reader").is_ok());
        assert!(user_name_problem("app.v2_x-1").is_ok());
        for bad in [
            "",
            "default",
            "Redis-Operator",
            "masteruser",
            "a b",
            "a:b",
            &"x".repeat(65),
        ] {
            assert!(user_name_problem(bad).is_err(), "{bad}");
        }
    }
}
