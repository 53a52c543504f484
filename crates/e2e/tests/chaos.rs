//! Randomized faults against a Replication Redis on the real node, Jepsen's way (DESIGN §9,
//! issue "Failover that never loses an acknowledged write"): two writers do unique-key `SET` +
//! `WAIT 1` through the `<name>` Service and record every write with the pod that acknowledged
//! it and when; a seeded random sequence of faults hits the primary, its whole node (stopped,
//! frozen or cut off, then healed), the controller (killed, starved, or its leadership handed to
//! a standby mid-failover) and the API server; a checker reads the whole history at the end.
//! The controllers run with leader election, as the chart runs them.
//!
//! The Redis runs as production users gate on it: TLS on its port, for replication and the
//! operator (issue #22), and ACL users with the default user disabled; the writers log in as
//! an ACL user over TLS, verifying the pods' certificate as the operator does.
//!
//! Checked: every acknowledged key is on the final primary with its value; no two pods
//! acknowledged writes as primary at overlapping times; the Redis is Ready with every member
//! linked after each fault. Counts per fault kind are printed; nothing is timed.
//!
//! `CHAOS_ROUNDS` (default 4, `make chaos ROUNDS=N` for long runs), `CHAOS_SEED` (default:
//! from the clock, printed, to replay a run) and `CHAOS_FAULTS` (default: all; a comma-separated
//! list of fault names such as `NodeStop,PrimaryFreeze` to draw from). `touch target/chaos-stop`
//! ends a run early, after the round under way, and still checks it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::SecretKeyRef;
use e2e::certs::{TestCa, redis_dns_names};
use e2e::history::{History, Target, Writer, lost_on_target, overlapping};
use e2e::node::{self, NodeFault};
use e2e::operator::Controller;
use e2e::replicated::Replicated;
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

/// What a round does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    /// The primary's pod deleted with no grace: its container may run on for a moment.
    PodForceDelete,
    /// The primary's pod deleted as `kubectl delete` does.
    PodGracefulDelete,
    /// `SHUTDOWN NOSAVE` on the primary: its redis-server exits, the container restarts empty.
    ShutdownNosave,
    /// SIGKILL of the primary's redis-server.
    ContainerKill,
    /// SIGSTOP of the primary's redis-server for longer than failoverAfter, then SIGCONT: it
    /// comes back believing it is the primary.
    PrimaryFreeze,
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
    /// The primary's node stopped (`hack/cluster/fault.sh node-stop`), healed after the failover.
    NodeStop,
    /// The primary's node frozen (`node-freeze`), healed after the failover.
    NodeFreeze,
    /// The primary's node cut off (`node-partition`), healed after the failover.
    NodePartition,
}

impl Fault {
    /// The node fault, for the faults that take the primary's whole node.
    fn node_fault(self) -> Option<NodeFault> {
        match self {
            Fault::NodeStop => Some(NodeFault::Stop),
            Fault::NodeFreeze => Some(NodeFault::Freeze),
            Fault::NodePartition => Some(NodeFault::Partition),
            _ => None,
        }
    }
}

