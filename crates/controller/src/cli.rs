//! Command line of `redis-controller` (every flag also reads an environment variable).

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

    /// Log format.
    #[arg(long, env = "REDIS_CONTROLLER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl Cli {
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
