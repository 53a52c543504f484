//! Reading a request body: one typed pass in the usual case ([`ReviewedRedis`]); only a body
//! that pass cannot read is decoded again, loosely, to say precisely what is wrong with it.

use api::{Redis, RedisSpec};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::{DynamicObject, GroupVersionKind, GroupVersionResource, TypeMeta};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};
use serde_json::Value;
use std::borrow::Cow;
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

/// The object under review as the rules read it: its metadata and its spec, decoded straight
/// from the body. (kube's `DynamicObject`, like `AdmissionReview` itself, flattens fields, so
/// serde first buffers the input into an intermediate tree; that was half a review's cost.)
#[derive(Debug)]
pub(super) struct ReviewedRedis {
    metadata: ObjectMeta,
    /// `None` when absent or null: every field takes its default.
    pub(super) spec: Option<RedisSpec>,
}

impl ReviewedRedis {
    pub(super) fn into_redis(self) -> Redis {
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
pub(super) struct Review {
    /// The allowing answer, echoing the request's uid; decisions start from it.
    pub(super) response: AdmissionResponse,
    pub(super) kind: GroupVersionKind,
    pub(super) resource: GroupVersionResource,
    pub(super) sub_resource: Option<String>,
    pub(super) operation: Operation,
    pub(super) name: String,
    pub(super) namespace: Option<String>,
    pub(super) object: Reading,
    pub(super) old_object: Reading,
}

/// An object of the review read as a Redis, or why it could not be.
pub(super) type Reading = Result<ReviewedRedis, ObjectError>;

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

pub(super) fn read(body: &[u8]) -> Result<Review, BadReview> {
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

#[derive(Debug, thiserror::Error)]
pub(super) enum ObjectError {
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Endpoint, answer, judge};
    use super::*;
    use api::Policy;

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
        }
    }
}
