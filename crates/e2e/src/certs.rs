//! Certificates for the TLS tests (DESIGN §3k): a CA of the test's own, and certificates it
//! issues, in the PEM layout of a `kubernetes.io/tls` Secret as cert-manager writes it.

use crate::Error;
use k8s_openapi::ByteString;
use std::collections::BTreeMap;

/// A CA that lives as long as the test.
pub struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

/// A certificate and its key, in PEM.
pub struct Issued {
    pub cert: String,
    pub key: String,
}

fn cert_error(e: rcgen::Error) -> Error {
    Error::process("generating a test certificate", e)
}

impl TestCa {
    pub fn new(common_name: &str) -> Result<Self, Error> {
        let mut params = rcgen::CertificateParams::default();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().map_err(cert_error)?;
        let issuer = rcgen::CertifiedIssuer::self_signed(params, key).map_err(cert_error)?;
        Ok(TestCa { issuer })
    }

    /// `ca.crt`.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `dns_names` with a fresh key and serial, usable by a server and a
    /// client (no extended key usage restricts it), as cert-manager issues by default.
    pub fn issue(&self, dns_names: &[String]) -> Result<Issued, Error> {
        let key = rcgen::KeyPair::generate().map_err(cert_error)?;
        let mut params = rcgen::CertificateParams::new(dns_names.to_vec()).map_err(cert_error)?;
        if let Some(first) = dns_names.first() {
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, first.clone());
        }
        let cert = params.signed_by(&key, &self.issuer).map_err(cert_error)?;
        Ok(Issued {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }

    /// The data of a `kubernetes.io/tls` Secret holding `issued` and this CA.
    pub fn secret_data(&self, issued: &Issued) -> BTreeMap<String, ByteString> {
        [
            ("ca.crt", self.pem()),
            ("tls.crt", issued.cert.clone()),
            ("tls.key", issued.key.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), ByteString(v.into_bytes())))
        .collect()
    }
}

/// The names a Redis's certificate carries (what the README's cert-manager example lists): the
/// Service in every form clients use it, and every pod through the headless Service.
pub fn redis_dns_names(redis: &str, namespace: &str) -> Vec<String> {
    vec![
        redis.to_owned(),
        format!("{redis}.{namespace}"),
        format!("{redis}.{namespace}.svc"),
        format!("{redis}.{namespace}.svc.cluster.local"),
        format!("*.{redis}-headless.{namespace}.svc"),
    ]
}

impl TestCa {
    /// `issued` and this CA as the controller reads them from the Secret.
    pub fn material(&self, issued: &Issued) -> Result<controller::tls::material::Material, Error> {
        let data: BTreeMap<String, Vec<u8>> = self
            .secret_data(issued)
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        controller::tls::material::parse(&data).map_err(|e| Error::process("the test's Secret", e))
    }

    /// The controller's TLS client for the pods of Redis `redis` in `namespace` whose Secret
    /// holds `issued` and this CA: what the tests' own clients (writers, checks) use.
    pub fn client(
        &self,
        issued: &Issued,
        redis: &str,
        namespace: &str,
    ) -> Result<controller::redis_server::TlsClient, Error> {
        controller::tls::client_config(
            &self.material(issued)?,
            &[],
            &api::tls::server_name(redis, namespace),
        )
        .map_err(|e| Error::process("the test's TLS client", e))
    }
}
