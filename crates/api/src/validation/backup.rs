//! The rules on `spec.backup` and `spec.restore` (DESIGN §2, for §3o backups): a destination the
//! backup pods can use (an http(s) endpoint without credentials in it, a bucket name S3 takes, a
//! credentials Secret's name), a schedule cron reads, and a restore that names one source and is
//! never changed after creation. A `RedisBackup`'s own rules are in its CRD schema (CEL).

use super::auth::secret_name_problem;
use super::syntax::is_dns1123_subdomain;
use super::violation::{Violation, shown};
use crate::backup::{self, BackupDestination, MAX_KEEP};
use crate::types::RedisSpec;

/// The longest object key S3 takes, in bytes.
const MAX_KEY_BYTES: usize = 1024;

/// `spec.backup` and `spec.restore` of a Redis.
pub(super) fn backup_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut violations = Vec::new();
    if let Some(backup) = &spec.backup {
        violations.extend(destination_violations(
            "spec.backup.destination",
            &backup.destination,
        ));
        if let Some(schedule) = &backup.schedule
            && let Err(problem) = backup::parse_schedule(schedule)
        {
            violations.push(Violation::new(
                "spec.backup.schedule",
                format!("{schedule:?}"),
                format!(
                    "{} is not a cron schedule (five fields: minute hour day-of-month month day-of-week, or @hourly, @daily...): {}",
                    shown(schedule),
                    shown(&problem)
                ),
            ));
        }
        let keep = backup.keep();
        if !(1..=MAX_KEEP).contains(&keep) {
            violations.push(Violation::new(
                "spec.backup.keep",
                keep,
                format!("must be between 1 and {MAX_KEEP}, got {keep}"),
            ));
        }
    }
    if let Some(restore) = &spec.restore {
        match (&restore.backup_name, &restore.location) {
            (Some(_), Some(_)) | (None, None) => violations.push(Violation::new(
                "spec.restore",
                format!("{restore:?}"),
                "must name exactly one of backupName or location",
            )),
            (Some(name), None) => {
                if !is_dns1123_subdomain(name) {
                    violations.push(Violation::new(
                        "spec.restore.backupName",
                        format!("{name:?}"),
                        format!(
                            "{} is not the name of a RedisBackup (a DNS-1123 subdomain)",
                            shown(name)
                        ),
                    ));
                }
            }
            (None, Some(location)) => {
                match backup::parse_location(location) {
                    Some((bucket, key)) => {
                        if let Err(problem) = bucket_problem(bucket) {
                            violations.push(Violation::new(
                                "spec.restore.location",
                                format!("{location:?}"),
                                format!("bucket {}: {problem}", shown(bucket)),
                            ));
                        }
                        if let Err(problem) = key_problem(key) {
                            violations.push(Violation::new(
                                "spec.restore.location",
                                format!("{location:?}"),
                                format!("key: {problem}"),
                            ));
                        }
                    }
                    None => violations.push(Violation::new(
                        "spec.restore.location",
                        format!("{location:?}"),
                        format!("{} is not of the form s3://<bucket>/<key>", shown(location)),
                    )),
                }
                if spec.backup.is_none() {
                    violations.push(Violation::new(
                        "spec.restore.location",
                        format!("{location:?}"),
                        "is read with spec.backup.destination's endpoint and credentials: set spec.backup",
                    ));
                }
            }
        }
    }
    violations
}

/// UPDATE: `spec.restore` is honoured once, at creation; any change afterwards is refused (never
/// ratcheted: the pods already started from what it said).
pub(super) fn restore_update_violations(new: &RedisSpec, old: &RedisSpec) -> Vec<Violation> {
    if new.restore == old.restore {
        return Vec::new();
    }
    vec![Violation::new(
        "spec.restore",
        format!("{:?}", new.restore),
        "is honoured only when the Redis is created and cannot be set, changed or removed afterwards (create a new Redis to restore into)",
    )]
}

