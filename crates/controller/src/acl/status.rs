//! What ACL users say in the status (DESIGN §3l), for a Redis with `spec.acl`: the
//! `UsersApplied` condition, True when every pod has the current users, False while some lack
//! them (the message names the pods, and what redis-server refused). Pure.

use super::{Settled, USERS_REFUSED};
use crate::k8s::conditions::condition;
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

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
