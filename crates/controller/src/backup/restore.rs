//! `spec.restore` (DESIGN §3o): a Redis whose pods start from a backup, once.
//!
//! While the `Restored` condition is not True, each pod that restores (every pod in Standalone
//! mode; the first, ordinal 0, in Replication mode, where the others sync from it once it is
//! elected: the only pod that may be, see `replication::plan`) is created with an init
//! container that downloads the RDB into `/data` and checks its checksum before redis-server
//! starts. A download that fails fails the init container: the pod never becomes Ready, and
//! the reason is said in the condition; no empty primary is elected. Once those pods are Ready
//! the condition turns True, and pods made afterwards (a scale-up, a replacement) start as any
//! other. The init container is outside the pods' spec hash: no pod is replaced for it.
//!
//! A restore from a `RedisBackup` reads the destination its status recorded; one from a
//! `location` reads it with `spec.backup.destination`'s endpoint and credentials.

use super::job::{Object, restore_container};
use super::plan::is_sha256_hex;
use crate::cached::CachedPod;
use crate::k8s::conditions::{condition, not_ready_for};
use crate::step::{Hold, Outcome, Step};
use api::backup::{BackupPhase, RESTORED_CONDITION, RedisBackup, S3Destination};
use api::{Mode, Redis, RedisStatus};
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use std::sync::Arc;

/// What the restore asks of a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to restore: no `spec.restore`, or done (`Restored` is True).
    Done,
    /// Pods that restore start with the download of this object.
    Pending(Source),
    /// The source cannot be read (no such backup, not Succeeded): no pod is created.
    Blocked {
        reason: &'static str,
        message: String,
    },
}

/// Where a restore reads from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub destination: S3Destination,
    pub bucket: String,
    pub key: String,
    /// The SHA-256 the backup's status recorded: the download is checked against it rather
    /// than against the checksum object in the bucket. `None` for a `location`.
    pub sha256: Option<String>,
}

impl Source {
    pub fn location(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }

    fn object(&self) -> Object<'_> {
        Object {
            destination: &self.destination,
            bucket: &self.bucket,
            key: &self.key,
        }
    }
}

/// Whether `redis` restores still: it has `spec.restore` and its `Restored` condition is not
/// True.
pub fn pending(redis: &Redis) -> bool {
    redis.spec.restore.is_some()
        && redis
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == RESTORED_CONDITION))
            .is_none_or(|c| c.status != "True")
}

/// In Replication mode while the restore is pending: the ordinal that restores (the only one
/// that may be elected first).
pub fn restored_ordinal(redis: &Redis) -> Option<u32> {
    (pending(redis) && redis.spec.mode() == Mode::Replication).then_some(0)
}

/// Whether the pod at `ordinal` restores (while pending).
pub fn restores(redis: &Redis, ordinal: u32) -> bool {
    redis.spec.mode() != Mode::Replication || ordinal == 0
}

/// The plan from `spec.restore`, given the `RedisBackup` it names as looked up (`Err`: the
/// lookup failed and says why). Pure.
pub fn plan(redis: &Redis, named: Result<Option<&RedisBackup>, String>) -> Plan {
    let Some(restore) = redis.spec.restore.as_ref().filter(|_| pending(redis)) else {
        return Plan::Done;
    };
    if let Some(location) = &restore.location {
        let Some((bucket, key)) = api::backup::parse_location(location) else {
            return Plan::Blocked {
                reason: "RestoreLocationInvalid",
                message: format!(
                    "spec.restore.location {} is not s3://<bucket>/<key>",
                    api::validation::shown(location)
                ),
            };
        };
        let Some(backup) = &redis.spec.backup else {
            return Plan::Blocked {
                reason: "RestoreDestinationMissing",
                message:
                    "spec.restore.location is read with spec.backup.destination, which is not set"
                        .to_owned(),
            };
        };
        return Plan::Pending(Source {
            destination: backup.destination.s3.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            sha256: None,
        });
    }
    let name = restore.backup_name.as_deref().unwrap_or_default();
    let backup = match named {
        Ok(Some(backup)) => backup,
        Ok(None) => {
            return Plan::Blocked {
                reason: "RestoreBackupNotFound",
                message: format!("RedisBackup {name} does not exist in this namespace"),
            };
        }
        Err(why) => {
            return Plan::Blocked {
                reason: "RestoreBackupUnreadable",
                message: format!("RedisBackup {name} could not be read: {why}"),
            };
        }
    };
    let status = backup.status.clone().unwrap_or_default();
    let found = (status.phase == Some(BackupPhase::Succeeded))
        .then(|| {
            let (bucket, key) = api::backup::parse_location(status.location.as_deref()?)?;
            Some(Source {
                destination: status.destination.clone()?.s3,
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                sha256: status.sha256.clone().filter(|s| is_sha256_hex(s)),
            })
        })
        .flatten();
    match found {
        Some(source) => Plan::Pending(source),
        None => Plan::Blocked {
            reason: "RestoreBackupNotSucceeded",
            message: format!(
                "RedisBackup {name} is {}, not Succeeded: nothing to restore yet",
                status.phase.unwrap_or_default().as_str()
            ),
        },
    }
}

