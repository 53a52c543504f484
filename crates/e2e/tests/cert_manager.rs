//! A Redis whose TLS certificate comes from cert-manager (README "TLS (`spec.tls`)"), on the real
//! nodes: the objects of `deploy/samples/redis-tls.yaml` applied as a user would (a self-signed
//! Issuer, a CA Certificate, a CA Issuer, the serving Certificate, the password Secret, the
//! Redis), issued by the cluster's cert-manager (on the bed, cert-manager's own controllers:
//! `bed-cert-manager`), then renewed the way `cmctl renew` asks for it.
//!
//! The bed has no cluster DNS, so clients connect to the ClusterIP and the pod IPs and check the
//! names a client would use: `<name>.<namespace>.svc` through the Service, and every pod's
//! `<pod>.<name>-headless.<namespace>.svc` (the Certificate's wildcard), each verified against
//! the `ca.crt` cert-manager wrote.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use api::Redis;
use controller::redis_server::{Login, Server, TlsClient};
use controller::tls::material::Material;
use e2e::cert_manager::{self, CertManager};
use e2e::certs::redis_dns_names;
use e2e::node::{self, REDIS_IMAGE};
use e2e::{Context, Error, TestNamespace, repo_root, seen, wait_for};
use e2e::{conditions, pods};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde::Deserialize;
use serde_json::Value;

const SAMPLE: &str = "deploy/samples/redis-tls.yaml";
/// The namespace the sample's objects and DNS names are written for.
const SAMPLE_NAMESPACE: &str = "default";
const PORT: u16 = 6379;
/// The sample's `spec.replicas`.
const REPLICAS: usize = 3;
const CONVERGE: Duration = Duration::from_secs(120);
/// The kubelet writes a changed Secret into the pods' volumes within its sync period (about a
/// minute), then the controller has each pod reload it.
const RENEWAL: Duration = Duration::from_secs(240);

fn sample_error(reason: impl ToString) -> Error {
    Error::Manifest {
        path: repo_root().join(SAMPLE),
        reason: reason.to_string(),
    }
}

/// The sample's objects, moved from `default` into `ns`: each one's namespace, and the
/// namespace written in the serving Certificate's DNS names (checked to be the names the README
/// lists for `default` first, so the sample is what is tested).
fn sample_objects(ns: &str) -> Result<Vec<Value>, Error> {
    let path = repo_root().join(SAMPLE);
    let text = std::fs::read_to_string(&path).map_err(sample_error)?;
    let mut objects = Vec::new();
    for document in serde_norway::Deserializer::from_str(&text) {
        let mut object = Value::deserialize(document).map_err(sample_error)?;
        if object.is_null() {
            continue;
        }
        if !object["metadata"]["namespace"].is_null() {
            return Err(sample_error(
                "an object names its namespace; the sample is applied into the current one",
            ));
        }
        object["metadata"]["namespace"] = ns.into();
        if object["kind"] == "Certificate" && object["spec"]["dnsNames"].is_array() {
            let redis = object["spec"]["secretName"]
                .as_str()
                .and_then(|s| s.strip_suffix("-tls"))
                .ok_or_else(|| sample_error("the serving Certificate's Secret is not <name>-tls"))?
                .to_owned();
            let names: Vec<String> =
                serde_json::from_value(object["spec"]["dnsNames"].clone()).map_err(sample_error)?;
            if names != redis_dns_names(&redis, SAMPLE_NAMESPACE) {
                return Err(sample_error(format!(
                    "the serving Certificate's dnsNames {names:?} are not the README's {:?}",
                    redis_dns_names(&redis, SAMPLE_NAMESPACE)
                )));
            }
            object["spec"]["dnsNames"] = redis_dns_names(&redis, ns).into();
        }
        objects.push(object);
    }
    Ok(objects)
}

/// The first of `objects` of `kind`.
fn only<'a>(objects: &'a [Value], kind: &str) -> Result<&'a Value, Error> {
    objects
        .iter()
        .find(|o| o["kind"] == kind)
        .ok_or_else(|| sample_error(format!("no {kind}")))
}

