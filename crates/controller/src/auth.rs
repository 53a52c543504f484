//! Password protection (`spec.auth`, DESIGN §3 "Auth"): the password the controller uses with the
//! redis-servers, and its live rotation.
//!
//! The pods read the password from the Secret when their container starts (`pod`), so a changed
//! Secret reaches only containers started later. The running ones get it here: the controller
//! remembers, per Redis, the passwords that worked (newest first); when the Secret says something
//! else it connects to each pod with the ones it knows and runs
//! `CONFIG SET masterauth <new> requirepass <new>` there. No restart, and the controller is never
//! refused: it holds the old password until every pod has the new one.
//!
//! Secrets are watched as metadata only (a change triggers the Redis objects that name the
//! Secret); the data of a Secret is read with a GET, only for a Secret some Redis names, and only
//! again when its resourceVersion moves. No password is ever logged.

use crate::Error;
use crate::cached::CachedPod;
use api::Redis;
use api::RedisStatus;
use futures::{StreamExt, future};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DynamicObject, PartialObjectMeta};
use kube::core::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use redis::{ErrorKind, RedisResult};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Reason of the Warning Event and of the `Ready` condition when a pod refuses the password.
pub const AUTH_FAILED: &str = "AuthFailed";
/// Reason of the Normal Event when pods were given the Secret's new password.
pub const PASSWORD_ROTATED: &str = "PasswordRotated";
/// How many earlier passwords are kept per Redis while some pod may still have one of them.
const MAX_KNOWN: usize = 4;

/// A Secret without its data (the watch cache).
pub type SecretMeta = PartialObjectMeta<Secret>;

/// A password, or none (auth off).
pub type Password = Option<String>;

/// What the controller knows about the passwords of each Redis (by uid). In memory: a restarted
/// controller knows only the Secret's value (see DESIGN: a rotation cut short by a restart).
#[derive(Default)]
pub struct State {
    /// Secrets' metadata (no data), from the watch; `None`: no watch, every read is a GET.
    secrets: Option<Store<PartialObjectMeta<Secret>>>,
    /// The data read from each named Secret, with the resourceVersion it was read at.
    read: Mutex<HashMap<(String, String), Read>>,
    redis: Mutex<HashMap<String, Known>>,
}

#[derive(Clone)]
struct Read {
    version: Option<String>,
    secret: Option<Secret>,
}

#[derive(Default, Clone)]
struct Known {
    /// The passwords that worked, newest first.
    passwords: Vec<Password>,
    /// The failure last reported (Event), so a repeated one is not published every pass.
    reported: Option<String>,
}

impl State {
    /// With the Secret metadata cache of [`watch`].
    pub fn with_secrets(secrets: Store<PartialObjectMeta<Secret>>) -> Self {
        State {
            secrets: Some(secrets),
            ..State::default()
        }
    }

