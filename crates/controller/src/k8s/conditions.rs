//! Status conditions (the standard `metav1.Condition` shape, DESIGN §1): the `Ready` type, and
//! `lastTransitionTime` kept from the stored status while a condition's status stays the same,
//! so a steady state makes no status write (DESIGN §3). Every condition the controller writes
//! takes its transition time from here.

use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The condition that says whether a Redis serves (`kubectl wait --for=condition=Ready`).
pub const READY: &str = "Ready";

/// Now, as a condition's `lastTransitionTime`.
pub fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// The stored condition of type `type_`, if any.
pub fn stored<'a>(stored: Option<&'a RedisStatus>, type_: &str) -> Option<&'a Condition> {
    stored.and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
}

/// The `lastTransitionTime` of a condition of type `type_` that now has status `value`: the
/// stored one while the stored condition has that status too, else `now`.
pub fn transition_time(
    stored_status: Option<&RedisStatus>,
    type_: &str,
    value: &str,
    now: Time,
) -> Time {
    stored(stored_status, type_)
        .filter(|c| c.status == value)
        .map_or(now, |c| c.last_transition_time.clone())
}

/// The condition `type_` with status `value`, its transition time kept from `stored_status`
/// (see [`transition_time`]).
pub fn condition(
    stored_status: Option<&RedisStatus>,
    type_: &str,
    value: &str,
    reason: &str,
    message: String,
    observed_generation: Option<i64>,
    now: Time,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: value.to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation,
        last_transition_time: transition_time(stored_status, type_, value, now),
    }
}

/// Turns `ready` False with `reason` and `message`; its transition time is the stored one while
/// the stored Ready was already False.
pub fn set_not_ready(
    ready: &mut Condition,
    reason: &str,
    message: String,
    stored_status: Option<&RedisStatus>,
    now: Time,
) {
    ready.status = "False".to_owned();
    ready.reason = reason.to_owned();
    ready.message = message;
    ready.last_transition_time = transition_time(stored_status, READY, "False", now);
}

/// `status` with its Ready condition False for `reason`, the `messages` joined by `; `;
/// unchanged when there are none. For conflicts a feature reports (names, claims) whatever the
/// pods say.
pub fn not_ready_for(
    mut status: RedisStatus,
    reason: &str,
    messages: Vec<String>,
    stored_status: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    if messages.is_empty() {
        return status;
    }
    if let Some(ready) = status.conditions.iter_mut().find(|c| c.type_ == READY) {
        set_not_ready(ready, reason, messages.join("; "), stored_status, now);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).expect("time"))
    }

    fn status_with(value: &str, since: Time) -> RedisStatus {
        RedisStatus {
            conditions: vec![condition(
                None,
                READY,
                value,
                "R",
                String::new(),
                None,
                since,
            )],
            ..RedisStatus::default()
        }
    }

    #[test]
    fn the_transition_time_is_kept_while_the_status_stays() {
        let stored = status_with("True", at(10));
        assert_eq!(
            transition_time(Some(&stored), READY, "True", at(20)),
            at(10)
        );
        assert_eq!(
            transition_time(Some(&stored), READY, "False", at(20)),
            at(20)
        );
        assert_eq!(transition_time(None, READY, "True", at(20)), at(20));
        assert_eq!(
            transition_time(Some(&stored), "Other", "True", at(20)),
            at(20)
        );
    }

    #[test]
    fn not_ready_keeps_the_time_it_first_became_false() {
        let mut ready = status_with("True", at(10)).conditions.remove(0);
        let was_false = status_with("False", at(5));
        set_not_ready(&mut ready, "X", "m".into(), Some(&was_false), at(20));
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "X")
        );
        assert_eq!(ready.last_transition_time, at(5));
        let was_true = status_with("True", at(5));
        set_not_ready(&mut ready, "X", "m".into(), Some(&was_true), at(20));
        assert_eq!(ready.last_transition_time, at(20));
    }
}
