//! cert-manager in the cluster under test.
//!
//! On the local test bed, `hack/cluster/up.sh` applies cert-manager's CRDs, labelled
//! [`SERVED_BY_LABEL`]`=`[`BED_CERT_MANAGER`], and runs cert-manager's own controllers as
//! `bed-cert-manager`: a Certificate becomes the Secret it names as in any cluster, but no
//! cainjector runs, so a test fills a `caBundle` itself. On a cluster from `KUBECONFIG` a whole
//! cert-manager install is expected. Without cert-manager the tests that need it fail, saying so.

use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

use crate::{Cluster, Context, Error, repo_root, seen, wait_for};

/// Put by `up.sh` on the CRDs it applies for `bed-cert-manager`.
pub const SERVED_BY_LABEL: &str = "redis-operator.dev/served-by";
/// [`SERVED_BY_LABEL`]'s value on the bed.
pub const BED_CERT_MANAGER: &str = "bed-cert-manager";
/// The CRD whose presence means cert-manager is installed.
const CERTIFICATE_CRD: &str = "certificates.cert-manager.io";

/// Which cert-manager the cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertManager {
    /// The bed's `bed-cert-manager`: cert-manager's controller without its cainjector.
    Bed,
    /// A cert-manager installed in the cluster, cainjector included.
    Installed,
}

impl CertManager {
    /// The cluster's cert-manager; an error when it has none (or, on this checkout's bed, when
    /// `bed-cert-manager` is not running), saying how to get one.
    pub async fn require(cluster: &Cluster) -> Result<Self, Error> {
        let crd = Api::<CustomResourceDefinition>::all(cluster.client())
            .get_opt(CERTIFICATE_CRD)
            .await
            .context("looking for cert-manager's Certificate CRD")?
            .ok_or_else(|| {
                Error::process(
                    "finding cert-manager",
                    format!(
                        "the cluster has no CRD {CERTIFICATE_CRD}: on the test bed `make \
                         cluster-up` installs it and starts bed-cert-manager (a bed started \
                         before that needs `make cluster-down cluster-up`); elsewhere install \
                         cert-manager"
                    ),
                )
            })?;
        if crd.labels().get(SERVED_BY_LABEL).map(String::as_str) != Some(BED_CERT_MANAGER) {
            return Ok(CertManager::Installed);
        }
        if cluster.is_local_bed() {
            bed_process_running()?;
        }
        Ok(CertManager::Bed)
    }

    /// Whether cert-manager fills the `caBundle` that `cert-manager.io/inject-ca-from` asks for.
    pub fn injects_ca(self) -> bool {
        self == CertManager::Installed
    }
}

/// Checks the pid `up.sh` recorded for bed-cert-manager, as `hack/cluster/lib.sh` does: the
/// process lives and runs this checkout's `bin/bed-cert-manager`.
fn bed_process_running() -> Result<(), Error> {
    let root = repo_root();
    let pid_file = root.join(".cluster/pids/bed-cert-manager.pid");
    let exe = root.join("bin/bed-cert-manager");
    let not_running = |why: String| {
        Error::process(
            "finding bed-cert-manager",
            format!(
                "{why}: the CRDs are the bed's but its cert-manager does not run; see \
                 .cluster/logs/bed-cert-manager.log, and restart the bed (`make cluster-down \
                 cluster-up`)"
            ),
        )
    };
    let pid = std::fs::read_to_string(&pid_file)
        .map_err(|e| not_running(format!("{}: {e}", pid_file.display())))?;
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.trim()))
        .map_err(|e| not_running(format!("pid {}: {e}", pid.trim())))?;
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let runs = std::path::Path::new(std::ffi::OsStr::from_bytes(argv0)).canonicalize();
    if runs.is_ok() && runs.ok() == exe.canonicalize().ok() {
        Ok(())
    } else {
        Err(not_running(format!(
            "pid {} runs {}",
            pid.trim(),
            String::from_utf8_lossy(argv0)
        )))
    }
}

