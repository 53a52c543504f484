//! TLS (`spec.tls`, DESIGN §3k): the controller's own TLS client for the pods of a Redis, and
//! the live reload of a renewed certificate.
//!
//! Each pass of a Redis with `spec.tls` reads its Secret (a GET only when the Secret metadata
//! cache shows a new resourceVersion), checks it ([`material`]) and builds the client every
//! connection to its pods uses: the Secret's CAs (and those of the certificates it held before,
//! so pods still serving one stay reachable while they move on) and its certificate as the
//! client's. A Secret that turns bad (no key, not PEM, a key of another certificate) is not
//! used: the last good one stays in use, the `Certificate` condition says why, with a Warning
//! Event.
//!
//! A renewal reaches the pods' files through their Secret volume (the kubelet writes it within
//! its sync period), but redis-server keeps the certificate it loaded: each pod whose handshake
//! shows another certificate than the Secret's is told to reload ([`Server::reload_tls`]) and is
//! checked again; a pod still on the old one (its files not yet written) is looked at again
//! soon. No pod restarts, and replication links stay up (they are not renegotiated).
//!
//! - [`material`]: what a `spec.tls` Secret holds, parsed and checked (pure).
//! - [`status`]: the `Certificate` condition, and Ready False without any good Secret (pure).
//! - this module: the Secret reads, the client, and the reload step with its Events.

pub mod material;
pub mod status;

use crate::Error;
use crate::auth::SecretMeta;
use crate::cached::CachedPod;
use crate::k8s;
use crate::k8s::by_redis::{ByRedis, Remembers};
use crate::k8s::events::publish;
use crate::redis_server::{Login, Server, TlsClient};
use crate::step::Step;
use api::Redis;
use futures::future;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use material::Material;
use rustls::pki_types::{CertificateDer, ServerName};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Reason of the Normal Event when pods serve the Secret's new certificate.
pub const CERTIFICATE_RELOADED: &str = "CertificateReloaded";
/// Reason of the Warning Event and of the `Certificate` condition for a Secret that cannot be
/// used.
pub const SECRET_INVALID: &str = "TLSSecretInvalid";
/// A pod still serves an older certificate than its Secret's: look again this soon (the kubelet
/// writes a changed Secret into the pods' volumes within its sync period, about a minute).
pub const RELOAD_RETRY: Duration = Duration::from_secs(5);
/// The most CA certificates trusted for one Redis, the Secret's and earlier ones together.
const MAX_TRUSTED: usize = 2 * material::MAX_CA_CERTIFICATES;

/// What the controller knows of the TLS Secrets of each Redis (by uid). In memory: a restarted
/// controller trusts only the CAs the Secret holds (a CA change keeps the old CA in `ca.crt`
/// until every pod serves the new certificate; DESIGN §3k).
#[derive(Default)]
pub struct State {
    /// The Secret metadata cache (shared with auth); `None`: every read is a GET.
    secrets: Option<Store<SecretMeta>>,
    redis: ByRedis<Known>,
}

#[derive(Default)]
struct Known {
    /// (namespace, name) of the Secret read, and its resourceVersion then.
    source: (String, String),
    version: Option<String>,
    /// What it holds: checked material, or what is wrong with it.
    read: Option<Result<Material, String>>,
    /// The last good material, in use, and the client built from it.
    good: Option<(Material, TlsClient)>,
    /// CAs of earlier good Secrets, still trusted (newest first, bounded).
    earlier_roots: Vec<CertificateDer<'static>>,
    /// Pods (name → uid) seen serving the good certificate; emptied when it changes.
    verified: BTreeMap<String, String>,
    /// The failure last reported, so a repeated one is not published every pass.
    reported: Option<String>,
}

impl State {
    /// With the Secret metadata cache (`auth::watch`).
    pub fn with_secrets(secrets: Store<SecretMeta>) -> Self {
        State {
            secrets: Some(secrets),
            ..State::default()
        }
    }

    /// Forgets a Redis (deleted).
    pub fn forget(&self, uid: &str) {
        self.redis.forget(uid);
    }

