//! Replication mode (spec.mode: Replication): one primary, its replicas, and failover by the
//! operator (the lease holder only: only it reconciles). `info` reads what a redis-server says,
//! `plan` decides (pure; the rules are stated there), `io` talks to the redis-servers; this module
//! is the shell that observes, runs the steps, and reports.

pub mod info;
pub mod io;
pub mod plan;

use crate::Error;
use crate::cached::CachedPod;
use api::MemberStatus;
use api::pods::{ROLE_LABEL, ROLE_PRIMARY, ROLE_REPLICA};
use futures::future::join_all;
use io::{Observed, Server};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use plan::{Decision, Health, Label, Member, Settings, Step};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Redis state changes are no Kubernetes events: look again this often (failure detection).
pub const POLL: Duration = Duration::from_secs(1);

/// Since when each Redis's labelled primary has been seen unhealthy (by Redis uid). In memory: a
/// new leader starts the clock again, which only delays a failover.
#[derive(Default)]
pub struct State {
    unhealthy: Mutex<HashMap<String, (String, Instant)>>,
}

impl State {
    /// How long `primary` of Redis `uid` has been unhealthy, counting from now if it just became.
    fn unhealthy_for(&self, uid: &str, primary: Option<&str>, now: Instant) -> Option<Duration> {
        let mut map = self
            .unhealthy
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(primary) = primary else {
            map.remove(uid);
            return None;
        };
        match map.get(uid) {
            Some((pod, since)) if pod == primary => Some(now.saturating_duration_since(*since)),
            _ => {
                map.insert(uid.to_owned(), (primary.to_owned(), now));
                Some(Duration::ZERO)
            }
        }
    }

    /// Forgets a Redis (deleted, or back to Standalone).
    pub fn forget(&self, uid: &str) {
        let mut map = self
            .unhealthy
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.remove(uid);
    }
}

/// What one pass found and did.
pub struct Outcome {
    pub decision: Decision,
    pub members: Vec<MemberStatus>,
}

/// The settings of one pass.
pub struct Pass<'a> {
    pub client: &'a kube::Client,
    pub state: &'a State,
    pub namespace: &'a str,
    pub uid: &'a str,
    pub hash: &'a str,
    pub replicas: u32,
    pub port: u16,
    pub password: Option<&'a str>,
    pub replication: api::defaults::EffectiveReplication,
}

/// Observes every pod's redis-server, decides, and carries the steps out in order. A step that
/// fails ends the pass with the error; the next pass decides again from what is then true.
pub async fn reconcile(pass: &Pass<'_>, pods: &[Arc<CachedPod>]) -> Result<Outcome, Error> {
    let observed = join_all(pods.iter().map(|pod| observe(pass, pod))).await;
    let members: Vec<Member> = pods
        .iter()
        .zip(&observed)
        .map(|(pod, seen)| member(pass, pod, seen.as_ref().map(|o| o.role.clone())))
        .collect();

    let labelled = members
        .iter()
        .find(|m| !m.terminating && m.label == Some(Label::Primary));
    // The clock of an unhealthy primary; with no primary at all (its pod gone), of that state
    // (keyed by an empty name), so a failover may wait a bounded time for an unread replica.
    let labelled_unhealthy = match labelled {
        Some(m) if m.ready && matches!(m.redis, Some(info::RedisRole::Primary { .. })) => None,
        Some(m) => Some(m.name.as_str()),
        None => Some(""),
    };
    let settings = Settings {
        replicas: pass.replicas,
        port: pass.port,
        primary_unhealthy_for: pass.state.unhealthy_for(
            pass.uid,
            labelled_unhealthy,
            Instant::now(),
        ),
        failover_after: pass.replication.failover_after,
        max_lag_seconds: i64::from(pass.replication.min_replicas_max_lag),
    };
    let decision = plan::decide(&members, &settings);

    let ips: HashMap<&str, &str> = members
        .iter()
        .filter_map(|m| Some((m.name.as_str(), m.ip.as_deref()?)))
        .collect();
    let ip_of = |name: &str| ips.get(name).copied();
    for step in &decision.steps {
        run_step(pass, step, &ips).await?;
    }

    // The primary's write guard, live (no restart): set again after a promotion.
    if let Some(primary) = &decision.primary
        && let Some(ip) = ip_of(primary)
    {
        let wanted = (
            i64::from(pass.replication.min_replicas_to_write),
            i64::from(pass.replication.min_replicas_max_lag),
        );
        let now = members
            .iter()
            .zip(&observed)
            .find(|(m, _)| &m.name == primary)
            .and_then(|(_, o)| o.as_ref().map(|o| o.min_replicas));
        let promoted = decision
            .steps
            .iter()
            .any(|s| matches!(s, Step::Promote { .. } | Step::Switchover { .. }));
        if promoted || now != Some(wanted) {
            server(pass, ip)
                .set_min_replicas(wanted.0, wanted.1)
                .await
                .map_err(|e| Error::Redis(primary.clone(), e.to_string()))?;
        }
    }
    let members = member_status(&decision, &members);
    Ok(Outcome { decision, members })
}

