//! Redis's own configuration (`spec.config`, `spec.maxMemoryPercentOfLimit`; DESIGN §3m): which
//! redis.conf directives a Redis may set, what their values must look like, which of them a
//! running redis-server takes live and which need a restart, and the `maxmemory` derived from the
//! memory limit. Pure: the webhook refuses with it, the pod builder starts redis-server with it,
//! and the controller sets the live ones with it.
//!
//! - [`directives`]: Redis 7.0's table of directives (names, value shapes, live or not), the one
//!   source of which names exist.
//! - this module: the directives the operator owns ([`owned`]), the value rules
//!   ([`value_problem`]), live or restart ([`how_applied`]), and the effective settings of a spec
//!   ([`settings`]), which is all the pods and the controller ever use.

pub mod directives;

pub use directives::{Changes, Directive, Shape, directive};

use crate::types::RedisSpec;

/// Most directives in `spec.config` (Redis 7.0 has about 200).
pub const MAX_DIRECTIVES: usize = 256;
/// Longest value of one directive, in bytes.
pub const MAX_VALUE_LENGTH: usize = 1024;
/// `maxmemory` as a share of the redis container's memory limit when neither
/// `spec.maxMemoryPercentOfLimit` nor `spec.config.maxmemory` says otherwise: the rest is room for
/// a fork's copy-on-write pages (BGSAVE, a replica's full sync), client and replication buffers,
/// and the allocator's fragmentation.
pub const DEFAULT_MAX_MEMORY_PERCENT: i32 = 80;
/// Above this share a fork under write load can take the container over its limit: warned.
pub const HIGH_MAX_MEMORY_PERCENT: i32 = 90;

/// How a running redis-server takes a changed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// `CONFIG SET` on every pod; no restart.
    Live,
    /// Only at start: a change replaces the pods one at a time (switching over first), as any
    /// spec change does. The reason is said in the README's table and the Event.
    Restart(&'static str),
}

/// The one decision of live or restart (DESIGN §3m): Redis's own flags, nothing else.
pub fn how_applied(directive: &Directive) -> Applied {
    match directive.changes {
        Changes::Live => Applied::Live,
        Changes::Restart => Applied::Restart("redis-server reads it only at start"),
        Changes::Protected => Applied::Restart(
            "CONFIG SET refuses it unless enable-protected-configs allows it (a protected config)",
        ),
    }
}

/// Why the operator, not `spec.config`, sets directive `name` (its canonical name), if it does.
/// `spec` matters for `appendonly`, which is the Redis's own choice unless `spec.storage` says it.
pub fn owned(name: &str, spec: &RedisSpec) -> Option<&'static str> {
    Some(match name {
        "port" | "tls-port" => "the operator sets it from spec.port and spec.tls",
        n if n.starts_with("tls-") => "the operator sets TLS from spec.tls",
        "bind" | "bind-source-addr" | "protected-mode" => {
            "the operator has redis-server listen on the pod network"
        }
        "replicaof"
        | "masteruser"
        | "masterauth"
        | "replica-announce-ip"
        | "replica-announce-port"
        | "replica-announced" => "the operator sets replication (spec.mode) itself",
        "min-replicas-to-write" | "min-replicas-max-lag" => {
            "set it in spec.replication (minReplicasToWrite, minReplicasMaxLag)"
        }
        "requirepass" => "the password is spec.auth's (or spec.acl's users)",
        "aclfile" | "acl-pubsub-default" => "ACL users are spec.acl's",
        "dir" | "dbfilename" | "appendfilename" | "appenddirname" => {
            "the operator's data layout (spec.storage) puts them"
        }
        "appendonly" if spec.storage.is_some() => "set it in spec.storage.appendOnly",
        "daemonize" | "supervised" | "pidfile" | "logfile" => {
            "redis-server stays the container's process and logs to its output"
        }
        "cluster-enabled" | "cluster-config-file" => "Cluster mode is not supported",
        _ => return None,
    })
}

