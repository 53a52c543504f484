//! Redis's own configuration (`spec.config`, `spec.maxMemoryPercentOfLimit`; DESIGN §3m): the
//! directives redis-server takes live, set on every running pod.
//!
//! Every pod starts with all of the Redis's settings as redis-server options (`pods::build`); the
//! pod spec's hash covers only those read at start, so a change of one of them replaces the pods
//! as any spec change does (switching over first), and a change of a live one replaces none:
//! this step sets it with `CONFIG SET` on each running pod ([`wanted`] says what a pod is to run,
//! and a live directive the spec no longer sets goes back to Redis's default). The controller
//! remembers per pod (uid, and the redis container's restart count: a restarted redis-server
//! runs its start options again) what it set, and sets it again only when that changes. A live
//! directive removed from the spec goes back to its default on every pod that started with it
//! (its args) or was given it by this controller; a controller that restarted in between does
//! not know the second, and such a pod keeps the value until its container restarts. A value
//! redis-server refuses is reported (`ConfigRejected`) and the other settings still apply.
//!
//! - [`status`]: the `Config` condition, and Ready False for a refused value (pure).

pub mod status;

use crate::cached::CachedPod;
use crate::k8s::by_redis::{ByRedis, Remembers};
use crate::k8s::events::publish;
use crate::pods::build::CONTAINER;
use crate::redis_server::config::NotSet;
use crate::redis_server::{Login, Server, TlsClient};
use crate::step::Step;
use api::Redis;
use api::config::{Applied, Setting, directive};
use futures::future;
use kube::runtime::events::{EventType, Recorder};
use kube::{Resource, ResourceExt};
use std::collections::HashMap;
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

