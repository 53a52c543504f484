//! The rules on `spec.tls` (DESIGN §2, for §3k TLS): the Secret it names must be one a Secret can
//! be, and the plaintext port one the pods can open next to spec.port and the exporter's.

use super::auth::secret_name_problem;
use super::violation::Violation;
use crate::schema::SCHEMA_MAX_PORT;
use crate::types::{Mode, RedisSpec};

/// `spec.tls`: a valid Secret name; `plaintextPort` within the bounds of spec.port (`lowest`:
/// the policy's) and on no port the pod already uses.
pub(super) fn tls_violations(spec: &RedisSpec, lowest: i32) -> Vec<Violation> {
    let mut violations = Vec::new();
    let Some(tls) = &spec.tls else {
        return violations;
    };
    let name = &tls.secret_ref.name;
    if let Err(message) = secret_name_problem(name) {
        violations.push(Violation::new(
            "spec.tls.secretRef.name",
            format!("{name:?}"),
            message,
        ));
    }
    if let Some(port) = tls.plaintext_port {
        let field = "spec.tls.plaintextPort";
        if port < lowest {
            violations.push(Violation::new(
                field,
                port,
                format!("must be >= {lowest}, got {port}"),
            ));
        }
        if port > SCHEMA_MAX_PORT {
            violations.push(Violation::new(
                field,
                port,
                format!("must be <= {SCHEMA_MAX_PORT}, got {port}"),
            ));
        }
        if port == spec.port() {
            violations.push(Violation::new(
                field,
                port,
                format!("must differ from spec.port (TLS is served there), got {port}"),
            ));
        }
        if let Some(exporter) = spec.exporter.as_ref().filter(|e| e.enabled())
            && port == exporter.port()
        {
            violations.push(Violation::new(
                field,
                port,
                format!("must differ from spec.exporter.port (the metrics port), got {port}"),
            ));
        }
    }
    violations
}

/// A plaintext port takes back part of what TLS gives: said at every write.
pub(super) fn tls_warnings(spec: &RedisSpec) -> Vec<String> {
    let Some(tls) = &spec.tls else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    if let Some(port) = tls.plaintext_port {
        let what = if spec.auth.is_some() {
            "the password and the data"
        } else {
            "the data"
        };
        warnings.push(format!(
            "spec.tls.plaintextPort: port {port} serves Redis without TLS; {what} cross the network in clear there"
        ));
    }
    warnings
}

/// UPDATE: TLS is not turned on or off under a running Replication Redis with replicas. Its pods
/// are replaced one at a time, and a pod with TLS cannot replicate from a primary without it
/// (nor the other way round): the replicas would never sync, and no replica could take over.
pub(super) fn tls_update_violations(new: &RedisSpec, old: &RedisSpec) -> Vec<Violation> {
    let replicated = |spec: &RedisSpec| spec.mode() == Mode::Replication && spec.replicas() > 1;
    if new.tls.is_some() == old.tls.is_some() || !(replicated(new) && replicated(old)) {
        return Vec::new();
    }
    let (verb, value) = if new.tls.is_some() {
        ("added to", "set")
    } else {
        ("removed from", "unset")
    };
    vec![Violation::new(
        "spec.tls",
        value,
        format!(
            "cannot be {verb} a Replication Redis with replicas: its pods are replaced one at a time, and a pod with TLS cannot replicate from one without it; scale it to 1 replica first (with spec.storage the data stays), or create a new Redis"
        ),
    )]
}

/// UPDATE: another Secret rolls the pods one at a time; during that, old and new certificates
/// must trust each other's CA.
pub(super) fn tls_update_warnings(new: &RedisSpec, old: &RedisSpec) -> Vec<String> {
    match (&new.tls, &old.tls) {
        (Some(new), Some(old)) if new.secret_ref.name != old.secret_ref.name => vec![format!(
            "spec.tls.secretRef.name: the pods are replaced one at a time to read Secret {:?}; until all are, replication needs each Secret's ca.crt to hold the CA of the other's certificate",
            new.secret_ref.name
        )],
        _ => Vec::new(),
    }
}
