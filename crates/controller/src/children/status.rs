//! What a child's name held by another object says in the status (DESIGN §3i.2): the Redis is
//! not Ready, reason `NameConflict`, naming the object. Pure.

use super::NameConflict;
use crate::k8s::conditions::not_ready_for;
use crate::step::{Outcome, Step};
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use super::NAME_CONFLICT;

/// The Ready condition's reason while the API server refuses a child's write for good (403:
/// the controller's rights; 422: a policy or an admission webhook of the cluster; issue #40.8):
/// a retry alone will not fix it, so the user is told, not only the controller's log.
pub const CHILD_REFUSED: &str = "ChildRefused";
/// Most bytes of the API server's message kept in the condition.
const MAX_REFUSAL_BYTES: usize = 512;

/// What the Ready condition says of `error`, if it is a child write the API server refused for
/// a reason a retry will not change (a 4xx but a conflict, a rate limit or a not-found).
pub fn refusal(error: &crate::Error) -> Option<String> {
    let crate::Error::Child {
        kind,
        name,
        source: kube::Error::Api(status),
    } = error
    else {
        return None;
    };
    if !(400..500).contains(&status.code) || matches!(status.code, 404 | 409 | 429) {
        return None;
    }
    let mut message = status.message.as_str();
    let cut = message.len() > MAX_REFUSAL_BYTES;
    if cut {
        let mut end = MAX_REFUSAL_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message = &message[..end];
    }
    Some(format!(
        "the API server refused to write {kind} {name} ({} {}): {message}{}",
        status.code,
        status.reason,
        if cut { "…" } else { "" }
    ))
}

/// The status with Ready False while any name is held (each one named in the message);
/// unchanged without conflicts.
pub fn with_conflicts(
    status: api::RedisStatus,
    conflicts: &[NameConflict],
    stored: Option<&api::RedisStatus>,
    now: Time,
) -> api::RedisStatus {
    let messages = conflicts.iter().map(NameConflict::message).collect();
    not_ready_for(status, NAME_CONFLICT, messages, stored, now)
}

/// The status after the children step: Ready False while a name is held ([`with_conflicts`]) or
/// a write was refused for good ([`refusal`]).
pub fn with_applied(
    status: RedisStatus,
    applied: &Result<super::Applied, crate::Error>,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    match applied {
        Ok(applied) => with_conflicts(status, &applied.conflicts, stored, now),
        Err(error) => {
            let refused = refusal(error).into_iter().collect();
            not_ready_for(status, CHILD_REFUSED, refused, stored, now)
        }
    }
}

/// The children step's outcome: it holds nothing back and asks no sooner pass; a held name
/// makes the Redis not Ready.
impl Outcome for Result<super::Applied, crate::Error> {
    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        with_applied(status, self, stored, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::conditions::READY;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    fn ready(status: &str) -> api::RedisStatus {
        api::RedisStatus {
            conditions: vec![Condition {
                type_: READY.into(),
                status: status.into(),
                reason: "AllReplicasReady".into(),
                message: String::new(),
                observed_generation: None,
                last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            }],
            ..api::RedisStatus::default()
        }
    }

    #[test]
    fn a_held_name_makes_a_ready_redis_not_ready_and_names_the_holder() {
        let conflict = NameConflict {
            kind: "Service".into(),
            name: "web".into(),
            holder: "no controller".into(),
        };
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(1_000).expect("time"));
        let status = with_conflicts(ready("True"), &[conflict], None, now.clone());
        let ready = &status.conditions[0];
        assert_eq!(ready.status, "False");
        assert_eq!(ready.reason, NAME_CONFLICT);
        assert!(ready.message.contains("Service web"), "{}", ready.message);
        assert!(ready.message.contains("no controller"), "{}", ready.message);
        assert_eq!(ready.last_transition_time, now);
    }

    fn api_error(code: u16, reason: &str, message: &str) -> crate::Error {
        let mut status = kube::core::Status::failure(message, reason).with_code(code);
        status.message = message.to_owned();
        crate::Error::Child {
            kind: "NetworkPolicy".into(),
            name: "cache".into(),
            source: kube::Error::Api(status.boxed()),
        }
    }

    #[test]
    fn a_child_write_refused_for_good_makes_the_redis_not_ready_and_says_why() {
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(1_000).expect("time"));
        let long = format!(
            "admission webhook \"deny.example\" denied the request: {}",
            "é".repeat(400)
        );
        let refused = api_error(422, "Invalid", &long);
        let status = with_applied(ready("True"), &Err(refused), None, now.clone());
        let condition = &status.conditions[0];
        assert_eq!(condition.status, "False");
        assert_eq!(condition.reason, CHILD_REFUSED);
        assert!(
            condition.message.starts_with(
                "the API server refused to write NetworkPolicy cache (422 Invalid): admission webhook"
            ),
            "{}",
            condition.message
        );
        assert!(condition.message.len() < 700, "{}", condition.message.len());
        let forbidden = api_error(403, "Forbidden", "networkpolicies is forbidden");
        let status = with_applied(ready("True"), &Err(forbidden), None, now.clone());
        assert_eq!(status.conditions[0].reason, CHILD_REFUSED);
        // A conflict, a rate limit, a server error: retried, not said.
        for (code, reason) in [
            (409, "Conflict"),
            (429, "TooManyRequests"),
            (500, "InternalError"),
        ] {
            let status = with_applied(
                ready("True"),
                &Err(api_error(code, reason, "again")),
                None,
                now.clone(),
            );
            assert_eq!(status, ready("True"), "{code}");
        }
    }

    #[test]
    fn without_conflicts_the_status_is_unchanged() {
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(1_000).expect("time"));
        assert_eq!(with_conflicts(ready("True"), &[], None, now), ready("True"));
    }
}
