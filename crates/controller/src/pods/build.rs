//! The pod a `Redis` wants at each ordinal (DESIGN §3), and the hash that tells a pod built from
//! an older spec from a current one. Pure: the reconciler only sends what this builds.

use crate::redis_server::{FENCE_HOST, FENCE_PORT};
use api::exporter::METRICS_PORT_NAME;
use api::pods::{pod_labels, pod_name};
use api::{Redis, RedisSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, ExecAction,
    HTTPGetAction, PersistentVolumeClaimVolumeSource, Pod, PodSecurityContext, PodSpec, Probe,
    SeccompProfile, SecretKeySelector, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Annotation holding the hash of the pod spec a pod was built from (rolling updates compare it).
pub const SPEC_HASH_ANNOTATION: &str = "myapp.tangx.in/pod-spec-hash";
/// The container's name.
pub const CONTAINER: &str = "redis";
/// The metrics sidecar's name (`spec.exporter`).
pub const EXPORTER_CONTAINER: &str = "exporter";
/// uid of the `redis` user in the official Redis images (Debian-based and alpine alike); the pod
/// runs as it, never root.
const REDIS_UID: i64 = 999;
/// The pod's primary group, set explicitly (runAsGroup, and fsGroup for /data). It is the `redis`
/// group of the Debian-based official images (999:999); the alpine ones give `redis` gid 1000, so
/// there the process runs with gid 999, a group the image does not name. Nothing needs the image's
/// group: /data is the emptyDir, group-owned 999 through fsGroup, and the rest is world-readable.
const REDIS_GID: i64 = 999;
/// The container's environment variable holding the password (auth on), from the Secret.
pub const PASSWORD_ENV: &str = "REDIS_PASSWORD";
/// The variable `redis-cli` (the probes) reads its password from.
const REDISCLI_AUTH_ENV: &str = "REDISCLI_AUTH";
const DATA_VOLUME: &str = api::storage::DATA_VOLUME;
const DATA_PATH: &str = "/data";

/// The pod spec every pod of this Redis runs (the same for all ordinals).
pub fn pod_spec(spec: &RedisSpec) -> PodSpec {
    let port = spec.port();
    let mut args = vec![
        "redis-server".to_owned(),
        "--port".to_owned(),
        port.to_string(),
        // Protected mode refuses every client but loopback when no password is set; the
        // official images are built with it off, Debian's redis-server is not. Clients reach
        // the pod over the pod network, so say it rather than depend on how the image was built.
        "--protected-mode".to_owned(),
        "no".to_owned(),
    ];
    if spec.mode() == api::Mode::Replication {
        // Start fenced: a replica of nowhere until the operator says whom to follow, so a
        // restarted primary never serves (or feeds its replicas) an empty data set.
        args.extend([
            "--replicaof".to_owned(),
            FENCE_HOST.to_owned(),
            FENCE_PORT.to_string(),
        ]);
    }
    // Persistence: the working directory on the claim (where dump.rdb and the append-only files
    // go; the images' own working directory is not something to rely on), and the AOF if asked.
    if let Some(storage) = &spec.storage {
        args.extend(["--dir".to_owned(), DATA_PATH.to_owned()]);
        if storage.append_only() {
            args.extend(["--appendonly".to_owned(), "yes".to_owned()]);
        }
    }
    // Auth: the kubelet expands `$(REDIS_PASSWORD)` from the container's environment, which
    // reads the Secret; the pod spec names the Secret only, never the password. A rotation
    // changes the Secret, not this spec: no rolling restart (the operator sets the new password
    // live, see `auth`), and every container started later reads the Secret's current value.
    let env = spec.auth_secret().map(|(name, key)| {
        let from_secret = |var: &str| secret_env(var, name, key);
        let password = format!("$({PASSWORD_ENV})");
        args.extend([
            "--requirepass".to_owned(),
            password.clone(),
            "--masterauth".to_owned(),
            password,
        ]);
        vec![from_secret(PASSWORD_ENV), from_secret(REDISCLI_AUTH_ENV)]
    });
    let ping = Probe {
        exec: Some(ExecAction {
            command: Some(vec![
                "redis-cli".into(),
                "-p".into(),
                port.to_string(),
                "ping".into(),
            ]),
        }),
        period_seconds: Some(5),
        timeout_seconds: Some(2),
        failure_threshold: Some(3),
        ..Probe::default()
    };
    // Liveness asks Redis itself, like readiness but slower to give up: a redis-server that hangs
    // (stopped, deadlocked) keeps its listening socket accepting connections, so a TCP probe
    // passes forever and the pod is never restarted (seen on the bed's real node with SIGSTOP).
    let alive = Probe {
        exec: ping.exec.clone(),
        initial_delay_seconds: Some(10),
        period_seconds: Some(10),
        timeout_seconds: Some(5),
        failure_threshold: Some(3),
        ..Probe::default()
    };
    let security_context = SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        ..SecurityContext::default()
    };
    let mut containers = vec![Container {
        name: CONTAINER.into(),
        image: Some(spec.image().to_owned()),
        image_pull_policy: Some(spec.image_pull_policy().as_str().to_owned()),
        // The image's entrypoint is kept: it execs redis-server unchanged for non-root users.
        args: Some(args),
        env,
        ports: Some(vec![ContainerPort {
            name: Some("redis".into()),
            container_port: port,
            protocol: Some("TCP".into()),
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(ping),
        liveness_probe: Some(alive),
        resources: spec.resources.clone(),
        security_context: Some(security_context.clone()),
        volume_mounts: Some(vec![VolumeMount {
            name: DATA_VOLUME.into(),
            mount_path: DATA_PATH.into(),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    }];
    if let Some(exporter) = spec.exporter() {
        containers.push(exporter_container(spec, exporter, security_context));
    }
    PodSpec {
        containers,
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(REDIS_UID),
            run_as_group: Some(REDIS_GID),
            fs_group: Some(REDIS_GID),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                localhost_profile: None,
            }),
            ..PodSecurityContext::default()
        }),
        volumes: Some(vec![data_volume(spec)]),
        // Redis never talks to the API server.
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        ..PodSpec::default()
    }
}

/// The metrics sidecar (`spec.exporter`): redis_exporter reading redis-server over localhost,
/// with the password from the same Secret (never in the spec), serving on the `metrics` port.
fn exporter_container(
    spec: &RedisSpec,
    exporter: &api::ExporterSpec,
    security_context: SecurityContext,
) -> Container {
    let port = exporter.port();
    let plain = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        value_from: None,
    };
    let mut env = vec![
        plain("REDIS_ADDR", format!("redis://localhost:{}", spec.port())),
        plain("REDIS_EXPORTER_WEB_LISTEN_ADDRESS", format!(":{port}")),
    ];
    if let Some((name, key)) = spec.auth_secret() {
        env.push(secret_env(PASSWORD_ENV, name, key));
    }
    let health = Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/health".into()),
            port: IntOrString::String(METRICS_PORT_NAME.into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(10),
        timeout_seconds: Some(2),
        failure_threshold: Some(3),
        ..Probe::default()
    };
    Container {
        name: EXPORTER_CONTAINER.into(),
        image: Some(exporter.image().to_owned()),
        image_pull_policy: Some(spec.image_pull_policy().as_str().to_owned()),
        env: Some(env),
        ports: Some(vec![ContainerPort {
            name: Some(METRICS_PORT_NAME.into()),
            container_port: port,
            protocol: Some("TCP".into()),
            ..ContainerPort::default()
        }]),
        // Liveness only: a failing exporter must not take Redis out of its Services.
        liveness_probe: Some(health),
        resources: exporter.resources.clone(),
        security_context: Some(security_context),
        ..Container::default()
    }
}

/// An environment variable read from a key of a Secret (which must exist).
fn secret_env(var: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: var.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_owned(),
                key: key.to_owned(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// `/data`: an emptyDir, or with `spec.storage` the ordinal's claim. The claim's name is left
/// empty here, so the spec (and its hash) is the same for every ordinal; [`desired_pod`] names it.
fn data_volume(spec: &RedisSpec) -> Volume {
    match &spec.storage {
        Some(_) => Volume {
            name: DATA_VOLUME.into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: String::new(),
                read_only: None,
            }),
            ..Volume::default()
        },
        None => Volume {
            name: DATA_VOLUME.into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
    }
}

/// A short, stable hash of the pod spec: the same spec gives the same hash on every machine and
/// every release of the operator (unlike `std`'s hasher).
pub fn spec_hash(spec: &PodSpec) -> String {
    // k8s-openapi serializes maps in key order, so the JSON is canonical.
    let json = serde_json::to_vec(spec).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The complete pod for `ordinal`, owned by `redis` (controller reference, so the garbage
/// collector removes it even without the operator). `None` if `redis` has no name or uid yet.
pub fn desired_pod(redis: &Redis, ordinal: u32, spec: &PodSpec, hash: &str) -> Option<Pod> {
    let name = redis.metadata.name.as_deref()?;
    let mut owner = redis.controller_owner_ref(&())?;
    // Foreground deletion of the Redis waits for its pods (needs update on redis/finalizers).
    owner.block_owner_deletion = Some(true);
    let mut spec = spec.clone();
    for volume in spec.volumes.iter_mut().flatten() {
        if let Some(claim) = volume.persistent_volume_claim.as_mut() {
            claim.claim_name = api::storage::claim_name(name, ordinal);
        }
    }
    Some(Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(name, ordinal)),
            namespace: redis.metadata.namespace.clone(),
            labels: Some(pod_labels(name)),
            annotations: Some(BTreeMap::from([(
                SPEC_HASH_ANNOTATION.to_owned(),
                hash.to_owned(),
            )])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_exporter_sidecar_reads_redis_over_localhost_with_the_secrets_password() {
        let r = redis(json!({
            "port": 7000,
            "auth": {"secretRef": {"name": "pw"}},
            "exporter": {"port": 9200},
        }));
        let spec = pod_spec(&r.spec);
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
        assert_eq!(pod_spec(&off.spec).containers.len(), 1);
    }

    #[test]
    fn with_storage_each_pod_mounts_its_own_claim_and_the_hash_is_shared() {
        let r = redis(json!({"replicas": 2, "storage": {"size": "1Gi", "appendOnly": true}}));
        let spec = pod_spec(&r.spec);
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
        let plain = pod_spec(&redis(json!({"replicas": 2})).spec);
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
        let spec = pod_spec(&r.spec);
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
        let spec = pod_spec(&r.spec);
        let hash = spec_hash(&spec);
        let pod = desired_pod(&r, 0, &spec, &hash).expect("pod");
        let labels = pod.metadata.labels.expect("labels");
        assert_eq!(labels.get("app").map(String::as_str), Some("my-op-redis"));
        assert_eq!(
            labels.get("app.kubernetes.io/instance").map(String::as_str),
            Some("my-op-redis")
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
        let spec = pod_spec(&redis(json!({})).spec);
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
            &redis(
                json!({"imagePullPolicy": "Always", "resources": {"limits": {"memory": "256Mi"}}}),
            )
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
        let base = pod_spec(&redis(json!({"image": "redis:7.2-alpine", "port": 6379})).spec);
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
                spec_hash(&pod_spec(&redis(changed.clone()).spec)),
                "{changed}"
            );
        }
        // Replicas are not part of a pod: scaling rolls nothing.
        let scaled = pod_spec(
            &redis(json!({"image": "redis:7.2-alpine", "port": 6379, "replicas": 5})).spec,
        );
        assert_eq!(spec_hash(&base), spec_hash(&scaled));
    }

    #[test]
    fn auth_reads_the_password_from_the_secret_never_in_clear() {
        let r = redis(json!({"auth": {"secretRef": {"name": "cache-auth"}}}));
        let spec = pod_spec(&r.spec);
        let c = serde_json::to_value(&spec.containers[0]).expect("json");
        assert_eq!(
            c["args"],
            json!([
                "redis-server",
                "--port",
                "6379",
                "--protected-mode",
                "no",
                "--requirepass",
                "$(REDIS_PASSWORD)",
                "--masterauth",
                "$(REDIS_PASSWORD)"
            ])
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
            &redis(
                json!({"mode": "Replication", "auth": {"secretRef": {"name": "s", "key": "pw"}}}),
            )
            .spec,
        );
        let args = replication.containers[0].args.clone().unwrap_or_default();
        assert!(
            args.ends_with(&[
                "--replicaof".to_owned(),
                FENCE_HOST.to_owned(),
                FENCE_PORT.to_string(),
                "--requirepass".to_owned(),
                "$(REDIS_PASSWORD)".to_owned(),
                "--masterauth".to_owned(),
                "$(REDIS_PASSWORD)".to_owned(),
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
        let spec = pod_spec(&redis(json!({})).spec);
        assert!(spec.containers[0].env.is_none());
    }

    #[test]
    fn the_hash_follows_the_secret_reference_not_its_value() {
        // The spec holds no password, so a rotation (same Secret, new value) hashes the same:
        // no rolling restart. Turning auth on, or naming another Secret or key, rolls the pods.
        let with =
            |auth: serde_json::Value| spec_hash(&pod_spec(&redis(json!({"auth": auth})).spec));
        let base = with(json!({"secretRef": {"name": "a"}}));
        assert_eq!(
            base,
            with(json!({"secretRef": {"name": "a", "key": "password"}}))
        );
        assert_ne!(base, spec_hash(&pod_spec(&redis(json!({})).spec)));
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
        let spec = pod_spec(&r.spec);
        assert!(desired_pod(&r, 0, &spec, "h").is_none());
    }
}
