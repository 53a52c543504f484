//! Prometheus metrics of the webhook, served as text on the plain-HTTP `--ops-bind` port.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `mutate` or `validate`.
    pub endpoint: &'static str,
    /// CREATE, UPDATE, DELETE, CONNECT, or `none` when the body could not be read.
    pub operation: &'static str,
    /// allowed, patched, denied, skipped, bad_request, too_large.
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    pub endpoint: &'static str,
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub duration: Family<EndpointLabels, Histogram>,
    pub cert_reloads: Counter,
    pub cert_reload_failures: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        // 50µs .. ~0.8s: admission decisions are in-memory; the tail shows TLS or scheduling stalls.
        let duration = Family::<EndpointLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_05, 2.0, 15))
        });
        let cert_reloads = Counter::default();
        let cert_reload_failures = Counter::default();
        let mut registry = Registry::with_prefix("redis_webhook");
        registry.register(
            "admission_requests",
            "Admission requests answered",
            requests.clone(),
        );
        registry.register(
            "admission_duration_seconds",
            "Time to read, decide and answer an admission request",
            duration.clone(),
        );
        registry.register(
            "certificate_reloads",
            "Serving certificate reloads",
            cert_reloads.clone(),
        );
        registry.register(
            "certificate_reload_failures",
            "Changed certificate files that did not load (the previous certificate was kept)",
            cert_reload_failures.clone(),
        );
        Metrics {
            registry,
            requests,
            duration,
            cert_reloads,
            cert_reload_failures,
        }
    }
}

impl Metrics {
    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; an error here would be a bug in the encoder.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "could not encode metrics");
        }
        out
    }
}
