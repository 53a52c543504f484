//! The test bed is real: a real API server with admission and a real schema, real controllers
//! (scheduler, garbage collector, deployments), and nodes on which pods become Ready.

use std::time::Duration;

use e2e::pods::{self, restricted_pod};
use e2e::{Cluster, Context, Error, NamespaceOptions, redis_resource, seen, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{DeleteParams, DynamicObject, ListParams, ObjectMeta, PostParams};
use kube::{Api, Resource};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Expects an API call to be refused with `code`, returning the server's message.
fn refused<T: std::fmt::Debug>(result: Result<T, kube::Error>, code: u16) -> String {
    match result {
        Err(kube::Error::Api(status)) if status.code == code => status.message.clone(),
        Err(other) => {
            panic!("expected the API server to refuse with HTTP {code}, got error: {other}")
        }
        Ok(accepted) => panic!(
            "expected the API server to refuse with HTTP {code}, but it accepted: {accepted:?}"
        ),
    }
}

#[tokio::test]
async fn server_reports_the_pinned_version() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    let version = cluster.server_version();
    if cluster.is_local_bed() {
        let pinned = e2e::pinned_kubernetes_version()?;
        assert_eq!(
            version.git_version, pinned,
            "the test bed's API server should be the k8s.io/kubernetes version pinned in hack/cluster/kubernetes/go.mod"
        );
        assert_eq!(version.git_tree_state, "clean");
    }
    // Whatever the cluster, k8s-openapi's v1_37 types must fit it: a 1.x server, 1.33 or newer.
    assert_eq!(version.major, "1", "{version:?}");
    let minor: u32 = version
        .minor
        .trim_end_matches('+')
        .parse()
        .unwrap_or_else(|_| panic!("unparsable minor version {:?}", version.minor));
    assert!(
        minor >= 33,
        "server {} is older than 1.33",
        version.git_version
    );
    Ok(())
}

#[tokio::test]
async fn nodes_are_ready() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    let nodes: Api<Node> = Api::all(cluster.client());
    let selector = if cluster.is_local_bed() {
        "type=kwok"
    } else {
        ""
    };
    let ready = wait_for("nodes to be Ready", TIMEOUT, || async {
        let list = nodes
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(seen)?;
        let states: Vec<(String, bool)> = list
            .items
            .iter()
            .map(|n| {
                let ready = n
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
                (n.metadata.name.clone().unwrap_or_default(), ready)
            })
            .collect();
        let wanted = if cluster.is_local_bed() { 2 } else { 1 };
        if states.len() >= wanted && states.iter().all(|(_, r)| *r) {
            Ok(states)
        } else {
            Err(format!("nodes (name, ready): {states:?}"))
        }
    })
    .await?;
    assert!(!ready.is_empty());
    Ok(())
}

#[tokio::test]
async fn restricted_pod_is_scheduled_becomes_ready_and_is_deleted() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    // The namespace enforces "restricted", so this also proves the pod is compliant.
    let ns = cluster
        .namespace_with(
            "pod-ready",
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let pods: Api<Pod> = ns.api();
    pods.create(&PostParams::default(), &restricted_pod("web"))
        .await
        .context("creating a restricted pod")?;
    let pod = pods::wait_ready(&pods, "web", TIMEOUT).await?;
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    assert!(
        node.is_some(),
        "a Ready pod must have been scheduled: {}",
        pods::describe(&pod)
    );

    // Deleting a pod removes it for real (the node acknowledges the deletion, like a kubelet).
    pods.delete("web", &DeleteParams::default())
        .await
        .context("deleting the pod")?;
    pods::wait_gone(&pods, "web", TIMEOUT).await
}

#[tokio::test]
async fn deployment_gets_ready_pods() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    let ns = cluster.namespace("deployment").await?;
    let template = restricted_pod("web");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": template.metadata, "spec": template.spec},
        }
    }))
    .unwrap_or_else(|e| panic!("bad Deployment literal: {e}"));
    let deployments: Api<Deployment> = ns.api();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .context("creating a deployment")?;
    wait_for(
        "deployment web to have 2 ready replicas",
        TIMEOUT,
        || async {
            let d = deployments.get("web").await.map_err(seen)?;
            let status = d.status.unwrap_or_default();
            if status.ready_replicas == Some(2) {
                Ok(())
            } else {
                Err(format!(
                    "replicas={:?} ready={:?} conditions={:?}",
                    status.replicas,
                    status.ready_replicas,
                    status
                        .conditions
                        .unwrap_or_default()
                        .iter()
                        .map(|c| format!("{:?}={:?} {:?}", c.type_, c.status, c.message))
                        .collect::<Vec<_>>()
                ))
            }
        },
    )
    .await
}

