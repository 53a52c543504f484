//! TLS on the real nodes (DESIGN §3k): a Redis with `spec.tls` serves only TLS, replicates and
//! fails over over it, loads a renewed certificate without a restart, and with
//! `clientAuth: Required` refuses a client without a certificate. The clients are the machine's
//! `redis-cli --tls` (through the Service and the pod IPs) and the controller's own TLS client.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use api::Redis;
use controller::redis_server::{Login, Server};
use controller::tls::client_config;
use e2e::certs::{Issued, TestCa, redis_dns_names};
use e2e::node::{self, REDIS_IMAGE};
use e2e::{Context, Error, TestNamespace, seen, wait_for};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(120);
const PORT: u16 = 6379;
const EXPORTER_IMAGE: &str = "localhost/redis-exporter:bed";
const PASSWORD: &str = "tls-Passw0rd-for-the-bed";

/// Creates or replaces the `kubernetes.io/tls` Secret `name` with `issued` and the CA.
async fn put_tls_secret(
    ns: &TestNamespace,
    name: &str,
    ca: &TestCa,
    issued: &Issued,
) -> Result<(), Error> {
    secrets::put_secret(ns, name, Some("kubernetes.io/tls"), ca.secret_data(issued)).await
}

/// Writes the CA (and a client certificate) where the machine's redis-cli reads them.
fn write_client_files(dir: &Path, ca: &TestCa, client: &Issued) -> Result<(), Error> {
    for (file, text) in [
        ("ca.crt", ca.pem()),
        ("client.crt", client.cert.clone()),
        ("client.key", client.key.clone()),
    ] {
        std::fs::write(dir.join(file), text)
            .map_err(|e| Error::process(format!("writing {file}"), e))?;
    }
    Ok(())
}

/// `redis-cli --tls --cacert ca.crt [--cert --key] -a PASSWORD ARGS` against host:port.
async fn tls_cli(
    dir: &Path,
    host: &str,
    port: u16,
    with_client_cert: bool,
    args: &[&str],
) -> Result<String, String> {
    let file = |name: &str| dir.join(name).display().to_string();
    let (ca, cert, key) = (file("ca.crt"), file("client.crt"), file("client.key"));
    let mut all = vec!["--tls", "--cacert", &ca];
    if with_client_cert {
        all.extend(["--cert", &cert, "--key", &key]);
    }
    all.extend(["--no-auth-warning", "-a", PASSWORD]);
    all.extend(args);
    node::redis_cli(host, port, &all)
        .await
        .map_err(|e| e.to_string())
}

fn redis_with_tls(name: &str, spec: serde_json::Value) -> Result<Redis, Error> {
    let spec = serde_json::from_value(spec).map_err(|e| Error::process("the test's spec", e))?;
    Ok(Redis::new(name, spec))
}

/// The leaf certificate of `issued`, as the controller compares it.
fn leaf_of(ca: &TestCa, issued: &Issued) -> Result<Vec<u8>, Error> {
    let material = ca.material(issued)?;
    Ok(material
        .leaf()
        .map(|c| c.as_ref().to_vec())
        .unwrap_or_default())
}

