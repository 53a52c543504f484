//! The two runs: the operator converging the Redis, and the bare loop of pod creates.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use api::{Redis, RedisSpec};
use e2e::bench::{progress, secs};
use e2e::operator::Operator;
use e2e::{Cluster, Error, NamespaceOptions};
use k8s_openapi::api::core::v1::{Pod, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta};

use super::Args;
use crate::audit::{AuditEvent, AuditLog, by_key};
use crate::load::{Drain, Tracker, create_all, delete_all};
use crate::report::{
    Writes, cpu_seconds, memory, percentiles, print_metrics, report_busiest, report_run_writes,
    report_stages, vm_kib,
};

/// What one operator run came to (None: not measured).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OperatorRun {
    /// Until all Redis were Ready (None: not within the timeout).
    pub(crate) ready: Option<Duration>,
    /// The controller's writes from the first create to all Ready + settle, against the minimum.
    pub(crate) writes: Option<Writes>,
    /// The controller's writes during the idle period.
    pub(crate) idle_writes: Option<usize>,
    /// The controller's peak RSS (VmHWM) at the end of the idle period, in KiB.
    pub(crate) peak_rss_kib: Option<u64>,
}

/// The operator's run: a controller of its own (so its peak RSS is this run's), converging
/// `args.count` new Redis, then idle. `phase` names the run in the headings.
pub(crate) async fn operator_run(
    cluster: &Cluster,
    audit: Option<&AuditLog>,
    args: &Args,
    phase: &str,
) -> Result<OperatorRun, Error> {
    let mut figures = OperatorRun::default();
    let ns = cluster
        .namespace_with(
            "bench-ctl",
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let audit_offset = audit.map(AuditLog::mark);
    progress(format!("starting the operator for namespace {}", ns.name()));
    let controller_args: Vec<&str> = args.controller_args.iter().map(String::as_str).collect();
    let operator = Operator::start_with(cluster, &ns, &controller_args).await?;
    // Declared after the operator, so dropped before it: on an early return the namespace is
    // deleted while the controller still runs to remove its finalizers.
    let mut drain = Drain::new(cluster, ns.name());
    let controller = &operator.controller;
    let user = operator.identity.username.clone();

    let redis_api: Api<Redis> = ns.api();
    let replicas = args.replicas;
    let mut tracker =
        Tracker::start(redis_api.clone(), move |r: &Redis| redis_ready(r, replicas)).await?;
    let objects: Vec<Redis> = (0..args.count)
        .map(|i| {
            Redis::new(
                &format!("bench-{i:04}"),
                RedisSpec {
                    replicas: Some(args.replicas),
                    ..RedisSpec::default()
                },
            )
        })
        .collect();
    let cpu_before = cpu_seconds(controller.process.pid());

    println!();
    println!(
        "== operator ({phase}): {} Redis x {} pods in {} ==",
        args.count,
        args.replicas,
        ns.name()
    );
    let start_wall = Timestamp::now();
    let start = Instant::now();
    let created = create_all(&redis_api, objects, usize::from(args.creators)).await?;
    created.print("Redis", start);
    let converged = tracker
        .wait(args.count, Duration::from_secs(args.timeout))
        .await;
    let ready_time = match converged {
        Ok(last) => {
            let time = last - start;
            println!(
                "all Ready (status.readyReplicas={} and condition Ready=True) after {}",
                args.replicas,
                secs(time)
            );
            Some(time)
        }
        Err(ready) => {
            println!(
                "NOT converged: {ready}/{} Redis Ready after {}s",
                args.count, args.timeout
            );
            None
        }
    };
    println!(
        "per Redis, from its create to Ready: {}",
        percentiles(&tracker.latencies(&created.at))
    );
    let ready_wall = Timestamp::now();
    tokio::time::sleep(Duration::from_secs(args.settle)).await;
    let settled_wall = Timestamp::now();
    let cpu_run = cpu_seconds(controller.process.pid());

    if let (Some(audit), Some(offset)) = (audit, audit_offset) {
        let events = audit.read(offset, ns.name())?;
        let mine: Vec<&AuditEvent> = events.iter().filter(|e| e.user == user).collect();
        let before: Vec<_> = mine.iter().filter(|e| e.at < start_wall).collect();
        if !before.is_empty() {
            println!(
                "controller writes before the first create: {}",
                before.len()
            );
        }
        let run: Vec<&AuditEvent> = mine
            .iter()
            .copied()
            .filter(|e| e.at >= start_wall && e.at < settled_wall)
            .collect();
        figures.writes = Some(report_run_writes(&run, args, ready_wall));
        report_stages(&events, &user);
        report_busiest(&events, &run, &user);
    }
    if let (Some(before), Some(after)) = (cpu_before, cpu_run) {
        println!(
            "controller CPU time during the run: {:.2} s",
            after - before
        );
    }
    print_metrics(controller).await;

    println!();
    println!("== idle {} s ==", args.idle);
    progress(format!("idle for {} s", args.idle));
    tokio::time::sleep(Duration::from_secs(args.idle)).await;
    let idle_end_wall = Timestamp::now();
    let cpu_idle = cpu_seconds(controller.process.pid());
    if let (Some(audit), Some(offset)) = (audit, audit_offset) {
        let events = audit.read(offset, ns.name())?;
        let idle: Vec<&AuditEvent> = events
            .iter()
            .filter(|e| e.user == user && e.at >= settled_wall && e.at < idle_end_wall)
            .collect();
        println!(
            "controller writes during the idle {} s: {}",
            args.idle,
            idle.len()
        );
        figures.idle_writes = Some(idle.len());
        for event in idle.iter().take(50) {
            println!("  {}", event.describe(&settled_wall, &user));
        }
    }
    if let (Some(before), Some(after)) = (cpu_run, cpu_idle) {
        println!("controller CPU time while idle: {:.2} s", after - before);
    }
    print_metrics(controller).await;
    println!();
    println!("== memory ({phase}) ==");
    figures.peak_rss_kib = vm_kib(controller.process.pid(), "VmHWM:");
    println!(
        "redis-controller: {}",
        memory(&controller.process).unwrap_or_else(|| "unknown".into())
    );
    println!(
        "redis-webhook: {}",
        memory(&operator.webhook.process).unwrap_or_else(|| "unknown".into())
    );

    progress(format!(
        "deleting the {} Redis in {} (the controller removes their pods, then their finalizers)",
        args.count,
        ns.name()
    ));
    let teardown_wall = Timestamp::now();
    match delete_all(&redis_api, "Redis").await {
        Ok(time) => println!("teardown: {} Redis deleted in {}", args.count, secs(time)),
        Err(e) => println!("teardown: {e:?}"),
    }
    match drain.run().await {
        Ok(time) => println!("teardown: then the namespace deleted in {}", secs(time)),
        Err(e) => println!("teardown: {e:?}"),
    }
    if let (Some(audit), Some(offset)) = (audit, audit_offset) {
        let events = audit.read(offset, ns.name())?;
        let down: Vec<&AuditEvent> = events
            .iter()
            .filter(|e| e.user == user && e.at >= teardown_wall)
            .collect();
        println!(
            "controller writes during teardown: {} ({})",
            down.len(),
            by_key(&down, |e| format!(
                "{} {} -> {}",
                e.verb, e.resource, e.code
            ))
        );
    }
    drop(drain);
    drop(operator);
    drop(ns);
    figures.ready = ready_time;
    Ok(figures)
}

/// The reference: the same pods, created by a bare loop with the same concurrency.
pub(crate) async fn bare_run(
    cluster: &Cluster,
    args: &Args,
    phase: &str,
    services: bool,
) -> Result<Option<Duration>, Error> {
    let ns = cluster
        .namespace_with(
            "bench-bare",
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let mut drain = Drain::new(cluster, ns.name());
    let pods_api: Api<Pod> = ns.api();
    let total = args.count * usize::try_from(args.replicas).unwrap_or(0);
    let spec = RedisSpec {
        replicas: Some(args.replicas),
        ..RedisSpec::default()
    }
    .with_defaults();
    let pod_spec = controller::pods::build::pod_spec("bench", &spec);
    let hash = controller::pods::build::spec_hash(&pod_spec);
    let objects: Vec<Pod> = (0..args.count)
        .flat_map(|i| (0..args.replicas).map(move |o| (i, o)))
        .map(|(i, o)| {
            let group = format!("bare-{i:04}");
            Pod {
                metadata: ObjectMeta {
                    name: Some(format!("{group}-{o}")),
                    labels: Some(api::pods::pod_labels(&group)),
                    annotations: Some(BTreeMap::from([(
                        controller::pods::build::SPEC_HASH_ANNOTATION.to_owned(),
                        hash.clone(),
                    )])),
                    ..ObjectMeta::default()
                },
                spec: Some(pod_spec.clone()),
                status: None,
            }
        })
        .collect();
    let mut tracker = Tracker::start(pods_api.clone(), e2e::pods::is_ready).await?;
    let services_api: Api<Service> = ns.api();
    let service_objects: Vec<Service> = if services {
        (0..args.count)
            .map(|i| client_service(&format!("bare-{i:04}")))
            .collect()
    } else {
        Vec::new()
    };

    println!();
    let what = if services {
        format!("{total} pods and {} ClusterIP Services", args.count)
    } else {
        format!("{total} pods (pod creates only)")
    };
    println!(
        "== bare loop ({phase}): {what}, {} creators each, in {} ==",
        args.creators,
        ns.name()
    );
    let start = Instant::now();
    let creators = usize::from(args.creators);
    let (created, services_created) = tokio::join!(
        create_all(&pods_api, objects, creators),
        create_all(&services_api, service_objects, creators),
    );
    let (created, services_created) = (created?, services_created?);
    created.print("pods", start);
    if services {
        services_created.print("Services", start);
    }
    let ready_time = match tracker.wait(total, Duration::from_secs(args.timeout)).await {
        Ok(last) => {
            let time = last.max(services_created.done) - start;
            println!(
                "all pods Ready (and every Service made) after {}",
                secs(time)
            );
            Some(time)
        }
        Err(ready) => {
            println!(
                "NOT converged: {ready}/{total} pods Ready after {}s",
                args.timeout
            );
            None
        }
    };
    println!(
        "per pod, from its create to Ready: {}",
        percentiles(&tracker.latencies(&created.at))
    );
    progress(format!("deleting namespace {}", ns.name()));
    match drain.run().await {
        Ok(time) => println!(
            "teardown: namespace with {total} pods deleted in {}",
            secs(time)
        ),
        Err(e) => println!("teardown: {e:?}"),
    }
    drop(drain);
    drop(ns);
    Ok(ready_time)
}

/// A Service like the client Service a Redis gets: ClusterIP, port `redis`, over its pods.
fn client_service(group: &str) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(group.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(api::pods::pod_labels(group)),
            ports: Some(vec![ServicePort {
                name: Some("redis".into()),
                port: 6379,
                target_port: Some(IntOrString::String("redis".into())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

fn redis_ready(redis: &Redis, replicas: i32) -> bool {
    let Some(status) = &redis.status else {
        return false;
    };
    status.replicas == replicas
        && status.ready_replicas == replicas
        && status.observed_generation == redis.metadata.generation
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}
