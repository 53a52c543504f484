//! The admission rules on `spec.storage` (DESIGN §2, for §3d persistence): the claim rules of
//! [`crate::storage`] (a size above zero, usable access modes; on UPDATE, claims that only grow and
//! never move) reported as [`Violation`]s at their `spec.storage.*` paths, and the warnings when
//! an UPDATE adds or removes persistence.

use super::violation::Violation;
use crate::types::RedisSpec;

/// `spec.storage`: a size that is a quantity above zero, access modes a pod can write through.
pub(super) fn storage_violations(spec: &RedisSpec) -> Vec<Violation> {
    let Some(storage) = &spec.storage else {
        return Vec::new();
    };
    crate::storage::storage_violations(storage)
        .into_iter()
        .map(|(field, message)| {
            let value = match field.as_str() {
                "size" => storage.size.0.clone(),
                _ => format!("{:?}", storage.access_modes()),
            };
            Violation::new(format!("spec.storage.{field}"), value, message)
        })
        .collect()
}

/// UPDATE of `spec.storage` while claims may exist: see [`crate::storage::storage_update_violations`].
pub(super) fn storage_update_violations(new: &RedisSpec, old: &RedisSpec) -> Vec<Violation> {
    let (Some(new), Some(old)) = (&new.storage, &old.storage) else {
        return Vec::new();
    };
    crate::storage::storage_update_violations(old, new)
        .into_iter()
        .map(|(field, message)| {
            Violation::new(format!("spec.storage.{field}"), &new.size.0, message)
        })
        .collect()
}

/// UPDATE that adds or removes `spec.storage`: what happens to the pods and their data.
pub(super) fn storage_update_warnings(new: &RedisSpec, old: &RedisSpec) -> Vec<String> {
    match (&old.storage, &new.storage) {
        (None, Some(_)) => vec![
            "spec.storage: the pods are replaced one at a time onto new, empty claims; what they hold in memory and their emptyDir is not copied".to_owned(),
        ],
        (Some(_), None) => vec![
            "spec.storage: removed; the pods are replaced onto emptyDir volumes and the claims are kept (delete them by hand)".to_owned(),
        ],
        _ => Vec::new(),
    }
}
