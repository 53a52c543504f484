//! The bed's real nodes (`hack/cluster/node/`): each kubelet + containerd + runc + a CNI bridge,
//! so pods really run. Tests that need real processes put their namespace there with
//! [`NamespaceOptions::real_node`](crate::NamespaceOptions::real_node) and talk to Redis through
//! the pod IPs with the machine's own `redis-cli` (installed by `hack/cluster/node/packages.sh`);
//! [`fault`] stops, freezes, partitions and heals a node (`hack/cluster/fault.sh`); the
//! runtime's view of a container (its pid, its command line) comes from the node's containerd.
//!
//! What a Redis says about itself is in [`conditions`](crate::conditions), its pods in
//! [`pods`](crate::pods), the Secrets a test writes in [`secrets`](crate::secrets).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use tokio::process::Command;

use crate::{Cluster, Context, Error, TestNamespace, repo_root};

/// The real nodes' names are this and their index (`node_use` in `hack/cluster/node/node.sh`).
pub const NODE_NAME_PREFIX: &str = "real-node-";
/// Label (value `real`) and taint key of the real nodes.
pub const NODE_LABEL: &str = "redis-operator.dev/node";
/// The Redis image `hack/cluster/images.sh base` builds from Debian's redis-server and imports.
pub const REDIS_IMAGE: &str = "localhost/redis:bed";
/// An image no registry has: every registry resolves to a closed port on 127.0.0.1 on the bed,
/// so the pull fails at once and nothing leaves the machine.
pub const MISSING_IMAGE: &str = "localhost/redis:no-such-tag";

/// The host's own address on the bed (`HOST_IP` on the bridge `redisbed0` in
/// `hack/cluster/node/node.sh`). The host's connections to a pod otherwise leave from the pod's
/// node's bridge address, as the controller's do: a test's clients bound here stay through a
/// cut of that path (`fault.sh path-cut`).
pub const HOST_ADDRESS: std::net::IpAddr =
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 88, 0, 1));

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
    run_fault_script(&[fault.verb(), node]).await
}

/// Cuts the controller's path to pod `ip` (`hack/cluster/fault.sh path-cut`): the host's
/// connections from the pod's node's address are dropped both ways; clients bound to
/// [`HOST_ADDRESS`], the pod's kubelet and the other pods still reach it. Healed by
/// [`PathHealOnDrop`].
pub async fn cut_path(ip: &str) -> Result<(), Error> {
    run_fault_script(&["path-cut", ip]).await
}

