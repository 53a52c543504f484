//! Backups and restores on the real nodes (DESIGN §3o), against the bed's S3 server
//! (`hack/cluster/up.sh` starts it; `e2e::s3`): 10,000 keys backed up by a `RedisBackup`, wiped,
//! and back with their values in a new Redis restoring from it; in Replication mode the backup
//! is read from a replica (the primary forks nothing) and the restored pod is elected; a
//! schedule of every minute with `keep: 2` leaves two backups and two objects; wrong
//! credentials or an unreachable endpoint fail with the reason, the next schedule retries, and
//! nothing is deleted; a restore whose object is missing never makes a primary.

use std::collections::BTreeMap;
use std::time::Duration;

use api::backup::{BackupPhase, RedisBackup};
use api::{Redis, RedisSpec};
use e2e::node::{self, REDIS_IMAGE};
use e2e::s3::S3Bed;
use e2e::{Context, Error, TestNamespace, seen, wait_for};
use e2e::{conditions, pods, secrets};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(180);
const PORT: u16 = 6379;
const KEYS: usize = 10_000;
const CREDENTIALS: &str = "s3-credentials";

/// The Secret of the bed's S3 credentials (or of a wrong secret key).
async fn credentials(
    ns: &TestNamespace,
    name: &str,
    s3: &S3Bed,
    secret: &str,
) -> Result<(), Error> {
    let data = BTreeMap::from([
        (
            api::backup::ACCESS_KEY_ID_KEY.to_owned(),
            k8s_openapi::ByteString(s3.access_key_id.as_bytes().to_vec()),
        ),
        (
            api::backup::SECRET_ACCESS_KEY_KEY.to_owned(),
            k8s_openapi::ByteString(secret.as_bytes().to_vec()),
        ),
    ]);
    secrets::put_secret(ns, name, None, data).await
}

/// The size of the bed's object `key`, and the SHA-256 recorded beside it.
async fn head(s3: &S3Bed, key: &str) -> Result<(u64, Option<String>), Error> {
    backup::tls::install_provider();
    let settings = backup::s3::S3Settings {
        endpoint: Some(s3.endpoint.clone()),
        region: s3.region.clone(),
        bucket: s3.bucket.clone(),
        access_key_id: Some(s3.access_key_id.clone()),
        secret_access_key: Some(s3.secret_access_key.clone()),
        force_path_style: true,
    };
    let client = backup::s3::S3::new(settings, backup::s3::Purpose::Upload)
        .map_err(|e| Error::process("an S3 client", e.line()))?;
    let size = client
        .size(key)
        .await
        .map_err(|e| Error::process(format!("HEAD {key}"), e.line()))?;
    let sha256 = client
        .checksum(key)
        .await
        .map_err(|e| Error::process(format!("the checksum of {key}"), e.line()))?;
    Ok((size, sha256))
}

/// The keys of the bed's bucket starting with `prefix`.
async fn keys(s3: &S3Bed, prefix: &str) -> Result<Vec<String>, Error> {
    use futures::TryStreamExt;
    use object_store::ObjectStore;
    backup::tls::install_provider();
    let store = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&s3.endpoint)
        .with_allow_http(true)
        .with_region(&s3.region)
        .with_bucket_name(&s3.bucket)
        .with_access_key_id(&s3.access_key_id)
        .with_secret_access_key(&s3.secret_access_key)
        .build()
        .map_err(|e| Error::process("an S3 client", e))?;
    let listed: Vec<object_store::ObjectMeta> = store
        // object_store lists whole path segments: the folder holding `prefix`, then filtered.
        .list(Some(&object_store::path::Path::from(
            prefix.rsplit_once('/').map_or("", |(folder, _)| folder),
        )))
        .try_collect()
        .await
        .map_err(|e| Error::process(format!("listing {prefix}"), e))?;
    Ok(listed
        .into_iter()
        .map(|m| m.location.to_string())
        .filter(|k| k.starts_with(prefix))
        .collect())
}

