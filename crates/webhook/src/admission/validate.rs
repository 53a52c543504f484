//! `/validate`: the api crate's admission rules for each operation, and the response that
//! carries their verdict (every violation, one cause per field, warnings alongside).

use super::read::{Reading, ReviewedRedis};
use super::{Outcome, with_warnings};
use api::{Policy, Verdict};
use kube::core::admission::{AdmissionResponse, Operation};
use kube::core::response::{StatusCause, StatusDetails};
use std::fmt;

/// `/validate`: the api crate's rules for the operation.
pub(super) fn validate(
    policy: &Policy,
    response: AdmissionResponse,
    operation: &Operation,
    name: &str,
    object: Reading,
    old_object: Reading,
) -> (AdmissionResponse, Outcome) {
    let redis = |reading: Reading| reading.map(|object| object.into_redis());
    let verdict = match operation {
        Operation::Create => match redis(object) {
            Ok(new) => policy.validate_create(&new),
            Err(e) => return undecodable(response, "object", "Redis", e),
        },
        Operation::Update => match (redis(object), redis(old_object)) {
            (Ok(new), Ok(old)) => policy.validate_update(&new, &old),
            (Err(e), _) => return undecodable(response, "object", "Redis", e),
            // The stored object is unreadable (stored by an older schema, or with the webhook
            // bypassed): refusing would leave no way to repair it, nor to remove a finalizer.
            // The new object gets the field rules, without the ratchet that needs the old one.
            (Ok(new), Err(e)) => {
                let mut verdict = policy.validate_create(&new);
                verdict.warnings.push(format!(
                    "oldObject could not be read as a Redis ({e}); the update was judged without comparing it to the stored object"
                ));
                verdict
            }
        },
        Operation::Delete => match redis(old_object) {
            Ok(old) => policy.validate_delete(&old),
            // Nothing to protect can be read; refusing would make the object undeletable.
            Err(e) => {
                let warning =
                    format!("oldObject could not be read, deletion protection not checked: {e}");
                return (with_warnings(response, vec![warning]), Outcome::Allowed);
            }
        },
        Operation::Connect => return (response, Outcome::Skipped),
    };
    decide(response, verdict, operation, name)
}

/// `/validate` of the `redis/scale` subresource: the `spec.replicas` rules on the new Scale.
/// The object and oldObject are autoscaling/v1 Scales, read through [`ReviewedRedis`] (both
/// have `metadata` and `spec.replicas`, the only field a Scale's spec has).
pub(super) fn validate_scale(
    policy: &Policy,
    response: AdmissionResponse,
    operation: &Operation,
    name: &str,
    object: Reading,
    old_object: Reading,
) -> (AdmissionResponse, Outcome) {
    let Operation::Update = operation else {
        return (response, Outcome::Skipped);
    };
    // ScaleSpec.replicas is `omitempty` in Go: absent means 0.
    let replicas =
        |scale: &ReviewedRedis| scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    let new = match &object {
        Ok(scale) => replicas(scale),
        Err(e) => return undecodable(response, "object", "autoscaling/v1 Scale", e),
    };
    let verdict = policy.validate_scale(new, old_object.as_deref().ok().map(replicas));
    decide(response, verdict, operation, name)
}

fn undecodable(
    response: AdmissionResponse,
    which: &str,
    kind: &str,
    e: impl fmt::Display,
) -> (AdmissionResponse, Outcome) {
    let mut denied = response.deny(format!("{which} is not a valid {kind}: {e}"));
    denied.result.code = 400;
    denied.result.reason = "BadRequest".to_owned();
    (denied, Outcome::Denied)
}

