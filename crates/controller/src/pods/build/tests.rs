//! Tests of `pods::build`.

use super::launch::acl_launcher;
use super::*;
use crate::redis_server::{FENCE_HOST, FENCE_PORT};
use k8s_openapi::api::core::v1::Container;
use serde_json::json;

#[test]
fn the_exporter_sidecar_reads_redis_over_localhost_with_the_secrets_password() {
    let r = redis(json!({
        "port": 7000,
        "auth": {"secretRef": {"name": "pw"}},
        "exporter": {"port": 9200},
    }));
    let spec = pod_spec("cache", &r.spec);
    assert_eq!(spec.containers.len(), 2);
    let exporter = &spec.containers[1];
    assert_eq!(exporter.name, "exporter");
    assert_eq!(
        exporter.image.as_deref(),
        Some(api::exporter::DEFAULT_EXPORTER_IMAGE)
    );
    let env = exporter.env.clone().unwrap_or_default();
    let value = |n: &str| env.iter().find(|e| e.name == n).cloned();
    assert_eq!(
        value("REDIS_ADDR").and_then(|e| e.value).as_deref(),
        Some("redis://localhost:7000")
    );
    let password = value("REDIS_PASSWORD")
        .and_then(|e| e.value_from)
        .expect("from the Secret");
    assert_eq!(
        password.secret_key_ref.map(|s| s.name).as_deref(),
        Some("pw")
    );
    let ports = exporter.ports.clone().unwrap_or_default();
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].container_port),
        (Some("metrics"), 9200)
    );
    assert!(
        exporter.readiness_probe.is_none(),
        "an exporter never takes Redis out of service"
    );
    let off = redis(json!({"exporter": {"enabled": false}}));
    assert_eq!(pod_spec("cache", &off.spec).containers.len(), 1);
}

#[test]
fn with_storage_each_pod_mounts_its_own_claim_and_the_hash_is_shared() {
    let r = redis(json!({"replicas": 2, "storage": {"size": "1Gi", "appendOnly": true}}));
    let spec = pod_spec("cache", &r.spec);
    let hash = spec_hash(&spec);
    let claim_of = |ordinal| {
        let pod = desired_pod(&r, ordinal, &spec, &hash).expect("pod");
        let volumes = pod.spec.and_then(|s| s.volumes).expect("volumes");
        volumes[0]
            .persistent_volume_claim
            .as_ref()
            .map(|c| c.claim_name.clone())
    };
    assert_eq!(claim_of(0).as_deref(), Some("data-my-op-redis-0"));
    assert_eq!(claim_of(1).as_deref(), Some("data-my-op-redis-1"));
    let args = spec.containers[0].args.clone().unwrap_or_default();
    assert!(args.windows(2).any(|w| w == ["--dir", "/data"]), "{args:?}");
    assert!(
        args.windows(2).any(|w| w == ["--appendonly", "yes"]),
        "{args:?}"
    );
    // Without storage: the emptyDir, and a different hash (pods are replaced onto claims).
    let plain = pod_spec("cache", &redis(json!({"replicas": 2})).spec);
    assert!(
        plain.volumes.as_ref().expect("volumes")[0]
            .empty_dir
            .is_some()
    );
    assert_ne!(spec_hash(&plain), hash);
}

fn redis(spec: serde_json::Value) -> Redis {
    let mut r = Redis::new("my-op-redis", serde_json::from_value(spec).expect("spec"));
    r.metadata.namespace = Some("ns".into());
    r.metadata.uid = Some("8d6f".into());
    r
}

#[test]
fn pod_runs_redis_server_on_the_port_with_probes() {
    let r = redis(json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333}));
    let spec = pod_spec("cache", &r.spec);
    let pod = desired_pod(&r, 1, &spec, &spec_hash(&spec)).expect("pod");
    let pod = serde_json::to_value(&pod).expect("json");
    let c = &pod["spec"]["containers"][0];
    assert_eq!(pod["metadata"]["name"], "my-op-redis-1");
    assert_eq!(pod["metadata"]["namespace"], "ns");
    assert_eq!(c["name"], "redis");
    assert_eq!(c["image"], "redis:5-alpine");
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        c["args"],
        json!(["redis-server", "--port", "8333", "--protected-mode", "no"])
    );
    assert_eq!(c["ports"][0]["containerPort"], 8333);
    assert_eq!(
        c["readinessProbe"]["exec"]["command"],
        json!(["redis-cli", "-p", "8333", "ping"])
    );
    assert_eq!(
        c["livenessProbe"]["exec"]["command"],
        json!(["redis-cli", "-p", "8333", "ping"])
    );
}

