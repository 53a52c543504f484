//! What the operator is not about: pods of someone else in another namespace (the controller's
//! pod watch is label-scoped, so they should cost it nothing), and the extra kwok nodes that all
//! these pods need room on.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use e2e::bench::{progress, secs};
use e2e::{Cluster, Context, Error, NamespaceOptions, TestNamespace, seen, wait_for};
use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

use crate::load::{Drain, Tracker, create_all};
use crate::report::percentiles;

/// Pods one kwok node takes, as the bed's own (hack/cluster/nodes.yaml).
const PODS_PER_NODE: usize = 1000;
/// Label of the nodes this benchmark adds (not `type=kwok`: the bed's tests count those).
const NODE_LABEL: (&str, &str) = ("type", "kwok-bench");
/// Prefix of the names of the nodes this benchmark adds.
const NODE_PREFIX: &str = "bench-kwok-node-";

/// kwok nodes this benchmark added to make room for its pods; [`ExtraNodes::remove`] deletes them.
pub(crate) struct ExtraNodes {
    api: Api<Node>,
    names: Vec<String>,
}

impl ExtraNodes {
    /// Adds kwok nodes (like the bed's: 32 CPUs, 1000 pods) until the kwok nodes have room for
    /// `pods` more pods (plus a tenth), and waits until they are Ready. The bed's kube-scheduler
    /// places pods by the nodes' pod capacity, and its two kwok nodes take 2,000.
    pub(crate) async fn ensure_room(cluster: &Cluster, pods: usize) -> Result<Self, Error> {
        let api: Api<Node> = Api::all(cluster.client());
        let nodes = api
            .list(&ListParams::default())
            .await
            .context("listing nodes")?;
        let kwok: Vec<&Node> = nodes
            .items
            .iter()
            .filter(|n| {
                n.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("kwok.x-k8s.io/node"))
                    .is_some_and(|v| v == "fake")
                    && n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_none_or(Vec::is_empty)
            })
            .collect();
        let capacity: usize = kwok.iter().map(|n| pod_capacity(n)).sum();
        // Pods anywhere, the real node's included: an upper bound of the room taken.
        let all_pods: Api<Pod> = Api::all(cluster.client());
        let used = all_pods
            .list_metadata(&ListParams::default())
            .await
            .context("listing pods")?
            .items
            .len();
        let wanted = pods + pods / 10 + used;
        let missing = wanted.saturating_sub(capacity);
        let count = missing.div_ceil(PODS_PER_NODE);
        let existing: Vec<String> = kwok
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .filter(|n| n.starts_with(NODE_PREFIX))
            .collect();
        // Nodes left by an interrupted run are counted in the capacity, and removed at the end.
        let mut added = ExtraNodes {
            api: api.clone(),
            names: existing.clone(),
        };
        println!(
            "kwok nodes: {} with room for {capacity} pods ({used} pods in the cluster); adding \
             {count} node(s) of {PODS_PER_NODE} pods for {pods} pods",
            kwok.len()
        );
        if count == 0 {
            return Ok(added);
        }
        let mut index = 0;
        while added.names.len() < existing.len() + count {
            let name = format!("{NODE_PREFIX}{index}");
            index += 1;
            if existing.contains(&name) {
                continue;
            }
            match api.create(&PostParams::default(), &kwok_node(&name)).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(e).context(format!("creating node {name}")),
            }
            added.names.push(name);
        }
        progress(format!(
            "waiting for nodes {} to be Ready",
            added.names.join(", ")
        ));
        let names = added.names.clone();
        wait_for(
            "the added kwok nodes to be Ready",
            Duration::from_secs(120),
            || async {
                for name in &names {
                    let node = api.get(name).await.map_err(seen)?;
                    if !node_ready(&node) {
                        return Err(format!("{name} not Ready"));
                    }
                }
                Ok(())
            },
        )
        .await?;
        Ok(added)
    }

    /// Deletes the nodes added (their pods are gone with their namespaces by then).
    pub(crate) async fn remove(self) {
        for name in &self.names {
            match self.api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => progress(format!("could not delete node {name}: {e}")),
            }
        }
    }
}