/// Turn a verdict into a response: a denial lists every violation, with one `causes` entry per
/// field (422 Invalid), except deletion protection (403 Forbidden); warnings ride along.
fn decide(
    response: AdmissionResponse,
    verdict: Verdict,
    operation: &Operation,
    name: &str,
) -> (AdmissionResponse, Outcome) {
    let response = with_warnings(response, verdict.warnings.clone());
    if verdict.allowed() {
        return (response, Outcome::Allowed);
    }
    let mut denied = response.deny(verdict.message());
    let forbidden = *operation == Operation::Delete;
    denied.result.code = if forbidden { 403 } else { 422 };
    denied.result.reason = if forbidden { "Forbidden" } else { "Invalid" }.to_owned();
    denied.result.details = Some(StatusDetails {
        name: name.to_owned(),
        group: api::GROUP.to_owned(),
        kind: "Redis".to_owned(),
        causes: verdict
            .violations
            .iter()
            .map(|v| StatusCause {
                reason: if forbidden {
                    "FieldValueForbidden"
                } else {
                    "FieldValueInvalid"
                }
                .to_owned(),
                message: v.message.clone(),
                field: v.field.clone(),
            })
            .collect(),
        uid: String::new(),
        retry_after_seconds: 0,
    });
    (denied, Outcome::Denied)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Endpoint, Outcome, answer};
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn validate_replication_rules_and_warnings() {
        let check = |spec: Value| {
            let a = answer(
                Endpoint::Validate,
                &Policy::default(),
                &review("CREATE", redis_object("r", spec), Value::Null),
            )
            .expect("answers");
            response(&a)
        };
        let r = check(json!({
            "replicas": 0, "image": "redis:7", "mode": "Replication",
            "replication": {"failoverAfter": "forever"},
            "auth": {"secretRef": {"name": "s", "key": "a/b"}},
            "podDisruptionBudget": {"maxUnavailable": "120%"}
        }));
        assert_eq!(r["allowed"], false);
        assert_eq!(r["status"]["code"], 422);
        let causes: Vec<_> = r["status"]["details"]["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| c["field"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            causes,
            vec![
                "spec.replicas",
                "spec.replication.failoverAfter",
                "spec.auth.secretRef.key",
                "spec.podDisruptionBudget.maxUnavailable"
            ]
        );
        assert!(
            r["status"]["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("spec.replicas: must be >= 1 in Replication mode"),
            "{r}"
        );

        let r = check(
            json!({"replicas": 1, "image": "redis:7", "mode": "Replication",
                             "replication": {"minReplicasToWrite": 1}}),
        );
        assert_eq!(r["allowed"], true);
        let warnings: Vec<&str> = r["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("no failover is possible"));
        assert!(warnings[1].contains("any pod that can reach the pods can read and write"));
        assert!(warnings[2].contains("writes will be refused"));

        let r = check(json!({"image": "redis:7", "replication": {"failoverAfter": "5s"}}));
        assert_eq!(r["allowed"], true);
        assert_eq!(
            r["warnings"],
            json!([
                "spec.replication: ignored in Standalone mode (set spec.mode: Replication to use it)",
                "spec.networkPolicy and spec.auth are not set: any pod in the cluster can connect to port 6379, read and write every key and change the configuration; set spec.networkPolicy.allowedClients to the clients that may connect, and spec.auth"
            ])
        );
    }

    #[test]
    fn validate_denies_with_every_violation_and_causes() {
        let object = redis_object("tangx-in", json!({"port": 6000}));
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("CREATE", object, Value::Null),
        )
        .expect("answers");
        let r = response(&a);
        assert_eq!(a.outcome, Outcome::Denied);
        assert_eq!(r["allowed"], false);
        assert_eq!(r["status"]["code"], 422);
        assert_eq!(
            r["status"]["message"],
            "metadata.name: \"tangx-in\" is a reserved name; spec.port: must be >= 6379, got 6000"
        );
        let fields: Vec<_> = r["status"]["details"]["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| c["field"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(fields, vec!["metadata.name", "spec.port"]);
    }

    #[test]
    fn validate_allows_the_tutorial_sample() {
        let object = redis_object(
            "my-op-redis",
            json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333}),
        );
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("CREATE", object, Value::Null),
        )
        .expect("answers");
        assert_eq!(a.outcome, Outcome::Allowed);
        assert_eq!(response(&a)["allowed"], true);
    }

    #[test]
    fn validate_update_judges_the_new_object() {
        let old = redis_object("r", json!({"port": 6379}));
        let new = redis_object("r", json!({"port": 6000}));
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("UPDATE", new, old),
        )
        .expect("answers");
        assert_eq!(
            response(&a)["status"]["message"],
            "spec.port: must be >= 6379, got 6000"
        );
    }

    #[test]
    fn validate_delete_reads_old_object_and_refuses_protected() {
        let mut old = redis_object("r", json!({}));
        old["metadata"]["annotations"] = json!({"myapp.tangx.in/deletion-protection": "true"});
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("DELETE", Value::Null, old),
        )
        .expect("answers");
        let r = response(&a);
        assert_eq!(r["allowed"], false);
        assert_eq!(r["status"]["code"], 403);
        let unprotected = redis_object("r", json!({}));
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("DELETE", Value::Null, unprotected),
        )
        .expect("answers");
        assert_eq!(response(&a)["allowed"], true);
    }

    /// The review kube-apiserver sends for `kubectl scale redis/r --replicas=N`.
    fn scale_review(spec: Value, old_spec: Value) -> Vec<u8> {
        let scale = |spec: Value| {
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                   "metadata": {"name": "r", "namespace": "default"},
                   "spec": spec, "status": {"replicas": 1, "selector": "app=r"}})
        };
        let mut body: Value =
            serde_json::from_slice(&review("UPDATE", scale(spec), scale(old_spec)))
                .expect("decodes");
        body["request"]["kind"] = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        body["request"]["requestKind"] = body["request"]["kind"].clone();
        body["request"]["subResource"] = json!("scale");
        body["request"]["requestSubResource"] = json!("scale");
        serde_json::to_vec(&body).expect("encodes")
    }

    #[test]
    fn validate_judges_the_scale_subresource() {
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &scale_review(json!({"replicas": 2_147_483_647}), json!({"replicas": 1})),
        )
        .expect("answers");
        let r = response(&a);
        assert_eq!(a.outcome, Outcome::Denied);
        assert_eq!(r["status"]["code"], 422);
        assert_eq!(
            r["status"]["message"],
            "spec.replicas: must be <= 100, got 2147483647"
        );
        assert_eq!(
            r["status"]["details"]["causes"][0]["field"],
            "spec.replicas"
        );

        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &scale_review(json!({"replicas": 3}), json!({"replicas": 1})),
        )
        .expect("answers");
        assert_eq!(a.outcome, Outcome::Allowed);
        // Scaled to 0: Go omits the zero replicas.
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &scale_review(json!({}), json!({"replicas": 1})),
        )
        .expect("answers");
        assert_eq!(a.outcome, Outcome::Allowed);
        assert_eq!(
            response(&a)["warnings"],
            json!(["spec.replicas: 0 runs no Redis pods"])
        );
        // Nothing to default in a Scale.
        let a = answer(
            Endpoint::Mutate,
            &Policy::default(),
            &scale_review(json!({"replicas": 3}), json!({"replicas": 1})),
        )
        .expect("answers");
        assert_eq!(a.outcome, Outcome::Skipped);
        assert!(response(&a).get("patch").is_none());
    }

    #[test]
    fn validate_update_with_an_unreadable_old_object_judges_the_new_one_and_warns() {
        // Stored before the schema had its enum (or with it bypassed): not a Redis today.
        let broken = redis_object("r", json!({"imagePullPolicy": "always"}));
        let repaired = redis_object("r", json!({"imagePullPolicy": "Always"}));
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("UPDATE", repaired, broken.clone()),
        )
        .expect("answers");
        let r = response(&a);
        assert_eq!(a.outcome, Outcome::Allowed, "{r}");
        assert!(
            r["warnings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|w| w.starts_with("oldObject could not be read as a Redis")),
            "{r}"
        );
        // The field rules still apply to the new object.
        let bad = redis_object("r", json!({"port": 6000}));
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("UPDATE", bad, broken),
        )
        .expect("answers");
        assert_eq!(
            response(&a)["status"]["message"],
            "spec.port: must be >= 6379, got 6000"
        );
    }

    #[test]
    fn warnings_are_returned_on_allowed_requests() {
        let object = redis_object("r", json!({"image": "redis:latest"}));
        let a = answer(
            Endpoint::Validate,
            &Policy::default(),
            &review("CREATE", object, Value::Null),
        )
        .expect("answers");
        assert_eq!(response(&a)["allowed"], true);
        assert!(
            response(&a)["warnings"][0]
                .as_str()
                .unwrap_or_default()
                .contains(":latest")
        );
    }
}
