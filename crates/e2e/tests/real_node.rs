//! The data plane on the bed's real node (kubelet + containerd + runc): the pods the controller
//! builds really start, pass their own probes and serve Redis, which the tests reach through the
//! pod IPs with the machine's `redis-cli`. Each test runs in a namespace whose pods all land on
//! the real node (Pod Security "restricted" enforced).

use std::time::Duration;

use api::{Redis, RedisSpec};
use e2e::node::{self, MISSING_IMAGE, REDIS_IMAGE};
use e2e::{conditions, pods};

use e2e::{Cluster, Context, Error, NamespaceOptions, TestNamespace, seen, wait_for};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

/// Real containers start in seconds, but a pull back-off or a restart takes the kubelet longer.
const CONVERGE: Duration = Duration::from_secs(120);

fn new_redis(name: &str, replicas: i32, image: &str, port: i32) -> Redis {
    Redis::new(
        name,
        RedisSpec {
            replicas: Some(replicas),
            image: Some(image.into()),
            port: Some(port),
            ..RedisSpec::default()
        },
    )
}

fn image_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.containers.first()?.image.as_deref()
}

/// Waits until the Redis has exactly `replicas` pods, all on the real node, running `image`,
/// Ready through their own probes, and its status says Ready with every replica counted.
async fn wait_serving(
    ns: &TestNamespace,
    name: &str,
    replicas: usize,
    image: &str,
) -> Result<Vec<Pod>, Error> {
    let redis: Api<Redis> = ns.api();
    wait_for(
        &format!("{name}: {replicas} pods of {image} Ready on the real nodes"),
        CONVERGE,
        || async {
            let pods = pods::of_redis(&ns.api(), name).await?;
            let status = redis
                .get(name)
                .await
                .map_err(seen)?
                .status
                .unwrap_or_default();
            let ready_condition = status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            let serving = pods.len() == replicas
                && pods.iter().all(|p| {
                    e2e::pods::is_ready(p)
                        && p.metadata.deletion_timestamp.is_none()
                        && image_of(p) == Some(image)
                        && node::node_of(p).is_some_and(node::is_real_node)
                });
            if serving && ready_condition && status.ready_replicas == replicas as i32 {
                Ok(pods)
            } else {
                Err(format!(
                    "status ready={} conditions={:?}; pods: {}",
                    status.ready_replicas,
                    status
                        .conditions
                        .iter()
                        .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
                        .collect::<Vec<_>>(),
                    pods::describe_all(&pods)
                ))
            }
        },
    )
    .await
}

/// `redis-cli -h <podIP> -p <port> ARGS` against one pod.
async fn cli(pod: &Pod, port: u16, args: &[&str]) -> Result<String, Error> {
    let ip = pods::ip(pod).ok_or_else(|| Error::Process {
        what: format!("reaching {}", pod.name_any()),
        reason: "the pod has no IP".into(),
    })?;
    node::redis_cli(ip, port, args)
        .await
        .map_err(|reason| Error::process(format!("talking to Redis in {}", pod.name_any()), reason))
}

/// The tutorial's sample on real processes: both pods Ready through their probes, `PING` answers
/// `PONG` through each pod IP, and a key written to a pod is read back from it.
#[tokio::test]
async fn tutorial_sample_serves_redis_on_the_real_node() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("real-sample").await?;
    let redis: Api<Redis> = ns.api();
    redis
        .create(
            &PostParams::default(),
            &new_redis("my-op-redis", 2, REDIS_IMAGE, 8333),
        )
        .await
        .context("creating my-op-redis")?;
    let pods = wait_serving(&ns, "my-op-redis", 2, REDIS_IMAGE).await?;

    for pod in &pods {
        assert_eq!(
            cli(pod, 8333, &["PING"]).await?,
            "PONG",
            "{}",
            pod.name_any()
        );
        let value = format!("written-to-{}", pod.name_any());
        assert_eq!(cli(pod, 8333, &["SET", "tutorial", &value]).await?, "OK");
        assert_eq!(cli(pod, 8333, &["GET", "tutorial"]).await?, value);
        // Each pod is its own redis-server (Standalone), listening where the spec says.
        let port = cli(pod, 8333, &["CONFIG", "GET", "port"]).await?;
        assert_eq!(port.lines().last(), Some("8333"), "{port}");
    }
    Ok(())
}