/// A destination's fields (under `path`).
fn destination_violations(path: &str, destination: &BackupDestination) -> Vec<Violation> {
    let s3 = &destination.s3;
    let mut violations = Vec::new();
    let mut check = |field: &str, value: &str, problem: Result<(), String>| {
        if let Err(message) = problem {
            violations.push(Violation::new(
                format!("{path}.s3.{field}"),
                format!("{value:?}"),
                message,
            ));
        }
    };
    check("endpoint", &s3.endpoint, endpoint_problem(&s3.endpoint));
    check("bucket", &s3.bucket, bucket_problem(&s3.bucket));
    if let Some(prefix) = &s3.prefix {
        check("prefix", prefix, prefix_problem(prefix));
    }
    if let Some(region) = &s3.region {
        check("region", region, region_problem(region));
    }
    let secret = &s3.credentials_secret_ref.name;
    check(
        "credentialsSecretRef.name",
        secret,
        secret_name_problem(secret),
    );
    violations
}

/// `http://` or `https://`, a host (name, IPv4 or [IPv6]) and an optional port, nothing else: no
/// credentials in the URL (they belong in the Secret), no path, query or fragment.
fn endpoint_problem(endpoint: &str) -> Result<(), String> {
    let Some(rest) = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
    else {
        return Err(format!(
            "{} must start with http:// or https://",
            shown(endpoint)
        ));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains(['/', '?', '#']) {
        return Err(format!(
            "{} must be the service's address only (no path, query or fragment)",
            shown(endpoint)
        ));
    }
    if authority.contains('@') {
        return Err("must not hold credentials: name them in credentialsSecretRef".to_owned());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("{} has an unclosed [", shown(endpoint)))?;
            (host, after.strip_prefix(':'))
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
    if !host_ok {
        return Err(format!("{} has no valid host", shown(endpoint)));
    }
    if let Some(port) = port
        && !port.parse::<u16>().is_ok_and(|p| p > 0)
    {
        return Err(format!("{} has no valid port", shown(endpoint)));
    }
    Ok(())
}

/// S3's bucket naming: 3-63 lowercase letters, digits, '.' and '-', starting and ending with a
/// letter or digit, no "..".
fn bucket_problem(bucket: &str) -> Result<(), String> {
    let ok = (3..=63).contains(&bucket.len())
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-'))
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && bucket.ends_with(|c: char| c.is_ascii_alphanumeric())
        && !bucket.contains("..");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} is not a bucket name (3-63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit)",
            shown(bucket)
        ))
    }
}

/// A key prefix: printable, no leading '/', no "." or ".." segment, room left for the rest of
/// the key.
fn prefix_problem(prefix: &str) -> Result<(), String> {
    if prefix.len() > 512 {
        return Err(format!("must be at most 512 bytes, got {}", prefix.len()));
    }
    key_problem(&format!("{prefix}x"))
}

fn key_problem(key: &str) -> Result<(), String> {
    if key.len() > MAX_KEY_BYTES {
        return Err(format!(
            "must be at most {MAX_KEY_BYTES} bytes, got {}",
            key.len()
        ));
    }
    if key.starts_with('/') {
        return Err(format!("{} must not start with '/'", shown(key)));
    }
    if key.chars().any(char::is_control) {
        return Err(format!("{} must not hold control characters", shown(key)));
    }
    if key
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(format!(
            "{} must not hold a \".\" or \"..\" segment",
            shown(key)
        ));
    }
    Ok(())
}

