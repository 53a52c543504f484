//! The pods' volumes and the `redis` container's mounts: `/data` and the TLS Secret.

use super::pieces::{tls_mount, tls_secret_volume};
use api::RedisSpec;
use k8s_openapi::api::core::v1::{
    EmptyDirVolumeSource, PersistentVolumeClaimVolumeSource, Volume, VolumeMount,
};

const DATA_VOLUME: &str = api::storage::DATA_VOLUME;
/// Where the `redis` container (and the restore step) has `/data`.
pub const DATA_PATH: &str = "/data";

/// The pod's volumes: `/data`, and the TLS Secret with `spec.tls`.
pub(super) fn pod_volumes(spec: &RedisSpec) -> Vec<Volume> {
    std::iter::once(data_volume(spec))
        .chain(spec.tls.as_ref().map(tls_volume))
        .collect()
}

/// The `redis` container's mounts: `/data`, and the TLS Secret with `spec.tls`.
pub(super) fn redis_mounts(spec: &RedisSpec) -> Vec<VolumeMount> {
    std::iter::once(VolumeMount {
        name: DATA_VOLUME.into(),
        mount_path: DATA_PATH.into(),
        ..VolumeMount::default()
    })
    .chain(spec.tls.as_ref().map(|_| tls_mount()))
    .collect()
}

/// The Secret of `spec.tls`, read-only to the pod's group (fsGroup) only. A Secret volume
/// follows the Secret: a renewed certificate reaches the running pods' files, and the
/// controller has redis-server load it (`tls`).
pub(super) fn tls_volume(tls: &api::TlsSpec) -> Volume {
    tls_secret_volume(tls, 0o440)
}

/// `/data`: an emptyDir, or with `spec.storage` the ordinal's claim. The claim's name is left
/// empty here, so the spec (and its hash) is the same for every ordinal; [`super::desired_pod`] names it.
pub(super) fn data_volume(spec: &RedisSpec) -> Volume {
    match &spec.storage {
        Some(_) => Volume {
            name: DATA_VOLUME.into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: String::new(),
                read_only: None,
            }),
            ..Volume::default()
        },
        None => Volume {
            name: DATA_VOLUME.into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
    }
}
