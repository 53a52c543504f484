//! Decode an AdmissionReview and decide it: the pure core of the webhook (DESIGN §2).
//! No I/O here, so every path, including garbage input, is unit- and property-tested.
//!
//! Reading takes one typed pass in the usual case ([`ReviewedRedis`]); only a body that pass
//! cannot read is decoded again, loosely, to say precisely what is wrong with it.

use api::defaults::FieldDefault;
use api::{Policy, Redis, RedisSpec, Verdict};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::response::{Status, StatusCause, StatusDetails};
use kube::core::{DynamicObject, GroupVersionKind, GroupVersionResource, TypeMeta};
use serde::de::{Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

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
    namespace: Option<String>,
    name: String,
}

impl Answer {
    /// The answer as sent: kube's AdmissionReview, except that `patch` is base64, as the API
    /// documents a Go `[]byte` in JSON. kube serializes its `Vec<u8>` as an array of numbers
    /// (kube-rs/kube#1781): kube-apiserver reads that too, but it is three to four times the
    /// size, and writing it was most of what made `/mutate` slower than `/validate`.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let Some(response) = &self.review.response else {
            return serde_json::to_vec(&self.review);
        };
        serde_json::to_vec(&WireReview {
            api_version: &self.review.types.api_version,
            kind: &self.review.types.kind,
            response: WireResponse {
                uid: &response.uid,
                allowed: response.allowed,
                status: &response.result,
                patch: response.patch.as_ref().map(|p| BASE64.encode(p)),
                // kube sets the type with the patch, and JSONPatch is the only one there is.
                patch_type: response.patch.as_ref().map(|_| "JSONPatch"),
                audit_annotations: &response.audit_annotations,
                warnings: response.warnings.as_ref(),
            },
        })
    }

    /// `namespace/name` of the object, for logs.
    pub fn subject(&self) -> String {
        format!(
            "{}/{}",
            self.namespace.as_deref().unwrap_or_default(),
            self.name
        )
    }
}

/// [`Answer::to_json`]'s wire form: kube's `AdmissionReview` with a base64 `patch`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireReview<'a> {
    api_version: &'a str,
    kind: &'a str,
    response: WireResponse<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse<'a> {
    uid: &'a str,
    allowed: bool,
    status: &'a Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    audit_annotations: &'a HashMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<&'a Vec<String>>,
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
    let (response, outcome) = match Subject::of(&kind, &resource, sub_resource.as_deref()) {
        Subject::Other => {
            let warning = format!(
                "redis-webhook only judges {}/Redis and its scale subresource; it was sent {}/{} {}: check the webhook configuration's rules",
                api::GROUP,
                kind.group,
                kind.version,
                kind.kind
            );
            (with_warnings(response, vec![warning]), Outcome::Skipped)
        }
        Subject::Redis => match endpoint {
            Endpoint::Mutate => mutate(response, &operation, &object),
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
        review: response.into_review(),
        operation,
        outcome,
        namespace,
        name,
    }
}

/// The object under review as the rules read it: its metadata and its spec, decoded straight
/// from the body. (kube's `DynamicObject`, like `AdmissionReview` itself, flattens fields, so
/// serde first buffers the input into an intermediate tree; that was half a review's cost.)
#[derive(Debug)]
struct ReviewedRedis {
    metadata: ObjectMeta,
    /// `None` when absent or null: every field takes its default.
    spec: Option<RedisSpec>,
}

impl ReviewedRedis {
    fn into_redis(self) -> Redis {
        Redis {
            metadata: self.metadata,
            spec: self.spec.unwrap_or_default(),
            status: None,
        }
    }
}

impl<'de> Deserialize<'de> for ReviewedRedis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Fields {
            #[serde(default)]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<JsonObject<RedisSpec>>,
        }
        let JsonObject(Fields { metadata, spec }) = JsonObject::deserialize(d)?;
        Ok(ReviewedRedis {
            metadata,
            spec: spec.map(|JsonObject(spec)| spec),
        })
    }
}

/// `T` read only from a JSON object. serde's derived structs also read arrays, as positional
/// fields; Kubernetes objects and specs are never arrays, and a patch adding fields to one
/// could not apply.
struct JsonObject<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for JsonObject<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectOnly<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOnly<T> {
            type Value = JsonObject<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<JsonObject<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(JsonObject)
            }
        }
        d.deserialize_map(ObjectOnly(PhantomData))
    }
}