/// The plan for `redis`, reading the `RedisBackup` it names (only while the restore is pending).
pub async fn prepare(client: &kube::Client, redis: &Redis, namespace: &str) -> Plan {
    let named = match redis.spec.restore.as_ref() {
        Some(restore) if pending(redis) => restore.backup_name.as_deref(),
        _ => return Plan::Done,
    };
    let Some(name) = named else {
        return plan(redis, Ok(None));
    };
    let api: Api<RedisBackup> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(name).await {
        Ok(found) => plan(redis, Ok(found.as_ref())),
        Err(e) => plan(redis, Err(e.to_string())),
    }
}

/// The init container of the pod at `ordinal`, when it restores.
pub fn init_container(redis: &Redis, plan: &Plan, ordinal: u32, image: &str) -> Option<Container> {
    match plan {
        Plan::Pending(source) if restores(redis, ordinal) => Some(restore_container(
            &redis.spec,
            &source.object(),
            source.sha256.as_deref(),
            image,
        )),
        _ => None,
    }
}

/// Whether the plan holds back every pod create.
pub fn blocks_creates(plan: &Plan) -> bool {
    matches!(plan, Plan::Blocked { .. })
}

/// `status` with the `Restored` condition (only for a Redis with `spec.restore`): True once the
/// pods that restore are Ready; False while they download, with the reason a download failed
/// (and Ready False for it), or why no pod could be made.
pub fn with_condition(
    mut status: RedisStatus,
    redis: &Redis,
    plan: &Plan,
    pods: &[Arc<CachedPod>],
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    if redis.spec.restore.is_none() {
        return status;
    }
    let name = redis.metadata.name.as_deref().unwrap_or_default();
    let generation = redis.metadata.generation;
    let stored_condition = stored
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == RESTORED_CONDITION))
        .cloned();
    let (value, reason, message) = match plan {
        Plan::Done => {
            // Done once: the condition stays as it was written.
            if let Some(kept) = stored_condition {
                status.conditions.retain(|c| c.type_ != RESTORED_CONDITION);
                status.conditions.push(kept);
            }
            return status;
        }
        Plan::Blocked { reason, message } => ("False", *reason, message.clone()),
        Plan::Pending(source) => {
            let replicas = u32::try_from(redis.spec.replicas()).unwrap_or(0);
            let restoring: Vec<u32> = (0..replicas).filter(|o| restores(redis, *o)).collect();
            let pod_at = |ordinal: u32| {
                let pod_name = api::pods::pod_name(name, ordinal);
                pods.iter()
                    .find(|p| p.metadata.name.as_deref() == Some(pod_name.as_str()))
            };
            let failures: Vec<String> = restoring
                .iter()
                .filter_map(|o| pod_at(*o))
                .filter_map(|p| {
                    Some(format!(
                        "{}: {}",
                        p.metadata.name.as_deref()?,
                        p.restore_failure.as_deref()?
                    ))
                })
                .collect();
            let all_ready = !restoring.is_empty()
                && restoring
                    .iter()
                    .all(|o| pod_at(*o).is_some_and(|p| p.ready));
            if !failures.is_empty() {
                let message = format!(
                    "downloading {} failed: {}",
                    source.location(),
                    failures.join("; ")
                );
                ("False", "RestoreFailed", message)
            } else if all_ready {
                (
                    "True",
                    "Restored",
                    format!("the pods started from {}", source.location()),
                )
            } else {
                (
                    "False",
                    "Restoring",
                    format!("downloading {} into the pods", source.location()),
                )
            }
        }
    };
    let failed = value == "False" && reason != "Restoring";
    status.conditions.retain(|c| c.type_ != RESTORED_CONDITION);
    status.conditions.push(condition(
        stored,
        RESTORED_CONDITION,
        value,
        reason,
        message.clone(),
        generation,
        now.clone(),
    ));
    if failed {
        status = not_ready_for(status, reason, vec![message], stored, now);
    }
    status
}

