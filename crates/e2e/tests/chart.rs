//! The Helm chart (`charts/redis-operator`), the manifests rendered from it (`deploy/`) and the
//! Dockerfiles, checked against each other and installed on a real API server.
//!
//! On the local bed the chart's pods are simulated by kwok: they become Running and Ready but
//! answer nothing. So every install here registers its webhook configurations with a
//! `namespaceSelector` that matches only a label no namespace carries: `failurePolicy: Fail`
//! then never blocks another test. Each test has its own namespace and release name, the
//! release's cluster-scoped objects are named after the release, and a guard removes them even
//! when the test fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use e2e::cert_manager::CertManager;
use e2e::operator::{kubectl, workspace_binary};
use e2e::{Cluster, Context, Error, NamespaceOptions, TestNamespace, repo_root, seen, wait_for};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde::Deserialize;
use serde_json::{Value, json};

/// What `make manifests` writes from the chart.
const DEPLOY_MANIFEST: &str = "deploy/redis-operator.yaml";
/// The annotation by which cert-manager's cainjector fills a webhook configuration's caBundle.
const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";
/// Label of no namespace: the webhook configurations of the tests select only it.
const DUMMY_NAMESPACE_LABEL: &str = "e2e.redis-operator/chart-webhook";
/// Pods of the chart's Deployments, by component, with the default replicas.
const EXPECTED_PODS: [(&str, usize); 2] = [("controller", 1), ("webhook", 2)];
const CONVERGE: Duration = Duration::from_secs(120);

fn chart_dir() -> PathBuf {
    repo_root().join("charts").join("redis-operator")
}

/// `bin/helm` of the test bed (`make tools` builds it).
fn helm() -> Result<PathBuf, Error> {
    let path = repo_root().join("bin").join("helm");
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::Process {
            what: "finding helm".into(),
            reason: format!(
                "{} does not exist; `make tools` (or `make cluster-up`) builds it",
                path.display()
            ),
        })
    }
}

/// Runs a command; stdout when it succeeds, else an error with its stderr.
fn run(what: &str, command: &mut Command) -> Result<String, Error> {
    let output = command.output().map_err(|e| Error::Process {
        what: what.to_owned(),
        reason: e.to_string(),
    })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(Error::Process {
            what: what.to_owned(),
            reason: format!(
                "{}: {}{}",
                output.status,
                String::from_utf8_lossy(&output.stderr),
                String::from_utf8_lossy(&output.stdout)
            ),
        })
    }
}

fn manifest_error(path: impl Into<PathBuf>, reason: impl ToString) -> Error {
    Error::Manifest {
        path: path.into(),
        reason: reason.to_string(),
    }
}

/// Every document of a multi-document YAML stream (empty documents skipped).
fn documents(path: &Path, text: &str) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for document in serde_norway::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|e| manifest_error(path, e))?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// The object of `kind` named `name` among `docs`.
fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Result<&'a Value, Error> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .ok_or_else(|| manifest_error("(rendered chart)", format!("no {kind} {name}")))
}

/// `hack/render-deploy.sh RELEASE NAMESPACE ARGS...`: the deploy manifest of a release.
fn render_deploy(release: &str, namespace: &str, args: &[&str]) -> Result<String, Error> {
    run(
        "hack/render-deploy.sh",
        Command::new(repo_root().join("hack").join("render-deploy.sh"))
            .env("HELM", helm()?)
            .args([release, namespace])
            .args(args),
    )
}

/// `helm template` of the chart with `args`.
fn helm_template(args: &[&str]) -> Result<Vec<Value>, Error> {
    let text = run(
        "helm template",
        Command::new(helm()?)
            .args(["template", "redis-operator"])
            .arg(chart_dir())
            .args(["--namespace", "redis-operator"])
            .args(args),
    )?;
    documents(Path::new("(helm template)"), &text)
}

// ---------------------------------------------------------------------------------------------
// Without a cluster: the committed files agree with each other.
// ---------------------------------------------------------------------------------------------

