//! Kubernetes plumbing every feature shares, in one place: the field manager of the controller's
//! writes, who controls an object, the API server's "namespace is terminating" refusal, forced
//! server-side apply, and an object's name and namespace. No feature logic lives here.
//!
//! - [`watch`]: the one cached watch with its trigger stream (pods, children, claims, Secrets).
//! - [`events`]: publishing Events on a Redis, pod references and the phrases naming pods.
//! - [`conditions`]: the `Ready` condition's type and keeping `lastTransitionTime` (DESIGN §3:
//!   status written only when it changes).
//! - [`terminating`]: namespaces the API server said are being deleted.
//! - [`by_redis`]: what the features remember of each Redis, and the one way to forget it.
//! - [`redis_watch`]: the Redis objects as both reconcilers watch them, untyped and decoded one
//!   by one.

pub mod by_redis;
pub mod conditions;
pub mod events;
pub mod redis_watch;
pub mod terminating;
pub mod watch;

use crate::Error;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Field manager of every write the controller makes (server-side apply and creates); not the
/// `app.kubernetes.io/managed-by` label value, which is `api::pods::MANAGED_BY`.
pub const FIELD_MANAGER: &str = "redis-operator";

/// Whether the object of `uid` is `obj`'s controller (only such objects are the operator's to
/// change or delete).
pub fn controlled_by<K: Resource>(obj: &K, uid: &str) -> bool {
    obj.owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// Who controls an object, as a user is told when it holds a name a Redis needs:
/// `controller Deployment web (uid ...)`, or `no controller`.
pub fn controller_of<K: Resource>(obj: &K) -> String {
    obj.owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .map_or_else(
            || "no controller".to_owned(),
            |o| format!("controller {} {} (uid {})", o.kind, o.name, o.uid),
        )
}

/// Whether the API server refused a write because the namespace is being deleted. kube's error
/// type drops the status details (cause `NamespaceTerminating`): this matches the API server's
/// fixed wording instead.
pub fn is_terminating(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 403 && status.message.contains("because it is being terminated"))
}

/// An `Api` of namespace `namespace`, or of every namespace.
pub fn scoped<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// The namespace of a namespaced object read from the API server (always set there).
pub fn namespace(meta: &ObjectMeta) -> Result<&str, Error> {
    meta.namespace
        .as_deref()
        .ok_or(Error::IncompleteObject("namespace"))
}

/// The name and namespace of a namespaced object read from the API server.
pub fn name_and_namespace(meta: &ObjectMeta) -> Result<(&str, &str), Error> {
    let name = meta
        .name
        .as_deref()
        .ok_or(Error::IncompleteObject("name"))?;
    Ok((name, namespace(meta)?))
}

/// Server-side apply with the controller's field manager, forced: these objects are ours, and a
/// hand edit of a field we set is put back. A namespace being deleted (and the Redis with it)
/// is not an error.
pub async fn apply_forced<K>(api: &Api<K>, name: &str, obj: &K) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let kind = K::kind(&());
    match api
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(obj),
        )
        .await
    {
        Ok(_) => {
            tracing::info!(%kind, %name, "applied");
            Ok(())
        }
        Err(e) if is_terminating(&e) => Ok(()),
        Err(source) => Err(Error::Child {
            kind: kind.into_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::pod_owned_by;

    #[test]
    fn a_pod_is_ours_only_when_we_are_its_controller() {
        assert!(controlled_by(&pod_owned_by(Some("r-uid")), "r-uid"));
        assert!(!controlled_by(&pod_owned_by(Some("other")), "r-uid"));
        assert!(!controlled_by(&pod_owned_by(None), "r-uid"), "kubectl run");
        assert!(!controlled_by(&pod_owned_by(None), ""));
    }
}
