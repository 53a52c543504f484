//! How clients reach a Redis (`spec.service`, DESIGN §3n): the type and settings of its client
//! Service `<name>` (every pod in Standalone mode, the primary in Replication mode), and with
//! `perPod` one Service `<name>-<ordinal>` per pod with the same settings, for clients that must
//! reach a given pod (a replica, from outside the cluster). The Services are built in the
//! controller's `children` folder; the admission rules are `validation`'s `service` module.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most CIDRs in `loadBalancerSourceRanges`.
pub const MAX_SOURCE_RANGES: usize = 64;

/// The client Service's settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSettings {
    /// The Service's type: ClusterIP (in-cluster clients only), NodePort (also on every node's IP, at a port the API server picks) or LoadBalancer (also through the cloud's load balancer). Defaults to ClusterIP.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<ServiceType>,

    /// Annotations on the Service, e.g. for the cloud's load balancer (`service.beta.kubernetes.io/...`). Keys under myapp.tangx.in/ are the operator's and cannot be set here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,

    /// With type LoadBalancer: the client CIDRs the load balancer admits (e.g. "203.0.113.0/24"); at most 64. Not set: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub load_balancer_source_ranges: Option<Vec<String>>,

    /// With type NodePort or LoadBalancer: Cluster (any node forwards to the pods, hiding the client's address) or Local (only nodes running a selected pod answer, keeping the client's address). Not set: Kubernetes's default (Cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<TrafficPolicy>,

    /// Also one Service per pod, named like the pod (`<name>-<ordinal>`), selecting that pod only, with the same type, annotations and settings: for clients that must reach a given pod (a replica, from outside the cluster). Services of ordinals scaled away are deleted. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_pod: Option<bool>,
}

/// A Service's type, as the operator offers it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum ServiceType {
    /// Reachable inside the cluster only.
    #[default]
    ClusterIP,
    /// Also on every node's IP, at a port the API server picks.
    NodePort,
    /// Also through the cloud's load balancer.
    LoadBalancer,
}

impl ServiceType {
    /// The value as a Service writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::ClusterIP => "ClusterIP",
            ServiceType::NodePort => "NodePort",
            ServiceType::LoadBalancer => "LoadBalancer",
        }
    }
}

/// `externalTrafficPolicy`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum TrafficPolicy {
    /// Any node forwards to the pods.
    Cluster,
    /// Only nodes with a selected pod answer; the client's address is kept.
    Local,
}

impl TrafficPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            TrafficPolicy::Cluster => "Cluster",
            TrafficPolicy::Local => "Local",
        }
    }
}

impl ServiceSettings {
    /// The type (ClusterIP when not set).
    pub fn type_(&self) -> ServiceType {
        self.type_.unwrap_or_default()
    }

    /// Whether every pod has a Service of its own.
    pub fn per_pod(&self) -> bool {
        self.per_pod.unwrap_or(false)
    }
}