    fn known(&self) -> std::sync::MutexGuard<'_, crate::k8s::by_redis::Memory<String, Known>> {
        self.redis.lock()
    }
}

impl Remembers for State {
    fn forget(&self, uid: &str) {
        State::forget(self, uid);
    }

    fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.redis.keep_only(exists);
    }
}

/// What the TLS step of one pass found.
#[derive(Debug, Default)]
pub struct Settled {
    /// The client of every connection to the pods; `None` without `spec.tls`, or with no good
    /// Secret yet (nothing can reach the pods: the steps that talk to them wait).
    pub client: Option<TlsClient>,
    /// The Secret cannot be used (its name and why); the last good one stays in use if any.
    pub failure: Option<String>,
    /// `failure` is new: publish it as a Warning Event.
    pub report: bool,
    /// Pods that serve the Secret's certificate since this pass.
    pub reloaded: Vec<String>,
    /// Pods still serving another certificate (their files not yet renewed).
    pub pending: Vec<String>,
    /// The Secret's name.
    pub secret: String,
}

impl Settled {
    /// When to look again: soon while a pod still has to load the new certificate.
    pub fn retry(&self) -> Option<Duration> {
        (!self.pending.is_empty()).then_some(RELOAD_RETRY)
    }
}

/// The first half of the TLS step of a pass, before anything talks to the pods: the Secret
/// read and checked, the client built; a Secret gone bad is published as a Warning Event
/// (once). `None` without `spec.tls`.
pub async fn prepare(step: &Step<'_>, state: &State) -> Result<Option<Settled>, Error> {
    let (client, recorder, redis) = (step.client, step.recorder, step.redis);
    if redis.spec.tls.is_none() {
        state.forget(redis.metadata.uid.as_deref().unwrap_or_default());
        return Ok(None);
    }
    let settled = settle(state, client, redis).await?;
    if settled.report
        && let Some(note) = &settled.failure
    {
        tracing::warn!(redis = %redis.name_any(), %note, "TLS Secret cannot be used");
        publish(
            recorder,
            &redis.object_ref(&()),
            None,
            EventType::Warning,
            SECRET_INVALID,
            "LoadCertificate",
            note.clone(),
        )
        .await;
    }
    Ok(Some(settled))
}

/// The Secret read and checked, and the client of its good material. `Err` only for a failed
/// API read.
pub async fn settle(state: &State, client: &Client, redis: &Redis) -> Result<Settled, Error> {
    let uid = redis.metadata.uid.clone().unwrap_or_default();
    let Some(tls) = &redis.spec.tls else {
        state.forget(&uid);
        return Ok(Settled::default());
    };
    let namespace = k8s::namespace(&redis.metadata)?;
    let secret_name = tls.secret_ref.name.clone();
    let name = api::tls::server_name(&redis.name_any(), namespace);
    read_secret(state, client, &uid, namespace, &secret_name, &name).await?;

    let mut known = state.known();
    let known = known.entry(uid).or_default();
    let failure = match &known.read {
        Some(Err(problem)) => Some(format!("Secret {secret_name}: {problem}")),
        None => Some(format!("Secret {secret_name} not found")),
        Some(Ok(_)) => None,
    };
    let failure = match (&failure, &known.good) {
        (Some(f), Some(_)) => Some(format!("{f}; the last good certificate stays in use")),
        _ => failure,
    };
    let report = failure.is_some() && failure != known.reported;
    known.reported.clone_from(&failure);
    Ok(Settled {
        client: known.good.as_ref().map(|(_, client)| client.clone()),
        failure,
        report,
        secret: secret_name,
        ..Settled::default()
    })
}

