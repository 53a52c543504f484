//! The operator under test, as real processes against the cluster: `redis-webhook` registered
//! with the API server by `url:` + `caBundle`, and `redis-controller` running under its own
//! ServiceAccount bound to exactly the RBAC rules the chart ships
//! (`charts/redis-operator/files/*-rules.yaml`). Everything is scoped to one test namespace and
//! torn down when the guards drop, so tests can run at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::config::{AuthInfo, Context as KubeContext, Kubeconfig, NamedAuthInfo, NamedContext};
use kube::{Api, Client};

use crate::cluster::{Cluster, repo_root};
use crate::error::Context;
use crate::namespace::TestNamespace;
use crate::{Error, wait_for};

/// Name of the controller's ServiceAccount in each test namespace.
pub const CONTROLLER_ACCOUNT: &str = "redis-controller";

fn process_error(what: impl Into<String>, reason: impl ToString) -> Error {
    Error::Process {
        what: what.into(),
        reason: reason.to_string(),
    }
}

/// Set to `release` to run the operator from `target/release` (benchmarks) instead of
/// `target/debug`.
pub const PROFILE_ENV: &str = "E2E_PROFILE";

/// A binary of this workspace, built by `cargo build --bins` (`make e2e` does it first), or by
/// `cargo build --release --bins` when `E2E_PROFILE=release`.
pub fn workspace_binary(name: &str) -> Result<PathBuf, Error> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    let release = std::env::var(PROFILE_ENV).is_ok_and(|p| p == "release");
    let (profile, build) = if release {
        (
            "release",
            "`cargo build --release --bins` (make bench-controller does)",
        )
    } else {
        ("debug", "`cargo build --bins` (make e2e does)")
    };
    let path = target.join(profile).join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(process_error(
            format!("finding {name}"),
            format!("{} does not exist; build it with {build}", path.display()),
        ))
    }
}

/// `kubectl` from the test bed's `bin/`, else from PATH.
pub fn kubectl() -> PathBuf {
    let bed = repo_root().join("bin").join("kubectl");
    if bed.is_file() {
        bed
    } else {
        PathBuf::from("kubectl")
    }
}

/// Runs kubectl against the cluster under test; returns stdout, or stderr as the error.
pub fn run_kubectl(cluster: &Cluster, args: &[&str]) -> Result<String, String> {
    let output = Command::new(kubectl())
        .env("KUBECONFIG", cluster.kubeconfig())
        .args(args)
        .output()
        .map_err(|e| format!("running kubectl: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> Result<u16, Error> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| process_error("finding a free port", e))
}

/// GET `path` on a plain-HTTP 127.0.0.1 port: (status code, body).
pub async fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or("no status line")?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((code, body))
}

/// A child process killed when the guard drops; its stderr goes to a log file kept for debugging.
pub struct Process {
    pub name: String,
    child: Child,
    pub log: PathBuf,
}

impl Process {
    fn spawn(name: &str, mut command: Command, log_dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(log_dir)
            .map_err(|e| process_error(format!("creating {}", log_dir.display()), e))?;
        let log = log_dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log)
            .map_err(|e| process_error(format!("creating {}", log.display()), e))?;
        let child = command
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .map_err(|e| process_error(format!("starting {name}"), e))?;
        Ok(Process {
            name: name.to_owned(),
            child,
            log,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for the exit status.
    pub fn terminate(&mut self) -> Result<std::process::ExitStatus, Error> {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| process_error("sending SIGTERM", e))?;
        self.child
            .wait()
            .map_err(|e| process_error(format!("waiting for {}", self.name), e))
    }

    /// Whether it is still running (false once it exited).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The tail of its log, for failure messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<_> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

fn log_dir(namespace: &str) -> PathBuf {
    repo_root().join("target").join("e2e-logs").join(namespace)
}

/// Runs `work` with a client of its own on a thread with a runtime of its own: for `Drop`,
/// where the test's runtime may be shutting down, or gone during a panic.
fn in_own_runtime<F, Fut>(config: &kube::Config, work: F)
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let config = config.clone();
    let _ = std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async move {
            if let Ok(client) = Client::try_from(config) {
                work(client).await;
            }
        });
    })
    .join();
}

