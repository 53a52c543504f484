//! Randomized faults against a Replication Redis on the real node, Jepsen's way (DESIGN §9,
//! issue "Failover that never loses an acknowledged write"): two writers do unique-key `SET` +
//! `WAIT 1` through the `<name>` Service and record every write with the pod that acknowledged
//! it and when; a seeded random sequence of faults hits the primary or a replica (its pod, its
//! process, its whole node stopped, frozen or cut off, or only the controller's path to it),
//! the controller (killed, starved, or its leadership handed to a standby mid-failover) and the
//! API server, sometimes two faults at once; a checker reads the whole history at the end.
//! The controllers run with leader election, as the chart runs them.
//!
//! Split brain is watched for (issue #41, `e2e::witness`): a writer pinned to each pod on a
//! long-lived connection, reconnecting only after an error of the connection, so an old primary
//! that keeps acknowledging on held connections is written to; each pod's `ROLE` and the
//! Service's ready endpoints sampled into the history.
//!
//! The Redis runs as production users gate on it: TLS on its port, for replication and the
//! operator (issue #22), and ACL users with the default user disabled; the writers log in as
//! an ACL user over TLS, verifying the pods' certificate as the operator does. They connect
//! from the host's address ([`node::HOST_ADDRESS`]), so a cut of the controller's path to a pod
//! leaves them through.
//!
//! Checked: every acknowledged key is on the final primary with its value; no two pods
//! acknowledged writes at overlapping times; after each round's faults heal, the Redis is Ready
//! with every member linked and a write is acknowledged again (else the test fails naming the
//! round). Counts per fault kind, and the times two pods answered `master` at once, are
//! printed; nothing is timed.
//!
//! Knobs: `CHAOS_ROUNDS` (default 4, `make chaos ROUNDS=N` for long runs); `CHAOS_SEED`
//! (default: from the clock, printed, to replay a run); `CHAOS_FAULTS` (a comma-separated list
//! of kinds to draw from, such as `NodeStop,ProcessFreeze@replica,PathCut`: a fault name for
//! the fault at the primary, `@replica` for it at a replica; `all` for every kind; default: the
//! kinds of [`default_kinds`]); `CHAOS_OVERLAP` (default 0: the percentage of rounds in which
//! a second fault hits another pod before the first heals). `touch target/chaos-stop` ends a
//! run early, after the round under way, and still checks it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api::SecretKeyRef;
use e2e::certs::{TestCa, redis_dns_names};
use e2e::history::{History, Target, Writer, lost_on_target, masters_at_once, overlapping};
use e2e::node::{self, NodeFault};
use e2e::operator::Controller;
use e2e::replicated::Replicated;
use e2e::witness::Witnesses;
use e2e::{Context, Error, TestNamespace, repo_root, wait_for};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::DeleteParams;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const NAME: &str = "cache";
const PORT: u16 = 6379;
const PASSWORD: &str = "chaos-password";
/// The ACL user the writers log in as (the default user is disabled).
const WRITER: &str = "writer";
const WRITER_PASSWORD: &str = "chaos-writer-password";
const FAILOVER_AFTER: Duration = Duration::from_secs(3);
/// How long the Redis may take to be Ready with every member linked after a fault. The kubelet
/// holds back the restart of a container killed again and again for up to 5 minutes (its
/// CrashLoopBackOff): a long run kills one pod's redis-server often enough to reach that.
const CONVERGE: Duration = Duration::from_secs(360);
const DEFAULT_ROUNDS: usize = 4;
/// The controllers' Lease. A leader exits once its renewals lapse for 3/4 of it, as a starved
/// controller's or one facing a paused API server's do: long enough to outlast those faults (no
/// supervisor here restarts a controller that exited); a killed leader's successor waits for
/// it to expire.
const LEASE_SECONDS: &str = "30";

/// How long after a round's faults healed and the Redis converged a write must be acknowledged.
const PROGRESS: Duration = Duration::from_secs(60);

