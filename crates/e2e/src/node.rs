//! The bed's real nodes (`hack/cluster/node/`): each kubelet + containerd + runc + a CNI bridge,
//! so pods really run. Tests that need real processes put their namespace there with
//! [`NamespaceOptions::real_node`](crate::NamespaceOptions::real_node) and talk to Redis through
//! the pod IPs with the machine's own `redis-cli` (installed by `hack/cluster/node/packages.sh`);
//! [`fault`] stops, freezes, partitions and heals a node (`hack/cluster/fault.sh`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Secret, Service};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use tokio::process::Command;

use api::Redis;

use crate::{Cluster, Context, Error, TestNamespace, repo_root, seen, wait_for};

/// The real nodes' names are this and their index (`node_use` in `hack/cluster/node/node.sh`).
pub const NODE_NAME_PREFIX: &str = "real-node-";
/// Label (value `real`) and taint key of the real nodes.
pub const NODE_LABEL: &str = "redis-operator.dev/node";
/// The Redis image `hack/cluster/images.sh base` builds from Debian's redis-server and imports.
pub const REDIS_IMAGE: &str = "localhost/redis:bed";
/// An image no registry has: every registry resolves to a closed port on 127.0.0.1 on the bed,
/// so the pull fails at once and nothing leaves the machine.
pub const MISSING_IMAGE: &str = "localhost/redis:no-such-tag";

/// How long one `redis-cli` call may take.
const REDIS_CLI_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `node` is one of the bed's real nodes.
pub fn is_real_node(node: &str) -> bool {
    node.starts_with(NODE_NAME_PREFIX)
}

/// The node a pod was scheduled to.
pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// Whether a node's Ready condition is True.
pub fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Checks that the cluster has real nodes and that they are all Ready: a test that needs real
/// processes fails here, with a hint, instead of waiting for pods that will never run. Returns
/// them, by name.
pub async fn require_real_node(cluster: &Cluster) -> Result<Vec<Node>, Error> {
    let nodes: Api<Node> = Api::all(cluster.client());
    let mut real = nodes
        .list(&ListParams::default().labels(&format!("{NODE_LABEL}=real")))
        .await
        .context("listing the real nodes")?
        .items;
    real.sort_by_key(|n| n.name_any());
    if real.is_empty() {
        return Err(Error::Process {
            what: "finding the real nodes".into(),
            reason: format!(
                "the cluster has no node labelled {NODE_LABEL}=real; the local test bed starts \
                 them (make cluster-up, see hack/cluster/README.md)"
            ),
        });
    }
    let not_ready: Vec<String> = real
        .iter()
        .filter(|n| !node_ready(n))
        .map(|n| n.name_any())
        .collect();
    if not_ready.is_empty() {
        Ok(real)
    } else {
        Err(Error::Process {
            what: format!("using the real nodes {not_ready:?}"),
            reason: "not Ready (see .cluster/logs/kubelet-<node>.log; hack/cluster/fault.sh \
                     status shows a fault left in place)"
                .into(),
        })
    }
}

/// A node fault of `hack/cluster/fault.sh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFault {
    /// kubelet, containerd and the node's containers killed.
    Stop,
    /// The node's containers frozen, kubelet and containerd stopped.
    Freeze,
    /// The node's pods cut off from the other nodes and the host, kubelet stopped.
    Partition,
    /// Whichever of the three the node has, undone.
    Heal,
}

impl NodeFault {
    pub fn verb(self) -> &'static str {
        match self {
            Self::Stop => "node-stop",
            Self::Freeze => "node-freeze",
            Self::Partition => "node-partition",
            Self::Heal => "node-heal",
        }
    }
}

