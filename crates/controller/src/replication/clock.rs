//! How long a Redis's labelled primary has been unhealthy (DESIGN §3b rule 4: failover after
//! `failoverAfter`). Counted, as Sentinel counts `down-after-milliseconds`, from the last pass
//! that read it healthy, not from the first that found it not: that first read is the one that
//! waited out a timeout, and counting from its end would add the timeout and a poll interval to
//! every failover. A last healthy read older than [`LAST_HEALTHY_COUNTS_WITHIN`] (the controller
//! was starved, the API server paused, leadership just taken) does not count: the clock then
//! starts at the first unhealthy read. In memory: a new leader starts the clock again, which
//! only delays a failover.

use crate::k8s::by_redis::ByRedis;
use std::time::{Duration, Instant};

/// The longest gap between a healthy read and the next unhealthy one for the clock to start at
/// the healthy read: passes come every [`super::POLL`] at rest, and the unhealthy read may wait
/// out a 2 s response timeout.
pub const LAST_HEALTHY_COUNTS_WITHIN: Duration = Duration::from_secs(6);

/// The shortest wait for a primary already found unhealthy: as long as the operator's `AUTH`
/// handshake may take with auth on, so no stricter than a read of a Redis with auth.
pub const MIN_READ_BUDGET: Duration = Duration::from_secs(1);