fn server<'a>(pass: &Pass<'a>, ip: &'a str) -> Server<'a> {
    Server {
        ip,
        port: pass.port,
        password: pass.password,
    }
}

async fn observe(pass: &Pass<'_>, pod: &CachedPod) -> Option<Observed> {
    let ip = pod.ip()?;
    match server(pass, ip).observe().await {
        Ok(observed) => Some(observed),
        Err(e) => {
            tracing::debug!(pod = ?pod.metadata.name, error = %e, "redis-server not reachable");
            None
        }
    }
}

fn member(pass: &Pass<'_>, pod: &CachedPod, redis: Option<info::RedisRole>) -> Member {
    let view = crate::plan::PodView::from_pod(pod.instance.as_deref().unwrap_or(""), pod);
    let label = match pod.role.as_deref() {
        Some(ROLE_PRIMARY) => Some(Label::Primary),
        Some(ROLE_REPLICA) => Some(Label::Replica),
        _ => None,
    };
    Member {
        ip: pod.ip.clone(),
        ready: view.ready,
        terminating: view.terminating || view.finished,
        current: view.spec_hash.as_deref() == Some(pass.hash),
        process_gone: container_not_running(pod),
        ordinal: view.ordinal,
        name: view.name,
        label,
        redis,
    }
}

/// The redis container has a state and it is not `running` (terminated, or waiting to restart).
fn container_not_running(pod: &CachedPod) -> bool {
    pod.containers
        .iter()
        .find(|c| c.name == crate::pod::CONTAINER)
        .and_then(|c| c.state.as_ref())
        .is_some_and(|state| !state.running)
}

async fn run_step(pass: &Pass<'_>, step: &Step, ips: &HashMap<&str, &str>) -> Result<(), Error> {
    let ip_of = |name: &str| ips.get(name).copied();
    let unreachable = |pod: &str| Error::Redis(pod.to_owned(), "the pod has no IP".to_owned());
    match step {
        Step::Label { pod, role } => label(pass, pod, *role).await,
        Step::Promote { pod } => {
            let ip = ip_of(pod).ok_or_else(|| unreachable(pod))?;
            server(pass, ip)
                .promote()
                .await
                .map_err(|e| Error::Redis(pod.clone(), e.to_string()))
        }
        Step::Follow { pod, host } => {
            let ip = ip_of(pod).ok_or_else(|| unreachable(pod))?;
            server(pass, ip)
                .follow(host)
                .await
                .map_err(|e| Error::Redis(pod.clone(), e.to_string()))
        }
        Step::Switchover { from, to } => {
            let from_ip = ip_of(from).ok_or_else(|| unreachable(from))?;
            let to_ip = ip_of(to).ok_or_else(|| unreachable(to))?;
            let move_label = || async {
                label(pass, from, None).await.map_err(|e| e.to_string())?;
                label(pass, to, Some(Label::Primary))
                    .await
                    .map_err(|e| e.to_string())
            };
            io::switchover(server(pass, from_ip), server(pass, to_ip), move_label)
                .await
                .map_err(|e| Error::Redis(from.clone(), e))
        }
    }
}

