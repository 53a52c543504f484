//! `spec.networkPolicy` on the real nodes, enforced by a real policy engine (the bed's
//! kube-router firewall, `bed-firewall`): every probe runs `redis-cli` in a pod, never on the
//! host, whose own traffic policies do not block (the controller here runs on the host and
//! reaches the pods that way, as a controller outside the cluster would).

use std::collections::BTreeMap;
use std::time::Duration;

use api::{Redis, RedisSpec};
use e2e::node::{self, REDIS_IMAGE};
use e2e::pods::restricted_pod;
use e2e::{Context, Error, NamespaceOptions, TestNamespace, seen, wait_for};
use e2e::{conditions, pods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(180);
const PORT: u16 = 6379;
/// The exporter sidecar's image on the bed (`hack/cluster/images.sh base`).
const EXPORTER_IMAGE: &str = "localhost/redis-exporter:bed";
const METRICS_PORT: u16 = 9121;
const NAME: &str = "guarded";
/// How long one probe pod may take to run `redis-cli` to its end.
const PROBE: Duration = Duration::from_secs(90);

/// How many times one probe pod tries to connect, a second apart.
const ATTEMPTS: u32 = 5;
/// The probe: `$0` host, `$1` port, `$2` attempts; prints the last answer (stderr included).
const PROBE_SCRIPT: &str = r#"i=0
while [ "$i" -lt "$2" ]; do
  out=$(timeout 5 redis-cli -h "$0" -p "$1" PING 2>&1)
  [ "$out" = PONG ] && break
  i=$((i + 1))
  sleep 1
done
echo "$out""#;

/// What a pod labelled `labels` in `ns` gets from `redis-cli -h host -p port PING`: its output,
/// "PONG" when it got through, nothing when it timed out. Each try runs under `timeout 5`
/// (redis-cli 7.0 has no connect timeout: a dropped packet must end the probe, not hang it).
/// The pod tries up to ATTEMPTS times and stops at the first PONG: a policy engine learns a new
/// pod's IP only after the pod has started, so the first try of an allowed client can be
/// refused. An answer other than PONG is therefore the last of ATTEMPTS tries over seconds,
/// long after the engine has seen the pod.
async fn probe(
    ns: &TestNamespace,
    labels: &[(&str, &str)],
    host: &str,
    port: u16,
) -> Result<String, Error> {
    let pods: Api<Pod> = ns.api();
    let name = format!("probe-{}", rand_suffix());
    let mut pod = restricted_pod(&name);
    pod.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .chain([("probe".to_owned(), "true".to_owned())])
            .collect::<BTreeMap<_, _>>(),
    );
    if let Some(spec) = pod.spec.as_mut() {
        spec.restart_policy = Some("Never".into());
        if let Some(c) = spec.containers.first_mut() {
            c.image = Some(REDIS_IMAGE.into());
            c.image_pull_policy = Some("Never".into());
            c.command = Some(vec!["sh".into(), "-c".into(), PROBE_SCRIPT.into()]);
            // sh -c's $0, $1 and $2.
            c.args = Some(vec![
                host.to_owned(),
                port.to_string(),
                ATTEMPTS.to_string(),
            ]);
        }
    }
    pods.create(&PostParams::default(), &pod)
        .await
        .context(format!("creating probe pod {name}"))?;
    wait_for(&format!("probe pod {name} to finish"), PROBE, || async {
        let pod = pods.get(&name).await.map_err(seen)?;
        match pod.status.and_then(|s| s.phase).as_deref() {
            Some("Succeeded" | "Failed") => Ok(()),
            other => Err(format!("phase {other:?}")),
        }
    })
    .await?;
    let log = pods
        .logs(&name, &LogParams::default())
        .await
        .context(format!("reading the log of {name}"))?;
    let _ = pods.delete(&name, &DeleteParams::default()).await;
    Ok(log.trim().to_owned())
}

/// A short random suffix for probe pod names.
fn rand_suffix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{:08x}", nanos ^ std::process::id())
}

fn refused(output: &str) -> bool {
    output.contains("Connection refused")
}