#[tokio::test]
async fn garbage_collector_deletes_dependents() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    let ns = cluster.namespace("owner-gc").await?;
    let configmaps: Api<ConfigMap> = ns.api();
    let owner = configmaps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("owner".to_string()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await
        .context("creating the owner configmap")?;
    let owner_ref = owner
        .controller_owner_ref(&())
        .unwrap_or_else(|| panic!("owner has no uid: {:?}", owner.metadata));
    configmaps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("dependent".to_string()),
                    owner_references: Some(vec![owner_ref]),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await
        .context("creating the dependent configmap")?;

    configmaps
        .delete("owner", &DeleteParams::background())
        .await
        .context("deleting the owner")?;
    pods::wait_gone(&configmaps, "dependent", TIMEOUT).await
}

#[tokio::test]
async fn pod_security_admission_rejects_a_privileged_pod() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    let ns = cluster
        .namespace_with(
            "psa",
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let pods: Api<Pod> = ns.api();
    let mut pod = restricted_pod("privileged");
    if let Some(container) = pod.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        let security = container
            .security_context
            .get_or_insert_with(Default::default);
        security.privileged = Some(true);
        security.allow_privilege_escalation = Some(true);
    }
    let message = refused(pods.create(&PostParams::default(), &pod).await, 403);
    assert!(
        message.contains("violates PodSecurity \"restricted:latest\"")
            && message.contains("privileged"),
        "the refusal should come from Pod Security admission: {message}"
    );
    // The same namespace admits a compliant pod: the refusal was about privilege.
    pods.create(&PostParams::default(), &restricted_pod("compliant"))
        .await
        .context("creating a compliant pod next to the refused one")?;
    Ok(())
}

#[tokio::test]
async fn redis_crd_schema_is_enforced_by_the_api_server() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    e2e::install_crds(&cluster.client()).await?;
    let ns = cluster.namespace("crd-schema").await?;
    let redis: Api<DynamicObject> =
        Api::namespaced_with(cluster.client(), ns.name(), &redis_resource());
    let manifest = |name: &str, port: i64| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "myapp.tangx.in/v1",
            "kind": "Redis",
            "metadata": {"name": name},
            "spec": {"replicas": 2, "image": "redis:5-alpine", "port": port},
        }))
        .unwrap_or_else(|e| panic!("bad Redis literal: {e}"))
    };

    let message = refused(
        redis
            .create(&PostParams::default(), &manifest("too-low", 1000))
            .await,
        422,
    );
    assert!(
        message.contains("spec.port") && message.contains("1234"),
        "the schema (minimum 1234) should reject spec.port 1000: {message}"
    );

    // The tutorial's sample is accepted unchanged.
    let created = redis
        .create(&PostParams::default(), &manifest("my-op-redis", 8333))
        .await
        .context("creating the tutorial's sample Redis")?;
    assert_eq!(created.data["spec"]["port"], json!(8333));
    assert_eq!(
        created.types.as_ref().map(|t| t.api_version.as_str()),
        Some("myapp.tangx.in/v1")
    );
    Ok(())
}

#[tokio::test]
async fn audit_log_records_writes_with_their_user() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    // The audit log is the local bed's (.cluster/audit.log): elsewhere this check cannot be
    // made, and a check that cannot be made fails rather than passing unchecked.
    assert!(
        cluster.is_local_bed(),
        "the audit log can only be read on the local test bed; {} is another cluster",
        cluster.kubeconfig().display()
    );
    let ns = cluster.namespace("audit").await?;
    let configmaps: Api<ConfigMap> = ns.api();
    configmaps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("audited".to_string()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await
        .context("creating a configmap")?;
    let audit_log = e2e::repo_root().join(".cluster").join("audit.log");
    let namespace = ns.name().to_string();
    wait_for(
        "the create to appear in .cluster/audit.log",
        Duration::from_secs(10),
        || async {
            let text = std::fs::read_to_string(&audit_log)
                .map_err(|e| format!("{}: {e}", audit_log.display()))?;
            let found = text
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .any(|event| {
                    event["verb"] == "create"
                        && event["user"]["username"] == "admin"
                        && event["objectRef"]["resource"] == "configmaps"
                        && event["objectRef"]["namespace"] == namespace.as_str()
                        && event["objectRef"]["name"] == "audited"
                        && event["responseStatus"]["code"] == 201
                });
            if found {
                Ok(())
            } else {
                Err(format!(
                    "no create of configmaps/audited by admin among {} events",
                    text.lines().count()
                ))
            }
        },
    )
    .await
}
