//! The `Redis` resource as stored by the API server (DESIGN §1).
//!
//! Every spec field is optional in the schema: the mutating webhook fills the defaults, and the
//! accessors in [`crate::defaults`] give the effective value when it has not (webhook down).
//! New fields (auth, persistence, replication, pod placement) are added as further `Option`s.

pub use crate::secret::SecretKeyRef;
use k8s_openapi::api::core::v1::{
    Affinity, ResourceRequirements, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of a Redis instance: how many pods, which image, which port.
// Several printer columns share a `type_`, which clippy mistakes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "myapp.tangx.in",
    version = "v1",
    kind = "Redis",
    plural = "redis",
    singular = "redis",
    shortname = "rds",
    category = "all",
    namespaced,
    doc = "Redis runs a set of Redis server pods named <name>-<ordinal>, managed by redis-operator.",
    status = "RedisStatus",
    derive = "PartialEq",
    derive = "Default",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Replicas",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "Pods that exist for this Redis"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "Pods that are Ready"
    ),
    printcolumn(
        name = "Image",
        type_ = "string",
        json_path = ".spec.image",
        description = "Container image of the Redis server"
    ),
    printcolumn(
        name = "Port",
        type_ = "integer",
        json_path = ".spec.port",
        description = "Port redis-server listens on"
    ),
    printcolumn(
        name = "Primary",
        type_ = "string",
        json_path = ".status.primary",
        description = "Pod serving writes (Replication mode)"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RedisSpec {
    /// Number of Redis server pods to run, named <name>-0 .. <name>-(replicas-1). Defaults to 1. Also settable with `kubectl scale redis/<name> --replicas=N`. At most 10000 (the admission webhook may allow fewer, by default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = crate::schema::SCHEMA_MAX_REPLICAS))]
    pub replicas: Option<i32>,

    /// Container image that runs redis-server, e.g. "redis:7.2-alpine". Must be a valid image reference. Defaults to "redis:7.2-alpine".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub image: Option<String>,

    /// TCP port redis-server listens on inside each pod (`redis-server --port <port>`), also the containerPort and the port the probes use. 1234..54321 (the admission webhook may require more, by default >= 6379). Defaults to 6379.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(
        min = crate::schema::SCHEMA_MIN_PORT,
        max = crate::schema::SCHEMA_MAX_PORT
    ))]
    pub port: Option<i32>,

    /// When the kubelet pulls the image: Always, IfNotPresent or Never. Defaults to IfNotPresent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<ImagePullPolicy>,

    /// CPU and memory requests and limits of the redis container. None by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// Standalone (the default): every pod is an independent redis-server. Replication: one pod is the primary, the others replicate it, and the operator fails over to the most up-to-date replica when the primary is lost; it needs replicas >= 1 (3 or more to keep a replica through a failover), and should have auth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,

    /// Settings of Replication mode (ignored in Standalone mode, with a warning). In Replication mode the admission webhook fills the missing ones with their defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<ReplicationSpec>,

    /// Password protection: the password is read from a Secret, required from every client and used between replicas. Changing the Secret changes the password on the running pods, without restarting them. Off when not set (Replication mode without it gets a warning: any pod that can reach the pods can read and write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthSpec>,

    /// The PodDisruptionBudget the operator keeps for this Redis's pods (voluntary disruptions such as node drains). Defaults to maxUnavailable 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,

    /// Persistence: each pod gets its own PersistentVolumeClaim `data-<name>-<ordinal>`, mounted at /data, instead of an emptyDir that is lost with the pod. Claims are kept when the Redis is deleted or scaled down unless `retention` says Delete. Not set: no claims (data lives as long as the pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<crate::storage::StorageSpec>,

    /// A Prometheus metrics exporter (redis_exporter) as a sidecar in every pod, serving /metrics on a `metrics` port of the pods and the Services, with the password from `auth` when set. Not set: no sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporter: Option<crate::exporter::ExporterSpec>,

    /// A NetworkPolicy `<name>` that lets only the operator, this Redis's own pods (replication) and allowedClients reach spec.port, and metricsFrom the exporter's port. Not set: no policy, every pod in the cluster can reach the Redis (the webhook warns when auth is off too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<crate::network_policy::NetworkPolicySpec>,

    /// TLS on spec.port: redis-server serves only TLS there (unless plaintextPort adds a port without it), replicas replicate over TLS, and the probes, the exporter and the operator connect with it, the operator verifying every pod's certificate against the Secret's ca.crt and the name `<name>.<namespace>.svc`. A renewed certificate in the Secret is loaded live, without restarting a pod. Not set: no TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::tls::TlsSpec>,

    /// ACL users: users with their own rules and passwords, created on every pod and changed live; and whether the default user (spec.auth's password) may log in. The operator then connects as its own user (redis-operator) and replicas as masteruser, with passwords it generates and keeps in the Secret `<name>-acl`. Not set: the default user only, as without ACLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<crate::acl::AclSpec>,

    /// redis.conf directives of redis-server, by name, e.g. `maxmemory-policy: allkeys-lru`, `notify-keyspace-events: Ex`, `save: ""`. Names and values as Redis 7.0 reads them; the directives the operator sets itself (port, tls-*, replicaof, requirepass, masterauth, dir, bind, ...) are refused. Directives redis-server takes at run time are set on the running pods with CONFIG SET, without a restart; the few it reads only at start (databases, io-threads, ...) replace the pods one at a time, switching over first. A directive removed goes back to Redis's default. Not set: Redis's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BTreeMap<String, String>>,

    /// The redis container's memory limit share that `maxmemory` gets when config sets no maxmemory, in percent (1..100): the rest is room for a fork's copy-on-write (BGSAVE, a replica's full sync), buffers and fragmentation, so Redis evicts or refuses writes by its maxmemory-policy instead of being killed by the kernel. Without a memory limit nothing is derived. Defaults to 80.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_memory_percent_of_limit: Option<i32>,

    /// How clients reach the Redis: the type (ClusterIP, NodePort, LoadBalancer), annotations, loadBalancerSourceRanges and externalTrafficPolicy of its client Service `<name>` (every pod in Standalone mode, the primary in Replication mode). Not set: a ClusterIP Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<crate::service::ServiceSettings>,

    /// Node labels a node must have for the pods to run on it (the pods' nodeSelector), e.g. `disktype: ssd`. Keys and values must be valid label keys and values. Not set: any node. A change replaces the pods one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,

    /// Scheduling rules of the pods (the pods' affinity: nodeAffinity, podAffinity, podAntiAffinity), passed as written. Setting it, even to {}, replaces the default spread (see topologySpreadConstraints). A change replaces the pods one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,

    /// Taints the pods tolerate (the pods' tolerations), e.g. to run on nodes dedicated to Redis. A change replaces the pods one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,

    /// How the pods spread over nodes, zones or other topology domains (the pods' topologySpreadConstraints), passed as written: give each a labelSelector matching this Redis's pods, such as app.kubernetes.io/instance: <name>. When neither this nor affinity is set, the operator spreads the pods itself: they prefer different nodes (kubernetes.io/hostname, maxSkew 1, ScheduleAnyway) and, in Replication mode, different zones (topology.kubernetes.io/zone), never refusing to schedule. Set it to [] for no spread at all. A change replaces the pods one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,

    /// PriorityClass of the pods (a DNS-1123 subdomain naming an existing PriorityClass), for their scheduling order and preemption. Not set: the cluster's default priority. A change replaces the pods one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,

    /// Extra labels on every pod, e.g. for NetworkPolicies or cost reports. The operator's own labels (app, app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/managed-by and any myapp.tangx.in/ key) cannot be set here. A change replaces the pods one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,

    /// Extra annotations on every pod, e.g. for a service mesh or a backup tool. Keys under myapp.tangx.in/ are the operator's and cannot be set here. A change replaces the pods one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,

    /// Backups of this Redis to S3-compatible object storage: where they go (`destination`), and optionally a cron `schedule` with how many to `keep`. A backup by hand is a RedisBackup naming this Redis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<crate::backup::BackupSpec>,

    /// Start from a backup: `backupName` (a Succeeded RedisBackup in this namespace) or `location` (s3://<bucket>/<key>, read with spec.backup.destination). Honoured once, when the Redis is created (in Replication mode its first pod is restored and the others sync from it); it cannot be changed afterwards. Not set: the pods start empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<crate::backup::RestoreSpec>,
}