/// Creates the sample's objects as `kubectl apply -f` would, with the bed's Redis image.
async fn apply_sample(
    cluster: &e2e::Cluster,
    ns: &TestNamespace,
    objects: &[Value],
) -> Result<(), Error> {
    let client = cluster.client();
    for object in objects {
        match object["kind"].as_str().unwrap_or_default() {
            "Secret" => {
                let secret: Secret =
                    serde_json::from_value(object.clone()).map_err(sample_error)?;
                ns.api::<Secret>()
                    .patch(
                        &secret.name_any(),
                        &PatchParams::apply(e2e::FIELD_MANAGER).force(),
                        &Patch::Apply(&secret),
                    )
                    .await
                    .context("applying the sample's Secret")?;
            }
            "Redis" => {
                let mut redis: Redis =
                    serde_json::from_value(object.clone()).map_err(sample_error)?;
                // The sample's image is not on the bed (its registries are unreachable).
                redis.spec.image = Some(REDIS_IMAGE.to_owned());
                ns.api::<Redis>()
                    .create(&PostParams::default(), &redis)
                    .await
                    .context("creating the sample's Redis")?;
            }
            _ if object["apiVersion"] == "cert-manager.io/v1" => {
                cert_manager::apply(&client, ns.name(), object).await?;
            }
            other => return Err(sample_error(format!("the test applies no {other}"))),
        }
    }
    Ok(())
}

/// The Secret cert-manager wrote, as the controller reads it.
async fn issued(
    ns: &TestNamespace,
    name: &str,
) -> Result<(BTreeMap<String, Vec<u8>>, Material), Error> {
    let secret = ns
        .api::<Secret>()
        .get(name)
        .await
        .context(format!("reading the Secret {name}"))?;
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data: BTreeMap<String, Vec<u8>> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    let material = controller::tls::material::parse(&data)
        .map_err(|e| Error::process(format!("reading the Secret {name}"), e))?;
    Ok((data, material))
}

fn leaf(material: &Material) -> Vec<u8> {
    material
        .leaf()
        .map(|c| c.as_ref().to_vec())
        .unwrap_or_default()
}

fn serial(material: &Material) -> Vec<u8> {
    cert_manager::serial_number(&leaf(material)).unwrap_or_default()
}

/// A client trusting only the Secret's `ca.crt` and verifying `server_name`; refused (with the
/// reason) when the Secret's certificate does not name it.
fn client_for(material: &Material, server_name: &str) -> Result<TlsClient, Error> {
    controller::tls::client_config(material, &[], server_name)
        .map_err(|e| Error::process(format!("a client for {server_name}"), e))
}

/// The certificate `ip` serves to `client` (which verifies it), DER.
async fn served(client: &TlsClient, pod: &str, ip: &str) -> Result<Vec<u8>, String> {
    let server = Server {
        pod,
        ip,
        port: PORT,
        login: Login::default(),
        tls: Some(client),
    };
    match server.served_certificate().await {
        Ok(Some(certificate)) => Ok(certificate.as_ref().to_vec()),
        Ok(None) => Err(format!("{pod} ({ip}) showed no certificate")),
        Err(e) => Err(format!("{pod} ({ip}): {e}")),
    }
}