#[test]
fn pod_carries_labels_owner_and_hash() {
    let r = redis(json!({}));
    let spec = pod_spec("cache", &r.spec);
    let hash = spec_hash(&spec);
    let pod = desired_pod(&r, 0, &spec, &hash).expect("pod");
    let labels = pod.metadata.labels.expect("labels");
    assert_eq!(labels.get("app").map(String::as_str), Some("my-op-redis"));
    assert_eq!(
        labels.get("app.kubernetes.io/instance").map(String::as_str),
        Some("my-op-redis")
    );
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.subdomain.clone()),
        None,
        "Standalone: no headless Service"
    );
    // What a per-pod Service selects.
    assert_eq!(
        labels.get(api::pods::POD_NAME_LABEL).map(String::as_str),
        Some("my-op-redis-0")
    );
    let owner = &pod.metadata.owner_references.expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Redis", "my-op-redis", "8d6f")
    );
    assert_eq!(owner.api_version, "myapp.tangx.in/v1");
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
    assert_eq!(
        pod.metadata
            .annotations
            .expect("annotations")
            .get(SPEC_HASH_ANNOTATION),
        Some(&hash)
    );
}

#[test]
fn pod_passes_the_restricted_pod_security_profile() {
    let spec = pod_spec("cache", &redis(json!({})).spec);
    let pod_sc = spec
        .security_context
        .as_ref()
        .expect("pod security context");
    assert_eq!(pod_sc.run_as_non_root, Some(true));
    assert!(pod_sc.run_as_user.is_some_and(|uid| uid != 0));
    assert_eq!(
        pod_sc.seccomp_profile.as_ref().map(|p| p.type_.as_str()),
        Some("RuntimeDefault")
    );
    let c = &spec.containers[0];
    let sc = c
        .security_context
        .as_ref()
        .expect("container security context");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(
        sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_owned()])
    );
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.privileged, None);
    let mount = &c.volume_mounts.as_ref().expect("mounts")[0];
    assert_eq!(mount.mount_path, "/data");
    let volume = &spec.volumes.as_ref().expect("volumes")[0];
    assert!(
        volume.empty_dir.is_some(),
        "only emptyDir: restricted allows no hostPath"
    );
}

#[test]
fn resources_and_pull_policy_are_passed_through() {
    let spec = pod_spec(
        "cache",
        &redis(json!({"imagePullPolicy": "Always", "resources": {"limits": {"memory": "256Mi"}}}))
            .spec,
    );
    let c = &spec.containers[0];
    assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
    let limits = c
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .expect("limits");
    assert_eq!(limits.get("memory").map(|q| q.0.as_str()), Some("256Mi"));
}

#[test]
fn hash_is_stable_and_changes_with_what_matters() {
    let base = pod_spec(
        "cache",
        &redis(json!({"image": "redis:7.2-alpine", "port": 6379})).spec,
    );
    assert_eq!(spec_hash(&base), spec_hash(&base.clone()));
    assert_eq!(spec_hash(&base).len(), 16);
    for changed in [
        json!({"image": "redis:7.4-alpine", "port": 6379}),
        json!({"image": "redis:7.2-alpine", "port": 6380}),
        json!({"image": "redis:7.2-alpine", "port": 6379, "imagePullPolicy": "Always"}),
        json!({"image": "redis:7.2-alpine", "port": 6379, "resources": {"requests": {"cpu": "100m"}}}),
    ] {
        assert_ne!(
            spec_hash(&base),
            spec_hash(&pod_spec("cache", &redis(changed.clone()).spec)),
            "{changed}"
        );
    }
    // Replicas are not part of a pod: scaling rolls nothing.
    let scaled = pod_spec(
        "cache",
        &redis(json!({"image": "redis:7.2-alpine", "port": 6379, "replicas": 5})).spec,
    );
    assert_eq!(spec_hash(&base), spec_hash(&scaled));
}