/// How the pods of a Redis relate to each other.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum Mode {
    /// Independent redis-servers, one per pod.
    #[default]
    Standalone,
    /// One primary and its replicas, with failover by the operator.
    Replication,
}

impl Mode {
    /// The value as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Standalone => "Standalone",
            Mode::Replication => "Replication",
        }
    }
}

/// Settings of Replication mode.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicationSpec {
    /// Redis `min-replicas-to-write` on the primary: writes are refused unless at least this many replicas are connected and acknowledged within minReplicasMaxLag seconds. It bounds a split brain: a primary cut off from its replicas refuses writes after minReplicasMaxLag seconds, instead of taking writes that a failover to a replica then discards (0 never refuses; a warning says so). At least 0; more than replicas-1 refuses every write (a warning says so). Not set: 1 with 3 or more pods, 0 with fewer; this default follows replicas and is not written into the spec, so scaling down below 3 pods goes back to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_replicas_to_write: Option<i32>,

    /// Redis `min-replicas-max-lag` on the primary, in seconds: how stale a replica's last acknowledgement may be for it to count towards minReplicasToWrite, and for the Replicating condition. At least 1. Defaults to 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_replicas_max_lag: Option<i32>,

    /// How long the primary must be unreachable or not Ready before the operator promotes a replica, as a duration such as "10s", "1m30s" or "1h", between 1s and 1h. A primary whose pod is gone, or whose redis-server restarted and lost its data, is replaced at once. Defaults to "10s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover_after: Option<String>,
}

