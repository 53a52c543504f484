//! The pod a `Redis` wants at each ordinal (DESIGN §3), and the hash that tells a pod built from
//! an older spec from a current one. Pure: the reconciler only sends what this builds.
//!
//! Placement (§3h): the spec's nodeSelector, affinity, tolerations, topologySpreadConstraints and
//! priorityClassName go into the pod spec as written; its podLabels and podAnnotations go on the
//! pods under the operator's own; with neither affinity nor topologySpreadConstraints the pods
//! get the default spread ([`default_spread`]), which the hash leaves out.

use crate::redis_server::{FENCE_HOST, FENCE_PORT};
use api::exporter::METRICS_PORT_NAME;
use api::pods::{
    HOSTNAME_TOPOLOGY_KEY, ZONE_TOPOLOGY_KEY, is_operator_annotation, is_operator_label,
    pod_labels, pod_name, selector_labels,
};
use api::{Mode, Redis, RedisSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, ExecAction, HTTPGetAction,
    PersistentVolumeClaimVolumeSource, Pod, PodAffinityTerm, PodAntiAffinity, PodSecurityContext,
    PodSpec, Probe, SecurityContext, TopologySpreadConstraint, Volume, VolumeMount,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub(crate) mod pieces;

use pieces::{
    restricted_container_context, restricted_pod_context, secret_env, tls_mount, tls_secret_volume,
};

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
pub const DATA_PATH: &str = "/data";

/// How a container with auth starts: `sh -c AUTH_LAUNCHER redis-server <options>`. The shell
/// turns `$REDIS_PASSWORD` into `requirepass` and `masterauth` lines of Redis's config format
/// (in double quotes, with `"`, `\` and newlines escaped, so that no password can add a
/// directive) and hands them to `redis-server -` on stdin, the options following. A
/// here-document is a pipe: nothing is written to the read-only root filesystem. `exec` keeps
/// redis-server the process that gets the kubelet's SIGTERM. The password is then in no
/// process's command line (`/proc/*/cmdline`, `ps` on the node), where
/// `--requirepass $(REDIS_PASSWORD)` put it.
///
/// POSIX sh and its builtins only (the official images' dash and busybox ash), and no `$(` or
/// `$$` in the text: the kubelet would take those for its own `$(VAR)` expansion.
pub const AUTH_LAUNCHER: &str = r#"p=$REDIS_PASSWORD q=
while [ -n "$p" ]; do
  r=${p#?}
  c=${p%"$r"}
  p=$r
  case $c in
    '"' | \\) q=$q\\$c ;;
    '
') q=$q\\n ;;
    *) q=$q$c ;;
  esac
done
exec redis-server - "$@" <<EOF
requirepass "$q"
masterauth "$q"
EOF
"#;

/// The variables of a container with ACL users (§3l), from the operator's Secret
/// (`api::acl::secret_name`): the redis.conf `user` lines, and the replication user's password.
pub const ACL_USERS_ENV: &str = "REDIS_ACL_USERS";
pub const MASTERAUTH_ENV: &str = "REDIS_MASTERAUTH";

/// How a container with ACL users starts: the users (as `user` lines, passwords hashed) and the
/// replication user's login reach `redis-server -` on stdin, as with [`AUTH_LAUNCHER`]. The
/// controller writes both values itself: names and rules it has checked (no quote, backslash or
/// line break: nothing a config line would read differently from `ACL SETUSER`), and a password
/// of hex digits. A variable's value in a here-document is not expanded again.
pub const ACL_LAUNCHER: &str = r#"exec redis-server - "$@" <<EOF
$REDIS_ACL_USERS
masteruser masteruser
masterauth $REDIS_MASTERAUTH
EOF
"#;

/// The command of a container with auth: the launcher, its `$0` `redis-server`; the container's
/// args are redis-server's options.
const AUTH_COMMAND: [&str; 4] = ["sh", "-c", AUTH_LAUNCHER, "redis-server"];

fn auth_launcher() -> Vec<String> {
    AUTH_COMMAND.map(str::to_owned).to_vec()
}