#[test]
fn auth_reads_the_password_from_the_secret_never_in_clear() {
    let r = redis(json!({"auth": {"secretRef": {"name": "cache-auth"}}}));
    let spec = pod_spec("cache", &r.spec);
    let c = serde_json::to_value(&spec.containers[0]).expect("json");
    // The launcher hands the password to redis-server on stdin: no argument carries it, not
    // even as a `$(REDIS_PASSWORD)` the kubelet would expand into the command line.
    assert_eq!(
        c["command"],
        json!(["sh", "-c", AUTH_LAUNCHER, "redis-server"])
    );
    assert_eq!(
        c["args"],
        json!(["--port", "6379", "--protected-mode", "no"])
    );
    let from =
        json!({"secretKeyRef": {"name": "cache-auth", "key": "password", "optional": false}});
    assert_eq!(
        c["env"],
        json!([
            {"name": "REDIS_PASSWORD", "valueFrom": from},
            {"name": "REDISCLI_AUTH", "valueFrom": from},
        ])
    );
    // The probes' redis-cli reads REDISCLI_AUTH: no password on their command line.
    assert_eq!(
        c["readinessProbe"]["exec"]["command"],
        json!(["redis-cli", "-p", "6379", "ping"])
    );
    let replication = pod_spec(
        "cache",
        &redis(json!({"mode": "Replication", "auth": {"secretRef": {"name": "s", "key": "pw"}}}))
            .spec,
    );
    let args = replication.containers[0].args.clone().unwrap_or_default();
    assert!(
        args.ends_with(&[
            "--replicaof".to_owned(),
            FENCE_HOST.to_owned(),
            FENCE_PORT.to_string(),
        ]),
        "{args:?}"
    );
    let env = replication.containers[0].env.clone().unwrap_or_default();
    assert!(env.iter().all(|e| {
        e.value.is_none()
            && e.value_from
                .as_ref()
                .and_then(|v| v.secret_key_ref.as_ref())
                .map(|s| (s.name.as_str(), s.key.as_str()))
                == Some(("s", "pw"))
    }));
}

#[test]
fn no_auth_no_env() {
    let spec = pod_spec("cache", &redis(json!({})).spec);
    assert!(spec.containers[0].env.is_none());
    // Without a password the image's entrypoint runs redis-server as it always did.
    assert!(spec.containers[0].command.is_none());
    let args = spec.containers[0].args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("redis-server"));
}

#[test]
fn the_auth_launcher_gives_the_kubelet_nothing_to_expand() {
    // The kubelet expands `$(VAR)` and turns `$$` into `$` in a container's command and args.
    assert!(!AUTH_LAUNCHER.contains("$("), "{AUTH_LAUNCHER}");
    assert!(!AUTH_LAUNCHER.contains("$$"), "{AUTH_LAUNCHER}");
}

#[test]
fn the_hash_follows_the_secret_reference_not_its_value() {
    // The spec holds no password, so a rotation (same Secret, new value) hashes the same:
    // no rolling restart. Turning auth on, or naming another Secret or key, rolls the pods.
    let with =
        |auth: serde_json::Value| spec_hash(&pod_spec("cache", &redis(json!({"auth": auth})).spec));
    let base = with(json!({"secretRef": {"name": "a"}}));
    assert_eq!(
        base,
        with(json!({"secretRef": {"name": "a", "key": "password"}}))
    );
    assert_ne!(base, spec_hash(&pod_spec("cache", &redis(json!({})).spec)));
    assert_ne!(base, with(json!({"secretRef": {"name": "b"}})));
    assert_ne!(
        base,
        with(json!({"secretRef": {"name": "a", "key": "other"}}))
    );
}

#[test]
fn no_pod_without_uid() {
    let mut r = redis(json!({}));
    r.metadata.uid = None;
    let spec = pod_spec("cache", &r.spec);
    assert!(desired_pod(&r, 0, &spec, "h").is_none());
}

