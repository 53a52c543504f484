//! Redis's own configuration (`spec.config`, `spec.maxMemoryPercentOfLimit`; DESIGN §3m): the
//! directives redis-server takes live, set on every running pod.
//!
//! Every pod starts with all of the Redis's settings as redis-server options (`pods::build`); the
//! pod spec's hash covers only those read at start, so a change of one of them replaces the pods as
//! any spec change does (switching over first), and a change of a live one replaces none: this step
//! sets it with `CONFIG SET` on each running pod ([`plan::wanted`] says what a pod is to run, and a
//! live directive the spec no longer sets goes back to Redis's default). The controller remembers
//! per pod (uid, and the redis container's restart count: a restarted redis-server runs its start
//! options again) what it set, and sets it again only when that changes. A live directive removed
//! from the spec goes back to its default on every pod that started with it (its args) or was given
//! it by this controller; a controller that restarted in between does not know the second, and such
//! a pod keeps the value until its container restarts. A value redis-server refuses is reported
//! (`ConfigRejected`) and the other settings still apply.
//!
//! - [`plan`]: which pods to give which settings, and what the pass found and says (pure).
//! - [`status`]: the `Config` condition, and Ready False for a refused value (pure).
//! - this module: the memory, the `CONFIG SET`s and the Events.

pub mod plan;
pub mod status;

use crate::cached::CachedPod;
use crate::k8s::by_redis::{ByRedis, Remembers};
use crate::k8s::events::publish;
use crate::redis_server::config::NotSet;
use crate::redis_server::{Login, Server, TlsClient};
use crate::step::Step;
use api::Redis;
use futures::future;
use kube::runtime::events::{EventType, Recorder};
use kube::{Resource, ResourceExt};
pub use plan::Settled;
use plan::{Due, Known};
use std::sync::Arc;

/// Reason of the Normal Event when pods were given changed settings live.
pub const CONFIG_APPLIED: &str = "ConfigApplied";
/// Reason of the Warning Event, the `Config` condition and Ready False when a pod refuses a value.
pub const CONFIG_REJECTED: &str = "ConfigRejected";

/// What the controller remembers per Redis (by uid). In memory: a new leader sets every pod's
/// live settings once more, which changes nothing on a pod that has them.
#[derive(Default)]
pub struct State {
    by_redis: ByRedis<Known>,
}

impl State {
    /// Forgets a Redis (deleted).
    pub fn forget(&self, uid: &str) {
        self.by_redis.forget(uid);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, crate::k8s::by_redis::Memory<String, Known>> {
        self.by_redis.lock()
    }
}

impl Remembers for State {
    fn forget(&self, uid: &str) {
        State::forget(self, uid);
    }

    fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.by_redis.keep_only(exists);
    }
}

/// The configuration step of a pass (§3m): [`apply`] once the controller can log in to the
/// pods; `None` before.
pub async fn step(step: &Step<'_>, state: &State) -> Option<Settled> {
    let login = step.login?;
    Some(apply(state, step.recorder, step.redis, step.pods, login, step.tls).await)
}

/// Sets the live settings on every running pod whose redis-server has not been given them
/// (since it started); Events for the pods that changed and for new refusals.
pub async fn apply(
    state: &State,
    recorder: &Recorder,
    redis: &Redis,
    pods: &[Arc<CachedPod>],
    login: Login<'_>,
    tls: Option<&TlsClient>,
) -> Settled {
    let uid = redis.metadata.uid.clone().unwrap_or_default();
    let generation = redis.metadata.generation;
    let port = u16::try_from(redis.spec.port()).unwrap_or_default();
    let plan = {
        let mut map = state.map();
        plan::plan(
            &redis.spec,
            generation,
            pods,
            map.entry(uid.clone()).or_default(),
        )
    };
    let answers = set_config(&plan.due, port, login, tls).await;
    let (settled, newly_refused) = {
        let mut map = state.map();
        plan::record(generation, plan, answers, map.entry(uid).or_default())
    };
    let reference = redis.object_ref(&());
    if let Some(note) = plan::applied_note(&settled) {
        tracing::info!(redis = %redis.name_any(), %note, "configuration applied");
        publish(
            recorder,
            &reference,
            None,
            EventType::Normal,
            CONFIG_APPLIED,
            "SetConfig",
            note,
        )
        .await;
    }
    if let Some(note) = plan::refused_note(&newly_refused) {
        tracing::warn!(redis = %redis.name_any(), %note, "configuration refused");
        publish(
            recorder,
            &reference,
            None,
            EventType::Warning,
            CONFIG_REJECTED,
            "SetConfig",
            note,
        )
        .await;
    }
    settled
}

/// `CONFIG SET` of each due pod's settings, all pods at once: what each did not set, in the
/// order of `due`; `None` for a pod not reached.
async fn set_config(
    due: &[Due],
    port: u16,
    login: Login<'_>,
    tls: Option<&TlsClient>,
) -> Vec<Option<Vec<NotSet>>> {
    future::join_all(due.iter().map(|Due { pod, wanted, .. }| {
        let ip = pod.ip().unwrap_or_default();
        let pairs: Vec<(&str, &str)> = wanted.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        async move {
            let server = Server {
                pod: name,
                ip,
                port,
                login,
                tls,
            };
            server
                .set_config(&pairs)
                .await
                .map_err(|e| tracing::debug!(pod = %name, error = %e, "configuration not set"))
                .ok()
        }
    }))
    .await
}