/// Pods of the Redis whose certificate, verified against `material`'s CA for the pod's own name
/// through the headless Service, is not `material`'s: (pod, what it served or why not).
async fn pods_not_serving(
    ns: &TestNamespace,
    name: &str,
    material: &Material,
) -> Result<Vec<(String, String)>, String> {
    let wanted = leaf(material);
    let pods = pods::of_redis(&ns.api(), name).await?;
    if pods.len() != REPLICAS {
        return Err(format!(
            "{} pods: {}",
            pods.len(),
            pods::describe_all(&pods)
        ));
    }
    let mut behind = Vec::new();
    for pod in pods {
        let pod_name = pod.name_any();
        // The name cluster DNS gives the pod: its hostname (its name) under its subdomain, which
        // must be the headless Service (no DNS on the bed to ask).
        let subdomain = pod.spec.as_ref().and_then(|s| s.subdomain.clone());
        if subdomain.as_deref() != Some(format!("{name}-headless").as_str()) {
            return Err(format!(
                "{pod_name} has subdomain {subdomain:?}: no DNS name under {name}-headless"
            ));
        }
        let dns = format!("{pod_name}.{name}-headless.{}.svc", ns.name());
        let client = client_for(material, &dns).map_err(|e| e.to_string())?;
        let ip = pods::ip(&pod).unwrap_or_default();
        match served(&client, &pod_name, ip).await {
            Ok(certificate) if certificate == wanted => {}
            Ok(certificate) => behind.push((
                pod_name,
                format!("serial {:x?}", cert_manager::serial_number(&certificate)),
            )),
            Err(e) => behind.push((pod_name, e)),
        }
    }
    Ok(behind)
}

fn restarts(pods: &[k8s_openapi::api::core::v1::Pod]) -> BTreeMap<String, i32> {
    pods.iter()
        .map(|p| (p.name_any(), pods::restarts(p)))
        .collect()
}

/// `redis-cli --tls --cacert ca.crt --sni SNI -h HOST -a PASSWORD PING`.
async fn ping(ca: &Path, sni: &str, host: &str, password: &str) -> Result<String, String> {
    let ca = ca.display().to_string();
    let args = [
        "--tls",
        "--cacert",
        &ca,
        "--sni",
        sni,
        "--no-auth-warning",
        "-a",
        password,
        "PING",
    ];
    match node::redis_cli(host, PORT, &args).await? {
        pong if pong == "PONG" => Ok(pong),
        other => Err(format!("answered {other:?}")),
    }
}