fn acl_launcher() -> Vec<String> {
    ["sh", "-c", ACL_LAUNCHER, "redis-server"]
        .map(str::to_owned)
        .to_vec()
}

/// The pod spec every pod of Redis `name` runs (the same for all ordinals).
pub fn pod_spec(name: &str, spec: &RedisSpec) -> PodSpec {
    build_pod_spec(name, spec, false)
}

/// The pod spec as [`pod_hash`] covers it: without the `spec.config` directives redis-server
/// takes live (§3m), which the controller sets on the running pods instead of replacing them.
pub fn hashed_pod_spec(name: &str, spec: &RedisSpec) -> PodSpec {
    build_pod_spec(name, spec, true)
}

fn build_pod_spec(name: &str, spec: &RedisSpec, restart_only: bool) -> PodSpec {
    let port = spec.port();
    // Redis's own configuration (§3m), first: the operator's options after it win, should a
    // directive it owns be stored while the webhook was away (`settings` leaves those out too).
    let config = api::config::start_args(&api::config::settings(spec), restart_only);
    // TLS (§3k): spec.port serves TLS (`--tls-port`), and `--port` only the plaintext port if
    // asked for (else 0: none).
    let listen = match &spec.tls {
        Some(tls) => api::tls::server_args(tls, port),
        None => vec!["--port".to_owned(), port.to_string()],
    };
    let mut args = [
        config,
        listen,
        vec![
            // Protected mode refuses every client but loopback when no password is set; the
            // official images are built with it off, Debian's redis-server is not. Clients reach
            // the pod over the pod network, so say it rather than depend on how the image was built.
            "--protected-mode".to_owned(),
            "no".to_owned(),
        ],
    ]
    .concat();
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
    } else if spec.restore.is_some() {
        // A restored Redis (§3o) loads the RDB its restore step put in /data (its emptyDir).
        // `spec.restore` never changes after creation, so neither does this.
        args.extend(["--dir".to_owned(), DATA_PATH.to_owned()]);
    }
    // Auth: the container's environment reads the password from the Secret; the pod spec names
    // the Secret only, never the password. A rotation changes the Secret, not this spec: no
    // rolling restart (the operator sets the new password live, see `auth`), and every container
    // started later reads the Secret's current value. It reaches redis-server through
    // [`AUTH_LAUNCHER`], on stdin, never in an argument: anyone on the node can read a process's
    // command line.
    //
    // ACL users (§3l): the users, the replication user's password and the probes' login (the
    // operator's user) come from the operator's own Secret, whose name is all the spec holds: a
    // change of users or passwords is set live (see `acl`), and containers started later read it.
    let acl_secret = spec.acl.as_ref().map(|_| api::acl::secret_name(name));
    let env = match (&acl_secret, spec.auth_secret()) {
        (Some(secret), _) => Some(vec![
            secret_env(ACL_USERS_ENV, secret, api::acl::USERS_KEY),
            secret_env(MASTERAUTH_ENV, secret, api::acl::REPLICATION_PASSWORD_KEY),
            secret_env(REDISCLI_AUTH_ENV, secret, api::acl::OPERATOR_PASSWORD_KEY),
        ]),
        (None, Some((name, key))) => {
            let from_secret = |var: &str| secret_env(var, name, key);
            Some(vec![
                from_secret(PASSWORD_ENV),
                from_secret(REDISCLI_AUTH_ENV),
            ])
        }
        (None, None) => None,
    };
    let (command, args) = match (&acl_secret, &env) {
        (Some(_), _) => (Some(acl_launcher()), args),
        (None, Some(_)) => (Some(auth_launcher()), args),
        // The image's entrypoint is kept: it execs redis-server unchanged for non-root users.
        (None, None) => (None, [vec!["redis-server".to_owned()], args].concat()),
    };
    let tls_cli = spec.tls.as_ref().map(|_| api::tls::cli_args());
    let cli_user = acl_secret
        .as_ref()
        .map(|_| ["--user".to_owned(), api::acl::OPERATOR_USER.to_owned()]);
    let ping = Probe {
        exec: Some(ExecAction {
            command: Some(
                ["redis-cli".to_owned(), "-p".to_owned(), port.to_string()]
                    .into_iter()
                    .chain(cli_user.into_iter().flatten())
                    .chain(tls_cli.into_iter().flatten())
                    .chain(["ping".to_owned()])
                    .collect(),
            ),
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
    let security_context = restricted_container_context();
    let mut containers = vec![Container {
        name: CONTAINER.into(),
        image: Some(spec.image().to_owned()),
        image_pull_policy: Some(spec.image_pull_policy().as_str().to_owned()),
        command,
        args: Some(args),
        env,
        ports: Some(
            std::iter::once(("redis", port))
                .chain(
                    spec.tls
                        .as_ref()
                        .and_then(api::TlsSpec::plaintext_port)
                        .map(|p| (api::tls::PLAINTEXT_PORT_NAME, p)),
                )
                .map(|(name, port)| ContainerPort {
                    name: Some(name.into()),
                    container_port: port,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                })
                .collect(),
        ),
        readiness_probe: Some(ping),
        liveness_probe: Some(alive),
        resources: spec.resources.clone(),
        security_context: Some(security_context.clone()),
        volume_mounts: Some(
            std::iter::once(VolumeMount {
                name: DATA_VOLUME.into(),
                mount_path: DATA_PATH.into(),
                ..VolumeMount::default()
            })
            .chain(spec.tls.as_ref().map(|_| tls_mount()))
            .collect(),
        ),
        ..Container::default()
    }];
    if let Some(exporter) = spec.exporter() {
        containers.push(exporter_container(name, spec, exporter, security_context));
    }
    PodSpec {
        containers,
        security_context: Some(PodSecurityContext {
            run_as_user: Some(REDIS_UID),
            run_as_group: Some(REDIS_GID),
            fs_group: Some(REDIS_GID),
            ..restricted_pod_context()
        }),
        volumes: Some(
            std::iter::once(data_volume(spec))
                .chain(spec.tls.as_ref().map(tls_volume))
                .collect(),
        ),
        // Redis never talks to the API server.
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        // Placement, as written. An empty map, list or name says nothing: left out, so that it
        // hashes as unset. Empty affinity or spread constraints do say something (no default
        // spread), so they are kept.
        node_selector: spec.node_selector.clone().filter(|s| !s.is_empty()),
        affinity: spec.affinity.clone(),
        tolerations: spec.tolerations.clone().filter(|t| !t.is_empty()),
        topology_spread_constraints: spec.topology_spread_constraints.clone(),
        priority_class_name: spec.priority_class_name.clone().filter(|n| !n.is_empty()),
        ..PodSpec::default()
    }
}

/// The spread the pods of `redis_name` get when the spec sets neither affinity nor
/// topologySpreadConstraints: never a reason not to schedule, only a preference. Each pod
/// prefers a node with the fewest pods of this Redis (a spread constraint on the hostname,
/// maxSkew 1, ScheduleAnyway); in Replication mode each also prefers a zone without one (a
/// preferred pod anti-affinity on the zone label), so that losing a node or a zone leaves a
/// replica to fail over to.
///
/// The zone preference is an anti-affinity, not a second spread constraint, because the
/// scheduler scores only the nodes that carry every topology key of a pod's spread constraints:
/// on a cluster whose nodes have no zone label (bare metal, kubeadm, kwok) a zone constraint
/// would leave every node unscored, which would turn the hostname spread off too. A preferred
/// anti-affinity only counts on nodes that have the label and leaves the others neutral.
pub fn default_spread(
    redis_name: &str,
    mode: Mode,
) -> (Vec<TopologySpreadConstraint>, Option<Affinity>) {
    let own_pods = LabelSelector {
        match_labels: Some(selector_labels(redis_name)),
        match_expressions: None,
    };
    let nodes = TopologySpreadConstraint {
        max_skew: 1,
        topology_key: HOSTNAME_TOPOLOGY_KEY.into(),
        when_unsatisfiable: "ScheduleAnyway".into(),
        label_selector: Some(own_pods.clone()),
        ..TopologySpreadConstraint::default()
    };
    let zones = (mode == Mode::Replication).then(|| Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(own_pods),
                        topology_key: ZONE_TOPOLOGY_KEY.into(),
                        ..PodAffinityTerm::default()
                    },
                },
            ]),
            required_during_scheduling_ignored_during_execution: None,
        }),
        ..Affinity::default()
    });
    (vec![nodes], zones)
}

