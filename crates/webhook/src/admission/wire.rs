//! The answer's wire form: kube's AdmissionReview, except that the JSONPatch is base64.

use super::Answer;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use kube::core::response::Status;
use serde::Serialize;
use std::collections::HashMap;

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

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Endpoint, answer};
    use super::*;
    use api::Policy;
    use serde_json::{Value, json};

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
}
