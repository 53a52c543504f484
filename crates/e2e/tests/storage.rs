//! Persistence (`spec.storage`) on the real node, with the bed's default StorageClass: data
//! outlives its pod, scaled-down ordinals keep their claims (Retain) until they come back, and
//! deleting the Redis keeps or deletes the claims as `retention.whenDeleted` says.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api::Redis;
use e2e::flight::FlightRecorder;
use e2e::history::{History, Target, Writer, lost_on_target};
use e2e::node::{self, REDIS_IMAGE};
use e2e::{Context, Error, TestNamespace, seen, wait_for};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(120);
const PORT: u16 = 6379;

async fn create(
    ns: &TestNamespace,
    name: &str,
    replicas: i32,
    storage: serde_json::Value,
) -> Result<(), Error> {
    let redis: Redis = serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1",
        "kind": "Redis",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "image": REDIS_IMAGE, "port": PORT, "storage": storage},
    }))
    .expect("a valid Redis");
    ns.api::<Redis>()
        .create(&PostParams::default(), &redis)
        .await
        .context(format!("creating {name}"))?;
    Ok(())
}

/// Waits until the Redis has exactly `replicas` Ready pods, each on its claim; returns them by ordinal.
async fn serving(ns: &TestNamespace, name: &str, replicas: usize) -> Result<Vec<Pod>, Error> {
    wait_for(
        &format!("{name}: {replicas} Ready pods on their claims"),
        CONVERGE,
        || async {
            let mut pods = pods::of_redis(&ns.api(), name).await?;
            pods.sort_by_key(|p| p.name_any());
            let on_claims = pods.iter().all(|p| {
                let claim = p
                    .spec
                    .as_ref()
                    .and_then(|s| s.volumes.as_ref())
                    .and_then(|v| v.iter().find(|v| v.name == "data"))
                    .and_then(|v| v.persistent_volume_claim.as_ref())
                    .map(|c| c.claim_name.clone());
                claim == Some(format!("data-{}", p.name_any()))
            });
            if pods.len() == replicas
                && on_claims
                && pods
                    .iter()
                    .all(|p| e2e::pods::is_ready(p) && p.metadata.deletion_timestamp.is_none())
            {
                Ok(pods)
            } else {
                Err(pods::describe_all(&pods))
            }
        },
    )
    .await
}

/// `redis-cli` against the pod's IP. A pod just made Ready by its own probe can take the host a
/// few seconds to reach (a pod IP handed out again, the host's neighbour entry still the old
/// pod's): a call that gets no answer at all is tried again, any answer is returned.
async fn cli(pod: &Pod, args: &[&str]) -> Result<String, Error> {
    let ip = pods::ip(pod).unwrap_or_default().to_owned();
    let what = format!("talking to {}", pod.name_any());
    let answered = wait_for(&what, CONVERGE, || async {
        match node::redis_cli(&ip, PORT, args).await {
            Err(reason) if reason.to_string().ends_with("no answer") => Err(reason.to_string()),
            answered => Ok(answered),
        }
    })
    .await?;
    answered.map_err(|reason| Error::process(what, reason))
}

async fn claim_names(ns: &TestNamespace, name: &str) -> Result<Vec<String>, Error> {
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let mut names: Vec<String> = claims
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={name}")))
        .await
        .context("listing claims")?
        .items
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    Ok(names)
}

async fn scale(ns: &TestNamespace, name: &str, replicas: i32) -> Result<(), Error> {
    ns.api::<Redis>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .context(format!("scaling {name} to {replicas}"))?;
    Ok(())
}

async fn gone(ns: &TestNamespace, name: &str) -> Result<(), Error> {
    e2e::pods::wait_gone(&ns.api::<Redis>(), name, CONVERGE).await
}

/// Keys written with appendonly survive the pod: the new pod of the ordinal mounts the same
/// claim and loads them, without a save.
#[tokio::test]
async fn data_outlives_its_pod() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("storage-pod").await?;
    create(&ns, "kept", 1, json!({"size": "64Mi", "appendOnly": true})).await?;
    let pods = serving(&ns, "kept", 1).await?;
    assert_eq!(
        cli(&pods[0], &["CONFIG", "GET", "appendonly"]).await?,
        "appendonly\nyes"
    );
    assert_eq!(cli(&pods[0], &["SET", "k", "v"]).await?, "OK");
    let first_uid = pods[0].uid();
    ns.api::<Pod>()
        .delete("kept-0", &Default::default())
        .await
        .context("deleting kept-0")?;
    let pods = wait_for("kept-0 replaced", CONVERGE, || async {
        let pods = serving(&ns, "kept", 1).await.map_err(|e| e.to_string())?;
        if pods[0].uid() != first_uid {
            Ok(pods)
        } else {
            Err("the old pod".to_owned())
        }
    })
    .await?;
    assert_eq!(cli(&pods[0], &["GET", "k"]).await?, "v");
    Ok(())
}

