//! Events on a Redis (DESIGN §3: recorded on the Redis, as the tutorial's chapter on events
//! does). Each feature publishes its own Events through [`publish`] with the `Recorder` it is
//! given, never through the reconciler's context; the phrases naming pods are written here once.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};

/// Records an Event on the Redis `reference`; `related` (a pod) is its related object, which
/// also keeps Events about different pods apart (the recorder folds Events with the same key
/// into one series). An Event that cannot be written is logged: it must not fail the reconcile
/// that did the work.
pub async fn publish(
    recorder: &Recorder,
    reference: &ObjectReference,
    related: Option<ObjectReference>,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: action.to_owned(),
        secondary: related,
    };
    if let Err(e) = recorder.publish(&event, reference).await {
        tracing::warn!(error = %e, reason, "could not record an Event");
    }
}

/// A reference to pod `name` of `namespace`, as an Event's related object.
pub fn pod_ref(namespace: Option<&str>, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectReference::default()
    }
}

/// A Normal Event about the pods `names` of `reference`'s namespace (none: no Event). A single
/// pod is the Event's related object, so repeats about it fold into one series; several have
/// none, the Event is about the Redis.
pub async fn announce_pods(
    recorder: &Recorder,
    reference: &ObjectReference,
    names: &[&str],
    reason: &str,
    action: &str,
    note: String,
) {
    let related = match names {
        [] => return,
        [one] => Some(pod_ref(reference.namespace.as_deref(), one)),
        _ => None,
    };
    publish(
        recorder,
        reference,
        related,
        EventType::Normal,
        reason,
        action,
        note,
    )
    .await;
}

/// The pods as a note names them: `pod a` or `pods a, b`.
pub fn pods_phrase(names: &[&str]) -> String {
    match names {
        [one] => format!("pod {one}"),
        several => format!("pods {}", several.join(", ")),
    }
}