/// Why directive `name` (its canonical name) may not be set by any Redis, if so: each reopens at
/// run time what the operator closes (DESIGN §3m). Stored Redis that set one before this rule
/// run without it ([`settings`] leaves it out).
pub fn refused(name: &str) -> Option<&'static str> {
    Some(match name {
        "enable-protected-configs" => {
            "it lets CONFIG SET move dir and dbfilename at run time, under the operator's data layout and backups, and write files where the server can"
        }
        "enable-debug-command" => {
            "DEBUG can crash, freeze or reload the server (DEBUG SEGFAULT, SLEEP, RELOAD) outside the operator's failover and rollout"
        }
        "enable-module-command" => {
            "modules are not supported (MODULE LOAD runs any shared object the server can read)"
        }
        _ => return None,
    })
}

/// Why a name that is in no table is refused, where a more helpful word than "unknown" exists.
pub fn not_a_directive(name: &str) -> Option<&'static str> {
    Some(match name {
        "rename-command" => {
            "not settable here: restrict commands with ACL users (spec.acl) instead; the operator runs its own commands under their names"
        }
        "include" => "not settable here: set the directives themselves",
        "loadmodule" | "loadmodule-args" => "modules are not supported",
        "user" => "ACL users are spec.acl's",
        _ => return None,
    })
}

/// What is wrong with `value` for `directive`, if anything: what `CONFIG SET` would refuse where
/// the table says (bounds, units, enum words, yes/no), and what no value may hold (control
/// characters, which no config line or argument carries; a leading `--`, which redis-server's
/// command line reads as the next directive).
pub fn value_problem(directive: &Directive, value: &str) -> Option<String> {
    if value.len() > MAX_VALUE_LENGTH {
        return Some(format!(
            "must be at most {MAX_VALUE_LENGTH} bytes, got {}",
            value.len()
        ));
    }
    if value.chars().any(char::is_control) {
        return Some("must not contain control characters (line breaks, tabs, ...)".to_owned());
    }
    if value.starts_with("--") {
        return Some("must not start with --".to_owned());
    }
    match directive.shape {
        Shape::Bool => (!["yes", "no"].iter().any(|w| w.eq_ignore_ascii_case(value)))
            .then(|| "must be yes or no".to_owned()),
        Shape::Integer { min, max } => match value.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => None,
            Ok(_) => Some(format!("must be between {min} and {max}")),
            Err(_) => Some("must be a whole number".to_owned()),
        },
        Shape::Memory { min, max, percent } => {
            if percent && let Some(p) = value.strip_suffix('%') {
                return match p.parse::<u8>() {
                    Ok(p) if p <= 100 => None,
                    _ => Some("a percentage must be 0% to 100%".to_owned()),
                };
            }
            let extra = if percent { ", or a percentage" } else { "" };
            match memory_bytes(value) {
                Some(n) if i128::from(min.max(0)) <= n && n <= i128::from(max) => None,
                Some(_) => Some(format!("must be between {} and {max} bytes", min.max(0))),
                None => Some(format!(
                    "must be a size in bytes with an optional unit (b, k, kb, m, mb, g, gb){extra}, e.g. 100mb"
                )),
            }
        }
        Shape::Enum { values, several } => {
            let words: Vec<&str> = value.split(' ').filter(|w| !w.is_empty()).collect();
            let known = |w: &&str| values.iter().any(|v| v.eq_ignore_ascii_case(w));
            let fits = if several {
                !words.is_empty() && words.iter().all(known)
            } else {
                words.len() == 1 && words.iter().all(known)
            };
            (!fits).then(|| {
                let how = if several { "words of" } else { "one of" };
                format!("must be {how}: {}", values.join(", "))
            })
        }
        Shape::Text | Shape::Special => None,
    }
}

/// A memory size as Redis's `memtoull` reads it: digits and an optional unit b, k, kb, m, mb, g,
/// gb (any case; k is 1000, kb 1024).
pub fn memory_bytes(value: &str) -> Option<i128> {
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (digits, unit) = value.split_at(split);
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    let unit = unit.to_ascii_lowercase();
    let multiplier: i128 = match unit.as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<i128>().ok()?.checked_mul(multiplier)
}