fn destination(s3: &S3Bed, endpoint: &str, secret: &str) -> serde_json::Value {
    json!({"s3": {
        "endpoint": endpoint,
        "bucket": s3.bucket,
        "prefix": "e2e/",
        "region": s3.region,
        "credentialsSecretRef": {"name": secret},
    }})
}

async fn create_redis(
    ns: &TestNamespace,
    name: &str,
    spec: serde_json::Value,
) -> Result<(), Error> {
    let spec: RedisSpec =
        serde_json::from_value(spec).map_err(|e| Error::process("the test's Redis", e))?;
    ns.api::<Redis>()
        .create(&PostParams::default(), &Redis::new(name, spec))
        .await
        .context(format!("creating Redis {name}"))?;
    Ok(())
}

async fn create_backup(
    ns: &TestNamespace,
    name: &str,
    spec: serde_json::Value,
) -> Result<(), Error> {
    let backup: RedisBackup = serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1",
        "kind": "RedisBackup",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .map_err(|e| Error::process("the test's RedisBackup", e))?;
    ns.api::<RedisBackup>()
        .create(&PostParams::default(), &backup)
        .await
        .context(format!("creating RedisBackup {name}"))?;
    Ok(())
}

/// Waits until the backup finished, and returns it.
async fn wait_finished(ns: &TestNamespace, name: &str) -> Result<RedisBackup, Error> {
    let backups: Api<RedisBackup> = ns.api();
    wait_for(
        &format!("RedisBackup {name} to finish"),
        CONVERGE,
        || async {
            let backup = backups.get(name).await.map_err(seen)?;
            match backup.status.as_ref().and_then(|s| s.phase) {
                Some(phase) if phase.is_finished() => Ok(backup),
                _ => Err(format!("status: {:?}", backup.status)),
            }
        },
    )
    .await
}

fn failure(backup: &RedisBackup) -> (String, String) {
    backup
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .find(|c| c.type_ == "Failed")
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

/// The Ready pod `<name>-0`'s IP.
async fn ready_ip(ns: &TestNamespace, name: &str, count: usize) -> Result<String, Error> {
    wait_for(&format!("{name}: {count} Ready pods"), CONVERGE, || async {
        let pods = pods::of_redis(&ns.api(), name).await?;
        let ready = pods.iter().filter(|p| e2e::pods::is_ready(p)).count();
        if ready != count {
            return Err(pods::describe_all(&pods));
        }
        pods.iter()
            .find(|p| p.name_any() == format!("{name}-0"))
            .and_then(|p| pods::ip(p).map(str::to_owned))
            .ok_or_else(|| pods::describe_all(&pods))
    })
    .await
}

async fn connect(ip: &str) -> Result<redis::aio::MultiplexedConnection, Error> {
    redis::Client::open(format!("redis://{ip}:{PORT}/"))
        .map_err(|e| Error::process("a Redis client", e))?
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| Error::process(format!("connecting to {ip}"), e))
}

fn value_of(i: usize) -> String {
    format!("value-{i}-{}", "x".repeat(i % 50))
}

/// Writes the test's 10,000 keys in pipelines.
async fn write_keys(con: &mut redis::aio::MultiplexedConnection) -> Result<(), Error> {
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for i in chunk {
            pipe.set(format!("key:{i}"), value_of(*i)).ignore();
        }
        pipe.query_async::<()>(con)
            .await
            .map_err(|e| Error::process("writing keys", e))?;
    }
    Ok(())
}

/// The keys of the test missing or changed on `con`.
async fn wrong_keys(con: &mut redis::aio::MultiplexedConnection) -> Result<Vec<String>, Error> {
    let mut wrong = Vec::new();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(1000) {
        let keys: Vec<String> = chunk.iter().map(|i| format!("key:{i}")).collect();
        let values: Vec<Option<String>> = redis::cmd("MGET")
            .arg(&keys)
            .query_async(con)
            .await
            .map_err(|e| Error::process("MGET", e))?;
        for ((i, key), value) in chunk.iter().zip(keys).zip(values) {
            if value.as_deref() != Some(value_of(*i).as_str()) {
                wrong.push(key);
            }
        }
    }
    Ok(wrong)
}

