//! Decode an AdmissionReview and decide it: the pure core of the webhook (DESIGN §2).
//! No I/O here, so every path, including garbage input, is unit- and property-tested.
//!
//! This file holds the endpoints ([`answer`] for an [`Endpoint`]) and the [`Answer`] they build;
//! the rest is one job per file:
//! - `read`: the typed and the loose reading of a request,
//! - `skim`: the typed reading's checks of what no decision reads, which build nothing,
//! - `mutate`: `/mutate`, the patch of missing defaults,
//! - `validate`: `/validate`, the decisions of the admission rules,
//! - `wire`: the answer's JSON as sent, with a base64 patch.

use api::Policy;
use api::validation::shown;
use kube::core::admission::{AdmissionResponse, Operation};
#[cfg(test)]
use kube::core::{DynamicObject, admission::AdmissionReview};

mod mutate;
mod read;
mod skim;
mod validate;
mod wire;

use mutate::{SerializedPatch, mutate};
pub use read::BadReview;
use read::{Gvk, Gvr, Review, read, read_typed};
use std::borrow::Cow;
use std::sync::Arc;
use validate::{validate, validate_scale};

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
    /// kube's response, with the review's types; sent as [`Answer::to_json`] writes it.
    pub response: AdmissionResponse,
    pub operation: Operation,
    pub outcome: Outcome,
    namespace: Option<String>,
    name: String,
    /// The patch of `review`, serialized once for every review that needs the same (mutate).
    patch: Option<Arc<SerializedPatch>>,
}

impl Answer {
    /// The answer as kube's AdmissionReview (tests compare the wire form with it).
    #[cfg(test)]
    pub(crate) fn to_review(&self) -> AdmissionReview<DynamicObject> {
        self.response.clone().into_review()
    }

    /// `namespace/name` of the object, for logs: as the request names it, so cut and escaped
    /// (anyone who reaches the port can send any name).
    pub fn subject(&self) -> String {
        format!(
            "{}/{}",
            shown(self.namespace.as_deref().unwrap_or_default()),
            shown(&self.name)
        )
    }
}

/// An answer and its wire form, as the server sends it.
#[derive(Debug)]
pub struct Responded {
    pub answer: Answer,
    /// The JSON body of the HTTP response ([`Answer::to_json`]).
    pub body: Result<Vec<u8>, serde_json::Error>,
}

/// What the server does with a request body: [`answer`] it and write the answer's wire form.
pub fn respond(endpoint: Endpoint, policy: &Policy, body: &[u8]) -> Result<Responded, BadReview> {
    Ok(Responded::from(answer(endpoint, policy, body)?))
}

/// [`respond`] when the typed reading takes the body, as it takes every review the API server
/// sends of a Redis that decodes; `None` leaves the body to the loose reading, which explains
/// what is wrong but builds the whole object as a tree: for some bodies 35 times their size.
pub fn respond_typed(endpoint: Endpoint, policy: &Policy, body: &[u8]) -> Option<Responded> {
    read_typed(body).map(|review| Responded::from(judge(endpoint, policy, review)))
}

impl From<Answer> for Responded {
    fn from(answer: Answer) -> Self {
        let body = answer.to_json();
        Responded { answer, body }
    }
}

/// Decode `body` as an AdmissionReview and answer it for `endpoint` under `policy`.
pub fn answer(endpoint: Endpoint, policy: &Policy, body: &[u8]) -> Result<Answer, BadReview> {
    Ok(judge(endpoint, policy, read(body)?))
}

fn judge(endpoint: Endpoint, policy: &Policy, review: Review) -> Answer {
    let Review {
        response,
        kind,
        resource,
        sub_resource,
        operation,
        name,
        namespace,
        object,
        old_object,
    } = review;
    let mut patch = None;
    let (response, outcome) = match Subject::of(&kind, &resource, sub_resource.as_deref()) {
        Subject::Other => {
            let warning = format!(
                "redis-webhook only judges {}/Redis and its scale subresource; it was sent {}/{} {}: check the webhook configuration's rules",
                api::GROUP,
                shown(&kind.group),
                shown(&kind.version),
                shown(&kind.kind)
            );
            (with_warnings(response, vec![warning]), Outcome::Skipped)
        }
        Subject::Redis => match endpoint {
            Endpoint::Mutate => {
                let (response, outcome, serialized) = mutate(response, &operation, &object);
                patch = serialized;
                (response, outcome)
            }
            Endpoint::Validate => validate(policy, response, &operation, &name, object, old_object),
        },
        // A Scale has no defaults to fill.
        Subject::RedisScale => match endpoint {
            Endpoint::Mutate => (response, Outcome::Skipped),
            Endpoint::Validate => {
                validate_scale(policy, response, &operation, &name, object, old_object)
            }
        },
    };
    Answer {
        response,
        operation,
        outcome,
        namespace: namespace.map(Cow::into_owned),
        name: name.into_owned(),
        patch,
    }
}