/// Runs `hack/cluster/fault.sh VERB NODE` (needs root, as the bed does).
pub async fn fault(fault: NodeFault, node: &str) -> Result<(), Error> {
    let script = repo_root().join("hack/cluster/fault.sh");
    let run = Command::new(&script)
        .args([fault.verb(), node])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let what = format!("{} {} {node}", script.display(), fault.verb());
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .map_err(|_| Error::Process {
            what: what.clone(),
            reason: "did not finish within 120 s".into(),
        })?
        .map_err(|e| Error::Process {
            what: what.clone(),
            reason: e.to_string(),
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::Process {
            what,
            reason: format!(
                "{}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        })
    }
}

/// The pod's IP, once it has one.
pub fn pod_ip(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.pod_ip.as_deref()
}

/// Runs the machine's `redis-cli -h HOST -p PORT ARGS...`; its output, or why it failed.
pub async fn redis_cli(host: &str, port: u16, args: &[&str]) -> Result<String, String> {
    let port = port.to_string();
    let run = Command::new("redis-cli")
        .args(["-h", host, "-p", &port])
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(REDIS_CLI_TIMEOUT, run)
        .await
        .map_err(|_| format!("redis-cli -h {host} -p {port} {args:?}: no answer"))?
        .map_err(|e| {
            format!("running redis-cli (hack/cluster/node/packages.sh installs it): {e}")
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() && !stdout.starts_with("ERR") {
        Ok(stdout)
    } else {
        Err(format!(
            "redis-cli -h {host} -p {port} {args:?}: {stdout} {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Heals the node when dropped (`hack/cluster/fault.sh node-heal`, synchronously: `Drop` cannot
/// wait on a future), so a failing test does not leave it faulted for the next.
pub struct HealOnDrop(pub String);

impl Drop for HealOnDrop {
    fn drop(&mut self) {
        let script = repo_root().join("hack/cluster/fault.sh");
        let _ = std::process::Command::new(script)
            .args([NodeFault::Heal.verb(), &self.0])
            .status();
    }
}

/// The socket of a real node's containerd.
fn containerd_socket(node: &str) -> PathBuf {
    repo_root().join(format!(".cluster/node/{node}/containerd/containerd.sock"))
}

/// The containerd id of the pod's container `container`, and the node it runs on.
fn container_id<'p>(pod: &'p Pod, container: &str) -> Result<(&'p str, &'p str), String> {
    let id = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == container))
        .and_then(|c| c.container_id.as_deref())
        .and_then(|id| id.strip_prefix("containerd://"))
        .ok_or_else(|| format!("container {container} has no containerd id yet"))?;
    let node = node_of(pod).ok_or_else(|| "the pod is not scheduled yet".to_owned())?;
    Ok((id, node))
}

/// The command line the runtime was given for the pod's container `container` (its OCI spec's
/// `process.args`, as `crictl inspect` shows it to whoever may use the runtime's socket).
pub async fn runtime_command_line(pod: &Pod, container: &str) -> Result<Vec<String>, String> {
    let (id, node) = container_id(pod, container)?;
    let output = Command::new("ctr")
        .arg("--address")
        .arg(containerd_socket(node))
        .args(["--namespace", "k8s.io", "containers", "info", id])
        .output()
        .await
        .map_err(|e| format!("running ctr: {e}"))?;
    let info: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("reading ctr containers info {id}: {e}"))?;
    serde_json::from_value(info["Spec"]["process"]["args"].clone())
        .map_err(|e| format!("the OCI spec of {id} has no process.args: {e}"))
}

/// The host pid of the main process of the pod's container `container`, from the runtime.
pub async fn container_pid(pod: &Pod, container: &str) -> Result<u32, String> {
    let (id, node) = container_id(pod, container)?;
    let output = Command::new("ctr")
        .arg("--address")
        .arg(containerd_socket(node))
        .args(["--namespace", "k8s.io", "task", "ls"])
        .output()
        .await
        .map_err(|e| format!("running ctr: {e}"))?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(id)).then(|| words.next()?.parse().ok())?
        })
        .ok_or_else(|| format!("no running task {id} in {node}'s containerd"))
}

/// Sends `signal` (e.g. `KILL`, `STOP`) to a host process, as root on the machine would.
pub async fn signal(pid: u32, signal: &str) -> Result<(), String> {
    let status = Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status()
        .await
        .map_err(|e| format!("running kill: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -s {signal} {pid}: {status}"))
    }
}

/// The pods of Redis `name` (terminating ones too), by name.
pub async fn pods_of(ns: &TestNamespace, name: &str) -> Result<Vec<Pod>, String> {
    let pods: Api<Pod> = ns.api();
    let mut list = pods
        .list(&ListParams::default().labels(&api::pods::selector_string(name)))
        .await
        .map_err(seen)?
        .items;
    list.sort_by_key(|p| p.name_any());
    Ok(list)
}

/// One line per pod: name, node, phase, readiness, restarts, role label and what its container
/// waits for, for failure messages.
pub fn describe(pods: &[Pod]) -> String {
    pods.iter()
        .map(|p| {
            let waiting = p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|cs| cs.first())
                .and_then(|c| c.state.as_ref())
                .and_then(|s| s.waiting.as_ref())
                .and_then(|w| w.reason.clone())
                .unwrap_or_default();
            let role = p
                .labels()
                .get(api::pods::ROLE_LABEL)
                .map(|r| format!(" role={r}"))
                .unwrap_or_default();
            format!(
                "{} {} restarts={}{role} {waiting}",
                p.name_any(),
                crate::pods::describe(p),
                restarts(p)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The status and reason of the Redis's condition `type_`, if it has one.
pub fn redis_condition(redis: &Redis, type_: &str) -> Option<(String, String)> {
    redis
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// The status, reason and message of the condition `type_` of the Redis `name`, read now (`Err`
/// says why not, for [`wait_for`]).
pub async fn read_condition(
    ns: &TestNamespace,
    name: &str,
    type_: &str,
) -> Result<(String, String, String), String> {
    let redis = ns.api::<Redis>().get(name).await.map_err(seen)?;
    redis
        .status
        .into_iter()
        .flat_map(|s| s.conditions)
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
        .ok_or_else(|| format!("no {type_} condition"))
}

/// How often the pod's first container was restarted.
pub fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .map_or(0, |c| c.restart_count)
}

/// Waits until the Redis has `replicas` Ready pods, one primary (labelled, in status) other than
/// `not`, every other pod its replica, and the Replicating condition True. Returns the primary.
pub async fn wait_replicating(
    ns: &TestNamespace,
    name: &str,
    replicas: usize,
    timeout: Duration,
    not: Option<&str>,
) -> Result<String, Error> {
    let redis: Api<Redis> = ns.api();
    wait_for(
        &format!("{name}: {replicas} pods replicating a primary other than {not:?}"),
        timeout,
        || async {
            let pods = pods_of(ns, name).await?;
            let status = redis
                .get(name)
                .await
                .map_err(seen)?
                .status
                .unwrap_or_default();
            let replicating = status
                .conditions
                .iter()
                .any(|c| c.type_ == "Replicating" && c.status == "True");
            let labelled: Vec<String> = pods
                .iter()
                .filter(|p| {
                    p.labels().get(api::pods::ROLE_LABEL).map(String::as_str)
                        == Some(api::pods::ROLE_PRIMARY)
                })
                .map(|p| p.name_any())
                .collect();
            let replicas_ok = status.members.len() == replicas
                && status
                    .members
                    .iter()
                    .filter(|m| m.role == "primary")
                    .count()
                    == 1
                && status
                    .members
                    .iter()
                    .filter(|m| m.role == "replica")
                    .count()
                    == replicas - 1;
            let all_ready = pods.len() == replicas
                && pods
                    .iter()
                    .all(|p| crate::pods::is_ready(p) && p.metadata.deletion_timestamp.is_none());
            match (&status.primary, labelled.as_slice()) {
                (Some(primary), [one])
                    if one == primary
                        && Some(primary.as_str()) != not
                        && replicating
                        && replicas_ok
                        && all_ready =>
                {
                    Ok(primary.clone())
                }
                _ => Err(format!(
                    "primary={:?} labelled={labelled:?} members={:?} conditions={:?}; pods: {}",
                    status.primary,
                    status.members,
                    status
                        .conditions
                        .iter()
                        .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
                        .collect::<Vec<_>>(),
                    describe(&pods)
                )),
            }
        },
    )
    .await
}

/// Waits until a pod other than `old` is labelled primary and named primary in the status: the
/// failover happened, whatever state the lost node's pod is in.
pub async fn wait_promoted(
    ns: &TestNamespace,
    name: &str,
    old: &str,
    timeout: Duration,
) -> Result<String, Error> {
    let redis: Api<Redis> = ns.api();
    wait_for(
        &format!("{name}: a primary other than {old}"),
        timeout,
        || async {
            let status = redis
                .get(name)
                .await
                .map_err(seen)?
                .status
                .unwrap_or_default();
            let pods = pods_of(ns, name).await?;
            let labelled: Vec<String> = pods
                .iter()
                .filter(|p| {
                    p.labels().get(api::pods::ROLE_LABEL).map(String::as_str)
                        == Some(api::pods::ROLE_PRIMARY)
                })
                .map(|p| p.name_any())
                .collect();
            match (&status.primary, labelled.as_slice()) {
                (Some(primary), [one]) if one == primary && primary != old => Ok(primary.clone()),
                _ => Err(format!(
                    "primary={:?} labelled={labelled:?}; pods: {}",
                    status.primary,
                    describe(&pods)
                )),
            }
        },
    )
    .await
}

/// The usual start of a real-node test: the cluster (which must have the real node), a fresh
/// namespace enforcing Pod Security "restricted" whose pods all land on the real node, and the
/// operator running for it.
pub async fn setup(
    prefix: &str,
) -> Result<(Cluster, TestNamespace, crate::operator::Operator), Error> {
    let cluster = Cluster::connect().await?;
    require_real_node(&cluster).await?;
    let ns = cluster
        .namespace_with(
            prefix,
            crate::NamespaceOptions::default()
                .pod_security("restricted")
                .real_node(),
        )
        .await?;
    let operator = crate::operator::Operator::start(&cluster, &ns).await?;
    Ok((cluster, ns, operator))
}

/// The ClusterIP of Service `name`, once it has one.
pub async fn service_ip(
    ns: &TestNamespace,
    name: &str,
    timeout: Duration,
) -> Result<String, Error> {
    let services: Api<Service> = ns.api();
    wait_for(&format!("Service {name}"), timeout, || async {
        let service = services.get(name).await.map_err(seen)?;
        service
            .spec
            .and_then(|s| s.cluster_ip)
            .filter(|ip| ip != "None")
            .ok_or_else(|| "no ClusterIP".to_owned())
    })
    .await
}

/// Creates Secret `name` holding `password` under the key `password` (what `spec.auth` reads).
pub async fn create_password_secret(
    ns: &TestNamespace,
    name: &str,
    password: &str,
) -> Result<(), Error> {
    let data = BTreeMap::from([(
        "password".to_owned(),
        k8s_openapi::ByteString(password.as_bytes().to_vec()),
    )]);
    put_secret(ns, name, None, data).await
}

/// Creates or replaces Secret `name` (of `type_`, default Opaque) with `data` (server-side
/// apply, forced: the test owns it).
pub async fn put_secret(
    ns: &TestNamespace,
    name: &str,
    type_: Option<&str>,
    data: BTreeMap<String, k8s_openapi::ByteString>,
) -> Result<(), Error> {
    let secrets: Api<Secret> = ns.api();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        type_: type_.map(str::to_owned),
        data: Some(data),
        ..Secret::default()
    };
    secrets
        .patch(
            name,
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&secret),
        )
        .await
        .context(format!("writing the Secret {name}"))?;
    Ok(())
}

/// Of `written` (key, value) pairs, the keys whose value `con` does not hold: writes lost.
pub async fn missing_writes(
    con: &mut redis::aio::MultiplexedConnection,
    written: &[(String, u64)],
) -> Result<Vec<String>, Error> {
    let mut missing = Vec::new();
    for chunk in written.chunks(500) {
        let keys: Vec<&str> = chunk.iter().map(|(k, _)| k.as_str()).collect();
        let values: Vec<Option<u64>> = redis::cmd("MGET")
            .arg(&keys)
            .query_async(con)
            .await
            .map_err(|e| Error::Process {
                what: "MGET".into(),
                reason: e.to_string(),
            })?;
        for ((key, value), held) in chunk.iter().zip(values) {
            if held != Some(*value) {
                missing.push(key.clone());
            }
        }
    }
    Ok(missing)
}

/// `GET url` with the machine's curl: the body.
pub async fn http_get(url: &str) -> Result<String, String> {
    let run = tokio::process::Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--max-time", "5", url])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = run.await.map_err(|e| format!("running curl {url}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "curl {url}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The value of the sample `name` (with its labels, as exposed: `redis_db_keys{db="db0"}`).
pub fn sample<'a>(metrics: &'a str, name: &str) -> Option<&'a str> {
    metrics.lines().find_map(|line| {
        let (key, value) = line.rsplit_once(' ')?;
        (key == name).then_some(value)
    })
}
