//! The reconciler (DESIGN §3): a thin async shell. It reads the watch caches, runs each feature's
//! step in a fixed order ([`apply`]), carries out the pod plan, and writes the status only when
//! it changed; deletion goes through the finalizer to [`cleanup`]; errors requeue with backoff
//! ([`error_policy`]).
//!
//! The pass, as [`apply`] runs it. Every step reads one context (`step::Step`: client,
//! recorder, Redis, its cached pods, then the TLS client and the login once settled) and returns
//! an `step::Outcome`: whether it holds back pod creation, when the next pass must come, what it
//! says in the status. Adding a feature is its folder, plus its line here and in the folds.
//!
//! 1. children: Services, PodDisruptionBudget, NetworkPolicy (`children::step`, §3, §3j, §3n);
//!    a name held by another object is a Warning Event now, Ready False, and the error returned
//!    last (§3i.2): their failure must not hold back the pods. They are written at the same
//!    time as the pods (step 9): nothing else in the pass reads them.
//! 2. storage: the claims before the pods that mount them (`storage::step`, §3d).
//! 3. TLS: the Secret and the client every connection to the pods uses (`tls::prepare`, §3k).
//! 4. login: the ACL users or the password, set on the pods before anything else talks to them
//!    (`acl::access`, §3l, §3c); then the certificate reload (`tls::reload`).
//! 5. replication: the roles, after the login (a pod that refuses it would look dead), before
//!    the pod plan (a primary the plan removes hands over first) (`replication::step`, §3b).
//! 6. configuration: the live directives (`config::step`, §3m).
//! 7. restore: where a restored Redis's pods download from (`backup::restore::prepare`, §3o).
//! 8. plan the pods (`pods::plan`, §3), without the creates a step holds back.
//! 9. write the pods, creates in slow-start batches (1, 2, 4... at once, as a ReplicaSet does:
//!    a refused create stops the rest); a pass that changed any ends there, without a status
//!    write: the pods' events bring the next pass, which writes it.
//! 10. fold the status, written only when it changed (§3), then the first error of the pass,
//!     then the name conflicts (claims, children), for backoff.
//!
//! The order is also that of the errors: the first one of steps 2–5 is the one returned. The
//! next pass comes at the soonest of what the steps ask (`replication::POLL`,
//! `step::AUTH_RETRY`, the TLS reload's retry) or [`RESYNC`]; [`CACHE_LAG_RETRY`] when a create
//! found its name taken.
//!
//! - [`context`]: what every reconcile shares, the one place a Redis is forgotten, and the
//!   status write.
//! - [`undecodable`]: a stored Redis that does not decode (the watch is untyped,
//!   `k8s::redis_watch`), reported on its own so it does not stop the others.
//! - [`cleanup`]: deleting a Redis's pods before its finalizer is released.

pub mod cleanup;
pub mod context;
pub mod undecodable;

pub use context::Context;

use crate::Error;
use crate::acl::status::AuthFailure;
use crate::k8s::{self, conditions::now, redis_watch};
use crate::metrics::ReasonLabels;
use crate::pods::build::{hashed_pod_spec, pod_hash, pod_spec};
use crate::pods::plan::{self, DeleteReason, PodStep, PodView};
use crate::pods::status::{PodFailure, StatusInput, desired_status, with_failure};
use crate::pods::{self, Deletion, Done, PodWriter, Refused};
use crate::step::{self, Outcome, Step};
use crate::{RetryClass, acl, backoff, backup, children, config, replication, storage, tls};
use api::{FINALIZER, Redis};
use cleanup::cleanup;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action as Requeue;
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Nothing changes at rest, so a long resync only guards against missed watch events.
const RESYNC: Duration = Duration::from_secs(300);
/// A create that found the name taken (our cache was behind): look again shortly.
const CACHE_LAG_RETRY: Duration = Duration::from_secs(1);
const WAIT_FOR_PODS: Duration = Duration::from_secs(1);
/// Someone else wrote first (409): the watch has the newer object by now, or shortly.
const CONFLICT_RETRY: Duration = Duration::from_millis(200);