#[derive(Default)]
struct Known {
    /// Per pod uid: what it was last given.
    pods: HashMap<String, Given>,
    /// The refusals last published, so a repeated one is not published every pass.
    reported: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Given {
    /// The redis container's restart count then.
    restarts: i32,
    /// [`wanted`] then, as `name value` lines, and its names.
    settings: String,
    names: Vec<&'static str>,
    /// What it refused of them (redis-server's messages).
    refused: Vec<String>,
    /// The Redis's metadata.generation whose live settings it runs in full (none refused).
    generation: Option<i64>,
}

impl State {
    /// Forgets a Redis (deleted).
    pub fn forget(&self, uid: &str) {
        self.by_redis.forget(uid);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
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

/// What one pass found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// The Redis has settings, or pods started with some: the condition says how they stand.
    pub configured: bool,
    /// The live settings (names).
    pub live: Vec<&'static str>,
    /// Pods given changed settings in this pass.
    pub applied: Vec<String>,
    /// Pods not yet given the current settings (not reached, or loading their data).
    pub pending: Vec<String>,
    /// Refusals: pod, and redis-server's message.
    pub rejected: Vec<(String, String)>,
    /// Each running pod looked at, and the metadata.generation whose live settings it runs in
    /// full (`None`: not known, a pod not reached since this controller started).
    pub generations: Vec<(String, Option<i64>)>,
}

/// A pod to give its settings in this pass.
struct Due {
    pod: Arc<CachedPod>,
    uid: String,
    restarts: i32,
    wanted: Vec<(&'static str, String)>,
    lines: String,
    /// Its settings change (an Event says so), rather than being set once more.
    changed: bool,
    /// The generation it ran in full before.
    generation: Option<i64>,
}

/// The live settings a pod that `started_with` these directives is to run: `settings` (of
/// `spec`), and Redis's default for each live directive it started with that the spec no longer
/// sets, the operator's own excepted (`--appendonly` of `spec.storage`, say). By name. Pure.
pub fn wanted(
    spec: &api::RedisSpec,
    settings: &[Setting],
    started_with: &[&'static str],
) -> Vec<(&'static str, String)> {
    let mut wanted: Vec<(&'static str, String)> = settings
        .iter()
        .filter(|s| s.applied == Applied::Live)
        .map(|s| (s.name, s.value.clone()))
        .collect();
    for name in started_with {
        let Some(d) = directive(name) else { continue };
        let live = api::config::how_applied(d) == Applied::Live;
        let operators = api::config::owned(d.name, spec).is_some();
        if live && !operators && !wanted.iter().any(|(n, _)| n == name) {
            wanted.push((d.name, d.default.to_owned()));
        }
    }
    wanted.sort();
    wanted.dedup_by(|a, b| a.0 == b.0);
    wanted
}

/// The restart count of `pod`'s redis container, when it runs.
fn running_restarts(pod: &CachedPod) -> Option<i32> {
    pod.containers
        .iter()
        .find(|c| c.name == CONTAINER)
        .filter(|c| c.state.as_ref().is_some_and(|s| s.running))
        .map(|c| c.restart_count)
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
    let settings = api::config::settings(&redis.spec);
    let mut settled = Settled {
        configured: !settings.is_empty() || pods.iter().any(|p| !p.start_config.is_empty()),
        live: settings
            .iter()
            .filter(|s| s.applied == Applied::Live)
            .map(|s| s.name)
            .collect(),
        ..Settled::default()
    };
    let port = u16::try_from(redis.spec.port()).unwrap_or_default();
    // Pods to look at: running ones, with what they are to run.
    let mut due = Vec::new();
    {
        let mut map = state.map();
        let known = map.entry(uid.clone()).or_default();
        let live: Vec<&str> = pods
            .iter()
            .filter_map(|p| p.metadata.uid.as_deref())
            .collect();
        known
            .pods
            .retain(|pod_uid, _| live.contains(&pod_uid.as_str()));
        for pod in pods {
            let name = pod.name_any();
            let (Some(pod_uid), Some(_), Some(restarts), None) = (
                pod.metadata.uid.as_deref(),
                pod.ip(),
                running_restarts(pod),
                &pod.metadata.deletion_timestamp,
            ) else {
                continue;
            };
            // What it started with and what it was given since: a live directive among them
            // that the spec no longer sets goes back to the default.
            let earlier = known.pods.get_mut(pod_uid);
            let mut started = pod.start_config.clone();
            started.extend(earlier.iter().flat_map(|g| g.names.iter().copied()));
            let wanted = wanted(&redis.spec, &settings, &started);
            if wanted.is_empty() && earlier.is_none() {
                // Nothing set on it, nothing to set (no connection): it runs the current spec's.
                settled.generations.push((name, generation));
                continue;
            }
            let lines: String = wanted.iter().map(|(n, v)| format!("{n} {v}\n")).collect();
            match earlier {
                Some(given) if given.restarts == restarts && given.settings == lines => {
                    settled
                        .rejected
                        .extend(given.refused.iter().map(|r| (name.clone(), r.clone())));
                    // Same settings as the current spec's: it runs this generation's, unless
                    // it refused some.
                    if given.refused.is_empty() {
                        given.generation = generation;
                    }
                    settled.generations.push((name, given.generation));
                }
                earlier => {
                    // Said in an Event when it is news: not for a pod that started with
                    // these directives (a new pod, or one first seen by this controller).
                    let changed = match &earlier {
                        Some(given) => given.settings != lines,
                        None => !wanted.iter().all(|(n, _)| pod.start_config.contains(n)),
                    };
                    due.push(Due {
                        pod: Arc::clone(pod),
                        uid: pod_uid.to_owned(),
                        restarts,
                        wanted,
                        lines,
                        changed,
                        generation: earlier.and_then(|g| g.generation),
                    });
                }
            }
        }
    }
    let results = future::join_all(due.iter().map(|Due { pod, wanted, .. }| {
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
            server.set_config(&pairs).await
        }
    }))
    .await;
    let mut newly_refused = Vec::new();
    {
        let mut map = state.map();
        let known = map.entry(uid).or_default();
        for (due, result) in due.into_iter().zip(results) {
            let name = due.pod.name_any();
            let names: Vec<&'static str> = due.wanted.iter().map(|(n, _)| *n).collect();
            let not_set = match result {
                Ok(not_set) => not_set,
                Err(e) => {
                    tracing::debug!(pod = %name, error = %e, "configuration not set");
                    settled.generations.push((name.clone(), due.generation));
                    settled.pending.push(name);
                    continue;
                }
            };
            if not_set.contains(&NotSet::Loading) {
                settled.generations.push((name.clone(), due.generation));
                settled.pending.push(name);
                continue;
            }
            let refused: Vec<String> = not_set
                .into_iter()
                .filter_map(|n| match n {
                    NotSet::Refused(message) => Some(api::validation::shown(&message)),
                    NotSet::Loading => None,
                })
                .collect();
            for r in &refused {
                settled.rejected.push((name.clone(), r.clone()));
                if !known.reported.contains(r) {
                    newly_refused.push(format!("pod {name}: {r}"));
                }
            }
            let runs = if refused.is_empty() {
                generation
            } else {
                due.generation
            };
            settled.generations.push((name.clone(), runs));
            if due.changed && refused.is_empty() {
                settled.applied.push(name);
            }
            known.pods.insert(
                due.uid,
                Given {
                    restarts: due.restarts,
                    settings: due.lines,
                    names,
                    refused,
                    generation: runs,
                },
            );
        }
        known.reported = settled.rejected.iter().map(|(_, r)| r.clone()).collect();
    }
    settled.applied.sort();
    settled.pending.sort();
    settled.rejected.sort();
    settled.generations.sort();
    let reference = redis.object_ref(&());
    if !settled.applied.is_empty() {
        let note = format!(
            "Pod(s) {} run the current configuration, set live (no restart)",
            settled.applied.join(", ")
        );
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
    if !newly_refused.is_empty() {
        let note = newly_refused.join("; ");
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(value: serde_json::Value) -> api::RedisSpec {
        serde_json::from_value(value).expect("spec")
    }

    #[test]
    fn a_pod_runs_the_live_settings_and_defaults_for_the_ones_removed_since_it_started() {
        let s = spec(json!({"config": {"maxmemory-policy": "allkeys-lru", "databases": "4"}}));
        let now = api::config::settings(&s);
        assert_eq!(
            wanted(&s, &now, &[]),
            [("maxmemory-policy", "allkeys-lru".to_owned())],
            "databases is read at start: not set live"
        );
        // It started with notify-keyspace-events (since removed) and the operator's --port.
        let started = [
            "notify-keyspace-events",
            "port",
            "maxmemory-policy",
            "databases",
        ];
        assert_eq!(
            wanted(&s, &now, &started),
            [
                ("maxmemory-policy", "allkeys-lru".to_owned()),
                ("notify-keyspace-events", String::new()),
            ]
        );
        let plain = spec(json!({}));
        assert_eq!(
            wanted(&plain, &[], &["maxmemory"]),
            [("maxmemory", "0".to_owned())],
            "a derived maxmemory whose limit went away goes back to no limit"
        );
        assert_eq!(
            wanted(&plain, &[], &["appendonly"]),
            [("appendonly", "no".to_owned())],
            "appendonly the Redis set itself, since removed"
        );
        let stored = spec(json!({"storage": {"size": "1Gi", "appendOnly": true}}));
        assert!(
            wanted(&stored, &[], &["appendonly", "dir", "replicaof"]).is_empty(),
            "the operator's own options are not the configuration's to undo"
        );
    }
}
