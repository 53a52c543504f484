//! Command line of `redis-webhook` (every flag also reads an environment variable).

use crate::certs::GenCertsArgs;
use crate::server::{Config, Limits};
use api::Policy;
use clap::{Args, Parser, Subcommand};
use ops::LogFormat;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "redis-webhook",
    version,
    about = "Admission webhook for myapp.tangx.in/v1 Redis: defaults (/mutate) and validation (/validate) over TLS",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub serve: ServeArgs,

    /// Log format.
    #[arg(long, env = "REDIS_WEBHOOK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Write a throwaway CA (ca.crt) and a serving certificate and key (tls.crt, tls.key) signed
    /// by it, for the given DNS names and IP addresses.
    GenCerts(GenCertsArgs),
}

/// Serving flags (the default command).
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address of the TLS admission endpoints (/mutate, /validate).
    #[arg(long, env = "REDIS_WEBHOOK_BIND", default_value = "0.0.0.0:9443")]
    pub bind: SocketAddr,

    /// PEM certificate chain (leaf first); reloaded when it changes on disk.
    #[arg(
        long,
        env = "REDIS_WEBHOOK_TLS_CERT_FILE",
        default_value = "certs/tls.crt"
    )]
    pub tls_cert_file: PathBuf,

    /// PEM private key of the certificate; reloaded when it changes on disk.
    #[arg(
        long,
        env = "REDIS_WEBHOOK_TLS_KEY_FILE",
        default_value = "certs/tls.key"
    )]
    pub tls_key_file: PathBuf,

    /// Plain-HTTP address of the operations port: /healthz, /readyz and /metrics. The aliases are
    /// kubebuilder's names for its metrics and health-probe ports, which here are one port.
    #[arg(
        long,
        visible_aliases = ["metrics-bind", "metrics-bind-address", "health-probe-bind-address"],
        env = "REDIS_WEBHOOK_METRICS_BIND",
        default_value = "0.0.0.0:8080"
    )]
    pub ops_bind: SocketAddr,

    /// Names a Redis may not have (comma-separated).
    #[arg(
        long,
        env = "REDIS_WEBHOOK_RESERVED_NAMES",
        value_delimiter = ',',
        default_value = "tangx-in"
    )]
    pub reserved_names: Vec<String>,

    /// Lowest spec.port accepted.
    #[arg(long, env = "REDIS_WEBHOOK_MIN_PORT", default_value_t = 6379)]
    pub min_port: i32,

    /// Highest spec.replicas accepted.
    #[arg(long, env = "REDIS_WEBHOOK_MAX_REPLICAS", default_value_t = 100)]
    pub max_replicas: i32,

    /// Largest request body accepted (bytes); larger ones get 413. An UPDATE review carries the
    /// object twice; the API server caps a Redis's annotations at 256 KiB and its spec is a few
    /// fields, so real reviews stay far below 1 MiB. Memory grows with this times
    /// --max-in-flight, and --body-bytes-per-client is raised to it when below.
    #[arg(long, env = "REDIS_WEBHOOK_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Open connections at most; more wait until one closes.
    #[arg(long, env = "REDIS_WEBHOOK_MAX_CONNECTIONS", default_value_t = Limits::default().max_connections)]
    pub max_connections: usize,

    /// Open connections per client address; past it a new one is closed at once, so one pod
    /// flooding the port cannot take the places of the API server's connections.
    #[arg(long, env = "REDIS_WEBHOOK_MAX_CONNECTIONS_PER_CLIENT", default_value_t = Limits::default().max_connections_per_client)]
    pub max_connections_per_client: usize,

    /// Reviews decided at once, over all connections (a review takes its place once its body
    /// is read).
    #[arg(long, env = "REDIS_WEBHOOK_MAX_IN_FLIGHT", default_value_t = Limits::default().max_in_flight)]
    pub max_in_flight: usize,

    /// Bytes of request bodies held while they are read, over all clients.
    #[arg(long, env = "REDIS_WEBHOOK_BODY_BYTES_IN_FLIGHT", default_value_t = Limits::default().body_bytes_in_flight)]
    pub body_bytes_in_flight: usize,

    /// Bytes of request bodies one client address may hold while they are read.
    #[arg(long, env = "REDIS_WEBHOOK_BODY_BYTES_PER_CLIENT", default_value_t = Limits::default().body_bytes_per_client)]
    pub body_bytes_per_client: usize,

    /// HTTP/2 streams per connection.
    #[arg(long, env = "REDIS_WEBHOOK_MAX_CONCURRENT_STREAMS", default_value_t = Limits::default().max_concurrent_streams)]
    pub max_concurrent_streams: u32,

    /// Time for the TLS handshake.
    #[arg(long, env = "REDIS_WEBHOOK_HANDSHAKE_TIMEOUT", default_value = "3s", value_parser = humantime::parse_duration)]
    pub handshake_timeout: Duration,

    /// Time for (HTTP/1.1) a request's line and headers.
    #[arg(long, env = "REDIS_WEBHOOK_HEADER_READ_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Duration,

    /// Time for a request's body (408 after).
    #[arg(long, env = "REDIS_WEBHOOK_BODY_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub body_timeout: Duration,

    /// A connection without a request for this long is closed.
    #[arg(long, env = "REDIS_WEBHOOK_IDLE_TIMEOUT", default_value = "90s", value_parser = humantime::parse_duration)]
    pub idle_timeout: Duration,

    /// Time to receive a request and answer it (408 after); keep it at most the webhooks'
    /// timeoutSeconds (the chart sets both from webhook.timeoutSeconds).
    #[arg(long, env = "REDIS_WEBHOOK_REQUEST_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,

    /// How often the certificate files are checked for changes.
    #[arg(long, env = "REDIS_WEBHOOK_CERT_RELOAD_INTERVAL", default_value = "2s", value_parser = humantime::parse_duration)]
    pub cert_reload_interval: Duration,

    /// How long SIGTERM waits for in-flight requests before exiting.
    #[arg(long, env = "REDIS_WEBHOOK_SHUTDOWN_TIMEOUT", default_value = "20s", value_parser = humantime::parse_duration)]
    pub shutdown_timeout: Duration,
}