/// One directive as the pods run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The canonical name (an alias in the spec is written as the name Redis lists first).
    pub name: &'static str,
    pub value: String,
    pub applied: Applied,
}

/// The share of the memory limit `maxmemory` gets (`spec.maxMemoryPercentOfLimit`, bounded
/// 1..=100, default [`DEFAULT_MAX_MEMORY_PERCENT`]).
pub fn max_memory_percent(spec: &RedisSpec) -> i32 {
    spec.max_memory_percent_of_limit
        .unwrap_or(DEFAULT_MAX_MEMORY_PERCENT)
        .clamp(1, 100)
}

/// The redis container's memory limit in bytes, if it has one.
pub fn memory_limit(spec: &RedisSpec) -> Option<u128> {
    let limits = spec.resources.as_ref()?.limits.as_ref()?;
    crate::storage::quantity_bytes(&limits.get("memory")?.0).filter(|b| *b > 0)
}

/// `maxmemory` derived from the memory limit (`limit × percent / 100`, whole bytes) when the
/// container has a limit and `spec.config` sets no `maxmemory`: without it Redis grows until the
/// kernel kills it (and, for a primary, a failover follows).
pub fn derived_max_memory(spec: &RedisSpec) -> Option<u128> {
    if user_value(spec, "maxmemory").is_some() {
        return None;
    }
    let percent = u128::try_from(max_memory_percent(spec)).ok()?;
    Some(memory_limit(spec)? * percent / 100)
}

/// The value `spec.config` gives directive `canonical` (by its name or alias), if any.
fn user_value<'a>(spec: &'a RedisSpec, canonical: &str) -> Option<&'a str> {
    spec.config.as_ref()?.iter().find_map(|(name, value)| {
        directive(name)
            .filter(|d| d.name == canonical)
            .map(|_| value.as_str())
    })
}

/// The settings the pods run: every entry of `spec.config` the rules accept (a known directive,
/// not the operator's, with a value of its shape; the webhook refuses the others, and the
/// controller never applies them should one be stored while it was down), and the derived
/// `maxmemory`; by name, each name once.
pub fn settings(spec: &RedisSpec) -> Vec<Setting> {
    let mut settings: Vec<Setting> = spec
        .config
        .iter()
        .flatten()
        .take(MAX_DIRECTIVES)
        .filter_map(|(name, value)| {
            let d = directive(name)?;
            (owned(d.name, spec).is_none()
                && refused(d.name).is_none()
                && value_problem(d, value).is_none())
            .then(|| Setting {
                name: d.name,
                value: value.clone(),
                applied: how_applied(d),
            })
        })
        .collect();
    if let Some(bytes) = derived_max_memory(spec) {
        settings.push(Setting {
            name: "maxmemory",
            value: bytes.to_string(),
            applied: Applied::Live,
        });
    }
    settings.sort_by(|a, b| a.name.cmp(b.name));
    // A name and its alias both written: the first (by the map's order) wins, as with any
    // duplicate; the webhook refuses the pair.
    settings.dedup_by(|later, first| later.name == first.name);
    settings
}

/// redis-server's command-line options for `settings` (`--name value`): the value one argument,
/// which redis-server quotes into its config line (so a space or a quote stays in the value).
/// `restart_only`: only the settings read at start, for the pod spec's hash (a live change then
/// replaces no pod).
pub fn start_args(settings: &[Setting], restart_only: bool) -> Vec<String> {
    settings
        .iter()
        .filter(|s| !restart_only || s.applied != Applied::Live)
        .flat_map(|s| [format!("--{}", s.name), s.value.clone()])
        .collect()
}

/// The directive names among redis-server command-line options `args` (a pod's container args):
/// what the pod started with, so a live directive since removed from the spec can be set back to
/// its default on that pod.
pub fn start_names(args: &[String]) -> Vec<&'static str> {
    args.iter()
        .filter_map(|a| a.strip_prefix("--"))
        .filter_map(directive)
        .map(|d| d.name)
        .collect()
}

#[cfg(test)]
mod tests;
