//! The Services and the PodDisruptionBudget of a Redis (DESIGN §3).
//!
//! - `<name>`: the client Service, port `redis`. Standalone: every pod of the Redis; Replication:
//!   the pod labelled `myapp.tangx.in/role: primary` (the replication engine keeps that label).
//! - Replication only: `<name>-replicas` (the replicas) and `<name>-headless` (every pod, ready or
//!   not, so each pod has a stable DNS name `<pod>.<name>-headless` where cluster DNS runs). In
//!   Standalone they do not exist: left over from a mode switch, they are deleted.
//! - With `spec.service.perPod` (§3n): `<name>-<ordinal>` for each pod, selecting it by its
//!   pod-name label (pods made before that label get it here, in place); the ones of ordinals
//!   scaled away, or all once `perPod` is off, are deleted.
//! - PodDisruptionBudget `<name>` (policy/v1): `maxUnavailable` from the spec (default 1) over
//!   every pod of the Redis, so a node drain takes its pods down one at a time.
//! - NetworkPolicy `<name>` (networking/v1), while `spec.networkPolicy` asks for one (built in
//!   [`network_policy`], DESIGN §3j); deleted when it no longer does.
//!
//! The builders and the comparisons are pure, one file per child kind: [`service`], [`pdb`],
//! [`network_policy`], and what every child carries, [`meta`]. [`apply`] is the shell: it compares each desired
//! object with the watch cache's copy and writes (server-side apply) only what differs, so a
//! steady state makes no writes; [`watch`] keeps those caches and wakes the owning Redis when a
//! child changes or is deleted by hand.
//!
//! Never a write to an object this Redis does not control (DESIGN §3i.2): a name the cache of
//! labelled objects lacks is read from the API server before it is applied, and a name another
//! object holds (a Service `web` of someone's Helm release, for a Redis named `web`) is a
//! [`NameConflict`], reported in the Ready condition ([`status`]) and left as it is.

pub mod meta;
pub mod network_policy;
pub mod pdb;
pub mod service;
pub mod status;

use crate::Error;
use crate::cached::CachedPod;
use crate::k8s::events::publish;
use crate::k8s::watch::{self, Cached, Events};
use crate::k8s::{self, apply_forced, controlled_by, controller_of};
use crate::step::Step;
use api::Redis;
use futures::future::join_all;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
pub use network_policy::OperatorPods;
use network_policy::{network_policy, network_policy_differs};
use pdb::{pdb, pdb_differs};
use serde::de::DeserializeOwned;
use service::{
    ServiceKind, per_pod_ordinals, service, service_differs, strip_service, unwanted_pod_services,
};
use std::fmt::Debug;
use std::sync::Arc;

/// The Ready condition's reason, and the Warning Event's, while a child's name is held by
/// another object.
pub const NAME_CONFLICT: &str = "NameConflict";

/// A child's name held by an object this Redis does not control: nothing was written to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameConflict {
    pub kind: String,
    pub name: String,
    /// Who controls the holder, as the user is told (`k8s::controller_of`).
    pub holder: String,
}

impl NameConflict {
    /// What the user is told, in the Ready condition and a Warning Event.
    pub fn message(&self) -> String {
        format!(
            "{} {} already exists and is not controlled by this Redis ({}); it was left as it is: \
             delete or rename it, or give the Redis another name",
            self.kind, self.name, self.holder
        )
    }
}

/// What applying the children came to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The children not applied because another object holds their name.
    pub conflicts: Vec<NameConflict>,
}

/// Who holds a child's name.
enum Holder<K> {
    Nobody,
    Ours(Arc<K>),
    /// Someone else's: who controls it.
    Other(String),
}

/// Who holds `name`: the cache of labelled objects first; a name it lacks is read from the API
/// server (an object without the operator's labels is not in the cache, and may exist).
async fn holder<K>(
    api: &Api<K>,
    cached: Option<Arc<K>>,
    name: &str,
    uid: &str,
) -> Result<Holder<K>, Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let current = match cached {
        Some(current) => Some(current),
        None => api
            .get_opt(name)
            .await
            .map_err(|source| Error::Child {
                kind: K::kind(&()).into_owned(),
                name: name.to_owned(),
                source,
            })?
            .map(Arc::new),
    };
    Ok(match current {
        None => Holder::Nobody,
        Some(current) if controlled_by(current.as_ref(), uid) => Holder::Ours(current),
        Some(current) => Holder::Other(controller_of(current.as_ref())),
    })
}

/// What a Redis should have, and the Services it should not.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    pub services: Vec<Service>,
    /// Names of the Services of the other mode: deleted when they exist and are ours.
    pub absent_services: Vec<String>,
    pub pdb: PodDisruptionBudget,
    /// Its NetworkPolicy; `None`: one of ours is deleted.
    pub network_policy: Option<NetworkPolicy>,
}

