//! `redis-controller` as a process under the test's identity.

use std::process::Command;
use std::time::Duration;

use super::identity::ControllerIdentity;
use super::process::{Process, free_port, http_get, log_dir, workspace_binary};
use crate::namespace::TestNamespace;
use crate::{Error, wait_for};

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
                "--ops-bind",
                &format!("127.0.0.1:{ops_port}"),
            ])
            .args(extra_args);
        let process = Process::spawn(name, command, &log_dir(ns.name()))?;
        Ok(Controller { process, ops_port })
    }

    /// A `--leader-elect` controller sharing a Lease of `lease_seconds` in the test namespace
    /// with every other one started so.
    pub async fn start_elected(
        ns: &TestNamespace,
        identity: &ControllerIdentity,
        name: &str,
        lease_seconds: &str,
    ) -> Result<Self, Error> {
        let args = [
            "--leader-elect",
            "--lease-namespace",
            ns.name(),
            "--lease-duration",
            lease_seconds,
        ];
        Self::start(ns, identity, name, &args).await
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
            Error::process(
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
