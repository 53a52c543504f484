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
//!
//! - [`rules`]: the rotation's rules (pure).
//! - [`status`]: `AuthFailed` in the Ready condition (pure).
//! - this module: the Secret watch and reads, the checks on the pods, and the Events.

pub mod rules;
pub mod status;

use crate::Error;
use crate::cached::CachedPod;
use crate::k8s::by_redis::{ByRedis, Remembers};
use crate::k8s::events::publish;
use crate::k8s::{self, watch};
use crate::redis_server::{Login, Server, TlsClient};
use api::Redis;
use futures::future;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, PartialObjectMeta};
use kube::core::ApiResource;
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
pub use rules::Password;
use rules::{Answer, Fix, answer, candidates, fix, needs_check, password_in, references, remember};
pub use status::AUTH_FAILED;
use std::sync::Arc;

/// Reason of the Normal Event when pods were given the Secret's new password.
pub const PASSWORD_ROTATED: &str = "PasswordRotated";

/// A Secret without its data (the watch cache).
pub type SecretMeta = PartialObjectMeta<Secret>;

/// What the controller knows about the passwords of each Redis (by uid). In memory: a restarted
/// controller knows only the Secret's value (see DESIGN: a rotation cut short by a restart).
#[derive(Default)]
pub struct State {
    /// Secrets' metadata (no data), from the watch; `None`: no watch, every read is a GET.
    secrets: Option<Store<PartialObjectMeta<Secret>>>,
    /// Per Redis (by uid): the password read from the Secret it names, with the Secret and
    /// resourceVersion it was read at. Only that key's value is kept, never the whole Secret,
    /// and only while the Redis exists ([`State::forget`]).
    read: ByRedis<Read>,
    redis: ByRedis<Known>,
}

impl Remembers for State {
    fn forget(&self, uid: &str) {
        State::forget(self, uid);
    }

    fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.redis.keep_only(exists);
        self.read.keep_only(exists);
    }
}

/// The password of one Redis as read from its Secret.
#[derive(Clone)]
struct Read {
    /// The Secret's namespace, name and key this was read from.
    source: (String, String, String),
    version: Option<String>,
    /// The password, or why the Secret gives none.
    password: Result<String, String>,
}

#[derive(Default, Clone)]
struct Known {
    /// The passwords that worked, newest first.
    passwords: Vec<Password>,
    /// The failure last reported (Event), so a repeated one is not published every pass.
    reported: Option<String>,
    /// A pod refused the password outside this step (the replication step saw it): check every
    /// pod in the next pass even though every pod took the Secret's password before.
    recheck: bool,
}

impl State {
    /// With the Secret metadata cache of [`watch`].
    pub fn with_secrets(secrets: Store<PartialObjectMeta<Secret>>) -> Self {
        State {
            secrets: Some(secrets),
            ..State::default()
        }
    }

    /// The resourceVersion of Secret `name` in `namespace` in the metadata cache: `None` without
    /// a cache, `Some(None)` when the cache has no such Secret.
    pub fn cached_version(&self, namespace: &str, name: &str) -> Option<Option<String>> {
        let store = self.secrets.as_ref()?;
        Some(
            store
                .get(&ObjectRef::new(name).within(namespace))
                .map(|meta| meta.metadata.resource_version.clone().unwrap_or_default()),
        )
    }

    /// Forgets a Redis (deleted): its passwords and what it read of its Secrets (its ACL users'
    /// too, kept under `<uid>/<user>`, see [`secret_value`]).
    pub fn forget(&self, uid: &str) {
        self.redis.forget(uid);
        self.read.forget(uid);
    }

    /// How many Redis have a password read from their Secret kept (tests).
    pub fn passwords_read(&self) -> usize {
        self.read().len()
    }

    /// Checks every pod of Redis `uid` in its next pass: one refused the password.
    pub fn recheck(&self, uid: &str) {
        self.known().entry(uid.to_owned()).or_default().recheck = true;
    }

    fn known(&self) -> std::sync::MutexGuard<'_, crate::k8s::by_redis::Memory<String, Known>> {
        self.redis.lock()
    }

    fn read(&self) -> std::sync::MutexGuard<'_, crate::k8s::by_redis::Memory<String, Read>> {
        self.read.lock()
    }
}

/// What one pass found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// The user the controller's connections log in as: `None`, the default user; with ACL
    /// users (§3l), the operator's own.
    pub user: Option<&'static str>,
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