async fn dbsize(con: &mut redis::aio::MultiplexedConnection) -> Result<u64, Error> {
    redis::cmd("DBSIZE")
        .query_async(con)
        .await
        .map_err(|e| Error::process("DBSIZE", e))
}

/// `INFO` field `field` of `ip`'s redis-server.
async fn info_field(ip: &str, section: &str, field: &str) -> Result<String, Error> {
    let mut con = connect(ip).await?;
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(&mut con)
        .await
        .map_err(|e| Error::process("INFO", e))?;
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_owned())
        .ok_or_else(|| Error::process("INFO", format!("no {field} in {section}")))
}

/// A Standalone Redis backed up, wiped, and restored into a new Redis: every key back with its
/// value; the backup's checksum is beside its object; deleting the backup deletes both.
#[tokio::test]
async fn ten_thousand_keys_come_back_after_flushall_and_a_restore() -> Result<(), Error> {
    let s3 = S3Bed::from_bed()?;
    let (_cluster, ns, _operator) = node::setup("backup").await?;
    credentials(&ns, CREDENTIALS, &s3, &s3.secret_access_key).await?;
    let dest = destination(&s3, &s3.endpoint, CREDENTIALS);
    create_redis(
        &ns,
        "source",
        json!({"image": REDIS_IMAGE, "port": PORT, "backup": {"destination": dest}}),
    )
    .await?;
    let ip = ready_ip(&ns, "source", 1).await?;
    let mut con = connect(&ip).await?;
    write_keys(&mut con).await?;

    create_backup(&ns, "before-flush", json!({"redisName": "source"})).await?;
    let backup = wait_finished(&ns, "before-flush").await?;
    let status = backup.status.clone().unwrap_or_default();
    assert_eq!(
        status.phase,
        Some(BackupPhase::Succeeded),
        "{:?}",
        failure(&backup)
    );
    let key = format!("e2e/{}/source/before-flush.rdb", ns.name());
    assert_eq!(
        status.location.as_deref(),
        Some(format!("s3://{}/{key}", s3.bucket).as_str())
    );
    assert_eq!(status.source_pod.as_deref(), Some("source-0"));
    let (size, sha256) = head(&s3, &key).await?;
    assert_eq!(Some(size), status.size.and_then(|s| u64::try_from(s).ok()));
    assert_eq!(sha256, status.sha256, "the checksum stored with the object");
    let reasons = ns.event_reasons(Some(("Redis", "source"))).await?;
    assert!(
        reasons.iter().any(|r| r == "BackupSucceeded"),
        "{reasons:?}"
    );

    redis::cmd("FLUSHALL")
        .query_async::<()>(&mut con)
        .await
        .map_err(|e| Error::process("FLUSHALL", e))?;
    assert_eq!(dbsize(&mut con).await?, 0);

    create_redis(
        &ns,
        "restored",
        json!({"image": REDIS_IMAGE, "port": PORT, "restore": {"backupName": "before-flush"}}),
    )
    .await?;
    let restored_ip = ready_ip(&ns, "restored", 1).await?;
    let mut restored = connect(&restored_ip).await?;
    assert_eq!(wrong_keys(&mut restored).await?, Vec::<String>::new());
    assert_eq!(dbsize(&mut restored).await?, KEYS as u64);
    wait_for("Restored True", CONVERGE, || async {
        match conditions::read_condition(&ns, "restored", "Restored").await? {
            (s, r, _) if s == "True" && r == "Restored" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;

    // The restore is honoured once: the webhook refuses a change.
    let refused = ns
        .api::<Redis>()
        .patch(
            "restored",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"restore": {"backupName": "other"}}})),
        )
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.message.contains("spec.restore")),
        "{refused:?}"
    );

    // Deleting the backup deletes its object (a Job), then the RedisBackup.
    ns.api::<RedisBackup>()
        .delete("before-flush", &DeleteParams::default())
        .await
        .context("deleting the backup")?;
    wait_for("the backup and its object gone", CONVERGE, || async {
        let left = ns
            .api::<RedisBackup>()
            .get_opt("before-flush")
            .await
            .map_err(seen)?;
        let objects = keys(&s3, &key).await.map_err(|e| e.to_string())?;
        if left.is_none() && objects.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "backup: {:?}, objects: {objects:?}",
                left.map(|b| b.status)
            ))
        }
    })
    .await?;
    Ok(())
}

