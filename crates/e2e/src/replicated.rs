//! The usual Redis of the failover tests: Replication mode on the bed's Redis image, `n` pods,
//! `failoverAfter` given, with auth, TLS or ACL users when asked; created, then waited for until
//! it replicates.
//!
//! ```no_run
//! # async fn f(ns: &e2e::TestNamespace) -> Result<(), e2e::Error> {
//! use std::time::Duration;
//! let primary = e2e::replicated::Replicated::new("cache", 3, "5s")
//!     .auth("cache-auth")
//!     .create_replicating(ns, Duration::from_secs(120))
//!     .await?;
//! # Ok(()) }
//! ```

use std::time::Duration;

use api::{AclSpec, AuthSpec, Mode, Redis, RedisSpec, ReplicationSpec, SecretKeyRef};
use kube::Api;
use kube::api::PostParams;

use crate::node::REDIS_IMAGE;
use crate::{Context, Error, TestNamespace, conditions};

/// A Replication Redis to create.
pub struct Replicated {
    name: String,
    replicas: usize,
    spec: RedisSpec,
}

impl Replicated {
    /// `replicas` pods of the bed's Redis image in Replication mode, failing over after
    /// `failover_after` (e.g. `5s`).
    pub fn new(name: &str, replicas: usize, failover_after: impl Into<String>) -> Self {
        let spec = RedisSpec {
            replicas: Some(i32::try_from(replicas).unwrap_or(i32::MAX)),
            image: Some(REDIS_IMAGE.into()),
            mode: Some(Mode::Replication),
            replication: Some(ReplicationSpec {
                failover_after: Some(failover_after.into()),
                ..ReplicationSpec::default()
            }),
            ..RedisSpec::default()
        };
        Replicated {
            name: name.to_owned(),
            replicas,
            spec,
        }
    }

    /// `spec.auth`: the password under the key `password` of Secret `secret`.
    pub fn auth(mut self, secret: &str) -> Self {
        self.spec.auth = Some(AuthSpec {
            secret_ref: SecretKeyRef {
                name: secret.into(),
                key: None,
            },
        });
        self
    }

    /// `spec.tls` from the `kubernetes.io/tls` Secret `secret`.
    pub fn tls(mut self, secret: &str) -> Self {
        self.spec.tls = Some(api::TlsSpec {
            secret_ref: api::TlsSecretRef {
                name: secret.into(),
            },
            ..api::TlsSpec::default()
        });
        self
    }

    /// `spec.acl`.
    pub fn acl(mut self, acl: AclSpec) -> Self {
        self.spec.acl = Some(acl);
        self
    }

    /// Creates it.
    pub async fn create(&self, ns: &TestNamespace) -> Result<(), Error> {
        let redis: Api<Redis> = ns.api();
        redis
            .create(
                &PostParams::default(),
                &Redis::new(&self.name, self.spec.clone()),
            )
            .await
            .context(format!("creating Redis {}", self.name))?;
        Ok(())
    }

    /// Creates it and waits (at most `timeout`) until its pods replicate a primary
    /// ([`conditions::wait_replicating`]): the primary.
    pub async fn create_replicating(
        &self,
        ns: &TestNamespace,
        timeout: Duration,
    ) -> Result<String, Error> {
        self.create(ns).await?;
        conditions::wait_replicating(ns, &self.name, self.replicas, timeout, None).await
    }
}
