//! Replication mode (`spec.mode: Replication`, DESIGN §3b): one primary, its replicas, and
//! failover by the operator (the lease holder only: only it reconciles).
//!
//! - [`plan`]: the decision: who is primary, what to promote, repoint or label (pure; the rules
//!   are stated there).
//! - [`status`]: the primary, the members and the conditions the status shows (pure).
//! - [`offsets`]: where each pod was last seen (its read, or what its primary says it
//!   acknowledged, in its replication history): a failover never promotes a replica that may
//!   lack what a member unread now holds (issue #41.2).
//! - [`spread`]: whether the primary shares its node with another pod (the `Spread` condition).
//! - `events`: what a pass says in Events, the Warnings once each.
//! - this module: the shell that observes every pod's redis-server (through
//!   [`crate::redis_server`]), runs the steps in order, and says what it did in Events.

pub mod clock;
mod events;
pub mod offsets;
pub mod plan;
pub mod spread;
pub mod status;
pub mod written;

use crate::Error;
use crate::cached::CachedPod;
use crate::k8s::by_redis::Remembers;
use crate::redis_server::info::RedisRole;
use crate::redis_server::{self, Login, Observed, Server, TlsClient};
use crate::step::{Outcome as StepOutcome, Step as PassStep};
use api::Redis;
use api::pods::{ROLE_LABEL, ROLE_PRIMARY, ROLE_REPLICA};
use clock::PrimarySeen;
use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::Recorder;
use plan::{Label, Member, Settings, Step};
pub use status::Outcome;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Redis state changes are no Kubernetes events: look again this often (failure detection).
pub const POLL: Duration = Duration::from_secs(1);

/// What the replication step keeps between passes, by Redis uid. In memory: a new leader starts
/// afresh, which only delays a failover.
#[derive(Default)]
pub struct State {
    /// How long each labelled primary has been unhealthy.
    clocks: clock::FailoverClocks,
    /// The role labels written, until the pod cache shows them.
    labels: written::LabelWrites,
    /// The offset each pod was last read at.
    offsets: offsets::LastOffsets,
}

impl State {
    /// Forgets a Redis (deleted, or back to Standalone).
    pub fn forget(&self, uid: &str) {
        self.clocks.forget(uid);
        self.labels.forget(uid);
        self.offsets.forget(uid);
    }
}

impl Remembers for State {
    fn forget(&self, uid: &str) {
        State::forget(self, uid);
    }

    fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.clocks.keep_only(exists);
        self.labels.keep_only(exists);
        self.offsets.keep_only(exists);
    }
}

/// The replication step's outcome (§3b): Redis state changes are no Kubernetes events, so the
/// pass polls while it runs.
impl StepOutcome for Option<Outcome> {
    fn retry(&self, _step: &PassStep<'_>) -> Option<Duration> {
        self.is_some().then_some(POLL)
    }

    fn fold(
        &self,
        _step: &PassStep<'_>,
        status: api::RedisStatus,
        stored: Option<&api::RedisStatus>,
        now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    ) -> api::RedisStatus {
        status::with_replication(status, self.as_ref(), stored, now)
    }
}

/// What the replication step needs of the reconciler's context.
pub struct Shell<'a> {
    pub client: &'a Client,
    pub state: &'a State,
    pub recorder: &'a Recorder,
}

/// The replication step of a pass (§3b): [`apply`] once the controller can log in to the pods
/// (without a password that works, a pod that refuses it would look dead: wait); `None` before.
/// A pod that refused the login has the auth step check every pod in the next pass.
pub async fn step(
    step: &PassStep<'_>,
    state: &State,
    auth: &crate::auth::State,
    hash: &str,
) -> Result<Option<Outcome>, Error> {
    let Some(login) = step.login else {
        return Ok(None);
    };
    let shell = Shell {
        client: step.client,
        state,
        recorder: step.recorder,
    };
    let outcome = apply(&shell, step.redis, step.pods, hash, login, step.tls).await?;
    if outcome.as_ref().is_some_and(|r| r.refuses_auth) {
        auth.recheck(step.uid());
    }
    Ok(outcome)
}

