//! What auth says in the status (DESIGN §3c): a pod refusing the password, or a Secret without
//! it, makes `Ready` False with reason `AuthFailed`. Pure.

use crate::k8s::conditions::{READY, set_not_ready};
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Reason of the Warning Event and of the `Ready` condition when a pod refuses the password.
pub const AUTH_FAILED: &str = "AuthFailed";

/// The status with an auth failure in the `Ready` condition (False, `AuthFailed`); the transition
/// time is the stored one while Ready was already False.
pub fn with_failure(
    mut status: RedisStatus,
    failure: Option<&str>,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    let Some(message) = failure else {
        return status;
    };
    if let Some(ready) = status.conditions.iter_mut().find(|c| c.type_ == READY) {
        set_not_ready(ready, AUTH_FAILED, message.to_owned(), stored, now);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_auth_failure_makes_ready_false() {
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let status: RedisStatus = serde_json::from_value(json!({"conditions": [{
            "type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "3/3",
            "lastTransitionTime": "2024-01-01T00:00:00Z"
        }]}))
        .expect("status");
        assert_eq!(
            with_failure(status.clone(), None, None, now.clone()),
            status
        );
        let failed = with_failure(
            status.clone(),
            Some("pod x refuses"),
            Some(&status),
            now.clone(),
        );
        let ready = &failed.conditions[0];
        assert_eq!(
            (
                ready.status.as_str(),
                ready.reason.as_str(),
                ready.message.as_str()
            ),
            ("False", AUTH_FAILED, "pod x refuses")
        );
        assert_eq!(ready.last_transition_time, now, "it just became False");
        let again = with_failure(
            status,
            Some("pod x refuses"),
            Some(&failed),
            Time(k8s_openapi::jiff::Timestamp::now()),
        );
        assert_eq!(
            again.conditions[0].last_transition_time, now,
            "still False since then"
        );
    }
}