    /// Forgets a Redis (deleted).
    pub fn forget(&self, uid: &str) {
        self.known().remove(uid);
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
        self.redis.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn read(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Read>> {
        self.read.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What one pass found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// The password the controller's connections use (the Secret's).
    pub password: Password,
    /// Pods given the Secret's password in this pass.
    pub rotated: Vec<String>,
    /// Why the password cannot be used (a pod refuses it, the Secret lacks it): Ready is False
    /// with reason `AuthFailed`, and the replication engine waits (a pod that refuses looks dead).
    pub failure: Option<String>,
    /// `failure` is new: publish it as a Warning Event.
    pub report: bool,
}

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
        Err(e)
            if e.kind() == ErrorKind::AuthenticationFailed
                || matches!(e.code(), Some("NOAUTH" | "WRONGPASS")) =>
        {
            Answer::Refused
        }
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

/// The password stored under `key` in the Secret.
pub fn password_in(secret: &Secret, key: &str) -> Result<String, String> {
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| format!("has no key {key:?}"))?;
    let password =
        String::from_utf8(bytes.0.clone()).map_err(|_| format!("key {key:?} is not UTF-8"))?;
    if password.is_empty() {
        return Err(format!("key {key:?} is empty"));
    }
    Ok(password)
}

/// Whether the (untyped) Redis names Secret `name` of `namespace` in `spec.auth`.
pub fn references(redis: &DynamicObject, namespace: Option<&str>, name: &str) -> bool {
    redis.metadata.namespace.as_deref() == namespace
        && redis
            .data
            .pointer("/spec/auth/secretRef/name")
            .and_then(|n| n.as_str())
            == Some(name)
}

/// The Redis objects a Secret event concerns (mapper of the Controller's Secret trigger).
pub fn redis_for_secret(
    store: &Store<DynamicObject>,
    resource: &ApiResource,
    secret: &PartialObjectMeta<Secret>,
) -> Vec<ObjectRef<DynamicObject>> {
    let name = secret.name_any();
    let namespace = secret.metadata.namespace.as_deref();
    store
        .state()
        .iter()
        .filter(|r| references(r, namespace, &name))
        .map(|r| ObjectRef::from_obj_with(r.as_ref(), resource.clone()))
        .collect()
}

/// The status with an auth failure in the `Ready` condition (False, `AuthFailed`); the transition
/// time is the stored one while Ready was already False.
pub fn with_failure(
    mut status: RedisStatus,
    failure: Option<&str>,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    let Some(message) = failure else {
        return status;
    };
    if let Some(ready) = status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == crate::status::READY)
    {
        let since = stored
            .and_then(|s| {
                s.conditions
                    .iter()
                    .find(|c| c.type_ == crate::status::READY)
            })
            .filter(|c| c.status == "False")
            .map(|c| c.last_transition_time.clone());
        ready.status = "False".to_owned();
        ready.reason = AUTH_FAILED.to_owned();
        ready.message = message.to_owned();
        ready.last_transition_time = since.unwrap_or(now);
    }
    status
}

/// The metadata watch of Secrets: the cache (ready when returned), the trigger stream, the task.
pub async fn watch(
    client: &Client,
    namespace: Option<&str>,
) -> Result<
    (
        Store<PartialObjectMeta<Secret>>,
        futures::stream::BoxStream<'static, Result<PartialObjectMeta<Secret>, watcher::Error>>,
        tokio::task::JoinHandle<()>,
    ),
    Error,
> {
    // `Api<PartialObjectMeta<_>>` makes metadata-only requests: no Secret data is watched.
    let api: Api<SecretMeta> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let (store, writer) = reflector::store::<SecretMeta>();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|s| {
            s.managed_fields_mut().clear();
            // kubectl apply's copy of the object, data included, is not needed.
            s.annotations_mut().clear();
        })
        .reflect(writer)
        .touched_objects()
        .for_each(move |secret| {
            match secret {
                Ok(secret) => drop(tx.send(secret)),
                Err(e) => tracing::warn!(error = %e, "Secret watch error; retrying with backoff"),
            }
            future::ready(())
        });
    let task = tokio::spawn(task);
    if store.wait_until_ready().await.is_err() {
        task.abort();
        return Err(Error::IncompleteObject("Secret cache"));
    }
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|s| (Ok::<_, watcher::Error>(s), rx))
    })
    .boxed();
    Ok((store, events, task))
}

