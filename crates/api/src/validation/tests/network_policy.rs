//! `spec.networkPolicy` (§3j; `network_policy`).

use super::*;

#[test]
fn network_policy_peers_the_api_server_would_refuse_are_refused() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"networkPolicy": {
            "allowedClients": [
                {},
                {"podSelector": {"matchLabels": {"app": "web"}}, "ipBlock": {"cidr": "10.0.0.0/8"}},
                {"ipBlock": {"cidr": "10.0.0.0/33"}},
                {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16", "10.0.0.0/8", "10.1.0.0/16"]}},
                {"podSelector": {"matchLabels": {"bad key!": "web"}}},
                {"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}},
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}},
                 "podSelector": {"matchLabels": {"app": "web"}}}
            ],
            "metricsFrom": [{"ipBlock": {"cidr": "fd00::/64"}}]
        }}),
    ));
    assert_eq!(
        fields(&v),
        [
            "spec.networkPolicy.allowedClients[0]",
            "spec.networkPolicy.allowedClients[1]",
            "spec.networkPolicy.allowedClients[2].ipBlock.cidr",
            "spec.networkPolicy.allowedClients[3].ipBlock.except[0]",
            "spec.networkPolicy.allowedClients[3].ipBlock.except[1]",
            "spec.networkPolicy.allowedClients[4].podSelector.matchLabels[bad key!]",
            "spec.networkPolicy.allowedClients[5].namespaceSelector.matchExpressions[0].values",
        ],
        "{}",
        v.message()
    );
    assert!(
        v.message()
            .contains("must be a strict subset of cidr 10.0.0.0/8"),
        "{}",
        v.message()
    );
}

#[test]
fn more_peers_than_the_operator_writes_are_refused_even_with_the_policy_off() {
    let peers: Vec<_> = (0..33)
        .map(|i| json!({"ipBlock": {"cidr": format!("10.0.{i}.0/24")}}))
        .collect();
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({"networkPolicy": {"enabled": false, "allowedClients": peers}}),
    ));
    assert_eq!(fields(&v), ["spec.networkPolicy.allowedClients"]);
    assert!(
        v.message().contains("at most 32 peers, got 33"),
        "{}",
        v.message()
    );
}

#[test]
fn who_can_connect_is_warned_about() {
    let warns = |spec: serde_json::Value| {
        Policy::default()
            .validate_create(&redis("r", spec))
            .warnings
            .into_iter()
            .filter(|w| w.starts_with("spec.networkPolicy"))
            .collect::<Vec<_>>()
    };
    // Neither auth nor a policy: anyone in the cluster reads and writes.
    let open = warns(json!({}));
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(open[0].contains("any pod in the cluster can connect to port 6379"));
    assert_eq!(warns(json!({"networkPolicy": {"enabled": false}})), open);
    // Replication mode's own warning about auth says it there (once).
    assert!(warns(json!({"mode": "Replication", "replicas": 3})).is_empty());
    // With auth and no policy: quiet (today's behaviour, the password guards it).
    let auth = json!({"name": "pw"});
    assert!(warns(json!({"auth": {"secretRef": auth}})).is_empty());
    // A policy without clients: only the operator and the Redis's pods get through.
    let closed = warns(json!({"auth": {"secretRef": auth}, "networkPolicy": {}}));
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert!(closed[0].contains("allowedClients is empty"));
    let clients = json!([{"podSelector": {"matchLabels": {"app": "web"}}}]);
    assert!(warns(json!({"networkPolicy": {"allowedClients": clients}})).is_empty());
    // Metrics: settings without an exporter do nothing; an exporter nobody may scrape.
    let prometheus = json!([{"namespaceSelector": {"matchLabels": {"team": "obs"}}}]);
    let idle =
        warns(json!({"networkPolicy": {"allowedClients": clients, "metricsFrom": prometheus}}));
    assert_eq!(idle.len(), 1, "{idle:?}");
    assert!(idle[0].contains("no exporter runs"));
    let unscraped = warns(json!({"exporter": {}, "networkPolicy": {"allowedClients": clients}}));
    assert_eq!(unscraped.len(), 1, "{unscraped:?}");
    assert!(unscraped[0].contains("nothing can scrape the exporter's port 9121"));
    assert!(
        warns(json!({"exporter": {}, "networkPolicy": {"allowedClients": clients, "metricsFrom": prometheus}}))
            .is_empty()
    );
}
