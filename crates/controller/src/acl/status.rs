//! What ACL users say in the status (DESIGN §3l), for a Redis with `spec.acl`: the
//! `UsersApplied` condition, True when every pod has the current users, False while some lack
//! them (the message names the pods, and what redis-server refused). Pure.

use super::Access;
use super::{Settled, USERS_REFUSED};
use crate::k8s::conditions::condition;
use crate::step::{AUTH_RETRY, Hold, Outcome, Step};
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::Duration;

/// The condition's type.
pub const USERS_APPLIED: &str = "UsersApplied";
/// Its reasons besides [`USERS_REFUSED`].
pub const CURRENT: &str = "Current";
pub const APPLYING: &str = "Applying";

/// The status with the `UsersApplied` condition; unchanged without `spec.acl` (`settled`
/// None).
pub fn with_users(
    mut status: RedisStatus,
    settled: Option<&Settled>,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    let Some(settled) = settled else {
        return status;
    };
    let (value, reason, message) = match (&settled.failure, settled.pending.as_slice()) {
        (Some(failure), _) => ("False", USERS_REFUSED, failure.clone()),
        (None, []) => (
            "True",
            CURRENT,
            "every pod has the users of spec.acl".to_owned(),
        ),
        (None, pending) => (
            "False",
            APPLYING,
            format!(
                "pod(s) {} not yet given the users of spec.acl (not reachable yet)",
                pending.join(", ")
            ),
        ),
    };
    let generation = status.observed_generation;
    status.conditions.push(condition(
        stored,
        USERS_APPLIED,
        value,
        reason,
        message,
        generation,
        now,
    ));
    status
}

/// The login step's outcome (§3l, §3c). No pod of a Redis with ACL users is created without the
/// operator's own Secret (`<name>-acl`): the pod would read its users from a Secret of that name
/// someone else made. A refused password, or users not yet given to a pod, bring the next pass
/// soon. The users' condition here; the password's failure is [`AuthFailure`], folded
/// earlier.
impl Outcome for Access {
    fn hold(&self, step: &Step<'_>) -> Hold {
        let unknown = self.acl.as_ref().is_none_or(|a| a.password.is_none());
        if step.redis.spec.acl.is_some() && unknown {
            Hold::All("the operator's ACL Secret is not known")
        } else {
            Hold::No
        }
    }

    fn retry(&self, _step: &Step<'_>) -> Option<Duration> {
        let failed = self.auth.as_ref().is_some_and(|a| a.failure.is_some());
        let pending = self.acl.as_ref().is_some_and(|a| !a.pending.is_empty());
        (failed || pending).then_some(AUTH_RETRY)
    }

    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        with_users(status, self.acl.as_ref(), stored, now)
    }
}

/// The password's failure (`AuthFailed`) in the status, if any: the login step's other fold,
/// before the TLS step's.
pub struct AuthFailure<'a>(pub &'a Access);

impl Outcome for AuthFailure<'_> {
    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        let failure = self.0.auth.as_ref().and_then(|a| a.failure.as_deref());
        crate::auth::status::with_failure(status, failure, stored, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    fn users_applied(status: &RedisStatus) -> (&str, &str, &str) {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == USERS_APPLIED)
            .expect("the condition");
        (&c.status, &c.reason, &c.message)
    }

    #[test]
    fn the_condition_names_the_pods_without_the_users_and_why() {
        let base = RedisStatus::default();
        assert_eq!(with_users(base.clone(), None, None, now()), base);
        let current = with_users(base.clone(), Some(&Settled::default()), None, now());
        assert_eq!(users_applied(&current).0, "True");
        let pending = Settled {
            pending: vec!["r-1".into()],
            ..Settled::default()
        };
        let applying = with_users(base.clone(), Some(&pending), None, now());
        assert_eq!(users_applied(&applying).1, APPLYING);
        assert!(users_applied(&applying).2.contains("r-1"));
        let refused = Settled {
            pending: vec!["r-1".into()],
            failure: Some("pod r-1: user x: ERR unknown command".into()),
            ..Settled::default()
        };
        let refused = with_users(base, Some(&refused), None, now());
        assert_eq!(users_applied(&refused).1, USERS_REFUSED);
        assert!(users_applied(&refused).2.contains("unknown command"));
    }
}