/// Where the password comes from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthSpec {
    /// The Secret (in the Redis's namespace) and key holding the password.
    pub secret_ref: SecretKeyRef,
}

/// The PodDisruptionBudget of a Redis.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudgetSpec {
    /// How many pods may be unavailable through voluntary disruptions at once: a number >= 0, or a percentage from "0%" to "100%" such as "25%". Defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// When the kubelet pulls the container image (core/v1 `Container.imagePullPolicy`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum ImagePullPolicy {
    Always,
    #[default]
    IfNotPresent,
    Never,
}

impl ImagePullPolicy {
    /// The value as written in a Pod spec.
    pub fn as_str(self) -> &'static str {
        match self {
            ImagePullPolicy::Always => "Always",
            ImagePullPolicy::IfNotPresent => "IfNotPresent",
            ImagePullPolicy::Never => "Never",
        }
    }
}

/// Observed state of a Redis instance, written by the controller through the status subresource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedisStatus {
    /// Number of pods that exist for this Redis (including ones not yet Ready).
    #[serde(default)]
    pub replicas: i32,

    /// Number of pods whose Ready condition is True.
    #[serde(default)]
    pub ready_replicas: i32,

    /// Label selector of this Redis's pods, in string form; used by the scale subresource (`kubectl scale`, HorizontalPodAutoscaler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,

    /// The metadata.generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Standard conditions; `Ready` is True when every desired pod exists, runs the desired spec and is Ready. In Replication mode also `Replicating` (every replica linked to the primary and within minReplicasMaxLag), `FailingOver` (the primary is lost and a replica is being promoted; reason WaitingForUnreadMember while a member that cannot be read may hold acknowledged writes the best readable replica lacks) and `Spread` (False while the primary shares its node with another pod: a write acknowledged by WAIT 1 from that pod alone is lost if the node fails).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// Replication mode: the pod that is the primary (the `<name>` Service routes to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,

    /// Replication mode: each pod's role and how far behind the primary it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub members: Vec<MemberStatus>,

    /// With `spec.config`, while the pods do not all run the live configuration of the current spec: per pod, the metadata.generation of the spec whose configuration it runs (absent: not known yet, a pod not reached since the controller started). Compare with metadata.generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub pod_config_generations: Vec<PodConfigGeneration>,
}

