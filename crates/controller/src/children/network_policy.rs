//! Who may reach a Redis's pods (DESIGN §3j, `spec.networkPolicy`): one NetworkPolicy `<name>`
//! per Redis that sets it, selecting its pods, admitting on `spec.port` only its own pods
//! (replication), the operator's controller and `allowedClients`, and on the exporter's port only
//! `metricsFrom`. Ingress only: what the pods reach is left alone. The policy and whether a stored
//! one differs are built here (pure); the write is the children's ([`super::apply`]): written only
//! when it differs, deleted when the spec drops it, never over a foreign object of the same name
//! (`NameConflict`).
//!
//! Every peer is admitted on a port, never on every port: the Redis's own pods, its backup Jobs'
//! pods and the operator on `spec.port`, `allowedClients` on `spec.port`, `metricsFrom` on the
//! exporter's port. An empty `from` would admit everyone, so a list the spec leaves empty gives
//! no rule at all.

use super::meta::{metadata, metadata_differs};
use api::Redis;
use api::pods::selector_labels;
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The label every namespace carries with its own name (set by the API server since 1.22).
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The operator's controller pods, admitted to every Redis's port (controller flags
/// `--operator-namespace`, `--operator-pod-labels`; the chart passes its own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorPods {
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
}

impl OperatorPods {
    /// The peer selecting them: their labels, in their namespace. `None` when either is
    /// unknown (a controller run outside the cluster reaches the pods from a node, which
    /// NetworkPolicy implementations admit).
    fn peer(&self) -> Option<NetworkPolicyPeer> {
        if self.namespace.is_empty() || self.labels.is_empty() {
            return None;
        }
        Some(NetworkPolicyPeer {
            namespace_selector: Some(match_labels(BTreeMap::from([(
                NAMESPACE_NAME_LABEL.to_owned(),
                self.namespace.clone(),
            )]))),
            pod_selector: Some(match_labels(self.labels.clone())),
            ip_block: None,
        })
    }
}

fn match_labels(labels: BTreeMap<String, String>) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels),
        match_expressions: None,
    }
}

fn tcp(ports: impl IntoIterator<Item = i32>) -> Vec<NetworkPolicyPort> {
    ports
        .into_iter()
        .map(|port| NetworkPolicyPort {
            port: Some(IntOrString::Int(port)),
            protocol: Some("TCP".to_owned()),
            end_port: None,
        })
        .collect()
}

/// The NetworkPolicy `<name>` of `redis`; `None` when the spec asks for none (or the Redis has
/// no name, namespace or uid yet).
pub fn network_policy(redis: &Redis, operator: &OperatorPods) -> Option<NetworkPolicy> {
    let settings = redis.spec.network_policy()?;
    let name = redis.metadata.name.as_deref()?;
    let own_pods = NetworkPolicyPeer {
        pod_selector: Some(match_labels(selector_labels(name))),
        ..NetworkPolicyPeer::default()
    };
    // The pods of its backup Jobs (§3o), which read an RDB from a replica's port.
    let backup_pods = NetworkPolicyPeer {
        pod_selector: Some(match_labels(BTreeMap::from([(
            api::backup::BACKUP_OF_LABEL.to_owned(),
            name.to_owned(),
        )]))),
        ..NetworkPolicyPeer::default()
    };
    let mut redis_port: Vec<NetworkPolicyPeer> = vec![own_pods.clone(), backup_pods];
    redis_port.extend(operator.peer());
    redis_port.extend(settings.allowed_clients().iter().cloned());
    let mut ingress = vec![NetworkPolicyIngressRule {
        from: Some(redis_port),
        // With TLS's plaintext port (§3k), the same peers on it too.
        ports: Some(tcp(std::iter::once(redis.spec.port()).chain(
            redis
                .spec
                .tls
                .as_ref()
                .and_then(api::TlsSpec::plaintext_port),
        ))),
    }];
    if let Some(exporter) = redis.spec.exporter()
        && !settings.metrics_from().is_empty()
    {
        ingress.push(NetworkPolicyIngressRule {
            from: Some(settings.metrics_from().to_vec()),
            ports: Some(tcp([exporter.port()])),
        });
    }
    Some(NetworkPolicy {
        metadata: metadata(redis, name.to_owned())?,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(match_labels(selector_labels(name))),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ingress: Some(ingress),
            egress: None,
        }),
    })
}

