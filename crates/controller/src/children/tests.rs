//! The children's builders and comparisons.

use super::pdb::*;
use super::service::*;
use super::*;
use api::exporter::SCRAPE_LABEL;
use k8s_openapi::api::core::v1::ServiceSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use serde_json::json;
use std::collections::BTreeMap;

/// The children of a Redis for a controller whose own pods are unknown.
fn desired_default(redis: &Redis) -> Option<Desired> {
    desired(redis, &OperatorPods::default())
}

fn redis(spec: serde_json::Value) -> Redis {
    let mut r = Redis::new("cache", serde_json::from_value(spec).expect("spec"));
    r.metadata.namespace = Some("ns".into());
    r.metadata.uid = Some("u1".into());
    r
}

#[test]
fn with_the_exporter_every_service_has_a_metrics_port_and_one_is_labelled_for_scraping() {
    let port_names = |svc: &Service| -> Vec<String> {
        svc.spec
            .as_ref()
            .and_then(|s| s.ports.clone())
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.name.clone())
            .collect()
    };
    let scraped =
        |svc: &Service| svc.labels().get(SCRAPE_LABEL).map(String::as_str) == Some("true");
    let standalone = desired_default(&redis(json!({"exporter": {}}))).expect("desired");
    assert_eq!(port_names(&standalone.services[0]), ["redis", "metrics"]);
    assert!(scraped(&standalone.services[0]));
    let replicated = desired_default(&redis(
        json!({"mode": "Replication", "replicas": 3, "exporter": {}}),
    ))
    .expect("desired");
    let labelled: Vec<String> = replicated
        .services
        .iter()
        .filter(|s| scraped(s))
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(labelled, ["cache-headless"]);
    assert!(
        replicated
            .services
            .iter()
            .all(|s| port_names(s).contains(&"metrics".to_owned()))
    );
    // Turning it off changes the ports, so the Services are applied again without them.
    let off = desired_default(&redis(json!({"exporter": {"enabled": false}}))).expect("desired");
    assert!(service_differs(
        &off.services[0],
        Some(&standalone.services[0])
    ));
}

fn names(services: &[Service]) -> Vec<String> {
    services.iter().map(ResourceExt::name_any).collect()
}

fn selector(service: &Service) -> BTreeMap<String, String> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.selector.clone())
        .unwrap_or_default()
}

/// What the API server stores for `obj`: the defaults it fills in, our fields untouched.
fn as_stored(service: &Service) -> Service {
    let mut stored = service.clone();
    let spec = stored.spec.get_or_insert_with(ServiceSpec::default);
    if spec.cluster_ip.is_none() {
        spec.cluster_ip = Some("10.96.0.17".into());
    }
    spec.cluster_ips = spec.cluster_ip.clone().map(|ip| vec![ip]);
    spec.session_affinity = Some("None".into());
    spec.ip_families = Some(vec!["IPv4".into()]);
    spec.internal_traffic_policy = Some("Cluster".into());
    stored.metadata.uid = Some("svc-uid".into());
    stored.metadata.resource_version = Some("42".into());
    stored
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("team".into(), "cache".into());
    stored
}

#[test]
fn standalone_has_one_service_over_every_pod_and_no_role_services() {
    let desired = desired_default(&redis(json!({"port": 8333}))).expect("desired");
    assert_eq!(names(&desired.services), ["cache"]);
    assert_eq!(
        desired.absent_services,
        ["cache-replicas", "cache-headless"]
    );
    let service = serde_json::to_value(&desired.services[0]).expect("json");
    assert_eq!(service["apiVersion"], "v1");
    assert_eq!(service["kind"], "Service");
    assert_eq!(service["metadata"]["namespace"], "ns");
    assert_eq!(
        service["spec"]["ports"],
        json!([{"name": "redis", "port": 8333, "targetPort": "redis", "protocol": "TCP"}])
    );
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert!(service["spec"].get("clusterIP").is_none(), "{service}");
    assert_eq!(
        selector(&desired.services[0]),
        api::pods::selector_labels("cache")
    );
}

#[test]
fn replication_routes_by_role_and_names_every_pod() {
    let desired = desired_default(&redis(json!({"mode": "Replication"}))).expect("desired");
    assert_eq!(
        names(&desired.services),
        ["cache", "cache-replicas", "cache-headless"]
    );
    assert!(desired.absent_services.is_empty());
    let [client, replicas, headless] = &desired.services[..] else {
        panic!("three Services");
    };
    assert_eq!(
        selector(client)
            .get(api::pods::ROLE_LABEL)
            .map(String::as_str),
        Some("primary")
    );
    assert_eq!(
        selector(replicas)
            .get(api::pods::ROLE_LABEL)
            .map(String::as_str),
        Some("replica")
    );
    assert_eq!(selector(headless), api::pods::selector_labels("cache"));
    let spec = headless.spec.as_ref().expect("spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    for service in [client, replicas] {
        let spec = service.spec.as_ref().expect("spec");
        assert_eq!(spec.cluster_ip, None, "{}", service.name_any());
        assert_eq!(spec.publish_not_ready_addresses, None);
        assert_eq!(spec.ports.as_ref().map(|p| p[0].port), Some(6379));
    }
}