/// A Redis whose image does not exist: its pods wait in ImagePullBackOff and the status says so;
/// fixing the image rolls every pod (none of them ever Ready) to the new image and Ready.
#[tokio::test]
async fn a_missing_image_is_reported_and_fixing_it_rolls_out() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("real-image").await?;
    let redis: Api<Redis> = ns.api();
    redis
        .create(
            &PostParams::default(),
            &new_redis("typo", 3, MISSING_IMAGE, 6379),
        )
        .await
        .context("creating typo")?;

    wait_for(
        "typo's pods in ImagePullBackOff and the status saying so",
        CONVERGE,
        || async {
            let pods = pods::of_redis(&ns.api(), "typo").await?;
            let backing_off = pods
                .iter()
                .filter(|p| {
                    p.status
                        .as_ref()
                        .and_then(|s| s.container_statuses.as_ref())
                        .and_then(|cs| cs.first())
                        .and_then(|c| c.state.as_ref()?.waiting.as_ref()?.reason.as_deref())
                        .is_some_and(|r| r == "ImagePullBackOff" || r == "ErrImagePull")
                })
                .count();
            let status = redis
                .get("typo")
                .await
                .map_err(seen)?
                .status
                .unwrap_or_default();
            let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
            let says_so = ready.is_some_and(|c| {
                c.status == "False"
                    && c.reason == "ImagePullBackOff"
                    && c.message.contains(MISSING_IMAGE)
            });
            if pods.len() == 3 && backing_off == 3 && says_so {
                Ok(())
            } else {
                Err(format!(
                    "Ready={ready:?}; pods: {}",
                    pods::describe_all(&pods)
                ))
            }
        },
    )
    .await?;

    redis
        .patch(
            "typo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": REDIS_IMAGE}})),
        )
        .await
        .context("fixing typo's image")?;
    let pods = wait_serving(&ns, "typo", 3, REDIS_IMAGE).await?;
    for pod in &pods {
        assert_eq!(cli(pod, 6379, &["PING"]).await?, "PONG");
    }
    Ok(())
}

/// Killing redis-server in a pod: the kubelet restarts the container, the status counts the pod
/// as not Ready meanwhile and as Ready again after; a redis-server that hangs (stopped, its
/// socket still accepting) fails the liveness probe and is restarted too.
#[tokio::test]
async fn a_killed_or_hung_redis_is_restarted_and_status_follows() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("real-liveness").await?;
    let redis: Api<Redis> = ns.api();
    redis
        .create(
            &PostParams::default(),
            &new_redis("live", 2, REDIS_IMAGE, 6379),
        )
        .await
        .context("creating live")?;
    wait_serving(&ns, "live", 2, REDIS_IMAGE).await?;

    for (signal, what) in [("KILL", "killed"), ("STOP", "hung")] {
        let pods = pods::of_redis(&ns.api(), "live").await?;
        let victim = pods
            .iter()
            .find(|p| p.name_any() == "live-0")
            .cloned()
            .ok_or_else(|| Error::Process {
                what: "finding live-0".into(),
                reason: pods::describe_all(&pods),
            })?;
        let before = pods::restarts(&victim);
        let pid = node::container_pid(&victim, "redis")
            .await
            .map_err(|reason| Error::process("finding live-0's redis-server", reason))?;
        node::signal(pid, signal).await.map_err(|reason| {
            Error::process(format!("signalling live-0's redis-server ({what})"), reason)
        })?;

        wait_for(
            &format!("live-0 ({what}) to be restarted and the status to count it out"),
            CONVERGE,
            || async {
                let pods = pods::of_redis(&ns.api(), "live").await?;
                let status = redis
                    .get("live")
                    .await
                    .map_err(seen)?
                    .status
                    .unwrap_or_default();
                let pod = pods.iter().find(|p| p.name_any() == "live-0");
                let restarted = pod.is_some_and(|p| pods::restarts(p) > before);
                let counted_out = status.ready_replicas < 2;
                // Either the status caught the pod down, or the pod is already back up.
                if restarted || counted_out {
                    Ok(())
                } else {
                    Err(format!(
                        "ready={}; {}",
                        status.ready_replicas,
                        pods::describe_all(&pods)
                    ))
                }
            },
        )
        .await?;
        let pods = wait_serving(&ns, "live", 2, REDIS_IMAGE).await?;
        let pod = pods.iter().find(|p| p.name_any() == "live-0");
        assert!(
            pod.is_some_and(|p| pods::restarts(p) > before),
            "live-0 was {what} but not restarted: {}",
            pods::describe_all(&pods)
        );
        // The same pod (not a replacement) answers again.
        assert_eq!(pod.and_then(|p| p.uid()), victim.uid());
        if let Some(pod) = pod {
            assert_eq!(cli(pod, 6379, &["PING"]).await?, "PONG");
        }
    }
    Ok(())
}

