//! Every admission rule, through the real server over TLS, as kube-apiserver would ask.

mod common;

use common::{post, redis, review, review_response, start};
use hyper::StatusCode;
use json_patch::Patch;
use serde_json::{Value, json};

/// Applies the response's patch the way kube-apiserver reads it: `patch` is a Go `[]byte`, a
/// base64 string in JSON (what the API documents, and what redis-webhook sends).
fn apply(response: &Value, mut object: Value) -> Value {
    use base64::Engine;
    let bytes: Vec<u8> = match &response["patch"] {
        Value::String(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("base64"),
        other => panic!("patch is not a base64 string: {other}"),
    };
    let patch: Patch = serde_json::from_slice(&bytes).expect("patch decodes");
    json_patch::patch(&mut object, &patch).expect("patch applies");
    object
}

#[tokio::test]
async fn mutate_fills_defaults_and_only_missing_ones() {
    let server = start().await;
    let empty = redis("defaults", json!({}));
    let response = review_response(
        &server,
        "/mutate",
        review("CREATE", empty.clone(), Value::Null),
    )
    .await;
    assert_eq!(response["uid"], "uid-CREATE-defaults", "uid is echoed");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patched = apply(&response, empty);
    assert_eq!(
        patched["spec"],
        json!({"replicas": 1, "image": "redis:7.2-alpine", "port": 6379, "imagePullPolicy": "IfNotPresent"})
    );
    assert_eq!(
        patched["metadata"]["name"], "defaults",
        "nothing else touched"
    );

    let partial = redis("partial", json!({"replicas": 2, "port": 8333}));
    let response = review_response(
        &server,
        "/mutate",
        review("UPDATE", partial.clone(), partial.clone()),
    )
    .await;
    let patched = apply(&response, partial);
    assert_eq!(patched["spec"]["replicas"], 2);
    assert_eq!(patched["spec"]["port"], 8333);
    assert_eq!(patched["spec"]["image"], "redis:7.2-alpine");

    let full = redis(
        "full",
        json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333, "imagePullPolicy": "IfNotPresent"}),
    );
    let response = review_response(&server, "/mutate", review("CREATE", full, Value::Null)).await;
    assert_eq!(response["allowed"], true);
    assert!(
        response.get("patch").is_none(),
        "no patch when nothing is missing: {response}"
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn validate_create_applies_every_rule() {
    let server = start().await;
    let cases = [
        (
            redis(
                "my-op-redis",
                json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333}),
            ),
            None,
        ),
        (
            redis("tangx-in", json!({})),
            Some("metadata.name: \"tangx-in\" is a reserved name"),
        ),
        (
            redis("p", json!({"port": 6000})),
            Some("spec.port: must be >= 6379, got 6000"),
        ),
        (
            redis(&"n".repeat(64), json!({})),
            Some("metadata.name: must be no more than 63 characters"),
        ),
        (
            redis("img", json!({"image": "Redis:7"})),
            Some("spec.image: \"Redis:7\" is not a valid image reference"),
        ),
        (
            redis("many", json!({"replicas": 101})),
            Some("spec.replicas: must be <= 100, got 101"),
        ),
    ];
    for (object, denial) in cases {
        let name = object["metadata"]["name"].clone();
        let response =
            review_response(&server, "/validate", review("CREATE", object, Value::Null)).await;
        match denial {
            None => assert_eq!(response["allowed"], true, "{name}: {response}"),
            Some(message) => {
                assert_eq!(response["allowed"], false, "{name} should be denied");
                assert_eq!(response["status"]["code"], 422);
                let got = response["status"]["message"].as_str().unwrap_or_default();
                assert!(got.starts_with(message), "{name}: {got}");
            }
        }
    }
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_denial_lists_every_violation_with_field_paths() {
    let server = start().await;
    let object = redis("tangx-in", json!({"port": 6000, "replicas": 1000}));
    let response =
        review_response(&server, "/validate", review("CREATE", object, Value::Null)).await;
    assert_eq!(
        response["status"]["message"],
        "metadata.name: \"tangx-in\" is a reserved name; spec.replicas: must be <= 100, got 1000; spec.port: must be >= 6379, got 6000"
    );
    let causes: Vec<_> = response["status"]["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["field"].clone())
        .collect();
    assert_eq!(
        causes,
        vec![
            json!("metadata.name"),
            json!("spec.replicas"),
            json!("spec.port")
        ]
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn validate_update_judges_the_new_object() {
    let server = start().await;
    let old = redis("r", json!({"port": 6379}));
    let response = review_response(
        &server,
        "/validate",
        review("UPDATE", redis("r", json!({"port": 6000})), old.clone()),
    )
    .await;
    assert_eq!(response["allowed"], false);
    assert_eq!(
        response["status"]["message"],
        "spec.port: must be >= 6379, got 6000"
    );
    let response = review_response(
        &server,
        "/validate",
        review("UPDATE", redis("r", json!({"port": 7000})), old),
    )
    .await;
    assert_eq!(response["allowed"], true);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn validate_delete_honours_deletion_protection() {
    let server = start().await;
    let mut protected = redis("keep", json!({}));
    protected["metadata"]["annotations"] = json!({"myapp.tangx.in/deletion-protection": "true"});
    let response = review_response(
        &server,
        "/validate",
        review("DELETE", Value::Null, protected),
    )
    .await;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 403);
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("deletion is refused")
    );
    let response = review_response(
        &server,
        "/validate",
        review("DELETE", Value::Null, redis("go", json!({}))),
    )
    .await;
    assert_eq!(response["allowed"], true);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn warnings_reach_the_client() {
    let server = start().await;
    let response = review_response(
        &server,
        "/validate",
        review("CREATE", redis("w", json!({"image": "redis"})), Value::Null),
    )
    .await;
    assert_eq!(response["allowed"], true);
    let warnings = response["warnings"].as_array().expect("warnings");
    assert!(
        warnings[0]
            .as_str()
            .unwrap_or_default()
            .contains("has no tag"),
        "{warnings:?}"
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn another_kind_is_allowed_with_a_warning() {
    let server = start().await;
    let mut body = review(
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
        Value::Null,
    );
    body["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "Pod"});
    let response = review_response(&server, "/validate", body).await;
    assert_eq!(response["allowed"], true);
    assert!(
        response["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .contains("check the webhook configuration")
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn bad_input_gets_a_clear_400_and_the_server_keeps_serving() {
    let server = start().await;
    let cases: [(&[u8], &str); 4] = [
        (b"this is not json", "request body is not JSON"),
        (
            br#"{"apiVersion":"v1","kind":"Pod"}"#,
            "not an admission.k8s.io/v1 AdmissionReview",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
            "has no `request`",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}"#,
            "not an admission.k8s.io/v1 AdmissionReview",
        ),
    ];
    for (body, says) in cases {
        for path in ["/mutate", "/validate"] {
            let (status, bytes) = post(&server, path, body.to_vec()).await;
            let text = String::from_utf8_lossy(&bytes);
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {text}");
            assert!(text.contains(says), "{path}: {text}");
        }
    }
    // Oversized: the test server's limit is 64 KiB.
    let huge = review(
        "CREATE",
        redis("big", json!({"image": "x".repeat(100 * 1024)})),
        Value::Null,
    );
    let (status, bytes) = post(
        &server,
        "/validate",
        serde_json::to_vec(&huge).expect("encodes"),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(String::from_utf8_lossy(&bytes).contains("--max-body-bytes"));
    // Still serving after all that.
    let response = review_response(
        &server,
        "/validate",
        review("CREATE", redis("ok", json!({})), Value::Null),
    )
    .await;
    assert_eq!(response["allowed"], true);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn operations_port_reports_health_readiness_and_metrics() {
    let server = start().await;
    let _ = review_response(
        &server,
        "/validate",
        review("CREATE", redis("tangx-in", json!({})), Value::Null),
    )
    .await;
    let _ = post(&server, "/mutate", b"nope".to_vec()).await;
    assert_eq!(
        common::plain_get(server.ops, "/healthz")
            .await
            .expect("healthz")
            .0,
        StatusCode::OK
    );
    assert_eq!(
        common::plain_get(server.ops, "/readyz")
            .await
            .expect("readyz")
            .0,
        StatusCode::OK
    );
    let (status, text) = common::plain_get(server.ops, "/metrics")
        .await
        .expect("metrics");
    assert_eq!(status, StatusCode::OK);
    assert!(
        text.contains(r#"redis_webhook_admission_requests_total{endpoint="validate",operation="CREATE",result="denied"} 1"#),
        "{text}"
    );
    assert!(text.contains(r#"redis_webhook_admission_requests_total{endpoint="mutate",operation="none",result="bad_request"} 1"#));
    assert!(text.contains("redis_webhook_admission_duration_seconds_bucket"));
    assert!(text.contains("redis_webhook_certificate_reloads_total 0"));
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_replication_redis_is_defaulted_judged_and_warned_about() {
    let server = start().await;
    // deploy/samples/redis-replication.yaml as kubectl sends it.
    let object = redis(
        "my-replicated-redis",
        json!({
            "replicas": 3, "image": "redis:7.2-alpine", "mode": "Replication",
            "replication": {"failoverAfter": "15s"},
            "auth": {"secretRef": {"name": "my-replicated-redis-auth"}}
        }),
    );
    let response = review_response(
        &server,
        "/mutate",
        review("CREATE", object.clone(), Value::Null),
    )
    .await;
    let patched = apply(&response, object);
    assert_eq!(
        patched["spec"],
        json!({
            "replicas": 3, "image": "redis:7.2-alpine", "port": 6379,
            "imagePullPolicy": "IfNotPresent", "mode": "Replication",
            "replication": {"minReplicasMaxLag": 10, "failoverAfter": "15s"},
            "auth": {"secretRef": {"name": "my-replicated-redis-auth", "key": "password"}}
        })
    );
    let response = review_response(
        &server,
        "/validate",
        review("CREATE", patched.clone(), Value::Null),
    )
    .await;
    assert_eq!(response["allowed"], true, "{response}");
    assert!(response.get("warnings").is_none(), "{response}");

    // Scaled down to 2 pods: nothing was stored for minReplicasToWrite, so its default follows
    // (0: writes no longer wait for the one replica), with a warning about what 0 allows.
    let mut two = patched.clone();
    two["spec"]["replicas"] = json!(2);
    let response = review_response(
        &server,
        "/mutate",
        review("UPDATE", two.clone(), patched.clone()),
    )
    .await;
    assert!(response.get("patch").is_none(), "{response}");
    let response =
        review_response(&server, "/validate", review("UPDATE", two, patched.clone())).await;
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(
        response["warnings"],
        json!([
            "spec.replication.minReplicasToWrite: 0 (the default below 3 pods) lets a primary cut off from its replicas keep accepting writes, which a failover to a replica then discards; set it to 1 so that such a primary refuses writes after minReplicasMaxLag seconds (writes then also wait for a connected replica), or run 3 or more pods, where 1 is the default"
        ]),
        "{response}"
    );

    // Without auth, on one pod, failing over after a day: refused for the day, warned about the rest.
    let mut risky = patched.clone();
    risky["spec"]["replicas"] = json!(1);
    risky["spec"]["replication"]["failoverAfter"] = json!("24h");
    if let Some(spec) = risky["spec"].as_object_mut() {
        spec.remove("auth");
    }
    let response = review_response(
        &server,
        "/validate",
        review("CREATE", risky.clone(), Value::Null),
    )
    .await;
    assert_eq!(response["allowed"], false);
    assert_eq!(
        response["status"]["message"],
        "spec.replication.failoverAfter: must be between 1s and 1h, got \"24h\""
    );
    let warnings = response["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 2, "{warnings:?}");

    // The same stored object passes an unchanged UPDATE (ratchet), a changed value does not.
    let response = review_response(
        &server,
        "/validate",
        review("UPDATE", risky.clone(), risky.clone()),
    )
    .await;
    assert_eq!(response["allowed"], true, "{response}");
    let mut worse = risky.clone();
    worse["spec"]["replication"]["failoverAfter"] = json!("48h");
    let response = review_response(&server, "/validate", review("UPDATE", worse, risky)).await;
    assert_eq!(response["allowed"], false, "{response}");
    server.shutdown().await.expect("clean shutdown");
}
