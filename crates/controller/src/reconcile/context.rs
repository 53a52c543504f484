//! What every reconcile shares: the client, the caches, the Events recorder, the metrics and the
//! per-Redis memories of each feature; and the one status write (DESIGN §3: through the status
//! subresource, with the controller's field manager).

use crate::Error;
use crate::cached::CachedPod;
use crate::children::OperatorPods;
use crate::k8s::FIELD_MANAGER;
use crate::k8s::by_redis::Remembers;
use crate::k8s::terminating::TerminatingNamespaces;
use crate::metrics::Metrics;
use crate::{acl, auth, children, config, replication, tls};
use api::Redis;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What every reconcile shares.
pub struct Context {
    pub client: Client,
    /// Pods labelled `app.kubernetes.io/managed-by=redis-operator`, as `cached` keeps them.
    pub pods: Store<CachedPod>,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    /// Consecutive failures per Redis, for exponential backoff.
    failures: Mutex<HashMap<ObjectRef<DynamicObject>, u32>>,
    terminating: Mutex<TerminatingNamespaces>,
    /// Services, PodDisruptionBudgets and claims labelled as ours (see `children`).
    pub children: children::Stores,
    /// The controller's own pods, which every NetworkPolicy admits (`children::network_policy`).
    pub operator: OperatorPods,
    /// Replication mode: since when each primary has been unhealthy.
    pub replication: replication::State,
    /// The passwords of each Redis with auth (see `auth`).
    pub auth: auth::State,
    /// The TLS Secrets of each Redis with TLS, and its client (see `tls`).
    pub tls: tls::State,
    /// The users given to each pod of a Redis with ACL users (see `acl`).
    pub acl: acl::State,
    /// The live settings given to each pod of a Redis with configuration (see `config`).
    pub config: config::State,
    /// The image whose `redis-backup` restores a new Redis's pods (`--backup-image`, §3o).
    pub backup_image: String,
}

impl Context {
    pub fn new(
        client: Client,
        pods: Store<CachedPod>,
        recorder: Recorder,
        metrics: Arc<Metrics>,
    ) -> Self {
        Context {
            client,
            pods,
            recorder,
            metrics,
            failures: Mutex::default(),
            terminating: Mutex::default(),
            children: children::Stores::empty(),
            operator: OperatorPods::default(),
            replication: replication::State::default(),
            auth: auth::State::default(),
            tls: tls::State::default(),
            acl: acl::State::default(),
            config: config::State::default(),
            backup_image: String::new(),
        }
    }

    /// The image of the restore step (`--backup-image`); without it, a restored Redis's pods
    /// would start with an init container of no image (the API server refuses them).
    pub fn with_backup_image(mut self, image: String) -> Self {
        self.backup_image = image;
        self
    }

    /// The Secret metadata cache (`auth::watch`); without it, every password or certificate
    /// read is a GET.
    pub fn with_secrets(mut self, secrets: Store<auth::SecretMeta>) -> Self {
        self.tls = tls::State::with_secrets(secrets.clone());
        self.auth = auth::State::with_secrets(secrets);
        self
    }

    /// The caches of the Services and PodDisruptionBudgets (`children::watch`); without them,
    /// every pass applies every child.
    pub fn with_children(mut self, stores: children::Stores) -> Self {
        self.children = stores;
        self
    }

    /// The controller's own pods (flags `--operator-namespace`, `--operator-pod-labels`);
    /// without them, the NetworkPolicies admit no controller pod (one outside the cluster
    /// reaches the Redis pods from a node, which policies do not block).
    pub fn with_operator_pods(mut self, operator: OperatorPods) -> Self {
        self.operator = operator;
        self
    }

    pub(super) fn terminating(&self) -> MutexGuard<'_, TerminatingNamespaces> {
        self.terminating
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn failures(&self) -> MutexGuard<'_, HashMap<ObjectRef<DynamicObject>, u32>> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the features remember of each Redis (`k8s::by_redis`): a feature with a memory
    /// adds it here, and only here.
    fn memories(&self) -> [&dyn Remembers; 5] {
        [
            &self.replication,
            &self.auth,
            &self.tls,
            &self.acl,
            &self.config,
        ]
    }

    /// Forgets what the features remember of the Redis of `uid` (deleted: its finalizer's
    /// cleanup, or the watch's delete of one that had none).
    pub fn forget(&self, uid: &str) {
        for memory in self.memories() {
            memory.forget(uid);
        }
    }

    /// Forgets every Redis the Redis cache no longer has (deleted while no finalizer ran and no
    /// delete was seen, as across a re-list).
    pub fn sweep(&self, redis: &Store<DynamicObject>) {
        let live: HashSet<String> = redis
            .state()
            .iter()
            .filter_map(|r| r.metadata.uid.clone())
            .collect();
        for memory in self.memories() {
            memory.keep_only(&|uid| live.contains(uid));
        }
    }

    /// Writes `status` (server-side apply on the status subresource, forced).
    pub(super) async fn write_status(
        &self,
        redis: &Redis,
        namespace: &str,
        name: &str,
        status: &api::RedisStatus,
    ) -> Result<(), Error> {
        let api: Api<Redis> = Api::namespaced(self.client.clone(), namespace);
        let patch = serde_json::json!({
            "apiVersion": Redis::api_version(&()),
            "kind": Redis::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        api.patch_status(name, &params, &Patch::Apply(&patch))
            .await
            .map_err(Error::Kube)?;
        self.metrics.status_writes.inc();
        tracing::debug!(redis = %name, uid = ?redis.metadata.uid, "status written");
        Ok(())
    }
}