/// Uninstalls a test release (and its cluster-scoped objects) when dropped, also on failure.
struct Release {
    name: String,
    namespace: String,
    kubeconfig: std::path::PathBuf,
}

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::process::Command::new(helm())
            .env("KUBECONFIG", &self.kubeconfig)
            .args(["uninstall", &self.name, "--namespace", &self.namespace])
            .args(["--ignore-not-found", "--wait=false"])
            .output();
        let _ = std::process::Command::new(e2e::operator::kubectl())
            .env("KUBECONFIG", &self.kubeconfig)
            .args([
                "delete",
                "mutatingwebhookconfigurations,validatingwebhookconfigurations,clusterroles,clusterrolebindings",
                "-l",
                &format!("app.kubernetes.io/instance={}", self.name),
                "--ignore-not-found",
                "--wait=false",
            ])
            .output();
    }
}

fn helm() -> std::path::PathBuf {
    e2e::repo_root().join("bin").join("helm")
}

/// `helm install` of the chart with the project's own images (`make images` imports them into
/// the real node's runtime under the names `make docker-build` gives): both Deployments become
/// Ready on the real node, the API server calls the webhook through its Service (a bad spec is
/// refused with the webhook's message), and a Replication Redis created through this install
/// serves and fails over behind its NetworkPolicy, the controller pod behind the chart's.
#[tokio::test]
async fn helm_install_runs_the_operator_from_its_images() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    node::require_real_node(&cluster).await?;
    e2e::install_crds(&cluster.client()).await?;
    // The release's webhooks only see namespaces labelled for it, so other tests never meet them.
    let selector_label = "e2e.redis-operator/real-node-release";
    let ns = cluster
        .namespace_with(
            "real-helm",
            NamespaceOptions::default()
                .pod_security("restricted")
                .real_node()
                .label(selector_label, "on"),
        )
        .await?;
    let release = Release {
        name: "real".into(),
        namespace: ns.name().to_owned(),
        kubeconfig: cluster.kubeconfig().to_owned(),
    };
    let values = json!({
        "controller": {"watchNamespace": ns.name()},
        "webhook": {"namespaceSelector": {"matchLabels": {selector_label: "on"}}},
    });
    let values_file = e2e::repo_root()
        .join("target/e2e-logs")
        .join(ns.name())
        .join("values.json");
    let write = values_file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&values_file, values.to_string()));
    write.map_err(|e| Error::Process {
        what: format!("writing {}", values_file.display()),
        reason: e.to_string(),
    })?;
    let installed = std::process::Command::new(helm())
        .env("KUBECONFIG", cluster.kubeconfig())
        .args(["install", &release.name])
        .arg(e2e::repo_root().join("charts/redis-operator"))
        .args([
            "--namespace",
            ns.name(),
            "--skip-crds",
            "--wait",
            "--timeout",
            "3m",
            "-f",
        ])
        .arg(&values_file)
        .output()
        .map_err(|e| Error::Process {
            what: "running helm install".into(),
            reason: e.to_string(),
        })?;
    if !installed.status.success() {
        let pods: Api<Pod> = ns.api();
        let seen = pods
            .list(&ListParams::default())
            .await
            .map(|l| pods::describe_all(&l.items))
            .unwrap_or_default();
        return Err(Error::Process {
            what: "helm install --wait of the chart on the real node".into(),
            reason: format!(
                "{}\npods: {seen}\n(are the images imported? `make images`)",
                String::from_utf8_lossy(&installed.stderr)
            ),
        });
    }

    // Both Deployments' pods run the images on the real node (helm --wait saw them Ready).
    let pods: Api<Pod> = ns.api();
    let operator_pods = pods
        .list(&ListParams::default().labels("app.kubernetes.io/instance=real"))
        .await
        .context("listing the release's pods")?
        .items;
    for component in ["controller", "webhook"] {
        let pod = operator_pods.iter().find(|p| {
            p.labels()
                .get("app.kubernetes.io/component")
                .map(String::as_str)
                == Some(component)
        });
        let on_real_node = pod.is_some_and(|p| {
            e2e::pods::is_ready(p) && node::node_of(p).is_some_and(node::is_real_node)
        });
        assert!(
            on_real_node,
            "{component}: {}",
            pods::describe_all(&operator_pods)
        );
    }

    // Admission through the webhook's Service: the webhook's own message comes back. helm saw
    // the pod Ready, but kube-proxy programs the Service's endpoint a moment later (until then
    // the ClusterIP refuses connections), so only that refusal is waited out.
    let redis_api: Api<Redis> = ns.api();
    let refused = wait_for(
        "kube-proxy to route the webhook's Service",
        Duration::from_secs(30),
        || async {
            let answer = redis_api
                .create(
                    &PostParams::default(),
                    &new_redis("low-port", 1, REDIS_IMAGE, 6000),
                )
                .await;
            match answer {
                Err(kube::Error::Api(status)) if status.message.contains("connection refused") => {
                    Err(status.message)
                }
                other => Ok(other),
            }
        },
    )
    .await?;
    match refused {
        Err(kube::Error::Api(status)) => assert!(
            status
                .message
                .contains("spec.port: must be >= 6379, got 6000"),
            "{status:?}"
        ),
        other => panic!("the webhook should refuse port 6000: {other:?}"),
    }

    // A Redis through this install: defaulted by the webhook, reconciled by the controller pod.
    // It replicates behind its own NetworkPolicy admitting no client: the controller pod gets
    // through only as the operator (the chart's --operator-namespace and --operator-pod-labels),
    // from behind the chart's own policy for the controller, to read the pods and fail over.
    let mut via_helm = new_redis("via-helm", 3, REDIS_IMAGE, 7000);
    via_helm.spec.mode = Some(api::Mode::Replication);
    via_helm.spec.replication = Some(
        serde_json::from_value(json!({"failoverAfter": "5s"}))
            .map_err(|e| Error::process("the replication spec", e))?,
    );
    via_helm.spec.network_policy = Some(
        serde_json::from_value(json!({"enabled": true}))
            .map_err(|e| Error::process("the networkPolicy spec", e))?,
    );
    redis_api
        .create(&PostParams::default(), &via_helm)
        .await
        .context("creating via-helm")?;
    let pods = wait_serving(&ns, "via-helm", 3, REDIS_IMAGE).await?;
    assert_eq!(cli(&pods[0], 7000, &["PING"]).await?, "PONG");
    let stored = redis_api
        .get("via-helm")
        .await
        .context("reading via-helm")?;
    assert_eq!(
        stored.spec.image_pull_policy.map(|p| p.as_str().to_owned()),
        Some("IfNotPresent".to_owned()),
        "the webhook's defaults"
    );
    let primary = conditions::wait_replicating(&ns, "via-helm", 3, CONVERGE, None).await?;
    let policies: Api<NetworkPolicy> = ns.api();
    policies
        .get("via-helm")
        .await
        .context("reading via-helm's NetworkPolicy")?;
    let redis_pods: Api<Pod> = ns.api();
    redis_pods
        .delete(&primary, &DeleteParams::default().grace_period(0))
        .await
        .context("deleting via-helm's primary")?;
    conditions::wait_promoted(&ns, "via-helm", &primary, CONVERGE).await?;
    conditions::wait_replicating(&ns, "via-helm", 3, CONVERGE, Some(&primary)).await?;

    // The Redis goes before the release, so its finalizer is handled by the controller pod.
    redis_api
        .delete("via-helm", &Default::default())
        .await
        .context("deleting via-helm")?;
    e2e::pods::wait_gone(&redis_api, "via-helm", CONVERGE).await?;
    drop(release);
    Ok(())
}