/// Retain on scale-down keeps the claims of ordinals 1 and 2, and scaling up finds their data;
/// Delete on deletion then takes every claim with the Redis.
#[tokio::test]
async fn scaled_down_ordinals_keep_their_data_and_deletion_takes_the_claims() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("storage-scale").await?;
    create(
        &ns,
        "scaled",
        3,
        json!({"size": "64Mi", "appendOnly": true, "retention": {"whenDeleted": "Delete"}}),
    )
    .await?;
    let pods = serving(&ns, "scaled", 3).await?;
    for pod in &pods {
        assert_eq!(cli(pod, &["SET", "owner", &pod.name_any()]).await?, "OK");
    }
    scale(&ns, "scaled", 1).await?;
    serving(&ns, "scaled", 1).await?;
    assert_eq!(
        claim_names(&ns, "scaled").await?,
        ["data-scaled-0", "data-scaled-1", "data-scaled-2"],
        "whenScaled Retain keeps the claims"
    );
    scale(&ns, "scaled", 3).await?;
    let pods = serving(&ns, "scaled", 3).await?;
    for pod in &pods {
        assert_eq!(cli(pod, &["GET", "owner"]).await?, pod.name_any());
    }

    ns.api::<Redis>()
        .delete("scaled", &Default::default())
        .await
        .context("deleting scaled")?;
    gone(&ns, "scaled").await?;
    wait_for("the claims deleted with the Redis", CONVERGE, || async {
        let left = claim_names(&ns, "scaled")
            .await
            .map_err(|e| e.to_string())?;
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await
}

/// Retain on deletion keeps the claims, and a Redis created again with the same name serves the
/// old data; whenScaled Delete removes a scaled-down ordinal's claim once its pod is gone.
#[tokio::test]
async fn retained_claims_bring_the_data_back_to_a_new_redis() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("storage-retain").await?;
    let storage =
        json!({"size": "64Mi", "appendOnly": true, "retention": {"whenScaled": "Delete"}});
    create(&ns, "again", 2, storage.clone()).await?;
    let pods = serving(&ns, "again", 2).await?;
    assert_eq!(cli(&pods[0], &["SET", "k", "from-the-first"]).await?, "OK");
    scale(&ns, "again", 1).await?;
    serving(&ns, "again", 1).await?;
    wait_for(
        "data-again-1 deleted (whenScaled Delete)",
        CONVERGE,
        || async {
            let left = claim_names(&ns, "again").await.map_err(|e| e.to_string())?;
            if left == ["data-again-0"] {
                Ok(())
            } else {
                Err(format!("{left:?}"))
            }
        },
    )
    .await?;

    ns.api::<Redis>()
        .delete("again", &Default::default())
        .await
        .context("deleting again")?;
    gone(&ns, "again").await?;
    assert_eq!(
        claim_names(&ns, "again").await?,
        ["data-again-0"],
        "whenDeleted Retain"
    );
    create(&ns, "again", 1, storage).await?;
    let pods = serving(&ns, "again", 1).await?;
    assert_eq!(cli(&pods[0], &["GET", "k"]).await?, "from-the-first");
    Ok(())
}

