//! What runs `redis-backup` (DESIGN §3o), pure: the Job that streams one RDB into the bucket, the
//! Job that deletes a backup's object, and the init container that downloads one into a pod's
//! `/data` before redis-server starts. They run in the Redis's namespace, under restricted Pod
//! Security, with the object store's credentials read from the tenant's Secret by the kubelet
//! (`secretKeyRef`): the controller never reads them, and never connects to a tenant's endpoint.

use crate::pods::build::pieces::{
    plain_env, restricted_container_context, restricted_pod_context, secret_env, tls_mount,
    tls_secret_volume,
};
use api::backup::{
    ACCESS_KEY_ID_KEY, BACKUP_OF_LABEL, BINARY, REDIS_NAME_LABEL, RedisBackup, S3Destination,
    SECRET_ACCESS_KEY_KEY,
};
use api::backup_run::{arg, env as contract_env, flag, subcommand};
use api::pods::{LABEL_MANAGED_BY, MANAGED_BY};
use api::{Redis, RedisSpec};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, PodSpec, PodTemplateSpec, ResourceRequirements, SecurityContext, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use std::collections::BTreeMap;

/// The container's name in every Job, and the restore init container's.
pub const BACKUP_CONTAINER: &str = "backup";
pub const DELETE_CONTAINER: &str = "delete";
pub use api::backup::RESTORE_CONTAINER;
/// The `app.kubernetes.io/component` of the Jobs and their pods.
const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// uid and gid of the Jobs' pods (the operator image's nonroot user).
const JOB_UID: i64 = 65532;
/// A Job's pod is retried this often before the backup is Failed (a pod lost with its node, a
/// source pod replaced under it).
const BACKOFF_LIMIT: i32 = 2;
/// The longest a backup Job may run (six hours: a very large dataset over a slow link).
const ACTIVE_DEADLINE_SECONDS: i64 = 6 * 3600;
/// Longest Kubernetes label value, and so Job name (the `job-name` label of its pods).
const MAX_JOB_NAME: usize = 63;

/// Where one object goes or comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object<'a> {
    pub destination: &'a S3Destination,
    pub bucket: &'a str,
    pub key: &'a str,
}

/// The redis-server a backup reads: a pod of the Redis, by IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source<'a> {
    pub pod: &'a str,
    pub ip: &'a str,
}

/// What a Job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    Backup,
    Delete,
}

impl JobKind {
    fn suffix(self) -> &'static str {
        match self {
            JobKind::Backup => "backup",
            JobKind::Delete => "delete",
        }
    }
}

/// The name of `backup`'s Job of `kind`: `<backup>-<kind>`, or, when that is too long for a
/// label value, the name cut short with a piece of its uid so it stays unique.
pub fn job_name(backup: &RedisBackup, kind: JobKind) -> String {
    let name = backup.metadata.name.as_deref().unwrap_or_default();
    let suffix = kind.suffix();
    let whole = format!("{name}-{suffix}");
    if whole.len() <= MAX_JOB_NAME {
        return whole;
    }
    let uid: String = backup
        .metadata
        .uid
        .as_deref()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    let room = MAX_JOB_NAME - suffix.len() - uid.len() - 2;
    let cut = name[..room.min(name.len())].trim_end_matches(['-', '.']);
    format!("{cut}-{uid}-{suffix}")
}

/// The Job streaming `source`'s RDB into `object`. `None` when `backup` has no name, namespace
/// or uid yet.
pub fn backup_job(
    backup: &RedisBackup,
    redis: &Redis,
    source: Source<'_>,
    object: &Object<'_>,
    image: &str,
) -> Option<Job> {
    let redis_name = redis.metadata.name.as_deref()?;
    let namespace = backup.metadata.namespace.as_deref()?;
    let spec = &redis.spec;
    let mut args = vec![
        subcommand::BACKUP.to_owned(),
        arg(flag::HOST),
        source.ip.to_owned(),
        arg(flag::PORT),
        spec.port().to_string(),
    ];
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    if let Some(tls) = &spec.tls {
        args.extend(tls_args(redis_name, namespace, tls));
        // Read by the Job's uid, which is not the pods' fsGroup.
        volumes.push(tls_secret_volume(tls, 0o444));
        mounts.push(tls_mount());
    }
    let mut env = login_env(redis_name, spec);
    env.extend(object_env(object));
    let container = Container {
        name: BACKUP_CONTAINER.into(),
        args: Some(args),
        env: Some(env),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        ..runner(image)
    };
    let mut pod_labels = job_labels(redis_name);
    pod_labels.insert(BACKUP_OF_LABEL.to_owned(), redis_name.to_owned());
    job(
        backup,
        JobKind::Backup,
        redis_name,
        pod_labels,
        container,
        volumes,
    )
}

