//! Prometheus metrics of the controller (served as text on the operations port, `--ops-bind`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
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
#[derive(Default)]
pub struct BackupMetrics {
    pub finished: Family<BackupResultLabels, Counter>,
    pub last_success: Family<RedisLabels, Gauge>,
    pub bytes: Family<RedisLabels, Gauge>,
    pub duration: Family<RedisLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
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