#[test]
fn deploy_manifest_is_the_chart_rendered_for_cert_manager() -> Result<(), Error> {
    let path = repo_root().join(DEPLOY_MANIFEST);
    let committed = std::fs::read_to_string(&path)
        .map_err(|e| manifest_error(&path, format!("{e} (run `make manifests`)")))?;
    let fresh = render_deploy("redis-operator", "redis-operator", &[])?;
    assert!(
        committed == fresh,
        "{DEPLOY_MANIFEST} differs from a fresh render of charts/redis-operator; run `make manifests` \
         and commit the result"
    );

    // No key or certificate in the repository: cert-manager issues them in the cluster.
    for marker in [
        "PRIVATE KEY",
        "BEGIN CERTIFICATE",
        "caBundle:",
        "kind: Secret",
    ] {
        assert!(
            !committed.contains(marker),
            "{DEPLOY_MANIFEST} contains {marker:?}: certificate material must not be committed"
        );
    }
    // ...and the pieces cert-manager needs point at each other: the Certificate fills the Secret
    // the webhook serves from, and the webhook configurations ask for its CA.
    let docs = documents(&path, &committed)?;
    let certificate = find(&docs, "Certificate", "redis-operator-webhook")?;
    let secret_name = certificate["spec"]["secretName"].as_str();
    let issuer = certificate["spec"]["issuerRef"]["name"]
        .as_str()
        .unwrap_or_default();
    find(&docs, "Issuer", issuer)?;
    let webhook = find(&docs, "Deployment", "redis-operator-webhook")?;
    let mounted: Vec<_> = webhook["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["secret"]["secretName"].as_str())
        .collect();
    assert!(
        secret_name.is_some_and(|name| mounted.contains(&name)),
        "the Certificate's Secret {secret_name:?} is not the one the webhook mounts ({mounted:?})"
    );
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let config = find(&docs, kind, "redis-operator-webhook")?;
        assert_eq!(
            config["metadata"]["annotations"][INJECT_CA_FROM].as_str(),
            Some("redis-operator/redis-operator-webhook"),
            "{kind} does not ask cert-manager for the Certificate's CA"
        );
    }
    assert!(
        docs.first().is_some_and(|d| d["kind"] == "Namespace"
            && d["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"),
        "{DEPLOY_MANIFEST} starts with the Namespace, enforcing Pod Security restricted"
    );
    Ok(())
}

#[test]
fn chart_app_version_is_the_repository_version() -> Result<(), Error> {
    let root = repo_root();
    let version = std::fs::read_to_string(root.join(".version"))
        .map_err(|e| manifest_error(root.join(".version"), e))?;
    let chart_path = chart_dir().join("Chart.yaml");
    let chart: Value = serde_norway::from_str(
        &std::fs::read_to_string(&chart_path).map_err(|e| manifest_error(&chart_path, e))?,
    )
    .map_err(|e| manifest_error(&chart_path, e))?;
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["appVersion"].as_str(), Some(version.trim()));

    // The default image tag is `v` + appVersion.
    let docs = helm_template(&[])?;
    let deployment = find(&docs, "Deployment", "redis-operator-controller")?;
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    assert!(
        image.ends_with(&format!(":v{}", version.trim())),
        "controller image {image}"
    );
    Ok(())
}

#[test]
fn helm_lint_passes_in_every_certificate_mode() -> Result<(), Error> {
    for set in [
        "certs.mode=self-signed",
        "certs.mode=cert-manager",
        "certs.mode=secret,certs.secret.name=tls,certs.secret.caBundle=Cg==",
        "crds.templated=true",
        "webhook.networkPolicy.enabled=false",
        "controller.networkPolicy.enabled=false",
        "controller.watchNamespace=apps",
    ] {
        run(
            &format!("helm lint --set {set}"),
            Command::new(helm()?)
                .args(["lint", "--strict"])
                .arg(chart_dir())
                .args(["--set", set]),
        )?;
    }
    // values.schema.json refuses what the chart cannot use.
    for bad in [
        "certs.mode=vault",
        "certs.mode=secret",
        "webhook.minPort=80",
        "webhook.failurePolicy=Maybe",
        "controller.replicas=-1",
        "webhook.unknown=1",
    ] {
        let refused = run(
            "helm template",
            Command::new(helm()?)
                .args(["template", "x"])
                .arg(chart_dir())
                .args(["--set", bad]),
        );
        assert!(refused.is_err(), "--set {bad} was accepted");
    }
    Ok(())
}

/// No webhook pod while the API server fails every Redis write it cannot get judged is no Redis
/// write at all: the schema refuses `webhook.replicas: 0` unless the failurePolicy is `Ignore`.
/// Unset means files/*-webhook.yaml's, which is `Fail`.
#[test]
fn webhook_replicas_0_needs_failure_policy_ignore() -> Result<(), Error> {
    let template = |set: &str| {
        run(
            &format!("helm template --set {set}"),
            Command::new(helm()?)
                .args(["template", "x"])
                .arg(chart_dir())
                .args(["--set", set]),
        )
    };
    for refused in [
        "webhook.replicas=0",
        "webhook.replicas=0,webhook.failurePolicy=Fail",
    ] {
        match template(refused) {
            Ok(_) => panic!("--set {refused} was accepted"),
            Err(e) => {
                let said = e.to_string();
                assert!(
                    said.contains("failurePolicy") && said.contains("Ignore"),
                    "--set {refused}: the refusal should say what to change: {said}"
                );
            }
        }
    }
    for accepted in [
        "webhook.replicas=0,webhook.failurePolicy=Ignore",
        "webhook.replicas=1",
        "webhook.replicas=1,webhook.failurePolicy=Fail",
    ] {
        template(accepted)?;
    }
    Ok(())
}