/// The hashes this release's pods carry, pinned: an upgrade of the operator that changed them
/// would replace every pod of every existing Redis at once (one rolling update per Redis), for no
/// change of theirs. A field added to the spec must hash as before while it is not set.
#[test]
fn the_hash_of_a_spec_without_new_fields_is_the_one_pods_already_carry() {
    for (spec, pinned) in [
        (json!({}), "dd81b33d7cfb5ee1"),
        (
            json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333, "imagePullPolicy": "IfNotPresent"}),
            "ad326e9ccb61aa4b",
        ),
        (
            json!({
                "replicas": 3, "image": "redis:7.2-alpine", "port": 6379, "imagePullPolicy": "Always",
                "mode": "Replication",
                "replication": {"minReplicasToWrite": 0, "minReplicasMaxLag": 10, "failoverAfter": "10s"},
                "auth": {"secretRef": {"name": "cache-auth", "key": "password"}},
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                "storage": {"size": "1Gi", "appendOnly": true},
                "exporter": {"port": 9121},
                "podDisruptionBudget": {"maxUnavailable": 1}
            }),
            // The same since the password left redis-server's arguments (AUTH_LAUNCHER): the
            // hash covers the start as it was (`hashed`).
            "19406179e65c2c13",
        ),
    ] {
        let r = redis(spec.clone());
        // The directives set live (here the maxmemory derived from the memory limit) are in
        // the pods' spec, not in the hash.
        let hashed = hashed_pod_spec("cache", &r.spec);
        assert_eq!(spec_hash(&hashed), pinned, "{spec}");
        // What the reconciler puts on the pods.
        assert_eq!(pod_hash(&r.spec, &hashed), pinned, "{spec}");
    }
}

/// The pod `desired_pod` builds for ordinal 0 of a Redis with `spec`, as the reconciler does.
fn built_pod(spec: serde_json::Value) -> Pod {
    let r = redis(spec);
    let built = pod_spec("cache", &r.spec);
    let hash = pod_hash(&r.spec, &hashed_pod_spec("cache", &r.spec));
    desired_pod(&r, 0, &built, &hash).expect("pod")
}

#[test]
fn config_directives_start_redis_server_and_only_those_read_at_start_are_hashed() {
    let with = |config: serde_json::Value| {
        let r = redis(json!({"resources": {"limits": {"memory": "128Mi"}}, "config": config}));
        let args = pod_spec("cache", &r.spec).containers[0]
            .args
            .clone()
            .unwrap_or_default();
        (args, pod_hash(&r.spec, &hashed_pod_spec("cache", &r.spec)))
    };
    let (args, plain) = with(json!({}));
    assert_eq!(
        args[..5],
        ["redis-server", "--maxmemory", "107374182", "--port", "6379"]
    );
    let (args, live) = with(json!({"maxmemory-policy": "allkeys-lru", "save": ""}));
    assert!(args.windows(2).any(|w| w == ["--save", ""]), "{args:?}");
    assert_eq!(live, plain, "a live directive rolls no pod");
    let (_, restart) = with(json!({"databases": "32"}));
    assert_ne!(restart, plain, "databases is read only at start");
    let (args, _) = with(json!({"port": "1", "requirepass": "x"}));
    assert!(
        !args.iter().any(|a| a == "--requirepass")
            && args.iter().filter(|a| *a == "--port").count() == 1,
        "the operator's own directives never come from spec.config: {args:?}"
    );
}

#[test]
fn placement_fields_reach_every_pod_as_written() {
    let placement = json!({
        "nodeSelector": {"disktype": "ssd"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["redis"]}
            ]}]
        }}},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "redis", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [{
            "maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "my-op-redis"}}
        }],
        "priorityClassName": "redis-critical",
    });
    for ordinal in [0, 2] {
        let r = redis(placement.clone());
        let built = pod_spec("cache", &r.spec);
        let pod = desired_pod(&r, ordinal, &built, &pod_hash(&r.spec, &built)).expect("pod");
        let spec = serde_json::to_value(pod.spec.expect("spec")).expect("json");
        for field in [
            "nodeSelector",
            "affinity",
            "tolerations",
            "topologySpreadConstraints",
            "priorityClassName",
        ] {
            assert_eq!(spec[field], placement[field], "{field}");
        }
    }
}

