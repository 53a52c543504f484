//! Replication mode on the real node, against real redis-servers: a primary and its replicas,
//! reads and writes through the Services, failover when the primary's pod or its redis-server
//! is killed (a writer that waits for one replica per write loses nothing it was told was
//! written), and scaling that never deletes the primary.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::Redis;
use e2e::history::{self, History, Target, Writer};
use e2e::node::{self};
use e2e::replicated::Replicated;
use e2e::{conditions, pods};

use e2e::{Context, Error, TestNamespace, wait_for};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(120);
const PORT: u16 = 6379;
const FAILOVER_AFTER: &str = "5s";

async fn service_ip(ns: &TestNamespace, name: &str) -> Result<String, Error> {
    conditions::service_ip(ns, name, CONVERGE).await
}

async fn pod(ns: &TestNamespace, name: &str) -> Result<Pod, Error> {
    let pods: Api<Pod> = ns.api();
    pods.get(name).await.context(format!("reading pod {name}"))
}

async fn cli(host: &str, args: &[&str]) -> Result<String, Error> {
    node::redis_cli(host, PORT, args)
        .await
        .map_err(|reason| Error::process(format!("redis-cli -h {host}"), reason))
}

/// Waits until the Service at `ip` reaches a redis-server of `role` (`master`, `slave`), three
/// answers in a row. A Service follows the role labels through the EndpointSlice controller and
/// kube-proxy, which under load run seconds behind the label the operator sets: until then it has
/// no endpoint ("No route to host") or still an old one.
async fn wait_routed(ip: &str, role: &str) -> Result<(), Error> {
    wait_for(
        &format!("Service {ip} to reach a {role}"),
        CONVERGE,
        || async {
            for _ in 0..3 {
                let answer = node::redis_cli(ip, PORT, &["ROLE"]).await?;
                if !answer.starts_with(role) {
                    return Err(format!("ROLE: {answer}"));
                }
            }
            Ok(())
        },
    )
    .await
}

/// After a failover to `primary`: no acknowledged write of `history` is lost on it, and the
/// `<name>` Service (`service`) follows it there, the last acknowledged write included.
async fn assert_failed_over_without_loss(
    ns: &TestNamespace,
    primary: &str,
    service: &str,
    history: &History,
) -> Result<(), Error> {
    let promoted = pod(ns, primary).await?;
    let ip = pods::ip(&promoted).unwrap_or_default();
    assert_no_acknowledged_write_lost(ip, history).await?;
    wait_routed(service, "master").await?;
    if let Some(last) = history.acks.iter().max_by_key(|a| a.value) {
        let key = &last.key;
        assert_eq!(
            cli(service, &["GET", key]).await?,
            last.value.to_string(),
            "{key}"
        );
    }
    Ok(())
}

/// One writer (`history::Writer`) through `host`: each write followed by `WAIT 1`, so a write
/// counts as acknowledged only when a replica has it too; it reconnects after any error
/// (failover). Stopped by [`stop_writing`].
fn start_writing(host: String) -> (Writer, Arc<Mutex<History>>) {
    let history = Arc::new(Mutex::new(History::default()));
    let writer = Writer::start(0, host, PORT, None, history.clone());
    (writer, history)
}

/// Stops the writer: what it recorded.
async fn stop_writing(writer: Writer, history: &Mutex<History>) -> History {
    writer.stop().await;
    History::take(history)
}

/// Every acknowledged key is on `host` with its value.
async fn assert_no_acknowledged_write_lost(host: &str, history: &History) -> Result<(), Error> {
    let acked = &history.acks;
    assert!(
        acked.len() > 10,
        "the writer got too few writes acknowledged: {}",
        acked.len()
    );
    let lost = history::lost_on_target(host, &Target::plain(PORT, None), acked).await?;
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost: {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(20)]
    );
    Ok(())
}