/// Deletes cluster-scoped objects (best effort, from `Drop`).
fn delete_cluster_scoped<K>(config: &kube::Config, names: Vec<String>)
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    in_own_runtime(config, move |client| async move {
        let api: Api<K> = Api::all(client);
        for name in names {
            let _ = api.delete(&name, &DeleteParams::background()).await;
        }
    });
}

/// `redis-webhook` running on loopback and registered for one namespace.
pub struct Webhook {
    pub process: Process,
    pub port: u16,
    pub ops_port: u16,
    config_name: String,
    kube_config: kube::Config,
}

impl Webhook {
    /// Starts the webhook with fresh certificates and registers Mutating- and
    /// ValidatingWebhookConfigurations, their webhooks the chart's, for Redis in `ns` only. Returns
    /// once the API server really calls it.
    pub async fn start(
        cluster: &Cluster,
        ns: &TestNamespace,
        extra_args: &[&str],
    ) -> Result<Self, Error> {
        let binary = workspace_binary("redis-webhook")?;
        let logs = log_dir(ns.name());
        let certs = logs.join("certs");
        let status = Command::new(&binary)
            .args([
                "gen-certs",
                "--dns",
                "localhost",
                "--ip",
                "127.0.0.1",
                "--out",
            ])
            .arg(&certs)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| process_error("redis-webhook gen-certs", e))?;
        if !status.success() {
            return Err(process_error("redis-webhook gen-certs", status));
        }
        let ca =
            std::fs::read(certs.join("ca.crt")).map_err(|e| process_error("reading ca.crt", e))?;
        let (port, ops_port) = (free_port()?, free_port()?);
        let mut command = Command::new(&binary);
        command
            .args([
                "--bind",
                &format!("127.0.0.1:{port}"),
                "--metrics-bind",
                &format!("127.0.0.1:{ops_port}"),
            ])
            .arg("--tls-cert-file")
            .arg(certs.join("tls.crt"))
            .arg("--tls-key-file")
            .arg(certs.join("tls.key"))
            .args(extra_args);
        let process = Process::spawn("redis-webhook", command, &logs)?;
        let config_name = format!("redis-webhook-{}", ns.name());
        let webhook = Webhook {
            process,
            port,
            ops_port,
            config_name,
            kube_config: cluster.config().clone(),
        };
        wait_for("redis-webhook /readyz", Duration::from_secs(30), || async {
            match http_get(ops_port, "/readyz").await {
                Ok((200, _)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await?;
        webhook.register(cluster, ns, &ca).await?;
        Ok(webhook)
    }

    async fn register(
        &self,
        cluster: &Cluster,
        ns: &TestNamespace,
        ca: &[u8],
    ) -> Result<(), Error> {
        let client_config = |path: &str| WebhookClientConfig {
            url: Some(format!("https://127.0.0.1:{}{path}", self.port)),
            ca_bundle: Some(ByteString(ca.to_vec())),
            service: None,
        };
        let only_this_namespace = LabelSelector {
            match_labels: Some(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_owned(),
                ns.name().to_owned(),
            )])),
            match_expressions: None,
        };
        let metadata = ObjectMeta {
            name: Some(self.config_name.clone()),
            ..ObjectMeta::default()
        };
        let mutating = MutatingWebhookConfiguration {
            metadata: metadata.clone(),
            webhooks: Some(vec![chart_webhook(
                MUTATING_WEBHOOK,
                client_config("/mutate"),
                &only_this_namespace,
            )?]),
        };
        let validating = ValidatingWebhookConfiguration {
            metadata,
            webhooks: Some(vec![chart_webhook(
                VALIDATING_WEBHOOK,
                client_config("/validate"),
                &only_this_namespace,
            )?]),
        };
        let client = cluster.client();
        let params = PostParams::default();
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .create(&params, &mutating)
            .await
            .context("registering the mutating webhook")?;
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .create(&params, &validating)
            .await
            .context("registering the validating webhook")?;

        // The API server picks configurations up asynchronously: wait until a reserved name is
        // really refused by our webhook (a dry run, so nothing is stored).
        let redis: Api<api::Redis> = ns.api();
        let probe = api::Redis::new("tangx-in", api::RedisSpec::default());
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        wait_for(
            "the API server to call redis-webhook",
            Duration::from_secs(30),
            || async {
                match redis.create(&dry_run, &probe).await {
                    Err(kube::Error::Api(s)) if s.message.contains("reserved name") => Ok(()),
                    other => Err(format!("dry-run create of tangx-in: {other:?}")),
                }
            },
        )
        .await
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        // Unregister first: a configuration pointing at a dead webhook would fail every write.
        delete_cluster_scoped::<ValidatingWebhookConfiguration>(
            &self.kube_config,
            vec![self.config_name.clone()],
        );
        delete_cluster_scoped::<MutatingWebhookConfiguration>(
            &self.kube_config,
            vec![self.config_name.clone()],
        );
    }
}

