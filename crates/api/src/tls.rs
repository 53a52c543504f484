//! TLS on the pods' Redis port (`spec.tls`, DESIGN §3k): the type, its effective values, and the
//! paths and arguments every part of the operator agrees on (the pods mount the Secret at
//! [`MOUNT_PATH`]; redis-server, the probes, the exporter and the controller read the same
//! files). Its admission rules are in `validation`'s `tls` module; the pods are built in the
//! controller's `pods/build`, and the controller's own TLS client and the live reload are in its
//! `tls` folder.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The rustls crypto provider of every TLS connection and key in the workspace (the webhook's
/// server, the controller's client to the pods, `redis-backup`'s client and the process default
/// its S3 client takes, their tests): the one place it is chosen. ring rather than rustls's
/// default aws-lc: no C build (cmake, a C compiler) for the images, and kube's client is built
/// with ring too. rustls 0.23.48 deprecates ring's provider (it has no post-quantum key
/// exchange), so the warning is silenced here and only here.
#[allow(deprecated)]
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Where every container of a TLS pod finds the Secret's files.
pub const MOUNT_PATH: &str = "/tls";
/// The Secret's keys, as cert-manager writes them (a Secret of type `kubernetes.io/tls`).
pub const CERT_KEY: &str = "tls.crt";
pub const PRIVATE_KEY_KEY: &str = "tls.key";
pub const CA_KEY: &str = "ca.crt";
/// The name of the pods' volume holding the Secret.
pub const VOLUME: &str = "tls";
/// The name of the plaintext port (`plaintextPort`) on the pods and the Services.
pub const PLAINTEXT_PORT_NAME: &str = "redis-plaintext";

/// TLS on spec.port for clients, replication, the probes, the exporter and the operator.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// The Secret (in the Redis's namespace) holding `tls.crt` (the certificate, naming `<name>.<namespace>.svc`, which the operator checks), `tls.key` and `ca.crt` (the CA that signed it and every client certificate), as cert-manager writes it. A new certificate in it (a renewal) is loaded by the running redis-servers without a restart.
    pub secret_ref: TlsSecretRef,

    /// Whether clients must show a certificate signed by ca.crt (redis-server's `tls-auth-clients`): None (the default: no), Optional (checked when shown) or Required. The operator, the probes, the exporter and the replicas show the pods' own certificate (give it the client auth usage, or none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_auth: Option<TlsClientAuth>,

    /// A second port serving Redis without TLS, for clients that cannot use it (same bounds as spec.port, another number). Not set (the default): spec.port only, TLS only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(
        min = crate::schema::SCHEMA_MIN_PORT,
        max = crate::schema::SCHEMA_MAX_PORT
    ))]
    pub plaintext_port: Option<i32>,
}

/// The Secret of `spec.tls`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSecretRef {
    /// Name of the Secret (a DNS-1123 subdomain: lowercase letters, digits, '-' and '.').
    #[schemars(length(min = 1))]
    pub name: String,
}

/// Whether redis-server asks clients for a certificate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum TlsClientAuth {
    /// No client certificate is asked for.
    #[default]
    None,
    /// A client certificate is checked when the client shows one.
    Optional,
    /// Every client must show a certificate signed by ca.crt.
    Required,
}

impl TlsClientAuth {
    /// The value as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsClientAuth::None => "None",
            TlsClientAuth::Optional => "Optional",
            TlsClientAuth::Required => "Required",
        }
    }

    /// redis-server's `tls-auth-clients` value.
    pub fn redis_value(self) -> &'static str {
        match self {
            TlsClientAuth::None => "no",
            TlsClientAuth::Optional => "optional",
            TlsClientAuth::Required => "yes",
        }
    }
}

impl TlsSpec {
    /// The plaintext port, when one is asked for.
    pub fn plaintext_port(&self) -> Option<i32> {
        self.plaintext_port.filter(|p| *p > 0)
    }

    /// The client certificate mode in effect.
    pub fn client_auth(&self) -> TlsClientAuth {
        self.client_auth.unwrap_or_default()
    }
}

/// A file of the mounted Secret, as the containers see it.
pub fn file(key: &str) -> String {
    format!("{MOUNT_PATH}/{key}")
}

/// The name the operator verifies every pod's certificate against: the Redis's Service in its
/// namespace (`<name>.<namespace>.svc`), which clients use too. The pods are reached by IP, and
/// one Secret serves them all, so a per-pod name would make every certificate list every pod.
pub fn server_name(redis: &str, namespace: &str) -> String {
    format!("{redis}.{namespace}.svc")
}

/// redis-server's TLS arguments for spec.port (`--tls-port`, `--port` the plaintext port or 0,
/// the files, client auth, TLS for replication), as `--name value` pairs.
pub fn server_args(tls: &TlsSpec, port: i32) -> Vec<String> {
    let plaintext = tls.plaintext_port().unwrap_or(0);
    [
        ("--port", plaintext.to_string()),
        ("--tls-port", port.to_string()),
        ("--tls-cert-file", file(CERT_KEY)),
        ("--tls-key-file", file(PRIVATE_KEY_KEY)),
        ("--tls-ca-cert-file", file(CA_KEY)),
        (
            "--tls-auth-clients",
            tls.client_auth().redis_value().to_owned(),
        ),
        ("--tls-replication", "yes".to_owned()),
    ]
    .into_iter()
    .flat_map(|(name, value)| [name.to_owned(), value])
    .collect()
}

/// `redis-cli`'s TLS arguments inside a pod: TLS, the CA, and the pod's own certificate as the
/// client's (shown only when asked for).
pub fn cli_args() -> Vec<String> {
    vec![
        "--tls".to_owned(),
        "--cacert".to_owned(),
        file(CA_KEY),
        "--cert".to_owned(),
        file(CERT_KEY),
        "--key".to_owned(),
        file(PRIVATE_KEY_KEY),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tls_server_serves_tls_on_its_port_and_plaintext_nowhere_unless_asked() {
        let tls = TlsSpec {
            secret_ref: TlsSecretRef { name: "c".into() },
            ..TlsSpec::default()
        };
        let args = server_args(&tls, 6379);
        let pairs: Vec<_> = args
            .chunks(2)
            .map(|p| (p[0].as_str(), p[1].as_str()))
            .collect();
        assert!(pairs.contains(&("--port", "0")));
        assert!(pairs.contains(&("--tls-port", "6379")));
        assert!(pairs.contains(&("--tls-replication", "yes")));
        assert!(pairs.contains(&("--tls-auth-clients", "no")));
        assert!(pairs.contains(&("--tls-cert-file", "/tls/tls.crt")));

        let open = TlsSpec {
            plaintext_port: Some(6380),
            client_auth: Some(TlsClientAuth::Required),
            ..tls
        };
        let args = server_args(&open, 6379);
        let pairs: Vec<_> = args
            .chunks(2)
            .map(|p| (p[0].as_str(), p[1].as_str()))
            .collect();
        assert!(pairs.contains(&("--port", "6380")));
        assert!(pairs.contains(&("--tls-auth-clients", "yes")));
    }
}
