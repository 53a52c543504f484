//! The schedules of `spec.backup` (DESIGN §3o), a loop of the leader: every [`TICK`] each Redis
//! with a schedule gets the `RedisBackup` now due (see [`super::schedule`] for the naming that
//! makes a second create of it a no-op), and its scheduled backups beyond `keep` are deleted
//! (their objects by the backups' finalizer).

use super::controller::Context;
use super::schedule::{self, Scheduled};
use crate::k8s::FIELD_MANAGER;
use crate::k8s::redis_watch;
use api::Redis;
use api::backup::{REDIS_NAME_LABEL, RedisBackup, RedisBackupSpec, SCHEDULED_LABEL};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::Store;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How often the schedules are looked at (a minute's schedule starts within this of its time).
pub const TICK: Duration = Duration::from_secs(5);

/// Runs forever (the caller drops it with the controller).
pub async fn run(ctx: Arc<Context>, backups: Store<RedisBackup>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = Timestamp::now();
        for obj in ctx.redis.state() {
            let Ok(redis) = redis_watch::decode(&obj) else {
                continue;
            };
            if let Err(e) = pass(&ctx, &backups, &redis, now).await {
                tracing::warn!(redis = %redis.name_any(), error = %e, "backup schedule");
            }
        }
    }
}

/// One Redis: create the backup due, then prune.
async fn pass(
    ctx: &Context,
    backups: &Store<RedisBackup>,
    redis: &Redis,
    now: Timestamp,
) -> Result<(), kube::Error> {
    let Some(spec) = &redis.spec.backup else {
        return Ok(());
    };
    let Some(text) = &spec.schedule else {
        return Ok(());
    };
    if redis.metadata.deletion_timestamp.is_some() || api::is_paused(&redis.metadata) {
        return Ok(());
    }
    let (Some(name), Some(namespace)) = (
        redis.metadata.name.as_deref(),
        redis.metadata.namespace.as_deref(),
    ) else {
        return Ok(());
    };
    // The webhook refuses a schedule cron cannot read; one stored past it is skipped.
    let Ok(cron) = api::backup::parse_schedule(text) else {
        return Ok(());
    };
    let since = redis
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0);
    let mine: Vec<Arc<RedisBackup>> = backups
        .state()
        .into_iter()
        .filter(|b| {
            b.metadata.namespace.as_deref() == Some(namespace)
                && b.labels().get(REDIS_NAME_LABEL).map(String::as_str) == Some(name)
                && b.labels().get(SCHEDULED_LABEL).map(String::as_str) == Some("true")
        })
        .collect();
    let api: Api<RedisBackup> = Api::namespaced(ctx.client.clone(), namespace);
    if let Some(at) = schedule::due(&cron, since, now) {
        let backup_name = schedule::backup_name(name, at);
        if !mine.iter().any(|b| b.name_any() == backup_name) {
            let backup = scheduled_backup(redis, &backup_name);
            match api.create(&post_params(), &backup).await {
                Ok(_) => {
                    tracing::info!(redis = name, backup = %backup_name, "scheduled backup created")
                }
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
    let listed: Vec<Scheduled> = mine
        .iter()
        .filter(|b| b.metadata.deletion_timestamp.is_none())
        .map(|b| Scheduled {
            name: b.name_any(),
            created: b.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0),
            phase: b.status.as_ref().and_then(|s| s.phase).unwrap_or_default(),
        })
        .collect();
    let keep = usize::try_from(spec.keep()).unwrap_or(1).max(1);
    for old in schedule::to_prune(&listed, keep) {
        match api.delete(&old, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(redis = name, backup = %old, "older scheduled backup deleted (keep)")
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The `RedisBackup` of `redis` named `name`, labelled as scheduled. Not owned by the Redis:
/// backups outlive what they back up.
fn scheduled_backup(redis: &Redis, name: &str) -> RedisBackup {
    let redis_name = redis.name_any();
    RedisBackup {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: redis.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([
                (REDIS_NAME_LABEL.to_owned(), redis_name.clone()),
                (SCHEDULED_LABEL.to_owned(), "true".to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        spec: RedisBackupSpec {
            redis_name,
            destination: None,
        },
        status: None,
    }
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}