/// A file of the chart's `files/`, by name and text.
type ChartFile = (&'static str, &'static str);

macro_rules! chart_file {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../charts/redis-operator/files/", $name)),
        )
    };
}

/// The webhooks the chart registers (`charts/redis-operator/files/*-webhook.yaml`): all of each
/// but where it is called and for which namespaces.
const MUTATING_WEBHOOK: ChartFile = chart_file!("mutating-webhook.yaml");
const VALIDATING_WEBHOOK: ChartFile = chart_file!("validating-webhook.yaml");
/// The chart's RBAC rules of the controller, and of its leader election.
const CONTROLLER_RULES: ChartFile = chart_file!("controller-rules.yaml");
const LEADER_ELECTION_RULES: ChartFile = chart_file!("leader-election-rules.yaml");

/// A chart file, parsed.
fn parse_chart_file<T: serde::de::DeserializeOwned>(file: ChartFile) -> Result<T, Error> {
    serde_norway::from_str(file.1).map_err(|e| chart_file_error(file, e))
}

fn chart_file_error((name, _): ChartFile, reason: impl ToString) -> Error {
    Error::Manifest {
        path: Path::new("charts/redis-operator/files").join(name),
        reason: reason.to_string(),
    }
}

/// A webhook of the chart's files, called at `client_config` for the namespaces of `selector`.
fn chart_webhook<T: serde::de::DeserializeOwned>(
    file: ChartFile,
    client_config: WebhookClientConfig,
    selector: &LabelSelector,
) -> Result<T, Error> {
    let mut webhook: serde_json::Value = parse_chart_file(file)?;
    let placed = serde_json::json!({"clientConfig": client_config, "namespaceSelector": selector});
    if let (Some(webhook), Some(placed)) = (webhook.as_object_mut(), placed.as_object()) {
        webhook.extend(placed.clone());
    }
    serde_json::from_value(webhook).map_err(|e| chart_file_error(file, e))
}

/// The controller's identity in one namespace: a ServiceAccount, bound to the chart's rules
/// (ClusterRole) and lease rules (Role in the namespace), and a kubeconfig with its token.
pub struct ControllerIdentity {
    pub kubeconfig: PathBuf,
    /// As the API server (and its audit log) names it.
    pub username: String,
    cluster_objects: String,
    kube_config: kube::Config,
}

