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
/// The temporary file is always a new one, created with its final mode (0600 for the key), so
/// the key is never readable by others, not even between a write and a chmod.
fn write_file(path: &Path, text: &str, secret: bool) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let fail = |source| Error::WriteFile {
        path: path.to_owned(),
        source,
    };
    // A crashed run's leftover is removed, never reused: someone may hold it open, or it may
    // be a link to another file. `create_new` then refuses anything recreated in between.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail(e)),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(&tmp)
        .map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    drop(file);
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

    fn args_into(out: &Path) -> GenCertsArgs {
        GenCertsArgs {
            out: out.to_owned(),
            dns: vec!["localhost".into()],
            ip: Vec::new(),
            valid_days: 2,
        }
    }

    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    /// The key goes into a file this run creates, 0600 from its first byte: never into a
    /// temporary file left behind, which may be readable by others and held open by one of
    /// them, or be a link planted to catch it (a hard link to another file, a symbolic link to
    /// anywhere).
    #[test]
    fn the_key_never_lands_in_a_leftover_temporary_file() {
        use std::io::Read;
        use std::os::unix::fs::PermissionsExt;
        const KEY: &str = "-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n";
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("tls.key");
        let tmp = key.with_extension("tmp");
        for plant in ["held open", "hard link", "symbolic link"] {
            let spy = dir.path().join(format!("spy ({plant})"));
            std::fs::write(&spy, "").expect("spy");
            std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o644)).expect("mode");
            let _ = std::fs::remove_file(&tmp);
            match plant {
                "held open" => std::fs::rename(&spy, &tmp).expect("leftover"),
                "hard link" => std::fs::hard_link(&spy, &tmp).expect("hard link"),
                _ => std::os::unix::fs::symlink(&spy, &tmp).expect("symlink"),
            }
            // Opened while it was readable: permissions are checked at open only.
            let mut reader = std::fs::File::open(&tmp).expect("opens the leftover");
            write_file(&key, KEY, true).expect("writes over a leftover");
            let mut caught = String::new();
            reader.read_to_string(&mut caught).expect("reads");
            assert!(
                !caught.contains("PRIVATE KEY"),
                "{plant}: the key was written into the leftover"
            );
            if plant != "held open" {
                assert_eq!(
                    mode_of(&spy),
                    0o644,
                    "{plant}: the planted file is left alone"
                );
            }
            assert_eq!(mode_of(&key), 0o600, "{plant}");
            assert!(
                std::fs::symlink_metadata(&key).expect("key").is_file(),
                "{plant}"
            );
            assert_eq!(std::fs::read_to_string(&key).expect("key"), KEY, "{plant}");
        }
    }

    /// A run that crashed between writing and renaming leaves its temporary file: the next run
    /// replaces it rather than failing for good.
    #[test]
    fn a_leftover_temporary_file_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let tmp = dir.path().join("tls.tmp");
        std::fs::write(&tmp, "half a key from a crashed run").expect("leftover");
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).expect("mode");
        let written = write(&args_into(dir.path())).expect("writes");
        assert_eq!(written.len(), 3);
        assert!(!tmp.exists(), "no temporary file is left");
        assert_eq!(mode_of(&dir.path().join("tls.key")), 0o600);
        let loaded = crate::tls::load_certified_key(
            &dir.path().join("tls.crt"),
            &dir.path().join("tls.key"),
        );
        assert!(loaded.is_ok(), "{:?}", loaded.err());
    }
}
