//! Pieces of a pod spec that the Redis pods ([`super`]) and the backup Jobs and restore step
//! (`backup::job`) share: environment variables, the restricted Pod Security contexts, the TLS
//! Secret's volume and mount. One place, so the two kinds of pod cannot drift apart.

use k8s_openapi::api::core::v1::{
    Capabilities, EnvVar, EnvVarSource, PodSecurityContext, SeccompProfile, SecretKeySelector,
    SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};

/// An environment variable with a plain value.
pub(crate) fn plain_env(var: &str, value: &str) -> EnvVar {
    EnvVar {
        name: var.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

/// An environment variable read from a key of a Secret (which must exist).
pub(crate) fn secret_env(var: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: var.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_owned(),
                key: key.to_owned(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// A container locked down as restricted Pod Security asks: no privilege escalation, no
/// capabilities, a read-only root filesystem, never root. Its user is the pod's.
pub(crate) fn restricted_container_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        ..SecurityContext::default()
    }
}

/// A pod as restricted Pod Security asks: never root, the runtime's default seccomp profile.
pub(crate) fn restricted_pod_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            localhost_profile: None,
        }),
        ..PodSecurityContext::default()
    }
}

/// The Secret of `spec.tls` as the volume `api::tls::VOLUME`, its files with `mode`.
pub(crate) fn tls_secret_volume(tls: &api::TlsSpec, mode: i32) -> Volume {
    Volume {
        name: api::tls::VOLUME.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(tls.secret_ref.name.clone()),
            default_mode: Some(mode),
            optional: Some(false),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// The TLS Secret's volume, read-only at `api::tls::MOUNT_PATH`.
pub(crate) fn tls_mount() -> VolumeMount {
    VolumeMount {
        name: api::tls::VOLUME.into(),
        mount_path: api::tls::MOUNT_PATH.into(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}
