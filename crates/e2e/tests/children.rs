//! The Services and the PodDisruptionBudget the controller keeps for every Redis, on the bed's
//! real node: the `<name>` Service really routes to Redis through kube-proxy and comes back when
//! deleted by hand, and the PodDisruptionBudget really holds back a second eviction while the
//! first evicted pod is not back.

use std::time::Duration;

use api::{Redis, RedisSpec};
use e2e::node::{self, REDIS_IMAGE};
use e2e::operator::Operator;
use e2e::{Cluster, Context, Error, NamespaceOptions, TestNamespace, seen, wait_for};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{DeleteParams, EvictParams, ListParams, PostParams};
use kube::{Api, Resource, ResourceExt};

/// Real containers start in seconds; a replaced pod also waits for the old one to terminate.
const CONVERGE: Duration = Duration::from_secs(120);

async fn create_redis(
    ns: &TestNamespace,
    name: &str,
    replicas: i32,
    port: i32,
) -> Result<Redis, Error> {
    let redis = Redis::new(
        name,
        RedisSpec {
            replicas: Some(replicas),
            image: Some(REDIS_IMAGE.into()),
            port: Some(port),
            ..RedisSpec::default()
        },
    );
    ns.api::<Redis>()
        .create(&PostParams::default(), &redis)
        .await
        .context(format!("creating Redis {name}"))
}

/// Waits until the Redis has `replicas` pods, none terminating, all Ready on the real node.
async fn wait_ready_pods(
    ns: &TestNamespace,
    name: &str,
    replicas: usize,
) -> Result<Vec<Pod>, Error> {
    let pods: Api<Pod> = ns.api();
    wait_for(
        &format!("{name}: {replicas} pods Ready on the real nodes"),
        CONVERGE,
        || async {
            let list = pods
                .list(&ListParams::default().labels(&api::pods::selector_string(name)))
                .await
                .map_err(seen)?
                .items;
            let ready = list.iter().all(|p| {
                e2e::pods::is_ready(p)
                    && p.metadata.deletion_timestamp.is_none()
                    && node::node_of(p).is_some_and(node::is_real_node)
            });
            if list.len() == replicas && ready {
                Ok(list)
            } else {
                Err(list
                    .iter()
                    .map(|p| format!("{} {}", p.name_any(), e2e::pods::describe(p)))
                    .collect::<Vec<_>>()
                    .join("; "))
            }
        },
    )
    .await
}

/// Whether the Redis is the object's controller.
fn controlled_by<K: Resource>(obj: &K, redis: &Redis) -> bool {
    obj.owner_references().iter().any(|o| {
        o.controller == Some(true)
            && Some(o.uid.as_str()) == redis.metadata.uid.as_deref()
            && o.kind == "Redis"
    })
}

/// Waits for a Service `name` controlled by `redis` whose uid is not `not_uid`.
async fn wait_service(
    ns: &TestNamespace,
    name: &str,
    redis: &Redis,
    not_uid: Option<&str>,
) -> Result<Service, Error> {
    let services: Api<Service> = ns.api();
    wait_for(
        &format!("Service {name}, owned by its Redis"),
        CONVERGE,
        || async {
            match services.get_opt(name).await.map_err(seen)? {
                Some(s) if controlled_by(&s, redis) && s.uid().as_deref() != not_uid => Ok(s),
                Some(s) => Err(format!(
                    "uid {:?}, owners {:?}",
                    s.uid(),
                    s.owner_references()
                )),
                None => Err("no such Service".into()),
            }
        },
    )
    .await
}

/// `redis-cli PING` through the Service's ClusterIP, retried while kube-proxy programs it.
async fn ping_through(service: &Service, port: u16) -> Result<(), Error> {
    let ip = service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .filter(|ip| ip != "None")
        .ok_or_else(|| Error::Process {
            what: format!("reaching Service {}", service.name_any()),
            reason: "it has no ClusterIP".into(),
        })?;
    wait_for(
        &format!("PONG through Service {} ({ip}:{port})", service.name_any()),
        CONVERGE,
        || async {
            match node::redis_cli(&ip, port, &["PING"]).await? {
                pong if pong == "PONG" => Ok(()),
                other => Err(format!("answered {other:?}")),
            }
        },
    )
    .await
}