/// The second half, once the login is known (a reload is a `CONFIG SET`): every pod not yet
/// seen serving the good certificate is looked at and, when it serves another, told to reload.
/// Pods that now serve it are published in one Normal Event.
pub async fn reload(
    state: &State,
    recorder: &Recorder,
    redis: &Redis,
    settled: &mut Settled,
    pods: &[Arc<CachedPod>],
    login: Login<'_>,
) {
    let Some(tls_client) = settled.client.clone() else {
        return;
    };
    let uid = redis.metadata.uid.clone().unwrap_or_default();
    let (leaf, verified) = {
        let mut known = state.known();
        let known = known.entry(uid.clone()).or_default();
        let leaf = known
            .good
            .as_ref()
            .and_then(|(good, _)| good.leaf().cloned());
        (leaf, known.verified.clone())
    };
    let port = u16::try_from(redis.spec.port()).unwrap_or_default();
    let unverified: Vec<&Arc<CachedPod>> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && p.ip().is_some())
        .filter(|p| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            verified.get(name).map(String::as_str) != p.metadata.uid.as_deref()
        })
        .collect();
    let checks = future::join_all(
        unverified
            .iter()
            .map(|pod| bring_up_to_date(pod, port, &tls_client, login, leaf.as_ref())),
    )
    .await;
    {
        let mut known = state.known();
        let known = known.entry(uid).or_default();
        for (pod, check) in unverified.iter().zip(checks) {
            let pod_name = pod.name_any();
            match check {
                Check::Current { reloaded } => {
                    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
                    known.verified.insert(pod_name.clone(), pod_uid);
                    if reloaded {
                        settled.reloaded.push(pod_name);
                    }
                }
                Check::Behind => settled.pending.push(pod_name),
                Check::Unreachable => {}
            }
        }
        let live: Vec<&str> = pods
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .collect();
        known
            .verified
            .retain(|name, _| live.contains(&name.as_str()));
    }
    if !settled.reloaded.is_empty() {
        let note = format!(
            "Pod(s) {} serve the certificate of Secret {} (reloaded, no restart)",
            settled.reloaded.join(", "),
            settled.secret
        );
        tracing::info!(redis = %redis.name_any(), %note, "certificate reloaded");
        publish(
            recorder,
            &redis.object_ref(&()),
            None,
            EventType::Normal,
            CERTIFICATE_RELOADED,
            "Reload",
            note,
        )
        .await;
    }
}

/// What one pod's check found.
enum Check {
    /// It serves the Secret's certificate (`reloaded`: since it was told to, in this pass).
    Current { reloaded: bool },
    /// It still serves another one after a reload.
    Behind,
    /// No handshake (not started, not TLS, not the CA): the other steps see it too.
    Unreachable,
}

/// Reads the certificate `pod` serves; when it is not `leaf`, has it reload its files and reads
/// again.
async fn bring_up_to_date(
    pod: &CachedPod,
    port: u16,
    tls: &TlsClient,
    login: Login<'_>,
    leaf: Option<&CertificateDer<'static>>,
) -> Check {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let server = Server {
        pod: name,
        ip: pod.ip().unwrap_or_default(),
        port,
        login,
        tls: Some(tls),
    };
    let served = match server.served_certificate().await {
        Ok(served) => served,
        Err(e) => {
            tracing::debug!(pod = name, error = %e, "no TLS handshake");
            return Check::Unreachable;
        }
    };
    if served.as_ref() == leaf {
        return Check::Current { reloaded: false };
    }
    if let Err(e) = server.reload_tls().await {
        tracing::info!(pod = name, error = %e, "could not reload the certificate");
        return Check::Behind;
    }
    match server.served_certificate().await {
        Ok(now) if now.as_ref() == leaf => Check::Current { reloaded: true },
        _ => Check::Behind,
    }
}

