//! The configuration rules (§3m), pure: names, owned directives, value shapes, live or restart,
//! the derived maxmemory and the start arguments.

use super::*;
use serde_json::json;

fn spec(value: serde_json::Value) -> RedisSpec {
    serde_json::from_value(value).expect("a spec")
}

fn shape_problem(name: &str, value: &str) -> Option<String> {
    value_problem(directive(name).expect("a directive"), value)
}

#[test]
fn names_are_found_as_redis_finds_them_by_name_or_alias_in_any_case() {
    assert_eq!(
        directive("MaxMemory-Policy").map(|d| d.name),
        Some("maxmemory-policy")
    );
    assert_eq!(directive("slaveof").map(|d| d.name), Some("replicaof"));
    assert!(directive("no-such-directive").is_none());
    assert!(
        directive("rename-command").is_none(),
        "not in the table: not settable"
    );
}

#[test]
fn the_operator_owns_what_it_sets_itself() {
    let plain = spec(json!({}));
    for name in [
        "port",
        "tls-port",
        "tls-cert-file",
        "bind",
        "protected-mode",
        "replicaof",
        "masterauth",
        "masteruser",
        "requirepass",
        "min-replicas-to-write",
        "min-replicas-max-lag",
        "aclfile",
        "dir",
        "dbfilename",
        "appendfilename",
        "daemonize",
        "logfile",
        "cluster-enabled",
    ] {
        let d = directive(name).expect(name);
        assert!(owned(d.name, &plain).is_some(), "{name}");
    }
    assert!(
        owned("appendonly", &plain).is_none(),
        "without storage appendonly is the Redis's own"
    );
    let stored = spec(json!({"storage": {"size": "1Gi"}}));
    assert!(
        owned("appendonly", &stored).is_some(),
        "spec.storage.appendOnly says it"
    );
    for name in [
        "maxmemory",
        "maxmemory-policy",
        "save",
        "notify-keyspace-events",
        "databases",
    ] {
        assert!(owned(name, &plain).is_none(), "{name}");
    }
}

#[test]
fn values_are_judged_by_the_shape_redis_gives_them() {
    // Booleans, any case.
    assert_eq!(shape_problem("lazyfree-lazy-eviction", "YES"), None);
    assert!(shape_problem("lazyfree-lazy-eviction", "true").is_some());
    // Integers within the table's bounds.
    assert_eq!(shape_problem("databases", "32"), None);
    assert!(shape_problem("databases", "0").is_some());
    assert!(shape_problem("databases", "lots").is_some());
    // Sizes with Redis's units, and a percentage where the directive takes one.
    for ok in ["0", "100mb", "1GB", "512k", "1073741824", "7b"] {
        assert_eq!(shape_problem("maxmemory", ok), None, "{ok}");
    }
    for bad in ["100MiB", "1.5gb", "-1", "", "mb", "10%"] {
        assert!(shape_problem("maxmemory", bad).is_some(), "{bad}");
    }
    assert_eq!(shape_problem("maxmemory-clients", "10%"), None);
    assert!(shape_problem("maxmemory-clients", "101%").is_some());
    // Enums: one word, or several where Redis takes several.
    assert_eq!(shape_problem("maxmemory-policy", "ALLKEYS-LRU"), None);
    assert!(shape_problem("maxmemory-policy", "allkeys-lru volatile-lru").is_some());
    assert!(shape_problem("maxmemory-policy", "lru").is_some());
    assert_eq!(shape_problem("shutdown-on-sigterm", "save now"), None);
    // Free text and special values go to Redis as they are, but never a line break or
    // something the command line reads as the next directive.
    assert_eq!(shape_problem("save", ""), None);
    assert_eq!(shape_problem("save", "3600 1 300 100"), None);
    assert_eq!(shape_problem("notify-keyspace-events", "Ex"), None);
    assert!(shape_problem("notify-keyspace-events", "Ex\nrequirepass x").is_some());
    assert!(shape_problem("notify-keyspace-events", "--requirepass").is_some());
    assert!(shape_problem("save", &"1 ".repeat(MAX_VALUE_LENGTH)).is_some());
}