/// Replication mode: the backup streams from a replica (the primary forks nothing), and a
/// Replication Redis restored from it elects the restored pod, whose replicas sync every key.
#[tokio::test]
async fn a_replication_backup_reads_a_replica_and_the_restored_pod_is_elected() -> Result<(), Error>
{
    let s3 = S3Bed::from_bed()?;
    let (_cluster, ns, _operator) = node::setup("backup-repl").await?;
    credentials(&ns, CREDENTIALS, &s3, &s3.secret_access_key).await?;
    let dest = destination(&s3, &s3.endpoint, CREDENTIALS);
    create_redis(
        &ns,
        "shared",
        json!({"replicas": 3, "mode": "Replication", "image": REDIS_IMAGE, "port": PORT, "backup": {"destination": dest}}),
    )
    .await?;
    let primary = conditions::wait_replicating(&ns, "shared", 3, CONVERGE, None).await?;
    let pods = pods::of_redis(&ns.api(), "shared").await?;
    let primary_ip = pods
        .iter()
        .find(|p| p.name_any() == primary)
        .and_then(|p| pods::ip(p).map(str::to_owned))
        .ok_or_else(|| Error::process("the primary", "no IP"))?;
    let mut con = connect(&primary_ip).await?;
    write_keys(&mut con).await?;
    redis::cmd("WAIT")
        .arg(2)
        .arg(5000)
        .query_async::<i64>(&mut con)
        .await
        .map_err(|e| Error::process("WAIT", e))?;
    let forks = info_field(&primary_ip, "stats", "total_forks").await?;
    let saved = info_field(&primary_ip, "persistence", "rdb_last_bgsave_time_sec").await?;

    create_backup(&ns, "from-replica", json!({"redisName": "shared"})).await?;
    let backup = wait_finished(&ns, "from-replica").await?;
    let status = backup.status.clone().unwrap_or_default();
    assert_eq!(
        status.phase,
        Some(BackupPhase::Succeeded),
        "{:?}",
        failure(&backup)
    );
    let source = status.source_pod.clone().unwrap_or_default();
    assert!(
        source.starts_with("shared-") && source != primary,
        "read from {source}, primary {primary}"
    );
    assert_eq!(
        info_field(&primary_ip, "stats", "total_forks").await?,
        forks,
        "the primary forked"
    );
    assert_eq!(
        info_field(&primary_ip, "persistence", "rdb_last_bgsave_time_sec").await?,
        saved
    );

    create_redis(
        &ns,
        "again",
        json!({"replicas": 3, "mode": "Replication", "image": REDIS_IMAGE, "port": PORT, "restore": {"backupName": "from-replica"}}),
    )
    .await?;
    let elected = conditions::wait_replicating(&ns, "again", 3, CONVERGE, None).await?;
    assert_eq!(elected, "again-0", "the restored pod is the first primary");
    for pod in pods::of_redis(&ns.api(), "again").await? {
        let ip = pods::ip(&pod).unwrap_or_default().to_owned();
        let con = connect(&ip).await?;
        wait_for(
            &format!("every key on {}", pod.name_any()),
            CONVERGE,
            || {
                let mut con = con.clone();
                async move {
                    let wrong = wrong_keys(&mut con).await.map_err(|e| e.to_string())?;
                    if wrong.is_empty() {
                        Ok(())
                    } else {
                        Err(format!("{} keys wrong", wrong.len()))
                    }
                }
            },
        )
        .await?;
    }
    Ok(())
}

