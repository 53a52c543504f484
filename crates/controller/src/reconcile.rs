//! The reconciler: a thin async shell that reads the watch caches, asks `plan` what to do, does
//! it, records Events, and writes status only when it changed (DESIGN §3).

use crate::Error;
use crate::cached::CachedPod;
use crate::metrics::{Metrics, ReasonLabels};
use crate::plan::{self, DeleteReason, PodStep, PodView};
use crate::pod::{desired_pod, pod_spec, spec_hash};
use crate::replication;
use crate::status::{PodFailure, StatusInput, desired_status, with_failure};
use crate::terminating::TerminatingNamespaces;
use crate::watched;
use crate::{RetryClass, backoff};
use api::{FINALIZER, Redis};
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::controller::Action as Requeue;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Field manager of every write the controller makes (server-side apply and creates); not the
/// `app.kubernetes.io/managed-by` label value, which is `api::pods::MANAGED_BY`.
pub const FIELD_MANAGER: &str = "redis-operator";
/// Nothing changes at rest, so a long resync only guards against missed watch events.
const RESYNC: Duration = Duration::from_secs(300);
/// A create that found the name taken (our cache was behind): look again shortly.
const CACHE_LAG_RETRY: Duration = Duration::from_secs(1);
const WAIT_FOR_PODS: Duration = Duration::from_secs(1);
/// Someone else wrote first (409): the watch has the newer object by now, or shortly.
const CONFLICT_RETRY: Duration = Duration::from_millis(200);
/// A pod refuses the password: look again this often (a fixed Secret or pod also triggers).
const AUTH_RETRY: Duration = Duration::from_secs(10);

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
    /// Services and PodDisruptionBudgets labelled as ours (see `children`).
    children: crate::children::Stores,
    /// Replication mode: since when each primary has been unhealthy.
    replication: replication::State,
    /// The passwords of each Redis with auth (see `auth`).
    auth: crate::auth::State,
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
            children: crate::children::Stores::empty(),
            replication: replication::State::default(),
            auth: crate::auth::State::default(),
        }
    }

    /// The Secret metadata cache (`auth::watch`); without it, every password read is a GET.
    pub fn with_secrets(mut self, secrets: Store<crate::auth::SecretMeta>) -> Self {
        self.auth = crate::auth::State::with_secrets(secrets);
        self
    }

    /// The caches of the Services and PodDisruptionBudgets (`children::watch`); without them,
    /// every pass applies every child.
    pub fn with_children(mut self, stores: crate::children::Stores) -> Self {
        self.children = stores;
        self
    }

    fn terminating(&self) -> std::sync::MutexGuard<'_, TerminatingNamespaces> {
        self.terminating
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectRef<DynamicObject>, u32>> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Entry point for kube-runtime's Controller. Redis objects are watched untyped and decoded here,
/// one by one (see `watched`): one that does not decode is reported, and the others carry on.
pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Requeue, Error> {
    let _timer = ctx.metrics.reconcile_started();
    let key = ObjectRef::from_obj_with(obj.as_ref(), watched::resource());
    let result = match watched::decode(&obj) {
        Ok(redis) => reconcile_redis(Arc::new(redis), &ctx).await,
        Err(reason) => undecodable(&obj, &reason, &ctx).await,
    };
    if result.is_ok() {
        ctx.failures().remove(&key);
    }
    result
}

/// The finalizer helper splits apply from cleanup.
async fn reconcile_redis(redis: Arc<Redis>, ctx: &Context) -> Result<Requeue, Error> {
    let namespace = redis
        .namespace()
        .ok_or(Error::IncompleteObject("namespace"))?;
    let api: Api<Redis> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&api, FINALIZER, redis, |event| async {
        match event {
            Finalizer::Apply(redis) => apply(&redis, ctx).await,
            Finalizer::Cleanup(redis) => cleanup(&redis, ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// A stored Redis that does not decode: say so (log, Warning Event, `InvalidSpec` in the Ready
/// condition), and wait for the user to fix it. Being deleted, it is still cleaned up and
/// released, from its metadata alone.
async fn undecodable(obj: &DynamicObject, reason: &str, ctx: &Context) -> Result<Requeue, Error> {
    let namespace = obj
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::IncompleteObject("namespace"))?;
    let name = obj
        .metadata
        .name
        .as_deref()
        .ok_or(Error::IncompleteObject("name"))?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), namespace, &watched::resource());
    if obj.metadata.deletion_timestamp.is_some() {
        let Some(index) = obj.finalizers().iter().position(|f| f == FINALIZER) else {
            return Ok(Requeue::await_change());
        };
        cleanup(&watched::metadata_only(obj), ctx).await?;
        // As kube's finalizer helper does, without reading the object back as a Redis.
        let path = format!("/metadata/finalizers/{index}");
        let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
            {"op": "test", "path": path, "value": FINALIZER},
            {"op": "remove", "path": path},
        ]))
        .map_err(|_| Error::IncompleteObject("finalizer patch"))?;
        api.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
            .await
            .map_err(Error::Kube)?;
        return Ok(Requeue::await_change());
    }
    let message = format!("the stored Redis cannot be read: {reason}");
    tracing::warn!(redis = %name, %namespace, %message, "not reconciling this Redis");
    if watched::already_reported(obj, &message) {
        return Ok(Requeue::await_change());
    }
    let reference = ObjectReference {
        api_version: Some(Redis::api_version(&()).into_owned()),
        kind: Some(Redis::kind(&()).into_owned()),
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        uid: obj.metadata.uid.clone(),
        ..ObjectReference::default()
    };
    publish(
        ctx,
        &reference,
        None,
        EventType::Warning,
        watched::INVALID_SPEC,
        "Reconcile",
        message.clone(),
    )
    .await;
    let condition = k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: crate::status::READY.to_owned(),
        status: "False".to_owned(),
        reason: watched::INVALID_SPEC.to_owned(),
        message,
        observed_generation: obj.metadata.generation,
        last_transition_time: now(),
    };
    let patch = serde_json::json!({
        "apiVersion": Redis::api_version(&()),
        "kind": Redis::kind(&()),
        "status": {"conditions": [condition]},
    });
    // Best effort: the Event and the log already say it.
    match api
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
    {
        Ok(_) => {
            ctx.metrics.status_writes.inc();
        }
        Err(e) => {
            tracing::warn!(redis = %name, error = %e, "could not write the InvalidSpec condition")
        }
    }
    Ok(Requeue::await_change())
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
                watched::resource(),
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