/// Replication mode: observe the redis-servers, run the role steps, say what was promoted and
/// repointed in Events. `None` in Standalone mode (whose memory of the Redis is dropped).
pub async fn apply(
    shell: &Shell<'_>,
    redis: &Redis,
    owned: &[Arc<CachedPod>],
    hash: &str,
    login: Login<'_>,
    tls: Option<&TlsClient>,
) -> Result<Option<Outcome>, Error> {
    let uid = redis.metadata.uid.as_deref().unwrap_or_default();
    if redis.spec.mode() != api::Mode::Replication {
        shell.state.forget(uid);
        return Ok(None);
    }
    let namespace = crate::k8s::namespace(&redis.metadata)?;
    let name = redis.name_any();
    let pass = Pass {
        client: shell.client,
        state: shell.state,
        namespace,
        name: &name,
        uid,
        hash,
        replicas: u32::try_from(redis.spec.replicas()).unwrap_or(0),
        port: u16::try_from(redis.spec.port()).unwrap_or_default(),
        login,
        tls,
        replication: redis.spec.replication(),
        had_primary: redis.status.as_ref().is_some_and(|s| s.primary.is_some()),
        restored: crate::backup::restore::restored_ordinal(redis),
        last_primary: redis
            .status
            .as_ref()
            .and_then(|s| s.primary.as_deref())
            .and_then(|p| api::pods::ordinal(&redis.name_any(), p)),
    };
    let owned = fresh(&pass, owned).await?;
    let outcome = reconcile(&pass, &owned).await?;
    events::announce(shell.recorder, redis, namespace, &outcome).await;
    Ok(Some(outcome))
}

/// The settings of one pass.
pub struct Pass<'a> {
    pub client: &'a kube::Client,
    pub state: &'a State,
    pub namespace: &'a str,
    /// The Redis's name (for the log).
    pub name: &'a str,
    pub uid: &'a str,
    pub hash: &'a str,
    pub replicas: u32,
    pub port: u16,
    pub login: Login<'a>,
    /// The client of a Redis with `spec.tls`.
    pub tls: Option<&'a TlsClient>,
    pub replication: api::defaults::EffectiveReplication,
    /// `status.primary` is set: a primary was chosen before.
    pub had_primary: bool,
    /// The ordinal `status.primary` names.
    pub last_primary: Option<u32>,
    pub restored: Option<u32>,
}

/// The pods, with those whose role label the cache does not show as last written read from
/// the API server instead (see [`written`]); a pod that is gone is left out.
async fn fresh(pass: &Pass<'_>, cached: &[Arc<CachedPod>]) -> Result<Vec<Arc<CachedPod>>, Error> {
    let stale = pass.state.labels.unseen(pass.uid, cached);
    if stale.is_empty() {
        return Ok(cached.to_vec());
    }
    tracing::debug!(pods = ?stale, "the pod cache lags the last role labels: reading them");
    let api: Api<Pod> = Api::namespaced(pass.client.clone(), pass.namespace);
    let mut pods = Vec::with_capacity(cached.len());
    for pod in cached {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        if !stale.iter().any(|s| s == name) {
            pods.push(pod.clone());
        } else if let Some(read) = api.get_opt(name).await.map_err(Error::Kube)? {
            pods.push(Arc::new(CachedPod::from_pod(read)));
        }
    }
    pass.state.labels.settled(pass.uid, &stale);
    Ok(pods)
}

