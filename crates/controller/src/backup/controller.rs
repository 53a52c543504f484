//! The `RedisBackup` reconciler (DESIGN §3o), a thin shell around [`super::plan`] and
//! [`super::job`]: start the Job once its Redis has a pod to read, record what the Job says,
//! delete the Job once its result is in the status; on deletion, delete the backup's object
//! from the bucket (a Job too) before releasing the finalizer.

use super::job::{self, JobKind, Object, Source};
use super::plan::{self, FoundJob, JobState};
use crate::Error;
use crate::cached::CachedPod;
use crate::k8s::FIELD_MANAGER;
use crate::k8s::conditions::now;
use crate::k8s::events::publish;
use crate::k8s::redis_watch;
use crate::metrics::{Metrics, RedisLabels};
use api::Redis;
use api::backup::{BackupDestination, BackupPhase, FINALIZER, RedisBackup, RedisBackupStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::controller::Action;
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// A backup waiting for its Redis or a pod to read: look again this often.
const WAIT: Duration = Duration::from_secs(5);
/// A running Job is watched; this only guards against a missed event.
const RUNNING_RESYNC: Duration = Duration::from_secs(60);

/// What every backup reconcile shares.
pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    /// The Redis pods (the Redis controller's cache).
    pub pods: Store<CachedPod>,
    /// The Redis objects, untyped (the Redis controller's cache).
    pub redis: Store<DynamicObject>,
    /// The image whose `redis-backup` the Jobs and the restore step run (`--backup-image`).
    pub image: String,
}

/// Drops from a watched RedisBackup what the controller never reads, before the cache keeps it
/// (issue #40.5: a tenant's labels and annotations are theirs to grow): managedFields, every
/// annotation, and every label but the two the schedules read.
pub fn strip(backup: &mut RedisBackup) {
    let metadata = &mut backup.metadata;
    metadata.managed_fields = None;
    metadata.annotations = None;
    if let Some(labels) = metadata.labels.as_mut() {
        labels
            .retain(|k, _| k == api::backup::REDIS_NAME_LABEL || k == api::backup::SCHEDULED_LABEL);
        if labels.is_empty() {
            metadata.labels = None;
        }
    }
}