/// Everything a Redis should have (`operator`: the controller's pods, which its NetworkPolicy
/// admits); `None` until it has a name, a namespace and a uid.
pub fn desired(redis: &Redis, operator: &OperatorPods) -> Option<Desired> {
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
    for ordinal in per_pod_ordinals(redis) {
        services.push(service(redis, ServiceKind::Pod(ordinal))?);
    }
    Some(Desired {
        services,
        absent_services,
        pdb: pdb(redis)?,
        network_policy: network_policy(redis, operator),
    })
}

/// The watch caches of the children of every Redis (labelled as managed by the operator).
#[derive(Clone)]
pub struct Stores {
    pub services: Store<Service>,
    pub pdbs: Store<PodDisruptionBudget>,
    pub network_policies: Store<NetworkPolicy>,
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
            network_policies: reflector::store::Writer::default().as_reader(),
            claims: reflector::store::Writer::default().as_reader(),
        }
    }
}

/// The children's watches: their caches, the change streams that wake the owning Redis, and the
/// tasks that drive them.
pub struct Watches {
    pub stores: Stores,
    pub services: Events<Service>,
    pub pdbs: Events<PodDisruptionBudget>,
    pub network_policies: Events<NetworkPolicy>,
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

/// Starts the watches of Services, PodDisruptionBudgets, NetworkPolicies and claims labelled as the operator's
/// (in `namespace`, or everywhere) and waits until every cache is filled, so the first passes do
/// not re-apply children that exist.
pub async fn watch(client: &Client, namespace: Option<&str>) -> Result<Watches, Error> {
    let services = labelled(client, namespace, strip_service);
    let pdbs = labelled(client, namespace, |pdb: &mut PodDisruptionBudget| {
        pdb.status = None;
    });
    let network_policies = labelled(client, namespace, |_: &mut NetworkPolicy| {});
    let claims = labelled(client, namespace, |claim: &mut PersistentVolumeClaim| {
        claim.status = None;
    });
    let ready = futures::future::try_join4(
        services.ready(),
        pdbs.ready(),
        network_policies.ready(),
        claims.ready(),
    )
    .await;
    let tasks = WatchTasks(vec![
        services.task,
        pdbs.task,
        network_policies.task,
        claims.task,
    ]);
    if let Err(e) = ready {
        tasks.abort();
        return Err(e);
    }
    Ok(Watches {
        stores: Stores {
            services: services.store,
            pdbs: pdbs.store,
            network_policies: network_policies.store,
            claims: claims.store,
        },
        services: services.events,
        pdbs: pdbs.events,
        network_policies: network_policies.events,
        claims: claims.events,
        tasks,
    })
}

/// The cached watch of the objects of kind `K` labelled as the operator's, each kept with its
/// managedFields cleared and as `strip` leaves it (what the controller reads; the children's
/// statuses, for one, are never read).
fn labelled<K>(client: &Client, namespace: Option<&str>, strip: fn(&mut K)) -> Cached<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + k8s_openapi::Resource
        + Clone
        + PartialEq
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<K> = k8s::scoped(client, namespace);
    let stream = watcher(
        api,
        watcher::Config::default().labels(&api::pods::managed_pods_selector()),
    )
    .default_backoff()
    .modify(move |obj| {
        obj.managed_fields_mut().clear();
        strip(obj);
    });
    watch::cached_on_change(stream, K::KIND)
}

