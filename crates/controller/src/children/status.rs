//! What a child's name held by another object says in the status (DESIGN §3i.2): the Redis is
//! not Ready, reason `NameConflict`, naming the object. Pure.

use super::NameConflict;
use crate::k8s::conditions::not_ready_for;
use crate::step::{Outcome, Step};
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use super::NAME_CONFLICT;

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
        let conflicts = self.as_ref().map(|a| a.conflicts.as_slice());
        with_conflicts(status, conflicts.unwrap_or_default(), stored, now)
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

    #[test]
    fn without_conflicts_the_status_is_unchanged() {
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(1_000).expect("time"));
        assert_eq!(with_conflicts(ready("True"), &[], None, now), ready("True"));
    }
}
