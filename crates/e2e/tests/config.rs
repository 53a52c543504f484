//! Redis's own configuration on the real nodes (DESIGN §3m): `spec.config` directives redis-server
//! takes live reach every running pod with no restart, one it refuses says so in Ready while the
//! others apply, removed ones go back to Redis's defaults; a directive read only at start rolls
//! the pods with a switchover and no acknowledged write lost; and a memory limit gives a
//! `maxmemory` that keeps Redis from the kernel's OOM killer, where `maxmemory 0` does not.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::Redis;
use e2e::history::{History, Writer, lost_on};
use e2e::node::{self, REDIS_IMAGE};
use e2e::{Context, Error, TestNamespace, seen, wait_for};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(120);
const PORT: u16 = 6379;
const PASSWORD: &str = "config-Passw0rd-for-the-bed";

async fn create(ns: &TestNamespace, name: &str, spec: serde_json::Value) -> Result<(), Error> {
    let redis: Redis = serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1",
        "kind": "Redis",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .map_err(|e| Error::process("the test's Redis", e))?;
    ns.api::<Redis>()
        .create(&PostParams::default(), &redis)
        .await
        .context(format!("creating Redis {name}"))?;
    Ok(())
}

async fn patch_config(
    ns: &TestNamespace,
    name: &str,
    config: serde_json::Value,
) -> Result<(), Error> {
    ns.api::<Redis>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"config": config}})),
        )
        .await
        .context(format!("patching the config of {name}"))?;
    Ok(())
}

/// `CONFIG GET name` on `host`: the value.
async fn config_get(host: &str, name: &str) -> Result<String, String> {
    let out = node::redis_cli(
        host,
        PORT,
        &["--no-auth-warning", "-a", PASSWORD, "CONFIG", "GET", name],
    )
    .await?;
    let mut lines = out.lines();
    match (lines.next(), lines.next()) {
        (Some(n), value) if n == name => Ok(value.unwrap_or_default().to_owned()),
        _ => Err(format!("CONFIG GET {name}: {out}")),
    }
}

/// Waits until every one of the `count` pods of `name` reports `wanted` for each directive.
async fn wait_config(
    ns: &TestNamespace,
    name: &str,
    count: usize,
    wanted: &[(&str, &str)],
) -> Result<Vec<Pod>, Error> {
    wait_for(&format!("{wanted:?} on every pod"), CONVERGE, || async {
        let pods = pods::of_redis(&ns.api(), name).await?;
        if pods.len() != count {
            return Err(format!("{} pods", pods.len()));
        }
        let mut off = Vec::new();
        for pod in &pods {
            let ip = pods::ip(pod).unwrap_or_default();
            for (directive, value) in wanted {
                let now = config_get(ip, directive).await?;
                if now != *value {
                    off.push(format!("{}: {directive} {now:?}", pod.name_any()));
                }
            }
        }
        if off.is_empty() {
            Ok(pods)
        } else {
            Err(off.join("; "))
        }
    })
    .await
}

/// Pod name → (uid, restarts of the redis container).
fn identities(pods: &[Pod]) -> BTreeMap<String, (String, i32)> {
    pods.iter()
        .map(|p| {
            (
                p.name_any(),
                (p.uid().unwrap_or_default(), pods::restarts(p)),
            )
        })
        .collect()
}