impl ControllerIdentity {
    pub async fn create(cluster: &Cluster, ns: &TestNamespace) -> Result<Self, Error> {
        let client = cluster.client();
        let name = ns.name();
        let params = PostParams::default();
        let accounts: Api<ServiceAccount> = ns.api();
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(CONTROLLER_ACCOUNT.to_owned()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        accounts
            .create(&params, &account)
            .await
            .context("creating the controller's ServiceAccount")?;
        let subject = Subject {
            kind: "ServiceAccount".to_owned(),
            name: CONTROLLER_ACCOUNT.to_owned(),
            namespace: Some(name.to_owned()),
            api_group: None,
        };
        let cluster_objects = format!("e2e-redis-controller-{name}");
        let identity = ControllerIdentity {
            kubeconfig: log_dir(name).join("controller.kubeconfig"),
            username: format!("system:serviceaccount:{name}:{CONTROLLER_ACCOUNT}"),
            cluster_objects: cluster_objects.clone(),
            kube_config: cluster.config().clone(),
        };
        let role_meta = ObjectMeta {
            name: Some(cluster_objects.clone()),
            ..ObjectMeta::default()
        };
        Api::<ClusterRole>::all(client.clone())
            .create(
                &params,
                &ClusterRole {
                    metadata: role_meta.clone(),
                    rules: Some(parse_chart_file(CONTROLLER_RULES)?),
                    ..ClusterRole::default()
                },
            )
            .await
            .context("creating the controller's ClusterRole")?;
        Api::<ClusterRoleBinding>::all(client.clone())
            .create(
                &params,
                &ClusterRoleBinding {
                    metadata: role_meta.clone(),
                    role_ref: RoleRef {
                        api_group: Some("rbac.authorization.k8s.io".into()),
                        kind: "ClusterRole".into(),
                        name: cluster_objects.clone(),
                    },
                    subjects: Some(vec![subject.clone()]),
                },
            )
            .await
            .context("binding the controller's ClusterRole")?;
        let lease_meta = ObjectMeta {
            name: Some("redis-controller-leader-election".into()),
            ..ObjectMeta::default()
        };
        ns.api::<Role>()
            .create(
                &params,
                &Role {
                    metadata: lease_meta.clone(),
                    rules: Some(parse_chart_file(LEADER_ELECTION_RULES)?),
                },
            )
            .await
            .context("creating the leader election Role")?;
        ns.api::<RoleBinding>()
            .create(
                &params,
                &RoleBinding {
                    metadata: lease_meta,
                    role_ref: RoleRef {
                        api_group: Some("rbac.authorization.k8s.io".into()),
                        kind: "Role".into(),
                        name: "redis-controller-leader-election".into(),
                    },
                    subjects: Some(vec![subject]),
                },
            )
            .await
            .context("binding the leader election Role")?;

        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let token = accounts
            .create_token_request(CONTROLLER_ACCOUNT, &params, &request)
            .await
            .context("requesting a token for the controller")?
            .status
            .and_then(|s| s.token)
            .ok_or_else(|| process_error("requesting a token", "no token in the answer"))?;
        identity.write_kubeconfig(cluster, &token)?;
        Ok(identity)
    }

    fn write_kubeconfig(&self, cluster: &Cluster, token: &str) -> Result<(), Error> {
        let admin = Kubeconfig::read_from(cluster.kubeconfig()).map_err(|e| Error::Manifest {
            path: cluster.kubeconfig().to_owned(),
            reason: e.to_string(),
        })?;
        let cluster_name = admin
            .current_context
            .as_ref()
            .and_then(|c| admin.contexts.iter().find(|n| &n.name == c))
            .and_then(|n| n.context.as_ref())
            .map(|c| c.cluster.clone())
            .or_else(|| admin.clusters.first().map(|c| c.name.clone()))
            .unwrap_or_default();
        let dir = self.kubeconfig.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| process_error("creating the log folder", e))?;
        let token_file = dir.join("controller.token");
        std::fs::write(&token_file, token).map_err(|e| process_error("writing the token", e))?;
        let config = Kubeconfig {
            clusters: admin
                .clusters
                .into_iter()
                .filter(|c| c.name == cluster_name)
                .collect(),
            auth_infos: vec![NamedAuthInfo {
                name: CONTROLLER_ACCOUNT.to_owned(),
                auth_info: Some(AuthInfo {
                    token_file: Some(token_file.display().to_string()),
                    ..AuthInfo::default()
                }),
                other: Default::default(),
            }],
            contexts: vec![NamedContext {
                name: CONTROLLER_ACCOUNT.to_owned(),
                context: Some(KubeContext {
                    cluster: cluster_name,
                    user: Some(CONTROLLER_ACCOUNT.to_owned()),
                    ..KubeContext::default()
                }),
                other: Default::default(),
            }],
            current_context: Some(CONTROLLER_ACCOUNT.to_owned()),
            ..Kubeconfig::default()
        };
        let yaml = serde_norway::to_string(&config)
            .map_err(|e| process_error("writing the controller kubeconfig", e))?;
        std::fs::write(&self.kubeconfig, yaml)
            .map_err(|e| process_error("writing the controller kubeconfig", e))
    }
}

impl Drop for ControllerIdentity {
    fn drop(&mut self) {
        delete_cluster_scoped::<ClusterRoleBinding>(
            &self.kube_config,
            vec![self.cluster_objects.clone()],
        );
        delete_cluster_scoped::<ClusterRole>(&self.kube_config, vec![self.cluster_objects.clone()]);
    }
}

/// One `redis-controller` process under the test's identity, watching only the test namespace.
pub struct Controller {
    pub process: Process,
    pub ops_port: u16,
}