/// Observes every pod's redis-server, decides, and carries the steps out in order. A step that
/// fails ends the pass with the error; the next pass decides again from what is then true.
pub async fn reconcile(pass: &Pass<'_>, pods: &[Arc<CachedPod>]) -> Result<Outcome, Error> {
    let started = Instant::now();
    let mut observed = join_all(pods.iter().map(|pod| {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let budget =
            pass.state
                .clocks
                .read_budget(pass.uid, name, pass.replication.failover_after, started);
        observe(pass, pod, budget)
    }))
    .await;
    remember_offsets(pass, pods, &observed);
    let mut members = members(pass, pods, &observed);

    let labelled = members
        .iter()
        .find(|m| !m.terminating && m.label == Some(Label::Primary));
    // The clock of an unhealthy primary; with no primary at all (its pod gone), of that state
    // (keyed by an empty name), so a failover may wait a bounded time for an unread replica.
    let seen = match labelled {
        Some(m) if m.ready && matches!(m.redis, Some(RedisRole::Primary { .. })) => {
            PrimarySeen::Healthy(&m.name)
        }
        Some(m) => PrimarySeen::Unhealthy(&m.name),
        None => PrimarySeen::Unhealthy(""),
    };
    let settings = Settings {
        replicas: pass.replicas,
        port: pass.port,
        primary_unhealthy_for: pass
            .state
            .clocks
            .unhealthy_for(pass.uid, seen, Instant::now()),
        failover_after: pass.replication.failover_after,
        max_lag_seconds: i64::from(pass.replication.min_replicas_max_lag),
        had_primary: pass.had_primary,
        last_primary: pass.last_primary,
        restored: pass.restored,
    };
    let ips: HashMap<&str, &str> = pods
        .iter()
        .filter_map(|p| Some((p.metadata.name.as_deref()?, p.ip()?)))
        .collect();
    let ip_of = |name: &str| ips.get(name).copied();

    let mut decision = plan::decide(&members, &settings);
    if is_cut(&decision) {
        // The cut is the first half of a failover; the promotion need not wait a whole pass
        // (one that again waits out the timeout of a server that does not answer): the servers
        // that answered are read again, with their offsets as cut, and the planner decides on.
        log_steps(pass, &decision);
        run_steps(pass, &decision, &ips).await?;
        observed = join_all(pods.iter().zip(observed).map(|(pod, seen)| async move {
            match seen {
                Seen::Read(_) => observe(pass, pod, None).await,
                unread => unread,
            }
        }))
        .await;
        remember_offsets(pass, pods, &observed);
        members = self::members(pass, pods, &observed);
        decision = plan::decide(&members, &settings);
    }
    log_steps(pass, &decision);
    run_steps(pass, &decision, &ips).await?;

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
            .and_then(|(_, seen)| seen.observed().map(|o| o.min_replicas));
        let promoted = decision
            .steps
            .iter()
            .any(|s| matches!(s, Step::Promote { .. } | Step::Switchover { .. }));
        if guard_to_set(promoted, now, wanted) {
            server(pass, primary, ip)
                .set_min_replicas(wanted.0, wanted.1)
                .await?;
        }
    }
    let members = status::member_status(&decision, &members);
    let nodes: Vec<(&str, Option<&str>)> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.metadata.name.as_deref()?, p.node.as_deref())))
        .collect();
    Ok(Outcome {
        refuses_auth: observed.iter().any(|m| matches!(m, Seen::AuthRefused)),
        spread: spread::spread(decision.primary.as_deref(), &nodes),
        decision,
        members,
    })
}

/// Steps to take are news for a post-mortem (a steady state has none): said at info.
fn log_steps(pass: &Pass<'_>, decision: &plan::Decision) {
    if !decision.steps.is_empty() {
        tracing::info!(
            redis = %pass.name,
            namespace = %pass.namespace,
            steps = ?decision.steps,
            health = ?decision.health,
            "replication steps"
        );
    }
}

/// Only the cut of a failover: every step a fence.
fn is_cut(decision: &plan::Decision) -> bool {
    !decision.steps.is_empty()
        && decision
            .steps
            .iter()
            .all(|s| matches!(s, Step::Fence { .. }))
}

