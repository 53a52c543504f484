//! The decisions of a backup (DESIGN §3o), pure: which pod it reads, what its Job says, and the
//! status that amounts to.

use crate::cached::CachedPod;
use api::backup::{BackupPhase, RedisBackupStatus};
use api::pods::{ROLE_PRIMARY, ROLE_REPLICA};
use api::{Mode, Redis};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use std::sync::Arc;

/// The most of a termination message read (the kubelet keeps 4 KiB of it).
const MAX_MESSAGE_BYTES: usize = 4096;

/// The pod to read: a linked replica in Replication mode (the one least behind, by the Redis's
/// status), the primary only when the Redis has no replica at all; the first Ready pod in
/// Standalone mode. `Err` says what is awaited.
pub fn choose_source<'a>(
    redis: &Redis,
    pods: &'a [Arc<CachedPod>],
) -> Result<(&'a str, &'a str), String> {
    let name = redis.metadata.name.as_deref().unwrap_or_default();
    let usable = |p: &&'a Arc<CachedPod>| {
        p.ready && p.metadata.deletion_timestamp.is_none() && p.ip.is_some()
    };
    let with_ip = |p: &'a Arc<CachedPod>| Some((p.metadata.name.as_deref()?, p.ip.as_deref()?));
    let by_ordinal = |p: &Arc<CachedPod>| {
        api::pods::ordinal(name, p.metadata.name.as_deref().unwrap_or_default()).unwrap_or(u32::MAX)
    };
    if redis.spec.mode() != Mode::Replication {
        return pods
            .iter()
            .filter(usable)
            .min_by_key(|p| by_ordinal(p))
            .and_then(&with_ip)
            .ok_or_else(|| format!("no pod of Redis {name} is Ready"));
    }
    let members = redis
        .status
        .as_ref()
        .map(|s| s.members.as_slice())
        .unwrap_or_default();
    let lag = |p: &Arc<CachedPod>| {
        members
            .iter()
            .find(|m| Some(m.name.as_str()) == p.metadata.name.as_deref() && m.role == ROLE_REPLICA)
            .and_then(|m| m.lag)
    };
    let replica = pods
        .iter()
        .filter(usable)
        .filter(|p| p.role.as_deref() == Some(ROLE_REPLICA))
        .filter_map(|p| lag(p).map(|lag| (lag, by_ordinal(p), p)))
        .min_by_key(|(lag, ordinal, _)| (*lag, *ordinal))
        .and_then(|(_, _, p)| with_ip(p));
    if let Some(source) = replica {
        return Ok(source);
    }
    if redis.spec.replicas() <= 1 {
        return pods
            .iter()
            .filter(usable)
            .find(|p| p.role.as_deref() == Some(ROLE_PRIMARY))
            .and_then(with_ip)
            .ok_or_else(|| format!("Redis {name} has no Ready primary"));
    }
    Err(format!(
        "no replica of Redis {name} is Ready and linked to its primary (a backup is read from a replica, never loading the primary)"
    ))
}

/// Where a Job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Running,
    Succeeded,
    Failed,
}

/// The Job found under one of a backup's Job names: the backup's own (its controller owner
/// reference carries the backup's uid), or another's, which is never adopted, read or deleted
/// (issue #40.3: any tenant can create a Job named `<backup>-backup`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundJob {
    Own(JobState),
    /// Who controls it, as the user is told (`k8s::controller_of`).
    Foreign(String),
}

/// Whose `job` is, for the backup of uid `backup_uid`, and where it stands if it is the
/// backup's.
pub fn found_job(job: &Job, backup_uid: &str) -> FoundJob {
    if crate::k8s::controlled_by(job, backup_uid) {
        FoundJob::Own(job_state(job))
    } else {
        FoundJob::Foreign(crate::k8s::controller_of(job))
    }
}

/// The Waiting condition's reason, and the Warning Event's, while another's Job holds a backup's
/// Job name.
pub const NAME_CONFLICT: &str = "NameConflict";

/// The condition's message, and the Warning's, while another's Job holds a backup's Job name.
pub fn job_conflict(name: &str, holder: &str) -> String {
    format!(
        "Job {name} already exists and is not controlled by this backup ({holder}); it was left as it is: delete or rename it, or give the backup another name"
    )
}