/// A schedule of every minute with `keep: 2` leaves two scheduled backups and two objects; a
/// backup by hand is never deleted by it.
#[tokio::test]
async fn a_schedule_of_every_minute_keeps_two_backups_and_two_objects() -> Result<(), Error> {
    let s3 = S3Bed::from_bed()?;
    let (_cluster, ns, _operator) = node::setup("backup-cron").await?;
    credentials(&ns, CREDENTIALS, &s3, &s3.secret_access_key).await?;
    let dest = destination(&s3, &s3.endpoint, CREDENTIALS);
    create_redis(
        &ns,
        "cron",
        json!({"image": REDIS_IMAGE, "port": PORT, "backup": {"destination": dest, "schedule": "* * * * *", "keep": 2}}),
    )
    .await?;
    let ip = ready_ip(&ns, "cron", 1).await?;
    let mut con = connect(&ip).await?;
    write_keys(&mut con).await?;
    create_backup(&ns, "by-hand", json!({"redisName": "cron"})).await?;
    let prefix = format!("e2e/{}/cron/", ns.name());
    // Three scheduled backups at least (so one was pruned), two left, two objects.
    let backups: Api<RedisBackup> = ns.api();
    let seen_names = std::sync::Mutex::new(std::collections::BTreeSet::new());
    wait_for(
        "two scheduled backups left after a third",
        Duration::from_secs(300),
        || async {
            let list = backups.list(&Default::default()).await.map_err(seen)?.items;
            let scheduled: Vec<&RedisBackup> = list
                .iter()
                .filter(|b| {
                    b.labels()
                        .get(api::backup::SCHEDULED_LABEL)
                        .map(String::as_str)
                        == Some("true")
                })
                .collect();
            let succeeded: Vec<String> = scheduled
                .iter()
                .filter(|b| b.status.as_ref().and_then(|s| s.phase) == Some(BackupPhase::Succeeded))
                .map(|b| b.name_any())
                .collect();
            let seen_names = {
                let mut names = seen_names.lock().map_err(|e| e.to_string())?;
                names.extend(scheduled.iter().map(|b| b.name_any()));
                names.clone()
            };
            let objects = keys(&s3, &prefix).await.map_err(|e| e.to_string())?;
            let scheduled_objects: Vec<&String> = objects
                .iter()
                .filter(|k| k.ends_with(".rdb") && !k.ends_with("/by-hand.rdb"))
                .collect();
            // Each backup's object has its checksum beside it, and nothing else is left.
            let with_checksums = objects.len() == 2 * (scheduled_objects.len() + 1)
                && scheduled_objects
                    .iter()
                    .all(|k| objects.contains(&format!("{k}.sha256")));
            if seen_names.len() >= 3
                && scheduled.len() == 2
                && succeeded.len() == 2
                && scheduled_objects.len() == 2
                && with_checksums
            {
                Ok(())
            } else {
                Err(format!(
                    "seen {seen_names:?}, now {:?}, succeeded {succeeded:?}, objects {objects:?}",
                    scheduled.iter().map(|b| b.name_any()).collect::<Vec<_>>()
                ))
            }
        },
    )
    .await?;
    let by_hand = backups.get("by-hand").await.context("the backup by hand")?;
    assert_eq!(
        by_hand.status.and_then(|s| s.phase),
        Some(BackupPhase::Succeeded)
    );
    let by_hand_key = format!("{prefix}by-hand.rdb");
    assert_eq!(
        keys(&s3, &by_hand_key).await?,
        [by_hand_key.clone(), format!("{by_hand_key}.sha256")]
    );
    Ok(())
}