/// Applies the children of `redis` that differ from the caches, and deletes the Services of the
/// other mode, per-pod Services no longer wanted and a NetworkPolicy no longer asked for, when it
/// controls them; with per-pod Services, labels the `pods` that lack their pod-name label. No
/// write at all when everything is as desired; none to a name another object holds.
///
/// Each child is a name of its own, so their reads and writes go at once: a new Redis's pass waits
/// for the slowest child, not for the sum of them. What they came to is taken in a fixed order
/// (Services, removals, labels, PodDisruptionBudget, NetworkPolicy): the first error in it is the
/// one returned, and the conflicts are listed in it.
pub async fn apply(
    client: &Client,
    stores: &Stores,
    operator: &OperatorPods,
    redis: &Redis,
    pods: &[Arc<CachedPod>],
) -> Result<Applied, Error> {
    let desired =
        desired(redis, operator).ok_or(Error::IncompleteObject("name, namespace or uid"))?;
    let namespace = k8s::namespace(&redis.metadata)?;
    let uid = redis.metadata.uid.as_deref().unwrap_or_default();
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let cached_service = |name: &str| stores.services.get(&ObjectRef::new(name).within(namespace));
    let applies = desired.services.iter().map(|service| {
        let name = service.name_any();
        let cached = cached_service(&name);
        ensure(&services, cached, service, uid, service_differs)
    });
    let held = |name: &str| cached_service(name).map(|s| controlled_by(s.as_ref(), uid));
    let unwanted = desired
        .absent_services
        .iter()
        .filter_map(|name| {
            let current = cached_service(name).filter(|s| controlled_by(s.as_ref(), uid))?;
            Some((name.clone(), current.uid()))
        })
        .chain(unwanted_pod_services(redis, held).into_iter().map(|name| {
            let uid = cached_service(&name).and_then(|s| s.uid());
            (name, uid)
        }))
        .collect::<Vec<_>>();
    let services_api = &services;
    let removals = unwanted
        .into_iter()
        .map(|(name, uid)| async move { delete(services_api, &name, uid).await });
    let labels = async {
        if per_pod_ordinals(redis).is_empty() {
            return Ok(());
        }
        label_pods(client, namespace, pods).await
    };
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), namespace);
    let name = desired.pdb.name_any();
    let cached = stores.pdbs.get(&ObjectRef::new(&name).within(namespace));
    let pdb = ensure(&pdbs, cached, &desired.pdb, uid, pdb_differs);
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), namespace);
    let cached = stores
        .network_policies
        .get(&ObjectRef::new(&name).within(namespace));
    let policy = async {
        match &desired.network_policy {
            Some(policy) => ensure(&policies, cached, policy, uid, network_policy_differs).await,
            None => {
                if let Some(current) = cached.filter(|p| controlled_by(p.as_ref(), uid)) {
                    delete(&policies, &name, current.uid()).await?;
                }
                Ok(None)
            }
        }
    };
    let (applied, removed, labelled, pdb, policy) =
        tokio::join!(join_all(applies), join_all(removals), labels, pdb, policy);
    let mut conflicts = Vec::new();
    for conflict in applied {
        conflicts.extend(conflict?);
    }
    removed.into_iter().collect::<Result<Vec<()>, Error>>()?;
    labelled?;
    conflicts.extend(pdb?);
    conflicts.extend(policy?);
    Ok(Applied { conflicts })
}

/// Makes one child as `desired` when this Redis holds its name or nobody does (server-side
/// apply, only when it differs from the cached copy); the name's holder when someone else does.
async fn ensure<K>(
    api: &Api<K>,
    cached: Option<Arc<K>>,
    desired: &K,
    uid: &str,
    differs: fn(&K, Option<&K>) -> bool,
) -> Result<Option<NameConflict>, Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + serde::Serialize + Debug,
{
    let name = desired.name_any();
    match holder(api, cached, &name, uid).await? {
        Holder::Other(holder) => Ok(Some(NameConflict {
            kind: K::kind(&()).into_owned(),
            name,
            holder,
        })),
        Holder::Ours(current) if !differs(desired, Some(&current)) => Ok(None),
        Holder::Ours(_) | Holder::Nobody => {
            apply_forced(api, &name, desired).await?;
            Ok(None)
        }
    }
}

/// Gives the pods that lack it their pod-name label (`api::pods::POD_NAME_LABEL`, which per-pod
/// Services select): pods made before the operator set it. Pods being deleted are left alone.
async fn label_pods(
    client: &Client,
    namespace: &str,
    pods: &[Arc<CachedPod>],
) -> Result<(), Error> {
    let api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), namespace);
    for pod in pods {
        let Some(name) = pod.metadata.name.as_deref() else {
            continue;
        };
        if pod.pod_name_labelled || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let patch = serde_json::json!({"metadata": {"labels": {api::pods::POD_NAME_LABEL: name}}});
        match api
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => tracing::info!(pod = %name, "labelled with its name, for its per-pod Service"),
            // Gone since the cache saw it: its successor is made with the label.
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => {
                return Err(Error::Child {
                    kind: "Pod".to_owned(),
                    name: name.to_owned(),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Deletes a child no longer wanted (a Service of the other mode, a NetworkPolicy turned off),
/// only the one seen in the cache (uid precondition).
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
            tracing::info!(%kind, %name, "deleted: no longer wanted");
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

/// The children step of a pass (DESIGN §3, §3j): [`apply`], and a Warning Event for each name
/// another object holds. Its failure must not hold back the pods: the pass returns it last
/// ([`finish`]).
pub async fn step(
    step: &Step<'_>,
    stores: &Stores,
    operator: &OperatorPods,
) -> Result<Applied, Error> {
    let applied = apply(step.client, stores, operator, step.redis, step.pods).await;
    if let Ok(applied) = &applied {
        for conflict in &applied.conflicts {
            publish(
                step.recorder,
                &step.redis.object_ref(&()),
                None,
                EventType::Warning,
                NAME_CONFLICT,
                "Apply",
                conflict.message(),
            )
            .await;
        }
    }
    applied
}

/// What the children step leaves for after the status write: its error, or the first name
/// another object holds (said in the status; backing off, the holder may be renamed or deleted).
pub fn finish(applied: Result<Applied, Error>) -> Result<(), Error> {
    match applied?.conflicts.into_iter().next() {
        Some(conflict) => Err(Error::NameConflict {
            kind: conflict.kind,
            name: conflict.name,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
