//! What the operator registers with the API server, read from the chart's `files/`, the one
//! copy the chart renders and `hack/run.sh` registers too: the admission webhooks (all of each
//! but where it is called and for which namespaces) and the controller's RBAC rules.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::ObjectMeta;
use serde::de::DeserializeOwned;

use crate::Error;

/// A file of the chart's `files/`: its name and its text, compiled in.
type ChartFile = (&'static str, &'static str);

macro_rules! chart_file {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../../charts/redis-operator/files/", $name)),
        )
    };
}

const MUTATING_WEBHOOK: ChartFile = chart_file!("mutating-webhook.yaml");
const VALIDATING_WEBHOOK: ChartFile = chart_file!("validating-webhook.yaml");
const CONTROLLER_RULES: ChartFile = chart_file!("controller-rules.yaml");
const LEADER_ELECTION_RULES: ChartFile = chart_file!("leader-election-rules.yaml");

/// The controller's rules (a ClusterRole in the chart).
pub(super) fn controller_rules() -> Result<Vec<PolicyRule>, Error> {
    parse(CONTROLLER_RULES)
}

/// The rules of the controller's leader election (a Role in the lease's namespace).
pub(super) fn leader_election_rules() -> Result<Vec<PolicyRule>, Error> {
    parse(LEADER_ELECTION_RULES)
}

/// Both webhook configurations, named `name`: the chart's webhooks called at
/// `https://127.0.0.1:<port>/mutate` and `/validate` with `ca` as caBundle, for Redis in
/// `namespace` only.
pub(super) fn webhook_configurations(
    name: &str,
    port: u16,
    ca: &[u8],
    namespace: &str,
) -> Result<(MutatingWebhookConfiguration, ValidatingWebhookConfiguration), Error> {
    let metadata = ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    let only_this_namespace = LabelSelector {
        match_labels: Some(BTreeMap::from([(
            "kubernetes.io/metadata.name".to_owned(),
            namespace.to_owned(),
        )])),
        match_expressions: None,
    };
    let webhook = |file: ChartFile, path: &str| {
        let client_config = WebhookClientConfig {
            url: Some(format!("https://127.0.0.1:{port}{path}")),
            ca_bundle: Some(ByteString(ca.to_vec())),
            service: None,
        };
        let mut webhook: serde_json::Value = parse(file)?;
        let placed = serde_json::json!({
            "clientConfig": client_config,
            "namespaceSelector": only_this_namespace,
        });
        if let (Some(webhook), Some(placed)) = (webhook.as_object_mut(), placed.as_object()) {
            webhook.extend(placed.clone());
        }
        Ok::<_, Error>(webhook)
    };
    let mutating = MutatingWebhookConfiguration {
        metadata: metadata.clone(),
        webhooks: Some(vec![typed(
            MUTATING_WEBHOOK,
            webhook(MUTATING_WEBHOOK, "/mutate")?,
        )?]),
    };
    let validating = ValidatingWebhookConfiguration {
        metadata,
        webhooks: Some(vec![typed(
            VALIDATING_WEBHOOK,
            webhook(VALIDATING_WEBHOOK, "/validate")?,
        )?]),
    };
    Ok((mutating, validating))
}

fn parse<T: DeserializeOwned>(file: ChartFile) -> Result<T, Error> {
    serde_norway::from_str(file.1).map_err(|e| file_error(file, e))
}

fn typed<T: DeserializeOwned>(file: ChartFile, value: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|e| file_error(file, e))
}

fn file_error((name, _): ChartFile, reason: impl ToString) -> Error {
    Error::Manifest {
        path: Path::new("charts/redis-operator/files").join(name),
        reason: reason.to_string(),
    }
}
