//! The operator under test, as real processes against the cluster: `redis-webhook` registered
//! with the API server by `url:` + `caBundle`, and `redis-controller` running under its own
//! ServiceAccount bound to exactly the RBAC rules the chart ships; webhooks and rules both come
//! from the chart's `charts/redis-operator/files/`. Everything is scoped to one test namespace
//! and torn down when the guards drop, so tests can run at once.

mod cleanup;
mod controller;
mod identity;
mod process;
mod registration;
mod webhook;

use std::time::Duration;

use kube::Api;
use kube::api::DeleteParams;

use crate::Error;
use crate::cluster::Cluster;
use crate::namespace::TestNamespace;
use cleanup::in_own_runtime;

pub use controller::Controller;
pub use identity::{CONTROLLER_ACCOUNT, ControllerIdentity};
pub use process::{
    PROFILE_ENV, Process, free_port, http_get, kubectl, log_dir, run_kubectl, workspace_binary,
};
pub use webhook::Webhook;

/// Webhook + identity + controller for one namespace: the operator as a user installs it.
pub struct Operator {
    pub webhook: Webhook,
    pub identity: ControllerIdentity,
    pub controller: Controller,
    namespace: String,
    kube_config: kube::Config,
}

impl Operator {
    /// The CRD installed, then the webhook, the identity and a ready controller.
    pub async fn start(cluster: &Cluster, ns: &TestNamespace) -> Result<Self, Error> {
        Self::start_with(cluster, ns, &[]).await
    }

    /// As [`Operator::start`], with extra arguments for redis-controller.
    pub async fn start_with(
        cluster: &Cluster,
        ns: &TestNamespace,
        controller_args: &[&str],
    ) -> Result<Self, Error> {
        crate::install_crds(&cluster.client()).await?;
        let webhook = Webhook::start(cluster, ns, &[]).await?;
        let identity = ControllerIdentity::create(cluster, ns).await?;
        let mut controller =
            Controller::start(ns, &identity, "redis-controller", controller_args).await?;
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