#[test]
fn pod_labels_and_annotations_go_under_the_operators_own() {
    let pod = built_pod(json!({
        "podLabels": {
            "team": "cache", "app": "not-mine", "app.kubernetes.io/instance": "other",
            "myapp.tangx.in/role": "primary"
        },
        "podAnnotations": {
            "backup.example.com/enabled": "true",
            "myapp.tangx.in/pod-spec-hash": "forged"
        },
    }));
    let labels = pod.metadata.labels.expect("labels");
    let label = |k: &str| labels.get(k).map(String::as_str);
    assert_eq!(label("team"), Some("cache"));
    assert_eq!(
        label("app"),
        Some("my-op-redis"),
        "the operator's label wins"
    );
    assert_eq!(label("app.kubernetes.io/instance"), Some("my-op-redis"));
    assert_eq!(
        label("myapp.tangx.in/role"),
        None,
        "a role only the replication engine gives"
    );
    let annotations = pod.metadata.annotations.expect("annotations");
    assert_eq!(
        annotations
            .get("backup.example.com/enabled")
            .map(String::as_str),
        Some("true")
    );
    assert_ne!(
        annotations.get(SPEC_HASH_ANNOTATION).map(String::as_str),
        Some("forged")
    );
}

#[test]
fn without_placement_the_pods_prefer_other_nodes_and_in_replication_mode_other_zones() {
    let standalone = built_pod(json!({})).spec.expect("spec");
    let own = json!({"matchLabels": {
        "app.kubernetes.io/instance": "my-op-redis",
        "app.kubernetes.io/managed-by": "redis-operator",
        "app.kubernetes.io/name": "redis"
    }});
    let nodes = json!([{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": own
    }]);
    assert_eq!(
        serde_json::to_value(&standalone.topology_spread_constraints).expect("json"),
        nodes
    );
    assert!(standalone.affinity.is_none(), "zones only for replication");

    let replicated = built_pod(json!({"mode": "Replication", "replicas": 3}))
        .spec
        .expect("spec");
    assert_eq!(
        serde_json::to_value(&replicated.topology_spread_constraints).expect("json"),
        nodes
    );
    assert_eq!(
        serde_json::to_value(&replicated.affinity).expect("json"),
        json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {"labelSelector": own, "topologyKey": "topology.kubernetes.io/zone"}
        }]}}),
        "a preference, never a requirement: nodes without a zone label stay fine"
    );
}

#[test]
fn the_users_affinity_or_spread_replaces_the_default_spread() {
    for (placement, spread, affinity) in [
        (
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname",
                 "labelSelector": {"matchLabels": {"app": "my-op-redis"}}}
            ]}}}),
            json!(null),
            true,
        ),
        (json!({"affinity": {}}), json!(null), true),
        (
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway"}]}),
            json!([{"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway"}]),
            false,
        ),
        (json!({"topologySpreadConstraints": []}), json!([]), false),
    ] {
        let mut spec = placement.clone();
        spec["mode"] = json!("Replication");
        let pod = built_pod(spec).spec.expect("spec");
        assert_eq!(
            serde_json::to_value(&pod.topology_spread_constraints).expect("json"),
            spread,
            "{placement}"
        );
        assert_eq!(pod.affinity.is_some(), affinity, "{placement}");
        assert_eq!(
            serde_json::to_value(&pod.affinity).expect("json"),
            placement["affinity"],
            "{placement}"
        );
    }
}