/// What a pass saw of the labelled primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrimarySeen<'a> {
    /// Ready and answering as the primary.
    Healthy(&'a str),
    /// Labelled but unhealthy; `""` when no pod carries the label.
    Unhealthy(&'a str),
}

#[derive(Debug, Clone)]
struct Clock {
    pod: String,
    /// When a pass last read it healthy.
    healthy_at: Option<Instant>,
    /// From when it counts as unhealthy.
    unhealthy_since: Option<Instant>,
}

/// The clocks, by Redis uid.
#[derive(Default)]
pub struct FailoverClocks {
    by_redis: ByRedis<Clock>,
}

impl FailoverClocks {
    /// How long the labelled primary of Redis `uid` has been unhealthy as of `now`; `None`
    /// while it is healthy.
    pub fn unhealthy_for(
        &self,
        uid: &str,
        seen: PrimarySeen<'_>,
        now: Instant,
    ) -> Option<Duration> {
        let mut map = self.by_redis.lock();
        let pod = match seen {
            PrimarySeen::Healthy(pod) => {
                map.insert(
                    uid.to_owned(),
                    Clock {
                        pod: pod.to_owned(),
                        healthy_at: Some(now),
                        unhealthy_since: None,
                    },
                );
                return None;
            }
            PrimarySeen::Unhealthy(pod) => pod,
        };
        let since = match map.get(uid) {
            Some(clock) if clock.pod == pod => match (clock.unhealthy_since, clock.healthy_at) {
                (Some(since), _) => since,
                (None, Some(healthy))
                    if now.saturating_duration_since(healthy) <= LAST_HEALTHY_COUNTS_WITHIN =>
                {
                    healthy
                }
                (None, _) => now,
            },
            _ => now,
        };
        map.insert(
            uid.to_owned(),
            Clock {
                pod: pod.to_owned(),
                healthy_at: None,
                unhealthy_since: Some(since),
            },
        );
        Some(now.saturating_duration_since(since))
    }

    /// How long a pass may wait for pod `pod` of Redis `uid` to answer when the last pass found
    /// it, the labelled primary, unhealthy: the time left before its failover is due, at least
    /// [`MIN_READ_BUDGET`]. `None` (the usual timeouts) for any other pod. Without it, a
    /// primary that accepts connections but never answers (frozen) makes the pass where the
    /// failover falls due wait out the full response timeout first.
    pub fn read_budget(
        &self,
        uid: &str,
        pod: &str,
        failover_after: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let map = self.by_redis.lock();
        let clock = map.get(uid).filter(|c| c.pod == pod)?;
        let since = clock.unhealthy_since?;
        let left = failover_after.saturating_sub(now.saturating_duration_since(since));
        Some(left.max(MIN_READ_BUDGET))
    }

    /// Forgets a Redis.
    pub fn forget(&self, uid: &str) {
        self.by_redis.forget(uid);
    }

    /// Forgets every Redis that `exists` says is gone.
    pub fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.by_redis.keep_only(exists);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_clock_runs_from_the_last_healthy_read() {
        let clocks = FailoverClocks::default();
        let t0 = Instant::now();
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Healthy("r-0"), t0),
            None
        );
        // The next pass waited out a 2 s timeout on it: 3.2 s since it was last seen healthy.
        let first = t0 + S * 32 / 10;
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Unhealthy("r-0"), first),
            Some(S * 32 / 10)
        );
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Unhealthy("r-0"), t0 + S * 6),
            Some(S * 6)
        );
        // Healthy again: the clock stops; unhealthy later, it runs from that healthy read.
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Healthy("r-0"), t0 + S * 7),
            None
        );
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Unhealthy("r-0"), t0 + S * 9),
            Some(S * 2)
        );
    }

    #[test]
    fn a_primary_found_unhealthy_is_waited_for_only_until_its_failover_is_due() {
        let clocks = FailoverClocks::default();
        let t0 = Instant::now();
        let after = S * 5;
        clocks.unhealthy_for("r", PrimarySeen::Healthy("r-0"), t0);
        // Healthy at the last pass: the usual timeouts.
        assert_eq!(clocks.read_budget("r", "r-0", after, t0 + S), None);
        // Found unhealthy 2.5 s after its last healthy read: the next read (at 2.7 s) waits
        // what is left of failoverAfter, then at least a second.
        clocks.unhealthy_for("r", PrimarySeen::Unhealthy("r-0"), t0 + S * 25 / 10);
        assert_eq!(
            clocks.read_budget("r", "r-0", after, t0 + S * 27 / 10),
            Some(S * 23 / 10)
        );
        assert_eq!(
            clocks.read_budget("r", "r-0", after, t0 + S * 47 / 10),
            Some(S)
        );
        assert_eq!(clocks.read_budget("r", "r-0", after, t0 + S * 9), Some(S));
        // The other pods, and other Redis, keep the usual timeouts.
        assert_eq!(clocks.read_budget("r", "r-1", after, t0 + S * 3), None);
        assert_eq!(clocks.read_budget("q", "r-0", after, t0 + S * 3), None);
        // Healthy again: the usual timeouts.
        clocks.unhealthy_for("r", PrimarySeen::Healthy("r-0"), t0 + S * 5);
        assert_eq!(clocks.read_budget("r", "r-0", after, t0 + S * 6), None);
    }

    #[test]
    fn an_old_healthy_read_or_another_pod_starts_the_clock_now() {
        let clocks = FailoverClocks::default();
        let t0 = Instant::now();
        // The controller was starved for 20 s between the two reads: no failover on one read.
        clocks.unhealthy_for("r", PrimarySeen::Healthy("r-0"), t0);
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Unhealthy("r-0"), t0 + S * 20),
            Some(Duration::ZERO)
        );
        // Another pod labelled since: its own clock.
        clocks.unhealthy_for("r", PrimarySeen::Healthy("r-0"), t0 + S * 21);
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Unhealthy("r-1"), t0 + S * 22),
            Some(Duration::ZERO)
        );
        // Never seen before (a new leader): from now.
        assert_eq!(
            clocks.unhealthy_for("other", PrimarySeen::Unhealthy(""), t0),
            Some(Duration::ZERO)
        );
        clocks.forget("r");
        assert_eq!(
            clocks.unhealthy_for("r", PrimarySeen::Unhealthy("r-1"), t0 + S * 30),
            Some(Duration::ZERO)
        );
    }
}