/// A pod of the Redis image writing to `/data` on a claim, as the operator's pods do.
fn redis_on_claim(name: &str, claim: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": 999, "runAsGroup": 999, "fsGroup": 999,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [{
                "name": "redis",
                "image": REDIS_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "args": ["redis-server", "--port", "6379", "--protected-mode", "no", "--dir", "/data"],
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]},
                    "readOnlyRootFilesystem": true,
                },
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "readinessProbe": {"exec": {"command": ["redis-cli", "PING"]}, "periodSeconds": 1},
            }],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }))
    .expect("a valid pod")
}

/// The bed's default StorageClass gives a claim a volume on the real node (a directory made by
/// `hack/cluster/provisioner`), a Redis in one pod saves into it, and a second pod on the same
/// claim loads what the first saved; deleting the claim removes the volume.
#[tokio::test]
async fn a_claim_on_the_default_storage_class_keeps_redis_data_across_pods() -> Result<(), Error> {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    let cluster = Cluster::connect().await?;
    node::require_real_node(&cluster).await?;
    let ns = cluster
        .namespace_with(
            "real-claim",
            NamespaceOptions::default()
                .pod_security("restricted")
                .real_node(),
        )
        .await?;
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}},
    }))
    .expect("a valid claim");
    claims
        .create(&PostParams::default(), &claim)
        .await
        .context("creating the claim (no storageClassName: the default class)")?;
    let pods: Api<Pod> = ns.api();
    let ready_pod = |name: &'static str| {
        let pods = pods.clone();
        async move {
            wait_for(&format!("{name} Ready on its claim"), CONVERGE, || async {
                let pod = pods.get(name).await.map_err(seen)?;
                if e2e::pods::is_ready(&pod) {
                    Ok(pod)
                } else {
                    Err(pods::describe_all(std::slice::from_ref(&pod)))
                }
            })
            .await
        }
    };

    pods.create(&PostParams::default(), &redis_on_claim("writer", "data"))
        .await
        .context("creating writer")?;
    let writer = ready_pod("writer").await?;
    assert_eq!(
        cli(&writer, 6379, &["SET", "kept", "across-pods"]).await?,
        "OK"
    );
    assert_eq!(cli(&writer, 6379, &["SAVE"]).await?, "OK");
    let bound = claims.get("data").await.context("reading the claim")?;
    let volume_name = bound
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .unwrap_or_default();
    let volume: PersistentVolume = Api::all(cluster.client())
        .get(&volume_name)
        .await
        .context("reading the claim's volume")?;
    let path = volume
        .spec
        .as_ref()
        .and_then(|s| s.local.as_ref())
        .map(|l| l.path.clone())
        .unwrap_or_default();
    assert!(
        std::path::Path::new(&path).join("dump.rdb").is_file(),
        "the save is in the volume's directory on the node ({path})"
    );

    pods.delete("writer", &Default::default())
        .await
        .context("deleting writer")?;
    e2e::pods::wait_gone(&pods, "writer", CONVERGE).await?;
    pods.create(&PostParams::default(), &redis_on_claim("reader", "data"))
        .await
        .context("creating reader")?;
    let reader = ready_pod("reader").await?;
    assert_eq!(cli(&reader, 6379, &["GET", "kept"]).await?, "across-pods");

    // The class reclaims with Delete: the claim gone, the volume and its directory go too.
    pods.delete("reader", &Default::default())
        .await
        .context("deleting reader")?;
    claims
        .delete("data", &Default::default())
        .await
        .context("deleting the claim")?;
    let volumes: Api<PersistentVolume> = Api::all(cluster.client());
    wait_for("the volume reclaimed", CONVERGE, || async {
        let left = volumes.get_opt(&volume_name).await.map_err(seen)?;
        if left.is_none() && !std::path::Path::new(&path).exists() {
            Ok(())
        } else {
            Err(format!(
                "volume {volume_name}: {:?}, directory exists: {}",
                left.and_then(|v| v.status).and_then(|s| s.phase),
                std::path::Path::new(&path).exists()
            ))
        }
    })
    .await
}