/// The restore step's outcome (§3o): no pod is created while no download can be prepared; the
/// `Restored` condition.
impl Outcome for Plan {
    fn hold(&self, _step: &Step<'_>) -> Hold {
        if blocks_creates(self) {
            Hold::All("the restore cannot be prepared")
        } else {
            Hold::No
        }
    }

    fn fold(
        &self,
        step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        with_condition(status, step.redis, self, step.pods, stored, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::backup::{BackupDestination, CredentialsSecretRef, RedisBackupStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
    use serde_json::json;

    fn redis(spec: serde_json::Value) -> Redis {
        let mut r = Redis::new("cache", serde_json::from_value(spec).expect("spec"));
        r.metadata.namespace = Some("shop".to_owned());
        r
    }

    fn s3() -> S3Destination {
        S3Destination {
            endpoint: "http://s3:9000".to_owned(),
            bucket: "backups".to_owned(),
            credentials_secret_ref: CredentialsSecretRef {
                name: "creds".to_owned(),
            },
            ..S3Destination::default()
        }
    }

    fn succeeded(location: &str) -> RedisBackup {
        let mut b = RedisBackup::new(
            "b1",
            api::RedisBackupSpec {
                redis_name: "old".to_owned(),
                destination: None,
            },
        );
        b.status = Some(RedisBackupStatus {
            phase: Some(BackupPhase::Succeeded),
            location: Some(location.to_owned()),
            destination: Some(BackupDestination { s3: s3() }),
            ..RedisBackupStatus::default()
        });
        b
    }

    fn pod(name: &str, ready: bool, failure: Option<&str>) -> Arc<CachedPod> {
        Arc::new(CachedPod {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ready,
            restore_failure: failure.map(str::to_owned),
            ..CachedPod::default()
        })
    }

    fn restored(r: &RedisStatus) -> Option<&Condition> {
        r.conditions.iter().find(|c| c.type_ == RESTORED_CONDITION)
    }

    #[test]
    fn a_succeeded_backup_is_read_where_its_status_says() {
        let r = redis(json!({"restore": {"backupName": "b1"}}));
        let backup = succeeded("s3://backups/shop/old/b1.rdb");
        let Plan::Pending(source) = plan(&r, Ok(Some(&backup))) else {
            panic!("pending")
        };
        assert_eq!(
            (source.bucket.as_str(), source.key.as_str()),
            ("backups", "shop/old/b1.rdb")
        );
        assert_eq!(source.destination, s3());
    }

    #[test]
    fn a_restore_from_a_backup_is_checked_against_the_checksum_its_status_recorded() {
        let r = redis(json!({"restore": {"backupName": "b1"}}));
        let sha = "0123456789abcdef".repeat(4);
        let mut backup = succeeded("s3://backups/shop/old/b1.rdb");
        backup.status.as_mut().expect("status").sha256 = Some(sha.clone());
        let p = plan(&r, Ok(Some(&backup)));
        let init = init_container(&r, &p, 0, "img").expect("restores");
        let args = init.args.unwrap_or_default();
        let at = args.iter().position(|a| a == "--expected-sha256");
        assert_eq!(at.and_then(|i| args.get(i + 1)), Some(&sha), "{args:?}");
        // A status that does not hold a checksum is not passed on; nor is one for a location.
        backup.status.as_mut().expect("status").sha256 = Some("--data-dir=/".to_owned());
        let p = plan(&r, Ok(Some(&backup)));
        let init = init_container(&r, &p, 0, "img").expect("restores");
        assert!(
            !init
                .args
                .unwrap_or_default()
                .iter()
                .any(|a| a == "--expected-sha256")
        );
    }

    #[test]
    fn a_missing_or_unfinished_backup_blocks_every_pod() {
        let r = redis(json!({"restore": {"backupName": "b1"}}));
        assert!(matches!(
            plan(&r, Ok(None)),
            Plan::Blocked {
                reason: "RestoreBackupNotFound",
                ..
            }
        ));
        let mut running = succeeded("s3://backups/k");
        running.status.as_mut().expect("status").phase = Some(BackupPhase::Running);
        let blocked = plan(&r, Ok(Some(&running)));
        assert!(
            blocked_by(&blocked, "RestoreBackupNotSucceeded"),
            "{blocked:?}"
        );
        assert!(blocks_creates(&blocked));
        let by_location = redis(json!({"restore": {"location": "s3://backups/k.rdb"}}));
        assert!(blocked_by(
            &plan(&by_location, Ok(None)),
            "RestoreDestinationMissing"
        ));
    }

    fn blocked_by(plan: &Plan, expected: &str) -> bool {
        matches!(plan, Plan::Blocked { reason, .. } if *reason == expected)
    }

    #[test]
    fn only_the_first_pod_restores_in_replication_mode_and_none_once_restored() {
        let mut r =
            redis(json!({"mode": "Replication", "replicas": 3, "restore": {"backupName": "b1"}}));
        let p = plan(&r, Ok(Some(&succeeded("s3://backups/k"))));
        assert!(init_container(&r, &p, 0, "img").is_some());
        assert!(init_container(&r, &p, 1, "img").is_none());
        assert_eq!(restored_ordinal(&r), Some(0));
        let status = with_condition(
            RedisStatus::default(),
            &r,
            &p,
            &[pod("cache-0", true, None)],
            None,
            crate::k8s::conditions::now(),
        );
        assert_eq!(restored(&status).map(|c| c.status.as_str()), Some("True"));
        r.status = Some(status);
        assert_eq!(plan(&r, Ok(None)), Plan::Done);
        assert_eq!(restored_ordinal(&r), None);
        // The condition is kept once done.
        let kept = with_condition(
            RedisStatus::default(),
            &r,
            &Plan::Done,
            &[],
            r.status.as_ref(),
            crate::k8s::conditions::now(),
        );
        assert_eq!(restored(&kept).map(|c| c.reason.as_str()), Some("Restored"));
    }

    #[test]
    fn a_failed_download_says_why_and_the_redis_is_not_ready() {
        let r = redis(
            json!({"replicas": 1, "restore": {"location": "s3://backups/k"}, "backup": {"destination": {"s3": {"endpoint": "http://s3:9000", "bucket": "backups", "credentialsSecretRef": {"name": "creds"}}}}}),
        );
        let p = plan(&r, Ok(None));
        let base = RedisStatus {
            conditions: vec![Condition {
                type_: "Ready".to_owned(),
                status: "False".to_owned(),
                reason: "PodsNotReady".to_owned(),
                message: String::new(),
                observed_generation: None,
                last_transition_time: crate::k8s::conditions::now(),
            }],
            ..RedisStatus::default()
        };
        let status = with_condition(
            base,
            &r,
            &p,
            &[pod(
                "cache-0",
                false,
                Some("ChecksumMismatch: the object changed"),
            )],
            None,
            crate::k8s::conditions::now(),
        );
        let c = restored(&status).expect("condition");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "RestoreFailed")
        );
        assert!(c.message.contains("ChecksumMismatch"), "{}", c.message);
        let ready = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .expect("ready");
        assert_eq!(ready.reason, "RestoreFailed");
    }
}