/// The pods of `redis` as the watch cache has them: our labels, and `redis` as controller owner
/// (a pod left by an earlier Redis of the same name is not ours to count).
fn owned_pods(ctx: &Context, redis: &Redis) -> Vec<Arc<CachedPod>> {
    let (Some(name), Some(uid)) = (
        redis.metadata.name.as_deref(),
        redis.metadata.uid.as_deref(),
    ) else {
        return Vec::new();
    };
    let namespace = redis.metadata.namespace.as_deref();
    ctx.pods.state_filter(|pod| {
        pod.metadata.namespace.as_deref() == namespace
            && pod.instance.as_deref() == Some(name)
            && pod
                .owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && o.uid == uid)
    })
}

async fn apply(redis: &Redis, ctx: &Context) -> Result<Requeue, Error> {
    let name = redis
        .metadata
        .name
        .as_deref()
        .ok_or(Error::IncompleteObject("name"))?;
    let namespace = redis
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::IncompleteObject("namespace"))?;
    // The namespace is being deleted, and this Redis with it: nothing to build or report.
    if let Some(left) = ctx.terminating().remaining(namespace, Instant::now()) {
        return Ok(Requeue::requeue(left));
    }
    if api::is_paused(&redis.metadata) {
        return paused(redis, ctx, namespace, name).await;
    }
    // The Services and the PodDisruptionBudget (`children`). Their failure must not hold back
    // the pods, so it is returned last.
    let children = crate::children::apply(&ctx.client, &ctx.children, redis).await;
    let spec = pod_spec(&redis.spec);
    let hash = spec_hash(&spec);
    let replicas = u32::try_from(redis.spec.replicas()).unwrap_or(0);
    let owned = owned_pods(ctx, redis);
    let views: Vec<PodView> = owned.iter().map(|p| PodView::from_pod(name, p)).collect();
    let steps = plan::plan(replicas, &hash, &views);

    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let reference = redis.object_ref(&());
    let mut pass = PassOutcome::default();
    // The password first (a rotation is set on the pods before anything talks to them), then
    // the roles: a primary whose pod the plan is about to remove hands over before it goes.
    // The claims (`spec.storage`) before the pods that mount them.
    let claims = pass.keep_going(
        crate::storage::apply(&ctx.client, &ctx.children.claims, redis, replicas, &owned).await,
    );
    if let Some(report) = claims.as_ref().filter(|r| !r.written.is_empty()) {
        publish(
            ctx,
            &reference,
            None,
            EventType::Normal,
            "ClaimsChanged",
            "Provision",
            format!("Claims: {}", report.written.join(", ")),
        )
        .await;
    }
    let auth = pass.keep_going(settle_auth(redis, ctx, &reference, &owned).await);
    let replication = match &auth {
        // Without a password that works, a pod that refuses it would look dead: wait.
        Some(settled) if settled.failure.is_none() => pass.keep_going(
            replicate(
                redis,
                ctx,
                &reference,
                &owned,
                &hash,
                replicas,
                settled.password.as_deref(),
            )
            .await,
        ),
        _ => None,
    };
    let auth_failure = auth.and_then(|a| a.failure);
    let next_pass = if replication.is_some() {
        replication::POLL
    } else if auth_failure.is_some() {
        AUTH_RETRY
    } else {
        RESYNC
    };
    announce_scaling(redis, ctx, &reference, replicas, &views, &steps).await;
    // The pods this pass created and deleted: said in one Event each after the loop
    // (`announce_creates`, `announce_deletes`).
    let mut created = Vec::new();
    let mut deleted = Vec::new();
    for step in &steps {
        let done = match step {
            PodStep::Create { .. } if pass.creates_refused => continue,
            PodStep::Create { ordinal } => {
                let done = create_pod(redis, ctx, &pods, &reference, *ordinal, &spec, &hash).await;
                if let Ok(Done::Yes) = done {
                    created.push(api::pods::pod_name(name, *ordinal));
                }
                done
            }
            PodStep::Delete { name, uid, reason } => {
                let why = reason.describe();
                let done = delete_pod(ctx, &pods, &reference, name, uid.as_deref(), why).await;
                if let Ok(Deletion::Deleted) = done {
                    deleted.push((why, name.clone()));
                }
                done.map(Deletion::done)
            }
        };
        if pass.record(step, done).is_break() {
            // The namespace is being deleted, and this Redis with it: nothing to build.
            ctx.terminating().mark(namespace, Instant::now());
            return Ok(Requeue::await_change());
        }
    }
    announce_creates(ctx, &pods, &reference, &created).await;
    announce_deletes(ctx, &pods, &reference, &deleted).await;
    // The pods just changed, so a status computed from the pods seen before would be stale at
    // once; the watch events of those changes bring the next pass, which writes it.
    if pass.changed && pass.error.is_none() {
        return Ok(Requeue::requeue(next_pass));
    }

    let stored = redis.status.as_ref();
    let status = with_failure(
        desired_status(StatusInput {
            redis_name: name,
            generation: redis.metadata.generation,
            replicas,
            hash: &hash,
            pods: &views,
            stored,
            now: now(),
        }),
        pass.refused.as_ref(),
    );
    let status = crate::status::with_replication(status, replication.as_ref(), stored, now());
    let status = crate::auth::with_failure(status, auth_failure.as_deref(), stored, now());
    let status = crate::storage::with_condition(status, claims.as_ref(), stored, now());
    if stored != Some(&status) {
        write_status(redis, ctx, namespace, name, &status).await?;
    }
    if let Some(e) = pass.error {
        return Err(e);
    }
    // Lost on the early return above; then the next pass, brought by the pods' events, applies
    // the children again and reports it.
    children?;
    Ok(if pass.cache_behind {
        Requeue::requeue(CACHE_LAG_RETRY.min(next_pass))
    } else {
        Requeue::requeue(next_pass)
    })
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
    let status = crate::status::with_paused(stored.cloned().unwrap_or_default(), stored, now());
    if stored != Some(&status) {
        write_status(redis, ctx, namespace, name, &status).await?;
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
    fn record(&mut self, step: &PodStep, done: Result<Done, Refused>) -> ControlFlow<()> {
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

/// The password of this pass, a rotation set on the pods, and Events for both (a refusal only
/// when it is new).
async fn settle_auth(
    redis: &Redis,
    ctx: &Context,
    reference: &ObjectReference,
    owned: &[Arc<CachedPod>],
) -> Result<Option<crate::auth::Settled>, Error> {
    let settled = crate::auth::settle(&ctx.auth, &ctx.client, redis, owned).await?;
    if !settled.rotated.is_empty() {
        let note = format!(
            "Set the Secret's new password on pod(s) {}",
            settled.rotated.join(", ")
        );
        tracing::info!(redis = %redis.name_any(), %note, "password rotated");
        publish(
            ctx,
            reference,
            None,
            EventType::Normal,
            crate::auth::PASSWORD_ROTATED,
            "Rotate",
            note,
        )
        .await;
    }
    if settled.report
        && let Some(note) = &settled.failure
    {
        tracing::warn!(redis = %redis.name_any(), %note, "auth failed");
        publish(
            ctx,
            reference,
            None,
            EventType::Warning,
            crate::auth::AUTH_FAILED,
            "Authenticate",
            note.clone(),
        )
        .await;
    }
    Ok(Some(settled))
}

/// Replication mode: observe the redis-servers, run the role steps, record what was promoted.
/// `None` in Standalone mode.
async fn replicate(
    redis: &Redis,
    ctx: &Context,
    reference: &ObjectReference,
    owned: &[Arc<CachedPod>],
    hash: &str,
    replicas: u32,
    password: Option<&str>,
) -> Result<Option<replication::Outcome>, Error> {
    let uid = redis.metadata.uid.as_deref().unwrap_or_default();
    if redis.spec.mode() != api::Mode::Replication {
        ctx.replication.forget(uid);
        return Ok(None);
    }
    let namespace = redis
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::IncompleteObject("namespace"))?;
    let pass = replication::Pass {
        client: &ctx.client,
        state: &ctx.replication,
        namespace,
        uid,
        hash,
        replicas,
        port: u16::try_from(redis.spec.port()).unwrap_or_default(),
        password,
        replication: redis.spec.replication(),
    };
    let outcome = replication::reconcile(&pass, owned).await?;
    if let Some((reason, note)) = &outcome.decision.event {
        tracing::info!(redis = %redis.name_any(), reason, note, "replication");
        publish(
            ctx,
            reference,
            None,
            EventType::Normal,
            reason,
            "Promote",
            note.clone(),
        )
        .await;
    }
    // Every re-pointing is said too (none at rest: a replica already following is left alone).
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    for step in &outcome.decision.steps {
        if let replication::plan::Step::Follow { pod, host } = step {
            let primary = outcome.decision.primary.as_deref().unwrap_or("?");
            publish(
                ctx,
                reference,
                Some(pod_ref(&pods, pod)),
                EventType::Normal,
                "ReplicaRepointed",
                "Repoint",
                format!("{pod} now replicates {primary} ({host})"),
            )
            .await;
        }
    }
    Ok(Some(outcome))
}

/// Deletion of the Redis: delete its pods, and release the Redis once every one of them is going
/// (has a deletionTimestamp). A pod stuck Terminating (say, on a lost node) must not hold the
/// Redis forever: its owner reference lets the garbage collector finish the job.
async fn cleanup(redis: &Redis, ctx: &Context) -> Result<Requeue, Error> {
    let namespace = redis
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::IncompleteObject("namespace"))?;
    ctx.replication
        .forget(redis.metadata.uid.as_deref().unwrap_or_default());
    ctx.auth
        .forget(redis.metadata.uid.as_deref().unwrap_or_default());
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let reference = redis.object_ref(&());
    let mut unsure = 0;
    let mut deleted = Vec::new();
    for pod in owned_pods(ctx, redis)
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let (name, uid) = (pod.name_any(), pod.metadata.uid.as_deref());
        let why = "the Redis is being deleted";
        match delete_pod(ctx, &pods, &reference, &name, uid, why).await {
            Ok(Deletion::Deleted) => deleted.push((why, name)),
            // Gone means going; anything else is looked at again on the next pass.
            Ok(Deletion::Gone) => {}
            Ok(Deletion::Replaced) => unsure += 1,
            Err(refused) => {
                announce_deletes(ctx, &pods, &reference, &deleted).await;
                return Err(refused.into());
            }
        }
    }
    announce_deletes(ctx, &pods, &reference, &deleted).await;
    if unsure == 0 {
        Ok(Requeue::await_change())
    } else {
        Err(Error::PodsRemaining(unsure))
    }
}