/// The Secret `name` of `namespace`, read again only when the cache has a newer resourceVersion.
/// `None` when it does not exist.
async fn secret(
    state: &State,
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Secret>, Error> {
    let key = (namespace.to_owned(), name.to_owned());
    let cached_version = match &state.secrets {
        Some(store) => match store.get(&ObjectRef::new(name).within(namespace)) {
            Some(meta) => Some(meta.metadata.resource_version.clone()),
            None => {
                state.read().remove(&key);
                return Ok(None);
            }
        },
        None => None,
    };
    if let Some(version) = &cached_version
        && let Some(read) = state.read().get(&key)
        && &read.version == version
    {
        return Ok(read.secret.clone());
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = api.get_opt(name).await.map_err(Error::Kube)?;
    let version = secret
        .as_ref()
        .and_then(|s| s.metadata.resource_version.clone());
    state.read().insert(
        key,
        Read {
            version,
            secret: secret.clone(),
        },
    );
    Ok(secret)
}

/// One pass: reads the Secret, checks every pod when needed, sets the Secret's password on the
/// pods that still have an earlier one. `Err` only for a failed API read.
pub async fn settle(
    state: &State,
    client: &Client,
    redis: &Redis,
    pods: &[Arc<CachedPod>],
) -> Result<Settled, Error> {
    let uid = redis.metadata.uid.clone().unwrap_or_default();
    let namespace = redis
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::IncompleteObject("namespace"))?;
    let port = u16::try_from(redis.spec.port()).unwrap_or_default();
    let wanted: Password = match redis.spec.auth_secret() {
        None => None,
        Some((name, key)) => {
            let found = secret(state, client, namespace, name).await?;
            let password = match &found {
                None => Err(format!("Secret {name} not found")),
                Some(s) => password_in(s, key).map_err(|e| format!("Secret {name} {e}")),
            };
            match password {
                Ok(p) => Some(p),
                Err(message) => return Ok(report(state, &uid, None, Some(message))),
            }
        }
    };
    let known = state.known().get(&uid).cloned().unwrap_or_default();
    if !needs_check(wanted.as_deref(), &known.passwords) {
        return Ok(report(state, &uid, wanted, None));
    }
    let tries = candidates(wanted.as_deref(), &known.passwords);
    let live: Vec<&Arc<CachedPod>> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let checks = future::join_all(live.iter().map(|pod| check(pod, port, &tries))).await;
    let mut all_current = true;
    let mut rotated = Vec::new();
    let mut refused = Vec::new();
    for (pod, accepted) in live.iter().zip(checks) {
        let name = pod.name_any();
        let Some(accepted) = accepted else {
            all_current = false;
            continue;
        };
        match fix(accepted) {
            Fix::Nothing => {}
            Fix::SetWith(i) => {
                let ip = pod.ip().unwrap_or_default();
                let server = crate::replication::io::Server {
                    ip,
                    port,
                    password: tries.get(i).copied().flatten(),
                };
                match server.set_password(wanted.as_deref().unwrap_or("")).await {
                    Ok(()) => rotated.push(name),
                    Err(e) => {
                        tracing::info!(pod = %name, error = %e, "could not set the password");
                        all_current = false;
                    }
                }
            }
            Fix::Refuses => {
                all_current = false;
                refused.push(name);
            }
        }
    }
    let passwords = remember(wanted.as_deref(), &known.passwords, all_current);
    state.known().entry(uid.clone()).or_default().passwords = passwords;
    let failure = (!refused.is_empty()).then(|| refusal(redis, &refused));
    let mut settled = report(state, &uid, wanted, failure);
    settled.rotated = rotated;
    Ok(settled)
}

/// The message of pods that refuse every password the controller knows.
fn refusal(redis: &Redis, refused: &[String]) -> String {
    let source = redis.spec.auth_secret().map_or_else(
        || "no password".to_owned(),
        |(n, k)| format!("the password in Secret {n} (key {k})"),
    );
    format!(
        "pod(s) {} refuse {source} and every earlier password the operator knows; put the \
         pods' password back in the Secret, or delete those pods (a new pod starts with the \
         Secret's password)",
        refused.join(", ")
    )
}

/// Records the outcome for `uid`: the failure to publish only when it is new.
fn report(state: &State, uid: &str, password: Password, failure: Option<String>) -> Settled {
    let mut known = state.known();
    let entry = known.entry(uid.to_owned()).or_default();
    let report = failure.is_some() && entry.reported != failure;
    entry.reported.clone_from(&failure);
    Settled {
        password,
        rotated: Vec::new(),
        failure,
        report,
    }
}

/// Which of `tries` the pod accepts (`Some(None)`: none); `None` when it does not answer.
async fn check(pod: &CachedPod, port: u16, tries: &[Option<&str>]) -> Option<Option<usize>> {
    let ip = pod.ip()?;
    for (i, password) in tries.iter().enumerate() {
        match answer(&ping(ip, port, *password).await) {
            Answer::Accepted => return Some(Some(i)),
            Answer::Refused => {}
            Answer::Unreachable => return None,
        }
    }
    Some(None)
}

/// `PING`, authenticated with `password` when there is one.
async fn ping(ip: &str, port: u16, password: Option<&str>) -> RedisResult<()> {
    use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};
    let mut settings = RedisConnectionInfo::default();
    if let Some(password) = password {
        settings = settings.set_password(password);
    }
    let info = ConnectionAddr::Tcp(ip.to_owned(), port)
        .into_connection_info()?
        .set_redis_settings(settings);
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(std::time::Duration::from_secs(1)))
        .set_response_timeout(Some(std::time::Duration::from_secs(2)));
    let mut con = redis::Client::open(info)?
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    redis::cmd("PING").query_async(&mut con).await
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn an_auth_failure_makes_ready_false() {
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let status: RedisStatus = serde_json::from_value(json!({"conditions": [{
            "type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "3/3",
            "lastTransitionTime": "2024-01-01T00:00:00Z"
        }]}))
        .expect("status");
        assert_eq!(
            with_failure(status.clone(), None, None, now.clone()),
            status
        );
        let failed = with_failure(
            status.clone(),
            Some("pod x refuses"),
            Some(&status),
            now.clone(),
        );
        let ready = &failed.conditions[0];
        assert_eq!(
            (
                ready.status.as_str(),
                ready.reason.as_str(),
                ready.message.as_str()
            ),
            ("False", AUTH_FAILED, "pod x refuses")
        );
        assert_eq!(ready.last_transition_time, now, "it just became False");
        let again = with_failure(
            status,
            Some("pod x refuses"),
            Some(&failed),
            Time(k8s_openapi::jiff::Timestamp::now()),
        );
        assert_eq!(
            again.conditions[0].last_transition_time, now,
            "still False since then"
        );
    }
}
