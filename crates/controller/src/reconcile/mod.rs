//! The reconciler (DESIGN §3): a thin async shell. It reads the watch caches, runs each feature's
//! step in order ([`apply`]), carries out the pod plan, and writes the status only when it
//! changed; deletion goes through the finalizer to [`cleanup`]; errors requeue with backoff
//! ([`error_policy`]).
//!
//! - [`context`]: what every reconcile shares, and the status write.
//! - [`undecodable`]: a stored Redis that does not decode (the watch is untyped,
//!   `k8s::redis_watch`), reported on its own so it does not stop the others.
//! - [`cleanup`]: deleting a Redis's pods before its finalizer is released.

pub mod cleanup;
pub mod context;
pub mod undecodable;

pub use context::Context;

use crate::Error;
use crate::k8s::events::publish;
use crate::k8s::{self, conditions::now, redis_watch};
use crate::metrics::ReasonLabels;
use crate::pods::build::{hashed_pod_spec, pod_hash, pod_spec};
use crate::pods::plan::{self, DeleteReason, PodStep, PodView};
use crate::pods::status::{PodFailure, StatusInput, desired_status, with_failure};
use crate::pods::{self, Deletion, Done, PodWriter, Refused};
use crate::{RetryClass, acl, auth, backoff, backup, children, config, replication, storage, tls};
use api::{FINALIZER, Redis};
use cleanup::cleanup;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::Action as Requeue;
use kube::runtime::events::EventType;
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
/// A pod refuses the password: look again this often (a fixed Secret or pod also triggers).
const AUTH_RETRY: Duration = Duration::from_secs(10);

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
    finalizer(&api, FINALIZER, redis, |event| async {
        match event {
            Finalizer::Apply(redis) => apply(&redis, ctx).await,
            Finalizer::Cleanup(redis) => cleanup(&redis, ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
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

/// One pass over a live Redis: each feature's step in order, then the pods, then the status.
async fn apply(redis: &Redis, ctx: &Context) -> Result<Requeue, Error> {
    let (name, namespace) = k8s::name_and_namespace(&redis.metadata)?;
    // The namespace is being deleted, and this Redis with it: nothing to build or report.
    if let Some(left) = ctx.terminating().remaining(namespace, Instant::now()) {
        return Ok(Requeue::requeue(left));
    }
    if api::is_paused(&redis.metadata) {
        return paused(redis, ctx, namespace, name).await;
    }
    // The Services, the PodDisruptionBudget and the NetworkPolicy. Their failure must not hold back the pods, so it
    // is returned last.
    let owned = pods::owned_pods(&ctx.pods, redis);
    let children = children::apply(&ctx.client, &ctx.children, &ctx.operator, redis, &owned).await;
    if let Ok(applied) = &children {
        for conflict in &applied.conflicts {
            publish(
                &ctx.recorder,
                &redis.object_ref(&()),
                None,
                EventType::Warning,
                children::status::NAME_CONFLICT,
                "Apply",
                conflict.message(),
            )
            .await;
        }
    }
    let spec = pod_spec(name, &redis.spec);
    // The directives set live (§3m) are in the pods' spec but not in its hash.
    let hash = pod_hash(&redis.spec, &hashed_pod_spec(name, &redis.spec));
    let replicas = u32::try_from(redis.spec.replicas()).unwrap_or(0);
    let reference = redis.object_ref(&());
    let mut pass = PassOutcome::default();

    // The claims (`spec.storage`) before the pods that mount them; the password next (a rotation
    // is set on the pods before anything talks to them); then the roles: a primary whose pod the
    // plan is about to remove hands over before it goes.
    let claims = pass.keep_going(
        storage::apply(
            &ctx.client,
            &ctx.recorder,
            &ctx.children.claims,
            redis,
            replicas,
            &owned,
        )
        .await,
    );
    // TLS (§3k): the client every connection to the pods uses, from the Secret; without a good
    // Secret nothing can talk to the pods, and the steps that would wait.
    let mut certificate =
        pass.keep_going(tls::prepare(&ctx.tls, &ctx.client, &ctx.recorder, redis).await);
    let tls_client = certificate.as_ref().and_then(|c| c.client.clone());
    let tls_blocked = redis.spec.tls.is_some() && tls_client.is_none();
    // ACL users (§3l) in place of the password step: the controller then logs in as its own
    // user, and the default user's password is one of the users set live.
    let acl = match &redis.spec.acl {
        Some(_) if !tls_blocked => pass.keep_going(
            acl::apply(
                &ctx.acl,
                &ctx.auth,
                &ctx.client,
                &ctx.recorder,
                redis,
                &owned,
                tls_client.as_ref(),
            )
            .await
            .map(Some),
        ),
        _ => None,
    };
    let auth = if tls_blocked {
        None
    } else if redis.spec.acl.is_some() {
        acl.as_ref().map(acl::Settled::auth)
    } else {
        pass.keep_going(
            auth::apply(
                &ctx.auth,
                &ctx.client,
                &ctx.recorder,
                redis,
                &owned,
                tls_client.as_ref(),
            )
            .await,
        )
    };
    if let (Some(certificate), Some(settled)) = (certificate.as_mut(), &auth)
        && settled.failure.is_none()
    {
        tls::reload(
            &ctx.tls,
            &ctx.recorder,
            redis,
            certificate,
            &owned,
            settled.login(),
        )
        .await;
    }
    let replication = match &auth {
        // Without a password that works, a pod that refuses it would look dead: wait.
        Some(settled) if settled.failure.is_none() => pass.keep_going(
            replication::apply(
                &replication::Shell {
                    client: &ctx.client,
                    state: &ctx.replication,
                    recorder: &ctx.recorder,
                },
                redis,
                &owned,
                &hash,
                settled.login(),
                tls_client.as_ref(),
            )
            .await,
        ),
        _ => None,
    };
    // Redis's own configuration (§3m): the live directives on every running pod.
    let configured = match &auth {
        Some(settled) if settled.failure.is_none() => Some(
            config::apply(
                &ctx.config,
                &ctx.recorder,
                redis,
                &owned,
                settled.login(),
                tls_client.as_ref(),
            )
            .await,
        ),
        _ => None,
    };
    if replication.as_ref().is_some_and(|r| r.refuses_auth) {
        ctx.auth
            .recheck(redis.metadata.uid.as_deref().unwrap_or_default());
    }
    let auth_failure = auth.and_then(|a| a.failure);
    // A Redis restored from a backup (§3o): where its pods download it from, or why none can
    // be made.
    let restore = backup::restore::prepare(&ctx.client, redis, namespace).await;
    let restore_blocked = backup::restore::blocks_creates(&restore);
    // The pods are planned after the roles, so a pod promoted in this pass is not deleted by it.
    let views: Vec<PodView> = owned.iter().map(|p| PodView::from_pod(name, p)).collect();
    let views = plan::with_primary(
        views,
        replication
            .as_ref()
            .and_then(|r| r.decision.primary.as_deref()),
    );
    let steps = plan::plan(replicas, &hash, &views);
    // A pod whose claim name another object holds would mount that claim: not created. Nor is
    // any pod of a Redis with storage whose claims could not be looked after in this pass.
    let held_claims: Vec<u32> = claims
        .iter()
        .flat_map(|report| report.conflicts.iter().map(|c| c.ordinal))
        .collect();
    let claims_unknown = redis.spec.storage.is_some() && claims.is_none();
    // Nor any pod of a Redis with ACL users without the operator's own Secret (`<name>-acl`):
    // the pod would read its users from a Secret of that name someone else made.
    let acl_unknown = redis.spec.acl.is_some() && acl.as_ref().is_none_or(|a| a.password.is_none());
    let steps: Vec<PodStep> = steps
        .into_iter()
        .filter(|step| match step {
            PodStep::Create { ordinal } => {
                !claims_unknown
                    && !acl_unknown
                    && !restore_blocked
                    && !held_claims.contains(ordinal)
            }
            _ => true,
        })
        .collect();
    let next_pass = if replication.is_some() {
        replication::POLL
    } else if auth_failure.is_some()
        || tls_blocked
        || configured.as_ref().is_some_and(|c| !c.pending.is_empty())
        || acl.as_ref().is_some_and(|a| !a.pending.is_empty())
    {
        AUTH_RETRY
    } else {
        RESYNC
    };
    // A pod still to load a renewed certificate is looked at again soon.
    let next_pass = certificate
        .as_ref()
        .and_then(tls::Settled::retry)
        .map_or(next_pass, |retry| retry.min(next_pass));

    let w = PodWriter {
        pods: Api::namespaced(ctx.client.clone(), namespace),
        recorder: &ctx.recorder,
        metrics: &ctx.metrics,
        reference: &reference,
    };
    pods::announce_scaling(&w, redis, replicas, &views, &steps).await;
    let init =
        |ordinal: u32| backup::restore::init_container(redis, &restore, ordinal, &ctx.backup_image);
    if write_pods(&w, redis, &steps, &spec, &hash, &init, &mut pass)
        .await
        .is_break()
    {
        // The namespace is being deleted, and this Redis with it: nothing to build.
        ctx.terminating().mark(namespace, Instant::now());
        return Ok(Requeue::await_change());
    }
    // The pods just changed, so a status computed from the pods seen before would be stale at
    // once; the watch events of those changes bring the next pass, which writes it.
    if pass.changed && pass.error.is_none() {
        return Ok(Requeue::requeue(next_pass));
    }

    let stored = redis.status.as_ref();
    let status = desired_status(StatusInput {
        redis_name: name,
        generation: redis.metadata.generation,
        replicas,
        hash: &hash,
        pods: &views,
        stored,
        now: now(),
    });
    let status = with_failure(status, pass.refused.as_ref());
    let status = replication::status::with_replication(status, replication.as_ref(), stored, now());
    let status = auth::status::with_failure(status, auth_failure.as_deref(), stored, now());
    let status = tls::status::with_certificate(status, certificate.as_ref(), stored, now());
    let status = acl::status::with_users(status, acl.as_ref(), stored, now());
    let status = config::status::with_config(status, configured.as_ref(), stored, now());
    let status = storage::status::with_condition(status, claims.as_ref(), stored, now());
    let conflicts = children
        .as_ref()
        .map(|applied| applied.conflicts.as_slice())
        .unwrap_or_default();
    let status = children::status::with_conflicts(status, conflicts, stored, now());
    let status = storage::status::with_conflicts(status, claims.as_ref(), stored, now());
    let status = backup::restore::with_condition(status, redis, &restore, &owned, stored, now());
    if stored != Some(&status) {
        ctx.write_status(redis, namespace, name, &status).await?;
    }
    if let Some(e) = pass.error {
        return Err(e);
    }
    // Lost on the early return above; then the next pass, brought by the pods' events, applies
    // the children again and reports it.
    if let Some(conflict) = claims.into_iter().flat_map(|r| r.conflicts).next() {
        // Said in the status above; backing off, the claim may be renamed or deleted.
        return Err(Error::NameConflict {
            kind: "PersistentVolumeClaim".to_owned(),
            name: conflict.claim,
        });
    }
    if let Some(conflict) = children?.conflicts.into_iter().next() {
        // Said in the status above; backing off, the holder may be renamed or deleted.
        return Err(Error::NameConflict {
            kind: conflict.kind,
            name: conflict.name,
        });
    }
    Ok(if pass.cache_behind {
        Requeue::requeue(CACHE_LAG_RETRY.min(next_pass))
    } else {
        Requeue::requeue(next_pass)
    })
}

/// Carries out the pod plan, in order, recording each write in `pass`; the pods created and
/// deleted are said in one Event each afterwards. `Break` when the namespace is terminating.
async fn write_pods(
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
    for step in steps {
        let done = match step {
            PodStep::Create { .. } if pass.creates_refused => continue,
            PodStep::Create { ordinal } => {
                let done = pods::create_pod(w, redis, *ordinal, spec, hash, init(*ordinal)).await;
                if let Ok(Done::Yes) = done {
                    created.push(api::pods::pod_name(&redis.name_any(), *ordinal));
                }
                done
            }
            PodStep::Delete { name, uid, reason } => {
                let why = reason.describe();
                let without_kubelet = *reason == DeleteReason::NodeLost;
                let done = pods::delete_pod(w, name, uid.as_deref(), why, without_kubelet).await;
                if let Ok(Deletion::Deleted) = done {
                    deleted.push((why, name.clone()));
                }
                done.map(Deletion::done)
            }
        };
        flow = pass.record(step, done);
        if flow.is_break() {
            return flow;
        }
    }
    pods::announce_creates(w, &created).await;
    pods::announce_deletes(w, &deleted).await;
    flow
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
