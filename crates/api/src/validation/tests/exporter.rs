//! `spec.exporter` (§3e; `exporter`).

use super::*;

#[test]
fn the_exporter_needs_a_valid_image_and_its_own_port() {
    let policy = Policy::default();
    assert!(
        policy
            .validate_create(&redis("r", json!({"exporter": {}})))
            .allowed()
    );
    let clash = redis("r", json!({"port": 9121, "exporter": {}}));
    assert_eq!(
        fields(&policy.validate_create(&clash)),
        ["spec.exporter.port"]
    );
    let bad = redis(
        "r",
        json!({"exporter": {"image": "Not An Image", "enabled": false}}),
    );
    assert_eq!(
        fields(&policy.validate_create(&bad)),
        ["spec.exporter.image"]
    );
}
