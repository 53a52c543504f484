//! What every child of a Redis carries (DESIGN §3): its name and namespace, the operator's
//! labels and a controller reference to the Redis; and whether a cached child lacks them. Pure.

use api::Redis;
use api::pods::selector_labels;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

/// Name, namespace, the operator's labels and a controller reference to the Redis, so the
/// garbage collector removes the object with its Redis even without the operator.
pub fn metadata(redis: &Redis, name: String) -> Option<ObjectMeta> {
    let redis_name = redis.metadata.name.as_deref()?;
    let mut owner = redis.controller_owner_ref(&())?;
    // As the pods: foreground deletion of the Redis waits for its children.
    owner.block_owner_deletion = Some(true);
    Some(ObjectMeta {
        name: Some(name),
        namespace: Some(redis.metadata.namespace.clone()?),
        labels: Some(selector_labels(redis_name)),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    })
}

/// Whether `current` lacks what `desired` sets in the metadata: our labels (others may add
/// their own) and our controller reference.
pub fn metadata_differs(desired: &ObjectMeta, current: &ObjectMeta) -> bool {
    let labels = current.labels.clone().unwrap_or_default();
    let labels_missing = desired
        .labels
        .iter()
        .flatten()
        .any(|(k, v)| labels.get(k) != Some(v));
    let owner_missing = desired.owner_references.iter().flatten().any(|want| {
        !current
            .owner_references
            .iter()
            .flatten()
            .any(|have| same_owner(want, have))
    });
    labels_missing || owner_missing
}

fn same_owner(want: &OwnerReference, have: &OwnerReference) -> bool {
    have.uid == want.uid
        && have.controller == want.controller
        && have.block_owner_deletion == want.block_owner_deletion
}