/// Three pods: ordinal 0 is elected primary, the two others replicate it; a key written through
/// the `<name>` Service is read from each replica; `<name>-replicas` answers reads and refuses
/// writes.
#[tokio::test]
async fn three_pods_replicate_the_primary_behind_the_services() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("repl-three").await?;
    let primary = Replicated::new("cache", 3, FAILOVER_AFTER)
        .create_replicating(&ns, CONVERGE)
        .await?;
    assert_eq!(primary, "cache-0", "ordinal 0 starts as the primary");
    let events = ns.event_reasons(None).await?.join(" ");
    for reason in ["PrimaryElected", "ReplicaRepointed"] {
        assert!(events.contains(reason), "no {reason} Event: {events}");
    }

    let service = service_ip(&ns, "cache").await?;
    wait_routed(&service, "master").await?;
    let written =
        node::redis_cli_lines(&service, PORT, &[], &["SET greeting hello", "WAIT 2 5000"]);
    assert_eq!(
        written.await?,
        ["OK", "2"],
        "written, and both replicas have it"
    );
    for replica in ["cache-1", "cache-2"] {
        let pod = pod(&ns, replica).await?;
        let ip = pods::ip(&pod).unwrap_or_default().to_owned();
        assert_eq!(cli(&ip, &["GET", "greeting"]).await?, "hello", "{replica}");
        let role = cli(&ip, &["ROLE"]).await?;
        assert!(role.starts_with("slave"), "{replica}: {role}");
    }
    let replicas = service_ip(&ns, "cache-replicas").await?;
    wait_routed(&replicas, "slave").await?;
    assert_eq!(cli(&replicas, &["GET", "greeting"]).await?, "hello");
    // redis-cli prints an error reply and still exits 0 when not on a terminal.
    let refused = cli(&replicas, &["SET", "greeting", "bye"]).await;
    let said = match &refused {
        Ok(out) => out.as_str(),
        Err(Error::Process { reason, .. }) => reason.as_str(),
        Err(_) => "",
    };
    assert!(said.contains("READONLY"), "{refused:?}");
    Ok(())
}

/// The primary's pod deleted: a replica is promoted, the `<name>` Service follows it, the new
/// pod of the old name comes back as a replica, and no acknowledged write is lost.
#[tokio::test]
async fn losing_the_primary_pod_fails_over_without_losing_acknowledged_writes() -> Result<(), Error>
{
    let (_cluster, ns, _operator) = node::setup("repl-pod").await?;
    let old = Replicated::new("cache", 3, FAILOVER_AFTER)
        .create_replicating(&ns, CONVERGE)
        .await?;
    let service = service_ip(&ns, "cache").await?;
    let (writer, history) = start_writing(service.clone());
    tokio::time::sleep(Duration::from_secs(2)).await;

    let pods: Api<Pod> = ns.api();
    pods.delete(&old, &DeleteParams::default().grace_period(0))
        .await
        .context(format!("deleting the primary {old}"))?;
    let new = conditions::wait_replicating(&ns, "cache", 3, CONVERGE, Some(&old)).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let history = stop_writing(writer, &history).await;
    eprintln!(
        "failover {old} -> {new}: {} writes acknowledged, {} refused or failed",
        history.acks.len(),
        history.unacknowledged
    );
    assert_failed_over_without_loss(&ns, &new, &service, &history).await?;
    let back = pod(&ns, &old).await?;
    let role = cli(pods::ip(&back).unwrap_or_default(), &["ROLE"]).await?;
    assert!(role.starts_with("slave"), "{old} came back as {role}");
    Ok(())
}

/// Only the primary's redis-server killed (the pod stays, its container restarts empty): it
/// comes back fenced, a replica with the data is promoted, the old one follows it.
#[tokio::test]
async fn a_primary_whose_redis_server_restarts_is_replaced_without_losing_acknowledged_writes()
-> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("repl-process").await?;
    let old = Replicated::new("cache", 3, FAILOVER_AFTER)
        .create_replicating(&ns, CONVERGE)
        .await?;
    let service = service_ip(&ns, "cache").await?;
    let (writer, history) = start_writing(service.clone());
    tokio::time::sleep(Duration::from_secs(2)).await;

    let victim = pod(&ns, &old).await?;
    let pid = node::container_pid(&victim, "redis")
        .await
        .map_err(|reason| Error::process(format!("finding {old}'s redis-server"), reason))?;
    node::signal(pid, "KILL")
        .await
        .map_err(|reason| Error::process(format!("killing {old}'s redis-server"), reason))?;
    let new = conditions::wait_replicating(&ns, "cache", 3, CONVERGE, Some(&old)).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let history = stop_writing(writer, &history).await;
    eprintln!(
        "failover {old} -> {new}: {} writes acknowledged, {} refused or failed",
        history.acks.len(),
        history.unacknowledged
    );
    assert_failed_over_without_loss(&ns, &new, &service, &history).await?;
    let same = pod(&ns, &old).await?;
    assert_eq!(same.uid(), victim.uid(), "the pod itself stayed");
    assert!(
        pods::restarts(&same) >= 1,
        "{}",
        pods::describe_all(std::slice::from_ref(&same))
    );
    Ok(())
}