/// A larger size on a class that cannot expand is a condition, not a silent no-op; a smaller
/// size is refused at admission.
#[tokio::test]
async fn sizes_grow_only_where_the_class_allows() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("storage-size").await?;
    create(&ns, "sized", 1, json!({"size": "64Mi"})).await?;
    serving(&ns, "sized", 1).await?;
    let redis: Api<Redis> = ns.api();
    let shrink = redis
        .patch(
            "sized",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"size": "32Mi"}}})),
        )
        .await;
    match shrink {
        Err(kube::Error::Api(status)) => assert!(
            status.message.contains("spec.storage.size")
                && status.message.contains("cannot shrink"),
            "{status:?}"
        ),
        other => panic!("shrinking should be refused: {other:?}"),
    }
    redis
        .patch(
            "sized",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"size": "128Mi"}}})),
        )
        .await
        .context("growing sized")?;
    wait_for(
        "StorageResized=False naming the claim",
        CONVERGE,
        || async {
            let status = redis
                .get("sized")
                .await
                .map_err(seen)?
                .status
                .unwrap_or_default();
            let condition = status
                .conditions
                .iter()
                .find(|c| c.type_ == "StorageResized");
            match condition {
                Some(c)
                    if c.status == "False"
                        && c.reason == "ExpansionNotAllowed"
                        && c.message.contains("data-sized-0")
                        && c.message.contains("bed-local") =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await
}

/// DESIGN §3d.5: a Replication Redis on volumes whose primary moved off ordinal 0 (a failover),
/// then every pod deleted at once, with writers doing `SET` + `WAIT 1` throughout. The pods come
/// back from their volumes, a pod holding the data is elected (the last primary, not ordinal 0
/// for being first), and every acknowledged write is on it. A flight recorder keeps what a
/// post-mortem needs (every pod's log and state, the controller's decisions, the history) and
/// prints it when the test fails.
#[tokio::test]
async fn a_full_restart_after_a_failover_loses_no_acknowledged_write() -> Result<(), Error> {
    const NAME: &str = "restarted";
    const PASSWORD: &str = "full-restart-password";
    let (_cluster, ns, _operator) = node::setup("storage-restart").await?;
    secrets::create_password_secret(&ns, "restart-auth", PASSWORD).await?;
    let redis: Redis = serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1",
        "kind": "Redis",
        "metadata": {"name": NAME},
        "spec": {
            "replicas": 3, "image": REDIS_IMAGE, "port": PORT, "mode": "Replication",
            "replication": {"failoverAfter": "3s"},
            "auth": {"secretRef": {"name": "restart-auth"}},
            "storage": {"size": "64Mi", "appendOnly": true},
        },
    }))
    .expect("a valid Redis");
    let target = Target::plain(PORT, Some(PASSWORD.to_owned()));
    let flight = FlightRecorder::start(&ns, NAME, target.clone());
    ns.api::<Redis>()
        .create(&PostParams::default(), &redis)
        .await
        .context("creating the Redis")?;
    let origin = Instant::now();
    let history = Arc::new(Mutex::new(History::default()));
    let checked = restart_after_failover(&ns, NAME, &target, &flight, &history).await;
    let history = History::take(&history);
    let lost = match checked {
        Ok(lost) if lost.is_empty() => {
            // Written beside the operator's logs, not printed.
            flight.report(&history, &lost);
            history.assert_none_lost(NAME, &lost);
            return Ok(());
        }
        Ok(lost) => lost,
        Err(e) => {
            eprintln!("{NAME}: failed: {e:?}");
            Vec::new()
        }
    };
    eprintln!("{}", flight.report(&history, &lost));
    let recorded = e2e::operator::log_dir(ns.name()).join("history.jsonl");
    history.write_jsonl(&recorded, origin, &[], &lost)?;
    history.assert_none_lost(NAME, &lost);
    panic!("{NAME}: the scenario failed (above)");
}