/// kube's `AdmissionRequest` needs its object type to be a `Resource`: this is the Redis one.
impl Resource for ReviewedRedis {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        Redis::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        Redis::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        Redis::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        Redis::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// An AdmissionReview as sent, read in one pass (see [`ReviewedRedis`] for why not kube's own).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingReview {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    request: Option<AdmissionRequest<ReviewedRedis>>,
}

/// A review ready to judge, however it was read.
struct Review {
    /// The allowing answer, echoing the request's uid; decisions start from it.
    response: AdmissionResponse,
    kind: GroupVersionKind,
    resource: GroupVersionResource,
    sub_resource: Option<String>,
    operation: Operation,
    name: String,
    namespace: Option<String>,
    object: Reading,
    old_object: Reading,
}

/// An object of the review read as a Redis, or why it could not be.
type Reading = Result<ReviewedRedis, ObjectError>;

impl Review {
    /// The review of `request`, its objects read by `reading`.
    fn new<T: Resource>(
        request: AdmissionRequest<T>,
        reading: impl Fn(Option<T>) -> Reading,
    ) -> Self {
        Review {
            response: AdmissionResponse::from(&request),
            kind: request.kind,
            resource: request.resource,
            sub_resource: request.sub_resource,
            operation: request.operation,
            name: request.name,
            namespace: request.namespace,
            object: reading(request.object),
            old_object: reading(request.old_object),
        }
    }
}

fn read(body: &[u8]) -> Result<Review, BadReview> {
    if let Ok(IncomingReview {
        api_version,
        kind,
        request: Some(mut request),
    }) = serde_json::from_slice::<IncomingReview>(body)
        && api_version == REVIEW_API_VERSION
        && kind == REVIEW_KIND
    {
        // What kube's own conversion from a review does: the answer carries the review's type.
        request.types = TypeMeta { api_version, kind };
        return Ok(Review::new(request, |object| {
            object.ok_or(ObjectError::Missing)
        }));
    }
    diagnose(body).map(|request| Review::new(request, reviewed))
}