/// The metrics exporter sidecar's image (`hack/cluster/images.sh base`: Debian's build of
/// oliver006's redis_exporter).
const EXPORTER_IMAGE: &str = "localhost/redis-exporter:bed";

/// A pod of Redis with a password from the Secret `secret` and the exporter beside it, reading
/// the address and the same password from its environment, as the operator's pods will get it.
/// No pod-level user: each container runs as its image's (Redis 999, the exporter 59000), which
/// `runAsNonRoot` checks.
fn redis_with_exporter(name: &str, secret: &str) -> Pod {
    let password = json!({"secretKeyRef": {"name": secret, "key": "password"}});
    let restricted = json!({
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": true,
    });
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "redis",
                    "image": REDIS_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "args": ["redis-server", "--port", "6379", "--protected-mode", "no",
                             "--requirepass", "$(REDIS_PASSWORD)"],
                    "env": [
                        {"name": "REDIS_PASSWORD", "valueFrom": password},
                        {"name": "REDISCLI_AUTH", "valueFrom": password},
                    ],
                    "securityContext": restricted,
                    "readinessProbe": {"exec": {"command": ["redis-cli", "PING"]}, "periodSeconds": 1},
                },
                {
                    "name": "exporter",
                    "image": EXPORTER_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "env": [
                        {"name": "REDIS_ADDR", "value": "redis://localhost:6379"},
                        {"name": "REDIS_PASSWORD", "valueFrom": password},
                    ],
                    "ports": [{"name": "metrics", "containerPort": 9121}],
                    "securityContext": restricted,
                    "readinessProbe": {
                        "httpGet": {"path": "/metrics", "port": "metrics"},
                        "periodSeconds": 1,
                    },
                },
            ],
        },
    }))
    .expect("a valid pod")
}