#[test]
fn each_placement_field_changes_the_hash_and_empty_ones_do_not() {
    let hash = |spec: serde_json::Value| {
        let r = redis(spec);
        pod_hash(&r.spec, &pod_spec("cache", &r.spec))
    };
    let base = hash(json!({}));
    let mut seen = vec![base.clone()];
    for set in [
        json!({"nodeSelector": {"disktype": "ssd"}}),
        json!({"affinity": {}}),
        json!({"tolerations": [{"operator": "Exists"}]}),
        json!({"topologySpreadConstraints": []}),
        json!({"priorityClassName": "high"}),
        json!({"podLabels": {"team": "cache"}}),
        json!({"podLabels": {"team": "web"}}),
        json!({"podAnnotations": {"team": "cache"}}),
    ] {
        let h = hash(set.clone());
        assert!(!seen.contains(&h), "{set} hashes like another spec");
        seen.push(h);
    }
    // Saying nothing hashes as saying nothing: no pod rolls.
    for empty in [
        json!({"nodeSelector": {}}),
        json!({"tolerations": []}),
        json!({"podLabels": {}}),
        json!({"podAnnotations": {}}),
        json!({"podLabels": {"app": "dropped"}}),
        json!({"nodeSelector": null, "affinity": null}),
    ] {
        assert_eq!(hash(empty.clone()), base, "{empty}");
    }
    // The default spread is on the pod, not in its hash (pods made before it keep theirs).
    let pod = built_pod(json!({}));
    assert!(
        pod.spec
            .expect("spec")
            .topology_spread_constraints
            .is_some()
    );
    assert_eq!(
        pod.metadata
            .annotations
            .expect("annotations")
            .get(SPEC_HASH_ANNOTATION),
        Some(&base)
    );
}

#[test]
fn a_tls_pod_serves_tls_only_on_its_port_and_every_container_reads_the_secret() {
    let r = redis(json!({
        "port": 7000,
        "tls": {"secretRef": {"name": "cache-tls"}, "clientAuth": "Required"},
        "exporter": {},
    }));
    let spec = pod_spec("cache", &r.spec);
    let redis = &spec.containers[0];
    let args = redis.args.clone().unwrap_or_default();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
    };
    assert_eq!(value("--port"), Some("0"), "no plaintext port: {args:?}");
    assert_eq!(value("--tls-port"), Some("7000"));
    assert_eq!(value("--tls-cert-file"), Some("/tls/tls.crt"));
    assert_eq!(value("--tls-auth-clients"), Some("yes"));
    assert_eq!(value("--tls-replication"), Some("yes"));
    let probe = redis
        .readiness_probe
        .as_ref()
        .and_then(|p| p.exec.as_ref())
        .and_then(|e| e.command.clone())
        .unwrap_or_default();
    assert!(
        probe.windows(2).any(|w| w == ["--cacert", "/tls/ca.crt"]),
        "{probe:?}"
    );
    assert!(
        probe.windows(2).any(|w| w == ["--cert", "/tls/tls.crt"]),
        "{probe:?}"
    );

    let volume = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "tls")
        .and_then(|v| v.secret.clone())
        .expect("the Secret's volume");
    assert_eq!(volume.secret_name.as_deref(), Some("cache-tls"));
    assert_eq!(
        volume.default_mode,
        Some(0o440),
        "the key is not world-readable"
    );
    for container in &spec.containers {
        let mount = container
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.name == "tls")
            .unwrap_or_else(|| panic!("{} mounts the Secret", container.name));
        assert_eq!(
            (mount.mount_path.as_str(), mount.read_only),
            ("/tls", Some(true))
        );
    }
    let env = spec.containers[1].env.clone().unwrap_or_default();
    let var = |n: &str| {
        env.iter()
            .find(|e| e.name == n)
            .and_then(|e| e.value.clone())
    };
    assert_eq!(
        var("REDIS_ADDR").as_deref(),
        Some("rediss://localhost:7000")
    );
    assert_eq!(
        var("REDIS_EXPORTER_TLS_CLIENT_CERT_FILE").as_deref(),
        Some("/tls/tls.crt")
    );
}

#[test]
fn a_plaintext_port_is_opened_beside_the_tls_one_and_tls_changes_the_hash() {
    let plain = redis(json!({"port": 7000}));
    let tls =
        redis(json!({"port": 7000, "tls": {"secretRef": {"name": "t"}, "plaintextPort": 7001}}));
    let args = pod_spec("cache", &tls.spec).containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert!(args.windows(2).any(|w| w == ["--port", "7001"]), "{args:?}");
    assert!(
        args.windows(2).any(|w| w == ["--tls-port", "7000"]),
        "{args:?}"
    );
    assert_ne!(
        pod_hash(&plain.spec, &pod_spec("cache", &plain.spec)),
        pod_hash(&tls.spec, &pod_spec("cache", &tls.spec))
    );
}

