//! What a child's name held by another object says in the status (DESIGN §3i.2): the Redis is
//! not Ready, reason `NameConflict`, naming the object. Pure.

use super::NameConflict;
use crate::k8s::conditions::not_ready_for;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The Ready condition's reason while a child's name is held by another object.
pub const NAME_CONFLICT: &str = "NameConflict";

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
