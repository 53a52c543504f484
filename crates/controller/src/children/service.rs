//! The Services of a Redis (DESIGN §3): `<name>` for clients (every pod in Standalone, the
//! primary in Replication), `<name>-replicas` and `<name>-headless` in Replication, and with
//! `spec.service.perPod` one per pod, `<name>-<ordinal>`; built, and compared with the cache on
//! only the fields the controller sets. The client and per-pod Services take `spec.service`'s
//! type and settings (§3n). Pure.

use super::meta::{metadata, metadata_differs};
use api::exporter::{METRICS_PORT_NAME, SCRAPE_LABEL};
use api::pods::{
    ROLE_PRIMARY, ROLE_REPLICA, pod_name, pod_selector, role_selector, selector_labels,
};
use api::service::{ServiceSettings, ServiceType};
use api::{Mode, Redis};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Name of the Services' port, and of the container port it targets.
pub const PORT_NAME: &str = "redis";

/// The Services a Redis may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceKind {
    /// `<name>`: where clients connect (every pod, or the primary).
    Client,
    /// `<name>-replicas`: the replicas, for reads (Replication only).
    Replicas,
    /// `<name>-headless`: every pod's own DNS name (Replication only).
    Headless,
    /// `<name>-<ordinal>`: that pod only (`spec.service.perPod`).
    Pod(u32),
}

impl ServiceKind {
    pub const ALL: [ServiceKind; 3] = [
        ServiceKind::Client,
        ServiceKind::Replicas,
        ServiceKind::Headless,
    ];

    /// The Service's name for the Redis `redis_name` (a per-pod one is named like its pod).
    pub fn name(self, redis_name: &str) -> String {
        match self {
            ServiceKind::Client => redis_name.to_owned(),
            ServiceKind::Replicas => format!("{redis_name}-replicas"),
            ServiceKind::Headless => api::pods::headless_service_name(redis_name),
            ServiceKind::Pod(ordinal) => pod_name(redis_name, ordinal),
        }
    }

    /// Whether a Redis in `mode` has this Service (per-pod ones: see [`per_pod_ordinals`]).
    pub fn exists_in(self, mode: Mode) -> bool {
        match self {
            ServiceKind::Client => true,
            ServiceKind::Replicas | ServiceKind::Headless => mode == Mode::Replication,
            ServiceKind::Pod(_) => false,
        }
    }
}

/// The ordinals with a Service of their own: every pod's with `spec.service.perPod`, else none.
pub fn per_pod_ordinals(redis: &Redis) -> std::ops::Range<u32> {
    let per_pod = redis
        .spec
        .service
        .as_ref()
        .is_some_and(ServiceSettings::per_pod);
    let replicas = u32::try_from(redis.spec.replicas()).unwrap_or(0);
    0..if per_pod { replicas } else { 0 }
}

/// The per-pod Services `redis` no longer wants (an ordinal scaled away, or `perPod` turned
/// off), highest ordinal first, given `held(name)`: `None` when no Service has that name, else
/// whether this Redis controls it. Per-pod Services are made for every ordinal from 0, so they are
/// looked up from the first unwanted ordinal up to the first name no Service has: a few lookups,
/// where listing every cached Service would cost each pass as much as there are Redis. Deleting
/// the highest first keeps that run unbroken if a pass stops midway; a name another object holds
/// (a Redis named `<name>-<n>`) is passed over.
pub fn unwanted_pod_services(redis: &Redis, held: impl Fn(&str) -> Option<bool>) -> Vec<String> {
    let Some(redis_name) = redis.metadata.name.as_deref() else {
        return Vec::new();
    };
    let highest = u32::try_from(api::validation::SCHEMA_MAX_REPLICAS).unwrap_or(u32::MAX);
    let mut unwanted = Vec::new();
    for ordinal in per_pod_ordinals(redis).end..highest {
        let name = pod_name(redis_name, ordinal);
        match held(&name) {
            None => break,
            Some(true) => unwanted.push(name),
            Some(false) => {}
        }
    }
    unwanted.reverse();
    unwanted
}