impl Controller {
    pub async fn start(
        ns: &TestNamespace,
        identity: &ControllerIdentity,
        name: &str,
        extra_args: &[&str],
    ) -> Result<Self, Error> {
        let binary = workspace_binary("redis-controller")?;
        let ops_port = free_port()?;
        let mut command = Command::new(binary);
        command
            .env("KUBECONFIG", &identity.kubeconfig)
            .env("RUST_LOG", "info,controller=debug")
            .args([
                "--namespace",
                ns.name(),
                "--metrics-bind",
                &format!("127.0.0.1:{ops_port}"),
            ])
            .args(extra_args);
        let process = Process::spawn(name, command, &log_dir(ns.name()))?;
        Ok(Controller { process, ops_port })
    }

    /// Waits until it leads: `redis_controller_leader` is 1 (with --leader-elect, the Lease is
    /// held; /readyz alone does not say so, since standbys are ready too).
    pub async fn wait_leading(&mut self, timeout: Duration) -> Result<(), Error> {
        let what = format!("{} to lead", self.process.name);
        let result = wait_for(&what, timeout, || async {
            match self.metric("redis_controller_leader").await {
                Ok(1.0) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        self.with_log_tail(result)
    }

    /// Waits until /readyz answers 200 (the pod cache is synced; leading or standing by).
    pub async fn wait_ready(&mut self, timeout: Duration) -> Result<(), Error> {
        let port = self.ops_port;
        let what = format!("{} /readyz", self.process.name);
        let result = wait_for(&what, timeout, || async {
            match http_get(port, "/readyz").await {
                Ok((200, _)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        self.with_log_tail(result)
    }

    /// A failed wait, with the end of the controller's log.
    fn with_log_tail<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        result.map_err(|e| {
            process_error(
                format!("{e}"),
                format!("log tail:\n{}", self.process.log_tail()),
            )
        })
    }

    /// The value of a metric without labels (e.g. `redis_controller_pods_created_total`).
    pub async fn metric(&self, name: &str) -> Result<f64, String> {
        let (_, body) = http_get(self.ops_port, "/metrics").await?;
        body.lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .and_then(|v| v.trim().parse().ok())
            })
            .ok_or_else(|| format!("{name} not in /metrics"))
    }
}

/// Webhook + identity + controller for one namespace: the operator as a user installs it.
pub struct Operator {
    pub webhook: Webhook,
    pub identity: ControllerIdentity,
    pub controller: Controller,
    namespace: String,
    kube_config: kube::Config,
}

impl Operator {
    pub async fn start(cluster: &Cluster, ns: &TestNamespace) -> Result<Self, Error> {
        crate::install_redis_crd(&cluster.client()).await?;
        let webhook = Webhook::start(cluster, ns, &[]).await?;
        let identity = ControllerIdentity::create(cluster, ns).await?;
        let mut controller = Controller::start(ns, &identity, "redis-controller", &[]).await?;
        controller.wait_ready(Duration::from_secs(60)).await?;
        Ok(Operator {
            webhook,
            identity,
            controller,
            namespace: ns.name().to_owned(),
            kube_config: cluster.config().clone(),
        })
    }
}

impl Drop for Operator {
    /// Runs before the processes stop: deletes every Redis left in the namespace and lets the
    /// controller release them; any still held after a few seconds (the test killed the
    /// controller) is released from its finalizer by hand. Deleting the test namespace then
    /// never waits on an operator that no longer runs.
    fn drop(&mut self) {
        let namespace = self.namespace.clone();
        in_own_runtime(&self.kube_config, move |client| async move {
            let redis: Api<api::Redis> = Api::namespaced(client, &namespace);
            let _ = redis
                .delete_collection(&DeleteParams::background(), &Default::default())
                .await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                let Ok(list) = redis.list(&Default::default()).await else {
                    return;
                };
                if list.items.is_empty() {
                    return;
                }
                if tokio::time::Instant::now() >= deadline {
                    let release = serde_json::json!({"metadata": {"finalizers": null}});
                    for item in list.items {
                        let name = kube::ResourceExt::name_any(&item);
                        let params = kube::api::PatchParams::default();
                        let _ = redis
                            .patch(&name, &params, &kube::api::Patch::Merge(&release))
                            .await;
                    }
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
    }
}