async fn wait_probe(
    what: &str,
    ns: &TestNamespace,
    labels: &[(&str, &str)],
    host: &str,
    port: u16,
    expect: fn(&str) -> bool,
) -> Result<String, Error> {
    // A policy takes effect a moment after it is written: probe until it says what it should.
    let mut last = String::new();
    for _ in 0..10 {
        last = probe(ns, labels, host, port).await?;
        if expect(&last) {
            return Ok(last);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(Error::Process {
        what: what.to_owned(),
        reason: format!("the probe said {last:?}"),
    })
}

#[tokio::test]
async fn only_the_allowed_clients_reach_a_redis_with_a_network_policy() -> Result<(), Error> {
    let (cluster, ns, _operator) = node::setup("netpol").await?;
    let other = cluster
        .namespace_with(
            "netpol-other",
            NamespaceOptions::default()
                .pod_security("restricted")
                .real_node(),
        )
        .await?;
    let redis: Api<Redis> = ns.api();
    let spec: RedisSpec = serde_json::from_value(json!({
        "replicas": 3,
        "image": REDIS_IMAGE,
        "mode": "Replication",
        "replication": {"failoverAfter": "5s"},
        "exporter": {"image": EXPORTER_IMAGE},
        "networkPolicy": {
            "allowedClients": [{"podSelector": {"matchLabels": {"role": "web"}}}],
            "metricsFrom": [{"podSelector": {"matchLabels": {"role": "prometheus"}}}],
        },
    }))
    .map_err(|e| Error::process("the test's spec", e))?;
    redis
        .create(&PostParams::default(), &Redis::new(NAME, spec))
        .await
        .context("creating the Redis")?;
    let primary = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;

    // The policy is the Redis's own.
    let policies: Api<NetworkPolicy> = ns.api();
    let policy = policies
        .get(NAME)
        .await
        .context("reading the NetworkPolicy")?;
    let owner = policy.owner_references().first().cloned();
    assert_eq!(owner.map(|o| o.kind), Some("Redis".to_owned()));

    let service = conditions::service_ip(&ns, NAME, CONVERGE).await?;
    let web = [("role", "web")];
    let pong = |o: &str| o == "PONG";
    wait_probe("an allowed client", &ns, &web, &service, PORT, pong).await?;
    let stranger = probe(&ns, &[("role", "stranger")], &service, PORT).await?;
    assert!(refused(&stranger), "a pod without the label: {stranger:?}");
    let elsewhere = probe(&other, &web, &service, PORT).await?;
    assert!(
        refused(&elsewhere),
        "the label in another namespace: {elsewhere:?}"
    );

    // The exporter: only metricsFrom connects (an HTTP server: redis-cli gets through, then
    // cannot read the reply as Redis's; what matters is that the connection was not refused).
    let pods: Api<Pod> = ns.api();
    let pod_ip = |pod: &Pod| pods::ip(pod).unwrap_or_default().to_owned();
    let primary_ip = pod_ip(&pods.get(&primary).await.context("reading the primary")?);
    let scraped = probe(&ns, &[("role", "prometheus")], &primary_ip, METRICS_PORT).await?;
    assert!(
        !refused(&scraped),
        "metricsFrom on the metrics port: {scraped:?}"
    );
    let not_scraped = probe(&ns, &web, &primary_ip, METRICS_PORT).await?;
    assert!(
        refused(&not_scraped),
        "a client on the metrics port: {not_scraped:?}"
    );

    // Replication and failover go on under the policy: the primary's pod is deleted, a replica
    // is promoted, and the three pods replicate again (the replicas reach the new primary).
    pods.delete(&primary, &DeleteParams::default().grace_period(0))
        .await
        .context("deleting the primary")?;
    let promoted = conditions::wait_promoted(&ns, NAME, &primary, CONVERGE).await?;
    conditions::wait_replicating(&ns, NAME, 3, CONVERGE, Some(&primary)).await?;
    let through = probe(&ns, &web, &service, PORT).await?;
    assert_eq!(
        through, "PONG",
        "the client after the failover to {promoted}"
    );

    // Without networkPolicy: the policy is deleted and every pod gets through again.
    redis
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"networkPolicy": null}})),
        )
        .await
        .context("removing spec.networkPolicy")?;
    wait_for("the NetworkPolicy to be deleted", CONVERGE, || async {
        match policies.get_opt(NAME).await.map_err(seen)? {
            None => Ok(()),
            Some(_) => Err("still there".to_owned()),
        }
    })
    .await?;
    wait_probe(
        "the stranger once open",
        &ns,
        &[("role", "stranger")],
        &service,
        PORT,
        pong,
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_redis_without_auth_or_policy_is_warned_about_at_apply() -> Result<(), Error> {
    let (cluster, ns, _operator) = node::setup("netpol-warn").await?;
    let manifest = json!({
        "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
        "metadata": {"name": "open", "namespace": ns.name()},
        "spec": {"replicas": 1, "image": REDIS_IMAGE},
    });
    let dir = tempfile::tempdir().map_err(|e| Error::process("a temporary directory", e))?;
    let file = dir.path().join("open.json");
    std::fs::write(&file, manifest.to_string()).map_err(|e| Error::process("writing", e))?;
    let output = std::process::Command::new(e2e::operator::kubectl())
        .env("KUBECONFIG", cluster.kubeconfig())
        .args(["apply", "-f"])
        .arg(&file)
        .output()
        .map_err(|e| Error::process("running kubectl apply", e))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "kubectl apply: {stderr}");
    assert!(
        stderr.contains("Warning: spec.networkPolicy and spec.auth are not set"),
        "kubectl apply's warnings: {stderr}"
    );
    Ok(())
}