/// A pod write that failed: what the status says about it, and the error to back off on.
#[derive(Debug)]
struct Refused {
    failure: PodFailure,
    error: Error,
}

impl Refused {
    fn new(reason: &'static str, message: String, error: Error) -> Self {
        Refused {
            failure: PodFailure { reason, message },
            error,
        }
    }
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Self {
        refused.error
    }
}

/// A pod write refused in this pass, said in a Warning Event about the pod (with the reason and
/// message the status will show) and returned for the status and the backoff.
async fn refuse(
    ctx: &Context,
    pods: &Api<Pod>,
    reference: &ObjectReference,
    pod_name: &str,
    action: &str,
    failure: PodFailure,
    error: Error,
) -> Refused {
    publish(
        ctx,
        reference,
        Some(pod_ref(pods, pod_name)),
        EventType::Warning,
        failure.reason,
        action,
        failure.message.clone(),
    )
    .await;
    Refused { failure, error }
}

/// What the API server said, without the debug dump kube's error adds around it.
fn refusal(doing: &str, pod_name: &str, e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("Error {doing} pod {pod_name}: {}", status.message),
        e => format!("Error {doing} pod {pod_name}: {e}"),
    }
}

#[derive(Debug)]
enum Done {
    Yes,
    /// The namespace is terminating: the API refuses new content, and will delete the Redis.
    NamespaceTerminating,
    /// The API said the pod is already ours (create), or newer than planned (delete): our cache
    /// had not seen it yet.
    CacheBehind,
}

