//! Replication mode and `spec.replication`, with their warnings (§3b; `replication`).

use super::*;

#[test]
fn a_replication_redis_with_auth_passes_quietly() {
    let v = Policy::default().validate_create(&replicated(json!({})));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
    let v = Policy::default().validate_create(&replicated(json!({"replication": {
        "minReplicasToWrite": 2, "minReplicasMaxLag": 1, "failoverAfter": "1h"
    }})));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
}

#[test]
fn replication_needs_a_pod() {
    let v = Policy::default().validate_create(&replicated(json!({"replicas": 0})));
    assert_eq!(
        v.message(),
        "spec.replicas: must be >= 1 in Replication mode (one pod is the primary), got 0"
    );
    // Standalone may run no pods (with its warning).
    let v = Policy::default().validate_create(&redis("r", json!({"replicas": 0})));
    assert!(v.allowed(), "{}", v.message());
    let v = Policy::default()
        .validate_create(&redis("r", json!({"replicas": 0, "mode": "Standalone"})));
    assert!(v.allowed(), "{}", v.message());
}

#[test]
fn failover_after_must_parse_and_lie_between_1s_and_1h() {
    for good in ["1s", "10s", "1m30s", "500ms 1s", "1h", "60m"] {
        let v = Policy::default()
            .validate_create(&replicated(json!({"replication": {"failoverAfter": good}})));
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for (bad, says) in [
        (
            "soon",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"soon\"",
        ),
        (
            "10",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"10\"",
        ),
        (
            "",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"\"",
        ),
        ("999ms", "must be between 1s and 1h, got \"999ms\""),
        ("0s", "must be between 1s and 1h, got \"0s\""),
        ("1h1s", "must be between 1s and 1h, got \"1h1s\""),
        (
            "99999999999999999999s",
            "must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"99999999999999999999s\"",
        ),
    ] {
        let v = Policy::default()
            .validate_create(&replicated(json!({"replication": {"failoverAfter": bad}})));
        assert_eq!(fields(&v), vec!["spec.replication.failoverAfter"], "{bad}");
        assert_eq!(v.violations[0].message, says, "{bad}");
    }
}

#[test]
fn replication_counts_have_their_minimums() {
    let v = Policy::default().validate_create(&replicated(json!({"replication": {
        "minReplicasToWrite": -1, "minReplicasMaxLag": 0
    }})));
    assert_eq!(
        v.message(),
        "spec.replication.minReplicasToWrite: must be >= 0, got -1; \
         spec.replication.minReplicasMaxLag: must be >= 1 (seconds), got 0"
    );
}

#[test]
fn replication_values_are_checked_in_standalone_mode_too() {
    // Ignored while Standalone, but they would take effect on a switch of mode.
    let v = Policy::default()
        .validate_create(&redis("r", json!({"replication": {"failoverAfter": "2h"}})));
    assert_eq!(fields(&v), vec!["spec.replication.failoverAfter"]);
}

#[test]
fn replication_warnings() {
    let warns = |r: Redis| Policy::default().validate_create(&r).other_warnings();
    let one = warns(replicated(json!({"replicas": 1})));
    assert_eq!(one.len(), 1, "{one:?}");
    assert!(
        one[0].starts_with("spec.replicas: 1 in Replication mode")
            && one[0].contains("no failover is possible"),
        "{one:?}"
    );

    let open = warns(redis(
        "r",
        json!({"replicas": 3, "image": "redis:7", "mode": "Replication"}),
    ));
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(
        open[0].starts_with("spec.auth: not set in Replication mode")
            && open[0].contains("any pod that can reach the pods can read and write"),
        "{open:?}"
    );

    let strict = warns(replicated(
        json!({"replication": {"minReplicasToWrite": 3}}),
    ));
    assert_eq!(
        strict,
        vec!["spec.replication.minReplicasToWrite: 3 is more than the 2 replica(s) of 3 pods, so writes will be refused".to_owned()]
    );
    assert!(
        warns(replicated(
            json!({"replication": {"minReplicasToWrite": 2}})
        ))
        .is_empty()
    );
    // Two pods with a single required replica is fine; one pod with one is not.
    assert!(
        warns(replicated(
            json!({"replicas": 2, "replication": {"minReplicasToWrite": 1}})
        ))
        .is_empty()
    );
    assert_eq!(
        warns(replicated(
            json!({"replicas": 1, "replication": {"minReplicasToWrite": 1}})
        ))
        .len(),
        2
    );
    // Refused anyway with no pods: no replication warning piled on the denial.
    let v = Policy::default().validate_create(&replicated(json!({"replicas": 0})));
    assert_eq!(
        v.other_warnings(),
        vec!["spec.replicas: 0 runs no Redis pods".to_owned()]
    );
}

#[test]
fn standalone_stays_quiet_about_auth_and_warns_about_ignored_replication() {
    // The tutorial's Redis has no auth: no warning about it.
    let v = Policy::default().validate_create(&valid());
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"replicas": 1, "image": "redis:7", "mode": "Standalone"}),
    ));
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
    for spec in [
        json!({"image": "redis:7", "replication": {"failoverAfter": "30s"}}),
        json!({"image": "redis:7", "mode": "Standalone", "replication": {}}),
    ] {
        let v = Policy::default().validate_create(&redis("r", spec.clone()));
        assert!(v.allowed(), "{spec}: {}", v.message());
        assert_eq!(
            v.other_warnings(),
            vec!["spec.replication: ignored in Standalone mode (set spec.mode: Replication to use it)".to_owned()],
            "{spec}"
        );
    }
}

