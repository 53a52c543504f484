//! Backups to S3-compatible object storage and restores from them (DESIGN §3o): the
//! `RedisBackup` kind, the Redis's `spec.backup` (a schedule and where backups go) and
//! `spec.restore` (honoured once, at creation), their effective values and the names every part
//! of the operator agrees on (object keys, labels, the credentials Secret's keys, the
//! `redis-backup` binary's subcommands). Admission rules on the Redis's fields are in
//! `validation`'s `backup` module; a `RedisBackup`'s own are in its schema (CEL). The Jobs, the
//! schedule and the restore step are built in the controller's `backup` folder; the streaming
//! itself is the `backup` crate.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The keys of the credentials Secret (`credentialsSecretRef`), as the AWS tools name them.
pub const ACCESS_KEY_ID_KEY: &str = "AWS_ACCESS_KEY_ID";
pub const SECRET_ACCESS_KEY_KEY: &str = "AWS_SECRET_ACCESS_KEY";
/// The region when none is given.
pub const DEFAULT_REGION: &str = "us-east-1";
/// How many scheduled backups are kept when `keep` is not set.
pub const DEFAULT_KEEP: i32 = 7;
/// The most scheduled backups `keep` may ask for.
pub const MAX_KEEP: i32 = 1000;
/// The label on every `RedisBackup` the schedule creates, and on every backup Job: the Redis
/// it is of.
pub const REDIS_NAME_LABEL: &str = "myapp.tangx.in/redis-name";
/// The label on the `RedisBackup`s the schedule creates (`keep` prunes only these).
pub const SCHEDULED_LABEL: &str = "myapp.tangx.in/scheduled";
/// The label on the pods of backup Jobs: the Redis they read (its NetworkPolicy admits them).
pub const BACKUP_OF_LABEL: &str = "myapp.tangx.in/backup-of";
/// The `redis-backup` binary in the operator's image (the `backup` crate): the Jobs and the
/// restore step run it.
pub const BINARY: &str = "/usr/local/bin/redis-backup";
/// The name of the init container that restores a pod's data (`spec.restore`).
pub const RESTORE_CONTAINER: &str = "restore";
/// The finalizer on every `RedisBackup` while its object may still be in the bucket.
pub const FINALIZER: &str = "myapp.tangx.in/backup-object";
/// The condition on a Redis restored from a backup (`spec.restore`).
pub const RESTORED_CONDITION: &str = "Restored";

/// A backup of one Redis, taken once when created (as a Job runs once).
// Several printer columns share a `type_`, which clippy mistakes for repeated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[kube(
    group = "myapp.tangx.in",
    version = "v1",
    kind = "RedisBackup",
    plural = "redisbackups",
    singular = "redisbackup",
    shortname = "rdb",
    category = "all",
    namespaced,
    doc = "RedisBackup takes one backup of a Redis (an RDB, streamed from a replica or the standalone pod) into S3-compatible object storage.",
    status = "RedisBackupStatus",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(
        name = "Redis",
        type_ = "string",
        json_path = ".spec.redisName",
        description = "The Redis backed up"
    ),
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "Pending, Running, Succeeded or Failed"
    ),
    printcolumn(
        name = "Size",
        type_ = "integer",
        json_path = ".status.size",
        description = "Bytes of the RDB stored"
    ),
    printcolumn(
        name = "Location",
        type_ = "string",
        json_path = ".status.location",
        description = "Where the RDB is stored",
        priority = 1
    ),
    printcolumn(
        name = "Completed",
        type_ = "date",
        json_path = ".status.completionTime",
        description = "When the backup succeeded or failed"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[x_kube(validation = Rule::new("self == oldSelf").message("spec is immutable: a RedisBackup is taken once; create another one"))]
#[serde(rename_all = "camelCase")]
pub struct RedisBackupSpec {
    /// The Redis (in this namespace) to back up: from a linked replica in Replication mode, from its pod in Standalone mode.
    #[schemars(length(min = 1, max = 253))]
    pub redis_name: String,

    /// Where the backup goes. Defaults to the Redis's spec.backup.destination (copied into status.destination when the backup starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<BackupDestination>,
}

/// Where backups are stored.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupDestination {
    /// An S3-compatible bucket (AWS S3, MinIO, SeaweedFS, Ceph RGW...).
    pub s3: S3Destination,
}