/// The Job deleting `object` (a backup's, when the backup is deleted).
pub fn delete_job(
    backup: &RedisBackup,
    redis_name: &str,
    object: &Object<'_>,
    image: &str,
) -> Option<Job> {
    let container = Container {
        name: DELETE_CONTAINER.into(),
        args: Some(vec![subcommand::DELETE.to_owned()]),
        env: Some(object_env(object)),
        ..runner(image)
    };
    job(
        backup,
        JobKind::Delete,
        redis_name,
        job_labels(redis_name),
        container,
        Vec::new(),
    )
}

/// The init container of a restored pod: `object` downloaded into `/data` (as the AOF's base
/// with `spec.storage.appendOnly`), checked against `expected_sha256` (else the checksum object
/// beside it), before redis-server starts. It
/// runs as the pod's user (the Redis pod's security context), so redis-server owns what it
/// writes.
pub fn restore_container(
    spec: &RedisSpec,
    object: &Object<'_>,
    expected_sha256: Option<&str>,
    image: &str,
) -> Container {
    let mut args = vec![
        subcommand::RESTORE.to_owned(),
        arg(flag::DATA_DIR),
        crate::pods::build::DATA_PATH.to_owned(),
    ];
    if let Some(sha256) = expected_sha256 {
        args.extend([arg(flag::EXPECTED_SHA256), sha256.to_owned()]);
    }
    if spec
        .storage
        .as_ref()
        .is_some_and(api::StorageSpec::append_only)
    {
        args.push(arg(flag::APPEND_ONLY));
        let settings = api::config::settings(spec);
        for (directive, flag) in [
            ("appendfilename", flag::APPENDFILENAME),
            ("appenddirname", flag::APPENDDIRNAME),
        ] {
            if let Some(setting) = settings.iter().find(|s| s.name == directive) {
                args.extend([arg(flag), setting.value.clone()]);
            }
        }
    }
    let mut container = Container {
        name: RESTORE_CONTAINER.into(),
        args: Some(args),
        env: Some(object_env(object)),
        volume_mounts: Some(vec![VolumeMount {
            name: api::storage::DATA_VOLUME.into(),
            mount_path: crate::pods::build::DATA_PATH.into(),
            ..VolumeMount::default()
        }]),
        ..runner(image)
    };
    // The pod's own user and group (not the image's nonroot user).
    if let Some(context) = container.security_context.as_mut() {
        context.run_as_user = None;
        context.run_as_group = None;
    }
    container
}

/// The container every Job and the restore step start from: the operator's image running
/// `redis-backup`, locked down as restricted Pod Security asks, its failure said in its
/// termination message (the log's tail when it could not write one).
fn runner(image: &str) -> Container {
    Container {
        image: Some(image.to_owned()),
        command: Some(vec![BINARY.to_owned()]),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        // The streaming holds at most two parts in memory (`redis-backup`'s peak stays under
        // 64 MiB whatever the dataset).
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_owned(), Quantity("50m".to_owned())),
                ("memory".to_owned(), Quantity("64Mi".to_owned())),
            ])),
            limits: Some(BTreeMap::from([(
                "memory".to_owned(),
                Quantity("128Mi".to_owned()),
            )])),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            run_as_user: Some(JOB_UID),
            run_as_group: Some(JOB_UID),
            ..restricted_container_context()
        }),
        ..Container::default()
    }
}

fn job_labels(redis_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (COMPONENT_LABEL.to_owned(), "backup".to_owned()),
        (REDIS_NAME_LABEL.to_owned(), redis_name.to_owned()),
    ])
}