/// Replication over TLS: only TLS on the port (plaintext refused), `redis-cli --tls` through
/// the Service, a failover; then a renewal (new key and serial, same CA) in the Secret is served
/// by every pod, with no container restarted and the replication links up, the controller
/// saying so in an Event and the `Certificate` condition.
#[tokio::test]
async fn a_tls_redis_replicates_fails_over_and_loads_a_renewed_certificate_live()
-> Result<(), Error> {
    const NAME: &str = "secure";
    let (_cluster, ns, _operator) = node::setup("tls").await?;
    let dir = tempfile::tempdir().map_err(|e| Error::process("a directory", e))?;
    let ca = TestCa::new("e2e Redis CA")?;
    let names = redis_dns_names(NAME, ns.name());
    let first = ca.issue(&names)?;
    write_client_files(dir.path(), &ca, &ca.issue(&["a-client".to_owned()])?)?;
    put_tls_secret(&ns, "secure-tls", &ca, &first).await?;
    secrets::create_password_secret(&ns, "secure-auth", PASSWORD).await?;
    let redis: Api<Redis> = ns.api();
    let spec = json!({
        "replicas": 3, "image": REDIS_IMAGE, "mode": "Replication",
        "replication": {"failoverAfter": "5s"},
        "auth": {"secretRef": {"name": "secure-auth"}},
        "tls": {"secretRef": {"name": "secure-tls"}},
        "exporter": {"image": EXPORTER_IMAGE},
    });
    redis
        .create(&PostParams::default(), &redis_with_tls(NAME, spec)?)
        .await
        .context("creating the Redis")?;
    let primary = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;

    // Only TLS on the port; through the Service with TLS, writes reach the primary.
    let service = conditions::service_ip(&ns, NAME, CONVERGE).await?;
    let plain = node::redis_cli(&service, PORT, &["-a", PASSWORD, "PING"])
        .await
        .map_err(|e| e.to_string());
    assert!(
        plain.as_deref() != Ok("PONG"),
        "a plaintext client got through: {plain:?}"
    );
    wait_for("PING over TLS through the Service", CONVERGE, || {
        tls_cli(dir.path(), &service, PORT, false, &["PING"])
    })
    .await?;
    let set = tls_cli(dir.path(), &service, PORT, false, &["SET", "k1", "v1"]).await;
    assert_eq!(set.as_deref(), Ok("OK"));

    // The exporter reads its redis-server over TLS.
    let pods: Api<Pod> = ns.api();
    let primary_pod = pods.get(&primary).await.context("reading the primary")?;
    let metrics_url = format!(
        "http://{}:9121/metrics",
        pods::ip(&primary_pod).unwrap_or_default()
    );
    wait_for("the exporter's redis_up 1", CONVERGE, || async {
        let metrics = node::http_get(&metrics_url).await?;
        match node::sample(&metrics, "redis_up") {
            Some("1") => Ok(()),
            other => Err(format!("redis_up {other:?}")),
        }
    })
    .await?;

    // A failover over TLS: the primary's pod goes, a replica takes over, all replicate again.
    pods.delete(&primary, &DeleteParams::default().grace_period(0))
        .await
        .context("deleting the primary")?;
    conditions::wait_promoted(&ns, NAME, &primary, CONVERGE).await?;
    conditions::wait_replicating(&ns, NAME, 3, CONVERGE, Some(&primary)).await?;
    let got = wait_for("k1 after the failover", CONVERGE, || {
        tls_cli(dir.path(), &service, PORT, false, &["GET", "k1"])
    })
    .await?;
    assert_eq!(got, "v1");

    // The renewal: the Secret's new certificate is served by every pod, none restarted.
    let before: BTreeMap<String, i32> = pods::of_redis(&ns.api(), NAME)
        .await?
        .iter()
        .map(|p| (p.name_any(), pods::restarts(p)))
        .collect();
    let renewed = ca.issue(&names)?;
    put_tls_secret(&ns, "secure-tls", &ca, &renewed).await?;
    let wanted = leaf_of(&ca, &renewed)?;
    let client = client_config(
        &ca.material(&renewed)?,
        &[],
        &api::tls::server_name(NAME, ns.name()),
    )
    .map_err(|e| Error::process("the test's client", e))?;
    wait_for(
        "every pod to serve the renewed certificate",
        CONVERGE,
        || async {
            let pods = pods::of_redis(&ns.api(), NAME).await?;
            let mut behind = Vec::new();
            for pod in &pods {
                let server = Server {
                    pod: pod.metadata.name.as_deref().unwrap_or_default(),
                    ip: pods::ip(pod).unwrap_or_default(),
                    port: PORT,
                    login: Login::default(),
                    tls: Some(&client),
                };
                let served = server
                    .served_certificate()
                    .await
                    .map_err(|e| e.to_string())?;
                if served.map(|c| c.as_ref().to_vec()) != Some(wanted.clone()) {
                    behind.push(pod.name_any());
                }
            }
            if behind.is_empty() && pods.len() == 3 {
                Ok(())
            } else {
                Err(format!("still on the first certificate: {behind:?}"))
            }
        },
    )
    .await?;
    let after: BTreeMap<String, i32> = pods::of_redis(&ns.api(), NAME)
        .await?
        .iter()
        .map(|p| (p.name_any(), pods::restarts(p)))
        .collect();
    assert_eq!(before, after, "pods or restart counts changed");
    conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    wait_for("the Certificate condition", CONVERGE, || async {
        let stored = redis.get(NAME).await.map_err(seen)?;
        match conditions::redis_condition(&stored, "Certificate") {
            Some((status, reason)) if status == "True" && reason == "Current" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    let reasons = ns.event_reasons(None).await?;
    assert!(
        reasons.iter().any(|r| r == "CertificateReloaded"),
        "{reasons:?}"
    );

    // A key that is not the certificate's: refused, the last good certificate stays.
    let other = ca.issue(&names)?;
    let broken = Issued {
        cert: other.cert,
        key: first.key.clone(),
    };
    put_tls_secret(&ns, "secure-tls", &ca, &broken).await?;
    wait_for("the Secret to be refused", CONVERGE, || async {
        let stored = redis.get(NAME).await.map_err(seen)?;
        match conditions::redis_condition(&stored, "Certificate") {
            Some((status, reason)) if status == "False" && reason == "TLSSecretInvalid" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    let pong = tls_cli(dir.path(), &service, PORT, false, &["PING"]).await;
    assert_eq!(
        pong.as_deref(),
        Ok("PONG"),
        "the last good certificate serves"
    );
    Ok(())
}

/// `clientAuth: Required`: a client without a certificate signed by the Secret's CA is refused,
/// one with it is served; the probes, the exporter and the controller show the pod's own.
#[tokio::test]
async fn mutual_tls_refuses_a_client_without_a_certificate() -> Result<(), Error> {
    const NAME: &str = "mutual";
    let (_cluster, ns, _operator) = node::setup("tls-mutual").await?;
    let dir = tempfile::tempdir().map_err(|e| Error::process("a directory", e))?;
    let ca = TestCa::new("e2e Redis CA")?;
    put_tls_secret(
        &ns,
        "mutual-tls",
        &ca,
        &ca.issue(&redis_dns_names(NAME, ns.name()))?,
    )
    .await?;
    write_client_files(dir.path(), &ca, &ca.issue(&["a-client".to_owned()])?)?;
    secrets::create_password_secret(&ns, "mutual-auth", PASSWORD).await?;
    let redis: Api<Redis> = ns.api();
    let spec = json!({
        "replicas": 1, "image": REDIS_IMAGE,
        "auth": {"secretRef": {"name": "mutual-auth"}},
        "tls": {"secretRef": {"name": "mutual-tls"}, "clientAuth": "Required"},
        "exporter": {"image": EXPORTER_IMAGE},
    });
    redis
        .create(&PostParams::default(), &redis_with_tls(NAME, spec)?)
        .await
        .context("creating the Redis")?;
    // Ready through its own probes (redis-cli with the pod's certificate); the Certificate
    // condition True means the controller's handshake, with its client certificate, went through.
    wait_for(
        "the Redis Ready with its certificate current",
        CONVERGE,
        || async {
            let stored = redis.get(NAME).await.map_err(seen)?;
            match (
                conditions::redis_condition(&stored, "Ready"),
                conditions::redis_condition(&stored, "Certificate"),
            ) {
                (Some((ready, _)), Some((current, _))) if ready == "True" && current == "True" => {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await?;
    let pods: Api<Pod> = ns.api();
    let pod = pods
        .list(&ListParams::default())
        .await
        .context("listing the pods")?
        .items
        .into_iter()
        .find(|p| p.name_any().starts_with(NAME))
        .ok_or_else(|| Error::process("the pod", "none"))?;
    let ip = pods::ip(&pod).unwrap_or_default().to_owned();
    let without = tls_cli(dir.path(), &ip, PORT, false, &["PING"]).await;
    assert!(without.is_err(), "no client certificate: {without:?}");
    let with = tls_cli(dir.path(), &ip, PORT, true, &["PING"]).await;
    assert_eq!(with.as_deref(), Ok("PONG"));
    let metrics = node::http_get(&format!("http://{ip}:9121/metrics")).await;
    let up = metrics
        .as_deref()
        .ok()
        .and_then(|m| node::sample(m, "redis_up"));
    assert_eq!(
        up,
        Some("1"),
        "the exporter with the pod's certificate: {metrics:?}"
    );
    Ok(())
}
