use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client};

use crate::cluster::Cluster;
use crate::error::Context;
use crate::{Error, seen, wait_for};

/// Label put on every namespace the e2e tests create, to find leftovers.
pub const E2E_LABEL: &str = "e2e.redis-operator/test";

/// Set to `1` to keep test namespaces for debugging instead of deleting them.
pub const KEEP_ENV: &str = "E2E_KEEP_NAMESPACES";

/// Options of a test namespace.
#[derive(Clone, Debug, Default)]
pub struct NamespaceOptions {
    /// Extra labels, e.g. `pod-security.kubernetes.io/enforce=restricted`.
    pub labels: BTreeMap<String, String>,
    /// Annotations, e.g. the default node selector of [`NamespaceOptions::real_node`].
    pub annotations: BTreeMap<String, String>,
}

impl NamespaceOptions {
    /// Adds a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Adds an annotation.
    pub fn annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }

    /// Every pod of the namespace runs on the bed's real node (kubelet + containerd), whatever
    /// created it: the API server's PodNodeSelector and PodTolerationRestriction admission
    /// plugins add the node selector and the toleration of its taint (the Redis API has no node
    /// selector of its own).
    pub fn real_node(self) -> Self {
        let toleration = serde_json::json!([{
            "key": crate::node::NODE_LABEL,
            "operator": "Equal",
            "value": "real",
            "effect": "NoSchedule",
        }]);
        self.annotation(
            "scheduler.alpha.kubernetes.io/node-selector",
            format!("{}=real", crate::node::NODE_LABEL),
        )
        .annotation(
            "scheduler.alpha.kubernetes.io/defaultTolerations",
            toleration.to_string(),
        )
    }

    /// Enforces a Pod Security Standards level (`privileged`, `baseline`, `restricted`).
    pub fn pod_security(self, level: &str) -> Self {
        self.label("pod-security.kubernetes.io/enforce", level)
            .label("pod-security.kubernetes.io/enforce-version", "latest")
    }
}

/// A namespace that exists for one test. Dropping it deletes the namespace, also while a
/// failed test unwinds, so runs do not leak namespaces into the cluster.
pub struct TestNamespace {
    name: String,
    client: Client,
    config: kube::Config,
}

impl TestNamespace {
    pub(crate) async fn create(
        cluster: &Cluster,
        prefix: &str,
        options: NamespaceOptions,
    ) -> Result<Self, Error> {
        let name = unique_name(prefix);
        let mut labels = options.labels;
        labels.insert(E2E_LABEL.to_string(), "true".to_string());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(labels),
                annotations: Some(options.annotations),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let client = cluster.client();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .context(format!("creating namespace {name}"))?;
        // From here on the guard deletes the namespace, whatever happens next.
        let guard = Self {
            name,
            client,
            config: cluster.config().clone(),
        };

        // Pods are rejected until the serviceaccount controller has made "default".
        let accounts: Api<ServiceAccount> = guard.api();
        wait_for(
            &format!("service account default in namespace {}", guard.name),
            Duration::from_secs(60),
            || async {
                match accounts.get_opt("default").await.map_err(seen)? {
                    Some(_) => Ok(()),
                    None => {
                        Err("not created yet (is kube-controller-manager running?)".to_string())
                    }
                }
            },
        )
        .await?;
        Ok(guard)
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// An API for a namespaced kind in this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// The reasons of the namespace's Events (events.k8s.io/v1), of those about the object
    /// `regarding` (kind, name) when given.
    pub async fn event_reasons(
        &self,
        regarding: Option<(&str, &str)>,
    ) -> Result<Vec<String>, Error> {
        let events = self
            .api::<k8s_openapi::api::events::v1::Event>()
            .list(&kube::api::ListParams::default())
            .await
            .context("listing the Events")?;
        Ok(events
            .items
            .into_iter()
            .filter(|e| {
                regarding.is_none_or(|(kind, name)| {
                    e.regarding.as_ref().is_some_and(|r| {
                        r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name)
                    })
                })
            })
            .filter_map(|e| e.reason)
            .collect())
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if std::env::var(KEEP_ENV).is_ok_and(|v| v == "1") {
            eprintln!("e2e: keeping namespace {} ({KEEP_ENV}=1)", self.name);
            return;
        }
        // The test's runtime may be shutting down (or gone, during a panic): delete from a
        // thread with a runtime and a client of its own.
        let name = self.name.clone();
        let config = self.config.clone();
        let outcome = std::thread::spawn(move || -> Result<(), String> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async move {
                let client = Client::try_from(config).map_err(|e| e.to_string())?;
                let deleted = Api::<Namespace>::all(client)
                    .delete(&name, &DeleteParams::background())
                    .await;
                match deleted {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    Err(e) => Err(e.to_string()),
                }
            })
        })
        .join();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("e2e: could not delete namespace {}: {e}", self.name),
            Err(_) => eprintln!("e2e: deleting namespace {} panicked", self.name),
        }
    }
}

/// `e2e-<prefix>-<suffix>`: unique across tests, processes and runs, at most 63 characters.
fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or_default();
    let suffix = format!(
        "{:x}{:x}{count}",
        std::process::id() & 0xfff,
        nanos & 0xfffff
    );
    let prefix: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(63 - "e2e--".len() - suffix.len())
        .collect();
    format!("e2e-{}-{suffix}", prefix.trim_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::unique_name;

    #[test]
    fn names_are_unique_and_valid() {
        let a = unique_name("Owner_GC");
        let b = unique_name("Owner_GC");
        assert_ne!(a, b);
        assert!(a.starts_with("e2e-owner-gc-"), "{a}");
        let long = unique_name(&"x".repeat(200));
        assert!(long.len() <= 63, "{long}");
        assert!(
            long.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
}