#[test]
fn templated_crd_is_the_generated_crd_kept_on_uninstall() -> Result<(), Error> {
    let docs = helm_template(&["--set", "crds.templated=true"])?;
    let mut templated = find(&docs, "CustomResourceDefinition", "redis.myapp.tangx.in")?.clone();
    assert_eq!(
        templated["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    let metadata = templated["metadata"]
        .as_object_mut()
        .ok_or_else(|| manifest_error("(templated CRD)", "no metadata"))?;
    metadata.remove("annotations");
    metadata.remove("labels");
    let path = chart_dir().join("crds").join("redis.yaml");
    let generated: Value = serde_norway::from_str(
        &std::fs::read_to_string(&path).map_err(|e| manifest_error(&path, e))?,
    )
    .map_err(|e| manifest_error(&path, e))?;
    // Helm's fromYaml reads numbers as float64 and writes `1234.0` as `1234`: same schema.
    assert!(
        numbers_as_floats(templated) == numbers_as_floats(generated),
        "the templated CRD differs from crds/redis.yaml"
    );

    // Off by default: Helm's crds/ is the only CRD then.
    let defaults = helm_template(&[])?;
    assert!(
        !defaults
            .iter()
            .any(|d| d["kind"] == "CustomResourceDefinition")
    );
    Ok(())
}

#[test]
fn webhook_rules_are_the_shared_files_and_include_scale() -> Result<(), Error> {
    let docs = helm_template(&[])?;
    for (kind, file) in [
        ("MutatingWebhookConfiguration", "mutating-webhook.yaml"),
        ("ValidatingWebhookConfiguration", "validating-webhook.yaml"),
    ] {
        let path = chart_dir().join("files").join(file);
        let shared: Value = serde_norway::from_str(
            &std::fs::read_to_string(&path).map_err(|e| manifest_error(&path, e))?,
        )
        .map_err(|e| manifest_error(&path, e))?;
        let config = find(&docs, kind, "redis-operator-webhook")?;
        let webhook = &config["webhooks"][0];
        assert_eq!(webhook["rules"], shared["rules"], "{kind} rules != {file}");
        // The rest of the file too (name, failurePolicy, timeoutSeconds...): hack/run.sh and
        // the e2e suite register the same webhook.
        for (key, value) in shared.as_object().into_iter().flatten() {
            assert_eq!(&webhook[key], value, "{kind} {key} != {file}");
        }
    }
    // `kubectl scale` writes spec.replicas through redis/scale: the validating webhook must see it.
    let validating = find(
        &docs,
        "ValidatingWebhookConfiguration",
        "redis-operator-webhook",
    )?;
    let scale = validating["webhooks"][0]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|rs| rs.contains(&json!("redis/scale")))
                && r["operations"]
                    .as_array()
                    .is_some_and(|os| os.contains(&json!("UPDATE")))
        });
    assert!(
        scale,
        "the validating webhook is not sent redis/scale UPDATEs"
    );
    Ok(())
}

/// The Redis ServiceMonitor: only where the Prometheus Operator's CRD is served (or when asked),
/// selecting the Service the controller labels for scraping, on its metrics port.
#[test]
fn redis_service_monitor_follows_the_crd_and_selects_the_scrape_label() -> Result<(), Error> {
    let monitors = |docs: &[Value]| -> Vec<Value> {
        docs.iter()
            .filter(|d| d["kind"] == "ServiceMonitor")
            .cloned()
            .collect()
    };
    assert!(
        monitors(&helm_template(&[])?).is_empty(),
        "no CRD, auto: none"
    );
    let with_crd = ["--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"];
    let found = monitors(&helm_template(&with_crd)?);
    assert_eq!(found.len(), 1);
    let spec = &found[0]["spec"];
    assert_eq!(
        spec["selector"]["matchLabels"][api::exporter::SCRAPE_LABEL],
        "true"
    );
    assert_eq!(
        spec["selector"]["matchLabels"]["app.kubernetes.io/managed-by"],
        api::pods::MANAGED_BY
    );
    assert_eq!(
        spec["endpoints"][0]["port"],
        api::exporter::METRICS_PORT_NAME
    );
    assert_eq!(spec["namespaceSelector"]["any"], true);
    let off = [
        "--api-versions",
        "monitoring.coreos.com/v1/ServiceMonitor",
        "--set",
        "redisServiceMonitor.enabled=false",
    ];
    assert!(monitors(&helm_template(&off)?).is_empty());
    let scoped = monitors(&helm_template(&[
        "--set",
        "redisServiceMonitor.enabled=true",
        "--set",
        "controller.watchNamespace=apps",
    ])?);
    assert_eq!(
        scoped[0]["spec"]["namespaceSelector"]["matchNames"][0],
        "apps"
    );
    Ok(())
}

#[test]
fn watch_namespace_binds_the_controller_in_that_namespace_only() -> Result<(), Error> {
    let kinds = |docs: &[Value], kind: &str| -> Vec<(String, String)> {
        docs.iter()
            .filter(|d| d["kind"] == kind)
            .map(|d| {
                (
                    d["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    d["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect()
    };
    let controller = "redis-operator-controller".to_owned();
    let everywhere = helm_template(&[])?;
    assert_eq!(
        kinds(&everywhere, "ClusterRole"),
        vec![(String::new(), controller.clone())]
    );
    assert_eq!(
        kinds(&everywhere, "ClusterRoleBinding"),
        vec![(String::new(), controller.clone())]
    );

    let scoped = helm_template(&["--set", "controller.watchNamespace=apps"])?;
    assert!(kinds(&scoped, "ClusterRole").is_empty());
    assert!(kinds(&scoped, "ClusterRoleBinding").is_empty());
    let role = find(&scoped, "Role", &controller)?;
    assert_eq!(role["metadata"]["namespace"], "apps");
    let path = chart_dir().join("files").join("controller-rules.yaml");
    let shared: Value = serde_norway::from_str(
        &std::fs::read_to_string(&path).map_err(|e| manifest_error(&path, e))?,
    )
    .map_err(|e| manifest_error(&path, e))?;
    assert_eq!(role["rules"], shared);
    let binding = find(&scoped, "RoleBinding", &controller)?;
    assert_eq!(binding["metadata"]["namespace"], "apps");
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["subjects"][0]["namespace"], "redis-operator");

    // The lease Role names the Lease the controller is told to use, for every verb but create.
    for docs in [&everywhere, &scoped] {
        let deployment = find(docs, "Deployment", &controller)?;
        let lease = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|a| a.strip_prefix("--lease-name="))
            .ok_or_else(|| manifest_error("(controller Deployment)", "no --lease-name"))?;
        let lease_role = find(docs, "Role", "redis-operator-leader-election")?;
        for rule in lease_role["rules"].as_array().into_iter().flatten() {
            let verbs = rule["verbs"].as_array().cloned().unwrap_or_default();
            if verbs == vec![json!("create")] {
                assert!(rule["resourceNames"].is_null(), "{rule}");
            } else {
                assert_eq!(rule["resourceNames"], json!([lease]), "{rule}");
            }
        }
    }
    Ok(())
}

#[test]
fn cert_manager_mode_issues_the_serving_certificate_from_a_ca_of_its_own() -> Result<(), Error> {
    let docs = helm_template(&["--set", "certs.mode=cert-manager"])?;
    let issuer_of = |certificate: &Value| -> Result<Value, Error> {
        let name = certificate["spec"]["issuerRef"]["name"]
            .as_str()
            .unwrap_or_default();
        find(&docs, "Issuer", name).cloned()
    };
    // The serving certificate comes from a CA Issuer, not straight from a selfSigned one: its
    // renewals keep the CA that cainjector puts in the caBundle.
    let serving = find(&docs, "Certificate", "redis-operator-webhook")?;
    let ca_issuer = issuer_of(serving)?;
    let ca_secret = ca_issuer["spec"]["ca"]["secretName"]
        .as_str()
        .ok_or_else(|| manifest_error("(CA Issuer)", format!("not a CA Issuer: {ca_issuer}")))?;
    let ca = docs
        .iter()
        .find(|d| d["kind"] == "Certificate" && d["spec"]["secretName"] == ca_secret)
        .ok_or_else(|| manifest_error("(chart)", format!("no Certificate writes {ca_secret}")))?;
    assert_eq!(ca["spec"]["isCA"], true);
    assert!(issuer_of(ca)?["spec"]["selfSigned"].is_object());
    assert_ne!(ca_secret, serving["spec"]["secretName"]);
    Ok(())
}

fn numbers_as_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map(Value::from).unwrap_or(Value::Number(n)),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_floats).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_floats(v)))
                .collect(),
        ),
        other => other,
    }
}