/// Which configuration a pod runs (`status.podConfigGenerations`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodConfigGeneration {
    /// Pod name.
    pub name: String,
    /// The metadata.generation of the spec whose live configuration the pod runs; absent while not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// One pod's part in replication.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    /// Pod name.
    pub name: String,
    /// primary, replica, or unknown (not reachable).
    pub role: String,
    /// Replication offset lag behind the primary, in bytes (replicas only; absent while unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The tutorial's sample manifest, exactly as its readers apply it.
    fn tutorial_sample() -> serde_json::Value {
        json!({
            "apiVersion": "myapp.tangx.in/v1",
            "kind": "Redis",
            "metadata": {"name": "my-op-redis", "namespace": "default"},
            "spec": {"replicas": 2, "image": "redis:5-alpine", "port": 8333}
        })
    }

    #[test]
    fn the_schema_bounds_and_their_descriptions_come_from_the_schema_constants() {
        use crate::schema::{SCHEMA_MAX_PORT, SCHEMA_MAX_REPLICAS, SCHEMA_MIN_PORT};
        let schema = serde_json::to_value(schemars::schema_for!(RedisSpec)).expect("schema");
        let props = &schema["properties"];
        assert_eq!(props["port"]["minimum"], json!(SCHEMA_MIN_PORT));
        assert_eq!(props["port"]["maximum"], json!(SCHEMA_MAX_PORT));
        assert_eq!(props["replicas"]["maximum"], json!(SCHEMA_MAX_REPLICAS));
        // A doc comment cannot name a constant: the prose is checked against it instead.
        let says = |field: &str, text: String| {
            let description = props[field]["description"].as_str().unwrap_or_default();
            assert!(
                description.contains(&text),
                "{field}: {description:?} lacks {text:?}"
            );
        };
        says("port", format!("{SCHEMA_MIN_PORT}..{SCHEMA_MAX_PORT}"));
        says("replicas", format!("At most {SCHEMA_MAX_REPLICAS} "));
    }

    #[test]
    fn tutorial_sample_deserializes_and_round_trips_unchanged() {
        let redis: Redis = serde_json::from_value(tutorial_sample()).expect("sample decodes");
        assert_eq!(redis.spec.replicas, Some(2));
        assert_eq!(redis.spec.image.as_deref(), Some("redis:5-alpine"));
        assert_eq!(redis.spec.port, Some(8333));
        assert_eq!(redis.spec.image_pull_policy, None);
        let back = serde_json::to_value(&redis).expect("sample encodes");
        assert_eq!(back, tutorial_sample());
    }

    #[test]
    fn empty_spec_is_accepted_and_stays_empty() {
        let redis: Redis = serde_json::from_value(json!({
            "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
            "metadata": {"name": "r"}, "spec": {}
        }))
        .expect("empty spec decodes");
        assert_eq!(redis.spec, RedisSpec::default());
        assert_eq!(
            serde_json::to_value(&redis.spec).expect("encodes"),
            json!({})
        );
    }

    #[test]
    fn unknown_pull_policy_is_refused() {
        let res: Result<RedisSpec, _> =
            serde_json::from_value(json!({"imagePullPolicy": "Sometimes"}));
        assert!(res.is_err());
    }

    #[test]
    fn status_uses_camel_case_names() {
        let status = RedisStatus {
            replicas: 2,
            ready_replicas: 1,
            selector: Some("a=b".into()),
            observed_generation: Some(3),
            ..RedisStatus::default()
        };
        assert_eq!(
            serde_json::to_value(&status).expect("encodes"),
            json!({"replicas": 2, "readyReplicas": 1, "selector": "a=b", "observedGeneration": 3})
        );
    }
}
