//! The pod's containers: `redis` (redis-server, its ports and probes) and the metrics sidecar
//! (`spec.exporter`, §3e).

use super::launch::{PASSWORD_ENV, Start, start};
use super::pieces::{restricted_container_context, secret_env, tls_mount};
use super::volumes::redis_mounts;
use api::RedisSpec;
use api::exporter::METRICS_PORT_NAME;
use api::pods::{CONTAINER, EXPORTER_CONTAINER};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, ExecAction, HTTPGetAction, Probe, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The `redis` container of Redis `name`; `restart_only` leaves out the `spec.config`
/// directives redis-server takes live (§3m).
pub(super) fn redis_container(name: &str, spec: &RedisSpec, restart_only: bool) -> Container {
    let port = spec.port();
    let Start { command, args, env } = start(name, spec, restart_only);
    let ping = ping_probe(spec);
    // Liveness asks Redis itself, like readiness but slower to give up: a redis-server that hangs
    // (stopped, deadlocked) keeps its listening socket accepting connections, so a TCP probe
    // passes forever and the pod is never restarted (seen on the bed's real node with SIGSTOP).
    let alive = Probe {
        exec: ping.exec.clone(),
        initial_delay_seconds: Some(10),
        period_seconds: Some(10),
        timeout_seconds: Some(5),
        failure_threshold: Some(3),
        ..Probe::default()
    };
    Container {
        name: CONTAINER.into(),
        image: Some(spec.image().to_owned()),
        image_pull_policy: Some(spec.image_pull_policy().as_str().to_owned()),
        command,
        args: Some(args),
        env,
        ports: Some(
            std::iter::once(("redis", port))
                .chain(
                    spec.tls
                        .as_ref()
                        .and_then(api::TlsSpec::plaintext_port)
                        .map(|p| (api::tls::PLAINTEXT_PORT_NAME, p)),
                )
                .map(|(name, port)| ContainerPort {
                    name: Some(name.into()),
                    container_port: port,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                })
                .collect(),
        ),
        readiness_probe: Some(ping),
        liveness_probe: Some(alive),
        resources: spec.resources.clone(),
        security_context: Some(restricted_container_context()),
        volume_mounts: Some(redis_mounts(spec)),
        ..Container::default()
    }
}

/// Readiness: `redis-cli ping` on the pod's port, as the operator's user with ACL users (its
/// password in `REDISCLI_AUTH`), over TLS with `spec.tls`.
fn ping_probe(spec: &RedisSpec) -> Probe {
    let tls_cli = spec.tls.as_ref().map(|_| api::tls::cli_args());
    let cli_user = spec
        .acl
        .as_ref()
        .map(|_| ["--user".to_owned(), api::acl::OPERATOR_USER.to_owned()]);
    Probe {
        exec: Some(ExecAction {
            command: Some(
                [
                    "redis-cli".to_owned(),
                    "-p".to_owned(),
                    spec.port().to_string(),
                ]
                .into_iter()
                .chain(cli_user.into_iter().flatten())
                .chain(tls_cli.into_iter().flatten())
                .chain(["ping".to_owned()])
                .collect(),
            ),
        }),
        period_seconds: Some(5),
        timeout_seconds: Some(2),
        failure_threshold: Some(3),
        ..Probe::default()
    }
}

/// The metrics sidecar (`spec.exporter`): redis_exporter reading redis-server over localhost,
/// with the password from the same Secret (never in the spec), serving on the `metrics` port.
pub(super) fn exporter_container(
    name: &str,
    spec: &RedisSpec,
    exporter: &api::ExporterSpec,
    security_context: SecurityContext,
) -> Container {
    let port = exporter.port();
    let plain = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        value_from: None,
    };
    let scheme = if spec.tls.is_some() {
        "rediss"
    } else {
        "redis"
    };
    let mut env = vec![
        plain(
            "REDIS_ADDR",
            format!("{scheme}://localhost:{}", spec.port()),
        ),
        plain("REDIS_EXPORTER_WEB_LISTEN_ADDRESS", format!(":{port}")),
    ];
    if spec.tls.is_some() {
        use api::tls::{CA_KEY, CERT_KEY, PRIVATE_KEY_KEY, file};
        env.extend([
            plain("REDIS_EXPORTER_TLS_CA_CERT_FILE", file(CA_KEY)),
            // The pod's own certificate, shown when redis-server asks (clientAuth).
            plain("REDIS_EXPORTER_TLS_CLIENT_CERT_FILE", file(CERT_KEY)),
            plain("REDIS_EXPORTER_TLS_CLIENT_KEY_FILE", file(PRIVATE_KEY_KEY)),
            // Over loopback in its own pod, where no one can stand between; the certificate
            // names the Service, not `localhost`, so a name check could only fail.
            plain("REDIS_EXPORTER_SKIP_TLS_VERIFICATION", "true".to_owned()),
        ]);
    }
    // With ACL users it logs in as the operator's user (which may run what it reads).
    match (&spec.acl, spec.auth_secret()) {
        (Some(_), _) => env.extend([
            plain("REDIS_USER", api::acl::OPERATOR_USER.to_owned()),
            secret_env(
                PASSWORD_ENV,
                &api::acl::secret_name(name),
                api::acl::OPERATOR_PASSWORD_KEY,
            ),
        ]),
        (None, Some((secret, key))) => env.push(secret_env(PASSWORD_ENV, secret, key)),
        (None, None) => {}
    }
    let health = Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/health".into()),
            port: IntOrString::String(METRICS_PORT_NAME.into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(10),
        timeout_seconds: Some(2),
        failure_threshold: Some(3),
        ..Probe::default()
    };
    Container {
        name: EXPORTER_CONTAINER.into(),
        image: Some(exporter.image().to_owned()),
        image_pull_policy: Some(spec.image_pull_policy().as_str().to_owned()),
        env: Some(env),
        ports: Some(vec![ContainerPort {
            name: Some(METRICS_PORT_NAME.into()),
            container_port: port,
            protocol: Some("TCP".into()),
            ..ContainerPort::default()
        }]),
        // Liveness only: a failing exporter must not take Redis out of its Services.
        liveness_probe: Some(health),
        resources: exporter.resources.clone(),
        security_context: Some(security_context),
        volume_mounts: spec.tls.as_ref().map(|_| vec![tls_mount()]),
        ..Container::default()
    }
}
