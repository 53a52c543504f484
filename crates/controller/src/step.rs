//! What every feature step of a Redis pass shares (DESIGN §3): the one context it reads,
//! [`Step`], and the three questions its outcome answers, [`Outcome`]: does it hold back the
//! creation of pods (and why), when must the next pass come, and what it says in the status.
//!
//! The pass itself, the fixed sequence of the steps, is `reconcile::apply`; each feature's entry
//! point takes a `&Step` and its own memory, and returns a value that is an [`Outcome`].

use crate::cached::CachedPod;
use crate::redis_server::{Login, TlsClient};
use api::{Redis, RedisStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::runtime::events::Recorder;
use std::sync::Arc;
use std::time::Duration;

/// A step waiting on the pods or a Secret (a refused password, users or settings not yet given,
/// no good TLS Secret yet): look again this often (a fixed Secret or pod also triggers).
pub const AUTH_RETRY: Duration = Duration::from_secs(10);

/// What every step of one pass over one Redis reads.
#[derive(Clone, Copy)]
pub struct Step<'a> {
    pub client: &'a Client,
    pub recorder: &'a Recorder,
    pub redis: &'a Redis,
    /// The Redis's pods, as the pod cache has them.
    pub pods: &'a [Arc<CachedPod>],
    /// The client of every connection to the pods with `spec.tls` (§3k), once the TLS step has
    /// one; `None` without `spec.tls`, or before.
    pub tls: Option<&'a TlsClient>,
    /// How the controller logs in to the pods (§3c, §3l), once the password or the users
    /// settled; `None` before, or while it cannot (the steps that talk to the pods wait).
    pub login: Option<Login<'a>>,
}

impl<'a> Step<'a> {
    pub fn new(
        client: &'a Client,
        recorder: &'a Recorder,
        redis: &'a Redis,
        pods: &'a [Arc<CachedPod>],
    ) -> Self {
        Step {
            client,
            recorder,
            redis,
            pods,
            tls: None,
            login: None,
        }
    }

    /// This step once the TLS step settled the client of the connections to the pods.
    pub fn with_tls(self, tls: Option<&'a TlsClient>) -> Self {
        Step { tls, ..self }
    }

    /// This step once the login step settled how the controller logs in to the pods.
    pub fn with_login(self, login: Option<Login<'a>>) -> Self {
        Step { login, ..self }
    }

    /// The Redis's uid (its memories are kept under it).
    pub fn uid(&self) -> &'a str {
        self.redis.metadata.uid.as_deref().unwrap_or_default()
    }

    /// Whether `spec.tls` is set but no client can be built yet: nothing can talk to the pods.
    pub fn tls_blocked(&self) -> bool {
        self.redis.spec.tls.is_some() && self.tls.is_none()
    }
}

/// Whether a step holds back the creation of pods in this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// Creates may go ahead.
    No,
    /// No pod is created; why, in a word (the condition that says it to the user is the
    /// step's own fold).
    All(&'static str),
    /// These ordinals are not created (say, their claim's name is held by someone else).
    Ordinals(Vec<u32>),
}

/// What a step's outcome tells the rest of the pass. Every method has the answer of a step
/// that does not care.
pub trait Outcome: Sync {
    /// Whether it holds back pod creation.
    fn hold(&self, _step: &Step<'_>) -> Hold {
        Hold::No
    }

    /// When the next pass must come at the latest, if sooner than the resync.
    fn retry(&self, _step: &Step<'_>) -> Option<Duration> {
        None
    }

    /// `status` with what this step says in it.
    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        _stored: Option<&RedisStatus>,
        _now: Time,
    ) -> RedisStatus {
        status
    }
}

/// Whether the outcomes let pod `ordinal` be created.
pub fn may_create(step: &Step<'_>, outcomes: &[&dyn Outcome], ordinal: u32) -> bool {
    outcomes.iter().all(|o| match o.hold(step) {
        Hold::No => true,
        Hold::All(_) => false,
        Hold::Ordinals(held) => !held.contains(&ordinal),
    })
}

/// The soonest retry any outcome asks for, or `otherwise`.
pub fn next_pass(step: &Step<'_>, outcomes: &[&dyn Outcome], otherwise: Duration) -> Duration {
    outcomes
        .iter()
        .filter_map(|o| o.retry(step))
        .fold(otherwise, Duration::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Says(Hold, Option<Duration>);

    impl Outcome for Says {
        fn hold(&self, _step: &Step<'_>) -> Hold {
            self.0.clone()
        }
        fn retry(&self, _step: &Step<'_>) -> Option<Duration> {
            self.1
        }
    }

    #[tokio::test]
    async fn creates_are_held_by_any_step_and_the_soonest_retry_wins() {
        let redis = Redis::new("r", Default::default());
        let (client, _server) = crate::fixtures::client();
        let recorder = Recorder::new(client.clone(), "test".into());
        let step = Step::new(&client, &recorder, &redis, &[]);
        let free = Says(Hold::No, None);
        let two = Says(Hold::Ordinals(vec![2]), Some(Duration::from_secs(10)));
        let poll = Says(Hold::No, Some(Duration::from_secs(1)));
        let outcomes: [&dyn Outcome; 3] = [&free, &two, &poll];
        assert!(may_create(&step, &outcomes, 1));
        assert!(!may_create(&step, &outcomes, 2));
        assert!(!may_create(&step, &[&Says(Hold::All("why"), None)], 1));
        let resync = Duration::from_secs(300);
        assert_eq!(next_pass(&step, &outcomes, resync), Duration::from_secs(1));
        assert_eq!(next_pass(&step, &[&free], resync), resync);
    }
}