#[test]
fn every_child_is_labelled_and_controlled_by_the_redis() {
    let desired = desired_default(&redis(json!({"mode": "Replication"}))).expect("desired");
    let metas = desired
        .services
        .iter()
        .map(|s| &s.metadata)
        .chain([&desired.pdb.metadata]);
    for meta in metas {
        assert_eq!(meta.labels, Some(api::pods::selector_labels("cache")));
        let owners = meta.owner_references.as_deref().unwrap_or_default();
        assert_eq!(owners.len(), 1);
        let owner = &owners[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("Redis", "cache", "u1")
        );
        assert_eq!(owner.api_version, "myapp.tangx.in/v1");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
    }
}

#[test]
fn the_pdb_takes_max_unavailable_from_the_spec_over_every_pod() {
    let pdb = pdb(&redis(json!({}))).expect("pdb");
    let value = serde_json::to_value(&pdb).expect("json");
    assert_eq!(value["apiVersion"], "policy/v1");
    assert_eq!(value["kind"], "PodDisruptionBudget");
    assert_eq!(value["metadata"]["name"], "cache");
    assert_eq!(value["spec"]["maxUnavailable"], 1);
    assert!(value["spec"].get("minAvailable").is_none());
    assert_eq!(
        value["spec"]["selector"],
        json!({"matchLabels": api::pods::selector_labels("cache")})
    );
    let pdb = super::pdb(&redis(
        json!({"podDisruptionBudget": {"maxUnavailable": "25%"}}),
    ))
    .expect("pdb");
    assert_eq!(
        pdb.spec.and_then(|s| s.max_unavailable),
        Some(IntOrString::String("25%".into()))
    );
}

#[test]
fn nothing_is_built_without_a_uid_or_a_namespace() {
    let mut r = redis(json!({}));
    r.metadata.uid = None;
    assert_eq!(desired_default(&r), None);
    let mut r = redis(json!({}));
    r.metadata.namespace = None;
    assert_eq!(desired_default(&r), None);
}

#[test]
fn what_the_api_server_stored_from_our_service_needs_no_write() {
    for spec in [json!({}), json!({"mode": "Replication", "port": 7000})] {
        let desired = desired_default(&redis(spec)).expect("desired");
        for service in &desired.services {
            assert!(service_differs(service, None), "missing: apply");
            assert!(
                !service_differs(service, Some(&as_stored(service))),
                "{} as stored",
                service.name_any()
            );
        }
        let mut stored = desired.pdb.clone();
        stored.metadata.uid = Some("pdb-uid".into());
        stored.status = Some(Default::default());
        assert!(pdb_differs(&desired.pdb, None));
        assert!(!pdb_differs(&desired.pdb, Some(&stored)));
    }
}

#[test]
fn a_changed_spec_or_a_hand_edit_needs_a_write() {
    let base = redis(json!({}));
    let service = service(&base, ServiceKind::Client).expect("service");
    let stored = as_stored(&service);
    let new_port =
        super::service(&redis(json!({"port": 7000})), ServiceKind::Client).expect("service");
    assert!(service_differs(&new_port, Some(&stored)));

    let mut edited = stored.clone();
    if let Some(spec) = edited.spec.as_mut() {
        spec.selector = Some(BTreeMap::from([("app".into(), "other".into())]));
    }
    assert!(service_differs(&service, Some(&edited)), "selector edited");
    let mut edited = stored.clone();
    if let Some(spec) = edited.spec.as_mut() {
        spec.type_ = Some("NodePort".into());
    }
    assert!(service_differs(&service, Some(&edited)), "type edited");
    let mut edited = stored.clone();
    edited.metadata.owner_references = None;
    assert!(service_differs(&service, Some(&edited)), "owner removed");
    let mut edited = stored;
    edited
        .metadata
        .labels
        .as_mut()
        .map(|l| l.remove(api::pods::LABEL_INSTANCE));
    assert!(service_differs(&service, Some(&edited)), "label removed");

    let pdb = pdb(&base).expect("pdb");
    let two = super::pdb(&redis(
        json!({"podDisruptionBudget": {"maxUnavailable": 2}}),
    ))
    .expect("pdb");
    assert!(pdb_differs(&two, Some(&pdb)));
    let mut edited = pdb.clone();
    if let Some(spec) = edited.spec.as_mut() {
        spec.max_unavailable = None;
        spec.min_available = Some(IntOrString::Int(2));
    }
    assert!(pdb_differs(&pdb, Some(&edited)), "minAvailable by hand");
}

