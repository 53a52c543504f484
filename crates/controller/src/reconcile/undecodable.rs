//! A stored Redis that does not decode (see `k8s::redis_watch`, the untyped watch): reported on
//! its own (log, Warning Event, `InvalidSpec` in its Ready condition) while the others keep
//! reconciling ([`undecodable`]); being deleted, it is still cleaned up from its metadata.

use super::cleanup::cleanup;
use super::context::Context;
use crate::Error;
use crate::k8s::conditions::{READY, now};
use crate::k8s::events::publish;
use crate::k8s::redis_watch::{metadata_only, resource};
use crate::k8s::{self, FIELD_MANAGER};
use api::{FINALIZER, Redis};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action as Requeue;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};

/// The Ready condition's reason for an object that does not decode.
pub const INVALID_SPEC: &str = "InvalidSpec";

/// The Ready condition stored on `obj`, if any.
pub fn stored_ready(obj: &DynamicObject) -> Option<Condition> {
    let conditions = obj.data.get("status")?.get("conditions")?.as_array()?;
    conditions
        .iter()
        .filter_map(|c| serde_json::from_value::<Condition>(c.clone()).ok())
        .find(|c| c.type_ == READY)
}

/// Whether the stored Ready condition already says `message` with reason `InvalidSpec`.
pub fn already_reported(obj: &DynamicObject, message: &str) -> bool {
    stored_ready(obj).is_some_and(|c| {
        c.status == "False"
            && c.reason == INVALID_SPEC
            && c.message == message
            && c.observed_generation == obj.metadata.generation
    })
}

/// A stored Redis that does not decode: say so (log, Warning Event, `InvalidSpec` in the Ready
/// condition), and wait for the user to fix it. Being deleted, it is still cleaned up and
/// released, from its metadata alone.
pub async fn undecodable(
    obj: &DynamicObject,
    reason: &str,
    ctx: &Context,
) -> Result<Requeue, Error> {
    let (name, namespace) = k8s::name_and_namespace(&obj.metadata)?;
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), namespace, &resource());
    if obj.metadata.deletion_timestamp.is_some() {
        let Some(index) = obj.finalizers().iter().position(|f| f == FINALIZER) else {
            return Ok(Requeue::await_change());
        };
        cleanup(&metadata_only(obj), ctx).await?;
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Json::<()>(remove_finalizer(index)?),
        )
        .await
        .map_err(Error::Kube)?;
        return Ok(Requeue::await_change());
    }
    let message = format!("the stored Redis cannot be read: {reason}");
    tracing::warn!(redis = %name, %namespace, %message, "not reconciling this Redis");
    if already_reported(obj, &message) {
        return Ok(Requeue::await_change());
    }
    let reference = ObjectReference {
        api_version: Some(Redis::api_version(&()).into_owned()),
        kind: Some(Redis::kind(&()).into_owned()),
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        uid: obj.metadata.uid.clone(),
        ..ObjectReference::default()
    };
    publish(
        &ctx.recorder,
        &reference,
        None,
        EventType::Warning,
        INVALID_SPEC,
        "Reconcile",
        message.clone(),
    )
    .await;
    let condition = Condition {
        type_: READY.to_owned(),
        status: "False".to_owned(),
        reason: INVALID_SPEC.to_owned(),
        message,
        observed_generation: obj.metadata.generation,
        last_transition_time: now(),
    };
    let patch = serde_json::json!({
        "apiVersion": Redis::api_version(&()),
        "kind": Redis::kind(&()),
        "status": {"conditions": [condition]},
    });
    // Best effort: the Event and the log already say it.
    match api
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
    {
        Ok(_) => {
            ctx.metrics.status_writes.inc();
        }
        Err(e) => {
            tracing::warn!(redis = %name, error = %e, "could not write the InvalidSpec condition")
        }
    }
    Ok(Requeue::await_change())
}

/// The JSON patch removing our finalizer at `index`, as kube's finalizer helper writes it (a
/// test first, so a list changed since is not cut at the wrong place), without reading the
/// object back as a Redis.
fn remove_finalizer(index: usize) -> Result<json_patch::Patch, Error> {
    let path = format!("/metadata/finalizers/{index}");
    let patch = serde_json::json!([
        {"op": "test", "path": path, "value": FINALIZER},
        {"op": "remove", "path": path},
    ]);
    serde_json::from_value(patch).map_err(Error::EncodePatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::redis_watch::tests::object;
    use serde_json::json;

    #[test]
    fn the_report_is_written_once() {
        let mut big = object(json!({"replicas": 3_000_000_000_u64}));
        assert!(!already_reported(&big, "bad"));
        big.data["status"] = json!({"conditions": [{
            "type": "Ready", "status": "False", "reason": INVALID_SPEC, "message": "bad",
            "observedGeneration": 2, "lastTransitionTime": "2026-01-01T00:00:00Z"
        }]});
        assert!(already_reported(&big, "bad"));
        assert!(!already_reported(&big, "other"));
    }
}
