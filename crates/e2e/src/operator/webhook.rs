//! `redis-webhook` as a process on loopback, registered with the API server by `url:` +
//! `caBundle` for one namespace.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::Api;
use kube::api::PostParams;

use super::cleanup::delete_cluster_scoped;
use super::process::{Process, free_port, http_get, log_dir, workspace_binary};
use super::registration;
use crate::cluster::Cluster;
use crate::error::Context;
use crate::namespace::TestNamespace;
use crate::{Error, wait_for};

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
        let ca = gen_certs(&binary, &certs)?;
        let (port, ops_port) = (free_port()?, free_port()?);
        let serving = [
            format!("--bind=127.0.0.1:{port}"),
            format!("--ops-bind=127.0.0.1:{ops_port}"),
            format!("--tls-cert-file={}", certs.join("tls.crt").display()),
            format!("--tls-key-file={}", certs.join("tls.key").display()),
        ];
        let mut command = Command::new(&binary);
        command.args(serving).args(extra_args);
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
        let (mutating, validating) =
            registration::webhook_configurations(&self.config_name, self.port, ca, ns.name())?;
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

/// The webhook's own `gen-certs`: a CA and a serving certificate for 127.0.0.1 in `dir`; the
/// CA's PEM.
fn gen_certs(binary: &Path, dir: &Path) -> Result<Vec<u8>, Error> {
    const FOR_LOOPBACK: [&str; 5] = ["--dns", "localhost", "--ip", "127.0.0.1", "--out"];
    let status = Command::new(binary)
        .arg("gen-certs")
        .args(FOR_LOOPBACK)
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Error::process("redis-webhook gen-certs", e))?;
    if !status.success() {
        return Err(Error::process("redis-webhook gen-certs", status));
    }
    std::fs::read(dir.join("ca.crt")).map_err(|e| Error::process("reading ca.crt", e))
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