/// The spec's podLabels, less any key the operator sets itself (the webhook refuses those; a
/// Redis stored without it must not take the operator's selectors or role labels either).
fn user_labels(spec: &RedisSpec) -> BTreeMap<String, String> {
    let labels = spec.pod_labels.iter().flatten();
    labels
        .filter(|(k, _)| !is_operator_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The spec's podAnnotations, less any key the operator sets itself.
fn user_annotations(spec: &RedisSpec) -> BTreeMap<String, String> {
    let annotations = spec.pod_annotations.iter().flatten();
    annotations
        .filter(|(k, _)| !is_operator_annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The metrics sidecar (`spec.exporter`): redis_exporter reading redis-server over localhost,
/// with the password from the same Secret (never in the spec), serving on the `metrics` port.
fn exporter_container(
    name: &str,
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
    let scheme = if spec.tls.is_some() {
        "rediss"
    } else {
        "redis"
    };
    let mut env = vec![
        plain(
            "REDIS_ADDR",
            format!("{scheme}://localhost:{}", spec.port()),
        ),
        plain("REDIS_EXPORTER_WEB_LISTEN_ADDRESS", format!(":{port}")),
    ];
    if spec.tls.is_some() {
        use api::tls::{CA_KEY, CERT_KEY, PRIVATE_KEY_KEY, file};
        env.extend([
            plain("REDIS_EXPORTER_TLS_CA_CERT_FILE", file(CA_KEY)),
            // The pod's own certificate, shown when redis-server asks (clientAuth).
            plain("REDIS_EXPORTER_TLS_CLIENT_CERT_FILE", file(CERT_KEY)),
            plain("REDIS_EXPORTER_TLS_CLIENT_KEY_FILE", file(PRIVATE_KEY_KEY)),
            // Over loopback in its own pod, where no one can stand between; the certificate
            // names the Service, not `localhost`, so a name check could only fail.
            plain("REDIS_EXPORTER_SKIP_TLS_VERIFICATION", "true".to_owned()),
        ]);
    }
    // With ACL users it logs in as the operator's user (which may run what it reads).
    match (&spec.acl, spec.auth_secret()) {
        (Some(_), _) => env.extend([
            plain("REDIS_USER", api::acl::OPERATOR_USER.to_owned()),
            secret_env(
                PASSWORD_ENV,
                &api::acl::secret_name(name),
                api::acl::OPERATOR_PASSWORD_KEY,
            ),
        ]),
        (None, Some((secret, key))) => env.push(secret_env(PASSWORD_ENV, secret, key)),
        (None, None) => {}
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
        volume_mounts: spec.tls.as_ref().map(|_| vec![tls_mount()]),
        ..Container::default()
    }
}

/// The Secret of `spec.tls`, read-only to the pod's group (fsGroup) only. A Secret volume
/// follows the Secret: a renewed certificate reaches the running pods' files, and the
/// controller has redis-server load it (`tls`).
fn tls_volume(tls: &api::TlsSpec) -> Volume {
    tls_secret_volume(tls, 0o440)
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
    short_digest(&serde_json::to_vec(&hashed(spec)).unwrap_or_default())
}

/// What the hash covers of a pod spec: the spec, but a container started through
/// [`AUTH_LAUNCHER`] as the releases before it started one, with `--requirepass
/// $(REDIS_PASSWORD) --masterauth $(REDIS_PASSWORD)` after redis-server's options. So an upgrade
/// of the operator replaces no pod of a Redis with auth (a standalone one without storage would
/// lose its data): pods started the old way keep running until something else replaces them,
/// and every pod made from now on gets the launcher.
fn hashed(spec: &PodSpec) -> std::borrow::Cow<'_, PodSpec> {
    // Compared in place: the hash is taken every pass.
    let launched = |c: &Container| {
        c.command
            .as_deref()
            .is_some_and(|command| command.iter().map(String::as_str).eq(AUTH_COMMAND))
    };
    if !spec.containers.iter().any(launched) {
        return std::borrow::Cow::Borrowed(spec);
    }
    let mut legacy = spec.clone();
    for container in legacy.containers.iter_mut().filter(|c| launched(c)) {
        let password = format!("$({PASSWORD_ENV})");
        let options = container.args.take().unwrap_or_default();
        container.command = None;
        container.args = Some(
            std::iter::once("redis-server".to_owned())
                .chain(options)
                .chain(["--requirepass".to_owned(), password.clone()])
                .chain(["--masterauth".to_owned(), password])
                .collect(),
        );
    }
    std::borrow::Cow::Owned(legacy)
}

/// The hash the pods of a Redis carry ([`SPEC_HASH_ANNOTATION`]): [`spec_hash`] of `pod_spec`
/// (built by [`pod_spec`] from `spec`), with the spec's pod labels and annotations after it when
/// it sets any, so changing them replaces the pods as any other change does.
///
/// What is hashed only grows by what a Redis sets: a field it leaves out adds nothing (serde skips
/// an unset pod spec field; no labels or annotations add no bytes), so a Redis that sets none of
/// the fields a release adds keeps the hash its pods carry, and upgrading the operator rolls no
/// pod. That is also why the default spread is not in `pod_spec` but added by [`desired_pod`]:
/// pods made before it existed stay as they are, and pods made from now on get it.
pub fn pod_hash(spec: &RedisSpec, pod_spec: &PodSpec) -> String {
    let mut json = serde_json::to_vec(&hashed(pod_spec)).unwrap_or_default();
    let metadata: BTreeMap<&str, BTreeMap<String, String>> = [
        ("podAnnotations", user_annotations(spec)),
        ("podLabels", user_labels(spec)),
    ]
    .into_iter()
    .filter(|(_, m)| !m.is_empty())
    .collect();
    if !metadata.is_empty() {
        json.extend(serde_json::to_vec(&metadata).unwrap_or_default());
    }
    short_digest(&json)
}

/// The first 8 bytes of the SHA-256 of `bytes`, in hex.
fn short_digest(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The complete pod for `ordinal`, owned by `redis` (controller reference, so the garbage
/// collector removes it even without the operator), with the default spread when the spec sets
/// no placement of its own, and the spec's pod labels and annotations under the operator's.
/// `None` if `redis` has no name or uid yet.
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
    // The pod's DNS name through the headless Service, `<pod>.<name>-headless.<ns>.svc` (what
    // a certificate names each pod by): the cluster's DNS serves it only for a pod whose
    // subdomain names that Service. Not in the hash: pods made before keep running without it
    // (a pod's subdomain cannot change) and get it when next replaced.
    if redis.spec.mode() == api::Mode::Replication {
        spec.subdomain = Some(api::pods::headless_service_name(name));
    }
    if redis.spec.affinity.is_none() && redis.spec.topology_spread_constraints.is_none() {
        let (constraints, affinity) = default_spread(name, redis.spec.mode());
        spec.topology_spread_constraints = Some(constraints);
        spec.affinity = affinity;
    }
    // The operator's labels and annotation win over the spec's.
    let mut labels = user_labels(&redis.spec);
    labels.extend(pod_labels(name));
    // Not in the hash: pods made before it are labelled in place (`children`), never replaced.
    labels.insert(
        api::pods::POD_NAME_LABEL.to_owned(),
        pod_name(name, ordinal),
    );
    let mut annotations = user_annotations(&redis.spec);
    annotations.insert(SPEC_HASH_ANNOTATION.to_owned(), hash.to_owned());
    Some(Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(name, ordinal)),
            namespace: redis.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

#[cfg(test)]
mod tests;
