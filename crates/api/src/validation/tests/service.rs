//! `spec.service` and the Service names a Redis's name must make (§3n; `service`).

use super::*;

#[test]
fn service_settings_only_where_their_type_takes_them_with_valid_keys_and_cidrs() {
    let ok = Policy::default().validate_create(&redis(
        "r",
        json!({"service": {"type": "LoadBalancer", "annotations": {"example.com/lb": "internal"},
                           "loadBalancerSourceRanges": ["10.0.0.0/8", "fd00::/64"],
                           "externalTrafficPolicy": "Local"}}),
    ));
    assert!(ok.allowed(), "{}", ok.message());
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"service": {"type": "NodePort",
                           "annotations": {"myapp.tangx.in/x": "1", "bad key!": "2"},
                           "loadBalancerSourceRanges": ["10.0.0.0/33"]}}),
    ));
    assert_eq!(
        fields(&v),
        [
            "spec.service.annotations[bad key!]",
            "spec.service.annotations[myapp.tangx.in/x]",
            "spec.service.loadBalancerSourceRanges",
            "spec.service.loadBalancerSourceRanges[0]",
        ],
        "{}",
        v.message()
    );
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"service": {"externalTrafficPolicy": "Local"}}),
    ));
    assert_eq!(fields(&v), ["spec.service.externalTrafficPolicy"]);
    let open =
        Policy::default().validate_create(&redis("r", json!({"service": {"type": "NodePort"}})));
    assert!(
        open.other_warnings().iter().any(|w| w.contains("no auth")),
        "{:?}",
        open.warnings
    );
}

#[test]
fn the_name_must_name_every_service_the_redis_gets() {
    let create =
        |name: &str, spec: serde_json::Value| Policy::default().validate_create(&redis(name, spec));
    // Kubernetes takes these as Redis names (DNS-1123 subdomains), but not as Service names.
    for name in ["1cache", "my.cache"] {
        let v = create(name, json!({}));
        assert_eq!(fields(&v), ["metadata.name"], "{name}");
        assert!(v.message().contains("DNS-1035"), "{}", v.message());
    }
    // <name>-headless and <name>-replicas must fit in 63 characters in Replication mode.
    let (fits, long) = ("a".repeat(54), "a".repeat(55));
    assert!(create(&fits, json!({"mode": "Replication"})).allowed());
    assert!(
        create(&long, json!({})).allowed(),
        "Standalone has only <name>"
    );
    let v = create(&long, json!({"mode": "Replication"}));
    assert_eq!(fields(&v), ["metadata.name"]);
    assert!(
        v.message().contains("<name>-headless fits in 63"),
        "{}",
        v.message()
    );
    // perPod: <name>-99 with the default maximum of 100 replicas, whatever spec.replicas is now.
    let per_pod = json!({"replicas": 1, "service": {"perPod": true}});
    assert!(create(&"a".repeat(60), per_pod.clone()).allowed());
    let v = create(&"a".repeat(61), per_pod.clone());
    assert!(
        v.message().contains("<name>-99 fits in 63"),
        "{}",
        v.message()
    );
    let few = Policy {
        max_replicas: 5,
        ..Policy::default()
    };
    assert!(
        few.validate_create(&redis(&"a".repeat(61), per_pod))
            .allowed(),
        "<name>-4"
    );
    // A generated name leaves room for the API server's five characters too.
    let mut r = redis("", json!({"mode": "Replication"}));
    r.metadata.name = None;
    r.metadata.generate_name = Some(format!("{}-", "a".repeat(48)));
    assert!(Policy::default().validate_create(&r).allowed());
    r.metadata.generate_name = Some(format!("{}-", "a".repeat(49)));
    assert_eq!(
        fields(&Policy::default().validate_create(&r)),
        ["metadata.generateName"]
    );
    r.metadata.generate_name = Some("9-".into());
    assert_eq!(
        fields(&Policy::default().validate_create(&r)),
        ["metadata.generateName"]
    );
}

#[test]
fn a_stored_name_its_services_cannot_take_still_takes_updates() {
    // Stored before the rule: its finalizer can still be removed, and it can be fixed.
    let old = redis("my.cache", json!({}));
    let mut new = old.clone();
    new.metadata.finalizers = Some(vec![]);
    let v = Policy::default().validate_update(&new, &old);
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.warnings.iter().any(|w| w.contains("DNS-1035")),
        "{:?}",
        v.warnings
    );
}