fn pod_capacity(node: &Node) -> usize {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get("pods"))
        .and_then(|q| count_of(&q.0))
        .unwrap_or(0)
}

/// A count as a quantity says it: `1000`, `1k` (the API server's canonical form), `2Ki`.
fn count_of(quantity: &str) -> Option<usize> {
    let suffixes = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("k", 1000),
        ("M", 1_000_000),
    ];
    for (suffix, factor) in suffixes {
        if let Some(n) = quantity.strip_suffix(suffix) {
            return n.parse::<usize>().ok().map(|n| n * factor);
        }
    }
    quantity.parse().ok()
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A fake node for kwok, as the bed's (hack/cluster/nodes.yaml) but labelled `type=kwok-bench`.
fn kwok_node(name: &str) -> Node {
    let resources = BTreeMap::from([
        ("cpu".to_owned(), Quantity("32".into())),
        ("memory".to_owned(), Quantity("256Gi".into())),
        ("ephemeral-storage".to_owned(), Quantity("1Ti".into())),
        ("pods".to_owned(), Quantity(PODS_PER_NODE.to_string())),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations: Some(BTreeMap::from([
                ("kwok.x-k8s.io/node".to_owned(), "fake".to_owned()),
                ("node.alpha.kubernetes.io/ttl".to_owned(), "0".to_owned()),
            ])),
            labels: Some(BTreeMap::from([
                (NODE_LABEL.0.to_owned(), NODE_LABEL.1.to_owned()),
                ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
                ("kubernetes.io/hostname".to_owned(), name.to_owned()),
                ("kubernetes.io/os".to_owned(), "linux".to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(resources.clone()),
            capacity: Some(resources),
            ..NodeStatus::default()
        }),
    }
}

/// Someone else's pods: `count` Ready pods in a namespace of their own, with no label of ours.
pub(crate) struct UnrelatedPods {
    drain: Drain,
    ns: TestNamespace,
    count: usize,
}

impl UnrelatedPods {
    /// Creates them (`creators` concurrent loops) and waits until all are Ready.
    pub(crate) async fn create(
        cluster: &Cluster,
        count: usize,
        creators: usize,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let ns = cluster
            .namespace_with(
                "bench-unrelated",
                NamespaceOptions::default().pod_security("restricted"),
            )
            .await?;
        let drain = Drain::new(cluster, ns.name());
        let api: Api<Pod> = ns.api();
        let mut tracker = Tracker::start(api.clone(), e2e::pods::is_ready).await?;
        let objects: Vec<Pod> = (0..count)
            .map(|i| e2e::pods::restricted_pod(&format!("other-{i:05}")))
            .collect();
        println!();
        println!(
            "== {count} unrelated pods in {} ({creators} creators) ==",
            ns.name()
        );
        let start = Instant::now();
        let created = create_all(&api, objects, creators).await?;
        created.print("unrelated pods", start);
        match tracker.wait(count, timeout).await {
            Ok(last) => println!("all unrelated pods Ready after {}", secs(last - start)),
            Err(ready) => {
                return Err(Error::process(
                    "creating the unrelated pods",
                    format!("{ready}/{count} Ready after {}s", timeout.as_secs()),
                ));
            }
        }
        println!(
            "per pod, from its create to Ready: {}",
            percentiles(&tracker.latencies(&created.at))
        );
        Ok(UnrelatedPods { drain, ns, count })
    }

    /// Deletes their namespace and waits until it is gone.
    pub(crate) async fn remove(mut self) {
        progress(format!("deleting namespace {}", self.ns.name()));
        match self.drain.run().await {
            Ok(time) => println!(
                "teardown: namespace with {} unrelated pods deleted in {}",
                self.count,
                secs(time)
            ),
            Err(e) => println!("teardown of the unrelated pods: {e:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::count_of;

    #[test]
    fn pod_counts_read_as_the_api_server_writes_them() {
        assert_eq!(count_of("1k"), Some(1000));
        assert_eq!(count_of("1000"), Some(1000));
        assert_eq!(count_of("110"), Some(110));
        assert_eq!(count_of("2Ki"), Some(2048));
        assert_eq!(count_of("lots"), None);
    }
}