/// The state of `job` from its status.
pub fn job_state(job: &Job) -> JobState {
    let status = job.status.as_ref();
    if status.and_then(|s| s.succeeded).unwrap_or(0) > 0 {
        return JobState::Succeeded;
    }
    let failed = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Failed" && c.status == "True"));
    if failed {
        JobState::Failed
    } else {
        JobState::Running
    }
}

/// Why a Job failed, from its Failed condition (deadline, backoff limit).
pub fn job_failure(job: &Job) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Failed" && c.status == "True")
        .map(|c| {
            (
                c.reason.clone().unwrap_or_else(|| "JobFailed".to_owned()),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// What `redis-backup backup` reports on success (its termination message).
pub use api::backup_run::BackupResult;

/// The result in a termination message: its last line that is one (the message may be the
/// log's tail).
pub fn parse_result(message: &str) -> Option<BackupResult> {
    bounded(message)
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<BackupResult>(line.trim()).ok())
        .filter(|r| is_sha256_hex(&r.sha256))
}

/// Lower-case hex of 32 bytes, as `redis-backup` writes a SHA-256 (and takes it as
/// `--expected-sha256`).
pub fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A failure in a termination message, `Reason: what happened` as `redis-backup` writes it:
/// the reason word (letters and digits only, else `BackupFailed`) and the text, bounded.
pub fn parse_failure(message: &str) -> (String, String) {
    let text = bounded(message).trim();
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    let (reason, rest) = match api::backup_run::split_failure(line) {
        Some((word, rest)) => (word.to_owned(), rest),
        None => ("BackupFailed".to_owned(), line),
    };
    let message = if rest.is_empty() {
        "the backup pod said nothing (see its log)".to_owned()
    } else {
        api::validation::shown(rest)
    };
    (reason, message)
}

fn bounded(message: &str) -> &str {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut start = message.len() - MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(start) {
        start += 1;
    }
    &message[start..]
}

/// The status of a backup that `phase`d now, from the stored one: every field kept, the phase
/// set, and for a finished one its completion time and `Complete`/`Failed` condition.
pub fn finished(
    stored: &RedisBackupStatus,
    phase: BackupPhase,
    reason: &str,
    message: String,
    now: Time,
) -> RedisBackupStatus {
    let mut status = stored.clone();
    status.phase = Some(phase);
    status.completion_time = Some(now.clone());
    let type_ = if phase == BackupPhase::Succeeded {
        "Complete"
    } else {
        "Failed"
    };
    status.conditions = vec![Condition {
        type_: type_.to_owned(),
        status: "True".to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation: None,
        last_transition_time: now,
    }];
    status
}

/// The status of a backup not started yet because of `reason` (a `Waiting` condition).
pub fn pending(
    stored: &RedisBackupStatus,
    reason: &str,
    message: String,
    now: Time,
) -> RedisBackupStatus {
    let mut status = stored.clone();
    status.phase = Some(BackupPhase::Pending);
    let kept = stored
        .conditions
        .iter()
        .find(|c| c.type_ == "Waiting" && c.reason == reason)
        .map_or(now, |c| c.last_transition_time.clone());
    status.conditions = vec![Condition {
        type_: "Waiting".to_owned(),
        status: "True".to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation: None,
        last_transition_time: kept,
    }];
    status
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_job_is_the_backup_s_only_by_its_controller_reference() {
        let job = |owners: serde_json::Value| -> Job {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "b-backup", "ownerReferences": owners},
                "status": {"succeeded": 1}
            }))
            .expect("job")
        };
        let reference = |uid: &str, controller: bool| {
            serde_json::json!({"apiVersion": "myapp.tangx.in/v1", "kind": "RedisBackup",
                "name": "b", "uid": uid, "controller": controller})
        };
        assert_eq!(
            found_job(&job(serde_json::json!([reference("u1", true)])), "u1"),
            FoundJob::Own(JobState::Succeeded)
        );
        // Someone's own Job of that name; one naming the backup without being controlled by
        // it; one of an earlier backup of the same name.
        assert_eq!(
            found_job(&job(serde_json::json!([])), "u1"),
            FoundJob::Foreign("no controller".to_owned())
        );
        assert!(matches!(
            found_job(&job(serde_json::json!([reference("u1", false)])), "u1"),
            FoundJob::Foreign(_)
        ));
        assert_eq!(
            found_job(&job(serde_json::json!([reference("u0", true)])), "u1"),
            FoundJob::Foreign("controller RedisBackup b (uid u0)".to_owned())
        );
    }

    use super::*;
    use api::MemberStatus;
    use serde_json::json;

    fn pod(name: &str, role: Option<&str>, ready: bool) -> Arc<CachedPod> {
        Arc::new(CachedPod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            role: role.map(str::to_owned),
            ready,
            ip: Some(format!("10.0.0.{}", name.len())),
            ..CachedPod::default()
        })
    }

    fn redis(spec: serde_json::Value, members: &[(&str, &str, Option<i64>)]) -> Redis {
        let mut r = Redis::new("cache", serde_json::from_value(spec).expect("spec"));
        r.status = Some(api::RedisStatus {
            members: members
                .iter()
                .map(|(name, role, lag)| MemberStatus {
                    name: (*name).to_owned(),
                    role: (*role).to_owned(),
                    lag: *lag,
                })
                .collect(),
            ..Default::default()
        });
        r
    }

    #[test]
    fn a_replication_backup_reads_the_replica_least_behind_never_the_primary() {
        let pods = vec![
            pod("cache-0", Some(ROLE_PRIMARY), true),
            pod("cache-1", Some(ROLE_REPLICA), true),
            pod("cache-2", Some(ROLE_REPLICA), true),
        ];
        let r = redis(
            json!({"mode": "Replication", "replicas": 3}),
            &[
                ("cache-0", "primary", None),
                ("cache-1", "replica", Some(900)),
                ("cache-2", "replica", Some(0)),
            ],
        );
        assert_eq!(choose_source(&r, &pods).map(|s| s.0), Ok("cache-2"));
        // No replica linked (lag unknown) or Ready: wait, do not load the primary.
        let r = redis(
            json!({"mode": "Replication", "replicas": 3}),
            &[("cache-0", "primary", None), ("cache-1", "replica", None)],
        );
        let waiting = choose_source(&r, &pods[..2]).expect_err("waits");
        assert!(waiting.contains("no replica"), "{waiting}");
        // A Replication Redis of one pod has only its primary to read.
        let r = redis(
            json!({"mode": "Replication", "replicas": 1}),
            &[("cache-0", "primary", None)],
        );
        assert_eq!(choose_source(&r, &pods[..1]).map(|s| s.0), Ok("cache-0"));
    }

    #[test]
    fn a_standalone_backup_reads_the_first_ready_pod() {
        let pods = vec![pod("cache-1", None, true), pod("cache-0", None, false)];
        let r = redis(json!({"replicas": 2}), &[]);
        assert_eq!(choose_source(&r, &pods).map(|s| s.0), Ok("cache-1"));
        assert!(choose_source(&r, &pods[1..]).is_err());
    }

    #[test]
    fn results_and_failures_are_read_from_the_termination_message() {
        let sha = "a".repeat(64);
        let message = format!(
            "some log line\n{{\"location\":\"s3://b/k.rdb\",\"size\":42,\"sha256\":\"{sha}\",\"replicationOffset\":7,\"replid\":\"x\"}}\n"
        );
        assert_eq!(
            parse_result(&message),
            Some(BackupResult {
                location: "s3://b/k.rdb".to_owned(),
                size: 42,
                sha256: sha,
                replication_offset: Some(7),
                replid: "x".to_owned(),
            })
        );
        assert_eq!(
            parse_result("{\"location\":\"x\",\"size\":1,\"sha256\":\"zz\"}"),
            None
        );
        assert_eq!(
            parse_failure("S3Denied: the bucket refused the credentials (403)\n"),
            (
                "S3Denied".to_owned(),
                "the bucket refused the credentials (403)".to_owned()
            )
        );
        let (reason, text) = parse_failure("panic at the disco: \u{7}x");
        assert_eq!(reason, "BackupFailed");
        assert!(!text.contains('\u{7}'), "{text:?}");
        let (_, huge) = parse_failure(&"y".repeat(100_000));
        assert!(huge.len() < 5000);
    }
}