#[test]
fn a_replication_primary_that_would_take_writes_cut_off_is_warned_about() {
    let warns = |extra: serde_json::Value| Policy::default().validate_create(&replicated(extra));
    let unbounded = |which: &str| {
        format!(
            "spec.replication.minReplicasToWrite: {which} lets a primary cut off from its replicas keep accepting writes, which a failover to a replica then discards; set it to 1 so that such a primary refuses writes after minReplicasMaxLag seconds (writes then also wait for a connected replica), or run 3 or more pods, where 1 is the default"
        )
    };
    // Two pods: the default is 0.
    assert_eq!(
        warns(json!({"replicas": 2})).warnings,
        [unbounded("0 (the default below 3 pods)")]
    );
    // Set to 0 by hand (or stored by an earlier webhook), whatever the count.
    assert_eq!(
        warns(json!({"replicas": 5, "replication": {"minReplicasToWrite": 0}})).warnings,
        [unbounded("0")]
    );
    // Bounded: nothing to say.
    for quiet in [
        json!({"replicas": 3}),
        json!({"replicas": 2, "replication": {"minReplicasToWrite": 1}}),
        json!({"replicas": 4, "replication": {"minReplicasToWrite": 2}}),
    ] {
        let v = warns(quiet.clone());
        assert!(v.warnings.is_empty(), "{quiet}: {:?}", v.warnings);
    }
    // One pod has no replica to lose writes to; Standalone mode has no failover.
    assert!(
        !warns(json!({"replicas": 1}))
            .warnings
            .iter()
            .any(|w| w.contains("cut off")),
    );
    let standalone = Policy::default().validate_create(&redis(
        "r",
        json!({"replicas": 2, "image": "redis:7", "replication": {"minReplicasToWrite": 0}}),
    ));
    assert!(
        !standalone.warnings.iter().any(|w| w.contains("cut off")),
        "{:?}",
        standalone.warnings
    );
    // The warning about a value above the replica count stays.
    assert_eq!(
        warns(json!({"replicas": 2, "replication": {"minReplicasToWrite": 2}})).warnings,
        [
            "spec.replication.minReplicasToWrite: 2 is more than the 1 replica(s) of 2 pods, so writes will be refused"
        ]
    );
}
