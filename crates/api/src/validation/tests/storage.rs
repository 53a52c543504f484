//! `spec.storage` (§3d; `storage`).

use super::*;

#[test]
fn storage_sizes_are_checked_and_only_grow() {
    let policy = Policy::default();
    let bad = redis(
        "r",
        json!({"storage": {"size": "lots", "accessModes": ["ReadOnlyMany"]}}),
    );
    let verdict = policy.validate_create(&bad);
    assert_eq!(
        fields(&verdict),
        ["spec.storage.size", "spec.storage.accessModes[0]"]
    );
    let small = redis("r", json!({"storage": {"size": "1Gi"}}));
    let big = redis("r", json!({"storage": {"size": "2Gi"}}));
    assert!(policy.validate_update(&big, &small).allowed());
    let shrink = policy.validate_update(&small, &big);
    assert_eq!(fields(&shrink), ["spec.storage.size"]);
    assert!(
        shrink.message().contains("cannot shrink from 2Gi to 1Gi"),
        "{}",
        shrink.message()
    );
    let added = policy.validate_update(&small, &redis("r", json!({})));
    assert!(added.allowed());
    assert!(
        added
            .warnings
            .iter()
            .any(|w| w.contains("new, empty claims")),
        "{added:?}"
    );
}