/// The Service `kind` of `redis`, as the controller applies it.
pub fn service(redis: &Redis, kind: ServiceKind) -> Option<Service> {
    let redis_name = redis.metadata.name.as_deref()?;
    let mode = redis.spec.mode();
    let selector = match (kind, mode) {
        (ServiceKind::Client, Mode::Standalone) | (ServiceKind::Headless, _) => {
            selector_labels(redis_name)
        }
        (ServiceKind::Client, Mode::Replication) => role_selector(redis_name, ROLE_PRIMARY),
        (ServiceKind::Replicas, _) => role_selector(redis_name, ROLE_REPLICA),
        (ServiceKind::Pod(ordinal), _) => pod_selector(redis_name, &pod_name(redis_name, ordinal)),
    };
    let headless = kind == ServiceKind::Headless;
    let mut metadata = metadata(redis, kind.name(redis_name))?;
    let mut ports = vec![ServicePort {
        name: Some(PORT_NAME.to_owned()),
        port: redis.spec.port(),
        // By name: the container port follows spec.port without the Service knowing.
        target_port: Some(IntOrString::String(PORT_NAME.to_owned())),
        protocol: Some("TCP".to_owned()),
        ..ServicePort::default()
    }];
    // TLS's plaintext port (§3k), beside the TLS one.
    if let Some(plaintext) = redis
        .spec
        .tls
        .as_ref()
        .and_then(api::TlsSpec::plaintext_port)
    {
        ports.push(ServicePort {
            name: Some(api::tls::PLAINTEXT_PORT_NAME.to_owned()),
            port: plaintext,
            target_port: Some(IntOrString::String(
                api::tls::PLAINTEXT_PORT_NAME.to_owned(),
            )),
            protocol: Some("TCP".to_owned()),
            ..ServicePort::default()
        });
    }
    // A per-pod Service is for clients: the metrics are scraped through the Service over every pod.
    if let Some(exporter) = redis
        .spec
        .exporter()
        .filter(|_| !matches!(kind, ServiceKind::Pod(_)))
    {
        ports.push(ServicePort {
            name: Some(METRICS_PORT_NAME.to_owned()),
            port: exporter.port(),
            target_port: Some(IntOrString::String(METRICS_PORT_NAME.to_owned())),
            protocol: Some("TCP".to_owned()),
            ..ServicePort::default()
        });
        // The Service over every pod (the client one in Standalone mode, the headless one in
        // Replication mode) is the one to scrape, so no pod is scraped twice.
        let over_every_pod = matches!(
            (kind, mode),
            (ServiceKind::Client, Mode::Standalone) | (ServiceKind::Headless, Mode::Replication)
        );
        if over_every_pod && let Some(labels) = metadata.labels.as_mut() {
            labels.insert(SCRAPE_LABEL.to_owned(), "true".to_owned());
        }
    }
    // The client Service's settings (§3n), with a digest of them in an annotation of the
    // operator's: a setting removed from the spec (an annotation, the traffic policy) is then
    // seen as a difference, and the apply drops it.
    let settings = match kind {
        ServiceKind::Client | ServiceKind::Pod(_) => redis.spec.service.as_ref(),
        ServiceKind::Replicas | ServiceKind::Headless => None,
    };
    let type_ = settings.map_or(ServiceType::ClusterIP, ServiceSettings::type_);
    if let Some(settings) = settings {
        let mut annotations = settings.annotations.clone().unwrap_or_default();
        annotations.retain(|k, _| !api::pods::is_operator_annotation(k));
        annotations.insert(SETTINGS_ANNOTATION.to_owned(), settings_digest(settings));
        metadata.annotations = Some(annotations);
    }
    Some(Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some(type_.as_str().to_owned()),
            load_balancer_source_ranges: settings
                .filter(|_| type_ == ServiceType::LoadBalancer)
                .and_then(|s| s.load_balancer_source_ranges.clone()),
            external_traffic_policy: settings
                .filter(|_| type_ != ServiceType::ClusterIP)
                .and_then(|s| s.external_traffic_policy)
                .map(|p| p.as_str().to_owned()),
            // Headless: DNS answers with the pod IPs, and keeps a name for a pod that is not
            // Ready yet (a replica syncing from the primary must be reachable by name).
            cluster_ip: headless.then(|| "None".to_owned()),
            publish_not_ready_addresses: headless.then_some(true),
            ports: Some(ports),
            selector: Some(selector),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// The annotation holding a digest of the client Service's settings (`spec.service`).
pub const SETTINGS_ANNOTATION: &str = "myapp.tangx.in/service-settings";

/// A short, stable digest of `settings` (its JSON, maps in key order).
fn settings_digest(settings: &ServiceSettings) -> String {
    use sha2::{Digest, Sha256};
    let json = serde_json::to_vec(settings).unwrap_or_default();
    Sha256::digest(&json)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The parts of a port the controller sets (the API server adds a nodePort to other types).
fn port_key(port: &ServicePort) -> (Option<&str>, i32, Option<&IntOrString>, &str) {
    (
        port.name.as_deref(),
        port.port,
        port.target_port.as_ref(),
        // The API server defaults the protocol to TCP.
        port.protocol.as_deref().unwrap_or("TCP"),
    )
}

/// Whether applying `desired` would change the Service `current` (the cache's copy, `None` when
/// it does not exist). Only the fields the controller sets count: the API server fills in the
/// rest (clusterIP, ipFamilies, sessionAffinity...), and those must not cause a write each pass.
pub fn service_differs(desired: &Service, current: Option<&Service>) -> bool {
    let Some(current) = current else {
        return true;
    };
    let empty = ServiceSpec::default();
    let want = desired.spec.as_ref().unwrap_or(&empty);
    let have = current.spec.as_ref().unwrap_or(&empty);
    let ports = |spec: &ServiceSpec| {
        spec.ports
            .iter()
            .flatten()
            .map(port_key)
            .map(|(n, p, t, proto)| (n.map(str::to_owned), p, t.cloned(), proto.to_owned()))
            .collect::<Vec<_>>()
    };
    // Optional fields compare only when we set them.
    let set_differs = |want: &Option<String>, have: &Option<String>| want.is_some() && want != have;
    // Our settings' digest, present or absent as we want it (the annotations it stands for
    // follow it).
    let digest = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(SETTINGS_ANNOTATION))
            .cloned()
    };
    metadata_differs(&desired.metadata, &current.metadata)
        || digest(&desired.metadata) != digest(&current.metadata)
        || set_differs(&want.type_, &have.type_)
        || set_differs(&want.cluster_ip, &have.cluster_ip)
        || (want.publish_not_ready_addresses.is_some()
            && want.publish_not_ready_addresses != have.publish_not_ready_addresses)
        // The selector is replaced as a whole (it is atomic), so it must match exactly: a
        // mode switch back to Standalone removes the role label from it.
        || want.selector.clone().unwrap_or_default() != have.selector.clone().unwrap_or_default()
        || ports(want) != ports(have)
}

/// Keeps of a cached Service what [`service_differs`] compares (and the metadata): the API
/// server's additions to the spec (cluster IPs, IP families, affinity, policies) and the status go.
pub fn strip_service(service: &mut Service) {
    service.status = None;
    if let Some(spec) = service.spec.take() {
        service.spec = Some(ServiceSpec {
            type_: spec.type_,
            cluster_ip: spec.cluster_ip,
            // For the e2e tests and `kubectl`-like readers of the cache: what the settings set.
            load_balancer_source_ranges: spec.load_balancer_source_ranges,
            external_traffic_policy: spec.external_traffic_policy,
            publish_not_ready_addresses: spec.publish_not_ready_addresses,
            selector: spec.selector,
            ports: spec.ports,
            ..ServiceSpec::default()
        });
    }
}