async fn run_fault_script(args: &[&str]) -> Result<(), Error> {
    let script = repo_root().join("hack/cluster/fault.sh");
    let run = Command::new(&script)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let what = format!("{} {}", script.display(), args.join(" "));
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

/// Runs `commands` (one per line, words split on spaces) on one connection of
/// `redis-cli -h host -p port <options>`, and returns each answer's line. One connection matters
/// for `WAIT`, which counts the replicas that have the connection's own last write: on a new
/// connection it answers at once with every replica linked, whether it has a write yet or not.
pub async fn redis_cli_lines(
    host: &str,
    port: u16,
    options: &[&str],
    commands: &[&str],
) -> Result<Vec<String>, Error> {
    let port = port.to_string();
    let what = format!("redis-cli -h {host} -p {port} <<< {commands:?}");
    let mut child = Command::new("redis-cli")
        .args(["-h", host, "-p", &port])
        .args(options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            Error::process(
                "running redis-cli (hack/cluster/node/packages.sh installs it)",
                e,
            )
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        let script = commands
            .iter()
            .map(|c| format!("{c}\n"))
            .collect::<String>();
        stdin
            .write_all(script.as_bytes())
            .await
            .map_err(|e| Error::process(&what, e))?;
    }
    let output = tokio::time::timeout(REDIS_CLI_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| Error::process(&what, "no answer"))?
        .map_err(|e| Error::process(&what, e))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(Error::process(
            what,
            format!(
                "{stdout} {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    Ok(stdout.lines().map(|l| l.trim().to_owned()).collect())
}

/// Runs the machine's `redis-cli -h HOST -p PORT ARGS...`; its output. redis-cli prints an
/// error reply and still exits 0 when not on a terminal: an answer starting with `ERR` is a
/// failure whose reason holds it.
pub async fn redis_cli(host: &str, port: u16, args: &[&str]) -> Result<String, Error> {
    let port = port.to_string();
    let what = format!("redis-cli -h {host} -p {port} {args:?}");
    let run = Command::new("redis-cli")
        .args(["-h", host, "-p", &port])
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(REDIS_CLI_TIMEOUT, run)
        .await
        .map_err(|_| Error::process(&what, "no answer"))?
        .map_err(|e| {
            Error::process(
                "running redis-cli (hack/cluster/node/packages.sh installs it)",
                e,
            )
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() && !stdout.starts_with("ERR") {
        Ok(stdout)
    } else {
        Err(Error::process(
            what,
            format!(
                "{stdout} {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
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

/// Heals the path [`cut_path`] cut when dropped (`hack/cluster/fault.sh path-heal`).
pub struct PathHealOnDrop(pub String);

impl Drop for PathHealOnDrop {
    fn drop(&mut self) {
        let script = repo_root().join("hack/cluster/fault.sh");
        let _ = std::process::Command::new(script)
            .args(["path-heal", &self.0])
            .status();
    }
}

/// The socket of a real node's containerd.
fn containerd_socket(node: &str) -> PathBuf {
    repo_root().join(format!(".cluster/node/{node}/containerd/containerd.sock"))
}

/// The containerd id of the pod's container `container`, and the node it runs on.
fn container_id<'p>(pod: &'p Pod, container: &str) -> Result<(&'p str, &'p str), Error> {
    let what = format!("the container {container} of {}", pod.name_any());
    let id = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == container))
        .and_then(|c| c.container_id.as_deref())
        .and_then(|id| id.strip_prefix("containerd://"))
        .ok_or_else(|| {
            Error::process(
                &what,
                format!("container {container} has no containerd id yet"),
            )
        })?;
    let node = node_of(pod).ok_or_else(|| Error::process(&what, "the pod is not scheduled yet"))?;
    Ok((id, node))
}

/// The command line the runtime was given for the pod's container `container` (its OCI spec's
/// `process.args`, as `crictl inspect` shows it to whoever may use the runtime's socket).
pub async fn runtime_command_line(pod: &Pod, container: &str) -> Result<Vec<String>, Error> {
    let (id, node) = container_id(pod, container)?;
    let output = Command::new("ctr")
        .arg("--address")
        .arg(containerd_socket(node))
        .args(["--namespace", "k8s.io", "containers", "info", id])
        .output()
        .await
        .map_err(|e| Error::process("running ctr", e))?;
    let info: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::process(format!("reading ctr containers info {id}"), e))?;
    serde_json::from_value(info["Spec"]["process"]["args"].clone()).map_err(|e| {
        Error::process(
            format!("the OCI spec of {id}"),
            format!("no process.args: {e}"),
        )
    })
}

/// The host pid of the main process of the pod's container `container`, from the runtime.
pub async fn container_pid(pod: &Pod, container: &str) -> Result<u32, Error> {
    let (id, node) = container_id(pod, container)?;
    let output = Command::new("ctr")
        .arg("--address")
        .arg(containerd_socket(node))
        .args(["--namespace", "k8s.io", "task", "ls"])
        .output()
        .await
        .map_err(|e| Error::process("running ctr", e))?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(id)).then(|| words.next()?.parse().ok())?
        })
        .ok_or_else(|| {
            Error::process(
                format!("finding the task {id}"),
                format!("no running task {id} in {node}'s containerd"),
            )
        })
}

/// Sends `signal` (e.g. `KILL`, `STOP`) to a host process, as root on the machine would.
pub async fn signal(pid: u32, signal: &str) -> Result<(), Error> {
    let status = Command::new("kill")
        .args(["-s", signal, &pid.to_string()])
        .status()
        .await
        .map_err(|e| Error::process("running kill", e))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::process(format!("kill -s {signal} {pid}"), status))
    }
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

/// `GET url` with the machine's curl: the body.
pub async fn http_get(url: &str) -> Result<String, Error> {
    let run = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--max-time", "5", url])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = run
        .await
        .map_err(|e| Error::process(format!("running curl {url}"), e))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(Error::process(
            format!("curl {url}"),
            String::from_utf8_lossy(&output.stderr).trim(),
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