async fn create_pod(
    redis: &Redis,
    ctx: &Context,
    pods: &Api<Pod>,
    reference: &ObjectReference,
    ordinal: u32,
    spec: &PodSpec,
    hash: &str,
) -> Result<Done, Refused> {
    let Some(pod) = desired_pod(redis, ordinal, spec, hash) else {
        let error = Error::IncompleteObject("name or uid");
        return Err(Refused::new("FailedCreate", error.to_string(), error));
    };
    let pod_name = pod.name_any();
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    match pods.create(&params, &pod).await {
        // The Event comes once for all the pods of the pass (`announce_creates`).
        Ok(_) => {
            ctx.metrics.pods_created.inc();
            tracing::info!(pod = %pod_name, "created pod");
            Ok(Done::Yes)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            name_taken(redis, ctx, pods, reference, &pod_name).await
        }
        // kube's error type drops the status details (cause NamespaceTerminating): match the
        // API server's fixed wording instead.
        Err(kube::Error::Api(status))
            if status.code == 403 && status.message.contains("because it is being terminated") =>
        {
            tracing::debug!(pod = %pod_name, "namespace is terminating; not creating pods");
            Ok(Done::NamespaceTerminating)
        }
        Err(e) => {
            let failure = PodFailure {
                reason: "FailedCreate",
                message: refusal("creating", &pod_name, &e),
            };
            Err(refuse(
                ctx,
                pods,
                reference,
                &pod_name,
                "Create",
                failure,
                Error::Kube(e),
            )
            .await)
        }
    }
}

/// A create found the name taken. Usually our cache had not seen our own pod yet; but the pod may
/// belong to someone else (`kubectl run cache-0`), and then retrying every second would never
/// end: say so (Warning Event, `PodNameConflict` in the Ready condition) and back off.
async fn name_taken(
    redis: &Redis,
    ctx: &Context,
    pods: &Api<Pod>,
    reference: &ObjectReference,
    pod_name: &str,
) -> Result<Done, Refused> {
    // A list by name, not a get: the controller's RBAC has list and watch on pods, not get.
    let by_name = ListParams::default().fields(&format!("metadata.name={pod_name}"));
    let holder = match pods.list(&by_name).await {
        Ok(list) => list.items.into_iter().next(),
        Err(e) => {
            let note = refusal("reading", pod_name, &e);
            return Err(Refused::new("FailedCreate", note, Error::Kube(e)));
        }
    };
    let uid = redis.metadata.uid.as_deref().unwrap_or_default();
    match holder {
        // Ours, or gone by now: the cache was behind.
        None => Ok(Done::CacheBehind),
        Some(pod) if controlled_by(&pod, uid) => Ok(Done::CacheBehind),
        Some(pod) => {
            let failure = PodFailure {
                reason: "PodNameConflict",
                message: conflict_note(pod_name, &pod),
            };
            let error = Error::PodNameConflict(pod_name.to_owned());
            Err(refuse(ctx, pods, reference, pod_name, "Create", failure, error).await)
        }
    }
}