impl Settled {
    /// The login of the controller's connections.
    pub fn login(&self) -> Login<'_> {
        Login {
            user: self.user,
            password: self.password.as_deref(),
        }
    }
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

/// Drops from a cached Secret's metadata all but what is read (its name, namespace and
/// resourceVersion): every Secret of the cluster is in this cache, and their labels,
/// annotations (kubectl apply's copy of the object, data included), owner references and
/// managedFields are the tenants' to grow (issue #40.5).
fn strip_secret(secret: &mut SecretMeta) {
    let metadata = &mut secret.metadata;
    metadata.managed_fields = None;
    metadata.annotations = None;
    metadata.labels = None;
    metadata.owner_references = None;
    metadata.finalizers = None;
}

/// The metadata watch of Secrets: the cache (ready when returned), the trigger stream, the task.
pub async fn watch(
    client: &Client,
    namespace: Option<&str>,
) -> Result<watch::Cached<SecretMeta>, Error> {
    // `Api<PartialObjectMeta<_>>` makes metadata-only requests: no Secret data is watched.
    let api: Api<SecretMeta> = k8s::scoped(client, namespace);
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(strip_secret);
    let cached = watch::cached(stream, "Secret");
    cached.ready().await?;
    Ok(cached)
}

/// The password under `key` of Secret `name` in `namespace`, kept under `slot` (the Redis's
/// uid for `spec.auth`, `<uid>/<user>` for an ACL user's), or why there is none; the Secret is
/// read again only when the metadata cache has a newer resourceVersion.
pub async fn secret_value(
    state: &State,
    client: &Client,
    slot: &str,
    (namespace, name, key): (&str, &str, &str),
) -> Result<Result<String, String>, Error> {
    let uid = slot;
    let source = (namespace.to_owned(), name.to_owned(), key.to_owned());
    let missing = || Err(format!("Secret {name} not found"));
    let cached_version = match &state.secrets {
        Some(store) => match store.get(&ObjectRef::new(name).within(namespace)) {
            Some(meta) => Some(meta.metadata.resource_version.clone()),
            None => {
                state.read().remove(uid);
                return Ok(missing());
            }
        },
        None => None,
    };
    if let Some(version) = &cached_version
        && let Some(read) = state.read().get(uid)
        && read.source == source
        && &read.version == version
    {
        return Ok(read.password.clone());
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = api.get_opt(name).await.map_err(Error::Kube)?;
    let version = secret
        .as_ref()
        .and_then(|s| s.metadata.resource_version.clone());
    let password = match &secret {
        None => missing(),
        Some(s) => password_in(s, key).map_err(|e| format!("Secret {name} {e}")),
    };
    state.read().insert(
        uid.to_owned(),
        Read {
            source,
            version,
            password: password.clone(),
        },
    );
    Ok(password)
}

/// The auth step of a pass: [`settle`], and Events for a rotation and for a refusal (only when
/// it is new).
pub async fn apply(
    state: &State,
    client: &Client,
    recorder: &Recorder,
    redis: &Redis,
    pods: &[Arc<CachedPod>],
    tls: Option<&TlsClient>,
) -> Result<Option<Settled>, Error> {
    let settled = settle(state, client, redis, pods, tls).await?;
    let reference = redis.object_ref(&());
    if !settled.rotated.is_empty() {
        let note = format!(
            "Set the Secret's new password on pod(s) {}",
            settled.rotated.join(", ")
        );
        tracing::info!(redis = %redis.name_any(), %note, "password rotated");
        publish(
            recorder,
            &reference,
            None,
            EventType::Normal,
            PASSWORD_ROTATED,
            "Rotate",
            note,
        )
        .await;
    }
    if settled.report
        && let Some(note) = &settled.failure
    {
        tracing::warn!(redis = %redis.name_any(), %note, "auth failed");
        publish(
            recorder,
            &reference,
            None,
            EventType::Warning,
            AUTH_FAILED,
            "Authenticate",
            note.clone(),
        )
        .await;
    }
    Ok(Some(settled))
}

/// One pass: reads the Secret, checks every pod when needed, sets the Secret's password on the
/// pods that still have an earlier one. `Err` only for a failed API read.
pub async fn settle(
    state: &State,
    client: &Client,
    redis: &Redis,
    pods: &[Arc<CachedPod>],
    tls: Option<&TlsClient>,
) -> Result<Settled, Error> {
    let uid = redis.metadata.uid.clone().unwrap_or_default();
    let namespace = k8s::namespace(&redis.metadata)?;
    let port = u16::try_from(redis.spec.port()).unwrap_or_default();
    let wanted: Password = match redis.spec.auth_secret() {
        None => None,
        Some((name, key)) => match secret_value(state, client, &uid, (namespace, name, key)).await?
        {
            Ok(p) => Some(p),
            Err(message) => return Ok(report(state, &uid, None, Some(message))),
        },
    };
    let known = state.known().get(&uid).cloned().unwrap_or_default();
    if !known.recheck && !needs_check(wanted.as_deref(), &known.passwords) {
        return Ok(report(state, &uid, wanted, None));
    }
    let tries = candidates(wanted.as_deref(), &known.passwords);
    let live: Vec<&Arc<CachedPod>> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let checks = future::join_all(live.iter().map(|pod| check(pod, port, tls, &tries))).await;
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
                let server = Server {
                    pod: &name,
                    ip,
                    port,
                    login: Login::password(tries.get(i).copied().flatten()),
                    tls,
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
    {
        let mut known = state.known();
        let entry = known.entry(uid.clone()).or_default();
        entry.passwords = passwords;
        entry.recheck = false;
    }
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
        user: None,
        password,
        rotated: Vec::new(),
        failure,
        report,
    }
}

/// Which of `tries` the pod accepts (`Some(None)`: none); `None` when it does not answer.
async fn check(
    pod: &CachedPod,
    port: u16,
    tls: Option<&TlsClient>,
    tries: &[Option<&str>],
) -> Option<Option<usize>> {
    let ip = pod.ip()?;
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    for (i, password) in tries.iter().enumerate() {
        let server = Server {
            pod: name,
            ip,
            port,
            login: Login::password(*password),
            tls,
        };
        match answer(&server.ping().await) {
            Answer::Accepted => return Some(Some(i)),
            Answer::Refused => {}
            Answer::Unreachable => return None,
        }
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cached_secret_keeps_its_name_and_resource_version_only() {
        let mut secret: SecretMeta = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "pw", "namespace": "a", "resourceVersion": "7",
                "labels": {"tenant/anything": "x"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{}}"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u"}],
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            },
        }))
        .expect("secret metadata");
        strip_secret(&mut secret);
        let kept = serde_json::to_value(&secret.metadata).expect("json");
        assert_eq!(
            kept,
            serde_json::json!({"name": "pw", "namespace": "a", "resourceVersion": "7"})
        );
    }

    use super::*;
    use crate::fixtures::{self, Exchange};
    use http::Method;

    fn redis_naming(secret: &str) -> Redis {
        let spec = serde_json::from_value(serde_json::json!({
            "auth": {"secretRef": {"name": secret, "key": "password"}},
        }))
        .expect("spec");
        let mut redis = Redis::new("cache", spec);
        redis.metadata.namespace = Some("ns".into());
        redis.metadata.uid = Some("u-1".into());
        redis
    }

    /// A Secret with the password and, beside it, a megabyte the controller has no use for.
    fn secret_with_more() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "pw", "namespace": "ns", "resourceVersion": "7"},
            "data": {
                "password": "czNjcjN0",
                "certificate": base64_of(&vec![b'x'; 1 << 20]),
            },
        })
    }

    fn base64_of(bytes: &[u8]) -> String {
        let bytes = k8s_openapi::ByteString(bytes.to_vec());
        serde_json::to_value(bytes)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn only_the_password_of_a_secret_is_kept_and_only_while_its_redis_exists() {
        let (client, server) = fixtures::client();
        let served = server.serve(vec![
            Exchange::expect(Method::GET, "/api/v1/namespaces/ns/secrets/pw")
                .respond(200, secret_with_more()),
        ]);
        let state = State::default();
        let settled = settle(&state, &client, &redis_naming("pw"), &[], None)
            .await
            .expect("settles");
        assert_eq!(settled.password.as_deref(), Some("s3cr3t"));
        {
            let read = state.read();
            let kept = read.get("u-1").expect("the password read is kept");
            assert_eq!(kept.password.as_deref(), Ok("s3cr3t"));
        }
        state.forget("u-1");
        assert_eq!(state.passwords_read(), 0, "forgotten with its Redis");
        drop(client);
        served.verify().await;
    }
}