/// `ENTRYPOINT` and `EXPOSE` of a Dockerfile's final stage.
fn dockerfile_entry(path: &Path) -> Result<(String, BTreeSet<u16>), Error> {
    let text = std::fs::read_to_string(path).map_err(|e| manifest_error(path, e))?;
    let mut entrypoint = None;
    let mut ports = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("FROM ") {
            // A new stage: only the last one is the image.
            entrypoint = None;
            ports.clear();
        } else if let Some(rest) = line.strip_prefix("EXPOSE ") {
            for port in rest.split_whitespace() {
                let number = port.split('/').next().unwrap_or(port);
                ports.insert(
                    number
                        .parse()
                        .map_err(|_| manifest_error(path, format!("EXPOSE {port}")))?,
                );
            }
        } else if let Some(rest) = line.strip_prefix("ENTRYPOINT ") {
            let exec: Vec<String> = serde_json::from_str(rest)
                .map_err(|e| manifest_error(path, format!("ENTRYPOINT is not exec form: {e}")))?;
            entrypoint = exec.first().cloned();
        }
    }
    let entrypoint = entrypoint.ok_or_else(|| manifest_error(path, "no ENTRYPOINT"))?;
    Ok((entrypoint, ports))
}

#[test]
fn dockerfiles_match_the_chart_and_the_binaries() -> Result<(), Error> {
    let docs = helm_template(&[])?;
    for component in ["controller", "webhook"] {
        let binary = format!("redis-{component}");
        let dockerfile = repo_root().join(format!("Dockerfile.{component}"));
        let (entrypoint, exposed) = dockerfile_entry(&dockerfile)?;
        assert_eq!(
            Path::new(&entrypoint).file_name(),
            Some(binary.as_ref()),
            "{} runs {entrypoint}",
            dockerfile.display()
        );
        let cargo_toml = repo_root()
            .join("crates")
            .join(component)
            .join("Cargo.toml");
        let manifest =
            std::fs::read_to_string(&cargo_toml).map_err(|e| manifest_error(&cargo_toml, e))?;
        assert!(
            manifest.contains(&format!("name = \"{binary}\"")),
            "{} builds no binary {binary}",
            cargo_toml.display()
        );
        let dockerfile_text =
            std::fs::read_to_string(&dockerfile).map_err(|e| manifest_error(&dockerfile, e))?;
        // The controller's image also carries redis-backup: its backup Jobs and restore init
        // containers run it from there.
        let binaries: &[(&str, &str)] = match component {
            "controller" => &[
                ("controller", "redis-controller"),
                ("backup", "redis-backup"),
            ],
            _ => &[(component, binary.as_str())],
        };
        for (package, built) in binaries {
            assert!(
                dockerfile_text.lines().any(|line| {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let has = |pair: [&str; 2]| words.windows(2).any(|w| w == pair);
                    line.contains("cargo build")
                        && words.contains(&"--locked")
                        && has(["-p", package])
                        && has(["--bin", built])
                }),
                "{} does not build {built} with --locked",
                dockerfile.display()
            );
        }
        if component == "controller" {
            let dir = Path::new(api::backup::BINARY)
                .parent()
                .and_then(Path::to_str)
                .map(|dir| format!("{dir}/"))
                .unwrap_or_default();
            let copied = dockerfile_text.lines().any(|line| {
                line.starts_with("COPY --from=build")
                    && line.contains("/redis-backup")
                    && line.trim_end().ends_with(&dir)
            });
            assert!(
                copied,
                "{} does not put redis-backup at {}",
                dockerfile.display(),
                api::backup::BINARY
            );
        }

        let deployment = find(&docs, "Deployment", &format!("redis-operator-{component}"))?;
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let ports: BTreeSet<u16> = container["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["containerPort"].as_u64())
            .filter_map(|p| u16::try_from(p).ok())
            .collect();
        assert_eq!(
            exposed,
            ports,
            "{} EXPOSEs other ports than the chart's {component} Deployment",
            dockerfile.display()
        );
        // The chart runs the image's ENTRYPOINT with flags the binary knows.
        assert!(
            container["command"].is_null(),
            "{component} overrides the ENTRYPOINT"
        );
        let help = run(
            &format!("{binary} --help"),
            Command::new(workspace_binary(&binary)?).arg("--help"),
        )?;
        for arg in container["args"].as_array().into_iter().flatten() {
            let flag = arg
                .as_str()
                .unwrap_or_default()
                .split('=')
                .next()
                .unwrap_or_default();
            assert!(
                help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                "the chart passes {flag} to {binary}, which does not know it"
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// On the cluster.
// ---------------------------------------------------------------------------------------------

/// Removes a release's objects when dropped, also when the test fails: the namespaced ones go
/// with the test namespace, the cluster-scoped ones (named after the release, labelled with its
/// instance) are deleted here.
struct ReleaseGuard {
    release: String,
    namespace: String,
    kubeconfig: PathBuf,
    helm: bool,
}

impl Drop for ReleaseGuard {
    fn drop(&mut self) {
        if self.helm
            && let Ok(helm) = helm()
        {
            let _ = Command::new(helm)
                .env("KUBECONFIG", &self.kubeconfig)
                .args(["uninstall", &self.release, "--namespace", &self.namespace])
                .args(["--ignore-not-found", "--wait=false"])
                .output();
        }
        let _ = Command::new(kubectl())
            .env("KUBECONFIG", &self.kubeconfig)
            .args([
                "delete",
                "mutatingwebhookconfigurations,validatingwebhookconfigurations,clusterroles,clusterrolebindings",
                "-l",
                &format!("app.kubernetes.io/instance={}", self.release),
                "--ignore-not-found",
                "--wait=false",
            ])
            .output();
    }
}

/// `kubectl scale` goes through the webhook registered from the chart's rules files, and the
/// schema's ceiling holds where no webhook is registered.
#[tokio::test]
async fn kubectl_scale_is_judged_by_the_schema_and_the_webhook() -> Result<(), Error> {
    let cluster = Cluster::connect().await?;
    e2e::install_crds(&cluster.client()).await?;
    let ns = cluster.namespace("chart-scale").await?;
    let redis: Api<api::Redis> = ns.api();
    redis
        .create(
            &Default::default(),
            &api::Redis::new("scaled", api::RedisSpec::default()),
        )
        .await
        .context("creating redis/scaled")?;
    let scale = |replicas: &str| {
        e2e::operator::run_kubectl(
            &cluster,
            &[
                "scale",
                "redis/scaled",
                "-n",
                ns.name(),
                "--replicas",
                replicas,
            ],
        )
    };
    // No webhook for this namespace yet: the schema alone refuses what would make the
    // controller plan billions of pods.
    let refused = scale("2147483647");
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("spec.replicas") && e.contains("10000")),
        "the schema let --replicas=2147483647 through: {refused:?}"
    );

    let webhook = e2e::operator::Webhook::start(&cluster, &ns, &[]).await?;
    scale("3").map_err(|reason| Error::Process {
        what: "kubectl scale --replicas 3".into(),
        reason,
    })?;
    let refused = scale("101");
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("spec.replicas: must be <= 100, got 101")),
        "the webhook let kubectl scale --replicas=101 through: {refused:?}"
    );
    let stored = redis.get("scaled").await.context("reading redis/scaled")?;
    assert_eq!(stored.spec.replicas, Some(3));
    drop(webhook);
    Ok(())
}

async fn setup(prefix: &str) -> Result<(Cluster, TestNamespace), Error> {
    let cluster = Cluster::connect().await?;
    // Forced server-side apply with the suite's field manager: safe while other tests do it too.
    e2e::install_crds(&cluster.client()).await?;
    let ns = cluster
        .namespace_with(
            prefix,
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    Ok((cluster, ns))
}

/// Values for a test release: its webhook configurations select no namespace.
fn write_test_values(ns: &TestNamespace, release: &str) -> Result<PathBuf, Error> {
    let dir = repo_root().join("target").join("e2e-logs").join(ns.name());
    std::fs::create_dir_all(&dir).map_err(|e| manifest_error(&dir, e))?;
    let path = dir.join("chart-values.yaml");
    let values = json!({
        "webhook": {
            "namespaceSelector": {"matchLabels": {DUMMY_NAMESPACE_LABEL: release}},
        },
    });
    std::fs::write(&path, values.to_string()).map_err(|e| manifest_error(&path, e))?;
    Ok(path)
}

/// The name prefix of a release's objects (the chart's `redis-operator.fullname`).
fn fullname(release: &str) -> String {
    if release.contains("redis-operator") {
        release.to_owned()
    } else {
        format!("{release}-redis-operator")
    }
}

/// Certificates as the cluster holds them: (Secret data, mutating caBundle, validating caBundle).
#[derive(Debug, PartialEq)]
struct Certificates {
    secret: BTreeMap<String, Vec<u8>>,
    mutating_ca: Vec<u8>,
    validating_ca: Vec<u8>,
}

async fn certificates(
    cluster: &Cluster,
    ns: &TestNamespace,
    release: &str,
) -> Result<Certificates, Error> {
    let name = format!("{}-webhook", fullname(release));
    let secret = ns
        .api::<Secret>()
        .get(&format!("{name}-tls"))
        .await
        .context("reading the webhook's Secret")?;
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let secret: BTreeMap<String, Vec<u8>> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    let client = cluster.client();
    let mutating_ca = webhook_ca::<MutatingWebhookConfiguration>(&client, &name).await?;
    let validating_ca = webhook_ca::<ValidatingWebhookConfiguration>(&client, &name).await?;
    Ok(Certificates {
        secret,
        mutating_ca,
        validating_ca,
    })
}

/// cert-manager's two jobs for deploy/ (rendered with certs.mode=cert-manager): its controller
/// issues the Secret the serving Certificate names, and its cainjector copies that CA into the
/// webhook configurations that ask for it (`cert-manager.io/inject-ca-from`). The bed runs
/// cert-manager's own controller (`bed-cert-manager`) but builds no cainjector, so there the
/// test does the injection itself, exactly as the annotation asks.
async fn issue_and_inject(
    cluster: &Cluster,
    cert_manager: CertManager,
    ns: &TestNamespace,
    release: &str,
) -> Result<(), Error> {
    let name = format!("{}-webhook", fullname(release));
    let client = cluster.client();
    let certificate = e2e::cert_manager::wait_ready(&client, ns.name(), &name, CONVERGE).await?;
    if !cert_manager.injects_ca() {
        let secret_name = certificate.data["spec"]["secretName"]
            .as_str()
            .ok_or_else(|| manifest_error("(Certificate)", "no spec.secretName"))?;
        let ca = ns
            .api::<Secret>()
            .get(secret_name)
            .await
            .context("reading the issued Secret")?
            .data
            .unwrap_or_default()
            .remove("ca.crt")
            .map(|b| b.0)
            .ok_or_else(|| manifest_error("(issued Secret)", "no ca.crt"))?;
        let wanted = format!("{}/{name}", ns.name());
        inject_ca::<MutatingWebhookConfiguration>(&client, &name, &wanted, &ca).await?;
        inject_ca::<ValidatingWebhookConfiguration>(&client, &name, &wanted, &ca).await?;
    }
    wait_for(
        &format!("the CA of {name} in the webhook configurations"),
        CONVERGE,
        || async {
            let certs = certificates(cluster, ns, release)
                .await
                .map_err(|e| e.to_string())?;
            match certs.secret.get("ca.crt") {
                Some(ca)
                    if !ca.is_empty() && *ca == certs.mutating_ca && *ca == certs.validating_ca =>
                {
                    Ok(())
                }
                _ => Err("not yet".to_owned()),
            }
        },
    )
    .await
}

/// A Mutating- or ValidatingWebhookConfiguration: where its webhooks are called.
trait WebhookConfiguration:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + serde::Serialize
    + std::fmt::Debug
{
    fn client_configs(&mut self) -> Vec<&mut WebhookClientConfig>;
}

macro_rules! webhook_configuration {
    ($($kind:ty),*) => {$(
        impl WebhookConfiguration for $kind {
            fn client_configs(&mut self) -> Vec<&mut WebhookClientConfig> {
                self.webhooks
                    .iter_mut()
                    .flatten()
                    .map(|w| &mut w.client_config)
                    .collect()
            }
        }
    )*};
}

webhook_configuration!(MutatingWebhookConfiguration, ValidatingWebhookConfiguration);

/// The caBundle of the first webhook of the `K` named `name` that has one (empty: none has).
async fn webhook_ca<K: WebhookConfiguration>(
    client: &kube::Client,
    name: &str,
) -> Result<Vec<u8>, Error> {
    let kind = K::kind(&()).into_owned();
    let mut config = Api::<K>::all(client.clone())
        .get(name)
        .await
        .context(format!("reading the {kind}"))?;
    Ok(config
        .client_configs()
        .into_iter()
        .find_map(|c| c.ca_bundle.clone())
        .map(|b| b.0)
        .unwrap_or_default())
}

/// cainjector's job on one webhook configuration: check that it asks for the CA of `wanted`
/// (namespace/Certificate), then set that CA as every webhook's caBundle.
async fn inject_ca<K: WebhookConfiguration>(
    client: &kube::Client,
    name: &str,
    wanted: &str,
    ca: &[u8],
) -> Result<(), Error> {
    let api = Api::<K>::all(client.clone());
    let kind = K::kind(&()).into_owned();
    let mut config = api.get(name).await.context(format!("reading the {kind}"))?;
    assert_eq!(
        config.annotations().get(INJECT_CA_FROM).map(String::as_str),
        Some(wanted),
        "{kind} {name}"
    );
    for client_config in config.client_configs() {
        client_config.ca_bundle = Some(k8s_openapi::ByteString(ca.to_vec()));
    }
    api.replace(name, &Default::default(), &config)
        .await
        .context(format!("injecting the CA into the {kind}"))?;
    Ok(())
}

/// `kubectl auth can-i` as `user`: true for "yes".
fn can_i(cluster: &Cluster, user: &str, args: &[&str]) -> Result<bool, Error> {
    let output = Command::new(kubectl())
        .env("KUBECONFIG", cluster.kubeconfig())
        .args(["auth", "can-i", "--as", user])
        .args(args)
        .output()
        .map_err(|e| Error::Process {
            what: "kubectl auth can-i".into(),
            reason: e.to_string(),
        })?;
    match String::from_utf8_lossy(&output.stdout).trim() {
        "yes" => Ok(true),
        "no" => Ok(false),
        other => Err(Error::Process {
            what: format!("kubectl auth can-i {args:?}"),
            reason: format!("{other} {}", String::from_utf8_lossy(&output.stderr)),
        }),
    }
}

/// Everything an installed release must be: pods Running and Ready in a namespace enforcing
/// Pod Security restricted, caBundle = the Secret's ca.crt, least-privilege identities.
async fn check_release(
    cluster: &Cluster,
    ns: &TestNamespace,
    release: &str,
) -> Result<Certificates, Error> {
    let pods: Api<Pod> = ns.api();
    for (component, replicas) in EXPECTED_PODS {
        let selector =
            format!("app.kubernetes.io/instance={release},app.kubernetes.io/component={component}");
        wait_for(
            &format!("{replicas} Running and Ready {component} pod(s) of {release}"),
            CONVERGE,
            || async {
                let list = pods
                    .list(&ListParams::default().labels(&selector))
                    .await
                    .map_err(seen)?;
                let ready = list
                    .items
                    .iter()
                    .filter(|p| {
                        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                            && e2e::pods::is_ready(p)
                    })
                    .count();
                if ready == replicas && list.items.len() == replicas {
                    Ok(())
                } else {
                    let seen: Vec<_> = list.items.iter().map(e2e::pods::describe).collect();
                    Err(format!("{ready} ready of {}: {seen:?}", list.items.len()))
                }
            },
        )
        .await?;
    }
    // The webhook gets no token: it calls no API.
    let webhook_pods = pods
        .list(&ListParams::default().labels(&format!(
            "app.kubernetes.io/instance={release},app.kubernetes.io/component=webhook"
        )))
        .await
        .context("listing the webhook pods")?;
    for pod in &webhook_pods.items {
        let spec = pod.spec.as_ref();
        assert_eq!(
            spec.and_then(|s| s.automount_service_account_token),
            Some(false)
        );
        let projected = spec
            .and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
            .any(|v| v.projected.is_some());
        assert!(!projected, "a webhook pod mounts a service account token");
    }

    let certs = certificates(cluster, ns, release).await?;
    let ca = certs
        .secret
        .get("ca.crt")
        .filter(|ca| !ca.is_empty())
        .ok_or_else(|| manifest_error("(webhook Secret)", "no ca.crt"))?;
    assert_eq!(&certs.mutating_ca, ca, "mutating caBundle != Secret ca.crt");
    assert_eq!(
        &certs.validating_ca, ca,
        "validating caBundle != Secret ca.crt"
    );
    for key in ["tls.crt", "tls.key"] {
        assert!(
            certs.secret.get(key).is_some_and(|v| !v.is_empty()),
            "the Secret has no {key}"
        );
    }

    // Least privilege, as the API server's authorizer sees it.
    let name = fullname(release);
    let controller = format!("system:serviceaccount:{}:{name}-controller", ns.name());
    let webhook = format!("system:serviceaccount:{}:{name}-webhook", ns.name());
    let other_ns = "default";
    for (args, expected) in [
        (vec!["create", "pods", "-n", ns.name()], true),
        (vec!["create", "pods", "-n", other_ns], true),
        (vec!["delete", "pods", "-n", other_ns], true),
        (vec!["watch", "redis.myapp.tangx.in", "-n", other_ns], true),
        (
            vec![
                "patch",
                "redis.myapp.tangx.in",
                "--subresource=status",
                "-n",
                other_ns,
            ],
            true,
        ),
        (
            vec!["create", "leases.coordination.k8s.io", "-n", ns.name()],
            true,
        ),
        (
            vec!["create", "leases.coordination.k8s.io", "-n", other_ns],
            false,
        ),
        (
            vec![
                "patch",
                &format!("leases.coordination.k8s.io/{name}-controller"),
                "-n",
                ns.name(),
            ],
            true,
        ),
        (
            vec![
                "patch",
                "leases.coordination.k8s.io/someone-elses",
                "-n",
                ns.name(),
            ],
            false,
        ),
        // Secrets: read (auth: the metadata watch and the password of a named Secret); create
        // and update for spec.acl's `<name>-acl` only (the code writes no other, and never one
        // it does not own); never patched or deleted (the garbage collector deletes it).
        (vec!["get", "secrets", "-n", ns.name()], true),
        (vec!["list", "secrets", "-n", other_ns], true),
        (vec!["watch", "secrets", "-n", other_ns], true),
        (vec!["create", "secrets", "-n", other_ns], true),
        (vec!["update", "secrets", "-n", other_ns], true),
        (vec!["patch", "secrets", "-n", other_ns], false),
        (vec!["delete", "secrets", "-n", other_ns], false),
        (vec!["get", "deployments.apps", "-n", ns.name()], false),
        (vec!["create", "deployments.apps", "-n", other_ns], false),
        (vec!["patch", "deployments.apps", "-n", ns.name()], false),
        (vec!["delete", "deployments.apps", "-n", ns.name()], false),
        (vec!["update", "pods", "-n", other_ns], false),
        // The Services and PodDisruptionBudget of each Redis (server-side apply).
        (vec!["patch", "services", "-n", other_ns], true),
        (vec!["create", "services", "-n", other_ns], true),
        (vec!["delete", "services", "-n", other_ns], true),
        // A name the labelled cache lacks is read before anything is applied to it.
        (vec!["get", "services", "-n", other_ns], true),
        (
            vec!["patch", "poddisruptionbudgets.policy", "-n", other_ns],
            true,
        ),
        (
            vec!["delete", "poddisruptionbudgets.policy", "-n", other_ns],
            false,
        ),
        (
            vec!["delete", "redis.myapp.tangx.in", "-n", other_ns],
            false,
        ),
    ] {
        let allowed = can_i(cluster, &controller, &args)?;
        assert_eq!(allowed, expected, "controller can-i {args:?}");
    }
    for args in [
        vec!["get", "pods", "-n", ns.name()],
        vec!["get", "secrets", "-n", ns.name()],
        vec!["list", "redis.myapp.tangx.in", "-n", ns.name()],
        vec!["create", "leases.coordination.k8s.io", "-n", ns.name()],
    ] {
        assert!(!can_i(cluster, &webhook, &args)?, "webhook can-i {args:?}");
    }
    Ok(certs)
}

/// Waits until nothing labelled as the release's is left, in its namespace or cluster-wide.
async fn wait_release_gone(cluster: &Cluster, namespace: &str, release: &str) -> Result<(), Error> {
    let selector = format!("app.kubernetes.io/instance={release}");
    wait_for(
        &format!("every object of release {release} to be gone"),
        CONVERGE,
        || async {
            let mut left = String::new();
            for (scope, kinds) in [
                (
                    Some(namespace),
                    "deployments,replicasets,pods,services,secrets,serviceaccounts,roles,rolebindings,poddisruptionbudgets,configmaps",
                ),
                (
                    None,
                    "clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations",
                ),
            ] {
                let mut args = vec!["get", kinds, "-l", &selector, "-o", "name"];
                if let Some(namespace) = scope {
                    args.extend(["-n", namespace]);
                }
                match e2e::operator::run_kubectl(cluster, &args) {
                    Ok(out) => left.push_str(&out),
                    Err(e) => return Err(format!("kubectl get: {e}")),
                }
            }
            // Helm's own release records.
            let records = e2e::operator::run_kubectl(
                cluster,
                &["get", "secrets", "-n", namespace, "-l", &format!("owner=helm,name={release}"), "-o", "name"],
            )
            .map_err(|e| format!("kubectl get: {e}"))?;
            left.push_str(&records);
            if left.trim().is_empty() {
                Ok(())
            } else {
                Err(left.split_whitespace().collect::<Vec<_>>().join(", "))
            }
        },
    )
    .await?;
    // The CRD stays: deleting it would delete every Redis.
    Api::<CustomResourceDefinition>::all(cluster.client())
        .get("redis.myapp.tangx.in")
        .await
        .context("reading the Redis CRD after the release is gone")?;
    Ok(())
}

#[tokio::test]
async fn helm_install_upgrade_uninstall() -> Result<(), Error> {
    let (cluster, ns) = setup("chart-helm").await?;
    let release = ns.name().to_owned();
    let values = write_test_values(&ns, &release)?;
    let guard = ReleaseGuard {
        release: release.clone(),
        namespace: ns.name().to_owned(),
        kubeconfig: cluster.kubeconfig().to_owned(),
        helm: true,
    };
    let helm_command = |verb: &str| -> Result<Command, Error> {
        let mut command = Command::new(helm()?);
        command
            .env("KUBECONFIG", cluster.kubeconfig())
            .args([verb, &release])
            .arg(chart_dir())
            .args(["--namespace", ns.name(), "--skip-crds", "-f"])
            .arg(&values);
        Ok(command)
    };

    run("helm install", &mut helm_command("install")?)?;
    let installed = check_release(&cluster, &ns, &release).await?;

    run("helm upgrade", &mut helm_command("upgrade")?)?;
    let upgraded = check_release(&cluster, &ns, &release).await?;
    assert!(
        installed == upgraded,
        "helm upgrade with the same values changed the certificates"
    );

    run(
        "helm uninstall",
        Command::new(helm()?)
            .env("KUBECONFIG", cluster.kubeconfig())
            .args(["uninstall", &release, "--namespace", ns.name(), "--wait"]),
    )?;
    wait_release_gone(&cluster, ns.name(), &release).await?;
    drop(guard);
    Ok(())
}

#[tokio::test]
async fn deploy_manifest_apply_and_delete() -> Result<(), Error> {
    let (cluster, ns) = setup("chart-apply").await?;
    let cert_manager = CertManager::require(&cluster).await?;
    let release = ns.name().to_owned();
    let values = write_test_values(&ns, &release)?;
    let values_arg = values.display().to_string();
    // What `make manifests` renders into deploy/, for this namespace and release.
    let manifest = render_deploy(&release, ns.name(), &["-f", &values_arg])?;
    let path = values.with_file_name("deploy.yaml");
    std::fs::write(&path, &manifest).map_err(|e| manifest_error(&path, e))?;
    let path_arg = path.display().to_string();
    let guard = ReleaseGuard {
        release: release.clone(),
        namespace: ns.name().to_owned(),
        kubeconfig: cluster.kubeconfig().to_owned(),
        helm: false,
    };

    e2e::operator::run_kubectl(&cluster, &["apply", "--server-side", "-f", &path_arg]).map_err(
        |e| Error::Process {
            what: "kubectl apply --server-side -f deploy manifest".into(),
            reason: e,
        },
    )?;
    issue_and_inject(&cluster, cert_manager, &ns, &release).await?;
    check_release(&cluster, &ns, &release).await?;

    // Deleting the manifest removes the Namespace too; the CRD (deploy/crd.yaml) stays.
    e2e::operator::run_kubectl(&cluster, &["delete", "-f", &path_arg, "--wait=false"]).map_err(
        |e| Error::Process {
            what: "kubectl delete -f deploy manifest".into(),
            reason: e,
        },
    )?;
    wait_release_gone(&cluster, ns.name(), &release).await?;
    drop(guard);
    Ok(())
}