#[test]
fn the_cached_service_compares_as_the_stored_one() {
    let base = redis(json!({"mode": "Replication", "exporter": {}}));
    let desired = desired_default(&base).expect("desired");
    let other =
        super::service(&redis(json!({"port": 7000})), ServiceKind::Client).expect("service");
    for stored in desired.services.iter().map(as_stored) {
        let mut node_port = stored.clone();
        if let Some(spec) = node_port.spec.as_mut() {
            spec.type_ = Some("NodePort".into());
            spec.publish_not_ready_addresses = Some(false);
        }
        for full in [stored.clone(), node_port] {
            let mut cached = full.clone();
            strip_service(&mut cached);
            assert_eq!(cached.status, None);
            assert_eq!(
                cached.spec.as_ref().and_then(|s| s.cluster_ips.as_ref()),
                None
            );
            for want in desired.services.iter().chain([&other]) {
                assert_eq!(
                    service_differs(want, Some(&cached)),
                    service_differs(want, Some(&full)),
                    "{} against {}",
                    want.name_any(),
                    full.name_any()
                );
            }
        }
    }
}

#[test]
fn switching_modes_changes_the_client_selector_and_the_role_services() {
    let standalone = desired_default(&redis(json!({}))).expect("desired");
    let replication = desired_default(&redis(json!({"mode": "Replication"}))).expect("desired");
    let stored_standalone = as_stored(&standalone.services[0]);
    let stored_replication = as_stored(&replication.services[0]);
    // To Replication: the client Service narrows to the primary.
    assert!(service_differs(
        &replication.services[0],
        Some(&stored_standalone)
    ));
    // And back: the role label must leave the selector (a subset test would miss it).
    assert!(service_differs(
        &standalone.services[0],
        Some(&stored_replication)
    ));
    assert_eq!(
        standalone.absent_services,
        names(&replication.services[1..])
    );
    // The PDB does not depend on the mode.
    assert_eq!(standalone.pdb, replication.pdb);
}

#[test]
fn only_children_the_redis_controls_are_deleted() {
    let desired = desired_default(&redis(json!({"mode": "Replication"}))).expect("desired");
    let ours = as_stored(&desired.services[1]);
    assert!(controlled_by(&ours, "u1"));
    assert!(!controlled_by(&ours, "another-redis"));
    let mut foreign = ours;
    foreign.metadata.owner_references = None;
    assert!(!controlled_by(&foreign, "u1"));
}

#[test]
fn a_network_policy_is_a_child_only_while_the_spec_asks_for_one() {
    assert_eq!(
        desired_default(&redis(json!({})))
            .expect("desired")
            .network_policy,
        None
    );
    let on = desired_default(&redis(json!({"networkPolicy": {}}))).expect("desired");
    let policy = on.network_policy.expect("a policy");
    assert_eq!(policy.metadata.name.as_deref(), Some("cache"));
    let off = desired_default(&redis(json!({"networkPolicy": {"enabled": false}})));
    assert_eq!(off.expect("desired").network_policy, None);
}

#[test]
fn a_tls_plaintext_port_is_on_every_service_and_admitted_by_the_policy() {
    let spec = json!({
        "mode": "Replication", "replicas": 3, "port": 7000,
        "tls": {"secretRef": {"name": "t"}, "plaintextPort": 7001},
        "networkPolicy": {},
    });
    let desired = desired_default(&redis(spec)).expect("desired");
    for service in &desired.services {
        let ports: Vec<(Option<String>, i32)> = service
            .spec
            .as_ref()
            .and_then(|s| s.ports.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|p| (p.name, p.port))
            .collect();
        assert_eq!(
            ports,
            [
                (Some("redis".to_owned()), 7000),
                (Some("redis-plaintext".to_owned()), 7001)
            ],
            "{}",
            service.name_any()
        );
    }
    let policy = desired.network_policy.expect("a policy");
    let ports = serde_json::to_value(&policy.spec.expect("spec").ingress.expect("rules")[0].ports)
        .expect("json");
    assert_eq!(
        ports,
        json!([{"port": 7000, "protocol": "TCP"}, {"port": 7001, "protocol": "TCP"}])
    );
}