const FAULTS: [Fault; 12] = [
    Fault::PodForceDelete,
    Fault::PodGracefulDelete,
    Fault::ShutdownNosave,
    Fault::ContainerKill,
    Fault::PrimaryFreeze,
    Fault::ControllerKill,
    Fault::ControllerStarve,
    Fault::LeaderChange,
    Fault::ApiServerPause,
    Fault::NodeStop,
    Fault::NodeFreeze,
    Fault::NodePartition,
];

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

    /// Applies `fault` to the current `primary`. Returns the node a node fault took, to heal
    /// once the failover happened.
    async fn inject(
        &mut self,
        fault: Fault,
        primary: &str,
        rng: &mut StdRng,
    ) -> Result<Option<String>, Error> {
        let pods: Api<Pod> = self.ns.api();
        if let Some(node_fault) = fault.node_fault() {
            let victim = pod(&self.ns, primary).await?;
            let name = node::node_of(&victim)
                .ok_or_else(|| Error::process(format!("the node of {primary}"), "not scheduled"))?
                .to_owned();
            node::fault(node_fault, &name).await?;
            return Ok(Some(name));
        }
        match fault {
            Fault::PodForceDelete => {
                pods.delete(primary, &DeleteParams::default().grace_period(0))
                    .await
                    .context(format!("force-deleting {primary}"))?;
            }
            Fault::PodGracefulDelete => {
                pods.delete(primary, &DeleteParams::default())
                    .await
                    .context(format!("deleting {primary}"))?;
            }
            Fault::ShutdownNosave => {
                let ip = pods::ip(&pod(&self.ns, primary).await?)
                    .unwrap_or_default()
                    .to_owned();
                // The server exits before it answers: the error is the expected outcome.
                let _ = self
                    .target
                    .run(&ip, redis::cmd("SHUTDOWN").arg("NOSAVE"))
                    .await;
            }
            Fault::ContainerKill => {
                let pid = redis_pid(&self.ns, primary).await?;
                signal(pid, "KILL", primary).await?;
            }
            Fault::PrimaryFreeze => {
                let pid = redis_pid(&self.ns, primary).await?;
                signal(pid, "STOP", primary).await?;
                // Long enough for the whole failover to happen while it is frozen: reads time
                // out (2 s a pass), failoverAfter runs, then the cut and the promotion passes.
                tokio::time::sleep(FAILOVER_AFTER + Duration::from_secs(12)).await;
                signal(pid, "CONT", primary).await?;
            }
            Fault::ControllerKill => {
                let pid = redis_pid(&self.ns, primary).await?;
                signal(pid, "KILL", primary).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                self.operator.controller.process.kill();
                let mut controller = self.start_controller().await?;
                controller.wait_leading(Duration::from_secs(60)).await?;
                self.operator.controller = controller;
            }
            Fault::LeaderChange => {
                let mut standby = self.start_controller().await?;
                standby.wait_ready(Duration::from_secs(60)).await?;
                let pid = redis_pid(&self.ns, primary).await?;
                signal(pid, "KILL", primary).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                let leader = self.operator.controller.process.pid();
                let how = if rng.random_bool(0.5) { "TERM" } else { "KILL" };
                signal(leader, how, "the leading controller").await?;
                standby.wait_leading(Duration::from_secs(60)).await?;
                self.operator.controller = standby;
            }
            Fault::ControllerStarve => {
                let pid = redis_pid(&self.ns, primary).await?;
                signal(pid, "KILL", primary).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                let controller = self.operator.controller.process.pid();
                signal(controller, "STOP", "the controller").await?;
                tokio::time::sleep(Duration::from_secs(rng.random_range(3..8))).await;
                signal(controller, "CONT", "the controller").await?;
            }
            Fault::ApiServerPause => {
                let api_server = api_server_pid()?;
                let pid = redis_pid(&self.ns, primary).await?;
                signal(pid, "KILL", primary).await?;
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..2500))).await;
                signal(api_server, "STOP", "kube-apiserver").await?;
                tokio::time::sleep(Duration::from_secs(rng.random_range(2..5))).await;
                signal(api_server, "CONT", "kube-apiserver").await?;
            }
            Fault::NodeStop | Fault::NodeFreeze | Fault::NodePartition => {}
        }
        Ok(None)
    }
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
    let kinds: Vec<Fault> = match std::env::var("CHAOS_FAULTS") {
        Ok(list) => list
            .split(',')
            .map(|name| {
                FAULTS
                    .into_iter()
                    .find(|f| format!("{f:?}") == name.trim())
                    .ok_or_else(|| {
                        Error::process(
                            format!("reading CHAOS_FAULTS={list}"),
                            format!("{name:?} is none of {FAULTS:?}"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        Err(_) => FAULTS.to_vec(),
    };
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
    };
    let writers: Vec<Writer> = (0..2)
        .map(|id| Writer::start_to(id, service.clone(), target.clone(), history.clone()))
        .collect();
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

    let mut injected: BTreeMap<Fault, u32> = BTreeMap::new();
    let mut outcome = Ok(());
    // `touch target/chaos-stop` ends a long run after the round under way; its history is
    // checked as usual.
    let stop_file = repo_root().join("target").join("chaos-stop");
    let _ = std::fs::remove_file(&stop_file);
    for round in 1..=rounds {
        if stop_file.exists() {
            eprintln!(
                "chaos: {} found, stopping before round {round}",
                stop_file.display()
            );
            break;
        }
        let fault = kinds[rng.random_range(0..kinds.len())];
        tokio::time::sleep(Duration::from_millis(rng.random_range(1000..3000))).await;
        eprintln!("chaos round {round}/{rounds}: {fault:?} on {primary}");
        events.push((
            std::time::Instant::now(),
            format!("round {round}: {fault:?} on {primary}"),
        ));
        let faulted_node = match bed.inject(fault, &primary, &mut rng).await {
            Ok(node) => node,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        *injected.entry(fault).or_default() += 1;
        if let Some(name) = faulted_node {
            // The node comes back once a replica elsewhere took over (its pods may have been
            // replaced meanwhile); healed even when no failover came.
            let heal = node::HealOnDrop(name);
            let promoted = conditions::wait_promoted(&bed.ns, NAME, &primary, CONVERGE).await;
            drop(heal);
            if let Err(e) = promoted {
                outcome = Err(e);
                break;
            }
        }
        // Every fault takes the primary's data or its process away, so a new primary follows.
        // Waiting for one other than the old also keeps a status written before the fault (the
        // controller stopped, or not yet looking) from passing for the state after it.
        match conditions::wait_replicating(&bed.ns, NAME, 3, CONVERGE, Some(&primary)).await {
            Ok(now) => primary = now,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for writer in writers {
        writer.stop().await;
    }
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
    let servers: BTreeSet<&str> = history.acks.iter().map(|a| a.server.as_str()).collect();
    let counts: Vec<String> = injected
        .iter()
        .map(|(f, n)| format!("{f:?} x{n}"))
        .collect();
    eprintln!(
        "chaos: {} faults ({}), seed {seed}: {} writes acknowledged by {} primaries, {} \
         not acknowledged, {} lost, {} overlapping acknowledgements",
        injected.values().sum::<u32>(),
        counts.join(", "),
        history.acks.len(),
        servers.len(),
        history.unacknowledged,
        lost.len(),
        overlaps.len()
    );
    eprintln!("chaos: history in {}", recorded.display());
    outcome?;
    history.assert_safe(&lost, &overlaps, &format!(" (seed {seed})"));
    Ok(())
}
