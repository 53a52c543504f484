//! Events (events.k8s.io/v1) about the Redis objects, folded into series as kube's `Recorder`
//! folds them, with a smaller memory of the series.
//!
//! kube's `Recorder` keeps, for six minutes after its last occurrence, a copy of every Event it
//! wrote (so that a repeat is written as a series patch): 1.4 KiB per entry in its table before
//! the strings, about 3 MiB at 1,000 Redis, each of which has had a `SuccessfulCreate`. This one
//! writes the same Events and series and keeps, per series, only what a repeat needs: the name
//! and namespace of the Event, its count and when it last happened.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};

/// How long after its last occurrence an Event may still be continued as a series (kube's).
const SERIES_TTL: SignedDuration = SignedDuration::from_mins(6);

/// Publishes Events; a repeat within [`SERIES_TTL`] continues the earlier Event's series.
pub struct Recorder {
    client: Client,
    controller: String,
    instance: String,
    /// By [`key`]: the series of the Events written lately.
    series: Mutex<HashMap<u64, Series>>,
}

/// What a repeat of an Event needs of the one written.
#[derive(Clone, Debug, PartialEq)]
struct Series {
    namespace: String,
    name: String,
    /// 1 until the first repeat.
    count: i32,
    last: Timestamp,
}

impl Recorder {
    /// Events reported as `reporter` (its instance defaults to the controller's name, as kube's).
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Recorder {
            client,
            instance: reporter
                .instance
                .unwrap_or_else(|| reporter.controller.clone()),
            controller: reporter.controller,
            series: Mutex::default(),
        }
    }

    /// Writes `event` about `regarding`: a new Event, or the next count of the series of the same
    /// Event (type, action, reason, regarding and related objects) written in the last six
    /// minutes. The note of a series stays its first one, as with kube's recorder.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        self.publish_at(event, regarding, Timestamp::now()).await
    }

    async fn publish_at(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> Result<(), kube::Error> {
        let key = key(event, regarding);
        let earlier = {
            let mut series = self.series();
            series.retain(|_, s| s.last + SERIES_TTL > now);
            series.get(&key).cloned()
        };
        let written = match earlier {
            Some(earlier) => {
                let count = earlier.count + 1;
                let events: Api<K8sEvent> =
                    Api::namespaced(self.client.clone(), &earlier.namespace);
                let patch = serde_json::json!({
                    "series": EventSeries { count, last_observed_time: MicroTime(now) },
                });
                events
                    .patch(
                        &earlier.name,
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
                Series {
                    count,
                    last: now,
                    ..earlier
                }
            }
            None => {
                let new = self.new_event(event, regarding, now);
                let namespace = new.metadata.namespace.clone().unwrap_or_default();
                let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
                events.create(&PostParams::default(), &new).await?;
                Series {
                    namespace,
                    name: new.metadata.name.unwrap_or_default(),
                    count: 1,
                    last: now,
                }
            }
        };
        self.series().insert(key, written);
        Ok(())
    }

    /// The Event as kube's recorder writes it; in namespace `default` when `regarding` has none.
    fn new_event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let name = regarding.name.as_deref().unwrap_or(&self.controller);
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_owned()),
                ),
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            ..K8sEvent::default()
        }
    }

    fn series(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Series>> {
        self.series.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What makes two Events one series (kube's `EventKey` without the reporter, which is the
/// recorder's own), hashed: 64 bits make a collision, which would only fold an Event into
/// another's series, vanishingly rare among the few thousand series of six minutes.
fn key(event: &Event, regarding: &ObjectReference) -> u64 {
    let mut hasher = DefaultHasher::new();
    matches!(event.type_, EventType::Warning).hash(&mut hasher);
    event.action.hash(&mut hasher);
    event.reason.hash(&mut hasher);
    hash_reference(Some(regarding), &mut hasher);
    hash_reference(event.secondary.as_ref(), &mut hasher);
    hasher.finish()
}

fn hash_reference(reference: Option<&ObjectReference>, hasher: &mut DefaultHasher) {
    reference.is_some().hash(hasher);
    if let Some(r) = reference {
        r.api_version.hash(hasher);
        r.kind.hash(hasher);
        r.name.hash(hasher);
        r.namespace.hash(hasher);
        r.uid.hash(hasher);
        r.resource_version.hash(hasher);
        r.field_path.hash(hasher);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, Exchange, status};
    use http::Method;
    use serde_json::{Value, json};

    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

    fn redis() -> ObjectReference {
        ObjectReference {
            api_version: Some("myapp.tangx.in/v1".into()),
            kind: Some("Redis".into()),
            name: Some("cache".into()),
            namespace: Some("ns".into()),
            uid: Some("r-uid".into()),
            ..ObjectReference::default()
        }
    }

    fn pod(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..ObjectReference::default()
        }
    }

    fn created(pod_name: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: "SuccessfulCreate".into(),
            note: Some(format!("Created pod {pod_name}")),
            action: "Create".into(),
            secondary: Some(pod(pod_name)),
        }
    }

    fn recorder(client: Client, instance: Option<&str>) -> Recorder {
        Recorder::new(
            client,
            Reporter {
                controller: "redis-operator".into(),
                instance: instance.map(str::to_owned),
            },
        )
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).expect("a timestamp")
    }

    /// Publishes `events` (with the time of each, in seconds) against a fake API server playing
    /// `script`: what each publish returned, and the bodies of the requests.
    async fn publish_all(
        script: Vec<Exchange>,
        events: Vec<(Event, i64)>,
    ) -> (Vec<bool>, Vec<Value>) {
        let (client, server) = fixtures::client();
        let served = server.serve(script);
        let recorder = recorder(client, Some("pod-a"));
        let mut outcomes = Vec::new();
        for (event, seconds) in &events {
            let outcome = recorder.publish_at(event, &redis(), at(*seconds)).await;
            outcomes.push(outcome.is_ok());
        }
        drop(recorder);
        (outcomes, served.verify().await)
    }

    fn name_at(seconds: i64) -> String {
        format!("cache.{:x}", at(seconds).as_nanosecond())
    }

    #[tokio::test]
    async fn an_event_is_written_as_kubes_recorder_writes_it() {
        let (ok, bodies) = publish_all(
            vec![Exchange::expect(Method::POST, EVENTS).echo(201)],
            vec![(created("cache-0"), 0)],
        )
        .await;
        assert_eq!(ok, vec![true]);
        let body = &bodies[0];
        assert_eq!(body["metadata"]["name"], json!(name_at(0)));
        assert_eq!(body["metadata"]["namespace"], "ns");
        assert_eq!(body["reason"], "SuccessfulCreate");
        assert_eq!(body["action"], "Create");
        assert_eq!(body["note"], "Created pod cache-0");
        assert_eq!(body["type"], "Normal");
        assert_eq!(body["reportingController"], "redis-operator");
        assert_eq!(body["reportingInstance"], "pod-a");
        assert_eq!(body["regarding"]["uid"], "r-uid");
        assert_eq!(body["related"]["name"], "cache-0");
        assert_eq!(body.get("series"), None);
    }

    #[tokio::test]
    async fn a_repeat_continues_the_series_and_another_pod_or_reason_starts_its_own() {
        let series = format!("{EVENTS}/{}", name_at(0));
        let (ok, bodies) = publish_all(
            vec![
                Exchange::expect(Method::POST, EVENTS).echo(201),
                Exchange::expect(Method::PATCH, &series),
                Exchange::expect(Method::PATCH, &series),
                Exchange::expect(Method::POST, EVENTS).echo(201),
                Exchange::expect(Method::POST, EVENTS).echo(201),
            ],
            vec![
                (created("cache-0"), 0),
                (created("cache-0"), 10),
                (created("cache-0"), 20),
                (created("cache-1"), 30),
                (
                    Event {
                        reason: "SuccessfulDelete".into(),
                        ..created("cache-0")
                    },
                    40,
                ),
            ],
        )
        .await;
        assert_eq!(ok, vec![true; 5]);
        let series_of = |body: &Value| body["series"]["count"].clone();
        assert_eq!(series_of(&bodies[1]), json!(2));
        assert_eq!(series_of(&bodies[2]), json!(3));
        // Only the series changes; the rest of the Event stays as first written.
        assert_eq!(
            bodies[2].as_object().map(|o| o.keys().collect::<Vec<_>>()),
            Some(vec![&"series".to_owned()])
        );
        assert!(bodies[2]["series"]["lastObservedTime"].is_string());
        assert_eq!(bodies[3]["related"]["name"], "cache-1");
        assert_eq!(bodies[4]["reason"], "SuccessfulDelete");
    }

    #[tokio::test]
    async fn after_six_quiet_minutes_a_repeat_is_a_new_event() {
        let (ok, _) = publish_all(
            vec![
                Exchange::expect(Method::POST, EVENTS).echo(201),
                Exchange::expect(Method::PATCH, &format!("{EVENTS}/{}", name_at(0))),
                Exchange::expect(Method::POST, EVENTS).echo(201),
            ],
            vec![
                (created("cache-0"), 0),
                (created("cache-0"), 300),
                // Six minutes after the last occurrence, not the first.
                (created("cache-0"), 300 + 360),
            ],
        )
        .await;
        assert_eq!(ok, vec![true; 3]);
    }

    #[tokio::test]
    async fn an_event_the_api_server_refused_starts_no_series() {
        let (ok, _) = publish_all(
            vec![
                Exchange::expect(Method::POST, EVENTS).respond(403, status(403, "Forbidden", "no")),
                Exchange::expect(Method::POST, EVENTS).echo(201),
            ],
            vec![(created("cache-0"), 0), (created("cache-0"), 10)],
        )
        .await;
        assert_eq!(ok, vec![false, true]);
    }

    #[tokio::test]
    async fn without_an_instance_the_controller_reports_and_old_series_are_forgotten() {
        let (client, server) = fixtures::client();
        let served = server.serve(vec![
            Exchange::expect(Method::POST, EVENTS).echo(201),
            Exchange::expect(Method::POST, EVENTS).echo(201),
        ]);
        let recorder = recorder(client, None);
        assert_eq!(recorder.instance, "redis-operator");
        let first = recorder
            .publish_at(&created("cache-0"), &redis(), at(0))
            .await;
        let other = recorder
            .publish_at(&created("cache-1"), &redis(), at(400))
            .await;
        assert!(first.is_ok() && other.is_ok());
        // The first series expired: the table keeps the live one only.
        assert_eq!(recorder.series().len(), 1);
        drop(recorder);
        let bodies = served.verify().await;
        assert_eq!(bodies[0]["reportingInstance"], "redis-operator");
    }
}