/// The exporter image as a sidecar on the real node: with the password from a Secret in its
/// environment it logs in to the Redis beside it (which refuses clients without it) and serves
/// `/metrics` on 9121 through the pod IP: `redis_up 1`, and the keys written with `redis-cli`
/// counted in `redis_db_keys{db="db0"}`.
#[tokio::test]
async fn the_exporter_image_serves_metrics_of_a_redis_with_a_password() -> Result<(), Error> {
    use k8s_openapi::api::core::v1::Secret;
    const PASSWORD: &str = "exporter-Passw0rd-for-the-bed";
    let cluster = Cluster::connect().await?;
    node::require_real_node(&cluster).await?;
    let ns = cluster
        .namespace_with(
            "real-exporter",
            NamespaceOptions::default()
                .pod_security("restricted")
                .real_node(),
        )
        .await?;
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "auth"},
        "stringData": {"password": PASSWORD},
    }))
    .expect("a valid secret");
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .context("creating the Secret")?;
    let pods: Api<Pod> = ns.api();
    pods.create(
        &PostParams::default(),
        &redis_with_exporter("metered", "auth"),
    )
    .await
    .context("creating metered")?;
    let pod = wait_for(
        "metered Ready (Redis and the exporter)",
        CONVERGE,
        || async {
            let pod = pods.get("metered").await.map_err(seen)?;
            if e2e::pods::is_ready(&pod) {
                Ok(pod)
            } else {
                Err(pods::describe_all(std::slice::from_ref(&pod)))
            }
        },
    )
    .await?;

    let refused = cli(&pod, 6379, &["SET", "k0", "v"]).await;
    assert!(
        matches!(&refused, Ok(answer) if answer.contains("NOAUTH")),
        "Redis must refuse clients without the password: {refused:?}"
    );
    let auth = ["-a", PASSWORD, "--no-auth-warning"];
    for key in ["k1", "k2", "k3"] {
        let set = [&auth[..], &["SET", key, "v"]].concat();
        assert_eq!(cli(&pod, 6379, &set).await?, "OK");
    }

    let ip = pods::ip(&pod).unwrap_or_default().to_owned();
    let url = format!("http://{ip}:9121/metrics");
    let metrics = wait_for("the exporter counting 3 keys", CONVERGE, || async {
        let metrics = node::http_get(&url).await?;
        if node::sample(&metrics, "redis_db_keys{db=\"db0\"}") == Some("3") {
            Ok(metrics)
        } else {
            let lines: Vec<_> = metrics
                .lines()
                .filter(|l| l.starts_with("redis_up") || l.starts_with("redis_db_keys"))
                .collect();
            Err(format!("{url}: {lines:?}"))
        }
    })
    .await?;
    assert_eq!(node::sample(&metrics, "redis_up"), Some("1"), "{metrics}");
    Ok(())
}