/// What a fault does, to the pod it is aimed at ([`Aim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    /// The pod deleted with no grace: its container may run on for a moment.
    PodForceDelete,
    /// The pod deleted as `kubectl delete` does.
    PodGracefulDelete,
    /// `SHUTDOWN NOSAVE`: its redis-server exits, the container restarts empty.
    ShutdownNosave,
    /// SIGKILL of its redis-server.
    ContainerKill,
    /// SIGSTOP of its redis-server, then SIGCONT: at the primary, for longer than
    /// failoverAfter (it comes back believing it is the primary).
    ProcessFreeze,
    /// The primary's redis-server killed, then the controller killed (-9) mid-failover and a
    /// new one started.
    ControllerKill,
    /// The primary's redis-server killed, then the controller stopped (SIGSTOP) for a few
    /// seconds: a starved controller.
    ControllerStarve,
    /// A standby controller waits beside the leader; the primary's redis-server is killed, and
    /// the leader goes mid-failover (SIGTERM, releasing its Lease, or SIGKILL, leaving the
    /// standby to wait for the Lease to expire): the standby carries the failover on.
    LeaderChange,
    /// The primary's redis-server killed, then kube-apiserver stopped (SIGSTOP) for a few
    /// seconds while the controller fails over.
    ApiServerPause,
    /// Its node stopped (`hack/cluster/fault.sh node-stop`).
    NodeStop,
    /// Its node frozen (`node-freeze`).
    NodeFreeze,
    /// Its node cut off (`node-partition`).
    NodePartition,
    /// Only the controller's path to it cut (`fault.sh path-cut`): the clients, its kubelet and
    /// the other pods still reach it. At the primary, its replicas still hear it, so the
    /// controller must not fail it over (DESIGN §3b rule 4, `plan::heard_by`).
    PathCut,
}

const FAULTS: [Fault; 13] = [
    Fault::PodForceDelete,
    Fault::PodGracefulDelete,
    Fault::ShutdownNosave,
    Fault::ContainerKill,
    Fault::ProcessFreeze,
    Fault::ControllerKill,
    Fault::ControllerStarve,
    Fault::LeaderChange,
    Fault::ApiServerPause,
    Fault::NodeStop,
    Fault::NodeFreeze,
    Fault::NodePartition,
    Fault::PathCut,
];

impl Fault {
    /// The node fault, for the faults that take a pod's whole node.
    fn node_fault(self) -> Option<NodeFault> {
        match self {
            Fault::NodeStop => Some(NodeFault::Stop),
            Fault::NodeFreeze => Some(NodeFault::Freeze),
            Fault::NodePartition => Some(NodeFault::Partition),
            _ => None,
        }
    }

    /// Whether it can hit any pod (a replica, or the other pod of two overlapping faults); the
    /// controller and API-server faults act around a kill of the primary.
    fn aimable(self) -> bool {
        !matches!(
            self,
            Fault::ControllerKill
                | Fault::ControllerStarve
                | Fault::LeaderChange
                | Fault::ApiServerPause
        )
    }

    /// Whether it stays in place until the round heals it (at the primary, once another pod
    /// took over; at a replica, after a few seconds).
    fn held(self) -> bool {
        self.node_fault().is_some() || matches!(self, Fault::ProcessFreeze | Fault::PathCut)
    }
}

/// Which pod the round's first fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Aim {
    Primary,
    /// One of the replicas, drawn.
    Replica,
}

/// A kind of round: a fault and the pod it is aimed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Kind {
    fault: Fault,
    aim: Aim,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.aim {
            Aim::Primary => write!(f, "{:?}", self.fault),
            Aim::Replica => write!(f, "{:?}@replica", self.fault),
        }
    }
}

/// Every kind of round: each fault at the primary, each that can hit any pod at a replica.
fn all_kinds() -> Vec<Kind> {
    let at = |aim| move |fault| Kind { fault, aim };
    FAULTS
        .into_iter()
        .map(at(Aim::Primary))
        .chain(
            FAULTS
                .into_iter()
                .filter(|f| f.aimable())
                .map(at(Aim::Replica)),
        )
        .collect()
}

/// The kinds drawn without `CHAOS_FAULTS` (`make test`'s 4 rounds, `make chaos`): every fault
/// at the primary but the cut of the controller's path. The kinds left out
/// (`CHAOS_FAULTS=all` draws them) can reach open defects of issue #41.
fn default_kinds() -> Vec<Kind> {
    all_kinds()
        .into_iter()
        .filter(|k| k.aim == Aim::Primary && k.fault != Fault::PathCut)
        .collect()
}