/// The packets the bed's egress guard dropped so far (`hack/cluster/node/node.sh`: the chain
/// `REDIS-BED-EGRESS` in the mangle table, whose last rule drops what a pod sends outside the
/// pod range).
async fn egress_guard_drops() -> Result<u64, Error> {
    let output = tokio::process::Command::new("iptables")
        .args([
            "-w",
            "-t",
            "mangle",
            "-L",
            "REDIS-BED-EGRESS",
            "-v",
            "-x",
            "-n",
        ])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output)
        .await
        .map_err(|_| Error::Process {
            what: "iptables -L REDIS-BED-EGRESS".into(),
            reason: "did not finish within 30 s".into(),
        })?
        .map_err(|e| Error::process("iptables -L REDIS-BED-EGRESS", e))?;
    let text = String::from_utf8_lossy(&output.stdout);
    // `pkts bytes target ...`: the DROP rule's packet count.
    text.lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(2) == Some(&"DROP")).then(|| fields.first()?.parse().ok())?
        })
        .ok_or_else(|| Error::Process {
            what: "the bed's egress guard".into(),
            reason: format!("no DROP rule in REDIS-BED-EGRESS: {text:?}"),
        })
}

/// The bed's own promise (nothing leaves the machine) holds with the policy engine on: a pod
/// whose egress a NetworkPolicy allows everywhere (the policy engine accepts its packets in the
/// filter table) still has what it sends outside the pod range dropped by the guard, which sits
/// in the mangle table before it.
#[tokio::test]
async fn a_pod_allowed_all_egress_still_reaches_nothing_outside_the_pod_range() -> Result<(), Error>
{
    let (_cluster, ns, _operator) = node::setup("netpol-egress").await?;
    let policies: Api<NetworkPolicy> = ns.api();
    let allow_all: NetworkPolicy = serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "allow-all-egress"},
        "spec": {
            "podSelector": {"matchLabels": {"probe": "true"}},
            "policyTypes": ["Egress"],
            "egress": [{}],
        },
    }))
    .map_err(|e| Error::process("the test's policy", e))?;
    policies
        .create(&PostParams::default(), &allow_all)
        .await
        .context("creating the allow-all egress policy")?;
    let before = egress_guard_drops().await?;
    // TEST-NET-2 (RFC 5737): never a pod; the host forwards it to its default route, where the
    // guard must drop it (a host without a default route fails this test: nothing to guard).
    let output = probe(&ns, &[("role", "web")], "198.51.100.1", PORT).await?;
    let after = egress_guard_drops().await?;
    assert_ne!(output, "PONG", "a pod reached an outside address");
    assert!(
        after > before,
        "the guard dropped nothing of the probe's packets ({before} -> {after}); it said {output:?}"
    );
    Ok(())
}
