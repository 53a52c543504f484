//! The rules of password rotation (DESIGN §3c), pure: which passwords to try on a pod, what to
//! remember, how a pod answered, what to do about it, and where a Secret keeps the password.

use crate::redis_server::refuses_auth;
use api::AuthSpec;
use k8s_openapi::api::core::v1::Secret;
use kube::api::DynamicObject;
use redis::RedisResult;
use serde::Deserialize;

/// A password, or none (auth off).
pub type Password = Option<String>;

/// How many earlier passwords are kept per Redis while some pod may still have one of them.
const MAX_KNOWN: usize = 4;

/// The passwords to try on a pod, in order: the Secret's, then the earlier ones that worked, then
/// none (a pod started before auth was turned on is given the password live, not reported).
pub fn candidates<'a>(wanted: Option<&'a str>, known: &'a [Password]) -> Vec<Option<&'a str>> {
    let mut out = vec![wanted];
    for p in known.iter().map(Option::as_deref).chain([None]) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Whether the pods must be looked at: not when the controller has seen every pod take the
/// Secret's password (`known` is exactly it), nor when auth is and was off.
pub fn needs_check(wanted: Option<&str>, known: &[Password]) -> bool {
    match known {
        [] => wanted.is_some(),
        [only] => only.as_deref() != wanted,
        _ => true,
    }
}

/// The passwords to remember after a pass: only the Secret's once every pod has it; otherwise it
/// first and the earlier ones after (a pod not reached yet may still have one of them).
pub fn remember(wanted: Option<&str>, known: &[Password], all_current: bool) -> Vec<Password> {
    if all_current {
        return vec![wanted.map(str::to_owned)];
    }
    let mut out: Vec<Password> = vec![wanted.map(str::to_owned)];
    for p in known {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out.truncate(MAX_KNOWN);
    out
}

/// How a pod answered one password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Accepted,
    Refused,
    /// No answer (no IP yet, starting, gone): says nothing about the password.
    Unreachable,
}

/// Reads the result of a PING sent with a password.
pub fn answer(result: &RedisResult<()>) -> Answer {
    match result {
        Ok(()) => Answer::Accepted,
        Err(e) if refuses_auth(e) => Answer::Refused,
        Err(_) => Answer::Unreachable,
    }
}

/// What to do with a pod, from the index of the candidate it accepted (`None`: refused them all,
/// `Some(0)`: has the Secret's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fix {
    Nothing,
    /// It accepts an earlier password: `CONFIG SET` the Secret's, authenticating with that one.
    SetWith(usize),
    Refuses,
}

pub fn fix(accepted: Option<usize>) -> Fix {
    match accepted {
        Some(0) => Fix::Nothing,
        Some(i) => Fix::SetWith(i),
        None => Fix::Refuses,
    }
}

/// Longest password the operator takes from a Secret, in bytes. A tenant's Secret is hostile
/// input: one 1 MiB value named by 32 ACL users on a few Redis was hundreds of MiB of copies in
/// the controller that every namespace shares (issue #40.1). Redis itself sets no limit; a
/// generated password is 64 bytes.
pub const MAX_PASSWORD_BYTES: usize = 4096;

/// The password stored under `key` in the Secret (refused, with no copy made, above
/// [`MAX_PASSWORD_BYTES`]).
pub fn password_in(secret: &Secret, key: &str) -> Result<String, String> {
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| format!("has no key {key:?}"))?;
    if bytes.0.len() > MAX_PASSWORD_BYTES {
        return Err(format!(
            "key {key:?} holds {} bytes: a password is at most {MAX_PASSWORD_BYTES}",
            bytes.0.len()
        ));
    }
    let password =
        String::from_utf8(bytes.0.clone()).map_err(|_| format!("key {key:?} is not UTF-8"))?;
    if password.is_empty() {
        return Err(format!("key {key:?} is empty"));
    }
    Ok(password)
}

