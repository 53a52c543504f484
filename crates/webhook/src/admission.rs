//! Decode an AdmissionReview and decide it: the pure core of the webhook (DESIGN §2).
//! No I/O here, so every path, including garbage input, is unit- and property-tested.

use api::defaults::FieldDefault;
use api::{Policy, Redis, RedisSpec, Verdict};
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation};
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::response::{StatusCause, StatusDetails};
use kube::core::{DynamicObject, GroupVersionKind};
use serde::Deserialize;
use serde_json::Value;

const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
const REVIEW_KIND: &str = "AdmissionReview";

/// The two admission endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/mutate`: fill missing defaults.
    Mutate,
    /// `/validate`: apply the admission rules.
    Validate,
}

impl Endpoint {
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Mutate => "mutate",
            Endpoint::Validate => "validate",
        }
    }
}

/// Why a request body cannot be answered with an AdmissionReview (the server answers 400).
#[derive(Debug, thiserror::Error)]
pub enum BadReview {
    #[error("request body is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("request body is not an {REVIEW_API_VERSION} {REVIEW_KIND}: {0}")]
    NotReview(String),
    #[error("{REVIEW_KIND} has no `request` to answer")]
    MissingRequest,
}

/// How a review was decided, for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    /// Allowed, with a patch (mutate only).
    Patched,
    Denied,
    /// Allowed without looking: not a Redis, or an operation this endpoint does not judge.
    Skipped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Patched => "patched",
            Outcome::Denied => "denied",
            Outcome::Skipped => "skipped",
        }
    }
}

/// The answer to one review.
#[derive(Debug)]
pub struct Answer {
    pub review: AdmissionReview<DynamicObject>,
    pub operation: Operation,
    pub outcome: Outcome,
    /// `namespace/name` of the object, for logs.
    pub subject: String,
}

/// Decode `body` as an AdmissionReview and answer it for `endpoint` under `policy`.
pub fn answer(endpoint: Endpoint, policy: &Policy, body: &[u8]) -> Result<Answer, BadReview> {
    let request = decode(body)?;
    let operation = request.operation.clone();
    let (response, outcome) = if !is_redis(&request.kind) {
        let k = &request.kind;
        let warning = format!(
            "redis-webhook only judges {}/Redis; it was sent {}/{} {}: check the webhook configuration's rules",
            api::GROUP,
            k.group,
            k.version,
            k.kind
        );
        (
            with_warnings(AdmissionResponse::from(&request), vec![warning]),
            Outcome::Skipped,
        )
    } else {
        match endpoint {
            Endpoint::Mutate => mutate(&request),
            Endpoint::Validate => validate(policy, &request),
        }
    };
    let subject = format!(
        "{}/{}",
        request.namespace.as_deref().unwrap_or_default(),
        request.name
    );
    Ok(Answer {
        review: response.into_review(),
        operation,
        outcome,
        subject,
    })
}

fn decode(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, BadReview> {
    // One typed pass on the hot path; the slower diagnosis below runs only for bad input.
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(typed) => {
            let value: Value = serde_json::from_slice(body).map_err(BadReview::NotJson)?;
            check_type(value.get("apiVersion"), value.get("kind"))?;
            return Err(BadReview::NotReview(typed.to_string()));
        }
    };
    check_type(
        Some(&Value::from(review.types.api_version.as_str())),
        Some(&Value::from(review.types.kind.as_str())),
    )?;
    review.try_into().map_err(|_| BadReview::MissingRequest)
}

fn check_type(api_version: Option<&Value>, kind: Option<&Value>) -> Result<(), BadReview> {
    if api_version == Some(&Value::from(REVIEW_API_VERSION))
        && kind == Some(&Value::from(REVIEW_KIND))
    {
        return Ok(());
    }
    let show = |v: Option<&Value>| {
        v.filter(|v| v.as_str() != Some(""))
            .map_or_else(|| "missing".to_owned(), Value::to_string)
    };
    Err(BadReview::NotReview(format!(
        "apiVersion is {}, kind is {}",
        show(api_version),
        show(kind)
    )))
}

fn is_redis(kind: &GroupVersionKind) -> bool {
    kind.group == api::GROUP && kind.kind == "Redis"
}