/// Sets or removes a pod's role label (the Services select by it).
async fn label(pass: &Pass<'_>, pod: &str, role: Option<Label>) -> Result<(), Error> {
    let value = role.map(|r| match r {
        Label::Primary => ROLE_PRIMARY,
        Label::Replica => ROLE_REPLICA,
    });
    let patch = serde_json::json!({"metadata": {"labels": {ROLE_LABEL: value}}});
    let pods: Api<Pod> = Api::namespaced(pass.client.clone(), pass.namespace);
    pods.patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(Error::Kube)
}

/// Each live pod's role and lag behind the primary, for `status.members`.
fn member_status(decision: &Decision, members: &[Member]) -> Vec<MemberStatus> {
    let primary = decision
        .primary
        .as_deref()
        .and_then(|p| members.iter().find(|m| m.name == p));
    let primary_offset = primary
        .and_then(|p| p.redis.as_ref())
        .map(info::RedisRole::offset);
    let primary_ip = primary.and_then(|p| p.ip.as_deref());
    let mut status: Vec<MemberStatus> = members
        .iter()
        .filter(|m| !m.terminating)
        .map(|m| {
            let is_primary = decision.primary.as_deref() == Some(m.name.as_str());
            let follows = m.redis.as_ref().zip(primary_ip).is_some_and(|(r, ip)| {
                matches!(r, info::RedisRole::Replica { primary_host, .. } if primary_host == ip)
            });
            let (role, lag) = if is_primary {
                ("primary", None)
            } else if follows {
                let lag = primary_offset
                    .zip(m.redis.as_ref())
                    .map(|(p, r)| (p - r.offset()).max(0));
                ("replica", lag)
            } else {
                ("unknown", None)
            };
            MemberStatus {
                name: m.name.clone(),
                role: role.to_owned(),
                lag,
            }
        })
        .collect();
    status.sort_by(|a, b| a.name.cmp(&b.name));
    status
}

/// The Replicating and FailingOver conditions' (status, reason, message) for a decision.
pub fn conditions(health: &Health) -> [(&'static str, &'static str, &'static str, String); 2] {
    let (replicating, failing_over) = match health {
        Health::Replicating => (
            (
                "True",
                "ReplicasInSync",
                "every replica is linked and within minReplicasMaxLag".to_owned(),
            ),
            ("False", "PrimaryServing", "the primary serves".to_owned()),
        ),
        Health::Degraded(m) => (
            ("False", "ReplicasBehind", m.clone()),
            ("False", "PrimaryServing", "the primary serves".to_owned()),
        ),
        Health::PrimaryUnhealthy(m) => (
            ("False", "PrimaryUnhealthy", m.clone()),
            ("False", "WaitingForPrimary", m.clone()),
        ),
        Health::FailingOver(m) => (
            ("False", "FailingOver", m.clone()),
            ("True", "Promoting", m.clone()),
        ),
        Health::NoCandidate(m) => (
            ("False", "NoPrimary", m.clone()),
            ("True", "NoReplicaReachable", m.clone()),
        ),
        Health::Electing => (
            (
                "False",
                "NoPrimary",
                "waiting for the first pod's redis-server".to_owned(),
            ),
            ("False", "Electing", "no primary yet".to_owned()),
        ),
    };
    [
        ("Replicating", replicating.0, replicating.1, replicating.2),
        (
            "FailingOver",
            failing_over.0,
            failing_over.1,
            failing_over.2,
        ),
    ]
}
