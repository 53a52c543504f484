//! How every message echoes a tenant's string: cut and escaped (`violation`).

use super::*;

/// A tenant's string as long as a request allows, with a newline and an ANSI escape sequence
/// that would recolour (or, in a log, forge lines of) whatever terminal shows a denial.
fn hostile(len: usize) -> String {
    let mut text = "evil\n\x1b[31m\u{202e}".to_owned();
    text.push_str(&"a".repeat(len - text.len()));
    text
}

fn assert_shown_safely(what: &str, text: &str, max_bytes: usize) {
    assert!(
        text.len() <= max_bytes,
        "{what}: {} bytes, more than {max_bytes}: {:?}",
        text.len(),
        text.chars().take(300).collect::<String>()
    );
    assert!(
        !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{what}: a control character is echoed raw: {text:?}"
    );
}

#[test]
fn a_huge_image_with_control_characters_is_denied_in_a_short_clean_message() {
    let v = Policy::default().validate_create(&redis("r", json!({"image": hostile(100 * 1024)})));
    assert!(!v.allowed());
    assert_shown_safely("denial", &v.message(), 1024);
    assert!(
        v.message().contains("…(102400 bytes)"),
        "the cut is marked with the value's size: {}",
        v.message()
    );
    assert!(
        v.message()
            .starts_with("spec.image: \"evil\\n\\u{1b}[31m\\u{202e}aaa")
    );
}

#[test]
fn every_echoed_tenant_value_is_cut_and_escaped() {
    let long = hostile(64 * 1024);
    let text = serde_json::Value::from(long.clone());
    let spec = json!({
        "image": text,
        "mode": "Replication",
        "replication": {"failoverAfter": text},
        "auth": {"secretRef": {"name": text, "key": text}},
        "podDisruptionBudget": {"maxUnavailable": text},
        "exporter": {"image": text},
        "nodeSelector": {long.clone(): text},
        "podLabels": {long.clone(): text, format!("app{long}"): "x"},
        "podAnnotations": {long.clone(): "x"},
        "priorityClassName": text,
        "tolerations": [{"key": "k", "operator": text, "effect": text},
                        {"key": "k", "operator": "Exists", "value": text}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": text,
                                       "whenUnsatisfiable": text}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": text, "operator": text, "values": [text, text]},
                {"key": "k", "operator": "Exists", "values": [text, text, text, text]}],
                "matchFields": [{"key": text, "operator": text}]}]}}}
    });
    let mut hostile_redis = redis("r", spec);
    hostile_redis.metadata.name = Some(long.clone());
    let v = Policy::default().validate_create(&hostile_redis);
    assert!(v.violations.len() > 15, "{}", v.violations.len());
    for violation in &v.violations {
        let line = violation.to_string();
        assert_shown_safely(&violation.field, &violation.field, 400);
        assert_shown_safely(&violation.field, &line, 2048);
    }
    for warning in &v.warnings {
        assert_shown_safely("warning", warning, 2048);
    }
}