/// The kinds `CHAOS_FAULTS` names (`all`: every kind), or the default ones.
fn chosen_kinds() -> Result<Vec<Kind>, Error> {
    let Ok(list) = std::env::var("CHAOS_FAULTS") else {
        return Ok(default_kinds());
    };
    if list.trim() == "all" {
        return Ok(all_kinds());
    }
    let all = all_kinds();
    list.split(',')
        .map(|name| {
            all.iter()
                .copied()
                .find(|k| k.to_string() == name.trim())
                .ok_or_else(|| {
                    Error::process(
                        format!("reading CHAOS_FAULTS={list}"),
                        format!(
                            "{name:?} is none of {}",
                            all.iter()
                                .map(Kind::to_string)
                                .collect::<Vec<_>>()
                                .join(",")
                        ),
                    )
                })
        })
        .collect()
}

fn env_number(name: &str) -> Result<Option<u64>, Error> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map(Some)
            .map_err(|e| Error::process(format!("reading {name}={v}"), format!("{e}"))),
        Err(_) => Ok(None),
    }
}

/// The bed's kube-apiserver process (the chaos test pauses it): from its pid file.
fn api_server_pid() -> Result<u32, Error> {
    let dir = std::env::var_os("CLUSTER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".cluster"));
    let file = dir.join("pids/kube-apiserver.pid");
    let text = std::fs::read_to_string(&file).map_err(|e| {
        Error::process(
            format!("reading {}", file.display()),
            format!("{e} (the API-server fault needs the local test bed: make cluster-up)"),
        )
    })?;
    text.trim()
        .parse()
        .map_err(|e| Error::process(format!("reading {}", file.display()), format!("{e}")))
}

async fn pod(ns: &TestNamespace, name: &str) -> Result<Pod, Error> {
    let pods: Api<Pod> = ns.api();
    pods.get(name).await.context(format!("reading pod {name}"))
}

/// The host pid of the pod's redis-server. The pod's status can still name a container the
/// kubelet has just replaced (a restart after the last fault), so it is read again until the
/// runtime has a running task of that id.
async fn redis_pid(ns: &TestNamespace, name: &str) -> Result<u32, Error> {
    wait_for(
        &format!("{name}'s running redis-server"),
        Duration::from_secs(60),
        || async {
            let victim = pod(ns, name).await?;
            Ok(node::container_pid(&victim, "redis").await?)
        },
    )
    .await
}

async fn signal(pid: u32, sig: &str, what: &str) -> Result<(), Error> {
    node::signal(pid, sig)
        .await
        .map_err(|reason| Error::process(format!("{sig} to {what}"), reason))
}

/// The test's world: what the faults act on.
struct Bed {
    ns: TestNamespace,
    operator: e2e::operator::Operator,
    controllers_started: u32,
    /// How the test reaches the pods (the writers' login, over TLS).
    target: Target,
}

impl Bed {
    /// Another `--leader-elect` controller of the test's operator: it leads once the Lease is
    /// free.
    async fn start_controller(&mut self) -> Result<Controller, Error> {
        self.controllers_started += 1;
        let name = format!("redis-controller-{}", self.controllers_started);
        Controller::start_elected(&self.ns, &self.operator.identity, &name, LEASE_SECONDS).await
    }

    /// Applies `fault` to pod `victim` (the primary for the faults that are not
    /// [`Fault::aimable`]). Returns what heals it when dropped, for the faults still in place.
    async fn inject(
        &mut self,
        fault: Fault,
        victim: &str,
        rng: &mut StdRng,
    ) -> Result<Held, Error> {
        let pods: Api<Pod> = self.ns.api();
        if let Some(node_fault) = fault.node_fault() {
            let name = node_name(&self.ns, victim).await?;
            node::fault(node_fault, &name).await?;
            return Ok(Some(Box::new(node::HealOnDrop(name))));
        }
        match fault {
            Fault::PodForceDelete => {
                pods.delete(victim, &DeleteParams::default().grace_period(0))
                    .await
                    .context(format!("force-deleting {victim}"))?;
            }
            Fault::PodGracefulDelete => {
                pods.delete(victim, &DeleteParams::default())
                    .await
                    .context(format!("deleting {victim}"))?;
            }
            Fault::ShutdownNosave => {
                let ip = pods::ip(&pod(&self.ns, victim).await?)
                    .unwrap_or_default()
                    .to_owned();
                // The server exits before it answers: the error is the expected outcome.
                let _ = self
                    .target
                    .run(&ip, redis::cmd("SHUTDOWN").arg("NOSAVE"))
                    .await;
            }
            Fault::ContainerKill => {
                let pid = redis_pid(&self.ns, victim).await?;
                signal(pid, "KILL", victim).await?;
            }
            Fault::ProcessFreeze => {
                let pid = redis_pid(&self.ns, victim).await?;
                signal(pid, "STOP", victim).await?;
                return Ok(Some(Box::new(ContinueOnDrop(pid))));
            }
            Fault::PathCut => {
                let ip = pods::ip(&pod(&self.ns, victim).await?)
                    .ok_or_else(|| Error::process(format!("the IP of {victim}"), "none yet"))?
                    .to_owned();
                node::cut_path(&ip).await?;
                return Ok(Some(Box::new(node::PathHealOnDrop(ip))));
            }
            Fault::ControllerKill => {
                let pid = redis_pid(&self.ns, victim).await?;
                signal(pid, "KILL", victim).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                self.operator.controller.process.kill();
                let mut controller = self.start_controller().await?;
                controller.wait_leading(Duration::from_secs(60)).await?;
                self.operator.controller = controller;
            }
            Fault::LeaderChange => {
                let mut standby = self.start_controller().await?;
                standby.wait_ready(Duration::from_secs(60)).await?;
                let pid = redis_pid(&self.ns, victim).await?;
                signal(pid, "KILL", victim).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                let leader = self.operator.controller.process.pid();
                let how = if rng.random_bool(0.5) { "TERM" } else { "KILL" };
                signal(leader, how, "the leading controller").await?;
                standby.wait_leading(Duration::from_secs(60)).await?;
                self.operator.controller = standby;
            }
            Fault::ControllerStarve => {
                let pid = redis_pid(&self.ns, victim).await?;
                signal(pid, "KILL", victim).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                let controller = self.operator.controller.process.pid();
                signal(controller, "STOP", "the controller").await?;
                tokio::time::sleep(Duration::from_secs(rng.random_range(3..8))).await;
                signal(controller, "CONT", "the controller").await?;
            }
            Fault::ApiServerPause => {
                let api_server = api_server_pid()?;
                let pid = redis_pid(&self.ns, victim).await?;
                signal(pid, "KILL", victim).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                signal(api_server, "STOP", "kube-apiserver").await?;
                tokio::time::sleep(Duration::from_secs(rng.random_range(2..5))).await;
                signal(api_server, "CONT", "kube-apiserver").await?;
            }
            Fault::NodeStop | Fault::NodeFreeze | Fault::NodePartition => {}
        }
        Ok(None)
    }

    /// Plays a round: `round.kind` at `round.victim`, and the overlapping fault while it is in
    /// place; heals them (the second first); waits until the Redis converges (on a primary
    /// other than `primary` when the first fault hit it) and a write is acknowledged again.
    /// Counts each fault injected in `injected`. Returns the primary.
    async fn play(
        &mut self,
        round: &Round,
        primary: &str,
        history: &Mutex<History>,
        injected: &mut BTreeMap<String, u32>,
        rng: &mut StdRng,
    ) -> Result<String, Error> {
        let first = self.inject(round.kind.fault, &round.victim, rng).await?;
        *injected.entry(round.kind.to_string()).or_default() += 1;
        if let Some((fault, other)) = &round.second {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..2000))).await;
            let second = self.inject(*fault, other, rng).await?;
            *injected
                .entry(format!("{fault:?}+overlapping"))
                .or_default() += 1;
            tokio::time::sleep(Duration::from_secs(rng.random_range(2..10))).await;
            drop(second);
        }
        if round.kind.fault.held() {
            match (round.kind.aim, round.kind.fault) {
                // Long enough for the whole failover to happen while it is frozen: reads time
                // out (2 s a pass), failoverAfter runs, then the cut and the promotion passes.
                (Aim::Primary, Fault::ProcessFreeze) => {
                    tokio::time::sleep(FAILOVER_AFTER + Duration::from_secs(12)).await;
                }
                // The replicas still hear the primary, so the controller must not fail it over
                // (DESIGN §3b rule 4: not while its replicas hear it); held as long as a frozen
                // one, so that a controller that did would have promoted a replica by then.
                (Aim::Primary, Fault::PathCut) => {
                    tokio::time::sleep(FAILOVER_AFTER + Duration::from_secs(12)).await;
                }
                // Healed once a replica elsewhere took over (its pods may have been replaced
                // meanwhile); healed even when no failover came, when `first` drops.
                (Aim::Primary, _) => {
                    conditions::wait_promoted(&self.ns, NAME, primary, CONVERGE).await?;
                }
                (Aim::Replica, _) => {
                    tokio::time::sleep(Duration::from_secs(rng.random_range(2..12))).await;
                }
            }
        }
        drop(first);
        let healed = Instant::now();
        // A fault at the primary takes its data or its process away, so a new primary follows.
        // Waiting for one other than the old also keeps a status written before the fault (the
        // controller stopped, or not yet looking) from passing for the state after it.
        // A cut of the controller's path alone takes nothing away: the primary may stay.
        let not = (round.kind.aim == Aim::Primary && round.kind.fault != Fault::PathCut)
            .then_some(primary);
        let now = conditions::wait_replicating(&self.ns, NAME, 3, CONVERGE, not).await?;
        acknowledged_since(history, healed).await?;
        Ok(now)
    }

    /// Draws round `n`: its kind from `kinds`, the pod it hits, and (in `overlap` percent of
    /// rounds) a second fault at another pod, on another node when either is a node fault.
    async fn draw(
        &self,
        kinds: &[Kind],
        overlap: u64,
        primary: &str,
        rng: &mut StdRng,
    ) -> Result<Round, Error> {
        let kind = kinds[rng.random_range(0..kinds.len())];
        let members: Vec<String> = (0..3).map(|i| format!("{NAME}-{i}")).collect();
        let replicas: Vec<&String> = members.iter().filter(|m| *m != primary).collect();
        let victim = match kind.aim {
            Aim::Primary => primary.to_owned(),
            Aim::Replica => replicas[rng.random_range(0..replicas.len())].clone(),
        };
        if rng.random_range(0..100) >= overlap {
            return Ok(Round {
                kind,
                victim,
                second: None,
            });
        }
        let aimable: Vec<Fault> = kinds
            .iter()
            .map(|k| k.fault)
            .filter(|f| f.aimable())
            .collect();
        let fault = match aimable.as_slice() {
            [] => Fault::ContainerKill,
            faults => faults[rng.random_range(0..faults.len())],
        };
        let victim_node = node_name(&self.ns, &victim).await?;
        let mut others = Vec::new();
        for other in members.iter().filter(|m| **m != victim) {
            let apart = node_name(&self.ns, other).await? != victim_node;
            let node_faults = kind.fault.node_fault().is_some() || fault.node_fault().is_some();
            if apart || !node_faults {
                others.push(other.clone());
            }
        }
        let second = match others.as_slice() {
            [] => None,
            others => Some((fault, others[rng.random_range(0..others.len())].clone())),
        };
        Ok(Round {
            kind,
            victim,
            second,
        })
    }
}

