//! Who may reach a Redis's pods (`spec.networkPolicy`, DESIGN §3j): the type and its effective
//! values. The controller keeps one NetworkPolicy `<name>` per Redis that sets it; its admission
//! rules are in `validation`'s `network_policy` module (they read the whole spec: auth, the
//! exporter), and the policy itself is built in the controller's `network_policy` folder.

use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most peers in `allowedClients` or `metricsFrom` (a bound on what a tenant makes the
/// operator write; a NetworkPolicy with more is better written by hand).
pub const MAX_PEERS: usize = 32;

/// A NetworkPolicy that admits only the operator, the Redis's own pods and the listed peers.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Keep the NetworkPolicy `<name>`. Defaults to true: writing `networkPolicy: {}` admits only the operator and this Redis's own pods; false keeps the settings but deletes the policy (every pod in the cluster can reach the Redis again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,

    /// Who else may connect to spec.port: NetworkPolicy peers (podSelector, namespaceSelector, or both; or ipBlock), as in a NetworkPolicy's `from`. A podSelector alone selects pods of this Redis's namespace. At most 32. Empty or not set: nobody but the operator and this Redis's own pods (replication).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub allowed_clients: Option<Vec<NetworkPolicyPeer>>,

    /// Who may scrape the exporter's metrics port (with spec.exporter), e.g. Prometheus's namespace. Same form as allowedClients; at most 32. Empty or not set: nobody.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub metrics_from: Option<Vec<NetworkPolicyPeer>>,
}

impl NetworkPolicySpec {
    /// Whether the policy is kept.
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The peers allowed on spec.port besides the operator and the Redis's pods.
    pub fn allowed_clients(&self) -> &[NetworkPolicyPeer] {
        self.allowed_clients.as_deref().unwrap_or_default()
    }

    /// The peers allowed on the metrics port.
    pub fn metrics_from(&self) -> &[NetworkPolicyPeer] {
        self.metrics_from.as_deref().unwrap_or_default()
    }
}