/// Whether the Redis of `uid` is the pod's controller.
fn controlled_by(pod: &Pod, uid: &str) -> bool {
    pod.owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// What the user is told about a pod holding a name this Redis needs.
fn conflict_note(pod_name: &str, pod: &Pod) -> String {
    let owner = pod
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .map_or_else(
            || "no controller".to_owned(),
            |o| format!("controller {} {} (uid {})", o.kind, o.name, o.uid),
        );
    format!(
        "Pod {pod_name} already exists and is not controlled by this Redis ({owner}); \
         delete or rename it so the Redis can create its pod"
    )
}

/// What became of a pod `delete_pod` was asked to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deletion {
    /// Deleted now (said in the pass's `announce_deletes` Event).
    Deleted,
    /// Already gone: what we wanted.
    Gone,
    /// The name now holds a newer pod than the one planned from (the uid precondition failed).
    Replaced,
}

impl Deletion {
    fn done(self) -> Done {
        match self {
            Deletion::Deleted | Deletion::Gone => Done::Yes,
            Deletion::Replaced => Done::CacheBehind,
        }
    }
}

async fn delete_pod(
    ctx: &Context,
    pods: &Api<Pod>,
    reference: &ObjectReference,
    pod_name: &str,
    uid: Option<&str>,
    why: &str,
) -> Result<Deletion, Refused> {
    // Only the pod the plan was made from: a leader acting on a stale view (or a lease that ran
    // out) never deletes a newer pod of the same name.
    let params = DeleteParams {
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match pods.delete(pod_name, &params).await {
        Ok(_) => {
            ctx.metrics.pods_deleted.inc();
            tracing::info!(pod = %pod_name, why, "deleted pod");
            Ok(Deletion::Deleted)
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Deletion::Gone),
        // Re-plan from the cache.
        Err(kube::Error::Api(status)) if status.code == 409 => {
            tracing::debug!(pod = %pod_name, "pod replaced since planned; not deleting it");
            Ok(Deletion::Replaced)
        }
        Err(e) => {
            let failure = PodFailure {
                reason: "FailedDelete",
                message: refusal("deleting", pod_name, &e),
            };
            Err(refuse(
                ctx,
                pods,
                reference,
                pod_name,
                "Delete",
                failure,
                Error::Kube(e),
            )
            .await)
        }
    }
}

/// One `SuccessfulCreate` Event for all the pods a pass created, naming them, rather than one per
/// pod (a new Redis of 3 pods: 1 Event write, not 3). A single pod keeps the pod as the related
/// object, so a pod re-created again and again (deleted by hand) folds into one Event series;
/// several have none (the Event is about the Redis). The recorder folds an Event into the series
/// of an earlier one only when the Redis (resourceVersion included) and the related pod are the
/// same, so a later batch with other pods gets an Event, and a note, of its own. Failed creates
/// keep their Warning Event per pod (`refuse`).
async fn announce_creates(
    ctx: &Context,
    pods: &Api<Pod>,
    reference: &ObjectReference,
    created: &[String],
) {
    let names: Vec<&str> = created.iter().map(String::as_str).collect();
    let note = format!("Created {}", pods_phrase(&names));
    announce_pods(
        ctx,
        pods,
        reference,
        &names,
        "SuccessfulCreate",
        "Create",
        note,
    )
    .await;
}

/// As `announce_creates`, for the pods a pass deleted: one `SuccessfulDelete` Event naming
/// them, by reason (deleting a Redis of 3 pods: 1 Event write, not 3). One Event, not one per
/// reason: the recorder would fold a second one (same Redis, no related pod) into the first's
/// series, note and all. `deleted` holds (why, pod name) in the order deleted.
async fn announce_deletes(
    ctx: &Context,
    pods: &Api<Pod>,
    reference: &ObjectReference,
    deleted: &[(&'static str, String)],
) {
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for (why, name) in deleted {
        match by_reason.iter_mut().find(|(w, _)| w == why) {
            Some((_, names)) => names.push(name),
            None => by_reason.push((why, vec![name])),
        }
    }
    let parts: Vec<String> = by_reason
        .iter()
        .map(|(why, names)| format!("{}: {why}", pods_phrase(names)))
        .collect();
    let note = format!("Deleted {}", parts.join("; "));
    let names: Vec<&str> = deleted.iter().map(|(_, name)| name.as_str()).collect();
    announce_pods(
        ctx,
        pods,
        reference,
        &names,
        "SuccessfulDelete",
        "Delete",
        note,
    )
    .await;
}

/// A Normal Event about the pods `names` (none: no Event). A single pod is the Event's related
/// object, so repeats about it fold into one series; several have none, the Event is about the
/// Redis.
async fn announce_pods(
    ctx: &Context,
    pods: &Api<Pod>,
    reference: &ObjectReference,
    names: &[&str],
    reason: &str,
    action: &str,
    note: String,
) {
    let related = match names {
        [] => return,
        [one] => Some(pod_ref(pods, one)),
        _ => None,
    };
    publish(
        ctx,
        reference,
        related,
        EventType::Normal,
        reason,
        action,
        note,
    )
    .await;
}

/// The pods as a note names them: `pod a` or `pods a, b`.
fn pods_phrase(names: &[&str]) -> String {
    match names {
        [one] => format!("pod {one}"),
        several => format!("pods {}", several.join(", ")),
    }
}

/// One Event when a spec change makes the pod count move (as Deployments' ScalingReplicaSet).
async fn announce_scaling(
    redis: &Redis,
    ctx: &Context,
    reference: &ObjectReference,
    replicas: u32,
    views: &[PodView],
    steps: &[PodStep],
) {
    // A new Redis (never observed) is not scaling: its SuccessfulCreate Event says enough.
    let Some(observed) = redis.status.as_ref().and_then(|s| s.observed_generation) else {
        return;
    };
    let spec_changed = Some(observed) != redis.metadata.generation;
    let existing = views
        .iter()
        .filter(|p| !p.terminating && p.ordinal.is_some())
        .count();
    let scaling_down = steps.iter().any(|a| {
        matches!(
            a,
            PodStep::Delete {
                reason: DeleteReason::ScaleDown,
                ..
            }
        )
    });
    let scaling_up =
        existing < replicas as usize && steps.iter().any(|a| matches!(a, PodStep::Create { .. }));
    if !(spec_changed && (scaling_up || scaling_down)) {
        return;
    }
    let (reason, verb) = if scaling_down {
        ("ScalingDown", "down")
    } else {
        ("ScalingUp", "up")
    };
    let note = format!("Scaling {verb} from {existing} to {replicas} pods");
    publish(
        ctx,
        reference,
        None,
        EventType::Normal,
        reason,
        "Scale",
        note,
    )
    .await;
}

async fn write_status(
    redis: &Redis,
    ctx: &Context,
    namespace: &str,
    name: &str,
    status: &api::RedisStatus,
) -> Result<(), Error> {
    let api: Api<Redis> = Api::namespaced(ctx.client.clone(), namespace);
    let patch = serde_json::json!({
        "apiVersion": Redis::api_version(&()),
        "kind": Redis::kind(&()),
        "status": status,
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch_status(name, &params, &Patch::Apply(&patch))
        .await
        .map_err(Error::Kube)?;
    ctx.metrics.status_writes.inc();
    tracing::debug!(redis = %name, uid = ?redis.metadata.uid, "status written");
    Ok(())
}

/// Records an Event on the Redis; `pod` is its related object, which also keeps Events about
/// different pods apart (the recorder folds Events with the same key into one series).
async fn publish(
    ctx: &Context,
    reference: &ObjectReference,
    pod: Option<ObjectReference>,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: action.to_owned(),
        secondary: pod,
    };
    // An Event that cannot be written must not fail the reconcile that did the work.
    if let Err(e) = ctx.recorder.publish(&event, reference).await {
        tracing::warn!(error = %e, reason, "could not record an Event");
    }
}

fn pod_ref(pods: &Api<Pod>, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        name: Some(name.to_owned()),
        namespace: pods.namespace().map(str::to_owned),
        ..ObjectReference::default()
    }
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_owned_by(controller_uid: Option<&str>) -> Pod {
        let owners: Vec<_> = controller_uid
            .map(|uid| {
                serde_json::json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
                                   "uid": uid, "controller": true})
            })
            .into_iter()
            .collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "cache-0", "ownerReferences": owners}
        }))
        .expect("pod")
    }

    #[test]
    fn a_pod_is_ours_only_when_we_are_its_controller() {
        assert!(controlled_by(&pod_owned_by(Some("r-uid")), "r-uid"));
        assert!(!controlled_by(&pod_owned_by(Some("other")), "r-uid"));
        assert!(!controlled_by(&pod_owned_by(None), "r-uid"), "kubectl run");
        assert!(!controlled_by(&pod_owned_by(None), ""));
    }

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

    use crate::fixtures::{self, Exchange, status};
    use http::Method;
    use kube::runtime::events::Reporter;
    use serde_json::{Value, json};

    const PODS: &str = "/api/v1/namespaces/ns/pods";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

    fn redis() -> Redis {
        serde_json::from_value(json!({
            "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
            "metadata": {"name": "cache", "namespace": "ns", "uid": "r-uid"},
            "spec": {"replicas": 1},
        }))
        .expect("redis")
    }

    fn context(client: Client) -> Context {
        let (pods, _writer) = kube::runtime::reflector::store::<CachedPod>();
        let reporter = Reporter {
            controller: FIELD_MANAGER.to_owned(),
            instance: None,
        };
        let recorder = Recorder::new(client.clone(), reporter);
        Context::new(client, pods, recorder, Arc::new(Metrics::default()))
    }

    /// `create_pod` of `cache-0` against a fake API server playing `script`: what it returned,
    /// and the bodies of the requests it made.
    async fn create_against(script: Vec<Exchange>) -> (Result<Done, Refused>, Vec<Value>) {
        let (client, server) = fixtures::client();
        let served = server.serve(script);
        let ctx = context(client);
        let redis = redis();
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), "ns");
        let spec = pod_spec(&redis.spec);
        let hash = spec_hash(&spec);
        let reference = redis.object_ref(&());
        let done = create_pod(&redis, &ctx, &pods, &reference, 0, &spec, &hash).await;
        drop((ctx, pods));
        (done, served.verify().await)
    }

    /// `delete_pod` of `cache-0` (uid `p-uid`) against a fake API server playing `script`.
    async fn delete_against(script: Vec<Exchange>) -> (Result<Deletion, Refused>, Vec<Value>) {
        let (client, server) = fixtures::client();
        let served = server.serve(script);
        let ctx = context(client);
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), "ns");
        let reference = redis().object_ref(&());
        let done = delete_pod(
            &ctx,
            &pods,
            &reference,
            "cache-0",
            Some("p-uid"),
            "scale down",
        )
        .await;
        drop((ctx, pods));
        (done, served.verify().await)
    }

    fn create() -> Exchange {
        Exchange::expect(Method::POST, PODS).with_query("fieldManager=redis-operator")
    }

    fn list_by_name() -> Exchange {
        Exchange::expect(Method::GET, PODS).with_query("fieldSelector=metadata.name%3Dcache-0")
    }

    fn delete() -> Exchange {
        Exchange::expect(Method::DELETE, &format!("{PODS}/cache-0"))
    }

    fn event() -> Exchange {
        Exchange::expect(Method::POST, EVENTS).echo(201)
    }

    fn pod_list(pods: Vec<Pod>) -> Value {
        json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": pods})
    }

    fn already_exists() -> Value {
        status(409, "AlreadyExists", "pods \"cache-0\" already exists")
    }

    /// The Warning Event in `body`: (reason, action, note).
    fn warning(body: &Value) -> (&str, &str, &str) {
        assert_eq!(body["type"], "Warning", "{body}");
        assert_eq!(body["related"]["name"], "cache-0", "{body}");
        (
            body["reason"].as_str().unwrap_or_default(),
            body["action"].as_str().unwrap_or_default(),
            body["note"].as_str().unwrap_or_default(),
        )
    }

    /// The Event bodies `announce_creates` writes for `created`.
    async fn announced(created: &[&str]) -> Vec<Value> {
        let script = if created.is_empty() {
            Vec::new()
        } else {
            vec![event()]
        };
        let (client, server) = fixtures::client();
        let served = server.serve(script);
        let ctx = context(client);
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), "ns");
        let reference = redis().object_ref(&());
        let created: Vec<String> = created.iter().map(|n| (*n).to_owned()).collect();
        announce_creates(&ctx, &pods, &reference, &created).await;
        drop((ctx, pods));
        served.verify().await
    }

    #[tokio::test]
    async fn the_pods_a_pass_creates_are_announced_in_one_event_naming_them() {
        let bodies = announced(&["cache-0", "cache-1", "cache-2"]).await;
        assert_eq!(bodies.len(), 1, "{bodies:?}");
        let body = &bodies[0];
        assert_eq!(body["type"], "Normal", "{body}");
        assert_eq!(body["reason"], "SuccessfulCreate", "{body}");
        assert_eq!(body["action"], "Create", "{body}");
        assert_eq!(body["note"], "Created pods cache-0, cache-1, cache-2");
        assert_eq!(body["regarding"]["name"], "cache", "{body}");
        assert!(body["related"].is_null(), "{body}");

        let bodies = announced(&["cache-1"]).await;
        assert_eq!(bodies.len(), 1, "{bodies:?}");
        assert_eq!(bodies[0]["note"], "Created pod cache-1");
        assert_eq!(bodies[0]["related"]["name"], "cache-1");

        assert!(announced(&[]).await.is_empty(), "no pod, no Event");
    }

    /// The Event bodies `announce_deletes` writes for `deleted` (why, pod), expecting `events`.
    async fn announced_deletes(deleted: &[(&'static str, &str)], events: usize) -> Vec<Value> {
        let (client, server) = fixtures::client();
        let served = server.serve((0..events).map(|_| event()).collect());
        let ctx = context(client);
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), "ns");
        let reference = redis().object_ref(&());
        let deleted: Vec<(&'static str, String)> = deleted
            .iter()
            .map(|(why, name)| (*why, (*name).to_owned()))
            .collect();
        announce_deletes(&ctx, &pods, &reference, &deleted).await;
        drop((ctx, pods));
        served.verify().await
    }

    #[tokio::test]
    async fn the_pods_a_pass_deletes_are_announced_in_one_event_naming_them_by_reason() {
        let gone = "the Redis is being deleted";
        let deleted = [(gone, "cache-0"), (gone, "cache-1"), (gone, "cache-2")];
        let bodies = announced_deletes(&deleted, 1).await;
        assert_eq!(bodies.len(), 1, "{bodies:?}");
        let body = &bodies[0];
        assert_eq!(body["type"], "Normal", "{body}");
        assert_eq!(body["reason"], "SuccessfulDelete", "{body}");
        assert_eq!(body["action"], "Delete", "{body}");
        assert_eq!(
            body["note"],
            "Deleted pods cache-0, cache-1, cache-2: the Redis is being deleted"
        );
        assert_eq!(body["regarding"]["name"], "cache", "{body}");
        assert!(body["related"].is_null(), "{body}");

        let deleted = [
            ("scale down", "cache-4"),
            ("rolling update to the new spec", "cache-1"),
            ("scale down", "cache-3"),
        ];
        let bodies = announced_deletes(&deleted, 1).await;
        assert_eq!(
            bodies[0]["note"],
            "Deleted pods cache-4, cache-3: scale down; pod cache-1: rolling update to the new spec"
        );

        let bodies = announced_deletes(&[("scale down", "cache-2")], 1).await;
        assert_eq!(bodies[0]["note"], "Deleted pod cache-2: scale down");
        assert_eq!(
            bodies[0]["related"]["name"], "cache-2",
            "one pod is the related object"
        );

        assert!(
            announced_deletes(&[], 0).await.is_empty(),
            "no pod, no Event"
        );
    }

    #[tokio::test]
    async fn a_create_refused_409_because_a_foreign_pod_holds_the_name_is_a_name_conflict() {
        let (done, bodies) = create_against(vec![
            create().respond(409, already_exists()),
            list_by_name().respond(200, pod_list(vec![pod_owned_by(Some("rs-uid"))])),
            event(),
        ])
        .await;
        let Err(Refused { failure, error }) = done else {
            panic!("not refused: {done:?}");
        };
        assert_eq!(failure.reason, "PodNameConflict");
        assert!(
            failure.message.contains("ReplicaSet web-7d9"),
            "{}",
            failure.message
        );
        assert!(matches!(&error, Error::PodNameConflict(name) if name == "cache-0"));
        assert_eq!(error.retry_class(), RetryClass::Transient, "backs off");
        assert_eq!(bodies[0]["metadata"]["name"], "cache-0");
        assert_eq!(
            warning(&bodies[2]),
            ("PodNameConflict", "Create", failure.message.as_str())
        );
    }

    #[tokio::test]
    async fn a_create_refused_409_by_our_own_pod_means_the_cache_was_behind() {
        let mut ours = pod_owned_by(Some("r-uid"));
        ours.metadata.name = Some("cache-0".into());
        let (done, _) = create_against(vec![
            create().respond(409, already_exists()),
            list_by_name().respond(200, pod_list(vec![ours])),
        ])
        .await;
        assert!(matches!(done, Ok(Done::CacheBehind)), "{done:?}");
        // Gone by the time we looked: the same.
        let (done, _) = create_against(vec![
            create().respond(409, already_exists()),
            list_by_name().respond(200, pod_list(Vec::new())),
        ])
        .await;
        assert!(matches!(done, Ok(Done::CacheBehind)), "{done:?}");
    }

    #[tokio::test]
    async fn a_delete_refused_409_means_a_newer_pod_holds_the_name() {
        let conflict = status(409, "Conflict", "Precondition failed: UID in precondition");
        let (done, bodies) = delete_against(vec![delete().respond(409, conflict)]).await;
        assert!(matches!(done, Ok(Deletion::Replaced)), "{done:?}");
        assert!(
            matches!(Deletion::Replaced.done(), Done::CacheBehind),
            "re-planned"
        );
        assert_eq!(bodies[0]["preconditions"]["uid"], "p-uid");
    }

    #[tokio::test]
    async fn a_create_forbidden_403_is_a_failed_create_said_in_an_event_and_backed_off() {
        let quota = "pods \"cache-0\" is forbidden: exceeded quota: pods, requested: pods=1";
        let (done, bodies) = create_against(vec![
            create().respond(403, status(403, "Forbidden", quota)),
            event(),
        ])
        .await;
        let Err(Refused { failure, error }) = done else {
            panic!("not refused: {done:?}");
        };
        assert_eq!(
            (failure.reason, failure.message.as_str()),
            (
                "FailedCreate",
                format!("Error creating pod cache-0: {quota}").as_str()
            )
        );
        assert_eq!(error.retry_class(), RetryClass::Forbidden);
        assert_eq!(
            warning(&bodies[1]),
            ("FailedCreate", "Create", failure.message.as_str())
        );
    }

    #[tokio::test]
    async fn a_create_forbidden_because_the_namespace_terminates_ends_the_pass_quietly() {
        let terminating = "pods \"cache-0\" is forbidden: unable to create new content in \
                           namespace ns because it is being terminated";
        let (done, _) = create_against(vec![
            create().respond(403, status(403, "Forbidden", terminating)),
        ])
        .await;
        assert!(matches!(done, Ok(Done::NamespaceTerminating)), "{done:?}");
    }

    #[tokio::test]
    async fn a_delete_forbidden_403_is_a_failed_delete_said_in_an_event() {
        let rbac =
            "pods \"cache-0\" is forbidden: User \"system:serviceaccount:x:y\" cannot delete";
        let (done, bodies) = delete_against(vec![
            delete().respond(403, status(403, "Forbidden", rbac)),
            event(),
        ])
        .await;
        let Err(Refused { failure, error }) = done else {
            panic!("not refused: {done:?}");
        };
        assert_eq!(failure.reason, "FailedDelete");
        assert_eq!(error.retry_class(), RetryClass::Forbidden);
        assert_eq!(
            warning(&bodies[1]),
            (
                "FailedDelete",
                "Delete",
                format!("Error deleting pod cache-0: {rbac}").as_str()
            )
        );
    }

    #[test]
    fn the_conflict_note_says_who_holds_the_name() {
        let note = conflict_note("cache-0", &pod_owned_by(None));
        assert!(
            note.contains("cache-0") && note.contains("no controller"),
            "{note}"
        );
        let note = conflict_note("cache-0", &pod_owned_by(Some("u1")));
        assert!(note.contains("ReplicaSet web-7d9"), "{note}");
    }
}
