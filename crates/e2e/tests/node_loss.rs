//! Losing a whole node (issue "Three real nodes, pod placement, and losing a whole node"): a
//! 3-pod Replication Redis with auth, one pod per real node, writers doing `SET` + `WAIT 1`
//! through the `<name>` Service; the primary's node is stopped, frozen or cut off
//! (`hack/cluster/fault.sh`), then healed.
//!
//! Checked each time: a replica on another node is promoted; every write acknowledged by
//! `WAIT 1` is on the new primary; no two pods acknowledged writes as primary at once; the
//! `<name>` Service never routes to two pods; after the heal the old primary's pod, if it is
//! still there, follows the new primary; the Redis ends Ready with 3 members. A stopped node's
//! pods are replaced on the other nodes (evicted by the node lifecycle controller's taints, then
//! force-deleted by the operator). Nothing is timed.
//!
//! The tests share the real nodes, so they run one at a time (a lock), and each heals its node
//! even when it fails.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::collections::BTreeMap;

use api::{Redis, RedisSpec};
use e2e::history::{History, Writer, lost_on, overlapping};
use e2e::node::{self, NodeFault, REDIS_IMAGE};
use e2e::replicated::Replicated;
use e2e::{Context, Error, TestNamespace};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::{Endpoints, Pod, Toleration};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};

const NAME: &str = "cache";
const PORT: u16 = 6379;
const PASSWORD: &str = "node-loss-password";
const FAILOVER_AFTER: Duration = Duration::from_secs(3);
/// A stopped node's pods are replaced once the node lifecycle controller marks it unreachable
/// and evicts them (the bed: 20 s grace, 10 s toleration), and the operator force-deletes them.
const CONVERGE: Duration = Duration::from_secs(300);

/// One node fault at a time on the shared nodes.
static NODES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn pod(ns: &TestNamespace, name: &str) -> Result<Pod, Error> {
    let pods: Api<Pod> = ns.api();
    pods.get(name).await.context(format!("reading pod {name}"))
}

/// The addresses behind the `<name>` Service (the primary's), as the endpoints controller sees
/// them: ready ones only, which is where kube-proxy sends new connections.
async fn service_addresses(ns: &TestNamespace) -> Result<Vec<String>, Error> {
    let endpoints: Api<Endpoints> = ns.api();
    let Some(e) = endpoints.get_opt(NAME).await.context("reading Endpoints")? else {
        return Ok(Vec::new());
    };
    Ok(e.subsets
        .unwrap_or_default()
        .into_iter()
        .flat_map(|s| s.addresses.unwrap_or_default())
        .map(|a| a.ip)
        .collect())
}

/// The `role` and `master_host` lines of `INFO replication` on `ip`.
async fn replication_role(ip: &str) -> Result<(String, String), Error> {
    let info = node::redis_cli(
        ip,
        PORT,
        &["-a", PASSWORD, "--no-auth-warning", "INFO", "replication"],
    )
    .await
    .map_err(|e| Error::process(format!("INFO replication on {ip}"), e))?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .unwrap_or_default()
            .to_owned()
    };
    Ok((field("role"), field("master_host")))
}

