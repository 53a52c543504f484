//! The Services and the PodDisruptionBudget of a Redis (DESIGN §3).
//!
//! - `<name>`: the client Service, port `redis`. Standalone: every pod of the Redis; Replication:
//!   the pod labelled `myapp.tangx.in/role: primary` (the replication engine keeps that label).
//! - Replication only: `<name>-replicas` (the replicas) and `<name>-headless` (every pod, ready or
//!   not, so each pod has a stable DNS name `<pod>.<name>-headless` where cluster DNS runs). In
//!   Standalone they do not exist: left over from a mode switch, they are deleted.
//! - PodDisruptionBudget `<name>` (policy/v1): `maxUnavailable` from the spec (default 1) over
//!   every pod of the Redis, so a node drain takes its pods down one at a time.
//!
//! The builders and the comparisons are pure. [`apply`] is the shell: it compares each desired
//! object with the watch cache's copy and writes (server-side apply) only what differs, so a
//! steady state makes no writes; [`watch`] keeps those caches and wakes the owning Redis when a
//! child changes or is deleted by hand.

use crate::Error;
use crate::reconcile::FIELD_MANAGER;
use api::exporter::{METRICS_PORT_NAME, SCRAPE_LABEL};
use api::pods::{ROLE_PRIMARY, ROLE_REPLICA, role_selector, selector_labels};
use api::{Mode, Redis};
use futures::{Stream, StreamExt, future};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

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
}

impl ServiceKind {
    pub const ALL: [ServiceKind; 3] = [
        ServiceKind::Client,
        ServiceKind::Replicas,
        ServiceKind::Headless,
    ];

    /// The Service's name for the Redis `redis_name`.
    pub fn name(self, redis_name: &str) -> String {
        match self {
            ServiceKind::Client => redis_name.to_owned(),
            ServiceKind::Replicas => format!("{redis_name}-replicas"),
            ServiceKind::Headless => format!("{redis_name}-headless"),
        }
    }

    /// Whether a Redis in `mode` has this Service.
    pub fn exists_in(self, mode: Mode) -> bool {
        self == ServiceKind::Client || mode == Mode::Replication
    }
}

/// What a Redis should have, and the Services it should not.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    pub services: Vec<Service>,
    /// Names of the Services of the other mode: deleted when they exist and are ours.
    pub absent_services: Vec<String>,
    pub pdb: PodDisruptionBudget,
}

/// Everything a Redis should have; `None` until it has a name, a namespace and a uid.
pub fn desired(redis: &Redis) -> Option<Desired> {
    let name = redis.metadata.name.as_deref()?;
    let mode = redis.spec.mode();
    let mut services = Vec::new();
    let mut absent_services = Vec::new();
    for kind in ServiceKind::ALL {
        if kind.exists_in(mode) {
            services.push(service(redis, kind)?);
        } else {
            absent_services.push(kind.name(name));
        }
    }
    Some(Desired {
        services,
        absent_services,
        pdb: pdb(redis)?,
    })
}

