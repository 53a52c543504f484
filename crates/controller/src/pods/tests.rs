//! The pod writes against a fake API server: what each refusal becomes, and the Events.

use super::*;
use crate::RetryClass;
use crate::fixtures::{self, Exchange, pod_owned_by, status};
use build::{pod_spec, spec_hash};
use http::Method;
use kube::Client;
use kube::Resource;
use kube::runtime::events::Reporter;
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/ns/pods";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

fn redis() -> Redis {
    serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
        "metadata": {"name": "cache", "namespace": "ns", "uid": "r-uid"},
        "spec": {"replicas": 1},
    }))
    .expect("redis")
}

fn recorder(client: Client) -> Recorder {
    let reporter = Reporter {
        controller: FIELD_MANAGER.to_owned(),
        instance: None,
    };
    Recorder::new(client, reporter)
}

/// Runs `write` with a `PodWriter` for Redis `cache` of namespace `ns`, against a fake API
/// server playing `script`: what it returned, and the bodies of the requests it made.
async fn against<T, F>(script: Vec<Exchange>, write: F) -> (T, Vec<Value>)
where
    F: AsyncFnOnce(&PodWriter<'_>) -> T,
{
    let (client, server) = fixtures::client();
    let served = server.serve(script);
    let recorder = recorder(client.clone());
    let metrics = Metrics::default();
    let reference = redis().object_ref(&());
    let writer = PodWriter {
        pods: Api::namespaced(client, "ns"),
        recorder: &recorder,
        metrics: &metrics,
        reference: &reference,
    };
    let done = write(&writer).await;
    drop(writer);
    drop(recorder);
    (done, served.verify().await)
}

/// `create_pod` of `cache-0` against a fake API server playing `script`.
async fn create_against(script: Vec<Exchange>) -> (Result<Done, Refused>, Vec<Value>) {
    let redis = redis();
    let spec = pod_spec("cache", &redis.spec);
    let hash = spec_hash(&spec);
    against(script, async |w| {
        create_pod(w, &redis, 0, &spec, &hash, None).await
    })
    .await
}

/// `delete_pod` of `cache-0` (uid `p-uid`) against a fake API server playing `script`.
async fn delete_against(script: Vec<Exchange>) -> (Result<Deletion, Refused>, Vec<Value>) {
    against(script, async |w| {
        delete_pod(w, "cache-0", Some("p-uid"), "scale down", false).await
    })
    .await
}

fn create() -> Exchange {
    Exchange::expect(Method::POST, PODS).with_query("fieldManager=redis-operator")
}

fn list_by_name() -> Exchange {
    Exchange::expect(Method::GET, PODS).with_query("fieldSelector=metadata.name%3Dcache-0")
}

fn delete() -> Exchange {
    Exchange::expect(Method::DELETE, &format!("{PODS}/cache-0"))
}

fn event() -> Exchange {
    Exchange::expect(Method::POST, EVENTS).echo(201)
}

fn pod_list(pods: Vec<Pod>) -> Value {
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": pods})
}

fn already_exists() -> Value {
    status(409, "AlreadyExists", "pods \"cache-0\" already exists")
}

/// The Warning Event in `body`: (reason, action, note).
fn warning(body: &Value) -> (&str, &str, &str) {
    assert_eq!(body["type"], "Warning", "{body}");
    assert_eq!(body["related"]["name"], "cache-0", "{body}");
    (
        body["reason"].as_str().unwrap_or_default(),
        body["action"].as_str().unwrap_or_default(),
        body["note"].as_str().unwrap_or_default(),
    )
}

/// The Event bodies `announce_creates` writes for `created`.
async fn announced(created: &[&str]) -> Vec<Value> {
    let script = if created.is_empty() {
        Vec::new()
    } else {
        vec![event()]
    };
    let created: Vec<String> = created.iter().map(|n| (*n).to_owned()).collect();
    against(script, async |w| announce_creates(w, &created).await)
        .await
        .1
}

#[tokio::test]
async fn the_pods_a_pass_creates_are_announced_in_one_event_naming_them() {
    let bodies = announced(&["cache-0", "cache-1", "cache-2"]).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let body = &bodies[0];
    assert_eq!(body["type"], "Normal", "{body}");
    assert_eq!(body["reason"], "SuccessfulCreate", "{body}");
    assert_eq!(body["action"], "Create", "{body}");
    assert_eq!(body["note"], "Created pods cache-0, cache-1, cache-2");
    assert_eq!(body["regarding"]["name"], "cache", "{body}");
    assert!(body["related"].is_null(), "{body}");

    let bodies = announced(&["cache-1"]).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(bodies[0]["note"], "Created pod cache-1");
    assert_eq!(bodies[0]["related"]["name"], "cache-1");

    assert!(announced(&[]).await.is_empty(), "no pod, no Event");
}

/// The Event bodies `announce_deletes` writes for `deleted` (why, pod), expecting `events`.
async fn announced_deletes(deleted: &[(&'static str, &str)], events: usize) -> Vec<Value> {
    let deleted: Vec<(&'static str, String)> = deleted
        .iter()
        .map(|(why, name)| (*why, (*name).to_owned()))
        .collect();
    let script = (0..events).map(|_| event()).collect();
    against(script, async |w| announce_deletes(w, &deleted).await)
        .await
        .1
}

#[tokio::test]
async fn the_pods_a_pass_deletes_are_announced_in_one_event_naming_them_by_reason() {
    let gone = "the Redis is being deleted";
    let deleted = [(gone, "cache-0"), (gone, "cache-1"), (gone, "cache-2")];
    let bodies = announced_deletes(&deleted, 1).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let body = &bodies[0];
    assert_eq!(body["type"], "Normal", "{body}");
    assert_eq!(body["reason"], "SuccessfulDelete", "{body}");
    assert_eq!(body["action"], "Delete", "{body}");
    assert_eq!(
        body["note"],
        "Deleted pods cache-0, cache-1, cache-2: the Redis is being deleted"
    );
    assert_eq!(body["regarding"]["name"], "cache", "{body}");
    assert!(body["related"].is_null(), "{body}");

    let deleted = [
        ("scale down", "cache-4"),
        ("rolling update to the new spec", "cache-1"),
        ("scale down", "cache-3"),
    ];
    let bodies = announced_deletes(&deleted, 1).await;
    assert_eq!(
        bodies[0]["note"],
        "Deleted pods cache-4, cache-3: scale down; pod cache-1: rolling update to the new spec"
    );

    let bodies = announced_deletes(&[("scale down", "cache-2")], 1).await;
    assert_eq!(bodies[0]["note"], "Deleted pod cache-2: scale down");
    assert_eq!(
        bodies[0]["related"]["name"], "cache-2",
        "one pod is the related object"
    );

    assert!(
        announced_deletes(&[], 0).await.is_empty(),
        "no pod, no Event"
    );
}

#[tokio::test]
async fn a_create_refused_409_because_a_foreign_pod_holds_the_name_is_a_name_conflict() {
    let (done, bodies) = create_against(vec![
        create().respond(409, already_exists()),
        list_by_name().respond(200, pod_list(vec![pod_owned_by(Some("rs-uid"))])),
        event(),
    ])
    .await;
    let Err(Refused { failure, error }) = done else {
        panic!("not refused: {done:?}");
    };
    assert_eq!(failure.reason, "PodNameConflict");
    assert!(
        failure.message.contains("ReplicaSet web-7d9"),
        "{}",
        failure.message
    );
    assert!(matches!(&error, Error::PodNameConflict(name) if name == "cache-0"));
    assert_eq!(error.retry_class(), RetryClass::Transient, "backs off");
    assert_eq!(bodies[0]["metadata"]["name"], "cache-0");
    assert_eq!(
        warning(&bodies[2]),
        ("PodNameConflict", "Create", failure.message.as_str())
    );
}

#[tokio::test]
async fn a_create_refused_409_by_our_own_pod_means_the_cache_was_behind() {
    let mut ours = pod_owned_by(Some("r-uid"));
    ours.metadata.name = Some("cache-0".into());
    let (done, _) = create_against(vec![
        create().respond(409, already_exists()),
        list_by_name().respond(200, pod_list(vec![ours])),
    ])
    .await;
    assert!(matches!(done, Ok(Done::CacheBehind)), "{done:?}");
    // Gone by the time we looked: the same.
    let (done, _) = create_against(vec![
        create().respond(409, already_exists()),
        list_by_name().respond(200, pod_list(Vec::new())),
    ])
    .await;
    assert!(matches!(done, Ok(Done::CacheBehind)), "{done:?}");
}

#[tokio::test]
async fn a_delete_refused_409_means_a_newer_pod_holds_the_name() {
    let conflict = status(409, "Conflict", "Precondition failed: UID in precondition");
    let (done, bodies) = delete_against(vec![delete().respond(409, conflict)]).await;
    assert!(matches!(done, Ok(Deletion::Replaced)), "{done:?}");
    assert!(
        matches!(Deletion::Replaced.done(), Done::CacheBehind),
        "re-planned"
    );
    assert_eq!(bodies[0]["preconditions"]["uid"], "p-uid");
}

#[tokio::test]
async fn a_create_forbidden_403_is_a_failed_create_said_in_an_event_and_backed_off() {
    let quota = "pods \"cache-0\" is forbidden: exceeded quota: pods, requested: pods=1";
    let (done, bodies) = create_against(vec![
        create().respond(403, status(403, "Forbidden", quota)),
        event(),
    ])
    .await;
    let Err(Refused { failure, error }) = done else {
        panic!("not refused: {done:?}");
    };
    assert_eq!(
        (failure.reason, failure.message.as_str()),
        (
            "FailedCreate",
            format!("Error creating pod cache-0: {quota}").as_str()
        )
    );
    assert_eq!(error.retry_class(), RetryClass::Forbidden);
    assert_eq!(
        warning(&bodies[1]),
        ("FailedCreate", "Create", failure.message.as_str())
    );
}

#[tokio::test]
async fn a_create_forbidden_because_the_namespace_terminates_ends_the_pass_quietly() {
    let terminating = "pods \"cache-0\" is forbidden: unable to create new content in \
                       namespace ns because it is being terminated";
    let (done, _) = create_against(vec![
        create().respond(403, status(403, "Forbidden", terminating)),
    ])
    .await;
    assert!(matches!(done, Ok(Done::NamespaceTerminating)), "{done:?}");
}

#[tokio::test]
async fn a_delete_forbidden_403_is_a_failed_delete_said_in_an_event() {
    let rbac = "pods \"cache-0\" is forbidden: User \"system:serviceaccount:x:y\" cannot delete";
    let (done, bodies) = delete_against(vec![
        delete().respond(403, status(403, "Forbidden", rbac)),
        event(),
    ])
    .await;
    let Err(Refused { failure, error }) = done else {
        panic!("not refused: {done:?}");
    };
    assert_eq!(failure.reason, "FailedDelete");
    assert_eq!(error.retry_class(), RetryClass::Forbidden);
    assert_eq!(
        warning(&bodies[1]),
        (
            "FailedDelete",
            "Delete",
            format!("Error deleting pod cache-0: {rbac}").as_str()
        )
    );
}

#[test]
fn the_conflict_note_says_who_holds_the_name() {
    let note = conflict_note("cache-0", &pod_owned_by(None));
    assert!(
        note.contains("cache-0") && note.contains("no controller"),
        "{note}"
    );
    let note = conflict_note("cache-0", &pod_owned_by(Some("u1")));
    assert!(note.contains("ReplicaSet web-7d9"), "{note}");
}
