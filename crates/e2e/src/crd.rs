use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};

use crate::cluster::repo_root;
use crate::error::Context;
use crate::{Error, seen, wait_for};

/// Field manager of everything the e2e suite applies.
pub const FIELD_MANAGER: &str = "redis-operator-e2e";

/// The committed CRDs (`deploy/crd.yaml`, written by `make manifests`: `Redis`, `RedisBackup`).
pub fn crds() -> Result<Vec<CustomResourceDefinition>, Error> {
    let path = repo_root().join("deploy").join("crd.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Manifest {
        path: path.clone(),
        reason: format!("{e} (run `make manifests`)"),
    })?;
    serde_norway::Deserializer::from_str(&text)
        .map(|doc| {
            serde::Deserialize::deserialize(doc).map_err(|e: serde_norway::Error| Error::Manifest {
                path: path.clone(),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// The committed `Redis` CRD.
pub fn redis_crd() -> Result<CustomResourceDefinition, Error> {
    crds()?
        .into_iter()
        .find(|crd| crd.spec.names.kind == "Redis")
        .ok_or_else(|| Error::Manifest {
            path: repo_root().join("deploy").join("crd.yaml"),
            reason: "no Redis CRD in it (run `make manifests`)".to_owned(),
        })
}

/// Installs every CRD of `deploy/crd.yaml` with server-side apply (fixed field manager, forced:
/// safe to run from many tests at once) and waits until the API server serves them (Established).
pub async fn install_crds(client: &Client) -> Result<(), Error> {
    for crd in crds()? {
        install_crd(client, &crd).await?;
    }
    Ok(())
}

async fn install_crd(
    client: &Client,
    crd: &CustomResourceDefinition,
) -> Result<CustomResourceDefinition, Error> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(crd),
    )
    .await
    .context(format!("applying CRD {name} from deploy/crd.yaml"))?;
    wait_for(
        &format!("CRD {name} to be Established"),
        Duration::from_secs(60),
        || async {
            let current = crds.get(&name).await.map_err(seen)?;
            let conditions = current
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            if conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
            {
                Ok(current)
            } else {
                Err(format!("conditions: {}", describe_conditions(&conditions)))
            }
        },
    )
    .await
}

/// The `Redis` kind (`myapp.tangx.in/v1`, plural `redis`), for untyped access.
pub fn redis_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("myapp.tangx.in", "v1", "Redis"),
        "redis",
    )
}

fn describe_conditions(
    conditions: &[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionCondition],
) -> String {
    if conditions.is_empty() {
        return "none".to_string();
    }
    conditions
        .iter()
        .map(|c| {
            format!(
                "{}={} ({})",
                c.type_,
                c.status,
                c.message.as_deref().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