fn job(
    backup: &RedisBackup,
    kind: JobKind,
    redis_name: &str,
    pod_labels: BTreeMap<String, String>,
    container: Container,
    volumes: Vec<Volume>,
) -> Option<Job> {
    backup.metadata.name.as_ref()?;
    let mut owner = backup.controller_owner_ref(&())?;
    owner.block_owner_deletion = Some(true);
    let mut labels = job_labels(redis_name);
    // The Job is the operator's; its pods are not (the pod cache reads Redis pods only).
    labels.insert(LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned());
    Some(Job {
        metadata: ObjectMeta {
            name: Some(job_name(backup, kind)),
            namespace: backup.metadata.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(BACKOFF_LIMIT),
            active_deadline_seconds: Some(ACTIVE_DEADLINE_SECONDS),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    restart_policy: Some("Never".to_owned()),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    security_context: Some(restricted_pod_context()),
                    volumes: (!volumes.is_empty()).then_some(volumes),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    })
}

/// The login of the Redis's pods: with ACL users the replication user (it may run PSYNC, which
/// is all a backup does), else the default user with `spec.auth`'s password, else none.
fn login_env(redis_name: &str, spec: &RedisSpec) -> Vec<EnvVar> {
    if spec.acl.is_some() {
        let secret = api::acl::secret_name(redis_name);
        return vec![
            plain_env(contract_env::REDIS_USERNAME, api::acl::REPLICATION_USER),
            secret_env(
                contract_env::REDIS_PASSWORD,
                &secret,
                api::acl::REPLICATION_PASSWORD_KEY,
            ),
        ];
    }
    match spec.auth_secret() {
        Some((secret, key)) => vec![secret_env(contract_env::REDIS_PASSWORD, secret, key)],
        None => Vec::new(),
    }
}

/// TLS to the source pod: the Secret's CA, the pods' own certificate as the client's (shown
/// when asked for), and the name the operator checks.
fn tls_args(redis_name: &str, namespace: &str, _tls: &api::TlsSpec) -> Vec<String> {
    vec![
        arg(flag::TLS_CA_FILE),
        api::tls::file(api::tls::CA_KEY),
        arg(flag::TLS_CERT_FILE),
        api::tls::file(api::tls::CERT_KEY),
        arg(flag::TLS_KEY_FILE),
        api::tls::file(api::tls::PRIVATE_KEY_KEY),
        arg(flag::TLS_SERVER_NAME),
        api::tls::server_name(redis_name, namespace),
    ]
}

/// The object store's settings and the object, as `redis-backup` reads them.
fn object_env(object: &Object<'_>) -> Vec<EnvVar> {
    let s3 = object.destination;
    let secret = &s3.credentials_secret_ref.name;
    vec![
        plain_env(contract_env::S3_ENDPOINT, &s3.endpoint),
        plain_env(contract_env::S3_REGION, s3.region()),
        plain_env(contract_env::S3_BUCKET, object.bucket),
        plain_env(contract_env::S3_KEY, object.key),
        plain_env(
            contract_env::S3_FORCE_PATH_STYLE,
            &s3.force_path_style().to_string(),
        ),
        secret_env(ACCESS_KEY_ID_KEY, secret, ACCESS_KEY_ID_KEY),
        secret_env(SECRET_ACCESS_KEY_KEY, secret, SECRET_ACCESS_KEY_KEY),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn backup(name: &str) -> RedisBackup {
        let mut b = RedisBackup::new(
            name,
            api::RedisBackupSpec {
                redis_name: "cache".to_owned(),
                destination: None,
            },
        );
        b.metadata.namespace = Some("shop".to_owned());
        b.metadata.uid = Some("0c1d2e3f-aaaa-bbbb".to_owned());
        b
    }

    fn redis(spec: serde_json::Value) -> Redis {
        let mut r = Redis::new("cache", serde_json::from_value(spec).expect("spec"));
        r.metadata.namespace = Some("shop".to_owned());
        r.metadata.uid = Some("uid-r".to_owned());
        r
    }

    fn destination() -> S3Destination {
        S3Destination {
            endpoint: "http://10.88.0.1:18333".to_owned(),
            bucket: "backups".to_owned(),
            credentials_secret_ref: api::backup::CredentialsSecretRef {
                name: "s3".to_owned(),
            },
            ..S3Destination::default()
        }
    }

    fn env_of(container: &Container) -> serde_json::Value {
        serde_json::to_value(container.env.as_ref().expect("env")).expect("json")
    }

    #[test]
    fn job_names_fit_a_label_value_and_stay_unique() {
        assert_eq!(
            job_name(&backup("nightly"), JobKind::Backup),
            "nightly-backup"
        );
        let long = "x".repeat(80);
        let name = job_name(&backup(&long), JobKind::Delete);
        assert!(name.len() <= 63, "{name}");
        assert!(name.ends_with("-0c1d2e3f-delete"), "{name}");
    }

    #[test]
    fn the_backup_job_reads_the_source_with_the_pods_login_and_writes_the_object() {
        let r = redis(
            json!({"mode": "Replication", "replicas": 3, "auth": {"secretRef": {"name": "pw"}}}),
        );
        let s3 = destination();
        let object = Object {
            destination: &s3,
            bucket: "backups",
            key: "shop/cache/nightly.rdb",
        };
        let source = Source {
            pod: "cache-1",
            ip: "10.88.1.7",
        };
        let job = backup_job(&backup("nightly"), &r, source, &object, "img:1").expect("job");
        assert_eq!(job.metadata.name.as_deref(), Some("nightly-backup"));
        let owner = &job.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("RedisBackup", Some(true))
        );
        let spec = job.spec.as_ref().expect("spec");
        let template = &spec.template;
        let pod = template.spec.as_ref().expect("pod spec");
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(
            template
                .metadata
                .as_ref()
                .and_then(|m| m.labels.as_ref())
                .and_then(|l| l.get(BACKUP_OF_LABEL))
                .map(String::as_str),
            Some("cache")
        );
        let container = &pod.containers[0];
        assert_eq!(container.command.as_deref(), Some(&[BINARY.to_owned()][..]));
        assert_eq!(
            container.args.as_deref().expect("args"),
            ["backup", "--host", "10.88.1.7", "--port", "6379"]
        );
        let env = env_of(container);
        assert!(env.as_array().expect("list").contains(&json!({"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "password", "optional": false}}})), "{env}");
        assert!(
            env.as_array()
                .expect("list")
                .contains(&json!({"name": "S3_KEY", "value": "shop/cache/nightly.rdb"})),
            "{env}"
        );
        assert!(env.as_array().expect("list").contains(&json!({"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": {"secretKeyRef": {"name": "s3", "key": "AWS_SECRET_ACCESS_KEY", "optional": false}}})), "{env}");
        // Restricted Pod Security.
        let context = container.security_context.as_ref().expect("context");
        assert_eq!(context.allow_privilege_escalation, Some(false));
        assert_eq!(context.run_as_non_root, Some(true));
        assert_eq!(
            pod.security_context
                .as_ref()
                .and_then(|c| c.seccomp_profile.as_ref())
                .map(|p| p.type_.as_str()),
            Some("RuntimeDefault")
        );
    }

    #[test]
    fn with_acl_users_the_backup_logs_in_as_the_replication_user_and_with_tls_shows_the_pods_certificate()
     {
        let r = redis(json!({"acl": {"users": []}, "tls": {"secretRef": {"name": "cache-tls"}}}));
        let s3 = destination();
        let object = Object {
            destination: &s3,
            bucket: "backups",
            key: "k",
        };
        let source = Source {
            pod: "cache-0",
            ip: "10.0.0.1",
        };
        let job = backup_job(&backup("b"), &r, source, &object, "img").expect("job");
        let pod = job.spec.expect("spec").template.spec.expect("pod");
        let container = &pod.containers[0];
        let env = env_of(container);
        assert!(
            env.as_array()
                .expect("list")
                .contains(&json!({"name": "REDIS_USERNAME", "value": "masteruser"})),
            "{env}"
        );
        let args = container.args.clone().unwrap_or_default();
        assert!(
            args.windows(2)
                .any(|w| w == ["--tls-server-name", "cache.shop.svc"]),
            "{args:?}"
        );
        assert_eq!(
            pod.volumes.expect("volumes")[0]
                .secret
                .as_ref()
                .and_then(|s| s.secret_name.as_deref()),
            Some("cache-tls")
        );
    }

    #[test]
    fn the_restore_step_writes_the_aof_base_when_the_redis_logs_every_write() {
        let s3 = destination();
        let object = Object {
            destination: &s3,
            bucket: "backups",
            key: "k",
        };
        let plain = restore_container(&redis(json!({})).spec, &object, None, "img");
        assert_eq!(
            plain.args.as_deref().expect("args"),
            ["restore", "--data-dir", "/data"]
        );
        assert_eq!(
            plain.security_context.as_ref().and_then(|c| c.run_as_user),
            None
        );
        let aof = restore_container(
            &redis(json!({"storage": {"size": "1Gi", "appendOnly": true}})).spec,
            &object,
            None,
            "img",
        );
        assert!(
            aof.args
                .expect("args")
                .contains(&"--append-only".to_owned())
        );
    }
}