/// What a round does: `kind` at `victim`, and a second fault at another pod while the first is
/// in place.
struct Round {
    kind: Kind,
    victim: String,
    second: Option<(Fault, String)>,
}

impl fmt::Display for Round {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.kind, self.victim)?;
        match &self.second {
            Some((fault, other)) => write!(f, ", then {fault:?} on {other} overlapping"),
            None => Ok(()),
        }
    }
}

/// A fault still in place, healed when dropped (its node, its path or its process).
type Held = Option<Box<dyn std::any::Any>>;

/// SIGCONT to a stopped process when dropped (synchronously: `Drop` cannot wait on a future),
/// so a failing round does not leave it stopped.
struct ContinueOnDrop(u32);

impl Drop for ContinueOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-s", "CONT", &self.0.to_string()])
            .status();
    }
}

/// The node pod `name` runs on.
async fn node_name(ns: &TestNamespace, name: &str) -> Result<String, Error> {
    let victim = pod(ns, name).await?;
    node::node_of(&victim)
        .map(str::to_owned)
        .ok_or_else(|| Error::process(format!("the node of {name}"), "not scheduled"))
}

/// Waits ([`PROGRESS`]) until a write sent after `since` is acknowledged.
async fn acknowledged_since(history: &Mutex<History>, since: Instant) -> Result<(), Error> {
    wait_for(
        "a write acknowledged after the faults healed and the Redis converged",
        PROGRESS,
        || async {
            let history = history.lock().unwrap_or_else(|e| e.into_inner());
            let acked = history
                .acks
                .iter()
                .rev()
                .take_while(|a| a.acked >= since)
                .any(|a| a.sent >= since);
            if acked {
                Ok(())
            } else {
                Err(format!(
                    "{} acknowledged in all, {} not, none sent since",
                    history.acks.len(),
                    history.unacknowledged
                ))
            }
        },
    )
    .await
}