/// Standalone: the `<name>` Service selects every pod of the Redis on port `redis`, answers
/// PING through kube-proxy, and is put back (a new one, reachable too) when deleted by hand;
/// the Replication-mode Services do not exist.
#[tokio::test]
async fn the_service_routes_to_redis_and_comes_back_when_deleted() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("children-svc").await?;
    let redis = create_redis(&ns, "svc", 2, 8333).await?;
    wait_ready_pods(&ns, "svc", 2).await?;

    let service = wait_service(&ns, "svc", &redis, None).await?;
    let spec = service.spec.clone().unwrap_or_default();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.selector, Some(api::pods::selector_labels("svc")));
    let ports = spec.ports.unwrap_or_default();
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert_eq!(ports[0].name.as_deref(), Some("redis"));
    assert_eq!(ports[0].port, 8333);
    assert_eq!(
        ports[0].target_port,
        Some(IntOrString::String("redis".into()))
    );
    let services: Api<Service> = ns.api();
    for absent in ["svc-replicas", "svc-headless"] {
        assert!(
            services.get_opt(absent).await.context("reading")?.is_none(),
            "{absent} exists in Standalone mode"
        );
    }
    ping_through(&service, 8333).await?;

    services
        .delete("svc", &DeleteParams::default())
        .await
        .context("deleting Service svc by hand")?;
    let again = wait_service(&ns, "svc", &redis, service.uid().as_deref()).await?;
    ping_through(&again, 8333).await?;
    Ok(())
}