/// Whether the (untyped) Redis names Secret `name` of `namespace`, in `spec.auth`, in
/// `spec.tls` (§3k) or as an ACL user's (§3l), each read as its typed spec (one that does not
/// decode names no Secret).
pub fn references(redis: &DynamicObject, namespace: Option<&str>, name: &str) -> bool {
    let spec = redis.data.get("spec");
    let auth = spec
        .and_then(|spec| spec.get("auth"))
        .and_then(|auth| AuthSpec::deserialize(auth).ok())
        .is_some_and(|auth| auth.secret_ref.name == name);
    let tls = spec
        .and_then(|spec| spec.get("tls"))
        .and_then(|tls| api::TlsSpec::deserialize(tls).ok())
        .is_some_and(|tls| tls.secret_ref.name == name);
    let acl = spec
        .and_then(|spec| spec.get("acl"))
        .and_then(|acl| api::AclSpec::deserialize(acl).ok())
        .is_some_and(|acl| acl.users.iter().any(|u| u.password_secret_ref.name == name));
    redis.metadata.namespace.as_deref() == namespace && (auth || tls || acl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::ErrorKind;
    use serde_json::json;

    fn pw(s: &str) -> Password {
        Some(s.to_owned())
    }

    #[test]
    fn the_secrets_password_is_tried_first_then_the_earlier_ones() {
        assert_eq!(candidates(Some("new"), &[]), vec![Some("new"), None]);
        assert_eq!(
            candidates(Some("new"), &[pw("old"), pw("older")]),
            vec![Some("new"), Some("old"), Some("older"), None]
        );
        assert_eq!(
            candidates(Some("new"), &[pw("new"), pw("old")]),
            vec![Some("new"), Some("old"), None]
        );
        // Auth turned off: no password first, the ones that worked after.
        assert_eq!(candidates(None, &[pw("old")]), vec![None, Some("old")]);
        // Auth turned on for pods that had none.
        assert_eq!(candidates(Some("new"), &[None]), vec![Some("new"), None]);
    }

    #[test]
    fn pods_are_checked_until_every_one_has_the_secrets_password() {
        assert!(
            needs_check(Some("p"), &[]),
            "a restarted controller checks once"
        );
        assert!(!needs_check(Some("p"), &[pw("p")]));
        assert!(needs_check(Some("new"), &[pw("old")]), "rotation");
        assert!(
            needs_check(Some("new"), &[pw("new"), pw("old")]),
            "a pod not reached yet"
        );
        assert!(
            !needs_check(None, &[]),
            "no auth: never talks to Standalone pods"
        );
        assert!(!needs_check(None, &[None]));
        assert!(needs_check(None, &[pw("old")]), "auth turned off");
    }

    #[test]
    fn earlier_passwords_are_forgotten_only_once_every_pod_has_the_new_one() {
        assert_eq!(remember(Some("new"), &[pw("old")], true), vec![pw("new")]);
        assert_eq!(
            remember(Some("new"), &[pw("old")], false),
            vec![pw("new"), pw("old")]
        );
        let many: Vec<Password> = (0..10).map(|i| pw(&format!("p{i}"))).collect();
        assert_eq!(remember(Some("new"), &many, false).len(), MAX_KNOWN);
        assert_eq!(remember(None, &[pw("old")], true), vec![None]);
    }

    #[test]
    fn a_pod_on_an_earlier_password_is_given_the_new_one() {
        assert_eq!(fix(Some(0)), Fix::Nothing);
        assert_eq!(fix(Some(2)), Fix::SetWith(2));
        assert_eq!(fix(None), Fix::Refuses);
    }

    #[test]
    fn refusals_are_told_from_unreachable_pods() {
        let refused: RedisResult<()> = Err(redis::RedisError::from((
            ErrorKind::AuthenticationFailed,
            "Password authentication failed",
        )));
        assert_eq!(answer(&refused), Answer::Refused);
        let io: RedisResult<()> = Err(redis::RedisError::from(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert_eq!(answer(&io), Answer::Unreachable);
        assert_eq!(answer(&Ok(())), Answer::Accepted);
    }

    #[test]
    fn the_password_is_read_from_the_key() {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "s"},
            // "hunter2", "", and invalid UTF-8, base64-encoded as the API returns them.
            "data": {"password": "aHVudGVyMg==", "empty": "", "binary": "/w=="}
        }))
        .expect("secret");
        assert_eq!(password_in(&secret, "password").as_deref(), Ok("hunter2"));
        assert!(password_in(&secret, "other").is_err_and(|e| e.contains("no key")));
        assert!(password_in(&secret, "empty").is_err_and(|e| e.contains("empty")));
        assert!(password_in(&secret, "binary").is_err_and(|e| e.contains("UTF-8")));
    }

    #[test]
    fn a_password_over_the_limit_is_refused_with_its_size() {
        let data = |len: usize| {
            let mut data = std::collections::BTreeMap::new();
            data.insert(
                "password".to_owned(),
                k8s_openapi::ByteString(vec![b'a'; len]),
            );
            Secret {
                data: Some(data),
                ..Secret::default()
            }
        };
        assert_eq!(
            password_in(&data(MAX_PASSWORD_BYTES), "password").map(|p| p.len()),
            Ok(MAX_PASSWORD_BYTES)
        );
        let refused = password_in(&data(1 << 20), "password");
        assert_eq!(
            refused,
            Err("key \"password\" holds 1048576 bytes: a password is at most 4096".to_owned())
        );
    }

    #[test]
    fn a_secret_concerns_the_redis_of_its_namespace_that_names_it() {
        let redis = |ns: &str, auth: serde_json::Value| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
                "metadata": {"name": "cache", "namespace": ns},
                "spec": {"auth": auth}
            }))
            .expect("redis")
        };
        let named = redis("a", json!({"secretRef": {"name": "pw"}}));
        assert!(references(&named, Some("a"), "pw"));
        assert!(!references(&named, Some("b"), "pw"));
        assert!(!references(&named, Some("a"), "other"));
        assert!(!references(&redis("a", json!(null)), Some("a"), "pw"));
    }

    #[test]
    fn an_acl_users_secret_concerns_its_redis() {
        let redis: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
            "metadata": {"name": "cache", "namespace": "a"},
            "spec": {"acl": {"users": [
                {"name": "reader", "rules": "+get", "passwordSecretRef": {"name": "reader-pw"}}
            ]}}
        }))
        .expect("redis");
        assert!(references(&redis, Some("a"), "reader-pw"));
        assert!(!references(&redis, Some("a"), "other"));
    }
}
