//! Figures: the controller's writes against the minimum, where each Redis's time goes, its
//! metrics, CPU and memory.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use e2e::bench::secs;
use e2e::operator::{Controller, Process};
use k8s_openapi::jiff::Timestamp;

use super::Args;
use crate::audit::{AuditEvent, WRITE_VERBS, by_key};

/// The least number of writes that converge `count` new Redis of `replicas` pods: per Redis,
/// its pods, the finalizer, one status write, one apply each of its Service and its
/// PodDisruptionBudget, and one Event for the batch of pod creates.
pub(crate) fn minimum_writes(count: usize, replicas: usize) -> usize {
    count * (replicas + 5)
}

/// Writes against the minimum: `total` and its ratio to `minimum`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Writes {
    pub(crate) total: usize,
    pub(crate) minimum: usize,
}

impl Writes {
    pub(crate) fn ratio(self) -> f64 {
        self.total as f64 / self.minimum.max(1) as f64
    }
}

/// The controller's writes during the run: by resource and verb, against the minimum.
pub(crate) fn report_run_writes(run: &[&AuditEvent], args: &Args, ready_wall: Timestamp) -> Writes {
    let verbs: Vec<&str> = WRITE_VERBS
        .iter()
        .copied()
        .filter(|v| run.iter().any(|e| e.verb == *v))
        .collect();
    let mut table: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for event in run {
        *table
            .entry(event.resource.as_str())
            .or_default()
            .entry(event.verb.as_str())
            .or_default() += 1;
    }
    println!(
        "controller writes during the run (first create to all Ready + {} s): {}",
        args.settle,
        run.len()
    );
    let mut header = format!("  {:<16}", "resource");
    for verb in &verbs {
        header.push_str(&format!("{verb:>8}"));
    }
    println!("{header}{:>8}", "total");
    for (resource, row) in &table {
        let mut line = format!("  {resource:<16}");
        for verb in &verbs {
            line.push_str(&format!("{:>8}", row.get(verb).copied().unwrap_or(0)));
        }
        println!("{line}{:>8}", row.values().sum::<usize>());
    }
    println!("  by verb: {}", by_key(run, |e| e.verb.clone()));
    let failed: Vec<&AuditEvent> = run
        .iter()
        .copied()
        .filter(|e| !(200..300).contains(&e.code))
        .collect();
    if !failed.is_empty() {
        println!(
            "  refused or failed: {} ({})",
            failed.len(),
            by_key(&failed, |e| format!("{} {} {}", e.code, e.verb, e.resource))
        );
    }

    let replicas = usize::try_from(args.replicas).unwrap_or(0);
    let minimum = minimum_writes(args.count, replicas);
    let events = run.iter().filter(|e| e.resource == "events").count();
    println!(
        "minimum: {minimum} = {} x ({replicas} pod creates + 1 finalizer write + 1 status write \
         + 1 Service + 1 PodDisruptionBudget apply + 1 Event for the batch of pod creates)",
        args.count
    );
    let writes = Writes {
        total: run.len(),
        minimum,
    };
    println!(
        "writes/minimum: {}/{minimum} = {:.3} ({events} of them Event writes, {:.2} per Redis)",
        run.len(),
        writes.ratio(),
        events as f64 / args.count.max(1) as f64
    );
    let per_redis = |resource: &str| {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for event in run.iter().filter(|e| e.resource == resource) {
            *counts.entry(event.name.as_str()).or_default() += 1;
        }
        let mut histogram: BTreeMap<usize, usize> = BTreeMap::new();
        for n in counts.values() {
            *histogram.entry(*n).or_default() += 1;
        }
        let untouched = args.count.saturating_sub(counts.len());
        if untouched > 0 {
            *histogram.entry(0).or_default() += untouched;
        }
        let total: usize = counts.values().sum();
        format!(
            "mean {:.2}; Redis by count: {}",
            total as f64 / args.count.max(1) as f64,
            histogram
                .iter()
                .map(|(n, redis)| format!("{n} writes: {redis}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    println!("status writes per Redis: {}", per_redis("redis/status"));
    println!(
        "writes of the Redis object itself (finalizer) per Redis: {}",
        per_redis("redis")
    );
    let late: Vec<&AuditEvent> = run.iter().copied().filter(|e| e.at >= ready_wall).collect();
    println!(
        "of which after all were Ready: {}{}",
        late.len(),
        if late.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                by_key(&late, |e| format!("{} {}", e.verb, e.resource))
            )
        }
    );
    writes
}

/// Where each Redis's time to Ready goes: from its create to the controller's first write
/// (the finalizer: its first reconcile), from there to its first pod create (the next
/// reconcile), and from there to the last status write (pods Ready, status written).
pub(crate) fn report_stages(events: &[AuditEvent], user: &str) {
    let mut created: HashMap<&str, Timestamp> = HashMap::new();
    let mut finalizer: HashMap<&str, Timestamp> = HashMap::new();
    let mut first_pod: HashMap<&str, Timestamp> = HashMap::new();
    let mut last_status: HashMap<&str, Timestamp> = HashMap::new();
    for event in events.iter().filter(|e| (200..300).contains(&e.code)) {
        let name = event.name.as_str();
        match (event.resource.as_str(), event.verb.as_str()) {
            ("redis", "create") => {
                created.entry(name).or_insert(event.at);
            }
            ("redis", _) if event.user == user => {
                finalizer.entry(name).or_insert(event.at);
            }
            ("pods", "create") if event.user == user => {
                let redis = name.rsplit_once('-').map_or(name, |(r, _)| r);
                first_pod.entry(redis).or_insert(event.at);
            }
            ("redis/status", _) if event.user == user => {
                last_status.insert(name, event.at);
            }
            _ => {}
        }
    }
    let stage = |from: &HashMap<&str, Timestamp>, to: &HashMap<&str, Timestamp>| {
        let gaps: Vec<Duration> = from
            .iter()
            .filter_map(|(name, start)| {
                let end = to.get(name)?;
                Duration::try_from(end.duration_since(*start)).ok()
            })
            .collect();
        percentiles(&gaps)
    };
    println!("per Redis, where the time goes:");
    println!(
        "  create -> finalizer write (1st reconcile):     {}",
        stage(&created, &finalizer)
    );
    println!(
        "  finalizer write -> first pod create (2nd):     {}",
        stage(&finalizer, &first_pod)
    );
    println!(
        "  first pod create -> last status write (Ready): {}",
        stage(&first_pod, &last_status)
    );
}

/// Evidence: every write about the Redis that got the most status writes, by anyone.
pub(crate) fn report_busiest(events: &[AuditEvent], run: &[&AuditEvent], user: &str) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for event in run.iter().filter(|e| e.resource == "redis/status") {
        *counts.entry(event.name.as_str()).or_default() += 1;
    }
    let Some((name, n)) = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
    else {
        return;
    };
    let pod_prefix = format!("{name}-");
    let event_prefix = format!("{name}.");
    let about: Vec<&AuditEvent> = events
        .iter()
        .filter(|e| {
            e.name == name
                || (e.resource.starts_with("pods") && e.name.starts_with(&pod_prefix))
                || (e.resource == "events" && e.name.starts_with(&event_prefix))
        })
        .collect();
    let Some(created) = about
        .iter()
        .find(|e| e.resource == "redis" && e.verb == "create")
        .map(|e| e.at)
    else {
        return;
    };
    println!("writes about {name} ({n} status writes, the most), by anyone, from its create:");
    for event in about.iter().take(80) {
        println!("  {}", event.describe(&created, user));
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

pub(crate) async fn print_metrics(controller: &Controller) {
    let mut figures = Vec::new();
    for name in [
        "redis_controller_reconciles_total",
        "redis_controller_pods_created_total",
        "redis_controller_status_writes_total",
    ] {
        match controller.metric(name).await {
            Ok(value) => figures.push(format!(
                "{} {value}",
                name.trim_start_matches("redis_controller_")
            )),
            Err(e) => figures.push(format!("{name}: {e}")),
        }
    }
    println!("controller /metrics: {}", figures.join(", "));
}

pub(crate) fn percentiles(values: &[Duration]) -> String {
    if values.is_empty() {
        return "none".into();
    }
    let mut sorted = values.to_vec();
    sorted.sort();
    let at = |p: f64| {
        let index = ((sorted.len() - 1) as f64 * p).round() as usize;
        secs(sorted[index.min(sorted.len() - 1)])
    };
    format!(
        "p50 {}, p90 {}, p99 {}, max {} (n={})",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0),
        sorted.len()
    )
}

/// Peak and current resident memory of a process (VmHWM, VmRSS), from /proc.
pub(crate) fn memory(process: &Process) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", process.pid())).ok()?;
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| format!("{:.1} MiB", kb / 1024.0))
    };
    Some(format!(
        "peak RSS (VmHWM) {}, RSS now (VmRSS) {}",
        field("VmHWM:")?,
        field("VmRSS:")?
    ))
}

/// A `Vm*` figure of /proc/<pid>/status in KiB (`VmHWM:` is the peak RSS).
pub(crate) fn vm_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// `12.3 MiB`.
pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// User + system CPU time of a process so far, in seconds (USER_HZ = 100 on Linux).
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

pub(crate) fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}