impl From<ServeArgs> for Config {
    fn from(args: ServeArgs) -> Self {
        Config {
            bind: args.bind,
            ops_bind: args.ops_bind,
            tls_cert_file: args.tls_cert_file,
            tls_key_file: args.tls_key_file,
            policy: Policy {
                reserved_names: args
                    .reserved_names
                    .into_iter()
                    .filter(|n| !n.is_empty())
                    .collect(),
                min_port: args.min_port,
                max_replicas: args.max_replicas,
            },
            max_body_bytes: args.max_body_bytes,
            cert_reload_interval: args.cert_reload_interval,
            shutdown_timeout: args.shutdown_timeout,
            limits: Limits {
                max_connections: args.max_connections.max(1),
                max_connections_per_client: args.max_connections_per_client.max(1),
                max_in_flight: args.max_in_flight.max(1),
                max_concurrent_streams: args.max_concurrent_streams.max(1),
                handshake_timeout: args.handshake_timeout,
                header_read_timeout: args.header_read_timeout,
                body_timeout: args.body_timeout,
                body_bytes_in_flight: args.body_bytes_in_flight,
                body_bytes_per_client: args.body_bytes_per_client,
                idle_timeout: args.idle_timeout,
                request_timeout: args.request_timeout,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn defaults_match_the_design() {
        let cli = Cli::try_parse_from(["redis-webhook"]).expect("parses");
        assert!(cli.command.is_none());
        let config = Config::from(cli.serve);
        assert_eq!(config.bind.to_string(), "0.0.0.0:9443");
        assert_eq!(config.ops_bind.to_string(), "0.0.0.0:8080");
        assert_eq!(config.tls_cert_file, PathBuf::from("certs/tls.crt"));
        assert_eq!(config.tls_key_file, PathBuf::from("certs/tls.key"));
        assert_eq!(config.policy, Policy::default());
        assert_eq!(config.max_body_bytes, 1024 * 1024);
        assert_eq!(config.limits, Limits::default());
    }

    #[test]
    fn policy_flags_are_parsed() {
        let cli = Cli::try_parse_from([
            "redis-webhook",
            "--reserved-names",
            "a,b",
            "--min-port",
            "7000",
            "--max-replicas",
            "5",
            "--log-format",
            "json",
        ])
        .expect("parses");
        assert_eq!(cli.log_format, LogFormat::Json);
        let policy = Config::from(cli.serve).policy;
        assert_eq!(policy.reserved_names, vec!["a", "b"]);
        assert_eq!((policy.min_port, policy.max_replicas), (7000, 5));
    }

    #[test]
    fn the_ops_port_flag_and_each_alias_set_ops_bind() {
        for flag in [
            "--ops-bind",
            "--metrics-bind",
            "--metrics-bind-address",
            "--health-probe-bind-address",
        ] {
            let cli = Cli::try_parse_from(["redis-webhook", flag, "127.0.0.1:9090"])
                .unwrap_or_else(|e| panic!("{flag} parses: {e}"));
            assert_eq!(cli.serve.ops_bind.to_string(), "127.0.0.1:9090", "{flag}");
            // The `=` form, as the chart and the manifests write it.
            let cli = Cli::try_parse_from(["redis-webhook", &format!("{flag}=127.0.0.1:9091")])
                .unwrap_or_else(|e| panic!("{flag}= parses: {e}"));
            assert_eq!(cli.serve.ops_bind.to_string(), "127.0.0.1:9091", "{flag}=");
        }
        // The environment variable keeps its name (deployments may set it).
        let command = Cli::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == "ops_bind")
            .expect("ops_bind is an argument");
        assert_eq!(
            arg.get_env().and_then(|e| e.to_str()),
            Some("REDIS_WEBHOOK_METRICS_BIND")
        );
    }

    #[test]
    fn gen_certs_is_a_subcommand() {
        let cli = Cli::try_parse_from([
            "redis-webhook",
            "gen-certs",
            "--out",
            "x",
            "--dns",
            "localhost",
            "--ip",
            "127.0.0.1",
        ])
        .expect("parses");
        assert!(matches!(cli.command, Some(Command::GenCerts(_))));
    }
}