/// The loose reading, for bodies the typed pass refused: an object that is not a valid Redis
/// still gets a decision that says why; anything worse is a bad request that says what is wrong.
fn diagnose(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, BadReview> {
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
    fn of(kind: &GroupVersionKind, resource: &GroupVersionResource, sub: Option<&str>) -> Self {
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

/// `/mutate`: a JSONPatch adding only the missing defaults; no patch when nothing is missing.
fn mutate(
    response: AdmissionResponse,
    operation: &Operation,
    object: &Reading,
) -> (AdmissionResponse, Outcome) {
    let (Operation::Create | Operation::Update) = operation else {
        return (response, Outcome::Skipped);
    };
    let object = match object {
        Ok(object) => object,
        Err(ObjectError::Missing) => return (response, Outcome::Skipped),
        // The schema check that follows mutation will report the bad field precisely; a denial
        // from here would only say it less well.
        Err(e) => {
            let warning = format!("spec could not be read, defaults not applied: {e}");
            return (with_warnings(response, vec![warning]), Outcome::Allowed);
        }
    };
    match default_patch(object.spec.as_ref()) {
        None => (response, Outcome::Allowed),
        Some(patch) => match response.clone().with_patch(patch) {
            Ok(patched) => (patched, Outcome::Patched),
            // Unreachable in practice (a patch of plain JSON values always serializes); allow
            // unpatched rather than block the write: the controller applies the same defaults.
            Err(e) => (
                with_warnings(response, vec![format!("defaults not applied: {e}")]),
                Outcome::Allowed,
            ),
        },
    }
}

/// The patch that adds the missing defaults to `spec`, one `add` per missing field at its path
/// (nested fields such as `/spec/replication/failoverAfter` included: the api crate lists a
/// field only under parents that exist); no spec: one op adding all of them as one object.
fn default_patch(spec: Option<&RedisSpec>) -> Option<Patch> {
    let missing = match spec {
        Some(spec) => spec.missing_defaults(),
        None => RedisSpec::default().missing_defaults(),
    };
    if missing.is_empty() {
        return None;
    }
    let ops = match spec {
        Some(_) => missing
            .into_iter()
            .map(|FieldDefault { path, value }| {
                PatchOperation::Add(AddOperation {
                    path: PointerBuf::from_tokens(
                        std::iter::once("spec").chain(path.iter().copied()),
                    ),
                    value,
                })
            })
            .collect(),
        None => {
            let mut all = Value::Object(serde_json::Map::new());
            for FieldDefault { path, value } in missing {
                insert_at(&mut all, path, value);
            }
            vec![add(&["spec"], all)]
        }
    };
    Some(Patch(ops))
}

/// Puts `value` at `path` inside `object`, creating the objects on the way.
fn insert_at(object: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut here = object;
    for parent in parents {
        if !here.is_object() {
            *here = Value::Object(serde_json::Map::new());
        }
        let Value::Object(map) = here else { return };
        here = map
            .entry(*parent)
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    if !here.is_object() {
        *here = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(map) = here {
        map.insert((*last).to_owned(), value);
    }
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
    response: AdmissionResponse,
    operation: &Operation,
    name: &str,
    object: Reading,
    old_object: Reading,
) -> (AdmissionResponse, Outcome) {
    let redis = |reading: Reading| reading.map(ReviewedRedis::into_redis);
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
fn validate_scale(
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
    let verdict = policy.validate_scale(new, old_object.as_ref().ok().map(replicas));
    decide(response, verdict, operation, name)
}

#[derive(Debug, thiserror::Error)]
enum ObjectError {
    #[error("missing")]
    Missing,
    #[error("spec must be an object")]
    SpecNotAnObject,
    #[error("{0}")]
    Decode(String),
}

/// A loosely read object as a Redis; an absent or null `spec` reads as empty (all defaults).
fn reviewed(object: Option<DynamicObject>) -> Reading {
    let object = object.ok_or(ObjectError::Missing)?;
    let spec = match object.data.get("spec") {
        None | Some(Value::Null) => None,
        Some(s) if !s.is_object() => return Err(ObjectError::SpecNotAnObject),
        Some(s) => Some(RedisSpec::deserialize(s).map_err(|e| ObjectError::Decode(e.to_string()))?),
    };
    Ok(ReviewedRedis {
        metadata: object.metadata,
        spec,
    })
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
    fn the_wire_form_is_kubes_with_a_base64_patch() {
        let cases = [
            (Endpoint::Mutate, redis_object("r", json!({}))),
            (Endpoint::Mutate, redis_object("r", json!({"replicas": 3}))),
            (
                Endpoint::Validate,
                redis_object("tangx-in", json!({"port": 6000})),
            ),
            (
                Endpoint::Validate,
                redis_object("r", json!({"image": "redis"})),
            ),
        ];
        for (endpoint, object) in cases {
            let a = answer(
                endpoint,
                &Policy::default(),
                &review("CREATE", object, Value::Null),
            )
            .expect("answers");
            let mut kube = serde_json::to_value(&a.review).expect("kube's form encodes");
            if let Some(Value::Array(items)) = kube["response"].get("patch") {
                let bytes: Vec<u8> = items
                    .iter()
                    .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect();
                kube["response"]["patch"] = Value::String(BASE64.encode(bytes));
            }
            let wire: Value =
                serde_json::from_slice(&a.to_json().expect("wire form encodes")).expect("JSON");
            assert_eq!(wire, kube, "{endpoint:?}");
        }
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

    /// The patch's operations as `(path, value)`.
    fn patch_ops(answer: &Answer) -> Vec<(String, Value)> {
        let resp = answer.review.response.as_ref().expect("response");
        let patch: Patch =
            serde_json::from_slice(resp.patch.as_ref().expect("patch")).expect("patch decodes");
        patch
            .0
            .into_iter()
            .map(|op| match op {
                PatchOperation::Add(AddOperation { path, value }) => (path.to_string(), value),
                other => panic!("only adds are sent: {other:?}"),
            })
            .collect()
    }

    fn mutate(object: &Value) -> Answer {
        answer(
            Endpoint::Mutate,
            &Policy::default(),
            &review("CREATE", object.clone(), Value::Null),
        )
        .expect("answers")
    }

    #[test]
    fn mutate_gives_the_tutorial_sample_exactly_the_four_fields_and_no_mode() {
        let object = redis_object(
            "my-op-redis",
            json!({"replicas": 2, "image": "redis:5-alpine", "port": 8333}),
        );
        let a = mutate(&object);
        assert_eq!(
            patch_ops(&a),
            vec![("/spec/imagePullPolicy".to_owned(), json!("IfNotPresent"))]
        );
        let empty = mutate(&redis_object("r", json!({})));
        assert_eq!(
            patch_ops(&empty)
                .into_iter()
                .map(|(p, _)| p)
                .collect::<Vec<_>>(),
            vec![
                "/spec/replicas",
                "/spec/image",
                "/spec/port",
                "/spec/imagePullPolicy"
            ]
        );
    }

    #[test]
    fn mutate_adds_the_whole_replication_object_when_it_is_absent() {
        let object = redis_object(
            "r",
            json!({"replicas": 3, "image": "redis:7", "port": 6379, "imagePullPolicy": "Always", "mode": "Replication"}),
        );
        let a = mutate(&object);
        assert_eq!(
            patch_ops(&a),
            vec![(
                "/spec/replication".to_owned(),
                json!({"minReplicasToWrite": 0, "minReplicasMaxLag": 10, "failoverAfter": "10s"})
            )]
        );
        let patched = apply_patch(&a, object.clone());
        assert_eq!(patched["spec"]["mode"], "Replication");
        assert_eq!(patched["spec"]["replication"]["failoverAfter"], "10s");
        // `replication: null` is replaced the same way.
        let mut null = object;
        null["spec"]["replication"] = Value::Null;
        let patched = apply_patch(&mutate(&null), null);
        assert_eq!(patched["spec"]["replication"]["minReplicasMaxLag"], 10);
    }

    #[test]
    fn mutate_adds_only_the_missing_replication_and_auth_keys() {
        let object = redis_object(
            "r",
            json!({
                "replicas": 3, "image": "redis:7", "port": 6379, "imagePullPolicy": "Always",
                "mode": "Replication",
                "replication": {"failoverAfter": "30s"},
                "auth": {"secretRef": {"name": "my-redis-auth"}}
            }),
        );
        let a = mutate(&object);
        assert_eq!(
            patch_ops(&a),
            vec![
                ("/spec/replication/minReplicasToWrite".to_owned(), json!(0)),
                ("/spec/replication/minReplicasMaxLag".to_owned(), json!(10)),
                ("/spec/auth/secretRef/key".to_owned(), json!("password")),
            ]
        );
        let patched = apply_patch(&a, object);
        assert_eq!(
            patched["spec"]["replication"],
            json!({"minReplicasToWrite": 0, "minReplicasMaxLag": 10, "failoverAfter": "30s"})
        );
        assert_eq!(
            patched["spec"]["auth"],
            json!({"secretRef": {"name": "my-redis-auth", "key": "password"}})
        );
        // Nothing more to add once filled.
        let filled = redis_object("r", patched["spec"].clone());
        assert!(response(&mutate(&filled)).get("patch").is_none());
    }

    #[test]
    fn mutate_leaves_standalone_replication_settings_alone() {
        let object = redis_object(
            "r",
            json!({"replicas": 1, "image": "redis:7", "port": 6379, "imagePullPolicy": "Always",
                   "replication": {"failoverAfter": "30s"}}),
        );
        let a = mutate(&object);
        assert_eq!(a.outcome, Outcome::Allowed);
        assert!(response(&a).get("patch").is_none());
        // Auth is completed in Standalone mode too.
        let object = redis_object(
            "r",
            json!({"replicas": 1, "image": "redis:7", "port": 6379, "imagePullPolicy": "Always",
                   "auth": {"secretRef": {"name": "s"}}}),
        );
        assert_eq!(
            patch_ops(&mutate(&object)),
            vec![("/spec/auth/secretRef/key".to_owned(), json!("password"))]
        );
    }

    #[test]
    fn insert_at_builds_nested_objects() {
        let mut v = json!({});
        insert_at(&mut v, &["a"], json!(1));
        insert_at(&mut v, &["b", "c", "d"], json!("x"));
        insert_at(&mut v, &["b", "e"], json!(2));
        insert_at(&mut v, &[], json!(3));
        assert_eq!(v, json!({"a": 1, "b": {"c": {"d": "x"}, "e": 2}}));
    }

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
                "spec.replication: ignored in Standalone mode (set spec.mode: Replication to use it)"
            ])
        );
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
            r["warnings"][0]
                .as_str()
                .unwrap_or_default()
                .starts_with("oldObject could not be read as a Redis"),
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

            /// The typed pass must decide exactly as the loose reading it short-cuts would.
            #[test]
            fn the_typed_pass_decides_as_the_loose_reading(
                object in prop_oneof![arbitrary_json(), arbitrary_json().prop_map(|spec| redis_object("r", spec))],
                old in prop_oneof![arbitrary_json(), arbitrary_json().prop_map(|spec| redis_object("r", spec))],
                op in prop_oneof![Just("CREATE"), Just("UPDATE"), Just("DELETE")],
            ) {
                let body = review(op, object, old);
                for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
                    let typed = answer(endpoint, &Policy::default(), &body);
                    let loose = diagnose(&body).map(|r| judge(endpoint, &Policy::default(), Review::new(r, reviewed)));
                    match (typed, loose) {
                        (Ok(typed), Ok(loose)) => {
                            prop_assert_eq!(typed.outcome, loose.outcome);
                            prop_assert_eq!(
                                serde_json::to_value(&typed.review).map_err(|e| TestCaseError::fail(e.to_string()))?,
                                serde_json::to_value(&loose.review).map_err(|e| TestCaseError::fail(e.to_string()))?
                            );
                        }
                        (Err(typed), Err(loose)) => prop_assert_eq!(typed.to_string(), loose.to_string()),
                        (typed, loose) => prop_assert!(false, "typed {:?} but loose {:?}", typed.map(|a| a.outcome), loose.map(|a| a.outcome)),
                    }
                }
            }

            /// Every combination of present and missing nested fields: the patch applies, leaves
            /// what was set, and leaves nothing to default (the spec becomes `with_defaults()`).
            #[test]
            fn nested_defaults_patch_to_the_defaulted_spec(
                mode in prop_oneof![Just(None), Just(Some("Standalone")), Just(Some("Replication"))],
                replication in prop::option::of((any::<bool>(), any::<bool>(), any::<bool>())),
                auth in prop::option::of(any::<bool>()),
                replicas in prop::option::of(0..5i32),
                whole_spec_missing in any::<bool>(),
            ) {
                let mut spec = serde_json::Map::new();
                if let Some(mode) = mode {
                    spec.insert("mode".into(), json!(mode));
                }
                if let Some(replicas) = replicas {
                    spec.insert("replicas".into(), json!(replicas));
                }
                if let Some((to_write, lag, after)) = replication {
                    let mut r = serde_json::Map::new();
                    if to_write { r.insert("minReplicasToWrite".into(), json!(2)); }
                    if lag { r.insert("minReplicasMaxLag".into(), json!(5)); }
                    if after { r.insert("failoverAfter".into(), json!("1m")); }
                    spec.insert("replication".into(), Value::Object(r));
                }
                if let Some(key) = auth {
                    let mut secret = json!({"name": "s"});
                    if key { secret["key"] = json!("pw"); }
                    spec.insert("auth".into(), json!({"secretRef": secret}));
                }
                let mut object = redis_object("r", Value::Object(spec.clone()));
                if whole_spec_missing && spec.is_empty() {
                    object.as_object_mut().map(|o| o.remove("spec"));
                }
                let expected: RedisSpec = serde_json::from_value(Value::Object(spec))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let a = answer(Endpoint::Mutate, &Policy::default(), &review("CREATE", object.clone(), Value::Null))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let patch: Patch = serde_json::from_slice(
                    a.review.response.as_ref().and_then(|r| r.patch.as_ref()).ok_or_else(|| TestCaseError::fail("no patch"))?,
                ).map_err(|e| TestCaseError::fail(e.to_string()))?;
                json_patch::patch(&mut object, &patch).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let patched: RedisSpec = serde_json::from_value(object["spec"].clone())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&patched, &expected.with_defaults());
                prop_assert!(patched.missing_defaults().is_empty());
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
