//! The metrics exporter sidecar (`spec.exporter`, DESIGN §3e): the type and its effective values.
//! A `redis_exporter` container next to redis-server in every pod, reading it over localhost (with
//! the password from the auth Secret) and serving Prometheus metrics on a `metrics` port that the
//! pod and the Services expose (DESIGN §3e).
//!
//! Whether the sidecar runs for a Redis is `RedisSpec::exporter` (in the `defaults` module), and
//! the exporter's admission rules are in `validation`'s `exporter` module: both read the whole
//! spec, which holds this type, so they cannot live here without an import circle.

use k8s_openapi::api::core::v1::ResourceRequirements;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The image when the spec names none: oliver006's redis_exporter, the version the test bed runs.
pub const DEFAULT_EXPORTER_IMAGE: &str = "oliver006/redis_exporter:v1.45.0";
/// redis_exporter's own default port.
pub const DEFAULT_EXPORTER_PORT: i32 = 9121;
/// Name of the container, its port, and the Services' port.
pub const METRICS_PORT_NAME: &str = "metrics";

/// Label (value "true") on the one Service of a Redis whose endpoints are all of its pods, while
/// the exporter runs: what a ServiceMonitor selects so each pod is scraped once.
pub const SCRAPE_LABEL: &str = "myapp.tangx.in/metrics";

/// A metrics exporter next to each redis-server.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExporterSpec {
    /// Run the exporter. Defaults to true: writing `exporter: {}` turns it on; false keeps the settings but removes the sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,

    /// Image of a redis_exporter-compatible exporter (reads REDIS_ADDR, REDIS_PASSWORD and REDIS_EXPORTER_WEB_LISTEN_ADDRESS). Defaults to "oliver006/redis_exporter:v1.45.0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub image: Option<String>,

    /// Port the exporter serves /metrics on, named "metrics" on the pod and the Services. 1..65535, not the Redis port. Defaults to 9121.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,

    /// CPU and memory requests and limits of the exporter container. None by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

impl ExporterSpec {
    /// Whether the sidecar runs.
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The effective image.
    pub fn image(&self) -> &str {
        self.image.as_deref().unwrap_or(DEFAULT_EXPORTER_IMAGE)
    }

    /// The effective port.
    pub fn port(&self) -> i32 {
        self.port.unwrap_or(DEFAULT_EXPORTER_PORT)
    }
}
