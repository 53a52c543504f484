//! `redis-webhook gen-certs`: a throwaway CA and a serving certificate signed by it (ECDSA P-256),
//! for local runs (`make certs`) and tests. Production uses the chart's or cert-manager's.

use crate::Error;
use clap::Args;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType,
};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use time::{Duration, OffsetDateTime};

#[derive(Args, Debug, Clone)]
pub struct GenCertsArgs {
    /// Folder to write ca.crt, tls.crt and tls.key into (created if missing).
    #[arg(long, default_value = "certs")]
    pub out: PathBuf,
    /// DNS name the serving certificate is valid for (repeatable), e.g. redis-webhook.ns.svc.
    #[arg(long = "dns")]
    pub dns: Vec<String>,
    /// IP address the serving certificate is valid for (repeatable), e.g. 127.0.0.1.
    #[arg(long = "ip")]
    pub ip: Vec<IpAddr>,
    /// Validity of the serving certificate, in days (the CA gets ten times as long).
    #[arg(long, default_value_t = 365)]
    pub valid_days: u32,
}

/// PEM texts of a generated CA and serving pair.
#[derive(Debug, Clone)]
pub struct Generated {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Generates a CA and a serving certificate for `dns` names and `ips`.
pub fn generate(dns: &[String], ips: &[IpAddr], valid_days: u32) -> Result<Generated, Error> {
    if dns.is_empty() && ips.is_empty() {
        return Err(Error::NoSubjectNames);
    }
    let now = OffsetDateTime::now_utc();
    let days = i64::from(valid_days);

    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "redis-webhook CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = now - Duration::hours(1);
    ca_params.not_after = now + Duration::days(days * 10);
    let ca = CertifiedIssuer::self_signed(ca_params, new_key()?).map_err(Error::CertGen)?;

    let mut params = CertificateParams::new(dns.to_vec()).map_err(Error::CertGen)?;
    params
        .subject_alt_names
        .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
    let common_name = dns
        .first()
        .cloned()
        .or_else(|| ips.first().map(IpAddr::to_string))
        .unwrap_or_default();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(days);
    let key = new_key()?;
    let cert = params.signed_by(&key, &ca).map_err(Error::CertGen)?;

    Ok(Generated {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn new_key() -> Result<KeyPair, Error> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(Error::CertGen)
}

/// `gen-certs`: generates and writes `ca.crt`, `tls.crt`, `tls.key` (mode 0600) into `args.out`.
pub fn write(args: &GenCertsArgs) -> Result<Vec<PathBuf>, Error> {
    let generated = generate(&args.dns, &args.ip, args.valid_days)?;
    std::fs::create_dir_all(&args.out).map_err(|source| Error::WriteFile {
        path: args.out.clone(),
        source,
    })?;
    let files = [
        ("ca.crt", &generated.ca_pem, false),
        ("tls.crt", &generated.cert_pem, false),
        ("tls.key", &generated.key_pem, true),
    ];
    let mut written = Vec::new();
    for (name, text, secret) in files {
        let path = args.out.join(name);
        write_file(&path, text, secret)?;
        written.push(path);
    }
    Ok(written)
}

/// Writes through a temporary file and a rename, so a running webhook never reads half a file.
fn write_file(path: &Path, text: &str, secret: bool) -> Result<(), Error> {
    let tmp = path.with_extension("tmp");
    let fail = |source| Error::WriteFile {
        path: path.to_owned(),
        source,
    };
    std::fs::write(&tmp, text).map_err(fail)?;
    if secret {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_a_subject_name() {
        assert!(matches!(generate(&[], &[], 1), Err(Error::NoSubjectNames)));
    }

    #[test]
    fn generated_pair_loads_as_a_serving_certificate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = GenCertsArgs {
            out: dir.path().join("certs"),
            dns: vec!["localhost".into()],
            ip: vec!["127.0.0.1".parse().expect("ip")],
            valid_days: 2,
        };
        let written = write(&args).expect("writes");
        assert_eq!(written.len(), 3);
        let loaded =
            crate::tls::load_certified_key(&args.out.join("tls.crt"), &args.out.join("tls.key"));
        assert!(loaded.is_ok(), "{:?}", loaded.err());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(args.out.join("tls.key"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