/// A bucket of an S3-compatible object store.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct S3Destination {
    /// The service's URL, http:// or https:// (e.g. https://s3.eu-west-1.amazonaws.com or http://minio.storage:9000).
    #[schemars(length(min = 1, max = 2048))]
    pub endpoint: String,

    /// The bucket (3-63 lowercase letters, digits, '.' and '-'). It must exist.
    #[schemars(length(min = 3, max = 63))]
    pub bucket: String,

    /// Prepended to every object's key, e.g. "prod/" (objects are <prefix><namespace>/<redis>/<backup>.rdb).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub prefix: Option<String>,

    /// The region to sign requests for. Defaults to us-east-1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub region: Option<String>,

    /// The Secret (in the Redis's namespace) holding AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. Only the backup and restore pods read it, never the operator.
    pub credentials_secret_ref: CredentialsSecretRef,

    /// Address the bucket in the path (https://host/bucket/key) rather than the host name (https://bucket.host/key). Defaults to true, which every S3-compatible server supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_path_style: Option<bool>,
}

/// The Secret of the object store's credentials.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsSecretRef {
    /// Name of the Secret (a DNS-1123 subdomain: lowercase letters, digits, '-' and '.').
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// `spec.backup` of a Redis: where its backups go, and when they are taken.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// Where backups of this Redis go (scheduled ones, and RedisBackups that name no destination).
    pub destination: BackupDestination,

    /// When to take a backup, in cron syntax, UTC (e.g. "0 3 * * *", "*/15 * * * *", "@daily"). Not set: only the RedisBackups created by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub schedule: Option<String>,

    /// How many scheduled backups to keep (1-1000, default 7): once a scheduled backup succeeds, older scheduled RedisBackups beyond this count are deleted, and their objects with them. Backups created by hand are never deleted by the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_KEEP))]
    pub keep: Option<i32>,
}

/// `spec.restore` of a Redis: the data its pods start with. Honoured once, when the Redis is created; it cannot be changed afterwards.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreSpec {
    /// A Succeeded RedisBackup in this namespace to restore (its status says where and with which credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_name: Option<String>,

    /// Or an object to restore, s3://<bucket>/<key>, read with spec.backup.destination's endpoint and credentials (which must then be set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub location: Option<String>,
}

/// Where a backup stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum BackupPhase {
    /// Not started: waiting for its Redis, a source pod or the Job.
    #[default]
    Pending,
    /// The Job streams the RDB into the bucket.
    Running,
    /// The RDB is in the bucket (status.location).
    Succeeded,
    /// It failed (the Failed condition says why); nothing is left in the bucket.
    Failed,
}

impl BackupPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            BackupPhase::Pending => "Pending",
            BackupPhase::Running => "Running",
            BackupPhase::Succeeded => "Succeeded",
            BackupPhase::Failed => "Failed",
        }
    }

    /// Succeeded or Failed: nothing more happens.
    pub fn is_finished(self) -> bool {
        matches!(self, BackupPhase::Succeeded | BackupPhase::Failed)
    }
}

/// What became of a backup, written by the controller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedisBackupStatus {
    /// Pending, Running, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupPhase>,

    /// Where the RDB is: s3://<bucket>/<key>.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,

    /// The destination used (the spec's, or the Redis's at the time), which a restore reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<BackupDestination>,

    /// Bytes of the RDB stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,

    /// SHA-256 of the RDB (hex), also stored beside the object as `<key>.sha256`; a restore
    /// from this backup is checked against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,

    /// The pod the RDB was streamed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_pod: Option<String>,

    /// The replication offset the RDB holds the data of (the source's, at the snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_offset: Option<i64>,

    /// When the Job was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When it succeeded or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// `Complete` or `Failed` once finished, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