/// Name, namespace, the operator's labels and a controller reference to the Redis, so the
/// garbage collector removes the object with its Redis even without the operator.
fn metadata(redis: &Redis, name: String) -> Option<ObjectMeta> {
    let redis_name = redis.metadata.name.as_deref()?;
    let mut owner = redis.controller_owner_ref(&())?;
    // As the pods: foreground deletion of the Redis waits for its children.
    owner.block_owner_deletion = Some(true);
    Some(ObjectMeta {
        name: Some(name),
        namespace: Some(redis.metadata.namespace.clone()?),
        labels: Some(selector_labels(redis_name)),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    })
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
    if let Some(exporter) = redis.spec.exporter() {
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
    Some(Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
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

/// The PodDisruptionBudget of `redis`: `maxUnavailable` of the spec over all of its pods.
pub fn pdb(redis: &Redis) -> Option<PodDisruptionBudget> {
    let redis_name = redis.metadata.name.as_deref()?;
    Some(PodDisruptionBudget {
        metadata: metadata(redis, redis_name.to_owned())?,
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(redis.spec.max_unavailable()),
            selector: Some(LabelSelector {
                match_labels: Some(selector_labels(redis_name)),
                match_expressions: None,
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    })
}

/// Whether `current` lacks what `desired` sets in the metadata: our labels (others may add
/// their own) and our controller reference.
fn metadata_differs(desired: &ObjectMeta, current: &ObjectMeta) -> bool {
    let labels = current.labels.clone().unwrap_or_default();
    let labels_missing = desired
        .labels
        .iter()
        .flatten()
        .any(|(k, v)| labels.get(k) != Some(v));
    let owner_missing = desired.owner_references.iter().flatten().any(|want| {
        !current
            .owner_references
            .iter()
            .flatten()
            .any(|have| same_owner(want, have))
    });
    labels_missing || owner_missing
}

fn same_owner(want: &OwnerReference, have: &OwnerReference) -> bool {
    have.uid == want.uid
        && have.controller == want.controller
        && have.block_owner_deletion == want.block_owner_deletion
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
    metadata_differs(&desired.metadata, &current.metadata)
        || set_differs(&want.type_, &have.type_)
        || set_differs(&want.cluster_ip, &have.cluster_ip)
        || (want.publish_not_ready_addresses.is_some()
            && want.publish_not_ready_addresses != have.publish_not_ready_addresses)
        // The selector is replaced as a whole (it is atomic), so it must match exactly: a
        // mode switch back to Standalone removes the role label from it.
        || want.selector.clone().unwrap_or_default() != have.selector.clone().unwrap_or_default()
        || ports(want) != ports(have)
}

/// Whether applying `desired` would change the PodDisruptionBudget `current`.
pub fn pdb_differs(desired: &PodDisruptionBudget, current: Option<&PodDisruptionBudget>) -> bool {
    let Some(current) = current else {
        return true;
    };
    let want = desired.spec.clone().unwrap_or_default();
    let have = current.spec.clone().unwrap_or_default();
    metadata_differs(&desired.metadata, &current.metadata)
        || want.max_unavailable != have.max_unavailable
        || want.min_available != have.min_available
        || want.selector != have.selector
}

/// Whether the object is controlled by the Redis of `uid` (only those are ever deleted).
fn controlled_by<K: Resource>(obj: &K, uid: &str) -> bool {
    obj.owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// The watch caches of the children of every Redis (labelled as managed by the operator).
#[derive(Clone)]
pub struct Stores {
    pub services: Store<Service>,
    pub pdbs: Store<PodDisruptionBudget>,
    /// The claims of Redis with `spec.storage` (see `storage`).
    pub claims: Store<PersistentVolumeClaim>,
}

impl Stores {
    /// Caches that stay empty: every pass would then apply every child (for tests and tools
    /// that run no watches; the controller uses [`watch`]).
    pub fn empty() -> Self {
        Stores {
            services: reflector::store::Writer::default().as_reader(),
            pdbs: reflector::store::Writer::default().as_reader(),
            claims: reflector::store::Writer::default().as_reader(),
        }
    }
}

/// The children's watches: their caches, the change streams that wake the owning Redis, and the
/// tasks that drive them.
pub struct Watches<S, P> {
    pub stores: Stores,
    pub services: S,
    pub pdbs: P,
    /// Claims are not owned through a controller reference: their changes are mapped to the
    /// Redis by their instance label (`storage::redis_for_claim`).
    pub claims: Events<PersistentVolumeClaim>,
    pub tasks: WatchTasks,
}

/// The tasks driving the children's watches. Aborted at shutdown: the Controller drains only
/// once its trigger streams end, as for the pod watch in `run`.
pub struct WatchTasks(Vec<tokio::task::JoinHandle<()>>);

impl WatchTasks {
    pub fn abort(&self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Starts the watches of Services and PodDisruptionBudgets labelled as the operator's (in
/// `namespace`, or everywhere) and waits until both caches are filled, so the first passes do
/// not re-apply children that exist.
pub async fn watch(
    client: &Client,
    namespace: Option<&str>,
) -> Result<
    Watches<
        impl Stream<Item = Result<Service, watcher::Error>> + Send + 'static,
        impl Stream<Item = Result<PodDisruptionBudget, watcher::Error>> + Send + 'static,
    >,
    Error,
> {
    let (services, service_events, service_task) = cached_watch(client, namespace, strip_service);
    let (pdbs, pdb_events, pdb_task) =
        cached_watch(client, namespace, |pdb: &mut PodDisruptionBudget| {
            pdb.status = None;
        });
    let (claims, claim_events, claim_task) =
        cached_watch(client, namespace, |claim: &mut PersistentVolumeClaim| {
            claim.status = None;
        });
    let watches = Watches {
        stores: Stores {
            services,
            pdbs,
            claims,
        },
        services: service_events,
        pdbs: pdb_events,
        claims: claim_events,
        tasks: WatchTasks(vec![service_task, pdb_task, claim_task]),
    };
    let ready = futures::future::try_join3(
        watches.stores.services.wait_until_ready(),
        watches.stores.pdbs.wait_until_ready(),
        watches.stores.claims.wait_until_ready(),
    )
    .await;
    if ready.is_err() {
        watches.tasks.abort();
        return Err(Error::IncompleteObject(
            "Service, PodDisruptionBudget and PersistentVolumeClaim caches",
        ));
    }
    Ok(watches)
}

pub type Events<K> = futures::stream::BoxStream<'static, Result<K, watcher::Error>>;

/// Keeps of a cached Service what [`service_differs`] compares (and the metadata): the API
/// server's additions to the spec (cluster IPs, IP families, affinity, policies) and the status go.
fn strip_service(service: &mut Service) {
    service.status = None;
    if let Some(spec) = service.spec.take() {
        service.spec = Some(ServiceSpec {
            type_: spec.type_,
            cluster_ip: spec.cluster_ip,
            publish_not_ready_addresses: spec.publish_not_ready_addresses,
            selector: spec.selector,
            ports: spec.ports,
            ..ServiceSpec::default()
        });
    }
}

/// A cache of the objects of kind `K` labelled as the operator's, each kept with its
/// managedFields cleared and as `strip` leaves it (what the controller reads; the children's
/// statuses, for one, are never read).
fn cached_watch<K>(
    client: &Client,
    namespace: Option<&str>,
    strip: fn(&mut K),
) -> (Store<K>, Events<K>, tokio::task::JoinHandle<()>)
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<K> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let (store, writer) = reflector::store::<K>();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<K>();
    let kind = K::kind(&()).into_owned();
    let task = watcher(
        api,
        watcher::Config::default().labels(&api::pods::managed_pods_selector()),
    )
    .default_backoff()
    .modify(move |obj| {
        obj.managed_fields_mut().clear();
        strip(obj);
    })
    .reflect(writer)
    .touched_objects()
    .for_each(move |obj| {
        match obj {
            // The Controller may have stopped; then nobody needs the trigger.
            Ok(obj) => drop(tx.send(obj)),
            Err(e) => tracing::warn!(error = %e, %kind, "watch error; retrying with backoff"),
        }
        future::ready(())
    });
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|obj| (Ok::<_, watcher::Error>(obj), rx))
    })
    .boxed();
    (store, events, tokio::spawn(task))
}

/// Applies the children of `redis` that differ from the caches, and deletes the Services of the
/// other mode that it controls. No write at all when everything is as desired.
pub async fn apply(client: &Client, stores: &Stores, redis: &Redis) -> Result<(), Error> {
    let desired = desired(redis).ok_or(Error::IncompleteObject("name, namespace or uid"))?;
    let namespace = redis
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::IncompleteObject("namespace"))?;
    let uid = redis.metadata.uid.as_deref().unwrap_or_default();
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    for service in &desired.services {
        let name = service.name_any();
        let current = stores
            .services
            .get(&ObjectRef::new(&name).within(namespace));
        if service_differs(service, current.as_deref()) {
            server_side_apply(&services, &name, service).await?;
        }
    }
    for name in &desired.absent_services {
        let current = stores.services.get(&ObjectRef::new(name).within(namespace));
        if let Some(current) = current.filter(|s| controlled_by(s.as_ref(), uid)) {
            delete(&services, name, current.uid()).await?;
        }
    }
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), namespace);
    let name = desired.pdb.name_any();
    let current = stores.pdbs.get(&ObjectRef::new(&name).within(namespace));
    if pdb_differs(&desired.pdb, current.as_deref()) {
        server_side_apply(&pdbs, &name, &desired.pdb).await?;
    }
    Ok(())
}

/// Server-side apply with the controller's field manager, forced: these objects are ours, and a
/// hand edit of a field we set is put back.
async fn server_side_apply<K>(api: &Api<K>, name: &str, obj: &K) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let kind = K::kind(&());
    match api
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(obj),
        )
        .await
    {
        Ok(_) => {
            tracing::info!(%kind, %name, "applied");
            Ok(())
        }
        // The namespace is being deleted, and the Redis with it.
        Err(kube::Error::Api(s))
            if s.code == 403 && s.message.contains("because it is being terminated") =>
        {
            Ok(())
        }
        Err(source) => Err(Error::Child {
            kind: kind.into_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}

/// Deletes a child of the other mode, only the one seen in the cache (uid precondition).
async fn delete<K>(api: &Api<K>, name: &str, uid: Option<String>) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let kind = K::kind(&());
    let params = DeleteParams {
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {
            tracing::info!(%kind, %name, "deleted: not used in this mode");
            Ok(())
        }
        // Gone already, or replaced since the cache saw it: nothing of ours to delete.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(source) => Err(Error::Child {
            kind: kind.into_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn redis(spec: serde_json::Value) -> Redis {
        let mut r = Redis::new("cache", serde_json::from_value(spec).expect("spec"));
        r.metadata.namespace = Some("ns".into());
        r.metadata.uid = Some("u1".into());
        r
    }

    #[test]
    fn with_the_exporter_every_service_has_a_metrics_port_and_one_is_labelled_for_scraping() {
        let port_names = |svc: &Service| -> Vec<String> {
            svc.spec
                .as_ref()
                .and_then(|s| s.ports.clone())
                .unwrap_or_default()
                .iter()
                .filter_map(|p| p.name.clone())
                .collect()
        };
        let scraped =
            |svc: &Service| svc.labels().get(SCRAPE_LABEL).map(String::as_str) == Some("true");
        let standalone = desired(&redis(json!({"exporter": {}}))).expect("desired");
        assert_eq!(port_names(&standalone.services[0]), ["redis", "metrics"]);
        assert!(scraped(&standalone.services[0]));
        let replicated = desired(&redis(
            json!({"mode": "Replication", "replicas": 3, "exporter": {}}),
        ))
        .expect("desired");
        let labelled: Vec<String> = replicated
            .services
            .iter()
            .filter(|s| scraped(s))
            .map(ResourceExt::name_any)
            .collect();
        assert_eq!(labelled, ["cache-headless"]);
        assert!(
            replicated
                .services
                .iter()
                .all(|s| port_names(s).contains(&"metrics".to_owned()))
        );
        // Turning it off changes the ports, so the Services are applied again without them.
        let off = desired(&redis(json!({"exporter": {"enabled": false}}))).expect("desired");
        assert!(service_differs(
            &off.services[0],
            Some(&standalone.services[0])
        ));
    }

    fn names(services: &[Service]) -> Vec<String> {
        services.iter().map(ResourceExt::name_any).collect()
    }

    fn selector(service: &Service) -> BTreeMap<String, String> {
        service
            .spec
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default()
    }

    /// What the API server stores for `obj`: the defaults it fills in, our fields untouched.
    fn as_stored(service: &Service) -> Service {
        let mut stored = service.clone();
        let spec = stored.spec.get_or_insert_with(ServiceSpec::default);
        if spec.cluster_ip.is_none() {
            spec.cluster_ip = Some("10.96.0.17".into());
        }
        spec.cluster_ips = spec.cluster_ip.clone().map(|ip| vec![ip]);
        spec.session_affinity = Some("None".into());
        spec.ip_families = Some(vec!["IPv4".into()]);
        spec.internal_traffic_policy = Some("Cluster".into());
        stored.metadata.uid = Some("svc-uid".into());
        stored.metadata.resource_version = Some("42".into());
        stored
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("team".into(), "cache".into());
        stored
    }

    #[test]
    fn standalone_has_one_service_over_every_pod_and_no_role_services() {
        let desired = desired(&redis(json!({"port": 8333}))).expect("desired");
        assert_eq!(names(&desired.services), ["cache"]);
        assert_eq!(
            desired.absent_services,
            ["cache-replicas", "cache-headless"]
        );
        let service = serde_json::to_value(&desired.services[0]).expect("json");
        assert_eq!(service["apiVersion"], "v1");
        assert_eq!(service["kind"], "Service");
        assert_eq!(service["metadata"]["namespace"], "ns");
        assert_eq!(
            service["spec"]["ports"],
            json!([{"name": "redis", "port": 8333, "targetPort": "redis", "protocol": "TCP"}])
        );
        assert_eq!(service["spec"]["type"], "ClusterIP");
        assert!(service["spec"].get("clusterIP").is_none(), "{service}");
        assert_eq!(
            selector(&desired.services[0]),
            api::pods::selector_labels("cache")
        );
    }

    #[test]
    fn replication_routes_by_role_and_names_every_pod() {
        let desired = desired(&redis(json!({"mode": "Replication"}))).expect("desired");
        assert_eq!(
            names(&desired.services),
            ["cache", "cache-replicas", "cache-headless"]
        );
        assert!(desired.absent_services.is_empty());
        let [client, replicas, headless] = &desired.services[..] else {
            panic!("three Services");
        };
        assert_eq!(
            selector(client)
                .get(api::pods::ROLE_LABEL)
                .map(String::as_str),
            Some("primary")
        );
        assert_eq!(
            selector(replicas)
                .get(api::pods::ROLE_LABEL)
                .map(String::as_str),
            Some("replica")
        );
        assert_eq!(selector(headless), api::pods::selector_labels("cache"));
        let spec = headless.spec.as_ref().expect("spec");
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
        assert_eq!(spec.publish_not_ready_addresses, Some(true));
        for service in [client, replicas] {
            let spec = service.spec.as_ref().expect("spec");
            assert_eq!(spec.cluster_ip, None, "{}", service.name_any());
            assert_eq!(spec.publish_not_ready_addresses, None);
            assert_eq!(spec.ports.as_ref().map(|p| p[0].port), Some(6379));
        }
    }

    #[test]
    fn every_child_is_labelled_and_controlled_by_the_redis() {
        let desired = desired(&redis(json!({"mode": "Replication"}))).expect("desired");
        let metas = desired
            .services
            .iter()
            .map(|s| &s.metadata)
            .chain([&desired.pdb.metadata]);
        for meta in metas {
            assert_eq!(meta.labels, Some(api::pods::selector_labels("cache")));
            let owners = meta.owner_references.as_deref().unwrap_or_default();
            assert_eq!(owners.len(), 1);
            let owner = &owners[0];
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
                ("Redis", "cache", "u1")
            );
            assert_eq!(owner.api_version, "myapp.tangx.in/v1");
            assert_eq!(owner.controller, Some(true));
            assert_eq!(owner.block_owner_deletion, Some(true));
        }
    }

    #[test]
    fn the_pdb_takes_max_unavailable_from_the_spec_over_every_pod() {
        let pdb = pdb(&redis(json!({}))).expect("pdb");
        let value = serde_json::to_value(&pdb).expect("json");
        assert_eq!(value["apiVersion"], "policy/v1");
        assert_eq!(value["kind"], "PodDisruptionBudget");
        assert_eq!(value["metadata"]["name"], "cache");
        assert_eq!(value["spec"]["maxUnavailable"], 1);
        assert!(value["spec"].get("minAvailable").is_none());
        assert_eq!(
            value["spec"]["selector"],
            json!({"matchLabels": api::pods::selector_labels("cache")})
        );
        let pdb = super::pdb(&redis(
            json!({"podDisruptionBudget": {"maxUnavailable": "25%"}}),
        ))
        .expect("pdb");
        assert_eq!(
            pdb.spec.and_then(|s| s.max_unavailable),
            Some(IntOrString::String("25%".into()))
        );
    }

    #[test]
    fn nothing_is_built_without_a_uid_or_a_namespace() {
        let mut r = redis(json!({}));
        r.metadata.uid = None;
        assert_eq!(desired(&r), None);
        let mut r = redis(json!({}));
        r.metadata.namespace = None;
        assert_eq!(desired(&r), None);
    }

    #[test]
    fn what_the_api_server_stored_from_our_service_needs_no_write() {
        for spec in [json!({}), json!({"mode": "Replication", "port": 7000})] {
            let desired = desired(&redis(spec)).expect("desired");
            for service in &desired.services {
                assert!(service_differs(service, None), "missing: apply");
                assert!(
                    !service_differs(service, Some(&as_stored(service))),
                    "{} as stored",
                    service.name_any()
                );
            }
            let mut stored = desired.pdb.clone();
            stored.metadata.uid = Some("pdb-uid".into());
            stored.status = Some(Default::default());
            assert!(pdb_differs(&desired.pdb, None));
            assert!(!pdb_differs(&desired.pdb, Some(&stored)));
        }
    }

    #[test]
    fn a_changed_spec_or_a_hand_edit_needs_a_write() {
        let base = redis(json!({}));
        let service = service(&base, ServiceKind::Client).expect("service");
        let stored = as_stored(&service);
        let new_port =
            super::service(&redis(json!({"port": 7000})), ServiceKind::Client).expect("service");
        assert!(service_differs(&new_port, Some(&stored)));

        let mut edited = stored.clone();
        if let Some(spec) = edited.spec.as_mut() {
            spec.selector = Some(BTreeMap::from([("app".into(), "other".into())]));
        }
        assert!(service_differs(&service, Some(&edited)), "selector edited");
        let mut edited = stored.clone();
        if let Some(spec) = edited.spec.as_mut() {
            spec.type_ = Some("NodePort".into());
        }
        assert!(service_differs(&service, Some(&edited)), "type edited");
        let mut edited = stored.clone();
        edited.metadata.owner_references = None;
        assert!(service_differs(&service, Some(&edited)), "owner removed");
        let mut edited = stored;
        edited
            .metadata
            .labels
            .as_mut()
            .map(|l| l.remove(api::pods::LABEL_INSTANCE));
        assert!(service_differs(&service, Some(&edited)), "label removed");

        let pdb = pdb(&base).expect("pdb");
        let two = super::pdb(&redis(
            json!({"podDisruptionBudget": {"maxUnavailable": 2}}),
        ))
        .expect("pdb");
        assert!(pdb_differs(&two, Some(&pdb)));
        let mut edited = pdb.clone();
        if let Some(spec) = edited.spec.as_mut() {
            spec.max_unavailable = None;
            spec.min_available = Some(IntOrString::Int(2));
        }
        assert!(pdb_differs(&pdb, Some(&edited)), "minAvailable by hand");
    }

    #[test]
    fn the_cached_service_compares_as_the_stored_one() {
        let base = redis(json!({"mode": "Replication", "exporter": {}}));
        let desired = desired(&base).expect("desired");
        let other =
            super::service(&redis(json!({"port": 7000})), ServiceKind::Client).expect("service");
        for stored in desired.services.iter().map(as_stored) {
            let mut node_port = stored.clone();
            if let Some(spec) = node_port.spec.as_mut() {
                spec.type_ = Some("NodePort".into());
                spec.publish_not_ready_addresses = Some(false);
            }
            for full in [stored.clone(), node_port] {
                let mut cached = full.clone();
                strip_service(&mut cached);
                assert_eq!(cached.status, None);
                assert_eq!(
                    cached.spec.as_ref().and_then(|s| s.cluster_ips.as_ref()),
                    None
                );
                for want in desired.services.iter().chain([&other]) {
                    assert_eq!(
                        service_differs(want, Some(&cached)),
                        service_differs(want, Some(&full)),
                        "{} against {}",
                        want.name_any(),
                        full.name_any()
                    );
                }
            }
        }
    }

    #[test]
    fn switching_modes_changes_the_client_selector_and_the_role_services() {
        let standalone = desired(&redis(json!({}))).expect("desired");
        let replication = desired(&redis(json!({"mode": "Replication"}))).expect("desired");
        let stored_standalone = as_stored(&standalone.services[0]);
        let stored_replication = as_stored(&replication.services[0]);
        // To Replication: the client Service narrows to the primary.
        assert!(service_differs(
            &replication.services[0],
            Some(&stored_standalone)
        ));
        // And back: the role label must leave the selector (a subset test would miss it).
        assert!(service_differs(
            &standalone.services[0],
            Some(&stored_replication)
        ));
        assert_eq!(
            standalone.absent_services,
            names(&replication.services[1..])
        );
        // The PDB does not depend on the mode.
        assert_eq!(standalone.pdb, replication.pdb);
    }

    #[test]
    fn only_children_the_redis_controls_are_deleted() {
        let desired = desired(&redis(json!({"mode": "Replication"}))).expect("desired");
        let ours = as_stored(&desired.services[1]);
        assert!(controlled_by(&ours, "u1"));
        assert!(!controlled_by(&ours, "another-redis"));
        let mut foreign = ours;
        foreign.metadata.owner_references = None;
        assert!(!controlled_by(&foreign, "u1"));
    }
}