/// Entry point for kube-runtime's Controller.
pub async fn reconcile(backup: Arc<RedisBackup>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = crate::k8s::namespace(&backup.metadata)?;
    let api: Api<RedisBackup> = Api::namespaced(ctx.client.clone(), namespace);
    finalizer(&api, FINALIZER, backup, |event| async {
        match event {
            Finalizer::Apply(backup) => apply(&backup, &ctx).await,
            Finalizer::Cleanup(backup) => cleanup(&backup, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// Requeue policy: waits come back soon, other errors back off.
pub fn error_policy(backup: Arc<RedisBackup>, error: &Error, _ctx: Arc<Context>) -> Action {
    match error.retry_class() {
        crate::RetryClass::Waiting => Action::requeue(WAIT),
        _ => {
            tracing::warn!(backup = %backup.name_any(), %error, "backup reconcile failed");
            Action::requeue(Duration::from_secs(15))
        }
    }
}

async fn apply(backup: &RedisBackup, ctx: &Context) -> Result<Action, Error> {
    let namespace = crate::k8s::namespace(&backup.metadata)?;
    let stored = backup.status.clone().unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
    let job_name = job::job_name(backup, JobKind::Backup);
    let uid = backup
        .metadata
        .uid
        .as_deref()
        .ok_or(Error::IncompleteObject("uid"))?;
    let found = jobs.get_opt(&job_name).await.map_err(Error::Kube)?;
    if stored.phase.is_some_and(BackupPhase::is_finished) {
        delete_own_job(&jobs, found.as_ref(), uid).await?;
        return Ok(Action::await_change());
    }
    let Some(found) = found else {
        return start(backup, ctx, namespace, &stored).await;
    };
    let state = match plan::found_job(&found, uid) {
        FoundJob::Own(state) => state,
        FoundJob::Foreign(holder) => {
            let message = plan::job_conflict(&job_name, &holder);
            return conflict(ctx, backup, namespace, &stored, message).await;
        }
    };
    match state {
        JobState::Running => {
            if stored.phase != Some(BackupPhase::Running) {
                let mut status = stored.clone();
                status.phase = Some(BackupPhase::Running);
                status.start_time = status.start_time.or_else(|| Some(now()));
                write_status(ctx, backup, namespace, &status).await?;
            }
            Ok(Action::requeue(RUNNING_RESYNC))
        }
        JobState::Succeeded => {
            let message = termination_message(ctx, namespace, &found, true).await?;
            match message.as_deref().and_then(plan::parse_result) {
                Some(result) => succeeded(backup, ctx, namespace, &stored, result).await?,
                None => {
                    let text = "the backup Job succeeded but reported no result".to_owned();
                    failed(backup, ctx, namespace, &stored, "NoResult", text).await?;
                }
            }
            delete_own_job(&jobs, Some(&found), uid).await?;
            Ok(Action::await_change())
        }
        JobState::Failed => {
            let message = termination_message(ctx, namespace, &found, false).await?;
            let (reason, text) = match message {
                Some(message) => plan::parse_failure(&message),
                None => plan::job_failure(&found)
                    .unwrap_or_else(|| ("JobFailed".to_owned(), String::new())),
            };
            failed(backup, ctx, namespace, &stored, &reason, text).await?;
            delete_own_job(&jobs, Some(&found), uid).await?;
            Ok(Action::await_change())
        }
    }
}

/// Starts the Job: its Redis, destination and source pod first.
async fn start(
    backup: &RedisBackup,
    ctx: &Context,
    namespace: &str,
    stored: &RedisBackupStatus,
) -> Result<Action, Error> {
    let redis_name = backup.spec.redis_name.as_str();
    let Some(redis) = redis_named(ctx, namespace, redis_name) else {
        let message = format!(
            "Redis {} does not exist in this namespace",
            api::validation::shown(redis_name)
        );
        return wait(ctx, backup, namespace, stored, "RedisNotFound", message).await;
    };
    let destination = backup
        .spec
        .destination
        .clone()
        .or_else(|| redis.spec.backup.as_ref().map(|b| b.destination.clone()));
    let Some(destination) = destination else {
        let text = format!(
            "neither spec.destination nor Redis {redis_name}'s spec.backup.destination says where to store the backup"
        );
        failed(backup, ctx, namespace, stored, "NoDestination", text).await?;
        return Ok(Action::await_change());
    };
    let owned = crate::pods::owned_pods(&ctx.pods, &redis);
    let (pod, ip) = match plan::choose_source(&redis, &owned) {
        Ok(source) => source,
        Err(why) => return wait(ctx, backup, namespace, stored, "NoSourcePod", why).await,
    };
    let name = backup.name_any();
    let key = destination.s3.object_key(namespace, redis_name, &name);
    let object = Object {
        destination: &destination.s3,
        bucket: &destination.s3.bucket,
        key: &key,
    };
    let Some(job) = job::backup_job(backup, &redis, Source { pod, ip }, &object, &ctx.image) else {
        return Err(Error::IncompleteObject("name, namespace or uid"));
    };
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
    match jobs.create(&post_params(), &job).await {
        Ok(_) => {}
        // Created by an earlier pass whose result this one did not see yet.
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(Error::Kube(e)),
    }
    let location = destination.s3.location(&key);
    let status = RedisBackupStatus {
        phase: Some(BackupPhase::Running),
        destination: Some(destination.clone()),
        source_pod: Some(pod.to_owned()),
        start_time: Some(now()),
        ..RedisBackupStatus::default()
    };
    write_status(ctx, backup, namespace, &status).await?;
    let note = format!("streaming the RDB of pod {pod} to {location}");
    announce(
        ctx,
        backup,
        &redis_reference(namespace, redis_name),
        EventType::Normal,
        "BackupStarted",
        note,
    )
    .await;
    Ok(Action::requeue(RUNNING_RESYNC))
}

async fn succeeded(
    backup: &RedisBackup,
    ctx: &Context,
    namespace: &str,
    stored: &RedisBackupStatus,
    result: plan::BackupResult,
) -> Result<(), Error> {
    let note = format!("stored {} bytes at {}", result.size, result.location);
    let mut status = plan::finished(
        stored,
        BackupPhase::Succeeded,
        "Succeeded",
        note.clone(),
        now(),
    );
    status.location = Some(result.location);
    status.size = i64::try_from(result.size).ok();
    status.sha256 = Some(result.sha256);
    status.replication_offset = result.replication_offset;
    write_status(ctx, backup, namespace, &status).await?;
    let redis_name = &backup.spec.redis_name;
    let labels = RedisLabels {
        namespace: namespace.to_owned(),
        redis: redis_name.clone(),
    };
    let seconds = match (&status.start_time, &status.completion_time) {
        (Some(started), Some(done)) => Some(done.0.duration_since(started.0).as_secs_f64()),
        _ => None,
    };
    ctx.metrics.backups.succeeded(
        &labels,
        k8s_openapi::jiff::Timestamp::now().as_second(),
        i64::try_from(result.size).unwrap_or(i64::MAX),
        seconds,
    );
    announce(
        ctx,
        backup,
        &redis_reference(namespace, redis_name),
        EventType::Normal,
        "BackupSucceeded",
        note,
    )
    .await;
    Ok(())
}

async fn failed(
    backup: &RedisBackup,
    ctx: &Context,
    namespace: &str,
    stored: &RedisBackupStatus,
    reason: &str,
    text: String,
) -> Result<(), Error> {
    let status = plan::finished(stored, BackupPhase::Failed, reason, text.clone(), now());
    write_status(ctx, backup, namespace, &status).await?;
    let redis_name = &backup.spec.redis_name;
    ctx.metrics.backups.failed(&RedisLabels {
        namespace: namespace.to_owned(),
        redis: redis_name.clone(),
    });
    let note = format!("{reason}: {text}");
    announce(
        ctx,
        backup,
        &redis_reference(namespace, redis_name),
        EventType::Warning,
        "BackupFailed",
        note,
    )
    .await;
    Ok(())
}

/// Pending for `reason`: written when it changed, and looked at again soon.
async fn wait(
    ctx: &Context,
    backup: &RedisBackup,
    namespace: &str,
    stored: &RedisBackupStatus,
    reason: &str,
    message: String,
) -> Result<Action, Error> {
    let status = plan::pending(stored, reason, message, now());
    if backup.status.as_ref() != Some(&status) {
        write_status(ctx, backup, namespace, &status).await?;
    }
    Ok(Action::requeue(WAIT))
}

/// Pending `NameConflict` while another's Job holds the backup's Job name, with a Warning Event
/// when it comes to be so; that Job is left as it is.
async fn conflict(
    ctx: &Context,
    backup: &RedisBackup,
    namespace: &str,
    stored: &RedisBackupStatus,
    message: String,
) -> Result<Action, Error> {
    let already = stored
        .conditions
        .iter()
        .any(|c| c.reason == plan::NAME_CONFLICT && c.message == message);
    if !already {
        let redis = redis_reference(namespace, &backup.spec.redis_name);
        let note = message.clone();
        announce(
            ctx,
            backup,
            &redis,
            EventType::Warning,
            plan::NAME_CONFLICT,
            note,
        )
        .await;
    }
    wait(ctx, backup, namespace, stored, plan::NAME_CONFLICT, message).await
}

/// Deletion: the backup Job goes (its owner reference would only take it after the finalizer),
/// and a stored object is deleted by a Job before the finalizer is released. A delete that
/// fails is said, and the object left: the finalizer never holds the backup forever.
async fn cleanup(backup: &RedisBackup, ctx: &Context) -> Result<Action, Error> {
    let namespace = crate::k8s::namespace(&backup.metadata)?;
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
    let uid = backup
        .metadata
        .uid
        .as_deref()
        .ok_or(Error::IncompleteObject("uid"))?;
    let backup_job = job::job_name(backup, JobKind::Backup);
    let found = jobs.get_opt(&backup_job).await.map_err(Error::Kube)?;
    delete_own_job(&jobs, found.as_ref(), uid).await?;
    let status = backup.status.clone().unwrap_or_default();
    let stored = match (
        status.phase,
        status.location.as_deref(),
        status.destination.as_ref(),
    ) {
        (Some(BackupPhase::Succeeded), Some(location), Some(destination)) => {
            api::backup::parse_location(location).map(|(bucket, key)| (destination, bucket, key))
        }
        _ => None,
    };
    let Some((BackupDestination { s3 }, bucket, key)) = stored else {
        return Ok(Action::await_change());
    };
    let location = status.location.clone().unwrap_or_default();
    let name = job::job_name(backup, JobKind::Delete);
    let redis = redis_reference(namespace, &backup.spec.redis_name);
    let deleting = || Error::BackupPending(format!("deleting {location}"));
    // The Event said once the delete has ended, and the backup then goes.
    let (type_, reason, note) = match jobs.get_opt(&name).await.map_err(Error::Kube)? {
        None => {
            let object = Object {
                destination: s3,
                bucket,
                key,
            };
            let Some(delete) =
                job::delete_job(backup, &backup.spec.redis_name, &object, &ctx.image)
            else {
                return Ok(Action::await_change());
            };
            match jobs.create(&post_params(), &delete).await {
                Ok(_) => return Err(deleting()),
                Err(kube::Error::Api(s)) if s.code == 409 => return Err(deleting()),
                // The namespace is going (its Secrets with it): nothing can delete the object now.
                Err(e) if crate::k8s::is_terminating(&e) => (
                    EventType::Warning,
                    "BackupObjectLeft",
                    format!("{location} is left in the bucket: the namespace is being deleted"),
                ),
                Err(e) => return Err(Error::Kube(e)),
            }
        }
        Some(found) => match plan::found_job(&found, uid) {
            // Another's Job holds the name: nothing of this backup can delete the object, and
            // the finalizer never holds the backup forever.
            FoundJob::Foreign(holder) => (
                EventType::Warning,
                "BackupObjectLeft",
                format!(
                    "{location} is left in the bucket: {}",
                    plan::job_conflict(&name, &holder)
                ),
            ),
            FoundJob::Own(JobState::Running) => return Err(deleting()),
            FoundJob::Own(JobState::Succeeded) => (
                EventType::Normal,
                "BackupDeleted",
                format!("deleted {location}"),
            ),
            FoundJob::Own(JobState::Failed) => {
                let why = termination_message(ctx, namespace, &found, false)
                    .await?
                    .map(|m| plan::parse_failure(&m))
                    .map(|(reason, text)| format!("{reason}: {text}"))
                    .unwrap_or_default();
                (
                    EventType::Warning,
                    "BackupObjectLeft",
                    format!("{location} is left in the bucket: deleting it failed ({why})"),
                )
            }
        },
    };
    announce(ctx, backup, &redis, type_, reason, note).await;
    Ok(Action::await_change())
}

/// The Redis `name` in `namespace`, from the Redis controller's cache.
fn redis_named(ctx: &Context, namespace: &str, name: &str) -> Option<Redis> {
    let key = ObjectRef::new_with(name, redis_watch::resource()).within(namespace);
    let obj = ctx.redis.get(&key)?;
    redis_watch::decode(&obj).ok()
}

fn redis_reference(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(Redis::api_version(&()).into_owned()),
        kind: Some(Redis::kind(&()).into_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}

/// An Event on the backup, and the same on its Redis (where `kubectl describe redis` shows it).
async fn announce(
    ctx: &Context,
    backup: &RedisBackup,
    redis: &ObjectReference,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let own = backup.object_ref(&());
    publish(
        &ctx.recorder,
        &own,
        None,
        type_,
        reason,
        "Backup",
        note.clone(),
    )
    .await;
    publish(
        &ctx.recorder,
        redis,
        Some(own),
        type_,
        reason,
        "Backup",
        note,
    )
    .await;
}

/// The termination message of the Job's pod that succeeded (`success`) or of its last failed
/// one: what `redis-backup` reported. Only pods the Job controls count: any pod can carry the
/// job-name label.
async fn termination_message(
    ctx: &Context,
    namespace: &str,
    job: &Job,
    success: bool,
) -> Result<Option<String>, Error> {
    let (Some(job_name), Some(job_uid)) =
        (job.metadata.name.as_deref(), job.metadata.uid.as_deref())
    else {
        return Ok(None);
    };
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let params = ListParams::default()
        .labels(&format!("batch.kubernetes.io/job-name={job_name}"))
        .limit(20);
    let list = pods.list(&params).await.map_err(Error::Kube)?;
    let mut terminated: Vec<_> = list
        .items
        .iter()
        .filter(|p| crate::k8s::controlled_by(*p, job_uid))
        .flat_map(|p| {
            p.status
                .iter()
                .flat_map(|s| s.container_statuses.iter().flatten())
        })
        .filter_map(|c| c.state.as_ref()?.terminated.clone())
        .filter(|t| (t.exit_code == 0) == success)
        .collect();
    terminated.sort_by(|a, b| a.finished_at.cmp(&b.finished_at));
    Ok(terminated.pop().and_then(|t| t.message.or(t.reason)))
}

/// Deletes `found` if it is the backup's own Job, with its uid as a precondition (a Job made
/// under the same name since it was read is not deleted); another's is left as it is.
async fn delete_own_job(jobs: &Api<Job>, found: Option<&Job>, uid: &str) -> Result<(), Error> {
    let Some(job) = found.filter(|job| crate::k8s::controlled_by(*job, uid)) else {
        return Ok(());
    };
    let (Some(name), Some(job_uid)) = (job.metadata.name.as_deref(), job.metadata.uid.clone())
    else {
        return Ok(());
    };
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(job_uid),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match jobs.delete(name, &params).await {
        Ok(_) => Ok(()),
        // Gone, or another object holds the name now.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(Error::Kube(e)),
    }
}

async fn write_status(
    ctx: &Context,
    backup: &RedisBackup,
    namespace: &str,
    status: &RedisBackupStatus,
) -> Result<(), Error> {
    let api: Api<RedisBackup> = Api::namespaced(ctx.client.clone(), namespace);
    let patch = serde_json::json!({
        "apiVersion": RedisBackup::api_version(&()),
        "kind": RedisBackup::kind(&()),
        "status": status,
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch_status(&backup.name_any(), &params, &Patch::Apply(&patch))
        .await
        .map_err(Error::Kube)?;
    Ok(())
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_backup_keeps_only_the_labels_the_schedules_read() {
        let mut backup: RedisBackup = serde_json::from_value(serde_json::json!({
            "apiVersion": "myapp.tangx.in/v1",
            "kind": "RedisBackup",
            "metadata": {
                "name": "b",
                "labels": {
                    "myapp.tangx.in/redis-name": "cache",
                    "myapp.tangx.in/scheduled": "true",
                    "tenant/anything": "x".repeat(60),
                },
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
                "finalizers": [FINALIZER],
            },
            "spec": {"redisName": "cache"},
        }))
        .expect("backup");
        strip(&mut backup);
        let labels: Vec<&str> = backup.labels().keys().map(String::as_str).collect();
        assert_eq!(
            labels,
            ["myapp.tangx.in/redis-name", "myapp.tangx.in/scheduled"]
        );
        assert!(backup.metadata.annotations.is_none());
        assert!(backup.metadata.managed_fields.is_none());
        assert_eq!(
            backup.finalizers(),
            [FINALIZER],
            "the finalizer helper reads it"
        );
    }
}