/// 3 -> 5 -> 2 -> 1 pods: the new pods join as replicas, and scaling down never deletes the
/// primary: once a failover has put it above ordinal 0, the scale-down to 1 makes it hand over to
/// cache-0 (a switchover: writes paused until the heir has caught up) before it goes.
#[tokio::test]
async fn scaling_never_deletes_the_primary_and_replicas_relink() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("repl-scale").await?;
    Replicated::new("cache", 3, FAILOVER_AFTER)
        .create_replicating(&ns, CONVERGE)
        .await?;
    let redis: Api<Redis> = ns.api();
    let pods: Api<Pod> = ns.api();
    let scale = |n: i32| {
        let redis = redis.clone();
        async move {
            redis
                .patch(
                    "cache",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": n}})),
                )
                .await
                .context(format!("scaling cache to {n}"))
        }
    };
    scale(5).await?;
    let first = conditions::wait_replicating(&ns, "cache", 5, CONVERGE, None).await?;
    let service = service_ip(&ns, "cache").await?;
    wait_routed(&service, "master").await?;
    let written = node::redis_cli_lines(&service, PORT, &[], &["SET kept yes", "WAIT 4 5000"]);
    assert_eq!(
        written.await?,
        ["OK", "4"],
        "written, and the four replicas have it"
    );

    // A failover moves the primary off ordinal 0 (the recreated cache-0 has no data yet).
    pods.delete(&first, &DeleteParams::default().grace_period(0))
        .await
        .context("deleting the primary")?;
    let moved = conditions::wait_replicating(&ns, "cache", 5, CONVERGE, Some(&first)).await?;
    assert_ne!(moved, "cache-0");

    scale(2).await?;
    let primary = conditions::wait_replicating(&ns, "cache", 2, CONVERGE, None).await?;
    scale(1).await?;
    let last = conditions::wait_replicating(&ns, "cache", 1, CONVERGE, None).await?;
    assert_eq!(last, "cache-0");
    wait_routed(&service, "master").await?;
    assert_eq!(cli(&service, &["GET", "kept"]).await?, "yes");
    if primary != "cache-0" {
        let events = ns.event_reasons(None).await?.join(" ");
        assert!(events.contains("PrimarySwitchedOver"), "{events}");
    }
    Ok(())
}

/// At rest a replicating Redis costs no API writes, although the controller asks every
/// redis-server about itself each second and the primary's pings move the offsets every 10 s.
#[tokio::test]
async fn at_rest_replication_makes_no_api_writes() -> Result<(), Error> {
    let (_cluster, ns, operator) = node::setup("repl-rest").await?;
    Replicated::new("cache", 3, FAILOVER_AFTER)
        .create_replicating(&ns, CONVERGE)
        .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let counters = [
        "redis_controller_status_writes_total",
        "redis_controller_pods_created_total",
        "redis_controller_pods_deleted_total",
    ];
    let read = |name: &'static str| {
        let controller = &operator.controller;
        async move {
            controller
                .metric(name)
                .await
                .map_err(|reason| Error::process("reading metrics", reason))
        }
    };
    let mut before = Vec::new();
    for c in counters {
        before.push(read(c).await?);
    }
    tokio::time::sleep(Duration::from_secs(25)).await;
    for (c, b) in counters.iter().zip(before) {
        assert_eq!(read(c).await?, b, "{c} moved at rest");
    }
    Ok(())
}