/// What a review is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    /// A Redis itself.
    Redis,
    /// The `redis/scale` subresource: an autoscaling/v1 Scale (`kubectl scale`, an HPA).
    RedisScale,
    /// Anything else: the webhook configuration sends what it should not.
    Other,
}

impl Subject {
    fn of(kind: &Gvk, resource: &Gvr, sub: Option<&str>) -> Self {
        let redis_resource = resource.group == api::GROUP && resource.resource == "redis";
        if kind.group == api::GROUP && kind.kind == "Redis" {
            Subject::Redis
        } else if redis_resource
            && sub == Some("scale")
            && kind.group == "autoscaling"
            && kind.kind == "Scale"
        {
            Subject::RedisScale
        } else {
            Subject::Other
        }
    }
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

/// Test helpers shared by the tests of every file of this module.
#[cfg(test)]
mod fixtures {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// An AdmissionReview shaped as kube-apiserver sends it.
    pub(super) fn review(operation: &str, object: Value, old_object: Value) -> Vec<u8> {
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

    pub(super) fn redis_object(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
               "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    }

    pub(super) fn response(answer: &Answer) -> Value {
        serde_json::to_value(answer.to_review()).expect("answer encodes")["response"].clone()
    }

    pub(super) fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
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
                        Just("replicas".to_owned()),
                        Just("image".to_owned()),
                        Just("imagePullPolicy".to_owned()),
                        Just("annotations".to_owned()),
                        Just("mode".to_owned()),
                        Just("replication".to_owned()),
                        Just("failoverAfter".to_owned()),
                        Just("auth".to_owned()),
                        Just("secretRef".to_owned()),
                        Just("key".to_owned()),
                        Just("podDisruptionBudget".to_owned()),
                        Just("maxUnavailable".to_owned()),
                        "[a-z]{1,8}"
                    ],
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use serde_json::{Value, json};

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

    /// A tenant's string with a newline and an ANSI escape, longer than any message should be.
    fn hostile() -> String {
        format!("evil\n\x1b[31m{}", "a".repeat(64 * 1024))
    }

    /// What is echoed to a client or a log: short, and no control character raw.
    fn assert_echoed_safely(what: &str, text: &str) {
        assert!(
            text.len() <= 2048,
            "{what}: {} bytes: {:?}",
            text.len(),
            text.chars().take(300).collect::<String>()
        );
        assert!(
            !text.chars().any(char::is_control),
            "{what}: a control character is echoed raw: {:?}",
            text.chars().take(300).collect::<String>()
        );
    }

    fn echoed_texts(answer: &Answer) -> Vec<String> {
        let response = response(answer);
        let mut texts = vec![answer.subject()];
        texts.extend(response["status"]["message"].as_str().map(str::to_owned));
        for warning in response["warnings"].as_array().into_iter().flatten() {
            texts.extend(warning.as_str().map(str::to_owned));
        }
        texts
    }

    #[test]
    fn a_tenants_strings_are_echoed_cut_and_escaped() {
        let hostile = hostile();
        let mut body: Value = serde_json::from_slice(&review(
            "CREATE",
            // Not a variant: the spec cannot be read, and serde's error quotes the value.
            redis_object("r", json!({"imagePullPolicy": hostile})),
            Value::Null,
        ))
        .expect("decodes");
        body["request"]["name"] = json!(hostile);
        body["request"]["namespace"] = json!(hostile);
        let unreadable_spec = serde_json::to_vec(&body).expect("encodes");
        body["request"]["kind"] = json!({"group": hostile, "version": hostile, "kind": hostile});
        let other_kind = serde_json::to_vec(&body).expect("encodes");
        for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
            for bytes in [&unreadable_spec, &other_kind] {
                let a = answer(endpoint, &Policy::default(), bytes).expect("answers");
                let texts = echoed_texts(&a);
                assert!(texts.len() >= 2, "{texts:?}");
                for text in texts {
                    assert_echoed_safely(endpoint.as_str(), &text);
                }
            }
        }
        // Bodies that are no review: the 400's message, which the server also logs.
        body["request"]["operation"] = json!(hostile);
        let bad_operation = serde_json::to_vec(&body).expect("encodes");
        body["apiVersion"] = json!(hostile);
        let bad_api_version = serde_json::to_vec(&body).expect("encodes");
        for bytes in [bad_operation, bad_api_version] {
            let bad =
                answer(Endpoint::Validate, &Policy::default(), &bytes).expect_err("not a review");
            assert_echoed_safely("bad review", &bad.to_string());
        }
    }

    mod never_panics {
        use super::*;
        use proptest::prelude::*;

        proptest! {
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
        }
    }
}