/// Carries the steps out in order. The cut (fences) goes to every server at once, and one that
/// fails does not hold back the others: the next decision reads them again and cuts what is
/// still on a stream. A replica that cannot be repointed (loading its dataset, unreachable) does
/// not hold back the steps after it either: after a promotion the labels must still move to the
/// new primary, or the next pass finds an unlabelled primary and cuts it off again (a chaos run
/// saw that twice in a row while the old primary loaded its data). The pass goes on, so its
/// Events and status are written; the next pass (one `POLL` later) repoints the replica, and
/// until then the status shows it not replicating. Any other step that fails ends the pass.
async fn run_steps(
    pass: &Pass<'_>,
    decision: &plan::Decision,
    ips: &HashMap<&str, &str>,
) -> Result<(), Error> {
    let (fences, steps): (Vec<&Step>, Vec<&Step>) = decision
        .steps
        .iter()
        .partition(|s| matches!(s, Step::Fence { .. }));
    for (step, result) in fences
        .iter()
        .zip(join_all(fences.iter().map(|s| run_step(pass, s, ips))).await)
    {
        if let Err(e) = result {
            tracing::info!(?step, error = %e, "could not cut a redis-server off its stream");
        }
    }
    for step in steps {
        match (step, run_step(pass, step, ips).await) {
            (_, Ok(())) => {}
            (Step::Follow { .. }, Err(e)) => {
                tracing::info!(?step, error = %e, "could not repoint a replica; the next pass will");
            }
            (_, Err(e)) => return Err(e),
        }
    }
    Ok(())
}

/// Records where every server was seen (its read, or its primary's count of what it
/// acknowledged), and forgets pods no longer there.
fn remember_offsets(pass: &Pass<'_>, pods: &[Arc<CachedPod>], observed: &[Seen]) {
    let reads: Vec<offsets::PodRead<'_>> = pods
        .iter()
        .zip(observed)
        .filter_map(|(pod, seen)| {
            Some(offsets::PodRead {
                pod_uid: pod.metadata.uid.as_deref()?,
                ip: pod.ip(),
                read: seen
                    .observed()
                    .and_then(|o| Some((&o.role, o.history.as_ref()?))),
            })
        })
        .collect();
    pass.state.offsets.record_pass(pass.uid, &reads);
}

/// The pods as the planner sees them, with what their redis-servers said.
fn members(pass: &Pass<'_>, pods: &[Arc<CachedPod>], observed: &[Seen]) -> Vec<Member> {
    pods.iter()
        .zip(observed)
        .map(|(pod, seen)| member(pass, pod, seen))
        .collect()
}

/// Whether the primary's write guard (`min-replicas-to-write`, `min-replicas-max-lag`: wanted
/// and as last read, `now`) is to be set in this pass: after a promotion, or when the primary
/// was read with other values. Not when it could not be read: it may be gone (a failover is
/// due), and the error would end the pass and back the next one off, delaying the failover.
fn guard_to_set(promoted: bool, now: Option<(i64, i64)>, wanted: (i64, i64)) -> bool {
    promoted || now.is_some_and(|now| now != wanted)
}

fn server<'a>(pass: &Pass<'a>, pod: &'a str, ip: &'a str) -> Server<'a> {
    Server {
        pod,
        ip,
        port: pass.port,
        login: pass.login,
        tls: pass.tls,
    }
}

/// What one pod's redis-server said: read, refused the operator's password, or nothing.
enum Seen {
    Read(Observed),
    AuthRefused,
    Unreachable,
}

impl Seen {
    fn observed(&self) -> Option<&Observed> {
        match self {
            Seen::Read(observed) => Some(observed),
            Seen::AuthRefused | Seen::Unreachable => None,
        }
    }
}

