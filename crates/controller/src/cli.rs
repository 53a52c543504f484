//! Command line of `redis-controller` (every flag also reads an environment variable).

use crate::children::OperatorPods;
use clap::Parser;
use ops::LogFormat;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "redis-controller",
    version,
    about = "Reconciles myapp.tangx.in/v1 Redis resources into pods"
)]
pub struct Cli {
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "REDIS_CONTROLLER_NAMESPACE")]
    pub namespace: Option<String>,

    /// Plain-HTTP address of the operations port: /healthz, /readyz and /metrics. The aliases are
    /// the flag's old name and kubebuilder's names for its metrics and health-probe ports, which
    /// here are one port.
    #[arg(
        long,
        visible_aliases = ["metrics-bind", "metrics-bind-address", "health-probe-bind-address"],
        env = "REDIS_CONTROLLER_METRICS_BIND",
        default_value = "0.0.0.0:8080"
    )]
    pub ops_bind: SocketAddr,

    /// Run only while holding a coordination.k8s.io Lease, so several replicas can run with one active.
    #[arg(long, env = "REDIS_CONTROLLER_LEADER_ELECT")]
    pub leader_elect: bool,

    /// Namespace of the Lease (default: $POD_NAMESPACE, else `default`).
    #[arg(long, env = "REDIS_CONTROLLER_LEASE_NAMESPACE")]
    pub lease_namespace: Option<String>,

    /// Name of the Lease.
    #[arg(
        long,
        env = "REDIS_CONTROLLER_LEASE_NAME",
        default_value = "redis-operator-controller"
    )]
    pub lease_name: String,

    /// How long a lease is valid without renewal (seconds); a standby takes over after this.
    #[arg(long, env = "REDIS_CONTROLLER_LEASE_DURATION", default_value_t = 15)]
    pub lease_duration: u64,

    /// Redis objects reconciled at once.
    #[arg(long, env = "REDIS_CONTROLLER_CONCURRENCY", default_value_t = 8)]
    pub concurrency: u16,

    /// Wait this long after a change before reconciling, so bursts of pod updates become one
    /// reconcile (and one status write).
    #[arg(long, env = "REDIS_CONTROLLER_DEBOUNCE", default_value = "200ms", value_parser = humantime::parse_duration)]
    pub debounce: Duration,

    /// Namespace of the controller's pods, which every Redis's NetworkPolicy admits to its port
    /// (default: $POD_NAMESPACE; with neither, no controller pod is admitted).
    #[arg(long, env = "REDIS_CONTROLLER_OPERATOR_NAMESPACE")]
    pub operator_namespace: Option<String>,

    /// Labels of the controller's pods, `key=value` separated by commas, which every Redis's
    /// NetworkPolicy admits to its port (the chart passes its pods' selector labels). Empty: no
    /// controller pod is admitted (a controller run outside the cluster reaches the pods from a
    /// node, which NetworkPolicies do not block).
    #[arg(
        long,
        env = "REDIS_CONTROLLER_OPERATOR_POD_LABELS",
        value_delimiter = ',',
        value_parser = label_pair
    )]
    pub operator_pod_labels: Vec<(String, String)>,

    /// The image whose `redis-backup` the backup Jobs and the restore step run (DESIGN §3o): the
    /// operator's own controller image, which carries it (the chart passes its image).
    #[arg(long, env = "REDIS_CONTROLLER_BACKUP_IMAGE", default_value = concat!("ghcr.io/tangx/redis-controller:v", env!("CARGO_PKG_VERSION")))]
    pub backup_image: String,

    /// Log format.
    #[arg(long, env = "REDIS_CONTROLLER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// `key=value`, both non-empty.
fn label_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() && !value.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!("expected key=value, got {text:?}")),
    }
}

impl Cli {
    /// The controller's own pods as the NetworkPolicies admit them: `--operator-namespace`,
    /// else the pod's namespace; `--operator-pod-labels`.
    pub fn operator_pods(&self, pod_namespace: Option<String>) -> OperatorPods {
        OperatorPods {
            namespace: self
                .operator_namespace
                .clone()
                .or(pod_namespace)
                .unwrap_or_default(),
            labels: self.operator_pod_labels.iter().cloned().collect(),
        }
    }

    /// `--lease-namespace`, else the pod's namespace, else `default`.
    pub fn lease_namespace(&self, pod_namespace: Option<String>) -> String {
        self.lease_namespace
            .clone()
            .or(pod_namespace)
            .unwrap_or_else(|| "default".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn defaults() {
        let cli = Cli::try_parse_from(["redis-controller"]).expect("parses");
        assert_eq!(cli.namespace, None);
        assert_eq!(cli.ops_bind.to_string(), "0.0.0.0:8080");
        assert!(!cli.leader_elect);
        assert_eq!(cli.lease_namespace(None), "default");
        assert_eq!(cli.lease_namespace(Some("ops".into())), "ops");
    }

    #[test]
    fn the_ops_port_flag_and_each_alias_set_ops_bind() {
        for flag in [
            "--ops-bind",
            "--metrics-bind",
            "--metrics-bind-address",
            "--health-probe-bind-address",
        ] {
            let cli = Cli::try_parse_from(["redis-controller", flag, "127.0.0.1:9090"])
                .unwrap_or_else(|e| panic!("{flag} parses: {e}"));
            assert_eq!(cli.ops_bind.to_string(), "127.0.0.1:9090", "{flag}");
            // The `=` form, as the chart and the manifests write it.
            let cli = Cli::try_parse_from(["redis-controller", &format!("{flag}=127.0.0.1:9091")])
                .unwrap_or_else(|e| panic!("{flag}= parses: {e}"));
            assert_eq!(cli.ops_bind.to_string(), "127.0.0.1:9091", "{flag}=");
        }
        // The environment variable keeps its name (deployments may set it).
        let command = Cli::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == "ops_bind")
            .expect("ops_bind is an argument");
        assert_eq!(
            arg.get_env().and_then(|e| e.to_str()),
            Some("REDIS_CONTROLLER_METRICS_BIND")
        );
    }

    #[test]
    fn the_operator_pods_come_from_the_flags_or_the_pod_namespace() {
        let cli = Cli::try_parse_from([
            "redis-controller",
            "--operator-pod-labels",
            "app.kubernetes.io/name=redis-operator,app.kubernetes.io/component=controller",
        ])
        .expect("parses");
        let pods = cli.operator_pods(Some("redis-system".into()));
        assert_eq!(pods.namespace, "redis-system");
        assert_eq!(
            pods.labels
                .get("app.kubernetes.io/component")
                .map(String::as_str),
            Some("controller")
        );
        assert_eq!(pods.labels.len(), 2);
        let cli =
            Cli::try_parse_from(["redis-controller", "--operator-namespace=ops"]).expect("parses");
        assert_eq!(cli.operator_pods(Some("x".into())).namespace, "ops");
        assert!(cli.operator_pods(None).labels.is_empty());
        for bad in ["app", "=x", "app="] {
            assert!(
                Cli::try_parse_from(["redis-controller", "--operator-pod-labels", bad]).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn lease_namespace_flag_wins() {
        let cli = Cli::try_parse_from([
            "redis-controller",
            "--leader-elect",
            "--lease-namespace",
            "x",
            "--namespace",
            "team",
        ])
        .expect("parses");
        assert!(cli.leader_elect);
        assert_eq!(cli.lease_namespace(Some("ops".into())), "x");
        assert_eq!(cli.namespace.as_deref(), Some("team"));
    }
}