/// The PodDisruptionBudget (maxUnavailable 1 by default) over 3 Ready pods: the first eviction
/// is allowed, a second one while the evicted pod is not back Ready is refused with 429, and
/// once the Redis has healed an eviction is allowed again.
#[tokio::test]
async fn the_pdb_lets_one_pod_be_evicted_at_a_time() -> Result<(), Error> {
    let (cluster, ns, _operator) = node::setup("children-pdb").await?;
    let redis = create_redis(&ns, "budget", 3, 6379).await?;
    wait_ready_pods(&ns, "budget", 3).await?;

    let pdbs: Api<PodDisruptionBudget> = ns.api();
    // The disruption controller counts the pods against the Redis's scale subresource; until
    // it has, no eviction is allowed at all.
    let pdb = wait_for(
        "PDB budget owned by its Redis, allowing 1 disruption of 3 healthy pods",
        CONVERGE,
        || async {
            let pdb = pdbs
                .get_opt("budget")
                .await
                .map_err(seen)?
                .ok_or("no PDB")?;
            let status = pdb.status.clone().unwrap_or_default();
            if controlled_by(&pdb, &redis)
                && status.current_healthy == Some(3)
                && status.expected_pods == Some(3)
                && status.disruptions_allowed == Some(1)
            {
                Ok(pdb)
            } else {
                Err(format!(
                    "owners {:?}, status {status:?}",
                    pdb.owner_references()
                ))
            }
        },
    )
    .await?;
    let spec = pdb.spec.clone().unwrap_or_default();
    assert_eq!(spec.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(spec.min_available, None);
    assert_eq!(
        spec.selector.and_then(|s| s.match_labels),
        Some(api::pods::selector_labels("budget"))
    );

    // kube's client retries a 429 (honouring Retry-After) until it succeeds, which would turn the
    // refusal into a late success once budget-0 is back: evict with a client that does not.
    let mut config = cluster.config().clone();
    config.default_retry = false;
    let client = kube::Client::try_from(config).context("building a client without retries")?;
    let pods: Api<Pod> = Api::namespaced(client, ns.name());
    let evict = EvictParams::default();
    pods.evict("budget-0", &evict)
        .await
        .context("evicting budget-0 (the budget allows one)")?;
    // At once: budget-0 is terminating or being recreated, not Ready.
    match pods.evict("budget-1", &evict).await {
        Err(kube::Error::Api(status)) if status.code == 429 => {
            assert_eq!(status.reason, "TooManyRequests", "{status:?}");
        }
        other => panic!("a second eviction must be refused with 429, got {other:?}"),
    }
    let now = pods.get("budget-1").await.context("reading budget-1")?;
    assert!(
        now.metadata.deletion_timestamp.is_none(),
        "budget-1 was not evicted"
    );

    // A budget, not a block: once budget-0 is back Ready, the next eviction goes through.
    wait_ready_pods(&ns, "budget", 3).await?;
    wait_for("the PDB to allow 1 disruption again", CONVERGE, || async {
        let pdb = pdbs.get("budget").await.map_err(seen)?;
        let status = pdb.status.unwrap_or_default();
        if status.disruptions_allowed == Some(1) {
            Ok(())
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await?;
    pods.evict("budget-1", &evict)
        .await
        .context("evicting budget-1 once the Redis healed")?;
    Ok(())
}

/// The selector of the Service `name`, once it exists.
async fn selector_of(
    services: &Api<Service>,
    name: &str,
) -> Result<Option<std::collections::BTreeMap<String, String>>, String> {
    Ok(services
        .get_opt(name)
        .await
        .map_err(seen)?
        .map(|s| s.spec.and_then(|s| s.selector).unwrap_or_default()))
}

/// A mode switch (on kwok: only the objects matter here, the replication engine's own tests
/// run the servers): Replication adds `<name>-replicas` and the headless `<name>-headless` and
/// narrows `<name>` to the primary; back to Standalone, the two are deleted and `<name>`
/// selects every pod again.
#[tokio::test]
async fn a_mode_switch_adds_and_removes_the_role_services() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    let ns = cluster
        .namespace_with(
            "children-mode",
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let _operator = Operator::start(&cluster, &ns).await?;
    let redis = create_redis(&ns, "switch", 2, 6379).await?;
    let services: Api<Service> = ns.api();
    let all = api::pods::selector_labels("switch");
    wait_service(&ns, "switch", &redis, None).await?;

    let mode = |mode: &str| serde_json::json!({"spec": {"mode": mode}});
    let redis_api: Api<Redis> = ns.api();
    redis_api
        .patch(
            "switch",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(mode("Replication")),
        )
        .await
        .context("switching to Replication")?;
    let primary = api::pods::role_selector("switch", api::pods::ROLE_PRIMARY);
    let replica = api::pods::role_selector("switch", api::pods::ROLE_REPLICA);
    wait_for(
        "the three Services of Replication mode",
        CONVERGE,
        || async {
            let seen = (
                selector_of(&services, "switch").await?,
                selector_of(&services, "switch-replicas").await?,
                selector_of(&services, "switch-headless").await?,
            );
            if seen
                == (
                    Some(primary.clone()),
                    Some(replica.clone()),
                    Some(all.clone()),
                )
            {
                Ok(())
            } else {
                Err(format!("{seen:?}"))
            }
        },
    )
    .await?;
    let headless = wait_service(&ns, "switch-headless", &redis, None).await?;
    let spec = headless.spec.unwrap_or_default();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    wait_service(&ns, "switch-replicas", &redis, None).await?;

    redis_api
        .patch(
            "switch",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(mode("Standalone")),
        )
        .await
        .context("switching back to Standalone")?;
    wait_for("Standalone's one Service", CONVERGE, || async {
        let seen = (
            selector_of(&services, "switch").await?,
            selector_of(&services, "switch-replicas").await?,
            selector_of(&services, "switch-headless").await?,
        );
        if seen == (Some(all.clone()), None, None) {
            Ok(())
        } else {
            Err(format!("{seen:?}"))
        }
    })
    .await?;
    Ok(())
}

/// A Redis named like a Service and a PodDisruptionBudget that someone else made (a Helm
/// release's `web`) takes neither over (DESIGN §3i.2): their selectors stay, no owner reference
/// is added, the Redis says `NameConflict` naming the Service in its Ready condition, and
/// deleting the Redis leaves both in place.
#[tokio::test]
async fn a_redis_never_takes_over_a_service_or_pdb_it_does_not_own() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("children-foreign").await?;
    let foreign_selector =
        std::collections::BTreeMap::from([("app".to_owned(), "web-frontend".to_owned())]);
    let services: Api<Service> = ns.api();
    let foreign_service = Service {
        metadata: kube::api::ObjectMeta {
            name: Some("web".into()),
            labels: Some(std::collections::BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "Helm".to_owned(),
            )])),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::ServiceSpec {
            selector: Some(foreign_selector.clone()),
            ports: Some(vec![k8s_openapi::api::core::v1::ServicePort {
                port: 80,
                target_port: Some(IntOrString::Int(8080)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let foreign_service = services
        .create(&PostParams::default(), &foreign_service)
        .await
        .context("creating the foreign Service web")?;
    let pdbs: Api<PodDisruptionBudget> = ns.api();
    let foreign_pdb = PodDisruptionBudget {
        metadata: kube::api::ObjectMeta {
            name: Some("web".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(1)),
            selector: Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                    match_labels: Some(foreign_selector.clone()),
                    ..Default::default()
                },
            ),
            ..Default::default()
        }),
        ..Default::default()
    };
    let foreign_pdb = pdbs
        .create(&PostParams::default(), &foreign_pdb)
        .await
        .context("creating the foreign PodDisruptionBudget web")?;

    create_redis(&ns, "web", 1, 6379).await?;
    wait_ready_pods(&ns, "web", 1).await?;
    let redises: Api<Redis> = ns.api();
    let message = e2e::wait_not_ready_because(&redises, "web", "NameConflict", CONVERGE).await?;
    assert!(message.contains("Service web"), "{message}");
    assert!(message.contains("PodDisruptionBudget web"), "{message}");

    let unchanged = |service: &Service, pdb: &PodDisruptionBudget| {
        assert_eq!(
            service.spec.as_ref().and_then(|s| s.selector.clone()),
            Some(foreign_selector.clone()),
            "the Service's selector"
        );
        assert!(service.owner_references().is_empty(), "{service:?}");
        assert_eq!(
            service.resource_version(),
            foreign_service.resource_version(),
            "the Service was written"
        );
        // Its status is the disruption controller's to write; its spec and owners are not ours.
        assert!(pdb.owner_references().is_empty(), "{pdb:?}");
        assert_eq!(pdb.spec, foreign_pdb.spec, "the PodDisruptionBudget's spec");
        let managers: Vec<&str> = pdb
            .managed_fields()
            .iter()
            .filter_map(|f| f.manager.as_deref())
            .collect();
        assert!(
            !managers.contains(&"redis-operator"),
            "the controller wrote the PodDisruptionBudget: {managers:?}"
        );
    };
    unchanged(
        &services.get("web").await.context("reading Service web")?,
        &pdbs.get("web").await.context("reading PDB web")?,
    );

    redises
        .delete("web", &DeleteParams::default())
        .await
        .context("deleting Redis web")?;
    wait_for("Redis web gone", CONVERGE, || async {
        match redises.get_opt("web").await.map_err(seen)? {
            None => Ok(()),
            Some(_) => Err("still there".to_owned()),
        }
    })
    .await?;
    // The garbage collector had nothing of the Redis's to follow into them.
    unchanged(
        &services
            .get("web")
            .await
            .context("Service web after the Redis")?,
        &pdbs.get("web").await.context("PDB web after the Redis")?,
    );
    Ok(())
}

/// `spec.service.type: NodePort`: the client Service gets a node port, and redis-cli reaches
/// Redis on the pod's node IP at that port (kube-proxy's NodePort rules); back to ClusterIP, the
/// node port is gone and the Service still routes.
#[tokio::test]
async fn a_node_port_service_is_reachable_on_the_node_ip() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("children-nodeport").await?;
    let redis = create_redis(&ns, "exposed", 1, 6379).await?;
    let redises: Api<Redis> = ns.api();
    redises
        .patch(
            "exposed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                serde_json::json!({"spec": {"service": {"type": "NodePort"}}}),
            ),
        )
        .await
        .context("asking for a NodePort Service")?;
    let pods = wait_ready_pods(&ns, "exposed", 1).await?;
    let host_ip = pods
        .first()
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.host_ip.clone())
        .ok_or_else(|| Error::process("the pod's node IP", "none"))?;
    let services: Api<Service> = ns.api();
    let node_port = wait_for("a node port on Service exposed", CONVERGE, || async {
        let service = services.get("exposed").await.map_err(seen)?;
        let spec = service.spec.unwrap_or_default();
        match (
            spec.type_.as_deref(),
            spec.ports
                .unwrap_or_default()
                .first()
                .and_then(|p| p.node_port),
        ) {
            (Some("NodePort"), Some(port)) => Ok(port),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    let port = u16::try_from(node_port).map_err(|e| Error::process("the node port", e))?;
    wait_for(&format!("PONG on {host_ip}:{port}"), CONVERGE, || async {
        match node::redis_cli(&host_ip, port, &["PING"]).await? {
            pong if pong == "PONG" => Ok(()),
            other => Err(format!("answered {other:?}")),
        }
    })
    .await?;

    redises
        .patch(
            "exposed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"service": null}})),
        )
        .await
        .context("back to ClusterIP")?;
    let service = wait_for("Service exposed back to ClusterIP", CONVERGE, || async {
        let service = services.get("exposed").await.map_err(seen)?;
        let spec = service.spec.clone().unwrap_or_default();
        let node_ports: Vec<i32> = spec
            .ports
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.node_port)
            .collect();
        match spec.type_.as_deref() {
            Some("ClusterIP") if node_ports.is_empty() => Ok(service),
            other => Err(format!("{other:?}, node ports {node_ports:?}")),
        }
    })
    .await?;
    assert!(controlled_by(&service, &redis));
    ping_through(&service, 6379).await?;
    Ok(())
}

/// The pod IPs an EndpointSlice of Service `service` lists (ready or not).
async fn endpoint_ips(ns: &TestNamespace, service: &str) -> Result<Vec<String>, String> {
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> = ns.api();
    let list = slices
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await
        .map_err(seen)?;
    let mut ips: Vec<String> = list
        .items
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .flat_map(|e| e.addresses.iter().cloned())
        .collect();
    ips.sort();
    Ok(ips)
}

/// `spec.service.perPod` (§3n): each pod gets a Service `<name>-<ordinal>` of the client
/// Service's type that routes to it alone (its endpoints are that pod, and redis-cli on a node IP
/// at its node port reaches that pod's role); a pod that lacks its pod-name label (made before the
/// operator set it) is labelled in place; scaling down deletes the Service of the ordinal gone,
/// and turning `perPod` off deletes the rest.
#[tokio::test]
async fn per_pod_services_reach_each_pod_and_follow_the_replicas() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("children-perpod").await?;
    let name = "pp";
    let redis: Redis = serde_json::from_value(serde_json::json!({
        "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
        "metadata": {"name": name},
        "spec": {"mode": "Replication", "replicas": 3, "image": REDIS_IMAGE,
                 "service": {"type": "NodePort", "perPod": true}}
    }))
    .map_err(|e| Error::process("the Redis", e))?;
    let redis = ns
        .api::<Redis>()
        .create(&PostParams::default(), &redis)
        .await
        .context("creating Redis pp")?;
    let pods = wait_ready_pods(&ns, name, 3).await?;
    let pods_api: Api<Pod> = ns.api();
    // An "old" pod: its label taken away by hand, as if made before the operator set it.
    pods_api
        .patch(
            "pp-1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                serde_json::json!({"metadata": {"labels": {api::pods::POD_NAME_LABEL: null}}}),
            ),
        )
        .await
        .context("taking pp-1's pod-name label away")?;
    wait_for("pp-1 labelled with its name again", CONVERGE, || async {
        let pod = pods_api.get("pp-1").await.map_err(seen)?;
        match pod
            .labels()
            .get(api::pods::POD_NAME_LABEL)
            .map(String::as_str)
        {
            Some("pp-1") => Ok(()),
            other => Err(format!("label {other:?}")),
        }
    })
    .await?;
    let services: Api<Service> = ns.api();
    for pod in &pods {
        let pod_name = pod.name_any();
        let ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.clone())
            .ok_or_else(|| Error::process("the pod's IP", &pod_name))?;
        let service = wait_service(&ns, &pod_name, &redis, None).await?;
        assert_eq!(
            service.spec.as_ref().and_then(|s| s.type_.as_deref()),
            Some("NodePort"),
            "{pod_name}'s Service takes spec.service.type"
        );
        wait_for(
            &format!("Service {pod_name}'s endpoints: {ip} only"),
            CONVERGE,
            || async {
                match endpoint_ips(&ns, &pod_name).await? {
                    ips if ips == [ip.clone()] => Ok(()),
                    ips => Err(format!("{ips:?}")),
                }
            },
        )
        .await?;
        // Through the node port, on another node than the pod's if there is one: that pod's role.
        let node_port = service
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|p| p.first())
            .and_then(|p| p.node_port)
            .ok_or_else(|| Error::process("the node port", &pod_name))?;
        let node_port = u16::try_from(node_port).map_err(|e| Error::process("the node port", e))?;
        let host_ip = pod
            .status
            .as_ref()
            .and_then(|s| s.host_ip.clone())
            .ok_or_else(|| Error::process("the pod's node IP", &pod_name))?;
        let role_of_pod = node::redis_cli(&ip, 6379, &["ROLE"])
            .await
            .map_err(|e| Error::process("ROLE on the pod", e))?;
        let role_of_pod = role_of_pod.lines().next().unwrap_or_default().to_owned();
        wait_for(
            &format!("{pod_name}'s role ({role_of_pod}) on {host_ip}:{node_port}"),
            CONVERGE,
            || async {
                let role = node::redis_cli(&host_ip, node_port, &["ROLE"]).await?;
                match role.lines().next() {
                    Some(first) if first == role_of_pod => Ok(()),
                    other => Err(format!("answered {other:?}")),
                }
            },
        )
        .await?;
    }

    // Two pods: pp-2's Service goes with its pod.
    let redises: Api<Redis> = ns.api();
    redises
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 2}})),
        )
        .await
        .context("scaling to 2")?;
    let names = |list: Vec<Service>| {
        let mut names: Vec<String> = list.iter().map(|s| s.name_any()).collect();
        names.sort();
        names
    };
    let selector = api::pods::selector_string(name);
    wait_for("pp's Services without pp-2", CONVERGE, || async {
        let list = services
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(seen)?;
        match names(list.items) {
            n if n == ["pp", "pp-0", "pp-1", "pp-headless", "pp-replicas"] => Ok(()),
            n => Err(format!("{n:?}")),
        }
    })
    .await?;
    // perPod off: only the three of Replication mode stay.
    redises
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"service": {"perPod": null}}})),
        )
        .await
        .context("turning perPod off")?;
    wait_for("pp's Services without per-pod ones", CONVERGE, || async {
        let list = services
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(seen)?;
        match names(list.items) {
            n if n == ["pp", "pp-headless", "pp-replicas"] => Ok(()),
            n => Err(format!("{n:?}")),
        }
    })
    .await?;
    Ok(())
}