/// Reads Secret `name` when its resourceVersion moved, and records what it holds; a good one
/// becomes the material in use, its client built for `server_name`.
async fn read_secret(
    state: &State,
    client: &Client,
    uid: &str,
    namespace: &str,
    name: &str,
    server_name: &str,
) -> Result<(), Error> {
    let source = (namespace.to_owned(), name.to_owned());
    let cached_version = match &state.secrets {
        Some(store) => match store.get(&ObjectRef::new(name).within(namespace)) {
            Some(meta) => Some(meta.metadata.resource_version.clone()),
            None => {
                let mut known = state.known();
                let known = known.entry(uid.to_owned()).or_default();
                known.source = source;
                known.version = None;
                known.read = None;
                return Ok(());
            }
        },
        None => None,
    };
    {
        let known = state.known();
        if let Some(known) = known.get(uid)
            && cached_version.is_some()
            && known.source == source
            && Some(&known.version) == cached_version.as_ref()
            && known.read.is_some()
        {
            return Ok(());
        }
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = api.get_opt(name).await.map_err(Error::Kube)?;
    let version = secret
        .as_ref()
        .and_then(|s| s.metadata.resource_version.clone());
    let read = secret.map(|s| {
        let data: BTreeMap<String, Vec<u8>> = s
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        material::parse(&data)
    });
    let mut known = state.known();
    let known = known.entry(uid.to_owned()).or_default();
    if let Some(Ok(material)) = &read {
        let changed = known
            .good
            .as_ref()
            .is_none_or(|(good, _)| good.chain != material.chain || good.roots != material.roots);
        if changed {
            // The CAs of the material in use stay trusted while the pods move on.
            let mut earlier: Vec<CertificateDer<'static>> = known
                .good
                .iter()
                .flat_map(|(good, _)| good.roots.iter().cloned())
                .chain(known.earlier_roots.iter().cloned())
                .filter(|root| !material.roots.contains(root))
                .collect();
            earlier.dedup();
            earlier.truncate(MAX_TRUSTED.saturating_sub(material.roots.len()));
            match client_config(material, &earlier, server_name) {
                Ok(tls) => {
                    known.good = Some((material.clone(), tls));
                    known.earlier_roots = earlier;
                    // Every pod is to be checked against the new certificate.
                    known.verified.clear();
                }
                Err(problem) => {
                    known.source = source;
                    known.version = version;
                    known.read = Some(Err(problem));
                    return Ok(());
                }
            }
        }
    }
    known.source = source;
    known.version = version;
    known.read = read;
    Ok(())
}

/// The client for the pods of one Redis: trusting the Secret's CAs and `earlier` ones, showing
/// the Secret's certificate when asked (clientAuth), verifying `server_name`.
pub fn client_config(
    material: &Material,
    earlier: &[CertificateDer<'static>],
    server_name: &str,
) -> Result<TlsClient, String> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in material.roots.iter().chain(earlier) {
        // An earlier CA that no longer parses is simply not trusted.
        if roots.add(ca.clone()).is_err() && material.roots.contains(ca) {
            return Err("ca.crt holds a certificate that is not a CA certificate".to_owned());
        }
    }
    let provider = api::tls::crypto_provider();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS settings: {e}"))?
        .with_root_certificates(roots)
        .with_client_auth_cert(material.chain.clone(), material.key.clone_key())
        .map_err(|e| format!("tls.crt and tls.key cannot be used as a client's: {e}"))?;
    let name = ServerName::try_from(server_name.to_owned())
        .map_err(|e| format!("{server_name} is not a server name: {e}"))?;
    // Said here, with the name, rather than as every pod's failed handshake.
    let leaf = material
        .leaf()
        .ok_or_else(|| "tls.crt holds no certificate".to_owned())?;
    let parsed = rustls::server::ParsedCertificate::try_from(leaf)
        .map_err(|e| format!("tls.crt cannot be read: {e}"))?;
    rustls::client::verify_server_name(&parsed, &name).map_err(|_| {
        format!("the certificate in tls.crt does not name {server_name}, which the operator checks on every pod")
    })?;
    Ok(TlsClient {
        config: Arc::new(config),
        name,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The material of a freshly issued Secret whose certificate names `names`.
    fn material_for(names: &[&str]) -> Material {
        let (ca, cert, key) = material::tests::issued(names);
        let data: BTreeMap<String, Vec<u8>> = [
            (api::tls::CA_KEY, ca),
            (api::tls::CERT_KEY, cert),
            (api::tls::PRIVATE_KEY_KEY, key),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_bytes()))
        .collect();
        material::parse(&data).expect("good material")
    }

    /// A client for tests, from a freshly issued Secret.
    pub(crate) fn a_client() -> TlsClient {
        client_config(&material_for(&["r.ns.svc"]), &[], "r.ns.svc").expect("a client")
    }

    fn redis_with_tls() -> Redis {
        let spec = serde_json::from_value(serde_json::json!({
            "tls": {"secretRef": {"name": "t"}},
        }))
        .expect("spec");
        let mut redis = Redis::new("r", spec);
        redis.metadata.namespace = Some("ns".into());
        redis.metadata.uid = Some("u-1".into());
        redis
    }

    fn secret(version: &str, data: &[(&str, &str)]) -> serde_json::Value {
        let data: serde_json::Map<String, serde_json::Value> = data
            .iter()
            .map(|(k, v)| {
                let bytes = k8s_openapi::ByteString(v.as_bytes().to_vec());
                (
                    (*k).to_owned(),
                    serde_json::to_value(bytes).expect("base64"),
                )
            })
            .collect();
        serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "t", "namespace": "ns", "resourceVersion": version},
            "type": "kubernetes.io/tls",
            "data": data,
        })
    }

    #[tokio::test]
    async fn a_secret_gone_bad_is_refused_and_the_last_good_one_stays_in_use() {
        use crate::fixtures::{self, Exchange};
        use http::Method;
        let (ca, cert, key) = material::tests::issued(&["r.ns.svc"]);
        let (_, _, other_key) = material::tests::issued(&["r.ns.svc"]);
        let good = [
            ("ca.crt", ca.as_str()),
            ("tls.crt", cert.as_str()),
            ("tls.key", key.as_str()),
        ];
        let bad = [
            ("ca.crt", ca.as_str()),
            ("tls.crt", cert.as_str()),
            ("tls.key", other_key.as_str()),
        ];
        let (client, server) = fixtures::client();
        let path = "/api/v1/namespaces/ns/secrets/t";
        let served = server.serve(vec![
            Exchange::expect(Method::GET, path).respond(200, secret("1", &good)),
            Exchange::expect(Method::GET, path).respond(200, secret("2", &bad)),
        ]);
        // No metadata cache: every pass reads the Secret.
        let state = State::default();
        let redis = redis_with_tls();
        let first = settle(&state, &client, &redis).await.expect("settles");
        assert!(first.client.is_some());
        assert_eq!(first.failure, None);
        let second = settle(&state, &client, &redis).await.expect("settles");
        assert!(second.client.is_some(), "the last good Secret stays in use");
        assert_eq!(
            second.failure.as_deref(),
            Some(
                "Secret t: tls.key is not the key of the certificate in tls.crt; the last good certificate stays in use"
            )
        );
        assert!(second.report, "a new failure is published once");
        drop(client);
        served.verify().await;
    }

    #[tokio::test]
    async fn without_any_good_secret_there_is_no_client() {
        use crate::fixtures::{self, Exchange};
        use http::Method;
        let (client, server) = fixtures::client();
        let served = server.serve(vec![
            Exchange::expect(Method::GET, "/api/v1/namespaces/ns/secrets/t").respond(
                404,
                crate::fixtures::status(404, "NotFound", "secrets \"t\" not found"),
            ),
        ]);
        let state = State::default();
        let settled = settle(&state, &client, &redis_with_tls())
            .await
            .expect("settles");
        assert!(settled.client.is_none());
        assert_eq!(settled.failure.as_deref(), Some("Secret t not found"));
        drop(client);
        served.verify().await;
    }

    #[test]
    fn a_certificate_without_the_service_name_is_refused_by_name() {
        let material = material_for(&["elsewhere.ns.svc"]);
        let error = client_config(&material, &[], "r.ns.svc").expect_err("refused");
        assert_eq!(
            error,
            "the certificate in tls.crt does not name r.ns.svc, which the operator checks on every pod"
        );
    }

    #[test]
    fn the_client_verifies_the_service_name_not_the_pod_ip() {
        let client = a_client();
        assert_eq!(
            client.name,
            ServerName::try_from("r.ns.svc".to_owned()).expect("a name")
        );
    }
}
