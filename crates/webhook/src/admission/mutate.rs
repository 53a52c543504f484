//! `/mutate`: defaulting, as a JSONPatch that adds only the fields a Redis is missing.

use super::read::{ObjectError, Reading};
use super::{Outcome, with_warnings};
use api::RedisSpec;
use api::defaults::FieldDefault;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation};
use kube::core::admission::{AdmissionResponse, Operation};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// `/mutate`: a JSONPatch adding only the missing defaults; no patch when nothing is missing.
/// With a patch, also the patch as the answer's wire form carries it.
pub(super) fn mutate(
    response: AdmissionResponse,
    operation: &Operation,
    object: &Reading,
) -> (AdmissionResponse, Outcome, Option<Arc<SerializedPatch>>) {
    let (Operation::Create | Operation::Update) = operation else {
        return (response, Outcome::Skipped, None);
    };
    let object = match object {
        Ok(object) => object,
        Err(ObjectError::Missing) => return (response, Outcome::Skipped, None),
        // The schema check that follows mutation will report the bad field precisely; a denial
        // from here would only say it less well.
        Err(e) => {
            let warning = format!("spec could not be read, defaults not applied: {e}");
            return (
                with_warnings(response, vec![warning]),
                Outcome::Allowed,
                None,
            );
        }
    };
    let spec = object.spec.as_ref();
    let missing = match spec {
        Some(spec) => spec.missing_defaults(),
        None => RedisSpec::default().missing_defaults(),
    };
    if missing.is_empty() {
        return (response, Outcome::Allowed, None);
    }
    if let Some(patch) = PATCHES.get(spec.is_none(), &missing) {
        // kube sets the patch type only with a patch: an empty one, replaced by the bytes.
        if let Ok(mut patched) = response.clone().with_patch(Patch(Vec::new())) {
            patched.patch = Some(patch.json.to_vec());
            return (patched, Outcome::Patched, Some(patch));
        }
    }
    let whole_spec = spec.is_none();
    match response
        .clone()
        .with_patch(default_patch(whole_spec, missing.clone()))
    {
        Ok(patched) => {
            let patch = patched
                .patch
                .as_deref()
                .map(|json| PATCHES.insert(whole_spec, missing, json));
            (patched, Outcome::Patched, patch)
        }
        // Unreachable in practice (a patch of plain JSON values always serializes); allow
        // unpatched rather than block the write: the controller applies the same defaults.
        Err(e) => (
            with_warnings(response, vec![format!("defaults not applied: {e}")]),
            Outcome::Allowed,
            None,
        ),
    }
}

/// A default patch as sent: its JSON (kube's `patch`) and that JSON in base64 (the wire form).
#[derive(Debug)]
pub(super) struct SerializedPatch {
    pub(super) json: Box<[u8]>,
    pub(super) base64: Box<str>,
}

/// The default patches already serialized. A patch depends only on which defaults are missing
/// (and whether the whole spec is), and there are a few dozen such sets at most: most reviews
/// find theirs here instead of building, serializing and encoding it again.
static PATCHES: PatchCache = PatchCache(Mutex::new(Vec::new()));

/// Bounds [`PATCHES`]; only a change of the api crate's defaults could make more sets.
const MAX_CACHED_PATCHES: usize = 64;

struct PatchCache(Mutex<Vec<CachedPatch>>);

/// The patch for one set of missing defaults.
struct CachedPatch {
    whole_spec: bool,
    missing: Vec<FieldDefault>,
    patch: Arc<SerializedPatch>,
}

impl PatchCache {
    fn get(&self, whole_spec: bool, missing: &[FieldDefault]) -> Option<Arc<SerializedPatch>> {
        // A poisoned lock only loses the cache: the patch is built again.
        let cached = self.0.lock().ok()?;
        cached
            .iter()
            .find(|c| c.whole_spec == whole_spec && c.missing.as_slice() == missing)
            .map(|c| c.patch.clone())
    }

    fn insert(
        &self,
        whole_spec: bool,
        missing: Vec<FieldDefault>,
        json: &[u8],
    ) -> Arc<SerializedPatch> {
        let patch = Arc::new(SerializedPatch {
            json: json.into(),
            base64: BASE64.encode(json).into(),
        });
        if let Ok(mut cached) = self.0.lock()
            && cached.len() < MAX_CACHED_PATCHES
        {
            cached.push(CachedPatch {
                whole_spec,
                missing,
                patch: patch.clone(),
            });
        }
        patch
    }
}

/// The patch that adds the `missing` defaults to the spec, one `add` per missing field at its
/// path (nested fields such as `/spec/replication/failoverAfter` included: the api crate lists
/// a field only under parents that exist); no spec (`whole_spec`): one op adding all of them
/// as one object.
fn default_patch(whole_spec: bool, missing: Vec<FieldDefault>) -> Patch {
    let ops = if whole_spec {
        let mut all = Value::Object(serde_json::Map::new());
        for FieldDefault { path, value } in missing {
            insert_at(&mut all, path, value);
        }
        vec![add(&["spec"], all)]
    } else {
        missing
            .into_iter()
            .map(|FieldDefault { path, value }| {
                PatchOperation::Add(AddOperation {
                    path: PointerBuf::from_tokens(
                        std::iter::once("spec").chain(path.iter().copied()),
                    ),
                    value,
                })
            })
            .collect()
    };
    Patch(ops)
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Answer, Endpoint, answer};
    use super::*;
    use api::Policy;
    use serde_json::json;

    fn apply_patch(answer: &Answer, mut object: Value) -> Value {
        let resp = &answer.response;
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

    /// The patch's operations as `(path, value)`.
    fn patch_ops(answer: &Answer) -> Vec<(String, Value)> {
        let resp = &answer.response;
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
                json!({"minReplicasMaxLag": 10, "failoverAfter": "10s"})
            )]
        );
        let patched = apply_patch(&a, object.clone());
        assert_eq!(patched["spec"]["mode"], "Replication");
        assert_eq!(patched["spec"]["replication"]["failoverAfter"], "10s");
        // minReplicasToWrite follows the pod count and is never stored.
        assert!(
            patched["spec"]["replication"]
                .get("minReplicasToWrite")
                .is_none()
        );
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
                ("/spec/replication/minReplicasMaxLag".to_owned(), json!(10)),
                ("/spec/auth/secretRef/key".to_owned(), json!("password")),
            ]
        );
        let patched = apply_patch(&a, object);
        assert_eq!(
            patched["spec"]["replication"],
            json!({"minReplicasMaxLag": 10, "failoverAfter": "30s"})
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
    fn a_cached_patch_is_the_patch_built_afresh() {
        for spec in [
            json!({}),
            json!({"replicas": 3}),
            json!({"mode": "Replication", "auth": {"secretRef": {"name": "s"}}}),
        ] {
            let object = redis_object("r", spec.clone());
            let parsed: RedisSpec = serde_json::from_value(spec).expect("spec");
            let fresh = serde_json::to_vec(&default_patch(false, parsed.missing_defaults()))
                .expect("patch encodes");
            for a in [mutate(&object), mutate(&object)] {
                let resp = &a.response;
                assert_eq!(resp.patch.as_deref(), Some(fresh.as_slice()));
            }
        }
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

    mod never_panics {
        use super::*;
        use proptest::prelude::*;

        proptest! {
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
                    a.response.patch.as_ref().ok_or_else(|| TestCaseError::fail("no patch"))?,
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
                    if let Some(patch) = a.response.patch.as_ref() {
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
