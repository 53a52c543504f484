//! Prometheus metrics of the webhook, served as text on the plain-HTTP `--ops-bind` port.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::OnceLock;

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
    /// The series of `requests` and `duration` each review records, found in their family
    /// once: a lookup there (a lock, a hash of the labels) cost as much as writing the answer.
    /// A series still appears only once first recorded.
    request_series: [OnceLock<Counter>; ENDPOINTS.len() * OPERATIONS.len() * RESULTS.len()],
    duration_series: [OnceLock<Histogram>; ENDPOINTS.len()],
}

/// The label values [`Metrics::count_request`] and [`Metrics::observe_duration`] keep a
/// series for; others are looked up in the family each time.
const ENDPOINTS: [&str; 2] = ["mutate", "validate"];
const OPERATIONS: [&str; 5] = ["CREATE", "UPDATE", "DELETE", "CONNECT", "none"];
const RESULTS: [&str; 6] = [
    "allowed",
    "patched",
    "denied",
    "skipped",
    "bad_request",
    "too_large",
];

fn index_of(values: &[&str], value: &str) -> Option<usize> {
    values.iter().position(|v| *v == value)
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
            request_series: std::array::from_fn(|_| OnceLock::new()),
            duration_series: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Metrics {
    /// Counts one answered admission request.
    pub fn count_request(&self, labels: RequestLabels) {
        let slot = index_of(&ENDPOINTS, labels.endpoint)
            .zip(index_of(&OPERATIONS, labels.operation))
            .zip(index_of(&RESULTS, labels.result))
            .map(|((e, o), r)| (e * OPERATIONS.len() + o) * RESULTS.len() + r)
            .and_then(|i| self.request_series.get(i));
        match slot {
            Some(series) => {
                series
                    .get_or_init(|| self.requests.get_or_create(&labels).clone())
                    .inc();
            }
            None => {
                self.requests.get_or_create(&labels).inc();
            }
        }
    }

    /// Records how long one admission request took to answer.
    pub fn observe_duration(&self, endpoint: &'static str, seconds: f64) {
        let labels = EndpointLabels { endpoint };
        match index_of(&ENDPOINTS, endpoint).and_then(|i| self.duration_series.get(i)) {
            Some(series) => series
                .get_or_init(|| self.duration.get_or_create(&labels).clone())
                .observe(seconds),
            None => self.duration.get_or_create(&labels).observe(seconds),
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_series_count_as_the_family_does_and_appear_once_recorded() {
        let metrics = Metrics::default();
        let labels = |result| RequestLabels {
            endpoint: "validate",
            operation: "CREATE",
            result,
        };
        assert!(!metrics.render().contains("result=\"denied\""));
        metrics.count_request(labels("denied"));
        metrics.count_request(labels("denied"));
        // Not a kept series: counted in the family all the same.
        metrics.count_request(labels("other"));
        metrics.observe_duration("validate", 0.001);
        metrics.observe_duration("other", 0.001);
        assert_eq!(metrics.requests.get_or_create(&labels("denied")).get(), 2);
        assert_eq!(metrics.requests.get_or_create(&labels("other")).get(), 1);
        let text = metrics.render();
        assert!(text.contains("redis_webhook_admission_requests_total{endpoint=\"validate\",operation=\"CREATE\",result=\"denied\"} 2"), "{text}");
        assert!(
            text.contains(
                "redis_webhook_admission_duration_seconds_count{endpoint=\"validate\"} 1"
            ),
            "{text}"
        );
        assert!(!text.contains("result=\"allowed\""), "{text}");
    }
}