/// The whole scenario for one fault of the primary's node.
async fn primary_node_lost(fault: NodeFault, prefix: &str) -> Result<(), Error> {
    let _one_at_a_time = NODES.lock().await;
    let (cluster, ns, _operator) = node::setup(prefix).await?;
    let real = node::require_real_node(&cluster).await?;
    if real.len() < 3 {
        return Err(Error::process(
            "losing a node",
            format!(
                "needs 3 real nodes, the bed has {} (make cluster-up with REAL_NODES unset or 3)",
                real.len()
            ),
        ));
    }
    secrets::create_password_secret(&ns, "node-loss-auth", PASSWORD).await?;
    let old = Replicated::new(NAME, 3, format!("{}s", FAILOVER_AFTER.as_secs()))
        .auth("node-loss-auth")
        .create_replicating(&ns, CONVERGE)
        .await?;

    // One pod per node: the default spread.
    let pods = pods::of_redis(&ns.api(), NAME).await?;
    let nodes: BTreeSet<&str> = pods.iter().filter_map(node::node_of).collect();
    assert_eq!(
        nodes.len(),
        3,
        "the 3 pods share nodes: {}",
        pods::describe_all(&pods)
    );
    let old_pod = pod(&ns, &old).await?;
    let lost_node = node::node_of(&old_pod).unwrap_or_default().to_owned();
    let old_uid = old_pod.uid();
    let old_ip = pods::ip(&old_pod).unwrap_or_default().to_owned();

    let service = conditions::service_ip(&ns, NAME, CONVERGE).await?;
    let history = Arc::new(Mutex::new(History::default()));
    let writers: Vec<Writer> = (0..2)
        .map(|id| {
            let password = Some(PASSWORD.to_owned());
            Writer::start(id, service.clone(), PORT, password, history.clone())
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;

    eprintln!("{prefix}: {} {lost_node} (primary {old})", fault.verb());
    let heal = node::HealOnDrop(lost_node.clone());
    node::fault(fault, &lost_node).await?;
    let new = conditions::wait_promoted(&ns, NAME, &old, CONVERGE).await?;
    let new_node = node::node_of(&pod(&ns, &new).await?)
        .unwrap_or_default()
        .to_owned();
    assert_ne!(new_node, lost_node, "the new primary is on the lost node");

    if fault == NodeFault::Stop {
        // The stopped node's pod is replaced elsewhere, before the node comes back.
        conditions::wait_replicating(&ns, NAME, 3, CONVERGE, Some(&old)).await?;
        let pods = pods::of_redis(&ns.api(), NAME).await?;
        assert!(
            pods.iter()
                .all(|p| node::node_of(p) != Some(lost_node.as_str())),
            "a pod is still on the stopped node {lost_node}: {}",
            pods::describe_all(&pods)
        );
    }
    node::fault(NodeFault::Heal, &lost_node).await?;
    drop(heal);

    // After the heal: never two addresses behind the primary's Service, and the old primary,
    // if its pod survived the outage (healed before its eviction), follows the new one.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while tokio::time::Instant::now() < deadline {
        let addresses = service_addresses(&ns).await?;
        assert!(
            addresses.len() <= 1,
            "the {NAME} Service routes to {addresses:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let primary = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, Some(&old)).await?;
    let primary_ip = pods::ip(&pod(&ns, &primary).await?)
        .unwrap_or_default()
        .to_owned();
    match pod(&ns, &old).await {
        Ok(p) if p.uid() == old_uid => {
            let (role, master) = replication_role(&old_ip).await?;
            assert_eq!(
                (role.as_str(), master.as_str()),
                ("slave", primary_ip.as_str()),
                "the old primary {old} came back as {role} of {master:?}"
            );
            eprintln!("{prefix}: the old primary {old} came back as a replica");
        }
        _ => eprintln!("{prefix}: the old primary's pod {old} was replaced during the outage"),
    }
    assert_eq!(
        service_addresses(&ns).await?,
        vec![primary_ip.clone()],
        "the {NAME} Service routes to the primary only"
    );

    tokio::time::sleep(Duration::from_secs(2)).await;
    for writer in writers {
        writer.stop().await;
    }
    let history = History::take(&history);
    let lost = lost_on(&primary_ip, PORT, PASSWORD, &history.acks).await?;
    let overlaps = overlapping(&history.acks);
    let servers: BTreeSet<&str> = history.acks.iter().map(|a| a.server.as_str()).collect();
    eprintln!(
        "{prefix}: {} writes acknowledged by {} primaries, {} not acknowledged, {} lost, {} \
         overlapping acknowledgements",
        history.acks.len(),
        servers.len(),
        history.unacknowledged,
        lost.len(),
        overlaps.len()
    );
    history.assert_safe(&lost, &overlaps, "");
    assert!(
        servers.len() >= 2,
        "no write was acknowledged after the failover: {servers:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_stopped_primary_node_is_failed_over_and_its_pod_replaced_elsewhere() -> Result<(), Error>
{
    primary_node_lost(NodeFault::Stop, "node-stop").await
}

#[tokio::test]
async fn a_frozen_primary_node_is_failed_over_and_comes_back_as_a_replica() -> Result<(), Error> {
    primary_node_lost(NodeFault::Freeze, "node-freeze").await
}

#[tokio::test]
async fn a_partitioned_primary_node_is_failed_over_and_comes_back_as_a_replica() -> Result<(), Error>
{
    primary_node_lost(NodeFault::Partition, "node-partition").await
}

/// The pods of `name`, once there are `count`, all Ready and on `node`; they must also carry
/// what `placed` checks.
async fn wait_placed(
    ns: &TestNamespace,
    name: &str,
    count: usize,
    node_name: &str,
    placed: impl Fn(&Pod) -> Result<(), String>,
) -> Result<Vec<Pod>, Error> {
    e2e::wait_for(
        &format!("{name}: {count} Ready pods on {node_name}"),
        CONVERGE,
        || async {
            let pods = pods::of_redis(&ns.api(), name).await?;
            let live: Vec<Pod> = pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .cloned()
                .collect();
            let done = pods.len() == count
                && live.len() == count
                && live
                    .iter()
                    .all(|p| e2e::pods::is_ready(p) && node::node_of(p) == Some(node_name));
            if !done {
                return Err(pods::describe_all(&pods));
            }
            for pod in &live {
                placed(pod).map_err(|e| format!("{}: {e}", pod.name_any()))?;
            }
            Ok(live)
        },
    )
    .await
}

/// A Redis's placement reaches its pods on the real nodes: they run where `nodeSelector` says,
/// carry the user's labels, annotations, toleration and priority class beside the operator's
/// own labels, and move when the selector names another node (the pod spec hash covers it).
#[tokio::test]
async fn placement_puts_the_pods_where_the_spec_says_and_moves_them_when_it_changes()
-> Result<(), Error> {
    let _one_at_a_time = NODES.lock().await;
    let (cluster, ns, _operator) = node::setup("placement").await?;
    let real = node::require_real_node(&cluster).await?;
    let names: Vec<String> = real.iter().map(ResourceExt::name_any).collect();
    let [.., first, second] = names.as_slice() else {
        return Err(Error::process(
            "placement",
            format!("needs 2 real nodes to move pods between, the bed has {names:?}"),
        ));
    };

    // A PriorityClass of this test's own (cluster-scoped: named after the namespace).
    let priority_name = format!("{}-priority", ns.name());
    let priorities: Api<PriorityClass> = Api::all(cluster.client());
    let class: PriorityClass = serde_json::from_value(serde_json::json!({
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": priority_name},
        "value": 1000,
        "description": "e2e placement test",
    }))
    .map_err(|e| Error::process("the PriorityClass", e.to_string()))?;
    priorities
        .create(&PostParams::default(), &class)
        .await
        .context("creating the PriorityClass")?;

    let hostname =
        |node: &str| BTreeMap::from([("kubernetes.io/hostname".to_owned(), node.to_owned())]);
    let spec = RedisSpec {
        replicas: Some(2),
        image: Some(REDIS_IMAGE.into()),
        node_selector: Some(hostname(first)),
        pod_labels: Some(BTreeMap::from([("team".to_owned(), "payments".to_owned())])),
        pod_annotations: Some(BTreeMap::from([(
            "example.com/owner".to_owned(),
            "cache-team".to_owned(),
        )])),
        tolerations: Some(vec![Toleration {
            key: Some("example.com/dedicated".into()),
            operator: Some("Exists".into()),
            effect: Some("NoSchedule".into()),
            ..Toleration::default()
        }]),
        priority_class_name: Some(priority_name.clone()),
        ..RedisSpec::default()
    };
    let redis: Api<Redis> = ns.api();
    redis
        .create(&PostParams::default(), &Redis::new(NAME, spec))
        .await
        .context("creating the Redis")?;

    let placed = |pod: &Pod| -> Result<(), String> {
        let labels = pod.labels();
        if labels.get("team").map(String::as_str) != Some("payments") {
            return Err(format!("labels {labels:?} lack team=payments"));
        }
        for (key, value) in api::pods::selector_labels(NAME) {
            if labels.get(&key) != Some(&value) {
                return Err(format!(
                    "labels {labels:?} lack the operator's {key}={value}"
                ));
            }
        }
        let annotations = pod.annotations();
        if annotations.get("example.com/owner").map(String::as_str) != Some("cache-team") {
            return Err(format!(
                "annotations {annotations:?} lack example.com/owner"
            ));
        }
        let spec = pod.spec.as_ref().ok_or("no spec")?;
        let tolerated = spec
            .tolerations
            .iter()
            .flatten()
            .any(|t| t.key.as_deref() == Some("example.com/dedicated"));
        if !tolerated {
            return Err(format!(
                "tolerations {:?} lack example.com/dedicated",
                spec.tolerations
            ));
        }
        if spec.priority != Some(1000) {
            return Err(format!(
                "priority {:?} (class {:?}), not 1000",
                spec.priority, spec.priority_class_name
            ));
        }
        Ok(())
    };
    let pods = wait_placed(&ns, NAME, 2, first, placed).await?;
    eprintln!("placement: {}", pods::describe_all(&pods));

    // A new selector moves the pods, one at a time, to the other node.
    let patch = serde_json::json!({"spec": {"nodeSelector": hostname(second)}});
    redis
        .patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .context("changing the nodeSelector")?;
    let moved = wait_placed(&ns, NAME, 2, second, placed).await?;
    eprintln!("placement: moved: {}", pods::describe_all(&moved));

    redis
        .delete(NAME, &DeleteParams::default())
        .await
        .context("deleting the Redis")?;
    priorities
        .delete(&priority_name, &DeleteParams::default())
        .await
        .context("deleting the PriorityClass")?;
    Ok(())
}
