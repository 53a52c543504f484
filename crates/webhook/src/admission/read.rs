//! Reading a request body: one typed pass in the usual case ([`ReviewedRedis`]); only a body
//! that pass cannot read is decoded again, loosely, to say precisely what is wrong with it.

use super::skim::{self, K8s, Meta};
use api::validation::shown;
use api::{DELETION_PROTECTION_ANNOTATION, Redis, RedisSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::{DynamicObject, GroupVersionKind, GroupVersionResource, TypeMeta};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
const REVIEW_KIND: &str = "AdmissionReview";

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

/// The object under review as the rules read it: the metadata they read and the spec, decoded
/// straight from the body. (kube's `DynamicObject`, like `AdmissionReview` itself, flattens
/// fields, so serde first buffers the input into an intermediate tree; that was half a
/// review's cost. The rest of the metadata, managedFields above all, is only skimmed.)
#[derive(Debug)]
pub(super) struct ReviewedRedis {
    metadata: Meta,
    /// `None` when absent or null: every field takes its default.
    pub(super) spec: Option<RedisSpec>,
}

impl ReviewedRedis {
    pub(super) fn into_redis(self) -> Redis {
        let Meta {
            name,
            generate_name,
            deletion_protection,
        } = self.metadata;
        Redis {
            metadata: ObjectMeta {
                name,
                generate_name,
                annotations: deletion_protection.map(|value| {
                    BTreeMap::from([(DELETION_PROTECTION_ANNOTATION.to_owned(), value)])
                }),
                ..ObjectMeta::default()
            },
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
            metadata: K8s<Meta>,
            #[serde(default)]
            spec: Option<JsonObject<RedisSpec>>,
        }
        let JsonObject(Fields { metadata, spec }) = JsonObject::deserialize(d)?;
        Ok(ReviewedRedis {
            metadata: metadata.0,
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

/// An AdmissionReview as sent, read in one pass (see [`ReviewedRedis`] for why not kube's own).
/// Strings are borrowed from the body where no escape forces a copy: a review is short-lived.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingReview<'a> {
    #[serde(default, borrow)]
    api_version: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    request: Option<IncomingRequest<'a>>,
}

/// kube's `AdmissionRequest`, field for field, keeping only what a decision or the answer
/// reads; the rest is skimmed (see `skim`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // The skimmed fields are read only to be checked.
struct IncomingRequest<'a> {
    #[serde(borrow)]
    uid: Cow<'a, str>,
    #[serde(borrow)]
    kind: Gvk<'a>,
    #[serde(borrow)]
    resource: Gvr<'a>,
    #[serde(default, borrow)]
    sub_resource: Option<Cow<'a, str>>,
    #[serde(default)]
    request_kind: Option<skim::Gvk>,
    #[serde(default)]
    request_resource: Option<skim::Gvr>,
    #[serde(default)]
    request_sub_resource: Option<skim::Str>,
    #[serde(default, borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    namespace: Option<Cow<'a, str>>,
    operation: Operation,
    user_info: K8s<skim::UserInfo>,
    // Boxed, as in `Reading`: the request is moved whole several times while it is read.
    object: Option<Box<ReviewedRedis>>,
    old_object: Option<Box<ReviewedRedis>>,
    #[serde(default)]
    dry_run: bool,
    /// kube's `RawExtension`: any JSON.
    #[serde(default)]
    options: Option<skim::Json>,
}

/// kube's `GroupVersionKind`, field for field, borrowed from the body.
#[derive(Debug, Deserialize)]
pub(super) struct Gvk<'a> {
    #[serde(borrow)]
    pub(super) group: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) version: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) kind: Cow<'a, str>,
}

/// kube's `GroupVersionResource`, field for field, borrowed from the body.
#[derive(Deserialize)]
#[allow(dead_code)] // `api_version` is read only to be checked.
pub(super) struct Gvr<'a> {
    #[serde(borrow)]
    pub(super) group: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) version: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) resource: Cow<'a, str>,
    #[serde(default)]
    api_version: skim::Str,
}

/// A review ready to judge, however it was read.
pub(super) struct Review<'a> {
    /// The allowing answer, echoing the request's uid; decisions start from it.
    pub(super) response: AdmissionResponse,
    pub(super) kind: Gvk<'a>,
    pub(super) resource: Gvr<'a>,
    pub(super) sub_resource: Option<Cow<'a, str>>,
    pub(super) operation: Operation,
    pub(super) name: Cow<'a, str>,
    pub(super) namespace: Option<Cow<'a, str>>,
    pub(super) object: Reading,
    pub(super) old_object: Reading,
}