/// Wrong credentials: each scheduled backup Fails with S3Denied, the next schedule tries again,
/// the good backup and its object stay; once the Secret is right a scheduled backup succeeds. An
/// unreachable endpoint Fails with its reason too.
#[tokio::test]
async fn wrong_credentials_or_no_endpoint_fail_with_the_reason_and_delete_nothing()
-> Result<(), Error> {
    let s3 = S3Bed::from_bed()?;
    let (_cluster, ns, _operator) = node::setup("backup-fail").await?;
    credentials(&ns, CREDENTIALS, &s3, &s3.secret_access_key).await?;
    credentials(&ns, "wrong", &s3, "not-the-secret-key").await?;
    create_redis(
        &ns,
        "flaky",
        json!({"image": REDIS_IMAGE, "port": PORT, "backup": {
            "destination": destination(&s3, &s3.endpoint, "wrong"),
            "schedule": "* * * * *", "keep": 1}}),
    )
    .await?;
    let ip = ready_ip(&ns, "flaky", 1).await?;
    write_keys(&mut connect(&ip).await?).await?;
    create_backup(
        &ns,
        "good",
        json!({"redisName": "flaky", "destination": destination(&s3, &s3.endpoint, CREDENTIALS)}),
    )
    .await?;
    let good = wait_finished(&ns, "good").await?;
    assert_eq!(
        good.status.as_ref().and_then(|s| s.phase),
        Some(BackupPhase::Succeeded),
        "{:?}",
        failure(&good)
    );
    let good_key = format!("e2e/{}/flaky/good.rdb", ns.name());

    // No endpoint there.
    create_backup(&ns, "nowhere", json!({"redisName": "flaky", "destination": destination(&s3, "http://10.88.0.1:1", CREDENTIALS)})).await?;
    let nowhere = wait_finished(&ns, "nowhere").await?;
    assert_eq!(
        nowhere.status.as_ref().and_then(|s| s.phase),
        Some(BackupPhase::Failed)
    );
    assert_eq!(
        failure(&nowhere).0,
        "S3Unreachable",
        "{:?}",
        failure(&nowhere)
    );

    // Two scheduled failures: retried by the schedule, said with the reason.
    let backups: Api<RedisBackup> = ns.api();
    wait_for(
        "two scheduled backups Failed with S3Denied",
        Duration::from_secs(240),
        || async {
            let list = backups.list(&Default::default()).await.map_err(seen)?.items;
            let denied = list
                .iter()
                .filter(|b| b.labels().get(api::backup::SCHEDULED_LABEL).is_some())
                .filter(|b| b.status.as_ref().and_then(|s| s.phase) == Some(BackupPhase::Failed))
                .filter(|b| failure(b).0 == "S3Denied")
                .count();
            if denied >= 2 {
                Ok(())
            } else {
                Err(format!(
                    "{denied} denied; {:?}",
                    list.iter()
                        .map(|b| (
                            b.name_any(),
                            b.status.as_ref().and_then(|s| s.phase),
                            failure(b)
                        ))
                        .collect::<Vec<_>>()
                ))
            }
        },
    )
    .await?;
    assert!(
        backups.get_opt("good").await.context("good")?.is_some(),
        "a failing schedule deleted a good backup"
    );
    assert_eq!(
        keys(&s3, &good_key).await?,
        [good_key.clone(), format!("{good_key}.sha256")],
        "the good backup's object and its checksum"
    );

    // The Secret fixed: the next scheduled backup succeeds.
    credentials(&ns, "wrong", &s3, &s3.secret_access_key).await?;
    wait_for(
        "a scheduled backup Succeeded",
        Duration::from_secs(180),
        || async {
            let list = backups.list(&Default::default()).await.map_err(seen)?.items;
            list.iter()
                .filter(|b| b.labels().get(api::backup::SCHEDULED_LABEL).is_some())
                .find(|b| b.status.as_ref().and_then(|s| s.phase) == Some(BackupPhase::Succeeded))
                .map(|_| ())
                .ok_or_else(|| "none yet".to_owned())
        },
    )
    .await?;
    assert!(backups.get_opt("good").await.context("good")?.is_some());
    Ok(())
}