#[test]
fn live_or_restart_is_redis_s_own_flag() {
    let applied = |name| how_applied(directive(name).expect(name));
    assert_eq!(applied("maxmemory-policy"), Applied::Live);
    assert_eq!(applied("save"), Applied::Live);
    assert!(matches!(applied("databases"), Applied::Restart(_)));
    assert!(matches!(applied("io-threads"), Applied::Restart(_)));
    assert!(matches!(applied("dir"), Applied::Restart(_)), "protected");
}

#[test]
fn maxmemory_is_derived_from_the_memory_limit_unless_config_sets_it() {
    let limited = |extra: serde_json::Value| {
        let mut s = json!({"resources": {"limits": {"memory": "128Mi"}}});
        if let (Some(s), Some(extra)) = (s.as_object_mut(), extra.as_object()) {
            s.extend(extra.clone());
        }
        spec(s)
    };
    // 80% of 128 MiB: about 102 MiB.
    assert_eq!(derived_max_memory(&limited(json!({}))), Some(107_374_182));
    assert_eq!(
        derived_max_memory(&limited(json!({"maxMemoryPercentOfLimit": 50}))),
        Some(64 * 1024 * 1024)
    );
    assert_eq!(
        derived_max_memory(&limited(json!({"config": {"maxmemory": "0"}}))),
        None
    );
    assert_eq!(
        derived_max_memory(&spec(json!({}))),
        None,
        "no limit, nothing derived"
    );
    let s = limited(json!({"config": {"maxmemory-policy": "allkeys-lru"}}));
    let all = settings(&s);
    let names: Vec<(&str, &str)> = all.iter().map(|s| (s.name, s.value.as_str())).collect();
    assert_eq!(
        names,
        [
            ("maxmemory", "107374182"),
            ("maxmemory-policy", "allkeys-lru")
        ]
    );
}

#[test]
fn settings_keep_only_what_the_webhook_accepts_under_canonical_names() {
    let s = spec(json!({"config": {
        "SLAVE-read-only": "no",
        "port": "1",
        "requirepass": "x",
        "no-such": "1",
        "databases ": "2",
        "notify-keyspace-events": "Ex",
        "databases": "4"
    }}));
    let all = settings(&s);
    let kept: Vec<(&str, &str, bool)> = all
        .iter()
        .map(|s| (s.name, s.value.as_str(), s.applied == Applied::Live))
        .collect();
    assert_eq!(
        kept,
        [
            ("databases", "4", false),
            ("notify-keyspace-events", "Ex", true),
            ("replica-read-only", "no", true),
        ]
    );
}

#[test]
fn start_args_hold_every_setting_and_the_hash_only_the_restart_ones() {
    let s =
        spec(json!({"config": {"databases": "4", "save": "", "maxmemory-policy": "allkeys-lru"}}));
    let all = settings(&s);
    assert_eq!(
        start_args(&all, false),
        [
            "--databases",
            "4",
            "--maxmemory-policy",
            "allkeys-lru",
            "--save",
            ""
        ]
    );
    assert_eq!(start_args(&all, true), ["--databases", "4"]);
    let args: Vec<String> = [
        "--port",
        "6379",
        "--save",
        "",
        "--maxmemory-policy",
        "x",
        "--nope",
        "1",
    ]
    .map(str::to_owned)
    .to_vec();
    assert_eq!(start_names(&args), ["port", "save", "maxmemory-policy"]);
}

#[test]
fn the_readme_lists_exactly_the_directives_a_redis_may_set_that_roll_the_pods() {
    let readme = include_str!("../../../../README.md");
    let section = readme
        .split("- **Restart**")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("README's Restart paragraph");
    let listed: Vec<&str> = section.split('`').skip(1).step_by(2).collect();
    let plain = RedisSpec::default();
    let mut rolling: Vec<&str> = directives::DIRECTIVES
        .iter()
        .filter(|d| {
            how_applied(d) != Applied::Live
                && owned(d.name, &plain).is_none()
                && refused(d.name).is_none()
        })
        .map(|d| d.name)
        .collect();
    rolling.sort_unstable();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort_unstable();
    assert_eq!(listed_sorted, rolling, "README's Restart list: {listed:?}");
}
