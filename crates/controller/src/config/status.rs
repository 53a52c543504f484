//! What the configuration says in the status (DESIGN §3m), for a Redis with settings: the
//! `Config` condition, True when every running pod has the current live settings, False while
//! some are still to get them (the message names them) or refuse a value (`ConfigRejected`,
//! with redis-server's message), and Ready False while a value is refused; while the pods do not
//! all run the current settings, `status.podConfigGenerations` says which generation's each
//! runs. Pure.

use super::{CONFIG_REJECTED, Settled};
use crate::k8s::conditions::{READY, condition, set_not_ready};
use crate::step::{AUTH_RETRY, Outcome, Step};
use api::{PodConfigGeneration, RedisStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::Duration;

/// The condition's type.
pub const CONFIG: &str = "Config";
/// Its reasons besides [`CONFIG_REJECTED`].
pub const CURRENT: &str = "Current";
pub const APPLYING: &str = "Applying";

/// The status with the `Config` condition (and Ready False for a refused value); unchanged
/// for a Redis without settings (`settled` None or not `configured`).
pub fn with_config(
    mut status: RedisStatus,
    settled: Option<&Settled>,
    stored: Option<&RedisStatus>,
    now: Time,
) -> RedisStatus {
    let Some(settled) = settled.filter(|s| s.configured) else {
        return status;
    };
    let (value, reason, message) = match (settled.rejected.as_slice(), settled.pending.as_slice()) {
        ([], []) => (
            "True",
            CURRENT,
            match settled.live.as_slice() {
                [] => "the pods run the configuration (no directive is set live)".to_owned(),
                live => format!(
                    "every pod runs the configuration, {} set live",
                    live.join(", ")
                ),
            },
        ),
        ([], pending) => (
            "False",
            APPLYING,
            format!(
                "pod(s) {} not yet given the current configuration (not reachable, or loading)",
                pending.join(", ")
            ),
        ),
        (rejected, _) => (
            "False",
            CONFIG_REJECTED,
            rejected
                .iter()
                .map(|(pod, why)| format!("pod {pod} refused {why}"))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    };
    if reason == CONFIG_REJECTED
        && let Some(ready) = status.conditions.iter_mut().find(|c| c.type_ == READY)
    {
        set_not_ready(ready, CONFIG_REJECTED, message.clone(), stored, now.clone());
    }
    if reason != CURRENT {
        status.pod_config_generations = settled
            .generations
            .iter()
            .map(|(name, generation)| PodConfigGeneration {
                name: name.clone(),
                generation: *generation,
            })
            .collect();
    }
    let generation = status.observed_generation;
    status.conditions.push(condition(
        stored, CONFIG, value, reason, message, generation, now,
    ));
    status
}

/// The configuration step's outcome (§3m): a pod not yet given the current settings is looked
/// at again soon.
impl Outcome for Option<Settled> {
    fn retry(&self, _step: &Step<'_>) -> Option<Duration> {
        self.as_ref()
            .is_some_and(|c| !c.pending.is_empty())
            .then_some(AUTH_RETRY)
    }

    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        with_config(status, self.as_ref(), stored, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fixtures::{epoch as now, ready_status as ready};

    fn find<'a>(status: &'a RedisStatus, type_: &str) -> (&'a str, &'a str, &'a str) {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .expect("the condition");
        (c.status.as_str(), c.reason.as_str(), c.message.as_str())
    }

    #[test]
    fn without_settings_nothing_is_said() {
        assert_eq!(with_config(ready(), None, None, now()), ready());
        let none = Settled::default();
        assert_eq!(with_config(ready(), Some(&none), None, now()), ready());
    }

    #[test]
    fn a_refused_value_makes_ready_false_with_redis_s_message_and_pending_pods_do_not() {
        let mut settled = Settled {
            configured: true,
            live: vec!["maxmemory-policy"],
            pending: vec!["r-1".into()],
            ..Settled::default()
        };
        let status = with_config(ready(), Some(&settled), None, now());
        assert_eq!(find(&status, READY).0, "True");
        assert_eq!(find(&status, CONFIG).1, APPLYING);
        settled.rejected = vec![("r-0".into(), "hz \"0\": ERR out of range".into())];
        settled.generations = vec![("r-0".into(), Some(3)), ("r-1".into(), None)];
        let status = with_config(ready(), Some(&settled), None, now());
        assert_eq!(
            status.pod_config_generations,
            [
                PodConfigGeneration {
                    name: "r-0".into(),
                    generation: Some(3)
                },
                PodConfigGeneration {
                    name: "r-1".into(),
                    generation: None
                },
            ],
            "while the pods differ, each pod's generation"
        );
        let (value, reason, message) = find(&status, READY);
        assert_eq!((value, reason), ("False", CONFIG_REJECTED));
        assert!(message.contains("pod r-0 refused hz"), "{message}");
        assert_eq!(find(&status, CONFIG).1, CONFIG_REJECTED);
        settled.rejected.clear();
        settled.pending.clear();
        let status = with_config(ready(), Some(&settled), None, now());
        assert_eq!(find(&status, CONFIG).0, "True");
        assert!(
            status.pod_config_generations.is_empty(),
            "all alike: not said"
        );
        assert_eq!(find(&status, READY).1, "AllReplicasReady");
    }
}
