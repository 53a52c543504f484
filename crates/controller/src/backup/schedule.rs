//! `spec.backup.schedule` and `keep` (DESIGN §3o), pure: which scheduled backup is due, its
//! name, and which older ones go.
//!
//! A scheduled backup is a `RedisBackup` named after its Redis and the minute it was due
//! (`<redis>-<yyyymmddhhmm>`), so creating it twice is one object: a restarted or new leader
//! creates nothing already created. Only the latest due time is taken, and only within
//! [`STARTING_DEADLINE`] of it: a controller that was away longer skips what it missed (as a
//! CronJob with `startingDeadlineSeconds`), rather than taking a burst of backups.

use api::backup::BackupPhase;
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{Timestamp, ToSpan};
use std::time::Duration;

/// How late a due backup may still be started.
pub const STARTING_DEADLINE: Duration = Duration::from_secs(300);
/// How many failed scheduled backups are kept (their reasons stay readable); older ones go.
pub const KEEP_FAILED: usize = 3;
/// Longest name of a `RedisBackup` (an object name).
const MAX_NAME: usize = 253;

/// The latest time `schedule` was due, at or before `now`, after `since` (the Redis's
/// creation) and within [`STARTING_DEADLINE`]; `None` when there is none to take now.
pub fn due(schedule: &croner::Cron, since: Timestamp, now: Timestamp) -> Option<Timestamp> {
    let zoned = now.to_zoned(TimeZone::UTC);
    let latest = schedule
        .find_previous_occurrence(&zoned, true)
        .ok()?
        .timestamp();
    let deadline = i64::try_from(STARTING_DEADLINE.as_secs()).unwrap_or(i64::MAX);
    let late = now.duration_since(latest).as_secs();
    (latest >= since && late <= deadline).then_some(latest)
}

/// The next time `schedule` is due after `now` (when to look again).
pub fn next(schedule: &croner::Cron, now: Timestamp) -> Option<Timestamp> {
    let zoned = now.to_zoned(TimeZone::UTC);
    schedule
        .find_next_occurrence(&zoned, false)
        .ok()
        .map(|z| z.timestamp())
}

/// The name of `redis`'s backup due at `at`: `<redis>-<yyyymmddhhmm>` (UTC).
pub fn backup_name(redis: &str, at: Timestamp) -> String {
    let stamp = at
        .to_zoned(TimeZone::UTC)
        .strftime("%Y%m%d%H%M")
        .to_string();
    let room = MAX_NAME - stamp.len() - 1;
    format!("{}-{stamp}", &redis[..room.min(redis.len())])
}

/// One scheduled backup of a Redis, as the pruning reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    pub name: String,
    /// Its creation time (names sort the same way, but a clock is clearer).
    pub created: Timestamp,
    pub phase: BackupPhase,
}

/// The scheduled backups to delete: the Succeeded ones beyond the `keep` newest, and the Failed
/// ones beyond the [`KEEP_FAILED`] newest. Pending and Running ones are never deleted; nor is a
/// Succeeded one while fewer than `keep` newer ones succeeded (a failing schedule deletes no
/// good backup).
pub fn to_prune(backups: &[Scheduled], keep: usize) -> Vec<String> {
    let mut newest_first: Vec<&Scheduled> = backups.iter().collect();
    newest_first.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.name.cmp(&a.name)));
    let of = |phase: BackupPhase, kept: usize| {
        newest_first
            .iter()
            .filter(move |b| b.phase == phase)
            .skip(kept)
            .map(|b| b.name.clone())
    };
    of(BackupPhase::Succeeded, keep)
        .chain(of(BackupPhase::Failed, KEEP_FAILED))
        .collect()
}

/// `at` plus a second: a minute's schedule is due again no sooner.
pub fn after(at: Timestamp) -> Timestamp {
    at.checked_add(1.second()).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn every(s: &str) -> croner::Cron {
        api::backup::parse_schedule(s).expect("schedule")
    }

    #[test]
    fn the_latest_due_time_is_taken_once_late_and_never_before_the_redis() {
        let nightly = every("0 3 * * *");
        let created = at("2026-12-01T00:00:00Z");
        assert_eq!(
            due(&nightly, created, at("2026-12-05T03:00:00Z")),
            Some(at("2026-12-05T03:00:00Z"))
        );
        assert_eq!(
            due(&nightly, created, at("2026-12-05T03:04:00Z")),
            Some(at("2026-12-05T03:00:00Z"))
        );
        // Too late: skipped until the next night.
        assert_eq!(due(&nightly, created, at("2026-12-05T03:06:00Z")), None);
        // Not before the Redis existed.
        assert_eq!(
            due(
                &nightly,
                at("2026-12-05T03:01:00Z"),
                at("2026-12-05T03:02:00Z")
            ),
            None
        );
        assert_eq!(
            next(&nightly, at("2026-12-05T03:00:00Z")),
            Some(at("2026-12-06T03:00:00Z"))
        );
    }

    #[test]
    fn names_carry_the_due_minute_and_fit() {
        assert_eq!(
            backup_name("cache", at("2026-12-05T03:00:59Z")),
            "cache-202612050300"
        );
        assert!(backup_name(&"r".repeat(253), at("2026-12-05T03:00:00Z")).len() <= 253);
    }

    #[test]
    fn pruning_keeps_the_newest_successes_and_some_failures_never_running_ones() {
        let b = |name: &str, minute: u32, phase| Scheduled {
            name: name.to_owned(),
            created: at(&format!("2026-12-05T03:{minute:02}:00Z")),
            phase,
        };
        use BackupPhase::*;
        let backups = vec![
            b("s1", 1, Succeeded),
            b("s2", 2, Succeeded),
            b("f3", 3, Failed),
            b("s4", 4, Succeeded),
            b("f5", 5, Failed),
            b("f6", 6, Failed),
            b("f7", 7, Failed),
            b("r8", 8, Running),
        ];
        assert_eq!(to_prune(&backups, 2), vec!["s1", "f3"]);
        // A schedule failing ever since deletes no good backup.
        let failing = vec![
            b("s1", 1, Succeeded),
            b("f2", 2, Failed),
            b("f3", 3, Failed),
        ];
        assert!(to_prune(&failing, 2).is_empty());
    }
}
