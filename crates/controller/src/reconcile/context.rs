//! What every reconcile shares: the client, the caches, the Events recorder, the metrics and the
//! per-Redis memories of each feature; and the one status write (DESIGN §3: through the status
//! subresource, with the controller's field manager).

use crate::Error;
use crate::cached::CachedPod;
use crate::children::OperatorPods;
use crate::k8s::FIELD_MANAGER;
use crate::k8s::by_redis::{ByRedis, Remembers};
use crate::k8s::terminating::TerminatingNamespaces;
use crate::metrics::{Metrics, RedisLabels};
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
    /// The last status this controller wrote for each Redis, and over which object.
    statuses: ByRedis<StatusWritten>,
}

/// A status written, and the `resourceVersion` of the Redis it was written over.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusWritten {
    over: Option<String>,
    status: api::RedisStatus,
}

/// Whether `status` must be written over `redis` as the cache has it: it differs from the
/// status there, and that is not merely the cache still showing the very object our last write
/// went over. The pass that follows a status write often comes before the watch has brought the
/// write back (a child's or pod's event): without this, it would write the same status again.
pub fn must_write(redis: &Redis, status: &api::RedisStatus, last: Option<&StatusWritten>) -> bool {
    if redis.status.as_ref() == Some(status) {
        return false;
    }
    let cache_behind_our_write = last.is_some_and(|w| {
        w.status == *status && w.over.is_some() && w.over == redis.metadata.resource_version
    });
    !cache_behind_our_write
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
            statuses: ByRedis::default(),
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
    fn memories(&self) -> [&dyn Remembers; 6] {
        [
            &self.statuses,
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

    /// Forgets the Redis the watch saw deleted: what the features remember of it, and its
    /// backup metric series (kept by namespace and name).
    pub fn forget_deleted(&self, gone: &DynamicObject) {
        self.forget(gone.metadata.uid.as_deref().unwrap_or_default());
        if let (Some(namespace), Some(name)) = (&gone.metadata.namespace, &gone.metadata.name) {
            self.metrics.backups.forget(&RedisLabels {
                namespace: namespace.clone(),
                redis: name.clone(),
            });
        }
    }

    /// Forgets every Redis the Redis cache no longer has (deleted while no finalizer ran and no
    /// delete was seen, as across a re-list), its backup metric series too.
    pub fn sweep(&self, redis: &Store<DynamicObject>) {
        let state = redis.state();
        let live: HashSet<&str> = state
            .iter()
            .filter_map(|r| r.metadata.uid.as_deref())
            .collect();
        for memory in self.memories() {
            memory.keep_only(&|uid| live.contains(uid));
        }
        let named: HashSet<(&str, &str)> = state
            .iter()
            .filter_map(|r| {
                Some((
                    r.metadata.namespace.as_deref()?,
                    r.metadata.name.as_deref()?,
                ))
            })
            .collect();
        self.metrics
            .backups
            .keep_only(|r| named.contains(&(r.namespace.as_str(), r.redis.as_str())));
    }

    /// Writes `status` (server-side apply on the status subresource, forced), unless it is
    /// there already or [`must_write`] finds the cache merely behind our last write of it.
    pub(super) async fn write_status(
        &self,
        redis: &Redis,
        namespace: &str,
        name: &str,
        status: &api::RedisStatus,
    ) -> Result<(), Error> {
        let uid = redis.metadata.uid.as_deref().unwrap_or_default();
        if !must_write(redis, status, self.statuses.lock().get(uid)) {
            return Ok(());
        }
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
        let written = StatusWritten {
            over: redis.metadata.resource_version.clone(),
            status: status.clone(),
        };
        self.statuses.lock().insert(uid.to_owned(), written);
        tracing::debug!(redis = %name, uid = ?redis.metadata.uid, "status written");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis_at(version: &str, ready: i32) -> Redis {
        let mut redis = Redis::new("r", Default::default());
        redis.metadata.resource_version = Some(version.into());
        redis.status = Some(api::RedisStatus {
            ready_replicas: ready,
            ..Default::default()
        });
        redis
    }

    #[test]
    fn a_status_is_not_written_again_while_the_cache_shows_the_object_it_was_written_over() {
        let ready = |n| api::RedisStatus {
            ready_replicas: n,
            ..Default::default()
        };
        let before = redis_at("10", 2);
        assert!(
            must_write(&before, &ready(3), None),
            "a change, never written"
        );
        assert!(
            !must_write(&before, &ready(2), None),
            "as stored: nothing to write"
        );
        let written = StatusWritten {
            over: Some("10".into()),
            status: ready(3),
        };
        assert!(
            !must_write(&before, &ready(3), Some(&written)),
            "the cache is behind our own write of this very status"
        );
        assert!(
            must_write(&before, &ready(1), Some(&written)),
            "another status than the one written"
        );
        assert!(
            must_write(&redis_at("11", 2), &ready(3), Some(&written)),
            "a newer object says otherwise (someone else wrote the status): put it back"
        );
        assert!(!must_write(&redis_at("11", 3), &ready(3), Some(&written)));
    }
}
