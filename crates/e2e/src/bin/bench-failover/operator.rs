//! The operator's part: a Replication Redis of 3 pods on the bed's real nodes, its primary's
//! process, pod or node lost each round.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use controller::redis_server::TlsClient;
use e2e::bench::progress;
use e2e::certs::{TestCa, redis_dns_names};
use e2e::node::{self, NodeFault};
use e2e::operator::Operator;
use e2e::replicated::Replicated;
use e2e::{Cluster, Context, Error, NamespaceOptions, TestNamespace, seen};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};

use crate::redis_io::{missing, run_id};
use crate::results::{Part, Round};
use crate::writer::{Target, Writer};
use crate::{Args, CONVERGE, Kill, NAME, PORT};

pub(crate) async fn operator_part(args: &Args, kill: Kill) -> Result<Part, Error> {
    let cluster = Cluster::connect().await?;
    node::require_real_node(&cluster).await?;
    let ns = cluster
        .namespace_with(
            "bench-failover",
            NamespaceOptions::default()
                .pod_security("restricted")
                .real_node(),
        )
        .await?;
    progress(format!("starting the operator for namespace {}", ns.name()));
    let operator = Operator::start(&cluster, &ns).await?;
    // --tls: a CA of the benchmark's own, its certificate in the Secret spec.tls names.
    let tls = match args.tls {
        false => None,
        true => {
            let ca = TestCa::new("bench-failover CA")?;
            let issued = ca.issue(&redis_dns_names(NAME, ns.name()))?;
            secrets::put_secret(
                &ns,
                "bench-tls",
                Some("kubernetes.io/tls"),
                ca.secret_data(&issued),
            )
            .await?;
            Some(ca.client(&issued, NAME, ns.name())?)
        }
    };
    let mut redis = Replicated::new(NAME, 3, args.failover_after.clone());
    if tls.is_some() {
        redis = redis.tls("bench-tls");
    }
    let primary = redis.create_replicating(&ns, CONVERGE).await?;
    let service = service_ip(&ns).await?;
    let over = if tls.is_some() { ", over TLS" } else { "" };
    let mut part = Part::new(format!(
        "redis-operator{over}, primary's {}",
        kill.describe()
    ));
    let writer = Writer::start(
        Target::Direct {
            host: service,
            port: PORT,
            tls: tls.clone(),
        },
        Duration::from_millis(args.write_interval_ms),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pods: Api<Pod> = ns.api();
    let (primary, missing_before) = part
        .run_rounds(args.rounds, primary, async |primary, missing_before| {
            operator_round(
                kill,
                &pods,
                &ns,
                &writer,
                tls.as_ref(),
                primary,
                missing_before,
            )
            .await
        })
        .await;
    let (acked, failed) = writer.stop().await;
    let lost = match primary_ip(&pods, &primary).await {
        Ok(ip) => missing(&ip, PORT, tls.as_ref(), &acked)
            .await
            .map(|m| m.len()),
        Err(e) => Err(e),
    };
    part.finish(&primary, acked.len(), lost, missing_before.len(), failed);
    progress(format!("deleting namespace {}", ns.name()));
    drop(operator);
    drop(ns);
    Ok(part)
}

pub(crate) async fn primary_ip(pods: &Api<Pod>, name: &str) -> Result<String, String> {
    let pod = pods.get(name).await.map_err(seen)?;
    pods::ip(&pod)
        .map(str::to_owned)
        .ok_or_else(|| format!("{name} has no IP"))
}

/// One failover: kill the primary, wait for writes, then for replication to be whole again.
pub(crate) async fn operator_round(
    kill: Kill,
    pods: &Api<Pod>,
    ns: &TestNamespace,
    writer: &Writer,
    tls: Option<&TlsClient>,
    primary: &str,
    missing_before: &BTreeSet<u64>,
) -> Result<(Round, String, BTreeSet<u64>), Error> {
    let victim = pods
        .get(primary)
        .await
        .context(format!("reading {primary}"))?;
    let ip = pods::ip(&victim).unwrap_or_default().to_owned();
    let victim_id = run_id(&ip, PORT, tls)
        .await
        .map_err(|e| Error::process(format!("run_id of {primary}"), e))?;
    let pid = match kill {
        Kill::Process => Some(
            node::container_pid(&victim, "redis")
                .await
                .map_err(|e| Error::process(format!("finding {primary}'s redis-server"), e))?,
        ),
        _ => None,
    };
    let lost_node = node::node_of(&victim).unwrap_or_default().to_owned();
    progress(format!("killing {primary} ({kill:?}, on {lost_node})"));
    let killed = Instant::now();
    match (kill.node_fault(), pid) {
        (Some(fault), _) => node::fault(fault, &lost_node).await?,
        (None, Some(pid)) => node::signal(pid, "KILL")
            .await
            .map_err(|e| Error::process(format!("killing {primary}'s redis-server"), e))?,
        (None, None) => {
            pods.delete(primary, &DeleteParams::default().grace_period(0))
                .await
                .context(format!("deleting {primary}"))?;
        }
    }
    let writable = writer.wait_writable(killed, &victim_id).await;
    let refused = writer.failures_between(killed, writable.unwrap_or_else(Instant::now));
    if kill.node_fault().is_some() {
        // The node comes back once another pod is primary (its pods may have been replaced).
        let promoted = conditions::wait_promoted(ns, NAME, primary, CONVERGE).await;
        node::fault(NodeFault::Heal, &lost_node).await?;
        promoted?;
    }
    let next = conditions::wait_replicating(ns, NAME, 3, CONVERGE, Some(primary)).await?;
    let keys = writer.acked_keys();
    let ip = primary_ip(pods, &next)
        .await
        .map_err(|e| Error::process("the new primary", e))?;
    let missing_now = missing(&ip, PORT, tls, &keys)
        .await
        .map_err(|e| Error::process("checking acknowledged writes", e))?;
    let round = Round {
        victim: primary.to_owned(),
        successor: next.clone(),
        writable: writable.map(|at| at - killed),
        refused,
        lost_now: missing_now.difference(missing_before).count(),
        acked_so_far: keys.len(),
    };
    Ok((round, next, missing_now))
}

pub(crate) async fn service_ip(ns: &TestNamespace) -> Result<String, Error> {
    e2e::conditions::service_ip(ns, NAME, CONVERGE).await
}
