//! Prometheus metrics of the controller (served as text on the operations port, `--ops-bind`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: &'static str,
}

/// A Redis, for the backup metrics (one series per Redis that was backed up).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RedisLabels {
    pub namespace: String,
    pub redis: String,
}

/// A backup's result (`succeeded` or `failed`), per Redis.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BackupResultLabels {
    pub namespace: String,
    pub redis: String,
    pub result: &'static str,
}

/// The backups (`RedisBackup`, DESIGN §3o): by result, the last success, bytes and duration.
/// A Redis's series go with it (issue #40.12: a namespace's churn of Redis must not grow the
/// controller's metrics forever).
#[derive(Default)]
pub struct BackupMetrics {
    finished: Family<BackupResultLabels, Counter>,
    last_success: Family<RedisLabels, Gauge>,
    bytes: Family<RedisLabels, Gauge>,
    duration: Family<RedisLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    /// Every Redis that has series, so that they can be removed.
    known: Mutex<HashSet<RedisLabels>>,
}

impl BackupMetrics {
    fn known(&self) -> std::sync::MutexGuard<'_, HashSet<RedisLabels>> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A backup of `redis` succeeded at `at` (Unix seconds), `bytes` long, having taken
    /// `seconds` when known.
    pub fn succeeded(&self, redis: &RedisLabels, at: i64, bytes: i64, seconds: Option<f64>) {
        self.known().insert(redis.clone());
        self.finished
            .get_or_create(&redis.result("succeeded"))
            .inc();
        self.last_success.get_or_create(redis).set(at);
        self.bytes.get_or_create(redis).set(bytes);
        if let Some(seconds) = seconds {
            self.duration.get_or_create(redis).set(seconds);
        }
    }

    /// A backup of `redis` failed.
    pub fn failed(&self, redis: &RedisLabels) {
        self.known().insert(redis.clone());
        self.finished.get_or_create(&redis.result("failed")).inc();
    }

    /// Removes the series of `redis` (deleted).
    pub fn forget(&self, redis: &RedisLabels) {
        self.known().remove(redis);
        self.remove_series(redis);
    }

    /// Removes the series of every Redis `live` says is gone (after the watch re-listed).
    pub fn keep_only(&self, live: impl Fn(&RedisLabels) -> bool) {
        let gone: Vec<RedisLabels> = {
            let mut known = self.known();
            let gone = known.iter().filter(|r| !live(r)).cloned().collect();
            known.retain(|r| live(r));
            gone
        };
        for redis in &gone {
            self.remove_series(redis);
        }
    }

    fn remove_series(&self, redis: &RedisLabels) {
        self.finished.remove(&redis.result("succeeded"));
        self.finished.remove(&redis.result("failed"));
        self.last_success.remove(redis);
        self.bytes.remove(redis);
        self.duration.remove(redis);
    }
}

impl RedisLabels {
    fn result(&self, result: &'static str) -> BackupResultLabels {
        BackupResultLabels {
            namespace: self.namespace.clone(),
            redis: self.redis.clone(),
            result,
        }
    }
}

pub struct Metrics {
    registry: Registry,
    pub backups: BackupMetrics,
    pub reconciles: Counter,
    pub failures: Family<ReasonLabels, Counter>,
    pub duration: Histogram,
    pub pods_created: Counter,
    pub pods_deleted: Counter,
    pub status_writes: Counter,
    pub leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("redis_controller");
        let reconciles = Counter::default();
        let failures = Family::<ReasonLabels, Counter>::default();
        let duration = Histogram::new(exponential_buckets(0.001, 2.0, 14));
        let pods_created = Counter::default();
        let pods_deleted = Counter::default();
        let status_writes = Counter::default();
        let leader = Gauge::default();
        registry.register("reconciles", "Reconciles run", reconciles.clone());
        registry.register(
            "reconcile_failures",
            "Reconciles that failed, by reason",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time a reconcile takes",
            duration.clone(),
        );
        registry.register("pods_created", "Pods created", pods_created.clone());
        registry.register("pods_deleted", "Pods deleted", pods_deleted.clone());
        registry.register(
            "status_writes",
            "Redis status updates written",
            status_writes.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader lease (or runs without election)",
            leader.clone(),
        );
        let backups = BackupMetrics::default();
        registry.register(
            "backups",
            "Backups finished, by Redis and result (succeeded, failed)",
            backups.finished.clone(),
        );
        registry.register(
            "backup_last_success_timestamp_seconds",
            "When the last backup of each Redis succeeded (Unix time)",
            backups.last_success.clone(),
        );
        registry.register(
            "backup_last_size_bytes",
            "Bytes of the last successful backup of each Redis",
            backups.bytes.clone(),
        );
        registry.register(
            "backup_last_duration_seconds",
            "How long the last successful backup of each Redis took",
            backups.duration.clone(),
        );
        Metrics {
            registry,
            backups,
            reconciles,
            failures,
            duration,
            pods_created,
            pods_deleted,
            status_writes,
            leader,
        }
    }
}

impl Metrics {
    /// Counts a reconcile and, when the guard drops, records its duration.
    pub fn reconcile_started(&self) -> ReconcileTimer<'_> {
        self.reconciles.inc();
        ReconcileTimer {
            metrics: self,
            started: Instant::now(),
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "could not encode metrics");
        }
        out
    }
}

/// Drop guard timing one reconcile.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    started: Instant,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics
            .duration
            .observe(self.started.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_s_backup_series_go_with_it() {
        let metrics = Metrics::default();
        let redis = |name: &str| RedisLabels {
            namespace: "ns".into(),
            redis: name.into(),
        };
        metrics
            .backups
            .succeeded(&redis("a"), 1_700_000_000, 42, Some(1.5));
        metrics.backups.failed(&redis("a"));
        metrics
            .backups
            .succeeded(&redis("b"), 1_700_000_000, 7, None);
        metrics.backups.failed(&redis("c"));
        let series = |name: &str| {
            let text = metrics.render();
            text.lines()
                .filter(|l| !l.starts_with('#') && l.contains(&format!("redis=\"{name}\"")))
                .count()
        };
        // succeeded and failed counts, last success, bytes, duration.
        assert_eq!(series("a"), 5, "{}", metrics.render());
        metrics.backups.forget(&redis("a"));
        assert_eq!(series("a"), 0, "{}", metrics.render());
        assert_eq!(series("b"), 3);
        metrics.backups.keep_only(|r| r.redis == "b");
        assert_eq!(series("b"), 3);
        assert_eq!(series("c"), 0, "{}", metrics.render());
    }
}
