//! `spec.config` and `spec.maxMemoryPercentOfLimit` (§3m; `config`).

use super::*;

#[test]
fn config_refuses_unknown_owned_duplicate_and_misshapen_directives_listing_each() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"config": {
            "maxmemory-policy": "allkeys-lru",
            "notify-keyspace-events": "Ex",
            "save": "",
            "no-such-directive": "1",
            "rename-command": "FLUSHALL \"\"",
            "requirepass": "hunter2",
            "tls-port": "6380",
            "replicaof": "10.0.0.1 6379",
            "dir": "/tmp",
            "maxmemory": "lots",
            "databases": "0",
            "slave-read-only": "no",
            "replica-read-only": "yes"
        }}),
    ));
    let refused: Vec<&str> = fields(&v);
    assert_eq!(
        refused,
        [
            "spec.config[databases]",
            "spec.config[dir]",
            "spec.config[maxmemory]",
            "spec.config[no-such-directive]",
            "spec.config[rename-command]",
            "spec.config[replicaof]",
            "spec.config[requirepass]",
            "spec.config[slave-read-only]",
            "spec.config[tls-port]",
        ],
        "{}",
        v.message()
    );
    let message = v.message();
    assert!(
        message.contains(
            "spec.config[rename-command]: not settable here: restrict commands with ACL users"
        ),
        "{message}"
    );
    assert!(
        message.contains("spec.config[requirepass]: is set by the operator"),
        "{message}"
    );
    assert!(
        message.contains("spec.config[maxmemory]: must be a size in bytes"),
        "{message}"
    );
    assert!(
        message.contains("is the same directive as replica-read-only"),
        "{message}"
    );
    assert!(
        !message.contains("hunter2"),
        "a refused owned directive's value is not echoed"
    );
}

/// Each would reopen at run time what the operator closes (any case, with a valid value).
#[test]
fn config_refuses_the_switches_that_reopen_protected_configs_debug_and_modules() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"config": {
            "enable-protected-configs": "yes",
            "Enable-Debug-Command": "local",
            "enable-module-command": "no",
            "hz": "20"
        }}),
    ));
    assert_eq!(
        fields(&v),
        [
            "spec.config[Enable-Debug-Command]",
            "spec.config[enable-module-command]",
            "spec.config[enable-protected-configs]",
        ],
        "{}",
        v.message()
    );
    let message = v.message();
    assert!(
        message.contains(
            "spec.config[enable-protected-configs]: is not allowed: it lets CONFIG SET move dir"
        ),
        "{message}"
    );
    assert!(message.contains("MODULE LOAD"), "{message}");
}

#[test]
fn config_appendonly_is_the_storage_s_when_storage_is_set() {
    let plain = redis("r", json!({"config": {"appendonly": "yes"}}));
    assert!(Policy::default().validate_create(&plain).allowed());
    let stored = redis(
        "r",
        json!({"storage": {"size": "1Gi"}, "config": {"appendonly": "yes"}}),
    );
    let v = Policy::default().validate_create(&stored);
    assert_eq!(fields(&v), ["spec.config[appendonly]"], "{}", v.message());
}

#[test]
fn maxmemory_above_the_limit_and_a_percent_nothing_uses_warn() {
    let warned = |spec| {
        Policy::default()
            .validate_create(&redis("r", spec))
            .other_warnings()
    };
    let over = warned(json!({
        "resources": {"limits": {"memory": "128Mi"}},
        "config": {"maxmemory": "1gb"}
    }));
    assert!(over.iter().any(|w| w.contains("OOMKilled")), "{over:?}");
    assert!(
        warned(
            json!({"resources": {"limits": {"memory": "128Mi"}}, "config": {"maxmemory": "64mb"}})
        )
        .is_empty()
    );
    let unused = warned(json!({"maxMemoryPercentOfLimit": 70}));
    assert!(
        unused.iter().any(|w| w.contains("no memory limit")),
        "{unused:?}"
    );
    let high =
        warned(json!({"resources": {"limits": {"memory": "1Gi"}}, "maxMemoryPercentOfLimit": 95}));
    assert!(high.iter().any(|w| w.contains("95%")), "{high:?}");
    let v = Policy::default().validate_create(&redis("r", json!({"maxMemoryPercentOfLimit": 0})));
    assert_eq!(fields(&v), ["spec.maxMemoryPercentOfLimit"]);
}