impl S3Destination {
    /// The effective region.
    pub fn region(&self) -> &str {
        self.region.as_deref().unwrap_or(DEFAULT_REGION)
    }

    /// Whether requests address the bucket in the path (the default).
    pub fn force_path_style(&self) -> bool {
        self.force_path_style.unwrap_or(true)
    }

    /// The key of a backup's object: `<prefix><namespace>/<redis>/<backup>.rdb`.
    pub fn object_key(&self, namespace: &str, redis: &str, backup: &str) -> String {
        format!(
            "{}{namespace}/{redis}/{backup}.rdb",
            self.prefix.as_deref().unwrap_or_default()
        )
    }

    /// `s3://<bucket>/<key>`.
    pub fn location(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

impl BackupSpec {
    /// The effective number of scheduled backups kept.
    pub fn keep(&self) -> i32 {
        self.keep.unwrap_or(DEFAULT_KEEP)
    }
}

/// `s3://<bucket>/<key>` split into the bucket and the key (`None`: not of that form).
pub fn parse_location(location: &str) -> Option<(&str, &str)> {
    let rest = location.strip_prefix("s3://")?;
    let (bucket, key) = rest.split_once('/')?;
    (!bucket.is_empty() && !key.is_empty()).then_some((bucket, key))
}

/// A cron schedule of `spec.backup.schedule`: five fields (minute hour day-of-month month
/// day-of-week) or a macro (`@hourly`, `@daily`...), as a Kubernetes CronJob takes it.
pub fn parse_schedule(schedule: &str) -> Result<croner::Cron, String> {
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .build()
        .parse(schedule.trim())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn locations_split_into_bucket_and_key() {
        assert_eq!(
            parse_location("s3://backups/ns/cache/b1.rdb"),
            Some(("backups", "ns/cache/b1.rdb"))
        );
        for bad in [
            "backups/x",
            "s3://backups",
            "s3:///x",
            "s3://b/",
            "http://b/k",
        ] {
            assert_eq!(parse_location(bad), None, "{bad}");
        }
    }

    #[test]
    fn object_keys_carry_the_prefix_namespace_redis_and_backup() {
        let mut s3 = S3Destination {
            bucket: "backups".to_owned(),
            ..S3Destination::default()
        };
        assert_eq!(s3.object_key("ns", "cache", "b1"), "ns/cache/b1.rdb");
        s3.prefix = Some("prod/".to_owned());
        assert_eq!(s3.object_key("ns", "cache", "b1"), "prod/ns/cache/b1.rdb");
        assert_eq!(
            s3.location(&s3.object_key("ns", "cache", "b1")),
            "s3://backups/prod/ns/cache/b1.rdb"
        );
    }

    #[test]
    fn schedules_take_five_fields_or_a_macro() {
        for good in [
            "0 3 * * *",
            "*/15 * * * *",
            "@daily",
            "@hourly",
            "* * * * *",
        ] {
            assert!(parse_schedule(good).is_ok(), "{good}");
        }
        for bad in ["", "0 0 3 * * *", "61 * * * *", "every minute"] {
            assert!(parse_schedule(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_backup_kind_is_named_and_its_spec_is_immutable() {
        let crd = serde_json::to_value(RedisBackup::crd()).expect("crd encodes");
        assert_eq!(crd["metadata"]["name"], "redisbackups.myapp.tangx.in");
        assert_eq!(
            crd["spec"]["names"]["shortNames"],
            serde_json::json!(["rdb"])
        );
        let version = &crd["spec"]["versions"][0];
        assert!(version["subresources"]["status"].is_object());
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(
            spec["x-kubernetes-validations"][0]["rule"], "self == oldSelf",
            "{spec}"
        );
        assert_eq!(spec["required"], serde_json::json!(["redisName"]));
    }
}