/// A region: lowercase letters, digits and '-' (us-east-1, eu-west-3, garage's "garage"...).
fn region_problem(region: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&region.len())
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} is not a region (lowercase letters, digits and '-')",
            shown(region)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::{BackupSpec, CredentialsSecretRef, RestoreSpec, S3Destination};

    fn destination() -> BackupDestination {
        BackupDestination {
            s3: S3Destination {
                endpoint: "http://10.88.0.1:18333".to_owned(),
                bucket: "backups".to_owned(),
                credentials_secret_ref: CredentialsSecretRef {
                    name: "s3-credentials".to_owned(),
                },
                ..S3Destination::default()
            },
        }
    }

    fn spec_with(backup: Option<BackupSpec>, restore: Option<RestoreSpec>) -> RedisSpec {
        RedisSpec {
            backup,
            restore,
            ..RedisSpec::default()
        }
    }

    fn fields(violations: &[Violation]) -> Vec<&str> {
        violations.iter().map(|v| v.field.as_str()).collect()
    }

    #[test]
    fn a_usable_destination_and_schedule_pass() {
        let backup = BackupSpec {
            destination: destination(),
            schedule: Some("*/5 * * * *".to_owned()),
            keep: Some(2),
        };
        assert_eq!(backup_violations(&spec_with(Some(backup), None)), vec![]);
        for endpoint in [
            "https://s3.eu-west-1.amazonaws.com",
            "http://minio.storage:9000/",
            "http://[fd00::1]:9000",
        ] {
            assert_eq!(endpoint_problem(endpoint), Ok(()), "{endpoint}");
        }
    }

    #[test]
    fn a_destination_the_pods_cannot_use_is_refused_field_by_field() {
        let mut bad = destination();
        bad.s3.endpoint = "https://key:secret@s3.example.com".to_owned();
        bad.s3.bucket = "Backups_2".to_owned();
        bad.s3.prefix = Some("/abs/../x".to_owned());
        bad.s3.region = Some("US East".to_owned());
        bad.s3.credentials_secret_ref.name = "Creds".to_owned();
        let backup = BackupSpec {
            destination: bad,
            schedule: Some("every minute".to_owned()),
            keep: Some(0),
        };
        let violations = backup_violations(&spec_with(Some(backup), None));
        assert_eq!(
            fields(&violations),
            vec![
                "spec.backup.destination.s3.endpoint",
                "spec.backup.destination.s3.bucket",
                "spec.backup.destination.s3.prefix",
                "spec.backup.destination.s3.region",
                "spec.backup.destination.s3.credentialsSecretRef.name",
                "spec.backup.schedule",
                "spec.backup.keep",
            ],
            "{violations:?}"
        );
        assert!(violations[0].message.contains("credentialsSecretRef"));
        for endpoint in [
            "s3.example.com",
            "ftp://x",
            "http://",
            "http://h:0",
            "http://h/p",
        ] {
            assert!(endpoint_problem(endpoint).is_err(), "{endpoint}");
        }
    }

    #[test]
    fn a_restore_names_one_source_and_a_location_needs_the_destination() {
        let both = RestoreSpec {
            backup_name: Some("b1".to_owned()),
            location: Some("s3://backups/k.rdb".to_owned()),
        };
        assert_eq!(
            fields(&backup_violations(&spec_with(None, Some(both)))),
            vec!["spec.restore"]
        );
        let location = RestoreSpec {
            location: Some("s3://backups/ns/cache/b1.rdb".to_owned()),
            ..RestoreSpec::default()
        };
        let alone = backup_violations(&spec_with(None, Some(location.clone())));
        assert_eq!(fields(&alone), vec!["spec.restore.location"]);
        assert!(alone[0].message.contains("spec.backup"), "{alone:?}");
        let backup = BackupSpec {
            destination: destination(),
            ..BackupSpec::default()
        };
        assert_eq!(
            backup_violations(&spec_with(Some(backup.clone()), Some(location))),
            vec![]
        );
        let not_s3 = RestoreSpec {
            location: Some("backups/k.rdb".to_owned()),
            ..RestoreSpec::default()
        };
        assert_eq!(
            fields(&backup_violations(&spec_with(Some(backup), Some(not_s3)))),
            vec!["spec.restore.location"]
        );
        let named = RestoreSpec {
            backup_name: Some("nightly-1".to_owned()),
            ..RestoreSpec::default()
        };
        assert_eq!(backup_violations(&spec_with(None, Some(named))), vec![]);
    }

    #[test]
    fn the_restore_is_never_changed_after_creation() {
        let named = Some(RestoreSpec {
            backup_name: Some("b1".to_owned()),
            ..RestoreSpec::default()
        });
        let other = Some(RestoreSpec {
            backup_name: Some("b2".to_owned()),
            ..RestoreSpec::default()
        });
        let spec = |restore| spec_with(None, restore);
        assert_eq!(
            restore_update_violations(&spec(named.clone()), &spec(named.clone())),
            vec![]
        );
        for (new, old) in [
            (other.clone(), named.clone()),
            (None, named.clone()),
            (named, None),
        ] {
            assert_eq!(
                fields(&restore_update_violations(&spec(new), &spec(old))),
                vec!["spec.restore"]
            );
        }
    }
}
