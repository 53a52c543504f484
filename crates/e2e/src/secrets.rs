//! The Secrets a test writes: a Redis's password (what `spec.auth` and the ACL users read), a
//! TLS certificate, any data.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::{Context, Error, TestNamespace};

/// Creates Secret `name` holding `password` under the key `password` (what `spec.auth` reads).
pub async fn create_password_secret(
    ns: &TestNamespace,
    name: &str,
    password: &str,
) -> Result<(), Error> {
    let data = BTreeMap::from([(
        "password".to_owned(),
        k8s_openapi::ByteString(password.as_bytes().to_vec()),
    )]);
    put_secret(ns, name, None, data).await
}

/// Creates or replaces Secret `name` (of `type_`, default Opaque) with `data` (server-side
/// apply, forced: the test owns it).
pub async fn put_secret(
    ns: &TestNamespace,
    name: &str,
    type_: Option<&str>,
    data: BTreeMap<String, k8s_openapi::ByteString>,
) -> Result<(), Error> {
    let secrets: Api<Secret> = ns.api();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        type_: type_.map(str::to_owned),
        data: Some(data),
        ..Secret::default()
    };
    secrets
        .patch(
            name,
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&secret),
        )
        .await
        .context(format!("writing the Secret {name}"))?;
    Ok(())
}
