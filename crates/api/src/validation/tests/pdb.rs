//! `spec.podDisruptionBudget.maxUnavailable` (`pdb`).

use super::*;

#[test]
fn max_unavailable_is_a_count_or_a_percentage() {
    let pdb = |max: serde_json::Value| {
        Policy::default().validate_create(&redis(
            "r",
            json!({"podDisruptionBudget": {"maxUnavailable": max}}),
        ))
    };
    for good in [
        json!(0),
        json!(1),
        json!(500),
        json!("0%"),
        json!("25%"),
        json!("100%"),
        json!("050%"),
    ] {
        let v = pdb(good.clone());
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    assert_eq!(
        pdb(json!(-1)).message(),
        "spec.podDisruptionBudget.maxUnavailable: must be >= 0, got -1"
    );
    for bad in [
        "101%",
        "1",
        "%",
        "-5%",
        "+5%",
        "5 %",
        "5.5%",
        "abc",
        "",
        "99999999999999999999999%",
    ] {
        let v = pdb(json!(bad));
        assert_eq!(
            fields(&v),
            vec!["spec.podDisruptionBudget.maxUnavailable"],
            "{bad}"
        );
        assert_eq!(
            v.violations[0].message,
            format!(
                "must be a number >= 0 or a percentage between \"0%\" and \"100%\", got {bad:?}"
            )
        );
    }
    assert!(
        Policy::default()
            .validate_create(&redis("r", json!({"podDisruptionBudget": {}})))
            .allowed()
    );
}
