//! What a `spec.tls` Secret holds, as the controller uses it (pure): the CA certificates it
//! trusts the pods with, and the certificate and key it shows them as a client, checked to
//! belong together. The Secret is the tenant's: every key may be missing, empty, not PEM, or
//! hold a key for another certificate; each gives an error naming the key, never a panic.

use api::tls::{CA_KEY, CERT_KEY, PRIVATE_KEY_KEY};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::BTreeMap;

/// The most CA certificates read from `ca.crt` (a bundle of a few is usual; a bound on work).
pub const MAX_CA_CERTIFICATES: usize = 16;

/// Largest value of one key read (`ca.crt`, `tls.crt`, `tls.key`), in bytes: 16 CA certificates
/// of a few KiB each fit; a tenant's 1 MiB value is refused before it is parsed or kept (issue
/// #40.1).
pub const MAX_FILE_BYTES: usize = 64 * 1024;

/// A `spec.tls` Secret, parsed and checked. Its Debug shows no key.
pub struct Material {
    /// `ca.crt`: the CAs every pod's certificate must chain to.
    pub roots: Vec<CertificateDer<'static>>,
    /// `tls.crt`: the pods' certificate (its first), and the chain the controller shows as a
    /// client.
    pub chain: Vec<CertificateDer<'static>>,
    /// `tls.key`.
    pub key: PrivateKeyDer<'static>,
}

impl Clone for Material {
    fn clone(&self) -> Self {
        Material {
            roots: self.roots.clone(),
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl std::fmt::Debug for Material {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Material")
            .field("roots", &self.roots.len())
            .field("chain", &self.chain.len())
            .finish_non_exhaustive()
    }
}

impl Material {
    /// The certificate the pods should be serving: `tls.crt`'s first.
    pub fn leaf(&self) -> Option<&CertificateDer<'static>> {
        self.chain.first()
    }
}

/// Parses the data of a `spec.tls` Secret. `Err`: what is wrong, naming the key.
pub fn parse(data: &BTreeMap<String, Vec<u8>>) -> Result<Material, String> {
    let get = |key: &str| {
        let value = data
            .get(key)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("has no {key}"))?;
        if value.len() > MAX_FILE_BYTES {
            return Err(format!(
                "{key} holds {} bytes: at most {MAX_FILE_BYTES} are read",
                value.len()
            ));
        }
        Ok(value)
    };
    let certificates = |key: &str| -> Result<Vec<CertificateDer<'static>>, String> {
        let pem = get(key)?;
        let mut found = Vec::new();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("{key} is not PEM certificates: {e}"))?;
            if found.len() == MAX_CA_CERTIFICATES {
                return Err(format!(
                    "{key} holds more than {MAX_CA_CERTIFICATES} certificates"
                ));
            }
            found.push(cert);
        }
        if found.is_empty() {
            return Err(format!("{key} holds no PEM certificate"));
        }
        Ok(found)
    };
    let roots = certificates(CA_KEY)?;
    let chain = certificates(CERT_KEY)?;
    let key = PrivateKeyDer::from_pem_slice(get(PRIVATE_KEY_KEY)?)
        .map_err(|e| format!("{PRIVATE_KEY_KEY} is not a PEM private key: {e}"))?;
    let provider = api::tls::crypto_provider();
    rustls::sign::CertifiedKey::from_der(chain.clone(), key.clone_key(), &provider).map_err(
        |e| match e {
            rustls::Error::InconsistentKeys(_) => {
                format!("{PRIVATE_KEY_KEY} is not the key of the certificate in {CERT_KEY}")
            }
            other => format!("{CERT_KEY} and {PRIVATE_KEY_KEY} cannot be used: {other}"),
        },
    )?;
    Ok(Material { roots, chain, key })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A CA, and a certificate it signed for `names`: (ca.crt, tls.crt, tls.key) in PEM.
    pub(crate) fn issued(names: &[&str]) -> (String, String, String) {
        let mut ca_params = rcgen::CertificateParams::default();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test CA");
        let ca_key = rcgen::KeyPair::generate().expect("a key");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("a CA");
        let key = rcgen::KeyPair::generate().expect("a key");
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let cert = rcgen::CertificateParams::new(names)
            .expect("params")
            .signed_by(&key, &ca)
            .expect("a certificate");
        (ca.pem(), cert.pem(), key.serialize_pem())
    }

    fn secret(ca: &str, cert: &str, key: &str) -> BTreeMap<String, Vec<u8>> {
        [(CA_KEY, ca), (CERT_KEY, cert), (PRIVATE_KEY_KEY, key)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn a_secret_as_cert_manager_writes_it_is_read_whole() {
        let (ca, cert, key) = issued(&["r.ns.svc"]);
        let material = parse(&secret(&ca, &cert, &key)).expect("a good Secret");
        assert_eq!(material.roots.len(), 1);
        assert_eq!(material.chain.len(), 1);
        assert!(material.leaf().is_some());
    }

    #[test]
    fn a_missing_or_broken_key_is_named() {
        let (ca, cert, key) = issued(&["r.ns.svc"]);
        let mut missing = secret(&ca, &cert, &key);
        missing.remove(CA_KEY);
        assert_eq!(parse(&missing).expect_err("refused"), "has no ca.crt");
        let garbage = parse(&secret(&ca, "not pem", &key)).expect_err("refused");
        assert_eq!(garbage, "tls.crt holds no PEM certificate");
        let no_key = parse(&secret(&ca, &cert, "-----BEGIN NOTHING-----")).expect_err("refused");
        assert!(
            no_key.starts_with("tls.key is not a PEM private key"),
            "{no_key}"
        );
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let (ca, cert, _) = issued(&["r.ns.svc"]);
        let (_, _, other_key) = issued(&["r.ns.svc"]);
        assert_eq!(
            parse(&secret(&ca, &cert, &other_key)).expect_err("refused"),
            "tls.key is not the key of the certificate in tls.crt"
        );
    }

    #[test]
    fn a_ca_bundle_is_bounded() {
        let (ca, cert, key) = issued(&["r.ns.svc"]);
        let bundle = ca.repeat(MAX_CA_CERTIFICATES + 1);
        let error = parse(&secret(&bundle, &cert, &key)).expect_err("refused");
        assert_eq!(error, "ca.crt holds more than 16 certificates");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_it_is_parsed() {
        let (ca, cert, key) = issued(&["r.ns.svc"]);
        // A valid bundle padded with PEM comment lines to 1 MiB.
        let padded = format!("{ca}{}", "# padding\n".repeat((1 << 20) / 10));
        let error = parse(&secret(&padded, &cert, &key)).expect_err("refused");
        assert_eq!(
            error,
            format!(
                "ca.crt holds {} bytes: at most 65536 are read",
                padded.len()
            )
        );
        let key_padded = format!("{key}{}", "\n".repeat(MAX_FILE_BYTES));
        let error = parse(&secret(&ca, &cert, &key_padded)).expect_err("refused");
        assert!(error.starts_with("tls.key holds"), "{error}");
    }
}