/// `spec.exporter` through the operator: every pod gets the sidecar, which logs in with the
/// password from the auth Secret; the `<name>` Service has a `metrics` port (and the label a
/// ServiceMonitor selects), and scraping it through the ClusterIP shows `redis_up 1` and the keys.
#[tokio::test]
async fn the_operator_adds_the_exporter_sidecar_and_a_metrics_port() -> Result<(), Error> {
    use k8s_openapi::api::core::v1::{Secret, Service};
    let (_cluster, ns, _operator) = node::setup("real-exporter").await?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "cache-auth"},
        "stringData": {"password": "s3cret-for-metrics"},
    }))
    .expect("a valid Secret");
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .context("creating the Secret")?;
    let redis: Redis = serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1",
        "kind": "Redis",
        "metadata": {"name": "metered"},
        "spec": {
            "replicas": 1,
            "image": REDIS_IMAGE,
            "auth": {"secretRef": {"name": "cache-auth"}},
            "exporter": {"image": "localhost/redis-exporter:bed"},
        },
    }))
    .expect("a valid Redis");
    ns.api::<Redis>()
        .create(&PostParams::default(), &redis)
        .await
        .context("creating metered")?;
    let pods = wait_serving(&ns, "metered", 1, REDIS_IMAGE).await?;
    let containers: Vec<String> = pods[0]
        .spec
        .as_ref()
        .map(|s| s.containers.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    assert_eq!(containers, ["redis", "exporter"]);
    for key in ["a", "b", "c"] {
        assert_eq!(
            cli(
                &pods[0],
                6379,
                &[
                    "-a",
                    "s3cret-for-metrics",
                    "--no-auth-warning",
                    "SET",
                    key,
                    "1"
                ]
            )
            .await?,
            "OK"
        );
    }
    let services: Api<Service> = ns.api();
    let service = services
        .get("metered")
        .await
        .context("reading Service metered")?;
    assert_eq!(
        service
            .labels()
            .get(api::exporter::SCRAPE_LABEL)
            .map(String::as_str),
        Some("true")
    );
    let ip = service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .unwrap_or_default();
    let url = format!("http://{ip}:9121/metrics");
    wait_for(
        "the exporter's metrics through the Service",
        CONVERGE,
        || async {
            let metrics = node::http_get(&url).await?;
            match (
                node::sample(&metrics, "redis_up"),
                node::sample(&metrics, "redis_db_keys{db=\"db0\"}"),
            ) {
                (Some("1"), Some("3")) => Ok(()),
                other => Err(format!("redis_up, keys: {other:?}")),
            }
        },
    )
    .await
}