/// The sample as a user applies it: cert-manager issues the Secret the Redis names, the Redis
/// becomes Ready on it and answers `redis-cli --tls` through its Service; every pod serves a
/// certificate for its headless name that chains to `ca.crt`. Then a renewal (`cmctl renew`'s
/// way): a new certificate in the Secret, served by every pod with no container restarted.
#[tokio::test]
async fn the_tls_sample_is_issued_by_cert_manager_and_its_renewal_is_loaded_live()
-> Result<(), Error> {
    let (cluster, ns, _operator) = node::setup("cert-manager").await?;
    // Fails here when the cluster has no cert-manager (or the bed's is not running).
    CertManager::require(&cluster).await?;
    let objects = sample_objects(ns.name())?;
    let redis_object = only(&objects, "Redis")?;
    let name = redis_object["metadata"]["name"]
        .as_str()
        .ok_or_else(|| sample_error("the Redis has no name"))?
        .to_owned();
    let secret_name = redis_object["spec"]["tls"]["secretRef"]["name"]
        .as_str()
        .ok_or_else(|| sample_error("the Redis has no spec.tls.secretRef"))?
        .to_owned();
    let certificate = objects
        .iter()
        .find(|o| o["kind"] == "Certificate" && o["spec"]["secretName"] == secret_name.as_str())
        .and_then(|c| c["metadata"]["name"].as_str())
        .ok_or_else(|| sample_error(format!("no Certificate fills {secret_name}")))?
        .to_owned();
    if redis_object["spec"]["replicas"] != REPLICAS {
        return Err(sample_error(format!(
            "the Redis has not {REPLICAS} replicas"
        )));
    }
    let password = only(&objects, "Secret")?["stringData"]["password"]
        .as_str()
        .ok_or_else(|| sample_error("the password Secret has no stringData.password"))?
        .to_owned();

    apply_sample(&cluster, &ns, &objects).await?;
    let client = cluster.client();
    cert_manager::wait_ready(&client, ns.name(), &certificate, CONVERGE).await?;
    let (first_data, first) = issued(&ns, &secret_name).await?;
    let first_serial = serial(&first);
    assert!(!first_serial.is_empty(), "tls.crt has no serial number");
    // The certificate names the Service as the operator checks it (each pod's name: below).
    let service_name = api::tls::server_name(&name, ns.name());
    client_for(&first, &service_name)?;

    let redis: Api<Redis> = ns.api();
    wait_for(&format!("Redis {name} Ready"), CONVERGE, || async {
        let stored = redis.get(&name).await.map_err(seen)?;
        match conditions::redis_condition(&stored, "Ready") {
            Some((status, _)) if status == "True" => Ok(()),
            other => Err(format!("Ready {other:?}")),
        }
    })
    .await?;
    conditions::wait_replicating(&ns, &name, REPLICAS, CONVERGE, None).await?;

    // A client with the Secret's ca.crt, through the Service's ClusterIP (no DNS on the bed).
    let dir = tempfile::tempdir().map_err(|e| Error::process("a directory", e))?;
    let ca_file = dir.path().join("ca.crt");
    let ca = first_data
        .get(api::tls::CA_KEY)
        .ok_or_else(|| Error::process("reading ca.crt", "missing"))?;
    std::fs::write(&ca_file, ca).map_err(|e| Error::process("writing ca.crt", e))?;
    let service_ip = conditions::service_ip(&ns, &name, CONVERGE).await?;
    wait_for("redis-cli --tls PING through the Service", CONVERGE, || {
        ping(&ca_file, &service_name, &service_ip, &password)
    })
    .await?;
    let through_service = served(&client_for(&first, &service_name)?, &name, &service_ip)
        .await
        .map_err(|e| Error::process("a TLS handshake through the Service", e))?;
    assert_eq!(
        through_service,
        leaf(&first),
        "the Service's pod serves another certificate"
    );
    let behind = pods_not_serving(&ns, &name, &first)
        .await
        .map_err(|e| Error::process("checking the pods' certificates", e))?;
    assert!(
        behind.is_empty(),
        "pods not serving the issued certificate: {behind:?}"
    );

    // The renewal, cmctl's way; cert-manager writes a new certificate into the same Secret.
    let before = restarts(&pods::of_redis(&ns.api(), &name).await?);
    cert_manager::renew(&client, ns.name(), &certificate).await?;
    let renewed = wait_for(
        "cert-manager to write the renewed certificate",
        CONVERGE,
        || async {
            let (_, material) = issued(&ns, &secret_name).await.map_err(|e| e.to_string())?;
            match serial(&material) {
                now if now.is_empty() => Err("tls.crt has no serial number".to_owned()),
                now if now == first_serial => {
                    Err(format!("tls.crt still has serial {first_serial:x?}"))
                }
                _ => Ok(material),
            }
        },
    )
    .await?;
    cert_manager::wait_ready(&client, ns.name(), &certificate, CONVERGE).await?;
    wait_for(
        "every pod to serve the renewed certificate",
        RENEWAL,
        || async {
            let behind = pods_not_serving(&ns, &name, &renewed).await?;
            if behind.is_empty() {
                Ok(())
            } else {
                Err(format!("not yet: {behind:?}"))
            }
        },
    )
    .await?;
    let pods = pods::of_redis(&ns.api(), &name).await?;
    assert_eq!(restarts(&pods), before, "pods or restart counts changed");
    conditions::wait_replicating(&ns, &name, REPLICAS, CONVERGE, None).await?;
    wait_for(
        "the Certificate condition True Current",
        CONVERGE,
        || async {
            let stored = redis.get(&name).await.map_err(seen)?;
            match conditions::redis_condition(&stored, "Certificate") {
                Some((status, reason)) if status == "True" && reason == "Current" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await?;
    let reloaded = ns.event_reasons(Some(("Redis", &name))).await?;
    assert!(
        reloaded.iter().any(|r| r == "CertificateReloaded"),
        "no CertificateReloaded Event on the Redis: {reloaded:?}"
    );
    // The same ca.crt still admits a client after the renewal.
    let pong = ping(&ca_file, &service_name, &service_ip, &password).await;
    assert_eq!(pong.as_deref(), Ok("PONG"));
    Ok(())
}
