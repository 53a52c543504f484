//! What a replication pass says in Events (DESIGN §3b rule 6): a promotion, every repointing,
//! and Warnings, once each, for a failover waiting for a member it cannot read and for a primary
//! sharing its node (issue #41.2; the stored conditions say whether they were given).

use super::plan::Step;
use super::spread;
use super::status::{self, Outcome};
use crate::k8s::events::{pod_ref, publish};
use api::Redis;
use kube::runtime::events::{EventType, Recorder};
use kube::{Resource, ResourceExt};

/// Publishes the Events of one pass's `outcome`.
pub(super) async fn announce(
    recorder: &Recorder,
    redis: &Redis,
    namespace: &str,
    outcome: &Outcome,
) {
    let reference = redis.object_ref(&());
    if let Some((reason, note)) = &outcome.decision.event {
        tracing::info!(redis = %redis.name_any(), reason, note, "replication");
        // The new primary's pod is the related object: the recorder folds Events of one key
        // into a series that keeps its first note, so without it a later election of another
        // pod would read as a repeat of the first ("r-0 is the primary", x2).
        let related = outcome
            .decision
            .primary
            .as_deref()
            .map(|pod| pod_ref(Some(namespace), pod));
        publish(
            recorder,
            &reference,
            related,
            EventType::Normal,
            reason,
            "Promote",
            note.clone(),
        )
        .await;
    }
    // Warnings, once each: a failover waiting for a member it cannot read, a primary sharing
    // its node (the stored conditions say whether they were given).
    let stored = redis.status.as_ref();
    let warnings = [
        (
            "FailoverWaiting",
            "Failover",
            status::waiting_warning(&outcome.decision.health, stored),
        ),
        (
            "PrimarySharesNode",
            "Spread",
            spread::warning(&outcome.spread, stored),
        ),
    ];
    for (reason, action, note) in warnings {
        if let Some(note) = note {
            tracing::warn!(redis = %redis.name_any(), reason, note, "replication");
            publish(
                recorder,
                &reference,
                None,
                EventType::Warning,
                reason,
                action,
                note,
            )
            .await;
        }
    }
    // Every re-pointing is said too (none at rest: a replica already following is left alone).
    for step in &outcome.decision.steps {
        if let Step::Follow { pod, host } = step {
            let primary = outcome.decision.primary.as_deref().unwrap_or("?");
            publish(
                recorder,
                &reference,
                Some(pod_ref(Some(namespace), pod)),
                EventType::Normal,
                "ReplicaRepointed",
                "Repoint",
                format!("{pod} now replicates {primary} ({host})"),
            )
            .await;
        }
    }
}