/// `/mutate`: a JSONPatch adding only the missing defaults; no patch when nothing is missing.
fn mutate(request: &AdmissionRequest<DynamicObject>) -> (AdmissionResponse, Outcome) {
    let response = AdmissionResponse::from(request);
    let (Operation::Create | Operation::Update) = request.operation else {
        return (response, Outcome::Skipped);
    };
    let Some(object) = &request.object else {
        return (response, Outcome::Skipped);
    };
    match default_patch(object.data.get("spec")) {
        Ok(None) => (response, Outcome::Allowed),
        Ok(Some(patch)) => match response.clone().with_patch(patch) {
            Ok(patched) => (patched, Outcome::Patched),
            // Unreachable in practice (a patch of plain JSON values always serializes); allow
            // unpatched rather than block the write: the controller applies the same defaults.
            Err(e) => (
                with_warnings(response, vec![format!("defaults not applied: {e}")]),
                Outcome::Allowed,
            ),
        },
        // The schema check that follows mutation will report the bad field precisely; a denial
        // from here would only say it less well.
        Err(e) => (
            with_warnings(
                response,
                vec![format!("spec could not be read, defaults not applied: {e}")],
            ),
            Outcome::Allowed,
        ),
    }
}

/// The patch that adds the missing defaults to `spec` (absent `spec`: one op adding all of them).
fn default_patch(spec: Option<&Value>) -> Result<Option<Patch>, ObjectError> {
    let existing = spec.filter(|s| !s.is_null());
    let parsed: RedisSpec = match existing {
        // serde would read a struct from an array too; a patch into an array would then fail.
        Some(s) if !s.is_object() => return Err(ObjectError::SpecNotAnObject),
        Some(s) => RedisSpec::deserialize(s)?,
        None => RedisSpec::default(),
    };
    let missing = parsed.missing_defaults();
    if missing.is_empty() {
        return Ok(None);
    }
    let ops = match existing {
        Some(_) => missing
            .into_iter()
            .map(|FieldDefault { field, value }| add(&["spec", field], value))
            .collect(),
        None => {
            let all = missing
                .into_iter()
                .map(|d| (d.field.to_owned(), d.value))
                .collect();
            vec![add(&["spec"], Value::Object(all))]
        }
    };
    Ok(Some(Patch(ops)))
}

fn add(path: &[&str], value: Value) -> PatchOperation {
    PatchOperation::Add(AddOperation {
        path: PointerBuf::from_tokens(path.iter().copied()),
        value,
    })
}

