//! The controller's identity in a test namespace: a ServiceAccount bound to the chart's RBAC
//! rules, and a kubeconfig with its token.

use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, Role, RoleBinding, RoleRef, Subject,
};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube::config::{AuthInfo, Context as KubeContext, Kubeconfig, NamedAuthInfo, NamedContext};

use super::cleanup::delete_cluster_scoped;
use super::process::log_dir;
use super::registration;
use crate::Error;
use crate::cluster::Cluster;
use crate::error::Context;
use crate::namespace::TestNamespace;

/// Name of the controller's ServiceAccount in each test namespace.
pub const CONTROLLER_ACCOUNT: &str = "redis-controller";

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
                    rules: Some(registration::controller_rules()?),
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
                    rules: Some(registration::leader_election_rules()?),
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
                // A day: a long chaos run (`make chaos ROUNDS=200`, over an hour) outlived a
                // one-hour token, and its controllers lost the API (401) and their Lease.
                expiration_seconds: Some(86_400),
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
            .ok_or_else(|| Error::process("requesting a token", "no token in the answer"))?;
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
        std::fs::create_dir_all(dir).map_err(|e| Error::process("creating the log folder", e))?;
        let token_file = dir.join("controller.token");
        std::fs::write(&token_file, token).map_err(|e| Error::process("writing the token", e))?;
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
            .map_err(|e| Error::process("writing the controller kubeconfig", e))?;
        std::fs::write(&self.kubeconfig, yaml)
            .map_err(|e| Error::process("writing the controller kubeconfig", e))
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