/// The scenario of [`a_full_restart_after_a_failover_loses_no_acknowledged_write`]: the keys
/// acknowledged in `history` that the primary of the end lacks.
async fn restart_after_failover(
    ns: &TestNamespace,
    name: &str,
    target: &Target,
    flight: &FlightRecorder,
    history: &Arc<Mutex<History>>,
) -> Result<Vec<String>, Error> {
    let first = conditions::wait_replicating(ns, name, 3, CONVERGE, None).await?;
    let service = conditions::service_ip(ns, name, CONVERGE).await?;
    let writers: Vec<Writer> = (0..2)
        .map(|id| Writer::start_to(id, service.clone(), target.clone(), history.clone()))
        .collect();
    flight.note(format!("writers started; {first} is the primary"));
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The primary moves off its first pod. A primary held up long enough (a loaded machine's
    // disk, with the AOF on) is failed over again, which may bring it back to the first pod: the
    // recreated one, with its claim. Then it is moved off once more.
    let pods: Api<Pod> = ns.api();
    let mut current = first.clone();
    for _ in 0..3 {
        flight.note(format!("deleting the primary {current}"));
        pods.delete(&current, &DeleteParams::default())
            .await
            .context(format!("deleting the primary {current}"))?;
        conditions::wait_promoted(ns, name, &current, CONVERGE).await?;
        current = conditions::wait_replicating(ns, name, 3, CONVERGE, None).await?;
        flight.note(format!("{current} is the primary, 3 pods replicating"));
        if current != first {
            break;
        }
    }
    if current == first {
        return Err(Error::process(
            "moving the primary off its first pod",
            format!("the primary never stayed off {first}"),
        ));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The last primary before the restart: the one holding every acknowledged write.
    let moved = conditions::wait_replicating(ns, name, 3, CONVERGE, None).await?;
    flight.note(format!("the primary moved from {first} to {moved}"));

    // Every pod at once.
    let before: Vec<String> = pods::of_redis(&ns.api(), name)
        .await?
        .iter()
        .map(ResourceExt::uid)
        .collect::<Option<_>>()
        .unwrap_or_default();
    let restarted_at = k8s_openapi::jiff::Timestamp::now();
    flight.note("deleting every pod");
    pods.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels(&api::pods::selector_string(name)),
    )
    .await
    .context("deleting every pod")?;
    wait_for("every pod replaced", CONVERGE, || async {
        let now = pods::of_redis(&ns.api(), name).await?;
        let replaced = now.len() == 3
            && now
                .iter()
                .all(|p| p.uid().is_some_and(|uid| !before.contains(&uid)));
        if replaced {
            Ok(())
        } else {
            Err(pods::describe_all(&now))
        }
    })
    .await?;
    conditions::wait_replicating(ns, name, 3, CONVERGE, None).await?;
    // The election after the restart, from its Event: the primary may move again later (an
    // ordinary failover), which is no news about this election.
    let elected = elected_since(ns, restarted_at, CONVERGE).await?;
    flight.note(format!("after the full restart, {elected} was elected"));
    if elected != moved {
        return Err(Error::process(
            "the election after the full restart",
            format!(
                "{elected} was elected, not {moved}: the last primary holds every acknowledged \
                 write, so it is waited for and elected"
            ),
        ));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for writer in writers {
        writer.stop().await;
    }

    // Every acknowledged write is on the primary of the end, whichever failovers came between.
    let now = conditions::wait_replicating(ns, name, 3, CONVERGE, None).await?;
    flight.note(format!("{now} is the primary at the end"));
    let acks = history
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .acks
        .clone();
    let primary = ns.api::<Pod>().get(&now).await.context("the primary")?;
    let ip = pods::ip(&primary).unwrap_or_default().to_owned();
    lost_on_target(&ip, target, &acks).await
}

/// The pod the `PrimaryElected` Event of an election after `since` names (the Event's related
/// pod: the recorder folds repeats about one pod into a series that keeps its first note and
/// time, and its last observation).
async fn elected_since(
    ns: &TestNamespace,
    since: k8s_openapi::jiff::Timestamp,
    timeout: Duration,
) -> Result<String, Error> {
    let events: Api<Event> = ns.api();
    wait_for(
        "the PrimaryElected Event of the restart",
        timeout,
        || async {
            let listed = events
                .list(&ListParams::default())
                .await
                .map_err(|e| format!("listing the Events: {e}"))?;
            let elections: Vec<(String, Option<k8s_openapi::jiff::Timestamp>)> = listed
                .items
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("PrimaryElected"))
                .map(|e| {
                    let last = e
                        .series
                        .map(|s| s.last_observed_time.0)
                        .or(e.event_time.map(|t| t.0));
                    (e.related.and_then(|r| r.name).unwrap_or_default(), last)
                })
                .collect();
            let after: Vec<&str> = elections
                .iter()
                .filter(|(_, last)| last.is_some_and(|t| t >= since))
                .map(|(pod, _)| pod.as_str())
                .collect();
            match after.as_slice() {
                [pod] => Ok((*pod).to_owned()),
                _ => Err(format!(
                    "PrimaryElected Events (pod, last seen): {elections:?}"
                )),
            }
        },
    )
    .await
}

/// A claim named as this Redis's claim but made by someone else (a StatefulSet's
/// `data-<name>-0`) is never mounted (DESIGN §3i.3): no pod is created for that ordinal, the
/// Redis says `ClaimConflict` in its Ready condition, the claim is left as it is; once it is
/// gone, the Redis makes its own and serves.
#[tokio::test]
async fn a_claim_the_redis_did_not_make_is_never_mounted() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("storage-foreign").await?;
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let foreign: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": { "name": "data-taken-0", "labels": { "app": "someone-elses-database" } },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": "64Mi" } },
        },
    }))
    .map_err(|e| Error::process("a foreign claim", e.to_string()))?;
    let foreign = claims
        .create(&PostParams::default(), &foreign)
        .await
        .context("creating the foreign claim data-taken-0")?;

    create(&ns, "taken", 1, json!({"size": "64Mi"})).await?;
    let redis: Api<Redis> = ns.api();
    let message = e2e::wait_not_ready_because(&redis, "taken", "ClaimConflict", CONVERGE).await?;
    assert!(message.contains("data-taken-0"), "{message}");
    let pods: Api<Pod> = ns.api();
    assert!(
        pods.get_opt("taken-0")
            .await
            .context("reading pod")?
            .is_none(),
        "a pod mounting the foreign claim was created"
    );
    let now = claims
        .get("data-taken-0")
        .await
        .context("reading the claim")?;
    assert_eq!(
        now.resource_version(),
        foreign.resource_version(),
        "the claim was written"
    );

    claims
        .delete("data-taken-0", &DeleteParams::default())
        .await
        .context("deleting the foreign claim")?;
    serving(&ns, "taken", 1).await?;
    Ok(())
}