/// Whether applying `desired` would change the NetworkPolicy `current` (its whole spec is the
/// operator's).
pub fn network_policy_differs(desired: &NetworkPolicy, current: Option<&NetworkPolicy>) -> bool {
    let Some(current) = current else {
        return true;
    };
    metadata_differs(&desired.metadata, &current.metadata) || desired.spec != current.spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redis(spec: serde_json::Value) -> Redis {
        let mut redis = Redis::new("cache", serde_json::from_value(spec).expect("spec"));
        redis.metadata.namespace = Some("shop".into());
        redis.metadata.uid = Some("uid-1".into());
        redis
    }

    fn operator() -> OperatorPods {
        OperatorPods {
            namespace: "redis-system".into(),
            labels: BTreeMap::from([(
                "app.kubernetes.io/component".to_owned(),
                "controller".to_owned(),
            )]),
        }
    }

    fn as_json(policy: &NetworkPolicy) -> serde_json::Value {
        serde_json::to_value(policy.spec.as_ref().expect("spec")).expect("json")
    }

    #[test]
    fn no_policy_unless_the_spec_asks_for_one() {
        assert_eq!(network_policy(&redis(json!({})), &operator()), None);
        let off = redis(json!({"networkPolicy": {"enabled": false}}));
        assert_eq!(network_policy(&off, &operator()), None);
    }

    #[test]
    fn the_redis_port_admits_its_own_pods_its_backups_the_operator_and_the_listed_clients_only() {
        let web = json!({"podSelector": {"matchLabels": {"app": "web"}}});
        let policy = network_policy(
            &redis(json!({"port": 6380, "networkPolicy": {"allowedClients": [web]}})),
            &operator(),
        )
        .expect("a policy");
        assert_eq!(policy.metadata.name.as_deref(), Some("cache"));
        assert_eq!(policy.metadata.namespace.as_deref(), Some("shop"));
        let owner = &policy.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!(
            (owner.uid.as_str(), owner.controller),
            ("uid-1", Some(true))
        );
        let own = json!({"matchLabels": {
            "app.kubernetes.io/instance": "cache",
            "app.kubernetes.io/managed-by": "redis-operator",
            "app.kubernetes.io/name": "redis",
        }});
        let selector = selector_labels("cache");
        assert_eq!(
            serde_json::to_value(&selector).expect("json"),
            own["matchLabels"],
            "the test's copy of the pods' labels"
        );
        assert_eq!(
            as_json(&policy),
            json!({
                "podSelector": own,
                "policyTypes": ["Ingress"],
                "ingress": [{
                    "from": [
                        {"podSelector": own},
                        {"podSelector": {"matchLabels": {"myapp.tangx.in/backup-of": "cache"}}},
                        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "redis-system"}},
                         "podSelector": {"matchLabels": {"app.kubernetes.io/component": "controller"}}},
                        web,
                    ],
                    "ports": [{"port": 6380, "protocol": "TCP"}],
                }],
            })
        );
    }

    #[test]
    fn an_empty_client_list_admits_its_own_and_backup_pods_only_and_an_unknown_operator_no_operator_rule()
     {
        let policy = network_policy(
            &redis(json!({"networkPolicy": {}})),
            &OperatorPods::default(),
        )
        .expect("a policy");
        let rules = &as_json(&policy)["ingress"];
        assert_eq!(rules.as_array().map(Vec::len), Some(1));
        assert_eq!(
            rules[0]["from"].as_array().map(Vec::len),
            Some(2),
            "own pods and backup pods only"
        );
        assert_eq!(
            rules[0]["ports"],
            json!([{"port": 6379, "protocol": "TCP"}])
        );
    }

    #[test]
    fn the_metrics_port_admits_metrics_from_only_while_the_exporter_runs() {
        let prometheus = json!({"namespaceSelector": {"matchLabels": {"team": "obs"}}});
        let spec = |exporter: serde_json::Value| {
            redis(json!({"exporter": exporter, "networkPolicy": {"metricsFrom": [prometheus]}}))
        };
        let on = network_policy(&spec(json!({"port": 9200})), &operator()).expect("policy");
        let rules = &as_json(&on)["ingress"];
        assert_eq!(
            rules[1],
            json!({"from": [prometheus], "ports": [{"port": 9200, "protocol": "TCP"}]})
        );
        let off = network_policy(&spec(json!({"enabled": false})), &operator()).expect("policy");
        assert_eq!(as_json(&off)["ingress"].as_array().map(Vec::len), Some(1));
        // An exporter nobody may scrape: no rule (an empty `from` would admit everyone).
        let nobody = redis(json!({"exporter": {}, "networkPolicy": {}}));
        let nobody = network_policy(&nobody, &operator()).expect("policy");
        assert_eq!(
            as_json(&nobody)["ingress"].as_array().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn a_stored_policy_differs_when_its_spec_or_our_metadata_does() {
        let desired =
            network_policy(&redis(json!({"networkPolicy": {}})), &operator()).expect("policy");
        assert!(network_policy_differs(&desired, None));
        let mut stored = desired.clone();
        stored.metadata.resource_version = Some("7".into());
        stored
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("someone".into(), "else".into());
        assert!(
            !network_policy_differs(&desired, Some(&stored)),
            "others' labels"
        );
        let mut opened = stored.clone();
        if let Some(spec) = opened.spec.as_mut() {
            spec.ingress = Some(vec![NetworkPolicyIngressRule::default()]);
        }
        assert!(
            network_policy_differs(&desired, Some(&opened)),
            "edited by hand"
        );
        let mut orphaned = stored;
        orphaned.metadata.owner_references = None;
        assert!(network_policy_differs(&desired, Some(&orphaned)));
    }
}
