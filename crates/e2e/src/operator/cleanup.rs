//! Best-effort cleanup from `Drop`.

use kube::Client;
use kube::api::{Api, DeleteParams};

/// Runs `work` with a client of its own on a thread with a runtime of its own: for `Drop`,
/// where the test's runtime may be shutting down, or gone during a panic.
pub(super) fn in_own_runtime<F, Fut>(config: &kube::Config, work: F)
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
pub(super) fn delete_cluster_scoped<K>(config: &kube::Config, names: Vec<String>)
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
