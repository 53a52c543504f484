//! `spec.tls` (§3k; `tls`).

use super::*;

#[test]
fn tls_needs_a_secret_name_a_secret_can_have() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"tls": {"secretRef": {"name": "Bad_Name"}}}),
    ));
    assert_eq!(fields(&v), ["spec.tls.secretRef.name"]);
    assert!(
        v.message().contains("must be a valid Secret name"),
        "{}",
        v.message()
    );

    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"tls": {"secretRef": {"name": "redis-tls"}, "clientAuth": "Required"}}),
    ));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
}

#[test]
fn a_plaintext_port_must_be_a_port_of_its_own_within_the_bounds_of_spec_port() {
    let tls = |port: i32, exporter: bool| {
        let mut spec =
            json!({"port": 6379, "tls": {"secretRef": {"name": "t"}, "plaintextPort": port}});
        if exporter {
            spec["exporter"] = json!({});
        }
        Policy::default().validate_create(&redis("r", spec))
    };
    let low = tls(6000, false);
    assert_eq!(fields(&low), ["spec.tls.plaintextPort"]);
    assert!(
        low.message().contains("must be >= 6379, got 6000"),
        "{}",
        low.message()
    );
    let same = tls(6379, false);
    assert!(
        same.message().contains("must differ from spec.port"),
        "{}",
        same.message()
    );
    let metrics = tls(9121, true);
    assert!(
        metrics
            .message()
            .contains("must differ from spec.exporter.port"),
        "{}",
        metrics.message()
    );
    assert!(tls(9121, false).allowed());

    let open = tls(6380, false);
    assert!(open.allowed(), "{}", open.message());
    assert_eq!(
        open.other_warnings(),
        [
            "spec.tls.plaintextPort: port 6380 serves Redis without TLS; the data cross the network in clear there"
        ]
    );
}

#[test]
fn tls_client_auth_takes_only_its_three_values() {
    let decoded: Result<RedisSpec, _> = serde_json::from_value(
        json!({"tls": {"secretRef": {"name": "t"}, "clientAuth": "Sometimes"}}),
    );
    assert!(decoded.is_err());
}

#[test]
fn tls_is_not_turned_on_or_off_under_running_replication() {
    let plain = redis("r", json!({"mode": "Replication", "replicas": 3}));
    let tls = redis(
        "r",
        json!({"mode": "Replication", "replicas": 3, "tls": {"secretRef": {"name": "t"}}}),
    );
    let on = Policy::default().validate_update(&tls, &plain);
    assert_eq!(fields(&on), ["spec.tls"]);
    assert!(
        on.message()
            .contains("cannot be added to a Replication Redis"),
        "{}",
        on.message()
    );
    let off = Policy::default().validate_update(&plain, &tls);
    assert!(
        off.message().contains("cannot be removed from"),
        "{}",
        off.message()
    );

    // One pod, or Standalone: each pod is replaced on its own.
    let single = redis("r", json!({"mode": "Replication", "replicas": 1}));
    let single_tls = redis(
        "r",
        json!({"mode": "Replication", "replicas": 1, "tls": {"secretRef": {"name": "t"}}}),
    );
    assert!(
        Policy::default()
            .validate_update(&single_tls, &single)
            .allowed()
    );
    let standalone = redis("r", json!({"replicas": 3}));
    let standalone_tls = redis(
        "r",
        json!({"replicas": 3, "tls": {"secretRef": {"name": "t"}}}),
    );
    assert!(
        Policy::default()
            .validate_update(&standalone_tls, &standalone)
            .allowed()
    );

    let moved = redis(
        "r",
        json!({"mode": "Replication", "replicas": 3, "tls": {"secretRef": {"name": "u"}}}),
    );
    let v = Policy::default().validate_update(&moved, &tls);
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.other_warnings()
            .iter()
            .any(|w| w.starts_with("spec.tls.secretRef.name")),
        "{:?}",
        v.warnings
    );
}
