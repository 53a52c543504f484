//! What TLS says in the status (DESIGN §3k), for a Redis with `spec.tls`: the `Certificate`
//! condition (True when the pods serve the Secret's certificate; False while one still has to
//! load it, or when the Secret cannot be used), and `Ready` False when no good Secret was ever
//! read (nothing can reach the pods). Pure.

use super::{SECRET_INVALID, Settled};
use crate::k8s::conditions::{READY, condition, set_not_ready};
use crate::step::{AUTH_RETRY, Outcome, Step};
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::Duration;

/// The condition's type.
pub const CERTIFICATE: &str = "Certificate";
/// Its reasons besides [`SECRET_INVALID`].
pub const CURRENT: &str = "Current";
pub const RELOADING: &str = "Reloading";

/// The status with the `Certificate` condition, and Ready False without a good Secret;
/// unchanged without `spec.tls` (`settled` None).
pub fn with_certificate(
    mut status: RedisStatus,
    settled: Option<&Settled>,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    let Some(settled) = settled.filter(|s| !s.secret.is_empty()) else {
        return status;
    };
    let (value, reason, message) = match (&settled.failure, settled.pending.as_slice()) {
        (Some(failure), _) => ("False", SECRET_INVALID, failure.clone()),
        (None, []) => (
            "True",
            CURRENT,
            format!(
                "the pods serve the certificate of Secret {}",
                settled.secret
            ),
        ),
        (None, pending) => (
            "False",
            RELOADING,
            format!(
                "pod(s) {} still serve an earlier certificate than Secret {}'s; reloading once the kubelet has written it into their volume",
                pending.join(", "),
                settled.secret
            ),
        ),
    };
    if settled.client.is_none()
        && let (Some(failure), Some(ready)) = (
            &settled.failure,
            status.conditions.iter_mut().find(|c| c.type_ == READY),
        )
    {
        set_not_ready(ready, SECRET_INVALID, failure.clone(), stored, now.clone());
    }
    let generation = status.observed_generation;
    status.conditions.push(condition(
        stored,
        CERTIFICATE,
        value,
        reason,
        message,
        generation,
        now,
    ));
    status
}

/// The TLS step's outcome (§3k): without a good Secret nothing can talk to the pods, so the
/// pass comes again soon, and sooner while a pod still has to load a renewed certificate.
impl Outcome for Option<Settled> {
    fn retry(&self, step: &Step<'_>) -> Option<Duration> {
        let client = self.as_ref().and_then(|c| c.client.as_ref());
        let blocked = (step.redis.spec.tls.is_some() && client.is_none()).then_some(AUTH_RETRY);
        let reload = self.as_ref().and_then(Settled::retry);
        blocked.into_iter().chain(reload).min()
    }

    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        with_certificate(status, self.as_ref(), stored, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fixtures::{epoch as now, ready_status as ready};

    fn find<'a>(status: &'a RedisStatus, type_: &str) -> (&'a str, &'a str) {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .expect("the condition");
        (c.status.as_str(), c.reason.as_str())
    }

    #[test]
    fn without_tls_nothing_is_said() {
        assert_eq!(with_certificate(ready(), None, None, now()), ready());
        let no_tls = Settled::default();
        assert_eq!(
            with_certificate(ready(), Some(&no_tls), None, now()),
            ready()
        );
    }

    #[test]
    fn a_bad_secret_with_a_good_one_before_it_leaves_ready_alone() {
        let settled = Settled {
            client: Some(crate::tls::tests::a_client()),
            failure: Some("Secret t: tls.key is not the key of the certificate in tls.crt; the last good certificate stays in use".into()),
            secret: "t".into(),
            ..Settled::default()
        };
        let status = with_certificate(ready(), Some(&settled), None, now());
        assert_eq!(find(&status, READY), ("True", "AllReplicasReady"));
        assert_eq!(find(&status, CERTIFICATE), ("False", SECRET_INVALID));
    }

    #[test]
    fn no_good_secret_at_all_makes_ready_false() {
        let settled = Settled {
            failure: Some("Secret t not found".into()),
            secret: "t".into(),
            ..Settled::default()
        };
        let status = with_certificate(ready(), Some(&settled), None, now());
        assert_eq!(find(&status, READY), ("False", SECRET_INVALID));
        assert_eq!(find(&status, CERTIFICATE), ("False", SECRET_INVALID));
    }

    #[test]
    fn a_pod_still_on_an_earlier_certificate_is_named_until_it_reloads() {
        let mut settled = Settled {
            client: Some(crate::tls::tests::a_client()),
            pending: vec!["r-1".into()],
            secret: "t".into(),
            ..Settled::default()
        };
        let status = with_certificate(ready(), Some(&settled), None, now());
        assert_eq!(find(&status, CERTIFICATE), ("False", RELOADING));
        settled.pending.clear();
        let status = with_certificate(ready(), Some(&settled), None, now());
        assert_eq!(find(&status, CERTIFICATE), ("True", CURRENT));
    }
}
