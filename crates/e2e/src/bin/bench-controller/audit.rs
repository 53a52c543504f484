//! The test bed's audit log: who wrote what, when.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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

/// Where the events from some moment on start: the file then written (by inode, which a
/// rotation keeps) and its size then.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    inode: u64,
    offset: u64,
}

impl AuditLog {
    pub(crate) fn new(path: PathBuf) -> Self {
        AuditLog { path }
    }

    /// Now: events from here on are read by [`AuditLog::read`].
    pub(crate) fn mark(&self) -> Mark {
        std::fs::metadata(&self.path).map_or(
            Mark {
                inode: 0,
                offset: 0,
            },
            |m| Mark {
                inode: m.ino(),
                offset: m.len(),
            },
        )
    }

    /// Write events in `namespace` since `from` (complete lines only). The API server rotates
    /// its audit log at 100 MB (`--audit-log-maxsize` unset: lumberjack's default), renaming it
    /// `audit-<time>.log`, and a run of thousands of pods writes more than that: the file
    /// marked is found by its inode and read from the mark on, then every newer one.
    pub(crate) fn read(&self, from: Mark, namespace: &str) -> Result<Vec<AuditEvent>, Error> {
        let mut files = self.files()?;
        files.sort_by_key(|(modified, _, _)| *modified);
        let start = files.iter().position(|(_, inode, _)| *inode == from.inode);
        let mut events = Vec::new();
        match start {
            Some(start) => {
                for (i, (_, _, path)) in files.iter().enumerate().skip(start) {
                    let offset = if i == start { from.offset } else { 0 };
                    events.extend(read_from(path, offset, namespace)?);
                }
            }
            // The file marked is gone (rotated away and deleted): what is left.
            None => events.extend(read_from(&self.path, 0, namespace)?),
        }
        Ok(events)
    }

    /// The audit log and its rotated files: (modified, inode, path).
    fn files(&self) -> Result<Vec<(std::time::SystemTime, u64, PathBuf)>, Error> {
        let what = || format!("listing the audit logs next to {}", self.path.display());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let stem = self
            .path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("audit");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::process(what(), e))? {
            let entry = entry.map_err(|e| Error::process(what(), e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let path = entry.path();
            let ours = path == self.path
                || (name.starts_with(&format!("{stem}-")) && name.ends_with(".log"));
            if !ours {
                continue;
            }
            if let Ok(meta) = entry.metadata() {
                let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                files.push((modified, meta.ino(), path));
            }
        }
        Ok(files)
    }
}

/// Write events in `namespace` in the file at `path` from `offset` on (complete lines only).
fn read_from(path: &Path, offset: u64, namespace: &str) -> Result<Vec<AuditEvent>, Error> {
    let what = || format!("reading {}", path.display());
    let mut file = std::fs::File::open(path).map_err(|e| Error::process(what(), e))?;
    // Truncated since: read it from its start.
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