/// An object of the review read as a Redis, or why it could not be. Boxed: a review is moved
/// from reading to judging, and copying two objects with it was a tenth of a review's cost.
pub(super) type Reading = Result<Box<ReviewedRedis>, ObjectError>;

impl<'a> Review<'a> {
    /// The review of `request`, its objects read by `reading`.
    fn new<T: Resource>(
        request: AdmissionRequest<T>,
        reading: impl Fn(Option<T>) -> Reading,
    ) -> Self {
        let response = AdmissionResponse::from(&request);
        let GroupVersionKind {
            group,
            version,
            kind,
        } = request.kind;
        let GroupVersionResource {
            group: resource_group,
            version: resource_version,
            resource,
            ..
        } = request.resource;
        Review {
            response,
            kind: Gvk {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
            },
            resource: Gvr {
                group: resource_group.into(),
                version: resource_version.into(),
                resource: resource.into(),
                api_version: skim::Str,
            },
            sub_resource: request.sub_resource.map(Cow::Owned),
            operation: request.operation,
            name: request.name.into(),
            namespace: request.namespace.map(Cow::Owned),
            object: reading(request.object),
            old_object: reading(request.old_object),
        }
    }

    /// The review of a request read by the typed pass, answered with the review's `types`.
    fn typed(types: TypeMeta, request: IncomingRequest<'a>) -> Self {
        // kube's own response to a request: an allowing one, with the request's uid and types.
        let mut response = AdmissionResponse::from(&AdmissionRequest::<DynamicObject> {
            types: TypeMeta::default(),
            uid: String::new(),
            kind: GroupVersionKind::gvk("", "", ""),
            resource: GroupVersionResource::gvr("", "", ""),
            sub_resource: None,
            request_kind: None,
            request_resource: None,
            request_sub_resource: None,
            name: String::new(),
            namespace: None,
            operation: Operation::Create,
            user_info: Default::default(),
            object: None,
            old_object: None,
            dry_run: false,
            options: None,
        });
        response.types = types;
        response.uid = request.uid.into_owned();
        Review {
            response,
            kind: request.kind,
            resource: request.resource,
            sub_resource: request.sub_resource,
            operation: request.operation,
            name: request.name,
            namespace: request.namespace,
            object: request.object.ok_or(ObjectError::Missing),
            old_object: request.old_object.ok_or(ObjectError::Missing),
        }
    }
}

pub(super) fn read(body: &[u8]) -> Result<Review<'_>, BadReview> {
    match read_typed(body) {
        Some(review) => Ok(review),
        None => diagnose(body).map(|request| Review::new(request, reviewed)),
    }
}

/// The typed reading alone: borrows from the body and builds nothing it does not need.
pub(super) fn read_typed(body: &[u8]) -> Option<Review<'_>> {
    // UTF-8 checked once for the whole body, rather than string by string: a body that is not
    // UTF-8 is not JSON, and the loose reading says so.
    if let Ok(text) = std::str::from_utf8(body)
        && let Ok(IncomingReview {
            api_version,
            kind,
            request: Some(request),
        }) = serde_json::from_str::<IncomingReview>(text)
        && api_version == REVIEW_API_VERSION
        && kind == REVIEW_KIND
    {
        // What kube's own conversion from a review does: the answer carries the review's type.
        return Some(Review::typed(
            TypeMeta {
                api_version: api_version.into_owned(),
                kind: kind.into_owned(),
            },
            request,
        ));
    }
    None
}