/// A kind of the `cert-manager.io/v1` API (`Issuer`, `Certificate`, ...).
pub fn resource(kind: &str) -> ApiResource {
    let gvk = GroupVersionKind::gvk("cert-manager.io", "v1", kind);
    ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", kind.to_lowercase()))
}

/// Certificates of namespace `ns`.
pub fn certificates(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &resource("Certificate"))
}

/// The status of the condition `type_` of a cert-manager object, with its reason.
pub fn condition(object: &DynamicObject, type_: &str) -> Option<(String, String)> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let text = |key: &str| c[key].as_str().unwrap_or_default().to_owned();
            (text("status"), text("reason"))
        })
}

/// Waits until cert-manager reports Certificate `name` Ready for its current spec: the Secret it
/// names holds a certificate issued for it. The Certificate.
pub async fn wait_ready(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Result<DynamicObject, Error> {
    let api = certificates(client, ns);
    wait_for(
        &format!(
            "cert-manager to issue Certificate {ns}/{name} (on the bed: is bed-cert-manager \
             running? .cluster/logs/bed-cert-manager.log)"
        ),
        timeout,
        || async {
            let certificate = api.get(name).await.map_err(seen)?;
            let ready = certificate.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Ready");
            let current = ready.is_some_and(|c| {
                c["status"] == "True"
                    && c["observedGeneration"].as_i64() == certificate.metadata.generation
            });
            if current {
                Ok(certificate)
            } else {
                Err(format!("status: {}", certificate.data["status"]))
            }
        },
    )
    .await
}

/// Asks cert-manager to issue Certificate `name` again now, as `cmctl renew` does: the
/// `Issuing` condition True, reason `ManuallyTriggered`, written to the status.
pub async fn renew(client: &Client, ns: &str, name: &str) -> Result<(), Error> {
    let api = certificates(client, ns);
    // A read and a replace, retried on a conflict: cert-manager writes the same status.
    wait_for(
        &format!("the renewal of Certificate {ns}/{name} to be written"),
        Duration::from_secs(30),
        || async {
            let mut certificate = api.get(name).await.map_err(seen)?;
            let issuing = json!({
                "type": "Issuing",
                "status": "True",
                "reason": "ManuallyTriggered",
                "message": "Certificate re-issuance manually triggered",
                "lastTransitionTime": Time(k8s_openapi::jiff::Timestamp::now()),
                "observedGeneration": certificate.metadata.generation,
            });
            let status = &mut certificate.data["status"];
            if !status.is_object() {
                *status = json!({});
            }
            let conditions = &mut status["conditions"];
            let mut kept: Vec<Value> = conditions
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["type"] != "Issuing")
                .cloned()
                .collect();
            kept.push(issuing);
            *conditions = Value::Array(kept);
            api.replace_status(name, &PostParams::default(), &certificate)
                .await
                .map(|_| ())
                .map_err(seen)
        },
    )
    .await
}

/// Server-side applies `object` (a cert-manager.io/v1 object of any kind) in `ns`, as the
/// suite's field manager.
pub async fn apply(client: &Client, ns: &str, object: &Value) -> Result<DynamicObject, Error> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource(kind));
    api.patch(
        name,
        &PatchParams::apply(crate::FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .context(format!("applying {kind} {ns}/{name}"))
}

/// The serial number of a DER certificate: the second element of its `tbsCertificate` (after
/// the optional `[0]` version). Enough DER for X.509, read without a parser dependency.
pub fn serial_number(der: &[u8]) -> Option<Vec<u8>> {
    // (tag, content, rest) of the DER element at the start of `input`.
    fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = input.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count {
                return None;
            }
            let len = rest[..count]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (len, &rest[count..])
        };
        (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
    }
    const SEQUENCE: u8 = 0x30;
    const INTEGER: u8 = 0x02;
    const VERSION: u8 = 0xa0;
    let (SEQUENCE, certificate, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(certificate)? else {
        return None;
    };
    let (tag, content, rest) = element(tbs)?;
    let (tag, content) = if tag == VERSION {
        let (tag, content, _) = element(rest)?;
        (tag, content)
    } else {
        (tag, content)
    };
    (tag == INTEGER).then(|| content.to_vec())
}