/// A 3-pod Replication Redis with auth under a random sequence of faults; the history checked.
#[tokio::test]
async fn randomized_faults_lose_no_acknowledged_write() -> Result<(), Error> {
    let rounds = env_number("CHAOS_ROUNDS")?.map_or(DEFAULT_ROUNDS, |n| n as usize);
    let seed = match env_number("CHAOS_SEED")? {
        Some(seed) => seed,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    eprintln!("chaos: {rounds} rounds, CHAOS_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let kinds = chosen_kinds()?;
    let overlap = env_number("CHAOS_OVERLAP")?.unwrap_or(0).min(100);
    eprintln!(
        "chaos: drawing from {} with a second fault overlapping in {overlap}% of rounds",
        kinds
            .iter()
            .map(Kind::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    // The API-server fault needs the bed's kube-apiserver: fail now, not in the middle.
    api_server_pid()?;

    let (_cluster, ns, operator) = node::setup("chaos").await?;
    secrets::create_password_secret(&ns, "chaos-auth", PASSWORD).await?;
    secrets::create_password_secret(&ns, "chaos-writer", WRITER_PASSWORD).await?;
    let ca = TestCa::new("chaos CA")?;
    let issued = ca.issue(&redis_dns_names(NAME, ns.name()))?;
    secrets::put_secret(
        &ns,
        "chaos-tls",
        Some("kubernetes.io/tls"),
        ca.secret_data(&issued),
    )
    .await?;
    let mut primary = Replicated::new(NAME, 3, format!("{}s", FAILOVER_AFTER.as_secs()))
        .auth("chaos-auth")
        .tls("chaos-tls")
        .acl(api::AclSpec {
            default_user: Some(api::DefaultUser::Disabled),
            users: vec![api::AclUser {
                name: WRITER.into(),
                rules: "~* +@all".into(),
                password_secret_ref: SecretKeyRef {
                    name: "chaos-writer".into(),
                    key: None,
                },
            }],
        })
        .create_replicating(&ns, CONVERGE)
        .await?;
    let service = conditions::service_ip(&ns, NAME, CONVERGE).await?;
    let history = Arc::new(Mutex::new(History::default()));
    let origin = std::time::Instant::now();
    let mut events: Vec<(std::time::Instant, String)> = Vec::new();
    let target = Target {
        port: PORT,
        user: Some(WRITER.to_owned()),
        password: Some(WRITER_PASSWORD.to_owned()),
        tls: Some(ca.client(&issued, NAME, ns.name())?),
        source: Some(node::HOST_ADDRESS),
    };
    let writers: Vec<Writer> = (0..2)
        .map(|id| Writer::start_to(id, service.clone(), target.clone(), history.clone()))
        .collect();
    let witnesses = Witnesses::start_on_pods(&ns, NAME, 3, target.clone(), history.clone());
    let mut bed = Bed {
        ns,
        operator,
        controllers_started: 0,
        target: target.clone(),
    };
    // The controllers lead by a Lease, as the chart runs them.
    bed.operator.controller.process.kill();
    let mut leader = bed.start_controller().await?;
    leader.wait_leading(CONVERGE).await?;
    bed.operator.controller = leader;

    let mut injected: BTreeMap<String, u32> = BTreeMap::new();
    let mut outcome = Ok(());
    // `touch target/chaos-stop` ends a long run after the round under way; its history is
    // checked as usual.
    let stop_file = repo_root().join("target").join("chaos-stop");
    let _ = std::fs::remove_file(&stop_file);
    for n in 1..=rounds {
        if stop_file.exists() {
            eprintln!(
                "chaos: {} found, stopping before round {n}",
                stop_file.display()
            );
            break;
        }
        let round = match bed.draw(&kinds, overlap, &primary, &mut rng).await {
            Ok(round) => round,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        tokio::time::sleep(Duration::from_millis(rng.random_range(1000..3000))).await;
        let what = format!("round {n}/{rounds}: {round}");
        eprintln!("chaos {what}");
        events.push((Instant::now(), what.clone()));
        match bed
            .play(&round, &primary, &history, &mut injected, &mut rng)
            .await
        {
            Ok(now) => primary = now,
            Err(e) => {
                outcome = Err(Error::process(what, e));
                break;
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for writer in writers {
        writer.stop().await;
    }
    witnesses.stop().await;
    if outcome.is_err() {
        // The history so far is still checked and counted, on the primary the Redis converges
        // to, or else the one labelled: a run that did not converge still says what it lost.
        eprintln!(
            "chaos: stopped after {} faults: {outcome:?}",
            injected.values().sum::<u32>()
        );
        match conditions::wait_replicating(&bed.ns, NAME, 3, CONVERGE, None).await {
            Ok(now) => primary = now,
            Err(e) => eprintln!("chaos: checking on {primary}, which did not converge: {e}"),
        }
    }

    let history = History::take(&history);
    // The history stays behind for rechecking, next to the run's operator logs: written first
    // (without the lost keys), so that a final primary that cannot be read still leaves it.
    let recorded = repo_root()
        .join("target")
        .join("e2e-logs")
        .join(bed.ns.name())
        .join(format!("history-{seed}.jsonl"));
    history.write_jsonl(&recorded, origin, &events, &[])?;
    let final_ip = pods::ip(&pod(&bed.ns, &primary).await?)
        .unwrap_or_default()
        .to_owned();
    let lost = lost_on_target(&final_ip, &target, &history.acks).await?;
    history.write_jsonl(&recorded, origin, &events, &lost)?;
    let overlaps = overlapping(&history.acks);
    let masters = masters_at_once(&history.roles);
    let servers: BTreeSet<&str> = history.acks.iter().map(|a| a.server.as_str()).collect();
    let counts: Vec<String> = injected.iter().map(|(f, n)| format!("{f} x{n}")).collect();
    eprintln!(
        "chaos: {} faults ({}), seed {seed}: {} writes acknowledged by {} primaries, {} \
         not acknowledged, {} refused by replicas, {} lost, {} overlapping acknowledgements; \
         {} times two pods answered master ({} with both listing replicas)",
        injected.values().sum::<u32>(),
        counts.join(", "),
        history.acks.len(),
        servers.len(),
        history.unacknowledged,
        history.refused,
        lost.len(),
        overlaps.len(),
        masters.len(),
        masters
            .iter()
            .filter(|m| m.members.iter().filter(|(_, r)| *r > 0).count() >= 2)
            .count()
    );
    for m in &masters {
        eprintln!(
            "chaos: two masters at {:?}..{:?} (ms since the start): {:?}",
            m.from.saturating_duration_since(origin).as_millis(),
            m.to.map(|t| t.saturating_duration_since(origin).as_millis()),
            m.members
        );
    }
    eprintln!("chaos: history in {}", recorded.display());
    outcome?;
    history.assert_safe(&lost, &overlaps, &format!(" (seed {seed})"));
    Ok(())
}