/// The loose reading, for bodies the typed pass refused: an object that is not a valid Redis
/// still gets a decision that says why; anything worse is a bad request that says what is wrong.
fn diagnose(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, BadReview> {
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(typed) => {
            let value: Value = serde_json::from_slice(body).map_err(BadReview::NotJson)?;
            check_type(value.get("apiVersion"), value.get("kind"))?;
            // serde's errors quote what they could not read (an unknown variant, a string).
            return Err(BadReview::NotReview(shown(&typed.to_string())));
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
            .map_or_else(|| "missing".to_owned(), |v| shown(&v.to_string()))
    };
    Err(BadReview::NotReview(format!(
        "apiVersion is {}, kind is {}",
        show(api_version),
        show(kind)
    )))
}

#[derive(Debug, thiserror::Error)]
pub(super) enum ObjectError {
    #[error("missing")]
    Missing,
    #[error("spec must be an object")]
    SpecNotAnObject,
    /// serde's error, through [`shown`]: it quotes the tenant's value it could not read.
    #[error("{0}")]
    Decode(String),
}

/// A loosely read object as a Redis; an absent or null `spec` reads as empty (all defaults).
fn reviewed(object: Option<DynamicObject>) -> Reading {
    let object = object.ok_or(ObjectError::Missing)?;
    let spec = match object.data.get("spec") {
        None | Some(Value::Null) => None,
        Some(s) if !s.is_object() => return Err(ObjectError::SpecNotAnObject),
        Some(s) => Some(
            RedisSpec::deserialize(s).map_err(|e| ObjectError::Decode(shown(&e.to_string())))?,
        ),
    };
    let ObjectMeta {
        name,
        generate_name,
        annotations,
        ..
    } = object.metadata;
    Ok(Box::new(ReviewedRedis {
        metadata: Meta {
            name,
            generate_name,
            deletion_protection: annotations
                .and_then(|mut a| a.remove(DELETION_PROTECTION_ANNOTATION)),
        },
        spec,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Endpoint, answer, judge};
    use super::*;
    use api::Policy;
    use serde_json::json;

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

        proptest! {
            #[test]
            fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
                for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
                    let _ = answer(endpoint, &Policy::default(), &bytes);
                }
            }

            /// The typed pass must decide exactly as the loose reading it short-cuts would.
            #[test]
            fn the_typed_pass_decides_as_the_loose_reading(
                object in prop_oneof![arbitrary_json(), arbitrary_json().prop_map(|spec| redis_object("r", spec))],
                old in prop_oneof![arbitrary_json(), arbitrary_json().prop_map(|spec| redis_object("r", spec))],
                op in prop_oneof![Just("CREATE"), Just("UPDATE"), Just("DELETE")],
            ) {
                decides_as_the_loose_reading(&review(op, object, old))?;
            }

            /// The skimmed parts (see `skim`): whatever they hold, the typed pass answers only
            /// what the loose reading, which builds them, would answer.
            #[test]
            fn skimmed_metadata_and_request_fields_are_checked_as_kube_reads_them(
                metadata in skimmed_metadata(),
                old_metadata in skimmed_metadata(),
                request in prop::collection::btree_map(
                    prop_oneof![Just("userInfo"), Just("options"), Just("requestKind"), Just("requestResource"),
                                Just("requestSubResource"), Just("dryRun")],
                    prop_oneof![
                        arbitrary_json(),
                        Just(json!({"username": "u", "groups": ["g"], "extra": {"k": ["v"]}})),
                        Just(json!({"extra": {"k": "v"}})),
                        Just(json!({"group": "g", "version": "v", "kind": "k"})),
                        Just(json!({"group": "g", "version": "v", "resource": "r", "api_version": 1})),
                        Just(json!(["g", "v", "k"])),
                    ],
                    0..4,
                ),
                op in prop_oneof![Just("CREATE"), Just("UPDATE"), Just("DELETE")],
            ) {
                let object = |metadata: Value| json!({"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
                                                       "metadata": metadata, "spec": {"port": 6379}});
                let mut body: Value = serde_json::from_slice(&review(op, object(metadata), object(old_metadata)))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                for (key, value) in request {
                    body["request"][key] = value;
                }
                decides_as_the_loose_reading(&serde_json::to_vec(&body).map_err(|e| TestCaseError::fail(e.to_string()))?)?;
            }
        }

        /// Metadata with ObjectMeta's keys holding values of the right shape and of others.
        fn skimmed_metadata() -> impl Strategy<Value = Value> {
            let time = prop_oneof![
                Just(json!("2026-11-20T09:14:07Z")),
                Just(json!("yesterday")),
                Just(json!(5))
            ];
            let entry = prop::collection::btree_map(
                prop_oneof![
                    Just("manager"),
                    Just("operation"),
                    Just("apiVersion"),
                    Just("time"),
                    Just("fieldsType"),
                    Just("fieldsV1"),
                    Just("subresource"),
                    Just("other")
                ],
                prop_oneof![
                    arbitrary_json(),
                    time.clone(),
                    Just(json!({"f:spec": {".": {}}}))
                ],
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
            let strings = prop::collection::btree_map(
                "[a-z./-]{0,6}",
                prop_oneof![Just(json!("v")), arbitrary_json()],
                0..3,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect()));
            prop::collection::btree_map(
                prop_oneof![
                    Just("name"),
                    Just("generateName"),
                    Just("namespace"),
                    Just("annotations"),
                    Just("labels"),
                    Just("managedFields"),
                    Just("finalizers"),
                    Just("creationTimestamp"),
                    Just("deletionTimestamp"),
                    Just("generation"),
                    Just("deletionGracePeriodSeconds"),
                    Just("ownerReferences"),
                    Just("uid"),
                    Just("resourceVersion"),
                    Just("selfLink"),
                    Just("x")
                ],
                prop_oneof![
                    arbitrary_json(),
                    Just(json!("r")),
                    Just(json!({"myapp.tangx.in/deletion-protection": "true"})),
                    strings,
                    prop::collection::vec(entry, 0..3).prop_map(Value::Array),
                    time,
                    Just(json!([{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u"}])),
                    Just(json!([{"apiVersion": "v1", "kind": "K", "name": "n"}])),
                ],
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
        }
    }

    /// The typed pass and the loose reading answer `body` alike, on both endpoints.
    fn decides_as_the_loose_reading(
        body: &[u8],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::prelude::*;
        for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
            let typed = answer(endpoint, &Policy::default(), body);
            let loose = diagnose(body)
                .map(|r| judge(endpoint, &Policy::default(), Review::new(r, reviewed)));
            match (typed, loose) {
                (Ok(typed), Ok(loose)) => {
                    prop_assert_eq!(typed.outcome, loose.outcome);
                    prop_assert_eq!(
                        serde_json::to_value(typed.to_review())
                            .map_err(|e| TestCaseError::fail(e.to_string()))?,
                        serde_json::to_value(loose.to_review())
                            .map_err(|e| TestCaseError::fail(e.to_string()))?
                    );
                }
                (Err(typed), Err(loose)) => prop_assert_eq!(typed.to_string(), loose.to_string()),
                (typed, loose) => prop_assert!(
                    false,
                    "typed {:?} but loose {:?}",
                    typed.map(|a| a.outcome),
                    loose.map(|a| a.outcome)
                ),
            }
        }
        Ok(())
    }

    #[test]
    fn what_the_loose_reading_refuses_the_typed_pass_does_not_answer() {
        let cases = [
            // A number serde_json cannot read as an f64, where kube keeps a `Value`.
            (
                json!({"metadata": {"managedFields": [{"fieldsV1": {"f:spec": 0}}]}}),
                "1e400",
            ),
            (json!({"metadata": {"labels": {"a": 1}}}), ""),
            (json!({"metadata": {"annotations": {"a": 1}}}), ""),
            (
                json!({"metadata": {"annotations": {"a": [], "b": "c"}}}),
                "",
            ),
            // Half a surrogate pair: valid JSON syntax, but no string.
            (json!({"metadata": {"annotations": {"a": "LONE"}}}), ""),
            (
                json!({"metadata": {"annotations": {"myapp.tangx.in/deletion-protection": 1}}}),
                "",
            ),
            (
                json!({"metadata": {"managedFields": [{"time": "yesterday"}]}}),
                "",
            ),
            (json!({"metadata": null}), ""),
        ];
        for (patch, replace) in cases {
            let mut object = redis_object("r", json!({}));
            for (k, v) in patch.as_object().into_iter().flatten() {
                object[k] = match (object.get(k), v) {
                    (Some(Value::Object(a)), Value::Object(b)) => {
                        Value::Object(a.clone().into_iter().chain(b.clone()).collect())
                    }
                    _ => v.clone(),
                };
            }
            let mut body = String::from_utf8(review("DELETE", Value::Null, object)).expect("UTF-8");
            body = body.replace("LONE", "\\ud800");
            if !replace.is_empty() {
                body = body.replace(r#"{"f:spec":0}"#, &format!(r#"{{"f:spec":{replace}}}"#));
            }
            assert!(diagnose(body.as_bytes()).is_err(), "{body}");
            decides_as_the_loose_reading(body.as_bytes()).expect("alike");
        }
        let mut body: Value =
            serde_json::from_slice(&review("CREATE", redis_object("r", json!({})), Value::Null))
                .expect("decodes");
        body["request"]["userInfo"] = json!({"groups": "g"});
        let bytes = serde_json::to_vec(&body).expect("encodes");
        assert!(diagnose(&bytes).is_err());
        decides_as_the_loose_reading(&bytes).expect("alike");
        let text = String::from_utf8(review("CREATE", redis_object("r", json!({})), Value::Null))
            .expect("UTF-8")
            .replace(r#""options":{"#, r#""options":{"x":1e400,"#);
        assert!(diagnose(text.as_bytes()).is_err());
        decides_as_the_loose_reading(text.as_bytes()).expect("alike");
    }
}