/// `/validate`: the api crate's rules for the operation.
fn validate(
    policy: &Policy,
    request: &AdmissionRequest<DynamicObject>,
) -> (AdmissionResponse, Outcome) {
    let response = AdmissionResponse::from(request);
    let verdict = match request.operation {
        Operation::Create => match redis(request.object.as_ref()) {
            Ok(new) => policy.validate_create(&new),
            Err(e) => return undecodable(response, "object", e),
        },
        Operation::Update => match (
            redis(request.object.as_ref()),
            redis(request.old_object.as_ref()),
        ) {
            (Ok(new), Ok(old)) => policy.validate_update(&new, &old),
            (Err(e), _) => return undecodable(response, "object", e),
            (_, Err(e)) => return undecodable(response, "oldObject", e),
        },
        Operation::Delete => match redis(request.old_object.as_ref()) {
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
    decide(response, verdict, request)
}

#[derive(Debug, thiserror::Error)]
enum ObjectError {
    #[error("missing")]
    Missing,
    #[error("spec must be an object")]
    SpecNotAnObject,
    #[error("{0}")]
    Decode(#[from] serde_json::Error),
}

/// The review's object as a `Redis`; an absent `spec` reads as empty (all defaults).
fn redis(object: Option<&DynamicObject>) -> Result<Redis, ObjectError> {
    let object = object.ok_or(ObjectError::Missing)?;
    let spec = match object.data.get("spec") {
        None | Some(Value::Null) => RedisSpec::default(),
        Some(s) if !s.is_object() => return Err(ObjectError::SpecNotAnObject),
        Some(s) => RedisSpec::deserialize(s)?,
    };
    Ok(Redis {
        metadata: object.metadata.clone(),
        spec,
        status: None,
    })
}

fn undecodable(
    response: AdmissionResponse,
    which: &str,
    e: ObjectError,
) -> (AdmissionResponse, Outcome) {
    let mut denied = response.deny(format!("{which} is not a valid Redis: {e}"));
    denied.result.code = 400;
    denied.result.reason = "BadRequest".to_owned();
    (denied, Outcome::Denied)
}

/// Turn a verdict into a response: a denial lists every violation, with one `causes` entry per
/// field (422 Invalid), except deletion protection (403 Forbidden); warnings ride along.
fn decide(
    response: AdmissionResponse,
    verdict: Verdict,
    request: &AdmissionRequest<DynamicObject>,
) -> (AdmissionResponse, Outcome) {
    let response = with_warnings(response, verdict.warnings.clone());
    if verdict.allowed() {
        return (response, Outcome::Allowed);
    }
    let mut denied = response.deny(verdict.message());
    let forbidden = request.operation == Operation::Delete;
    denied.result.code = if forbidden { 403 } else { 422 };
    denied.result.reason = if forbidden { "Forbidden" } else { "Invalid" }.to_owned();
    denied.result.details = Some(StatusDetails {
        name: request.name.clone(),
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

fn with_warnings(mut response: AdmissionResponse, warnings: Vec<String>) -> AdmissionResponse {
    if !warnings.is_empty() {
        response
            .warnings
            .get_or_insert_with(Vec::new)
            .extend(warnings);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An AdmissionReview shaped as kube-apiserver sends it.
    fn review(operation: &str, object: Value, old_object: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "myapp.tangx.in", "version": "v1", "kind": "Redis"},
                "resource": {"group": "myapp.tangx.in", "version": "v1", "resource": "redis"},
                "requestKind": {"group": "myapp.tangx.in", "version": "v1", "kind": "Redis"},
                "requestResource": {"group": "myapp.tangx.in", "version": "v1", "resource": "redis"},
                "name": "my-op-redis",
                "namespace": "default",
                "operation": operation,
                "userInfo": {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
                "object": object,
                "oldObject": old_object,
                "dryRun": false,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
            }
        }))
        .expect("review encodes")
    }

    fn redis_object(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
               "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    }

    fn response(answer: &Answer) -> Value {
        serde_json::to_value(&answer.review).expect("answer encodes")["response"].clone()
    }

    fn apply_patch(answer: &Answer, mut object: Value) -> Value {
        let resp = answer.review.response.as_ref().expect("response");
        let patch: Patch =
            serde_json::from_slice(resp.patch.as_ref().expect("patch")).expect("patch decodes");
        json_patch::patch(&mut object, &patch).expect("patch applies");
        object
    }

    #[test]
    fn mutate_fills_only_missing_fields() {
        let object = redis_object("r", json!({"replicas": 3}));
        let a = answer(
            Endpoint::Mutate,
            &Policy::default(),
            &review("CREATE", object.clone(), Value::Null),
        )
        .expect("answers");
        assert_eq!(a.outcome, Outcome::Patched);
        assert_eq!(response(&a)["patchType"], "JSONPatch");
        assert_eq!(response(&a)["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        let patched = apply_patch(&a, object);
        assert_eq!(
            patched["spec"],
            json!({"replicas": 3, "image": "redis:7.2-alpine", "port": 6379, "imagePullPolicy": "IfNotPresent"})
        );
    }

    #[test]
    fn mutate_adds_a_whole_spec_when_there_is_none() {
        let mut object = redis_object("r", Value::Null);
        object.as_object_mut().expect("object").remove("spec");
        let a = answer(
            Endpoint::Mutate,
            &Policy::default(),
            &review("CREATE", object.clone(), Value::Null),
        )
        .expect("answers");
        let patched = apply_patch(&a, object);
        assert_eq!(patched["spec"]["port"], 6379);
        assert_eq!(patched["spec"]["replicas"], 1);
    }

    #[test]
    fn mutate_sends_no_patch_when_nothing_is_missing() {
        let object = redis_object(
            "r",
            json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333, "imagePullPolicy": "Always"}),
        );
        let a = answer(
            Endpoint::Mutate,
            &Policy::default(),
            &review("UPDATE", object.clone(), object),
        )
        .expect("answers");
        assert_eq!(a.outcome, Outcome::Allowed);
        assert!(response(&a).get("patch").is_none());
        assert_eq!(response(&a)["allowed"], true);
    }

    #[test]
    fn mutate_allows_unreadable_spec_with_a_warning_and_no_patch() {
        let object = redis_object("r", json!({"port": "not-a-number"}));
        let a = answer(
            Endpoint::Mutate,
            &Policy::default(),
            &review("CREATE", object, Value::Null),
        )
        .expect("answers");
        assert_eq!(response(&a)["allowed"], true);
        assert!(response(&a).get("patch").is_none());
        assert!(
            response(&a)["warnings"][0]
                .as_str()
                .unwrap_or_default()
                .contains("spec could not be read")
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

    #[test]
    fn other_kinds_are_allowed_with_a_warning() {
        let mut body: Value = serde_json::from_slice(&review(
            "CREATE",
            json!({"metadata": {"name": "p"}}),
            Value::Null,
        ))
        .expect("decodes");
        body["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "Pod"});
        let bytes = serde_json::to_vec(&body).expect("encodes");
        for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
            let a = answer(endpoint, &Policy::default(), &bytes).expect("answers");
            assert_eq!(a.outcome, Outcome::Skipped);
            assert_eq!(response(&a)["allowed"], true);
            assert!(
                response(&a)["warnings"][0]
                    .as_str()
                    .unwrap_or_default()
                    .contains("v1 Pod")
            );
        }
    }

    #[test]
    fn bad_bodies_are_bad_requests() {
        assert!(matches!(
            answer(Endpoint::Validate, &Policy::default(), b"{not json"),
            Err(BadReview::NotJson(_))
        ));
        assert!(matches!(
            answer(
                Endpoint::Validate,
                &Policy::default(),
                br#"{"kind":"Pod","apiVersion":"v1"}"#
            ),
            Err(BadReview::NotReview(_))
        ));
        assert!(matches!(
            answer(
                Endpoint::Validate,
                &Policy::default(),
                br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}"#
            ),
            Err(BadReview::MissingRequest)
        ));
        let no_uid = br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"operation":"CREATE"}}"#;
        assert!(matches!(
            answer(Endpoint::Mutate, &Policy::default(), no_uid),
            Err(BadReview::NotReview(_))
        ));
    }

    mod never_panics {
        use super::*;
        use proptest::prelude::*;

        fn arbitrary_json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<f64>().prop_map(
                    |f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
                ),
                ".{0,12}".prop_map(Value::from),
            ];
            leaf.prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::btree_map(
                        prop_oneof![
                            Just("spec".to_owned()),
                            Just("port".to_owned()),
                            Just("metadata".to_owned()),
                            Just("name".to_owned()),
                            "[a-z]{1,8}"
                        ],
                        inner,
                        0..6
                    )
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #[test]
            fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
                for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
                    let _ = answer(endpoint, &Policy::default(), &bytes);
                }
            }

            #[test]
            fn arbitrary_objects_in_a_real_review_never_panic(
                object in arbitrary_json(),
                old in arbitrary_json(),
                op in prop_oneof![Just("CREATE"), Just("UPDATE"), Just("DELETE"), Just("CONNECT")],
            ) {
                let body = review(op, object, old);
                for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
                    let _ = answer(endpoint, &Policy::default(), &body);
                }
            }

            #[test]
            fn arbitrary_specs_never_panic_and_patches_apply(spec in arbitrary_json()) {
                let object = redis_object("r", spec);
                let body = review("CREATE", object.clone(), Value::Null);
                let a = answer(Endpoint::Mutate, &Policy::default(), &body);
                prop_assert!(a.is_ok());
                if let Ok(a) = a {
                    if let Some(patch) = a.review.response.as_ref().and_then(|r| r.patch.as_ref()) {
                        let patch: Patch = serde_json::from_slice(patch).map_err(|e| TestCaseError::fail(e.to_string()))?;
                        let mut target = object;
                        prop_assert!(json_patch::patch(&mut target, &patch).is_ok());
                    }
                    let _ = answer(Endpoint::Validate, &Policy::default(), &body);
                }
            }
        }
    }
}