/// Reads one pod's redis-server; within `budget` in all when given (see
/// [`clock::FailoverClocks::read_budget`]), else with the client's own timeouts.
async fn observe(pass: &Pass<'_>, pod: &CachedPod, budget: Option<Duration>) -> Seen {
    let Some(ip) = pod.ip() else {
        return Seen::Unreachable;
    };
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let server = server(pass, name, ip);
    let read = server.observe();
    let read = match budget {
        Some(budget) => match tokio::time::timeout(budget, read).await {
            Ok(read) => read,
            Err(_) => {
                tracing::debug!(pod = %name, ?budget, "redis-server did not answer within the read budget");
                return Seen::Unreachable;
            }
        },
        None => read.await,
    };
    match read {
        Ok(observed) => Seen::Read(observed),
        Err(Error::Redis { source, .. }) if redis_server::refuses_auth(&source) => {
            tracing::info!(pod = %name, "redis-server refuses the operator's password");
            Seen::AuthRefused
        }
        Err(e) => {
            tracing::debug!(pod = %name, error = %e, "redis-server not reachable");
            Seen::Unreachable
        }
    }
}

fn member(pass: &Pass<'_>, pod: &CachedPod, seen: &Seen) -> Member {
    let view = crate::pods::plan::PodView::from_pod(pod.instance.as_deref().unwrap_or(""), pod);
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
        keys: seen.observed().map_or(0, |o| o.keys),
        loading: seen.observed().is_some_and(|o| o.loading),
        redis: seen.observed().map(|o| o.role.clone()),
        history: seen.observed().and_then(|o| o.history.clone()),
        refuses_auth: matches!(seen, Seen::AuthRefused),
        last_read: match seen {
            Seen::Read(_) => None,
            Seen::AuthRefused | Seen::Unreachable => pod
                .metadata
                .uid
                .as_deref()
                .and_then(|pod_uid| pass.state.offsets.last(pass.uid, pod_uid)),
        },
    }
}

/// The redis container has a state and it is not `running` (terminated, or waiting to restart).
fn container_not_running(pod: &CachedPod) -> bool {
    pod.containers
        .iter()
        .find(|c| c.name == crate::pods::build::CONTAINER)
        .and_then(|c| c.state.as_ref())
        .is_some_and(|state| !state.running)
}

async fn run_step<'a>(
    pass: &Pass<'a>,
    step: &'a Step,
    ips: &HashMap<&'a str, &'a str>,
) -> Result<(), Error> {
    // The server of `pod`, at its IP: a pod without one cannot be reached yet.
    let at = |pod: &'a str| match ips.get(pod) {
        Some(ip) => Ok(server(pass, pod, ip)),
        None => Err(Error::RedisState {
            pod: pod.to_owned(),
            reason: "the pod has no IP".to_owned(),
        }),
    };
    match step {
        Step::Label { pod, role } => label(pass, pod, *role).await,
        Step::Promote { pod } => at(pod)?.promote().await,
        Step::Follow { pod, host } => at(pod)?.follow(host, pass.port).await,
        Step::Fence { pod } => at(pod)?.fence().await,
        Step::Switchover { from, to } => {
            let move_label = || async {
                label(pass, from, None).await?;
                label(pass, to, Some(Label::Primary)).await
            };
            redis_server::switchover(at(from)?, at(to)?, move_label).await
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
    let patched = pods
        .patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(Error::Kube)?;
    if let Some(pod_uid) = patched.metadata.uid {
        pass.state.labels.record(
            pass.uid,
            pod,
            written::Written {
                pod_uid,
                role: value.map(str::to_owned),
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::guard_to_set;

    #[test]
    fn an_unreadable_primary_is_not_written_to() {
        // Its node stopped: writing the guard would fail the pass, and the error policy's
        // backoff (1, 2, 4, 8 s) would push the failover far past failoverAfter.
        assert!(!guard_to_set(false, None, (1, 10)));
        assert!(!guard_to_set(false, Some((1, 10)), (1, 10)));
        assert!(guard_to_set(false, Some((0, 10)), (1, 10)));
        assert!(guard_to_set(true, None, (1, 10)));
    }
}