/// Live directives on a running Replication Redis: set on every pod with no pod replaced or
/// restarted; a value redis-server refuses (`save "often"`) makes Ready False `ConfigRejected`
/// with Redis's message while the others still apply; removing them all brings Redis's defaults
/// back and Ready True.
#[tokio::test]
async fn live_directives_reach_every_pod_without_a_restart_and_removed_ones_go_back()
-> Result<(), Error> {
    const NAME: &str = "tuned";
    let (_cluster, ns, _operator) = node::setup("config").await?;
    secrets::create_password_secret(&ns, "tuned-auth", PASSWORD).await?;
    create(
        &ns,
        NAME,
        json!({
            "replicas": 3, "image": REDIS_IMAGE, "port": PORT, "mode": "Replication",
            "auth": {"secretRef": {"name": "tuned-auth"}},
        }),
    )
    .await?;
    conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    let before = identities(&pods::of_redis(&ns.api(), NAME).await?);

    patch_config(
        &ns,
        NAME,
        json!({"maxmemory-policy": "allkeys-lru", "notify-keyspace-events": "Ex", "hz": "20"}),
    )
    .await?;
    let pods = wait_config(
        &ns,
        NAME,
        3,
        &[
            ("maxmemory-policy", "allkeys-lru"),
            ("notify-keyspace-events", "xE"),
            ("hz", "20"),
        ],
    )
    .await?;
    assert_eq!(
        identities(&pods),
        before,
        "a live directive replaced or restarted a pod"
    );
    wait_for("Config True", CONVERGE, || async {
        match conditions::read_condition(&ns, NAME, "Config").await? {
            (s, _, _) if s == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    let reasons = ns.event_reasons(None).await?;
    assert!(reasons.iter().any(|r| r == "ConfigApplied"), "{reasons:?}");
    let applied_generation = ns
        .api::<Redis>()
        .get(NAME)
        .await
        .context("reading the Redis")?
        .metadata
        .generation;

    // A value of the right shape as far as the table says that redis-server refuses; hz
    // changes in the same write and still applies.
    patch_config(&ns, NAME, json!({"save": "often", "hz": "15"})).await?;
    wait_config(&ns, NAME, 3, &[("hz", "15")]).await?;
    let (ready, _, message) = wait_for("Ready False ConfigRejected", CONVERGE, || async {
        match conditions::read_condition(&ns, NAME, "Ready").await? {
            c if c.1 == "ConfigRejected" => Ok(c),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    assert_eq!(ready, "False");
    assert!(
        message.contains("refused save") && message.contains("Invalid save parameters"),
        "Redis's own message: {message}"
    );
    let reasons = ns.event_reasons(None).await?;
    assert!(reasons.iter().any(|r| r == "ConfigRejected"), "{reasons:?}");
    // The status says which generation's configuration each pod runs: the one before, in full.
    let status = ns
        .api::<Redis>()
        .get(NAME)
        .await
        .context("reading the Redis")?
        .status
        .unwrap_or_default();
    let generations: Vec<(String, Option<i64>)> = status
        .pod_config_generations
        .iter()
        .map(|p| (p.name.clone(), p.generation))
        .collect();
    assert_eq!(
        generations,
        (0..3)
            .map(|i| (format!("{NAME}-{i}"), applied_generation))
            .collect::<Vec<_>>(),
        "status.podConfigGenerations while the pods refuse the current configuration"
    );

    // Every directive removed: Redis's defaults again, and Ready.
    ns.api::<Redis>()
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"config": null}})),
        )
        .await
        .context("removing spec.config")?;
    let pods = wait_config(
        &ns,
        NAME,
        3,
        &[
            ("maxmemory-policy", "noeviction"),
            ("notify-keyspace-events", ""),
            ("hz", "10"),
        ],
    )
    .await?;
    assert_eq!(
        identities(&pods),
        before,
        "removing directives replaced or restarted a pod"
    );
    conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    wait_for(
        "no podConfigGenerations once all run the spec's",
        CONVERGE,
        || async {
            let redis = ns.api::<Redis>().get(NAME).await.map_err(seen)?;
            match redis.status.map(|s| s.pod_config_generations) {
                Some(g) if g.is_empty() => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await?;
    Ok(())
}

/// A directive read only at start (`databases`) replaces the pods one at a time, switching over
/// before the primary goes, while writers (`SET` + `WAIT 1` through the Service) run: every pod
/// ends with the new value and no acknowledged write is lost.
#[tokio::test]
async fn a_directive_read_at_start_rolls_the_pods_and_loses_no_acknowledged_write()
-> Result<(), Error> {
    const NAME: &str = "rolled";
    let (_cluster, ns, _operator) = node::setup("config-roll").await?;
    secrets::create_password_secret(&ns, "rolled-auth", PASSWORD).await?;
    create(
        &ns,
        NAME,
        json!({
            "replicas": 3, "image": REDIS_IMAGE, "port": PORT, "mode": "Replication",
            "auth": {"secretRef": {"name": "rolled-auth"}},
            "replication": {"failoverAfter": "5s"},
        }),
    )
    .await?;
    let first = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    let before = identities(&pods::of_redis(&ns.api(), NAME).await?);
    let service = conditions::service_ip(&ns, NAME, CONVERGE).await?;
    let history = Arc::new(Mutex::new(History::default()));
    let writers: Vec<Writer> = (0..2)
        .map(|id| {
            Writer::start(
                id,
                service.clone(),
                PORT,
                Some(PASSWORD.to_owned()),
                history.clone(),
            )
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    patch_config(&ns, NAME, json!({"databases": "32"})).await?;
    let pods = wait_config(&ns, NAME, 3, &[("databases", "32")]).await?;
    let after = identities(&pods);
    for (name, (uid, _)) in &before {
        assert_ne!(
            after.get(name).map(|a| &a.0),
            Some(uid),
            "{name} was not replaced"
        );
    }
    let now = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    for writer in writers {
        writer.stop().await;
    }
    eprintln!("config-roll: the primary moved from {first} to {now}");
    let history = History::take(&history);
    let primary = ns.api::<Pod>().get(&now).await.context("the primary")?;
    let ip = pods::ip(&primary).unwrap_or_default().to_owned();
    let lost = lost_on(&ip, PORT, PASSWORD, &history.acks).await?;
    history.assert_none_lost("config-roll", &lost);
    Ok(())
}

/// Writes ~`megabytes` of 64 KiB values to `host` with pipelined `SET`s (no reply awaited per
/// key); stops at the first error (a refused write, or the server gone).
async fn fill(host: &str, megabytes: usize) -> Result<usize, String> {
    let url = format!("redis://:{PASSWORD}@{host}:{PORT}/");
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_response_timeout(Some(Duration::from_secs(30)));
    let mut con = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| e.to_string())?;
    let value = vec![b'x'; 64 * 1024];
    let mut written = 0;
    for batch in 0..(megabytes * 16 / 32) {
        let mut pipe = redis::pipe();
        for i in 0..32 {
            pipe.set(format!("fill-{batch}-{i}"), &value).ignore();
        }
        if let Err(e) = pipe.query_async::<()>(&mut con).await {
            return Err(format!("after {written} values: {e}"));
        }
        written += 32;
    }
    Ok(written)
}

/// The reason the redis container last terminated, if it did.
fn last_termination(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == "redis")?
        .last_state
        .as_ref()?
        .terminated
        .as_ref()?
        .reason
        .clone()
}

/// A 128 MiB memory limit gives `maxmemory` 80% of it (~102 MB); filled with 200 MB under
/// `allkeys-lru` Redis evicts and its container is never killed, while a control Redis with the
/// same limit and `maxmemory 0` is OOM-killed.
#[tokio::test]
async fn a_memory_limit_gives_maxmemory_and_keeps_redis_from_the_oom_killer() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("config-oom").await?;
    secrets::create_password_secret(&ns, "oom-auth", PASSWORD).await?;
    let spec = |config: serde_json::Value| {
        json!({
            "replicas": 1, "image": REDIS_IMAGE, "port": PORT,
            "auth": {"secretRef": {"name": "oom-auth"}},
            "resources": {"limits": {"memory": "128Mi"}, "requests": {"memory": "128Mi"}},
            "config": config,
        })
    };
    create(
        &ns,
        "bounded",
        spec(json!({"maxmemory-policy": "allkeys-lru", "save": ""})),
    )
    .await?;
    create(
        &ns,
        "unbounded",
        spec(json!({"maxmemory": "0", "save": ""})),
    )
    .await?;
    let pods: Api<Pod> = ns.api();
    let mut ips = BTreeMap::new();
    for name in ["bounded-0", "unbounded-0"] {
        let pod = e2e::pods::wait_ready(&pods, name, CONVERGE).await?;
        ips.insert(name, pods::ip(&pod).unwrap_or_default().to_owned());
    }
    let bounded = ips.get("bounded-0").cloned().unwrap_or_default();
    let unbounded = ips.get("unbounded-0").cloned().unwrap_or_default();
    let maxmemory = config_get(&bounded, "maxmemory")
        .await
        .map_err(|e| Error::process("CONFIG GET", e))?;
    assert_eq!(maxmemory, (128u64 * 1024 * 1024 * 80 / 100).to_string());
    assert_eq!(
        config_get(&unbounded, "maxmemory").await.as_deref(),
        Ok("0")
    );

    let kept = fill(&bounded, 200).await;
    assert!(
        kept.is_ok(),
        "allkeys-lru evicts instead of refusing: {kept:?}"
    );
    let info = node::redis_cli(
        &bounded,
        PORT,
        &["--no-auth-warning", "-a", PASSWORD, "INFO", "stats"],
    )
    .await
    .map_err(|e| Error::process("INFO", e))?;
    let evicted = info
        .lines()
        .find_map(|l| l.strip_prefix("evicted_keys:"))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert!(evicted > 0, "no key evicted: {info}");
    let killed = fill(&unbounded, 200).await;
    eprintln!(
        "config-oom: the bounded Redis evicted {evicted} keys; the unbounded one: {killed:?}"
    );
    let oom = wait_for("the unbounded Redis OOM-killed", CONVERGE, || async {
        let pod = pods.get("unbounded-0").await.map_err(seen)?;
        match last_termination(&pod) {
            Some(reason) => Ok(reason),
            None => Err(format!("restarts {}", pods::restarts(&pod))),
        }
    })
    .await?;
    assert_eq!(oom, "OOMKilled");
    let pod = pods.get("bounded-0").await.context("the bounded pod")?;
    assert_eq!(
        (pods::restarts(&pod), last_termination(&pod)),
        (0, None),
        "the Redis with a maxmemory was killed"
    );
    Ok(())
}