/// Another's Job named like a backup's (`<backup>-backup`, here suspended, as anyone in the
/// namespace may create it) is never adopted or deleted: the backup waits with reason
/// NameConflict naming it, and deleting the backup leaves the Job in place (issue #40.3).
#[tokio::test]
async fn a_foreign_job_named_like_a_backup_s_survives_the_backup() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("backup-foreign-job").await?;
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = ns.api();
    let foreign: k8s_openapi::api::batch::v1::Job = serde_json::from_value(json!({
        "metadata": {"name": "nightly-backup"},
        "spec": {"suspend": true, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "work", "image": REDIS_IMAGE, "command": ["true"],
                "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true,
                    "runAsUser": 999, "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"}}}]
        }}}
    }))
    .map_err(|e| Error::process("the foreign Job", e))?;
    let foreign = jobs
        .create(&PostParams::default(), &foreign)
        .await
        .context("creating the foreign Job")?;
    create_backup(
        &ns,
        "nightly",
        json!({"redisName": "absent", "destination": {"s3": {
            "endpoint": "http://10.88.0.1:1", "bucket": "backups", "region": "us-east-1",
            "credentialsSecretRef": {"name": CREDENTIALS}}}}),
    )
    .await?;
    let backups: Api<RedisBackup> = ns.api();
    wait_for(
        "RedisBackup nightly waiting with NameConflict",
        CONVERGE,
        || async {
            let backup = backups.get("nightly").await.map_err(seen)?;
            let conditions = backup.status.iter().flat_map(|s| s.conditions.iter());
            let conflict = conditions.clone().any(|c| {
                c.reason == "NameConflict"
                    && c.message.contains("Job nightly-backup already exists")
            });
            if conflict {
                Ok(())
            } else {
                Err(format!("status: {:?}", backup.status))
            }
        },
    )
    .await?;
    backups
        .delete("nightly", &DeleteParams::default())
        .await
        .context("deleting RedisBackup nightly")?;
    wait_for("RedisBackup nightly gone", CONVERGE, || async {
        match backups.get_opt("nightly").await.map_err(seen)? {
            None => Ok(()),
            Some(b) => Err(format!("still there: {:?}", b.status)),
        }
    })
    .await?;
    let left = jobs
        .get_opt("nightly-backup")
        .await
        .context("reading the foreign Job")?;
    assert_eq!(
        left.and_then(|j| j.metadata.uid),
        foreign.metadata.uid,
        "the foreign Job was deleted with the RedisBackup"
    );
    Ok(())
}

/// A restore whose object does not exist: the restored pod never starts redis-server, the
/// Redis says why (not Ready, Restored False), and no pod is made primary.
#[tokio::test]
async fn a_failed_download_leaves_the_redis_not_ready_and_elects_no_empty_primary()
-> Result<(), Error> {
    let s3 = S3Bed::from_bed()?;
    let (_cluster, ns, _operator) = node::setup("backup-missing").await?;
    credentials(&ns, CREDENTIALS, &s3, &s3.secret_access_key).await?;
    let location = format!("s3://{}/e2e/{}/nothing/here.rdb", s3.bucket, ns.name());
    create_redis(
        &ns,
        "hopeful",
        json!({"replicas": 2, "mode": "Replication", "image": REDIS_IMAGE, "port": PORT,
               "backup": {"destination": destination(&s3, &s3.endpoint, CREDENTIALS)},
               "restore": {"location": location}}),
    )
    .await?;
    let (status, reason, message) = wait_for("Restored False RestoreFailed", CONVERGE, || async {
        match conditions::read_condition(&ns, "hopeful", "Restored").await? {
            c if c.1 == "RestoreFailed" => Ok(c),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "RestoreFailed")
    );
    assert!(message.contains("S3NotFound"), "{message}");
    let (ready, ready_reason, _) = conditions::read_condition(&ns, "hopeful", "Ready")
        .await
        .map_err(|e| Error::process("Ready", e))?;
    assert_eq!(
        (ready.as_str(), ready_reason.as_str()),
        ("False", "RestoreFailed")
    );
    // The other pod runs, fenced and empty: never elected.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let redis = ns
        .api::<Redis>()
        .get("hopeful")
        .await
        .context("the Redis")?;
    assert_eq!(
        redis.status.and_then(|s| s.primary),
        None,
        "an empty pod was elected"
    );
    Ok(())
}