/// Entry point for kube-runtime's Controller. Redis objects are watched untyped and decoded here,
/// one by one (see `undecodable`): one that does not decode is reported, and the others carry on.
pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Requeue, Error> {
    let _timer = ctx.metrics.reconcile_started();
    let key = ObjectRef::from_obj_with(obj.as_ref(), redis_watch::resource());
    let result = match redis_watch::decode(&obj) {
        Ok(redis) => reconcile_redis(Arc::new(redis), &ctx).await,
        Err(reason) => undecodable::undecodable(&obj, &reason, &ctx).await,
    };
    if result.is_ok() {
        ctx.failures().remove(&key);
    }
    result
}

/// The finalizer helper splits apply from cleanup.
async fn reconcile_redis(redis: Arc<Redis>, ctx: &Context) -> Result<Requeue, Error> {
    let namespace = k8s::namespace(&redis.metadata)?;
    let api: Api<Redis> = Api::namespaced(ctx.client.clone(), namespace);
    let redis = with_finalizer(&api, redis).await?;
    finalizer(&api, FINALIZER, redis, |event| async {
        match event {
            Finalizer::Apply(redis) => apply(&redis, ctx).await,
            Finalizer::Cleanup(redis) => cleanup(&redis, ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// A new Redis with the finalizer added, so that its first pass also builds it. The finalizer
/// helper adds it and ends the pass there (its patch brings the next one): a whole turn of the
/// work queue per new Redis, which under load is most of the wait. Same patch as the helper's (a
/// test of the list as read, so a concurrent writer is not overwritten); the helper then finds it
/// and applies.
async fn with_finalizer(api: &Api<Redis>, redis: Arc<Redis>) -> Result<Arc<Redis>, Error> {
    let finalizers = redis.finalizers();
    if redis.metadata.deletion_timestamp.is_some() || finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(redis);
    }
    let name = redis.name_any();
    let (listed, add) = if finalizers.is_empty() {
        (
            serde_json::Value::Null,
            ("/metadata/finalizers", serde_json::json!([FINALIZER])),
        )
    } else {
        (
            serde_json::json!(finalizers),
            ("/metadata/finalizers/-", serde_json::json!(FINALIZER)),
        )
    };
    let patch = serde_json::json!([
        {"op": "test", "path": "/metadata/finalizers", "value": listed},
        {"op": "add", "path": add.0, "value": add.1},
    ]);
    let patch: json_patch::Patch = serde_json::from_value(patch).map_err(Error::EncodePatch)?;
    let added = api
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(|e| {
            Error::Finalizer(Box::new(kube::runtime::finalizer::Error::AddFinalizer(e)))
        })?;
    Ok(Arc::new(added))
}

/// Requeue policy: conflicts and waits retry soon; other errors back off exponentially per Redis.
pub fn error_policy(redis: Arc<DynamicObject>, error: &Error, ctx: Arc<Context>) -> Requeue {
    ctx.metrics
        .failures
        .get_or_create(&ReasonLabels {
            reason: error.metric_label(),
        })
        .inc();
    let class = error.retry_class();
    if class == RetryClass::Waiting {
        tracing::debug!(redis = %redis.name_any(), %error, "waiting");
        return Requeue::requeue(WAIT_FOR_PODS);
    }
    let attempt = {
        let mut failures = ctx.failures();
        let n = failures
            .entry(ObjectRef::from_obj_with(
                redis.as_ref(),
                redis_watch::resource(),
            ))
            .or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    if class == RetryClass::Conflict {
        tracing::debug!(redis = %redis.name_any(), %error, "conflict; retrying with fresh state");
        return Requeue::requeue(CONFLICT_RETRY);
    }
    let delay = backoff(attempt);
    tracing::warn!(redis = %redis.name_any(), %error, retry_in = ?delay, "reconcile failed");
    Requeue::requeue(delay)
}

/// One pass over a live Redis: the steps in the order of the module doc, then the pods, then
/// the status.
async fn apply(redis: &Redis, ctx: &Context) -> Result<Requeue, Error> {
    let (name, namespace) = k8s::name_and_namespace(&redis.metadata)?;
    // The namespace is being deleted, and this Redis with it: nothing to build or report.
    if let Some(left) = ctx.terminating().remaining(namespace, Instant::now()) {
        return Ok(Requeue::requeue(left));
    }
    if api::is_paused(&redis.metadata) {
        return paused(redis, ctx, namespace, name).await;
    }
    let owned = pods::owned_pods(&ctx.pods, redis);
    let step = Step::new(&ctx.client, &ctx.recorder, redis, &owned);
    let replicas = u32::try_from(redis.spec.replicas()).unwrap_or(0);
    // The directives set live (§3m) are in the pods' spec but not in its hash.
    let hash = pod_hash(&redis.spec, &hashed_pod_spec(name, &redis.spec));
    let mut pass = PassOutcome::default();

    // Not awaited here: the children go at the same time as the pod writes below (their outcome
    // holds nothing back and asks for no retry; it only folds into the status).
    let children = children::step(&step, &ctx.children, &ctx.operator);
    let claims = pass.keep_going(storage::step(&step, &ctx.children.claims, replicas).await);
    let mut certificate = pass.keep_going(tls::prepare(&step, &ctx.tls).await);
    let tls_client = certificate.as_ref().and_then(|c| c.client.clone());
    let step = step.with_tls(tls_client.as_ref());
    let access = acl::access(&step, &ctx.acl, &ctx.auth).await.map(Some);
    let access = pass.keep_going(access).unwrap_or_default();
    if let (Some(certificate), Some(login)) = (certificate.as_mut(), access.login()) {
        tls::reload(&ctx.tls, &ctx.recorder, redis, certificate, &owned, login).await;
    }
    let step = step.with_login(access.login());
    let replication = replication::step(&step, &ctx.replication, &ctx.auth, &hash).await;
    let replication = pass.keep_going(replication);
    let configured = config::step(&step, &ctx.config).await;
    let restore = backup::restore::prepare(&ctx.client, redis, namespace).await;
    let outcomes: [&dyn Outcome; 6] = [
        &claims,
        &certificate,
        &access,
        &replication,
        &configured,
        &restore,
    ];

    // The pods are planned after the roles, so a pod promoted in this pass is not deleted by it.
    let primary = replication
        .as_ref()
        .and_then(|r| r.decision.primary.as_deref());
    let (views, steps) = plan_pods(&step, &outcomes, replicas, &hash, primary);
    let next_pass = step::next_pass(&step, &outcomes, RESYNC);
    let written = write_pods(
        ctx,
        &step,
        (replicas, &hash),
        (&views, &steps),
        &restore,
        &mut pass,
    );
    let (children, written) = tokio::join!(children, written);
    if written.is_break() {
        // The namespace is being deleted, and this Redis with it: nothing to build.
        ctx.terminating().mark(namespace, Instant::now());
        return Ok(Requeue::await_change());
    }
    // The pods just changed, so a status computed from the pods seen before would be stale at
    // once; the watch events of those changes bring the next pass, which writes it.
    if pass.changed && pass.error.is_none() {
        return Ok(Requeue::requeue(next_pass));
    }

    // The order matters where two say why the Redis is not Ready: the later one is told.
    let folds: [&dyn Outcome; 9] = [
        &replication,
        &AuthFailure(&access),
        &certificate,
        &access,
        &configured,
        &claims,
        &children,
        &storage::status::Conflicts(&claims),
        &restore,
    ];
    let status = status_of(&step, &pass, (replicas, &hash), &views, &folds);
    let stored = redis.status.as_ref();
    if stored != Some(&status) {
        ctx.write_status(redis, namespace, name, &status).await?;
    }
    if let Some(e) = pass.error {
        return Err(e);
    }
    // Lost on the early return above; then the next pass, brought by the pods' events, applies
    // the children again and reports it.
    storage::status::finish(claims)?;
    children::finish(children)?;
    Ok(Requeue::requeue(pass.next_pass(next_pass)))
}

/// The pods seen, and the plan for them, without the creates a step holds back.
fn plan_pods(
    step: &Step<'_>,
    outcomes: &[&dyn Outcome],
    replicas: u32,
    hash: &str,
    primary: Option<&str>,
) -> (Vec<PodView>, Vec<PodStep>) {
    let name = step.redis.name_any();
    let views: Vec<PodView> = step
        .pods
        .iter()
        .map(|p| PodView::from_pod(&name, p))
        .collect();
    let views = plan::with_primary(views, primary);
    let steps = plan::plan(replicas, hash, &views)
        .into_iter()
        .filter(|pod| match pod {
            PodStep::Create { ordinal } => step::may_create(step, outcomes, *ordinal),
            _ => true,
        })
        .collect();
    (views, steps)
}

/// Carries out the pod plan (`steps`, with the Redis's `replicas` pods of spec `hash`), after an
/// Event for a scaling; a pod of a restored Redis downloads its data first (§3o).
async fn write_pods(
    ctx: &Context,
    step: &Step<'_>,
    (replicas, hash): (u32, &str),
    (views, steps): (&[PodView], &[PodStep]),
    restore: &backup::restore::Plan,
    pass: &mut PassOutcome,
) -> ControlFlow<()> {
    let redis = step.redis;
    let reference = redis.object_ref(&());
    let w = PodWriter {
        pods: Api::namespaced(ctx.client.clone(), &redis.namespace().unwrap_or_default()),
        recorder: &ctx.recorder,
        metrics: &ctx.metrics,
        reference: &reference,
    };
    pods::announce_scaling(&w, redis, replicas, views, steps).await;
    let spec = pod_spec(&redis.name_any(), &redis.spec);
    let init =
        |ordinal: u32| backup::restore::init_container(redis, restore, ordinal, &ctx.backup_image);
    write_steps(&w, redis, steps, &spec, hash, &init, pass).await
}

/// The status of this pass: what the pods amount to, the first refused pod write, then what
/// each step says, in the order of `folds`.
fn status_of(
    step: &Step<'_>,
    pass: &PassOutcome,
    (replicas, hash): (u32, &str),
    views: &[PodView],
    folds: &[&dyn Outcome],
) -> api::RedisStatus {
    let stored = step.redis.status.as_ref();
    let status = desired_status(StatusInput {
        redis_name: &step.redis.name_any(),
        generation: step.redis.metadata.generation,
        replicas,
        hash,
        pods: views,
        stored,
        now: now(),
    });
    let status = with_failure(status, pass.refused.as_ref());
    folds
        .iter()
        .fold(status, |s, o| o.fold(step, s, stored, now()))
}

/// Carries out the pod plan, in order, recording each write in `pass`; the pods created and
/// deleted are said in one Event each afterwards. `Break` when the namespace is terminating.
/// A run of creates goes in slow-start batches ([`slow_start`]); deletes go one at a time.
async fn write_steps(
    w: &PodWriter<'_>,
    redis: &Redis,
    steps: &[PodStep],
    spec: &k8s_openapi::api::core::v1::PodSpec,
    hash: &str,
    init: &(dyn Fn(u32) -> Option<k8s_openapi::api::core::v1::Container> + Sync),
    pass: &mut PassOutcome,
) -> ControlFlow<()> {
    let mut created = Vec::new();
    let mut deleted = Vec::new();
    let mut flow = ControlFlow::Continue(());
    let create = |ordinal: u32| async move {
        let done = pods::create_pod(w, redis, ordinal, spec, hash, init(ordinal)).await;
        (ordinal, done)
    };
    for batch in slow_start(steps) {
        if let [PodStep::Delete { name, uid, reason }] = batch {
            let why = reason.describe();
            let without_kubelet = *reason == DeleteReason::NodeLost;
            let done = pods::delete_pod(w, name, uid.as_deref(), why, without_kubelet).await;
            if let Ok(Deletion::Deleted) = done {
                deleted.push((why, name.clone()));
            }
            flow = pass.record(&batch[0], done.map(Deletion::done));
        } else if !pass.creates_refused {
            let ordinals = batch.iter().filter_map(|step| match step {
                PodStep::Create { ordinal } => Some(*ordinal),
                PodStep::Delete { .. } => None,
            });
            let results = futures::future::join_all(ordinals.map(create)).await;
            for ((ordinal, done), step) in results.into_iter().zip(batch) {
                if let Ok(Done::Yes) = done {
                    created.push(api::pods::pod_name(&redis.name_any(), ordinal));
                }
                if pass.record(step, done).is_break() {
                    flow = ControlFlow::Break(());
                }
            }
        }
        if flow.is_break() {
            return flow;
        }
    }
    pods::announce_creates(w, &created).await;
    pods::announce_deletes(w, &deleted).await;
    flow
}

/// The pod plan in the batches it is carried out in: each delete alone; each run of creates in
/// batches of 1, 2, 4... (a ReplicaSet's slow start: a first refused create, say by a quota,
/// costs one request, and a pass that makes many pods does not wait for each in turn).
fn slow_start(steps: &[PodStep]) -> Vec<&[PodStep]> {
    let mut batches = Vec::new();
    let mut rest = steps;
    let mut size = 1;
    while let Some(first) = rest.first() {
        let take = match first {
            PodStep::Delete { .. } => {
                size = 1;
                1
            }
            PodStep::Create { .. } => {
                let run = rest
                    .iter()
                    .take_while(|s| matches!(s, PodStep::Create { .. }))
                    .count();
                let take = size.min(run);
                size = if take == run { 1 } else { size * 2 };
                take
            }
        };
        let (batch, after) = rest.split_at(take);
        batches.push(batch);
        rest = after;
    }
    batches
}

/// A paused Redis: no pod, claim, child, role or password write; only the Ready condition says
/// `Paused` (one status write, when it did not already). Failover timing starts afresh on resume.
async fn paused(
    redis: &Redis,
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Requeue, Error> {
    ctx.replication
        .forget(redis.metadata.uid.as_deref().unwrap_or_default());
    let stored = redis.status.as_ref();
    let status =
        crate::pods::status::with_paused(stored.cloned().unwrap_or_default(), stored, now());
    if stored != Some(&status) {
        ctx.write_status(redis, namespace, name, &status).await?;
    }
    Ok(Requeue::await_change())
}

/// What one pass of [`apply`] came to so far: the pod writes it made, and the first error, which
/// is returned (for backoff) only after the status has said what went wrong.
#[derive(Debug, Default)]
struct PassOutcome {
    /// A pod was created or deleted.
    changed: bool,
    /// The API server knew a pod our cache had not seen yet: look again shortly.
    cache_behind: bool,
    /// A create was refused for a reason other than a taken name (say, a quota). The next ones
    /// would most likely be refused too: stop, as a ReplicaSet's slow start does, and retry with
    /// backoff.
    creates_refused: bool,
    /// The first refused pod write, for the Ready condition.
    refused: Option<PodFailure>,
    /// The first error of the pass.
    error: Option<Error>,
}

impl PassOutcome {
    /// When the next pass comes: as the steps ask, or shortly when the pod cache was behind.
    fn next_pass(&self, planned: Duration) -> Duration {
        if self.cache_behind {
            CACHE_LAG_RETRY.min(planned)
        } else {
            planned
        }
    }

    /// The value of a step that may fail without stopping the pass: its error is kept (the first
    /// one only), and the pass goes on without the value.
    fn keep_going<T>(&mut self, result: Result<Option<T>, Error>) -> Option<T> {
        result.unwrap_or_else(|e| {
            self.error.get_or_insert(e);
            None
        })
    }

    /// Adds what carrying out `step` did. `Break` when the namespace is terminating: the pass
    /// ends there.
    fn record(&mut self, step: &PodStep, done: Result<pods::Done, Refused>) -> ControlFlow<()> {
        match done {
            Ok(Done::Yes) => self.changed = true,
            Ok(Done::CacheBehind) => self.cache_behind = true,
            Ok(Done::NamespaceTerminating) => return ControlFlow::Break(()),
            Err(Refused { failure, error }) => {
                // A name held by someone else says nothing about the other ordinals.
                self.creates_refused |= matches!(step, PodStep::Create { .. })
                    && !matches!(error, Error::PodNameConflict(_));
                self.refused.get_or_insert(failure);
                self.error.get_or_insert(error);
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_keeps_the_first_refusal_and_stops_creating_after_a_refused_create() {
        let create = PodStep::Create { ordinal: 1 };
        let delete = PodStep::Delete {
            name: "r-2".into(),
            uid: None,
            reason: DeleteReason::ScaleDown,
        };
        let refused = |reason, message: &str, error| Refused::new(reason, message.into(), error);
        let mut pass = PassOutcome::default();
        assert!(pass.record(&delete, Ok(Done::Yes)).is_continue());
        assert!(pass.record(&delete, Ok(Done::CacheBehind)).is_continue());
        let conflict = Error::PodNameConflict("r-1".into());
        let _ = pass.record(&create, Err(refused("PodNameConflict", "held", conflict)));
        assert!(
            !pass.creates_refused,
            "a name held by someone else says nothing about the other ordinals"
        );
        let _ = pass.record(
            &delete,
            Err(refused("FailedDelete", "no", Error::IncompleteObject("x"))),
        );
        assert!(
            !pass.creates_refused,
            "a refused delete does not stop creates"
        );
        let _ = pass.record(
            &create,
            Err(refused(
                "FailedCreate",
                "quota",
                Error::IncompleteObject("x"),
            )),
        );
        assert!(pass.creates_refused);
        assert!(pass.changed && pass.cache_behind);
        assert_eq!(
            pass.refused.as_ref().map(|f| f.reason),
            Some("PodNameConflict")
        );
        assert!(matches!(pass.error, Some(Error::PodNameConflict(_))));
        assert!(
            pass.record(&create, Ok(Done::NamespaceTerminating))
                .is_break()
        );
    }

    #[test]
    fn creates_go_in_batches_of_one_two_four_and_deletes_alone() {
        let create = |ordinal| PodStep::Create { ordinal };
        let delete = |name: &str| PodStep::Delete {
            name: name.into(),
            uid: None,
            reason: DeleteReason::ScaleDown,
        };
        let sizes = |steps: &[PodStep]| {
            slow_start(steps)
                .iter()
                .map(|b| b.len())
                .collect::<Vec<_>>()
        };
        assert_eq!(sizes(&[]), Vec::<usize>::new());
        assert_eq!(sizes(&[create(0)]), [1]);
        assert_eq!(sizes(&(0..3).map(create).collect::<Vec<_>>()), [1, 2]);
        assert_eq!(
            sizes(&(0..10).map(create).collect::<Vec<_>>()),
            [1, 2, 4, 3]
        );
        let mixed = [
            delete("r-5"),
            create(1),
            create(2),
            delete("r-4"),
            create(3),
        ];
        assert_eq!(sizes(&mixed), [1, 1, 1, 1, 1]);
        let batches = slow_start(&mixed);
        assert_eq!(batches.concat(), mixed, "every step, in the plan's order");
    }

    #[test]
    fn a_pass_goes_on_without_a_failed_value_and_keeps_its_error() {
        let mut pass = PassOutcome::default();
        assert_eq!(pass.keep_going(Ok(Some(1))), Some(1));
        assert!(pass.error.is_none());
        assert_eq!(
            pass.keep_going::<u8>(Err(Error::IncompleteObject("first"))),
            None
        );
        assert_eq!(
            pass.keep_going::<u8>(Err(Error::IncompleteObject("second"))),
            None
        );
        assert!(matches!(pass.error, Some(Error::IncompleteObject("first"))));
        assert!(
            pass.refused.is_none(),
            "not a pod write: nothing for the status to say"
        );
    }
}
