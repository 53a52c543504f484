//! The test bed's audit log: who wrote what, when.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use e2e::Error;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

/// The verbs that write (the bed's audit policy logs only these).
pub(crate) const WRITE_VERBS: [&str; 5] =
    ["create", "update", "patch", "delete", "deletecollection"];

/// The test bed's audit log: one JSON event per write request (hack/cluster/audit-policy.yaml).
pub(crate) struct AuditLog {
    path: PathBuf,
}

/// One write request, as the audit log has it.
#[derive(Clone, Debug)]
pub(crate) struct AuditEvent {
    pub(crate) at: Timestamp,
    pub(crate) user: String,
    pub(crate) verb: String,
    /// `pods`, `redis`, `redis/status`, `events`, ...
    pub(crate) resource: String,
    pub(crate) name: String,
    pub(crate) code: i64,
}

impl AuditEvent {
    fn parse(line: &str, namespace: &str) -> Option<Self> {
        let event: Value = serde_json::from_str(line).ok()?;
        let object = &event["objectRef"];
        if event["stage"] != "ResponseComplete" || object["namespace"] != namespace {
            return None;
        }
        let verb = event["verb"].as_str()?;
        if !WRITE_VERBS.contains(&verb) {
            return None;
        }
        let mut resource = object["resource"].as_str().unwrap_or("?").to_owned();
        if let Some(sub) = object["subresource"].as_str() {
            resource = format!("{resource}/{sub}");
        }
        Some(AuditEvent {
            at: event["stageTimestamp"].as_str()?.parse().ok()?,
            user: event["user"]["username"].as_str()?.to_owned(),
            verb: verb.to_owned(),
            resource,
            name: object["name"].as_str().unwrap_or_default().to_owned(),
            code: event["responseStatus"]["code"].as_i64().unwrap_or(0),
        })
    }

    pub(crate) fn describe(&self, since: &Timestamp, controller_user: &str) -> String {
        let offset = self.at.duration_since(*since).as_secs_f64();
        let user = if self.user == controller_user {
            "redis-controller"
        } else {
            self.user.as_str()
        };
        format!(
            "{offset:+8.3}s  {user:<38} {:<7} {}/{} -> {}",
            self.verb, self.resource, self.name, self.code
        )
    }
}

impl AuditLog {
    pub(crate) fn new(path: PathBuf) -> Self {
        AuditLog { path }
    }

    /// Its current size: where events from now on start.
    pub(crate) fn len(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }

    /// Write events in `namespace` from `offset` on (complete lines only).
    pub(crate) fn read(&self, offset: u64, namespace: &str) -> Result<Vec<AuditEvent>, Error> {
        let what = || format!("reading {}", self.path.display());
        let mut file = std::fs::File::open(&self.path).map_err(|e| Error::process(what(), e))?;
        // A log rotated or truncated since: read it from its start.
        let start = if file.metadata().map_or(0, |m| m.len()) < offset {
            0
        } else {
            offset
        };
        file.seek(SeekFrom::Start(start))
            .map_err(|e| Error::process(what(), e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| Error::process(what(), e))?;
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        Ok(String::from_utf8_lossy(&bytes[..complete])
            .lines()
            .filter_map(|line| AuditEvent::parse(line, namespace))
            .collect())
    }
}

pub(crate) fn by_key(events: &[&AuditEvent], key: impl Fn(&AuditEvent) -> String) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for event in events {
        *counts.entry(key(event)).or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