#[test]
fn the_client_service_takes_spec_service_and_only_it_does() {
    let r = redis(json!({
        "mode": "Replication", "replicas": 3,
        "service": {
            "type": "LoadBalancer",
            "annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true",
                            "myapp.tangx.in/sneaky": "x"},
            "loadBalancerSourceRanges": ["203.0.113.0/24"],
            "externalTrafficPolicy": "Local"
        }
    }));
    let desired = desired_default(&r).expect("desired");
    let client = &desired.services[0];
    let spec = client.spec.as_ref().expect("spec");
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(
        spec.load_balancer_source_ranges.as_deref(),
        Some(&["203.0.113.0/24".to_owned()][..])
    );
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
    let annotations = client.annotations();
    assert_eq!(
        annotations
            .get("service.beta.kubernetes.io/aws-load-balancer-internal")
            .map(String::as_str),
        Some("true")
    );
    assert!(!annotations.contains_key("myapp.tangx.in/sneaky"));
    assert!(annotations.contains_key(SETTINGS_ANNOTATION));
    for other in &desired.services[1..] {
        let spec = other.spec.as_ref().expect("spec");
        assert_eq!(
            spec.type_.as_deref(),
            Some("ClusterIP"),
            "{}",
            other.name_any()
        );
        assert!(other.metadata.annotations.is_none());
    }
}

#[test]
fn a_changed_or_removed_setting_is_a_difference_and_the_api_server_s_additions_are_not() {
    let with = |service: serde_json::Value| {
        desired_default(&redis(json!({ "service": service })))
            .expect("desired")
            .services
            .remove(0)
    };
    let node_port = with(json!({"type": "NodePort", "externalTrafficPolicy": "Local"}));
    // As the cache keeps it after the API server filled it in.
    let mut stored = node_port.clone();
    if let Some(spec) = stored.spec.as_mut() {
        spec.cluster_ip = Some("10.96.0.7".into());
        for port in spec.ports.iter_mut().flatten() {
            port.node_port = Some(31234);
        }
    }
    strip_service(&mut stored);
    assert!(!service_differs(&node_port, Some(&stored)));
    // The policy removed: the digest differs, so the apply that drops it happens.
    let without = with(json!({"type": "NodePort"}));
    assert!(service_differs(&without, Some(&stored)));
    // spec.service removed altogether: back to ClusterIP without the digest.
    let plain = desired_default(&redis(json!({})))
        .expect("desired")
        .services
        .remove(0);
    assert!(service_differs(&plain, Some(&stored)));
    let annotated = with(json!({"annotations": {"a.example/x": "1"}}));
    let reannotated = with(json!({"annotations": {"a.example/x": "2"}}));
    assert!(service_differs(&reannotated, Some(&annotated)));
}

#[test]
fn per_pod_services_select_one_pod_each_with_the_client_settings() {
    let r = redis(json!({
        "mode": "Replication", "replicas": 3,
        "exporter": {},
        "service": {"type": "NodePort", "perPod": true, "annotations": {"example.com/a": "b"},
                    "externalTrafficPolicy": "Local"}
    }));
    let desired = desired_default(&r).expect("desired");
    assert_eq!(
        names(&desired.services),
        [
            "cache",
            "cache-replicas",
            "cache-headless",
            "cache-0",
            "cache-1",
            "cache-2"
        ]
    );
    let client = &desired.services[0];
    for (ordinal, svc) in desired.services[3..].iter().enumerate() {
        let mut want = api::pods::selector_labels("cache");
        want.insert(
            api::pods::POD_NAME_LABEL.to_owned(),
            format!("cache-{ordinal}"),
        );
        assert_eq!(selector(svc), want);
        let spec = svc.spec.as_ref().expect("spec");
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
        assert_eq!(svc.metadata.annotations, client.metadata.annotations);
        let ports: Vec<_> = spec
            .ports
            .iter()
            .flatten()
            .filter_map(|p| p.name.clone())
            .collect();
        assert_eq!(
            ports,
            ["redis"],
            "clients only: metrics are scraped elsewhere"
        );
        assert!(!svc.labels().contains_key(SCRAPE_LABEL));
    }
    let without = desired_default(&redis(
        json!({"replicas": 3, "service": {"type": "NodePort"}}),
    ))
    .expect("desired");
    assert_eq!(names(&without.services), ["cache"]);
}

#[test]
fn per_pod_services_of_ordinals_scaled_away_or_turned_off_are_unwanted() {
    // cache-0..cache-3 are ours; cache-4 is another Redis's (named "cache-4"); cache-5 ours again.
    let held = |name: &str| match name {
        "cache-0" | "cache-1" | "cache-2" | "cache-3" | "cache-5" => Some(true),
        "cache-4" => Some(false),
        _ => None,
    };
    let two = redis(json!({"replicas": 2, "service": {"perPod": true}}));
    assert_eq!(
        unwanted_pod_services(&two, held),
        ["cache-5", "cache-3", "cache-2"],
        "highest first, past a name another object holds"
    );
    let off = redis(json!({"replicas": 2, "service": {"type": "NodePort"}}));
    assert_eq!(unwanted_pod_services(&off, held).len(), 5);
    let all = redis(json!({"replicas": 6, "service": {"perPod": true}}));
    assert!(unwanted_pod_services(&all, held).is_empty());
}
