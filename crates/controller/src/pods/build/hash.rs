//! The hash a pod carries of the spec it was built from: a rolling update replaces the pods whose
//! hash is not the current one.

use super::launch::{AUTH_COMMAND, PASSWORD_ENV};
use super::placement::{user_annotations, user_labels};
use api::RedisSpec;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A short, stable hash of the pod spec: the same spec gives the same hash on every machine and
/// every release of the operator (unlike `std`'s hasher).
pub fn spec_hash(spec: &PodSpec) -> String {
    // k8s-openapi serializes maps in key order, so the JSON is canonical.
    short_digest(&serde_json::to_vec(&hashed(spec)).unwrap_or_default())
}

/// What the hash covers of a pod spec: the spec, but a container started through
/// [`super::AUTH_LAUNCHER`] as the releases before it started one, with `--requirepass
/// $(REDIS_PASSWORD) --masterauth $(REDIS_PASSWORD)` after redis-server's options. So an upgrade
/// of the operator replaces no pod of a Redis with auth (a standalone one without storage would
/// lose its data): pods started the old way keep running until something else replaces them,
/// and every pod made from now on gets the launcher.
pub(super) fn hashed(spec: &PodSpec) -> std::borrow::Cow<'_, PodSpec> {
    // Compared in place: the hash is taken every pass.
    let launched = |c: &Container| {
        c.command
            .as_deref()
            .is_some_and(|command| command.iter().map(String::as_str).eq(AUTH_COMMAND))
    };
    if !spec.containers.iter().any(launched) {
        return std::borrow::Cow::Borrowed(spec);
    }
    let mut legacy = spec.clone();
    for container in legacy.containers.iter_mut().filter(|c| launched(c)) {
        let password = format!("$({PASSWORD_ENV})");
        let options = container.args.take().unwrap_or_default();
        container.command = None;
        container.args = Some(
            std::iter::once("redis-server".to_owned())
                .chain(options)
                .chain(["--requirepass".to_owned(), password.clone()])
                .chain(["--masterauth".to_owned(), password])
                .collect(),
        );
    }
    std::borrow::Cow::Owned(legacy)
}

/// The hash the pods of a Redis carry ([`api::pods::SPEC_HASH_ANNOTATION`]): [`spec_hash`] of `pod_spec`
/// (built by [`super::pod_spec`] from `spec`), with the spec's pod labels and annotations after it when
/// it sets any, so changing them replaces the pods as any other change does.
///
/// What is hashed only grows by what a Redis sets: a field it leaves out adds nothing (serde skips
/// an unset pod spec field; no labels or annotations add no bytes), so a Redis that sets none of
/// the fields a release adds keeps the hash its pods carry, and upgrading the operator rolls no
/// pod. That is also why the default spread is not in `pod_spec` but added by [`super::desired_pod`]:
/// pods made before it existed stay as they are, and pods made from now on get it.
pub fn pod_hash(spec: &RedisSpec, pod_spec: &PodSpec) -> String {
    let mut json = serde_json::to_vec(&hashed(pod_spec)).unwrap_or_default();
    let metadata: BTreeMap<&str, BTreeMap<String, String>> = [
        ("podAnnotations", user_annotations(spec)),
        ("podLabels", user_labels(spec)),
    ]
    .into_iter()
    .filter(|(_, m)| !m.is_empty())
    .collect();
    if !metadata.is_empty() {
        json.extend(serde_json::to_vec(&metadata).unwrap_or_default());
    }
    short_digest(&json)
}

/// The first 8 bytes of the SHA-256 of `bytes`, in hex.
fn short_digest(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}