#[test]
fn the_plaintext_port_is_a_named_container_port() {
    let tls =
        redis(json!({"port": 7000, "tls": {"secretRef": {"name": "t"}, "plaintextPort": 7001}}));
    let ports = pod_spec("cache", &tls.spec).containers[0]
        .ports
        .clone()
        .unwrap_or_default();
    let named: Vec<_> = ports
        .iter()
        .map(|p| (p.name.as_deref(), p.container_port))
        .collect();
    assert_eq!(
        named,
        [(Some("redis"), 7000), (Some("redis-plaintext"), 7001)]
    );
}

/// §3l: with ACL users the container starts through the ACL launcher, with the users, the
/// replication password and the probes' password all from the operator's Secret `<name>-acl`;
/// the probes and the exporter log in as the operator's user; the spec hash does not move with
/// the users (they are set live).
#[test]
fn acl_users_come_from_the_operators_secret_and_the_probes_log_in_as_its_user() {
    let acl = |users: serde_json::Value| {
        redis(json!({
            "mode": "Replication", "replicas": 3, "exporter": {},
            "auth": {"secretRef": {"name": "pw"}},
            "acl": {"users": users},
        }))
    };
    let r = acl(json!([{"name": "a", "rules": "+get", "passwordSecretRef": {"name": "s"}}]));
    let spec = pod_spec("cache", &r.spec);
    let redis_container = &spec.containers[0];
    assert_eq!(
        redis_container.command.as_deref(),
        Some(&acl_launcher()[..])
    );
    assert!(ACL_LAUNCHER.contains(&format!("masteruser {}\n", api::acl::REPLICATION_USER)));
    let from = |c: &Container, var: &str| {
        c.env
            .iter()
            .flatten()
            .find(|e| e.name == var)
            .and_then(|e| e.value_from.clone()?.secret_key_ref)
            .map(|r| (r.name, r.key))
    };
    assert_eq!(
        from(redis_container, ACL_USERS_ENV),
        Some(("cache-acl".to_owned(), "users.conf".to_owned()))
    );
    assert_eq!(
        from(redis_container, MASTERAUTH_ENV),
        Some(("cache-acl".to_owned(), "masteruser".to_owned()))
    );
    assert_eq!(
        from(redis_container, "REDISCLI_AUTH"),
        Some(("cache-acl".to_owned(), "redis-operator".to_owned()))
    );
    assert!(
        from(redis_container, PASSWORD_ENV).is_none(),
        "spec.auth's password is a hash in the users"
    );
    let probe = redis_container
        .readiness_probe
        .as_ref()
        .and_then(|p| p.exec.as_ref())
        .and_then(|e| e.command.clone())
        .unwrap_or_default();
    assert!(
        probe.windows(2).any(|w| w == ["--user", "redis-operator"]),
        "{probe:?}"
    );
    let exporter = &spec.containers[1];
    assert_eq!(
        from(exporter, PASSWORD_ENV),
        Some(("cache-acl".to_owned(), "redis-operator".to_owned()))
    );
    let other = acl(json!([{"name": "b", "rules": "+set", "passwordSecretRef": {"name": "t"}}]));
    assert_eq!(
        spec_hash(&spec),
        spec_hash(&pod_spec("cache", &other.spec)),
        "another user rolls no pod"
    );
}

#[test]
fn a_replication_pod_has_a_dns_name_under_the_headless_service() {
    let r = redis(json!({"mode": "Replication", "replicas": 2}));
    let spec = pod_spec("my-op-redis", &r.spec);
    let hash = spec_hash(&spec);
    let pod = desired_pod(&r, 1, &spec, &hash).expect("pod");
    let spec = pod.spec.expect("spec");
    // <pod>.<name>-headless.<ns>.svc: the hostname defaults to the pod's name.
    assert_eq!(spec.subdomain.as_deref(), Some("my-op-redis-headless"));
    assert_eq!(spec.hostname, None);
}
