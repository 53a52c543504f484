//! The answer's wire form: kube's AdmissionReview, except that the JSONPatch is base64.

use super::Answer;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
#[cfg(test)]
use kube::core::response::Status;
#[cfg(test)]
use serde::Serialize;
#[cfg(test)]
use std::collections::HashMap;

impl Answer {
    /// The answer as sent: kube's AdmissionReview, except that `patch` is base64, as the API
    /// documents a Go `[]byte` in JSON. kube serializes its `Vec<u8>` as an array of numbers
    /// (kube-rs/kube#1781): kube-apiserver reads that too, but it is three to four times the
    /// size, and writing it was most of what made `/mutate` slower than `/validate`.
    ///
    /// Written straight into one buffer, in the order and form serde would write
    /// [`WireReview`]; a default patch comes already in base64 (see `mutate`'s cache).
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let response = &self.response;
        let cached = self
            .patch
            .as_ref()
            .filter(|cached| response.patch.as_deref() == Some(&*cached.json));
        let encoded;
        let patch = match (&response.patch, cached) {
            (_, Some(cached)) => Some(&*cached.base64),
            (Some(patch), None) => {
                encoded = BASE64.encode(patch);
                Some(encoded.as_str())
            }
            (None, None) => None,
        };
        let mut out = Vec::with_capacity(
            192 + response.uid.len()
                + response.result.message.len()
                + patch.map_or(0, str::len)
                + response
                    .warnings
                    .iter()
                    .flatten()
                    .map(|w| w.len() + 3)
                    .sum::<usize>(),
        );
        out.extend_from_slice(b"{\"apiVersion\":");
        serde_json::to_writer(&mut out, &response.types.api_version)?;
        out.extend_from_slice(b",\"kind\":");
        serde_json::to_writer(&mut out, &response.types.kind)?;
        out.extend_from_slice(b",\"response\":{\"uid\":");
        serde_json::to_writer(&mut out, &response.uid)?;
        out.extend_from_slice(if response.allowed {
            b",\"allowed\":true,\"status\":"
        } else {
            b",\"allowed\":false,\"status\":"
        });
        serde_json::to_writer(&mut out, &response.result)?;
        if let Some(patch) = patch {
            // Base64 has nothing to escape in a JSON string.
            out.extend_from_slice(b",\"patch\":\"");
            out.extend_from_slice(patch.as_bytes());
            // kube sets the type with the patch, and JSONPatch is the only one there is.
            out.extend_from_slice(b"\",\"patchType\":\"JSONPatch\"");
        }
        if !response.audit_annotations.is_empty() {
            out.extend_from_slice(b",\"auditAnnotations\":");
            serde_json::to_writer(&mut out, &response.audit_annotations)?;
        }
        if let Some(warnings) = &response.warnings {
            out.extend_from_slice(b",\"warnings\":");
            serde_json::to_writer(&mut out, warnings)?;
        }
        out.extend_from_slice(b"}}");
        Ok(out)
    }
}

/// [`Answer::to_json`]'s wire form, as serde would write it: kube's `AdmissionReview` with a
/// base64 `patch` (the tests check that `to_json` writes exactly this).
#[cfg(test)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireReview<'a> {
    api_version: &'a str,
    kind: &'a str,
    response: WireResponse<'a>,
}

#[cfg(test)]
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

    /// The wire form as serde writes [`WireReview`].
    fn serde_wire(a: &Answer) -> Vec<u8> {
        let response = &a.response;
        serde_json::to_vec(&WireReview {
            api_version: &a.response.types.api_version,
            kind: &a.response.types.kind,
            response: WireResponse {
                uid: &response.uid,
                allowed: response.allowed,
                status: &response.result,
                patch: response.patch.as_ref().map(|p| BASE64.encode(p)),
                patch_type: response.patch.as_ref().map(|_| "JSONPatch"),
                audit_annotations: &response.audit_annotations,
                warnings: response.warnings.as_ref(),
            },
        })
        .expect("encodes")
    }

    #[test]
    fn the_wire_form_is_kubes_with_a_base64_patch() {
        let cases = [
            (Endpoint::Mutate, redis_object("r", json!({}))),
            // Again: the patch comes from the cache.
            (Endpoint::Mutate, redis_object("r", json!({}))),
            (Endpoint::Mutate, redis_object("r", json!({"replicas": 3}))),
            (Endpoint::Mutate, redis_object("r", json!({"port": "x"}))),
            (
                Endpoint::Validate,
                redis_object("r", json!({"image": "redis:latest", "mode": "Replication"})),
            ),
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
            let mut kube = serde_json::to_value(a.to_review()).expect("kube's form encodes");
            if let Some(Value::Array(items)) = kube["response"].get("patch") {
                let bytes: Vec<u8> = items
                    .iter()
                    .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect();
                kube["response"]["patch"] = Value::String(BASE64.encode(bytes));
            }
            let bytes = a.to_json().expect("wire form encodes");
            let wire: Value = serde_json::from_slice(&bytes).expect("JSON");
            assert_eq!(wire, kube, "{endpoint:?}");
            assert_eq!(
                String::from_utf8(bytes).expect("UTF-8"),
                String::from_utf8(serde_wire(&a)).expect("UTF-8"),
                "written as serde writes it"
            );
        }
    }

    mod never_panics {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Whatever the answer, `to_json` writes what serde would.
            #[test]
            fn the_wire_form_is_written_as_serde_writes_it(
                spec in arbitrary_json(),
                op in prop_oneof![Just("CREATE"), Just("UPDATE"), Just("DELETE")],
            ) {
                let object = redis_object("r", spec);
                for endpoint in [Endpoint::Mutate, Endpoint::Validate] {
                    let Ok(a) = answer(endpoint, &Policy::default(), &review(op, object.clone(), object.clone())) else {
                        continue;
                    };
                    let bytes = a.to_json().map_err(|e| TestCaseError::fail(e.to_string()))?;
                    let serde = serde_wire(&a);
                    prop_assert_eq!(String::from_utf8_lossy(&bytes), String::from_utf8_lossy(&serde));
                }
            }
        }
    }
}
