//! The tutorial, chapter by chapter, against a real API server: the operator runs as real
//! processes (webhook registered by url + caBundle, controller under its own RBAC identity),
//! each test in its own namespace enforcing Pod Security "restricted".

use std::collections::BTreeMap;
use std::time::Duration;

use api::{Redis, RedisSpec};
use e2e::operator::{Controller, Operator, run_kubectl};
use e2e::{Cluster, Context, Error, NamespaceOptions, TestNamespace, seen, wait_for};
use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(60);

async fn setup(prefix: &str) -> Result<(Cluster, TestNamespace, Operator), Error> {
    let cluster = Cluster::connect().await?;
    let ns = cluster
        .namespace_with(
            prefix,
            NamespaceOptions::default().pod_security("restricted"),
        )
        .await?;
    let operator = Operator::start(&cluster, &ns).await?;
    Ok((cluster, ns, operator))
}

fn tutorial_sample() -> Redis {
    let mut redis = Redis::new(
        "my-op-redis",
        RedisSpec {
            replicas: Some(2),
            image: Some("redis:5-alpine".into()),
            port: Some(8333),
            ..RedisSpec::default()
        },
    );
    redis.metadata.namespace = None;
    redis
}

/// The tutorial's sample with `replicas` pods.
fn sample_with_replicas(replicas: i32) -> Redis {
    let mut redis = tutorial_sample();
    redis.spec.replicas = Some(replicas);
    redis
}

/// Creates the tutorial's `my-op-redis` and waits until its two pods run and are Ready.
async fn create_sample(ns: &TestNamespace) -> Result<Api<Redis>, Error> {
    let redis: Api<Redis> = ns.api();
    create(&redis, &tutorial_sample()).await?;
    wait_converged(ns, "my-op-redis", &["my-op-redis-0", "my-op-redis-1"]).await?;
    Ok(redis)
}

/// Creates `object`.
async fn create(redis: &Api<Redis>, object: &Redis) -> Result<Redis, Error> {
    let name = object.name_any();
    redis
        .create(&PostParams::default(), object)
        .await
        .context(format!("creating {name}"))
}

/// Merge-patches the spec of the Redis `name` with `spec`.
async fn patch_spec(
    redis: &Api<Redis>,
    name: &str,
    spec: serde_json::Value,
) -> Result<Redis, Error> {
    let what = format!("patching the spec of {name} with {spec}");
    redis
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": spec })),
        )
        .await
        .context(what)
}

/// kubectl against the cluster under test; its stdout.
fn kubectl(cluster: &Cluster, args: &[&str]) -> Result<String, Error> {
    run_kubectl(cluster, args).map_err(|e| Error::process(format!("kubectl {}", args[0]), e))
}

/// A metric of the controller's /metrics.
async fn metric(controller: &Controller, name: &str) -> Result<f64, Error> {
    controller
        .metric(name)
        .await
        .map_err(|e| Error::process("reading metrics", e))
}

/// Pod names of the Redis `name`, sorted.
async fn pod_names(pods: &Api<Pod>, name: &str) -> Result<Vec<String>, String> {
    let mut names: Vec<_> = e2e::pods::of_redis(pods, name)
        .await?
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| p.name_any())
        .collect();
    names.sort();
    Ok(names)
}

/// Waits until no pod of the Redis `name` is left (terminating ones aside).
async fn wait_no_pods(pods: &Api<Pod>, name: &str, what: &str) -> Result<(), Error> {
    wait_for(what, CONVERGE, || async {
        let left = pod_names(pods, name).await?;
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await
}

/// Waits until exactly `expected` pods exist and are Ready, and the status says so.
async fn wait_converged(ns: &TestNamespace, name: &str, expected: &[&str]) -> Result<Redis, Error> {
    let pods: Api<Pod> = ns.api();
    let redis: Api<Redis> = ns.api();
    let replicas = i32::try_from(expected.len()).unwrap_or(i32::MAX);
    wait_for(
        &format!("{name} to converge on {expected:?}"),
        CONVERGE,
        || async {
            let all = e2e::pods::of_redis(&pods, name).await?;
            let mut names: Vec<_> = all.iter().map(|p| p.name_any()).collect();
            names.sort();
            let ready = all
                .iter()
                .filter(|p| e2e::pods::is_ready(p) && p.metadata.deletion_timestamp.is_none())
                .count();
            let current = redis.get(name).await.map_err(seen)?;
            let status = current.status.clone().unwrap_or_default();
            let ready_condition = status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            let done = names == expected
                && ready == expected.len()
                && status.replicas == replicas
                && status.ready_replicas == replicas
                && ready_condition
                && status.observed_generation == current.metadata.generation;
            if done {
                Ok(current)
            } else {
                Err(format!("pods {names:?} ({ready} Ready), status {status:?}"))
            }
        },
    )
    .await
}

async fn events_about(ns: &TestNamespace, redis: &str) -> Result<Vec<Event>, Error> {
    let events: Api<Event> = ns.api();
    let mut list: Vec<Event> = events
        .list(&ListParams::default())
        .await
        .context("listing events")?
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(redis))
        .collect();
    list.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    Ok(list)
}

fn note(e: &Event) -> &str {
    e.note.as_deref().unwrap_or_default()
}

/// The pods a `SuccessfulDelete` note names, in its order: "Deleted pods a, b: scale down; pod
/// c: rolling update to the new spec" names a, b, c.
fn deleted_pods(note: &str) -> Vec<String> {
    note.trim_start_matches("Deleted ")
        .split("; ")
        .filter_map(|part| part.split_once(": ").map(|(pods, _why)| pods))
        .flat_map(|pods| {
            pods.trim_start_matches("pods ")
                .trim_start_matches("pod ")
                .split(", ")
        })
        .map(str::to_owned)
        .collect()
}

/// Waits until `reason` is reported about the Redis `name`: a Warning Event of that reason
/// whose note has `note_has`, and the Ready condition False with that reason and a message
/// that has `message_has`.
async fn wait_reported(
    ns: &TestNamespace,
    name: &str,
    reason: &str,
    note_has: &str,
    message_has: &str,
) -> Result<(), Error> {
    let redis: Api<Redis> = ns.api();
    wait_for(
        &format!("{reason}, in an Event and in status"),
        CONVERGE,
        || async {
            let events = events_about(ns, name).await.map_err(|e| e.to_string())?;
            let warned = events.iter().any(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.type_.as_deref() == Some("Warning")
                    && note(e).contains(note_has)
            });
            let current = redis.get(name).await.map_err(seen)?;
            let ready = current
                .status
                .unwrap_or_default()
                .conditions
                .into_iter()
                .find(|c| c.type_ == "Ready");
            match ready {
                Some(c)
                    if warned
                        && c.status == "False"
                        && c.reason == reason
                        && c.message.contains(message_has) =>
                {
                    Ok(())
                }
                other => Err(format!("warned: {warned}, Ready: {other:?}")),
            }
        },
    )
    .await
}

#[tokio::test]
async fn tutorial_sample_runs_two_ready_pods_with_status_and_columns() -> Result<(), Error> {
    let (cluster, ns, _operator) = setup("sample").await?;
    create(&ns.api(), &tutorial_sample()).await?;
    let converged = wait_converged(&ns, "my-op-redis", &["my-op-redis-0", "my-op-redis-1"]).await?;
    assert_eq!(converged.finalizers(), &[api::FINALIZER.to_owned()]);
    assert_eq!(
        converged.status.as_ref().and_then(|s| s.selector.clone()),
        Some(api::pods::selector_string("my-op-redis"))
    );

    let pods: Api<Pod> = ns.api();
    for name in ["my-op-redis-0", "my-op-redis-1"] {
        let pod = pods.get(name).await.context(format!("reading {name}"))?;
        let labels = pod.labels();
        assert_eq!(labels.get("app").map(String::as_str), Some("my-op-redis"));
        assert_eq!(
            labels.get("app.kubernetes.io/name").map(String::as_str),
            Some("redis")
        );
        assert_eq!(
            labels.get("app.kubernetes.io/instance").map(String::as_str),
            Some("my-op-redis")
        );
        assert_eq!(
            labels
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str),
            Some("redis-operator")
        );
        let owner = &pod.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("Redis", "my-op-redis", Some(true))
        );
        assert_eq!(Some(&owner.uid), converged.metadata.uid.as_ref());
        let container = &pod.spec.as_ref().expect("spec").containers[0];
        assert_eq!(container.image.as_deref(), Some("redis:5-alpine"));
        assert_eq!(
            container.args,
            Some(vec![
                "redis-server".into(),
                "--port".into(),
                "8333".into(),
                "--protected-mode".into(),
                "no".into()
            ])
        );
        assert_eq!(
            container.ports.as_ref().map(|p| p[0].container_port),
            Some(8333)
        );
        let probe = container
            .readiness_probe
            .as_ref()
            .and_then(|p| p.exec.as_ref())
            .and_then(|e| e.command.clone());
        assert_eq!(
            probe,
            Some(vec![
                "redis-cli".into(),
                "-p".into(),
                "8333".into(),
                "ping".into()
            ])
        );
        assert!(container.liveness_probe.is_some());
    }

    let table = kubectl(&cluster, &["get", "redis", "-n", ns.name()])?;
    let mut lines = table.lines();
    let header: Vec<_> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        // PRIMARY stays empty in Standalone mode (the row below has no value for it).
        vec![
            "NAME", "REPLICAS", "READY", "IMAGE", "PORT", "PRIMARY", "AGE"
        ],
        "{table}"
    );
    let row: Vec<_> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..5],
        &["my-op-redis", "2", "2", "redis:5-alpine", "8333"],
        "{table}"
    );
    let short =
        run_kubectl(&cluster, &["get", "rds", "-n", ns.name(), "-o", "name"]).unwrap_or_default();
    assert_eq!(
        short.trim(),
        "redis.myapp.tangx.in/my-op-redis",
        "short name rds works"
    );

    let events = events_about(&ns, "my-op-redis").await?;
    for pod in ["my-op-redis-0", "my-op-redis-1"] {
        assert!(
            events
                .iter()
                .any(|e| e.reason.as_deref() == Some("SuccessfulCreate") && note(e).contains(pod)),
            "a SuccessfulCreate Event names {pod}: {:?}",
            events.iter().map(note).collect::<Vec<_>>()
        );
    }
    Ok(())
}

#[tokio::test]
async fn admission_rejects_bad_specs_and_fills_defaults() -> Result<(), Error> {
    let (_cluster, ns, _operator) = setup("admission").await?;
    let redis: Api<Redis> = ns.api();
    let params = PostParams::default();
    let create = |name: &str, spec: serde_json::Value| {
        let object: Redis = serde_json::from_value(json!({
            "apiVersion": "myapp.tangx.in/v1", "kind": "Redis", "metadata": {"name": name}, "spec": spec
        }))
        .expect("test object");
        let redis = redis.clone();
        let params = params.clone();
        async move { redis.create(&params, &object).await }
    };

    // The API server's own schema (the tutorial's markers): port must be >= 1234.
    match create("port-1000", json!({"port": 1000})).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{s:?}");
            assert!(
                s.message
                    .contains("should be greater than or equal to 1234"),
                "{}",
                s.message
            );
        }
        other => panic!("port 1000 must be refused by the schema, got {other:?}"),
    }
    // The webhook: the tutorial's rules.
    for (name, spec, says) in [
        (
            "port-6000",
            json!({"port": 6000}),
            "spec.port: must be >= 6379, got 6000",
        ),
        (
            "tangx-in",
            json!({}),
            "metadata.name: \"tangx-in\" is a reserved name",
        ),
    ] {
        match create(name, spec).await {
            Err(kube::Error::Api(s)) => {
                assert!(s.message.contains("denied the request"), "{}", s.message);
                assert!(s.message.contains(says), "{}", s.message);
            }
            other => panic!("{name} must be refused by the webhook, got {other:?}"),
        }
    }
    // Defaults are filled and stored.
    let stored = create("defaults", json!({}))
        .await
        .context("creating an empty spec")?;
    assert_eq!(stored.spec.replicas, Some(1));
    assert_eq!(stored.spec.image.as_deref(), Some("redis:7.2-alpine"));
    assert_eq!(stored.spec.port, Some(6379));
    assert_eq!(
        stored.spec.image_pull_policy,
        Some(api::ImagePullPolicy::IfNotPresent)
    );
    wait_converged(&ns, "defaults", &["defaults-0"]).await?;

    // Deletion protection.
    let annotate = |value: serde_json::Value| {
        let redis = redis.clone();
        async move {
            let patch =
                json!({"metadata": {"annotations": {api::DELETION_PROTECTION_ANNOTATION: value}}});
            redis
                .patch("defaults", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    annotate(json!("true"))
        .await
        .context("protecting defaults")?;
    match redis.delete("defaults", &DeleteParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert!(s.message.contains("deletion is refused"), "{}", s.message)
        }
        other => panic!("a protected Redis must not be deletable, got {other:?}"),
    }
    assert!(
        redis
            .get_opt("defaults")
            .await
            .context("reading defaults")?
            .is_some()
    );
    annotate(serde_json::Value::Null)
        .await
        .context("unprotecting defaults")?;
    redis
        .delete("defaults", &DeleteParams::default())
        .await
        .context("deleting defaults")?;
    e2e::pods::wait_gone(&redis, "defaults", CONVERGE).await?;
    Ok(())
}

#[tokio::test]
async fn scaling_up_and_down_by_spec_and_by_kubectl_scale() -> Result<(), Error> {
    let (cluster, ns, _operator) = setup("scale").await?;
    let redis = create_sample(&ns).await?;

    patch_spec(&redis, "my-op-redis", json!({"replicas": 4})).await?;
    wait_converged(
        &ns,
        "my-op-redis",
        &[
            "my-op-redis-0",
            "my-op-redis-1",
            "my-op-redis-2",
            "my-op-redis-3",
        ],
    )
    .await?;
    patch_spec(&redis, "my-op-redis", json!({"replicas": 1})).await?;
    wait_converged(&ns, "my-op-redis", &["my-op-redis-0"]).await?;

    let deleted: Vec<String> = events_about(&ns, "my-op-redis")
        .await?
        .iter()
        .filter(|e| e.reason.as_deref() == Some("SuccessfulDelete"))
        .flat_map(|e| deleted_pods(note(e)))
        .collect();
    assert_eq!(
        deleted,
        vec!["my-op-redis-3", "my-op-redis-2", "my-op-redis-1"],
        "highest ordinal first"
    );
    let events = events_about(&ns, "my-op-redis").await?;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("ScalingDown") && note(e).contains("to 1 pods"))
    );
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("ScalingUp"))
    );

    // The scale subresource, as `kubectl scale` and HorizontalPodAutoscalers use it.
    kubectl(
        &cluster,
        &[
            "scale",
            "-n",
            ns.name(),
            "redis/my-op-redis",
            "--replicas=3",
        ],
    )?;
    let scaled = wait_converged(
        &ns,
        "my-op-redis",
        &["my-op-redis-0", "my-op-redis-1", "my-op-redis-2"],
    )
    .await?;
    assert_eq!(scaled.spec.replicas, Some(3));
    Ok(())
}

#[tokio::test]
async fn a_refused_pod_create_is_reported_and_retried_until_it_succeeds() -> Result<(), Error> {
    let (_cluster, ns, _operator) = setup("quota").await?;
    // A quota of no pods: the API server refuses every create, as a real quota would refuse
    // the pod that exceeds it.
    let quotas: Api<ResourceQuota> = ns.api();
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "no-pods"},
        "spec": {"hard": {"pods": "0"}}
    }))
    .map_err(|e| Error::process("building the ResourceQuota", e))?;
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .context("creating the quota")?;
    // Admission counts against the quota once the quota controller has filled its status.
    wait_for("the quota to be in force", CONVERGE, || async {
        let q = quotas.get("no-pods").await.map_err(seen)?;
        match q.status.and_then(|s| s.hard) {
            Some(hard) if hard.contains_key("pods") => Ok(()),
            other => Err(format!("status.hard {other:?}")),
        }
    })
    .await?;

    create(&ns.api(), &tutorial_sample()).await?;
    // The user sees why: a Warning Event, and the Ready condition's reason and message.
    wait_reported(
        &ns,
        "my-op-redis",
        "FailedCreate",
        "exceeded quota",
        "exceeded quota",
    )
    .await?;
    let pods: Api<Pod> = ns.api();
    assert_eq!(
        pod_names(&pods, "my-op-redis")
            .await
            .map_err(|e| Error::process("listing pods", e))?,
        Vec::<String>::new()
    );

    // Lift the quota: the retries (with backoff) create the pods, and the status recovers.
    quotas
        .delete("no-pods", &DeleteParams::default())
        .await
        .context("deleting the quota")?;
    wait_converged(&ns, "my-op-redis", &["my-op-redis-0", "my-op-redis-1"]).await?;
    Ok(())
}

#[tokio::test]
async fn a_pod_deleted_by_hand_comes_back_with_the_same_name() -> Result<(), Error> {
    let (_cluster, ns, _operator) = setup("recreate").await?;
    create_sample(&ns).await?;
    let pods: Api<Pod> = ns.api();
    let before = pods
        .get("my-op-redis-1")
        .await
        .context("reading my-op-redis-1")?;
    pods.delete("my-op-redis-1", &DeleteParams::default())
        .await
        .context("deleting my-op-redis-1 by hand")?;
    wait_for(
        "my-op-redis-1 to come back as a new pod",
        CONVERGE,
        || async {
            match pods.get_opt("my-op-redis-1").await.map_err(seen)? {
                Some(p) if p.metadata.uid != before.metadata.uid && e2e::pods::is_ready(&p) => {
                    Ok(())
                }
                other => Err(format!("{:?}", other.map(|p| e2e::pods::describe(&p)))),
            }
        },
    )
    .await?;
    wait_converged(&ns, "my-op-redis", &["my-op-redis-0", "my-op-redis-1"]).await?;
    let creates = events_about(&ns, "my-op-redis")
        .await?
        .iter()
        .filter(|e| {
            e.reason.as_deref() == Some("SuccessfulCreate") && note(e).contains("my-op-redis-1")
        })
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum::<i32>();
    assert!(
        creates >= 2,
        "the re-creation is recorded as an Event (count {creates})"
    );
    Ok(())
}

#[tokio::test]
async fn deleting_the_redis_removes_its_pods_and_never_hangs_and_gc_works_without_the_operator()
-> Result<(), Error> {
    let (_cluster, ns, mut operator) = setup("delete").await?;
    let pods: Api<Pod> = ns.api();
    let redis = create_sample(&ns).await?;
    redis
        .delete("my-op-redis", &DeleteParams::default())
        .await
        .context("deleting my-op-redis")?;
    e2e::pods::wait_gone(&redis, "my-op-redis", CONVERGE).await?;
    wait_no_pods(&pods, "my-op-redis", "the pods to be gone").await?;

    // Without the operator, owner references alone still clean up.
    let mut second = tutorial_sample();
    second.metadata.name = Some("orphan-check".into());
    create(&redis, &second).await?;
    wait_converged(&ns, "orphan-check", &["orphan-check-0", "orphan-check-1"]).await?;
    operator.controller.process.kill();
    redis
        .delete("orphan-check", &DeleteParams::default())
        .await
        .context("deleting orphan-check")?;
    let remove_finalizer = json!({"metadata": {"finalizers": null}});
    redis
        .patch(
            "orphan-check",
            &PatchParams::default(),
            &Patch::Merge(&remove_finalizer),
        )
        .await
        .context("removing the finalizer by hand")?;
    e2e::pods::wait_gone(&redis, "orphan-check", CONVERGE).await?;
    wait_no_pods(
        &pods,
        "orphan-check",
        "the garbage collector to delete the pods",
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn changing_the_image_rolls_pods_one_at_a_time() -> Result<(), Error> {
    let (_cluster, ns, _operator) = setup("rolling").await?;
    let redis: Api<Redis> = ns.api();
    let pods: Api<Pod> = ns.api();
    create(&redis, &sample_with_replicas(3)).await?;
    let names = ["my-op-redis-0", "my-op-redis-1", "my-op-redis-2"];
    wait_converged(&ns, "my-op-redis", &names).await?;
    patch_spec(&redis, "my-op-redis", json!({"image": "redis:7.2-alpine"})).await?;

    // Watch availability through the whole rollout.
    let mut lowest_ready = usize::MAX;
    let mut replaced_order: Vec<String> = Vec::new();
    let deadline = tokio::time::Instant::now() + CONVERGE;
    loop {
        let list = e2e::pods::of_redis(&pods, "my-op-redis").await?;
        let ready = list
            .iter()
            .filter(|p| e2e::pods::is_ready(p) && p.metadata.deletion_timestamp.is_none())
            .count();
        lowest_ready = lowest_ready.min(ready);
        for p in &list {
            let name = p.name_any();
            let new_image = p
                .spec
                .as_ref()
                .and_then(|s| s.containers[0].image.as_deref())
                == Some("redis:7.2-alpine");
            if new_image && !replaced_order.contains(&name) {
                replaced_order.push(name);
            }
        }
        let done = list.len() == 3
            && list.iter().all(|p| {
                e2e::pods::is_ready(p)
                    && p.spec
                        .as_ref()
                        .and_then(|s| s.containers[0].image.as_deref())
                        == Some("redis:7.2-alpine")
            });
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "rollout did not finish; pods {:?}",
            list.iter().map(e2e::pods::describe).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        lowest_ready >= 2,
        "at no point fewer than replicas-1 = 2 pods Ready (saw {lowest_ready})"
    );
    assert_eq!(
        replaced_order,
        vec!["my-op-redis-2", "my-op-redis-1", "my-op-redis-0"],
        "highest ordinal first"
    );
    wait_converged(&ns, "my-op-redis", &names).await?;
    Ok(())
}

#[tokio::test]
async fn a_controller_killed_mid_scale_up_converges_exactly_after_restart() -> Result<(), Error> {
    let (_cluster, ns, mut operator) = setup("crash").await?;
    let redis: Api<Redis> = ns.api();
    let pods: Api<Pod> = ns.api();
    create(&redis, &sample_with_replicas(1)).await?;
    wait_converged(&ns, "my-op-redis", &["my-op-redis-0"]).await?;

    patch_spec(&redis, "my-op-redis", json!({"replicas": 8})).await?;
    // Kill -9 as soon as the scale-up has started, before it can finish.
    wait_for("the scale-up to start", CONVERGE, || async {
        let names = pod_names(&pods, "my-op-redis").await?;
        if names.len() > 1 {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await?;
    operator.controller.process.kill();
    let midway = pod_names(&pods, "my-op-redis")
        .await
        .map_err(|e| Error::process("listing pods", e))?;

    let mut restarted =
        Controller::start(&ns, &operator.identity, "redis-controller-restarted", &[]).await?;
    restarted.wait_ready(CONVERGE).await?;
    let expected: Vec<String> = (0..8).map(|i| format!("my-op-redis-{i}")).collect();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    let expected_refs: Vec<&str> = expected_sorted.iter().map(String::as_str).collect();
    wait_converged(&ns, "my-op-redis", &expected_refs).await?;
    let all = e2e::pods::of_redis(&pods, "my-op-redis").await?;
    assert_eq!(
        all.len(),
        8,
        "no duplicates (killed with {midway:?} existing)"
    );
    Ok(())
}

#[tokio::test]
async fn at_rest_the_controller_writes_nothing() -> Result<(), Error> {
    let (cluster, ns, operator) = setup("rest").await?;
    create_sample(&ns).await?;
    // Let the last watch events land, then measure.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let counters = [
        "redis_controller_pods_created_total",
        "redis_controller_pods_deleted_total",
        "redis_controller_status_writes_total",
    ];
    let mut before = BTreeMap::new();
    for c in counters {
        before.insert(c, metric(&operator.controller, c).await?);
    }
    let audit_before = audit_writes_by(&cluster, &operator.identity.username);
    tokio::time::sleep(Duration::from_secs(30)).await;
    for c in counters {
        let after = metric(&operator.controller, c).await?;
        assert_eq!(before[c], after, "{c} moved at rest");
    }
    if let (Some(before), Some(after)) = (
        audit_before,
        audit_writes_by(&cluster, &operator.identity.username),
    ) {
        assert_eq!(
            after.len(),
            before.len(),
            "writes by the controller at rest: {:?}",
            &after[before.len()..]
        );
    } else {
        assert!(
            !cluster.is_local_bed(),
            "the local test bed must have an audit log at .cluster/audit.log"
        );
    }
    Ok(())
}

/// Write requests (`verb resource/name`) by `user` in the test bed's audit log; None when the
/// cluster is not the local bed (no audit log to read).
fn audit_writes_by(cluster: &Cluster, user: &str) -> Option<Vec<String>> {
    if !cluster.is_local_bed() {
        return None;
    }
    let text = std::fs::read_to_string(e2e::repo_root().join(".cluster").join("audit.log")).ok()?;
    Some(
        text.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|e| e["stage"] == "ResponseComplete" && e["user"]["username"] == user)
            .filter(|e| {
                matches!(
                    e["verb"].as_str(),
                    Some("create" | "update" | "patch" | "delete" | "deletecollection")
                )
            })
            .map(|e| {
                format!(
                    "{} {}/{}",
                    e["verb"], e["objectRef"]["resource"], e["objectRef"]["name"]
                )
            })
            .collect(),
    )
}

/// Replaces the operator's plain controller with a `--leader-elect` one named `name` (a Lease
/// of `lease_seconds`), the leader once this returns.
async fn elected_leader(
    ns: &TestNamespace,
    operator: &mut Operator,
    name: &str,
    lease_seconds: &str,
) -> Result<Controller, Error> {
    operator.controller.process.kill();
    let mut leader = Controller::start_elected(ns, &operator.identity, name, lease_seconds).await?;
    leader.wait_leading(CONVERGE).await?;
    Ok(leader)
}

/// Replaces the operator's plain controller with two `--leader-elect` replicas sharing a Lease
/// of `lease_seconds`; the first is the leader once this returns.
async fn elected_pair(
    ns: &TestNamespace,
    operator: &mut Operator,
    name: &str,
    lease_seconds: &str,
) -> Result<(Controller, Controller), Error> {
    let first = elected_leader(ns, operator, &format!("{name}-a"), lease_seconds).await?;
    let mut second =
        Controller::start_elected(ns, &operator.identity, &format!("{name}-b"), lease_seconds)
            .await?;
    // A warm standby is ready (a Deployment of two shows 2/2), though it does not lead.
    second.wait_ready(CONVERGE).await?;
    Ok((first, second))
}

#[tokio::test]
async fn with_leader_election_only_one_controller_acts_and_a_standby_takes_over()
-> Result<(), Error> {
    let (_cluster, ns, mut operator) = setup("leader").await?;
    let (mut first, mut second) = elected_pair(&ns, &mut operator, "leader", "4").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        first.metric("redis_controller_leader").await.ok(),
        Some(1.0)
    );
    // Exactly 0, read from its /metrics: an unreadable metric must not pass for "not leading".
    assert_eq!(
        second.metric("redis_controller_leader").await,
        Ok(0.0),
        "the standby must not lead"
    );

    let redis = create_sample(&ns).await?;
    assert_eq!(
        first.metric("redis_controller_pods_created_total").await,
        Ok(2.0),
        "the leader did the work"
    );
    assert_eq!(
        second.metric("redis_controller_pods_created_total").await,
        Ok(0.0),
        "the standby wrote nothing"
    );

    first.process.kill();
    second.wait_leading(Duration::from_secs(60)).await?;
    patch_spec(&redis, "my-op-redis", json!({"replicas": 3})).await?;
    wait_converged(
        &ns,
        "my-op-redis",
        &["my-op-redis-0", "my-op-redis-1", "my-op-redis-2"],
    )
    .await?;
    assert_eq!(
        second.metric("redis_controller_leader").await.ok(),
        Some(1.0)
    );
    assert!(second.process.running());
    Ok(())
}

#[tokio::test]
async fn a_leader_stopped_cleanly_hands_its_lease_over() -> Result<(), Error> {
    use k8s_openapi::api::coordination::v1::Lease;
    let (_cluster, ns, mut operator) = setup("handover").await?;
    // A lease far longer than the test: the standby can only lead this soon if it is released.
    let (mut first, mut second) = elected_pair(&ns, &mut operator, "handover", "300").await?;
    let pid = first.process.pid();

    let status = first.process.terminate()?;
    assert!(status.success(), "SIGTERM exits 0, got {status:?}");
    let leases: Api<Lease> = ns.api();
    let lease = leases
        .get("redis-operator-controller")
        .await
        .context("reading the Lease")?;
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(
        !holder.ends_with(&format!("-{pid}")),
        "the stopped leader still holds the Lease: {holder}"
    );

    second.wait_leading(CONVERGE).await?;
    create_sample(&ns).await?;
    Ok(())
}

/// Issue item 1: every pod of a Redis was broken by its spec (here unschedulable: kwok nodes
/// have 32 CPUs), so none is Ready; fixing the spec must roll out, not wait for the broken pods
/// to become Ready first.
#[tokio::test]
async fn fixing_a_spec_that_left_every_pod_unready_rolls_out() -> Result<(), Error> {
    let (_cluster, ns, _operator) = setup("unready").await?;
    let redis: Api<Redis> = ns.api();
    let pods: Api<Pod> = ns.api();
    let mut sample = sample_with_replicas(3);
    sample.spec.resources = serde_json::from_value(json!({"requests": {"cpu": "1000"}}))
        .map_err(|e| Error::process("building resources", e))?;
    create(&redis, &sample).await?;
    let names = ["my-op-redis-0", "my-op-redis-1", "my-op-redis-2"];
    wait_for("three unschedulable pods", CONVERGE, || async {
        let list = e2e::pods::of_redis(&pods, "my-op-redis").await?;
        let pending = list.iter().filter(|p| !e2e::pods::is_ready(p)).count();
        if list.len() == 3 && pending == 3 {
            Ok(())
        } else {
            Err(format!(
                "{:?}",
                list.iter().map(e2e::pods::describe).collect::<Vec<_>>()
            ))
        }
    })
    .await?;
    patch_spec(&redis, "my-op-redis", json!({"resources": null})).await?;
    wait_converged(&ns, "my-op-redis", &names).await?;
    Ok(())
}

/// Issue item 3: a pod the Redis does not control holds one of its names. The user is told
/// (Warning Event, Ready reason PodNameConflict), the controller backs off instead of trying
/// every second, the other ordinals are created, and once the name is free the Redis converges.
#[tokio::test]
async fn a_foreign_pod_holding_a_name_is_reported_and_retried_with_backoff() -> Result<(), Error> {
    let (_cluster, ns, operator) = setup("conflict").await?;
    let pods: Api<Pod> = ns.api();
    pods.create(
        &PostParams::default(),
        &e2e::pods::restricted_pod("cache-0"),
    )
    .await
    .context("kubectl run cache-0")?;
    let redis: Api<Redis> = ns.api();
    let mut sample = tutorial_sample();
    sample.metadata.name = Some("cache".into());
    create(&redis, &sample).await?;
    wait_reported(&ns, "cache", "PodNameConflict", "cache-0", "").await?;
    let names = pod_names(&pods, "cache")
        .await
        .map_err(|e| Error::process("listing pods", e))?;
    assert_eq!(
        names,
        vec!["cache-1".to_owned()],
        "the free ordinal is created"
    );

    // Backoff, not a retry every second.
    let reconciles = "redis_controller_reconciles_total";
    let before = metric(&operator.controller, reconciles).await?;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let during = metric(&operator.controller, reconciles).await? - before;
    assert!(
        during <= 5.0,
        "{during} reconciles in 12 s while the name stayed taken"
    );

    pods.delete("cache-0", &DeleteParams::default())
        .await
        .context("deleting the foreign pod")?;
    wait_for("the foreign cache-0 to be gone", CONVERGE, || async {
        match pods.get_opt("cache-0").await.map_err(seen)? {
            Some(p) if p.owner_references().is_empty() => Err("still there".to_owned()),
            _ => Ok(()),
        }
    })
    .await?;
    wait_converged(&ns, "cache", &["cache-0", "cache-1"]).await?;
    Ok(())
}

/// Issue item 7: a pod stuck Terminating (its node is lost; here a finalizer nobody removes)
/// must not keep its Redis from being deleted: once every pod is going, the finalizer goes.
#[tokio::test]
async fn a_pod_stuck_terminating_does_not_hold_up_the_redis_deletion() -> Result<(), Error> {
    const HOLD: &str = "e2e.myapp.tangx.in/hold";
    let (_cluster, ns, _operator) = setup("stuck").await?;
    let redis = create_sample(&ns).await?;
    let pods: Api<Pod> = ns.api();
    pods.patch(
        "my-op-redis-0",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"finalizers": [HOLD]}})),
    )
    .await
    .context("holding my-op-redis-0")?;
    redis
        .delete("my-op-redis", &DeleteParams::default())
        .await
        .context("deleting my-op-redis")?;
    let gone = e2e::pods::wait_gone(&redis, "my-op-redis", CONVERGE).await;
    let stuck = pods
        .get_opt("my-op-redis-0")
        .await
        .context("reading my-op-redis-0")?;
    // Let the pod go whatever happened, so the namespace can be deleted.
    pods.patch(
        "my-op-redis-0",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
    )
    .await
    .context("releasing my-op-redis-0")?;
    gone?;
    assert!(
        stuck.is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
        "my-op-redis-0 was Terminating when its Redis went"
    );
    wait_no_pods(&pods, "my-op-redis", "the pods to be gone").await?;
    Ok(())
}

/// Issue item 5: a leader whose renewals fail (here: its lease RBAC is revoked) stops before
/// its lease could run out, so it never acts beside the next leader.
#[tokio::test]
async fn a_leader_that_cannot_renew_steps_down_before_its_lease_runs_out() -> Result<(), Error> {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let (_cluster, ns, mut operator) = setup("renew").await?;
    let mut leader = elected_leader(&ns, &mut operator, "renew-a", "8").await?;
    ns.api::<RoleBinding>()
        .delete("redis-controller-leader-election", &DeleteParams::default())
        .await
        .context("revoking the lease RBAC")?;
    let exited = wait_for("the leader to step down", CONVERGE, || {
        let running = leader.process.running();
        async move {
            if running {
                Err("still running".to_owned())
            } else {
                Ok(std::time::SystemTime::now())
            }
        }
    })
    .await?;
    let lease = ns
        .api::<Lease>()
        .get("redis-operator-controller")
        .await
        .context("reading the Lease")?;
    let spec = lease.spec.unwrap_or_default();
    let expiry = spec.renew_time.map(|t| {
        std::time::SystemTime::from(t.0)
            + Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or_default()).unwrap_or(0),
            )
    });
    assert!(
        expiry.is_some_and(|expiry| exited < expiry),
        "stepped down at {exited:?}, the lease ran out at {expiry:?}; log:\n{}",
        leader.process.log_tail()
    );
    Ok(())
}

/// Sets or removes the pause annotation of my-op-redis.
async fn set_paused(redis: &Api<Redis>, paused: bool) -> Result<Redis, kube::Error> {
    let value = paused.then_some("true");
    let patch = json!({"metadata": {"annotations": {api::PAUSED_ANNOTATION: value}}});
    redis
        .patch("my-op-redis", &PatchParams::default(), &Patch::Merge(patch))
        .await
}

/// The pause annotation: the Ready condition says Paused; a pod deleted by hand stays gone even
/// after the controller has looked again (its pod trigger ran a reconcile); deletion of a paused
/// Redis still completes; resuming brings the pod back.
#[tokio::test]
async fn a_paused_redis_is_left_alone_until_resumed() -> Result<(), Error> {
    let (_cluster, ns, operator) = setup("paused").await?;
    let redis = create_sample(&ns).await?;
    set_paused(&redis, true).await.context("pausing")?;
    wait_for("Ready=False Paused", CONVERGE, || async {
        let status = redis
            .get("my-op-redis")
            .await
            .map_err(seen)?
            .status
            .unwrap_or_default();
        match status.conditions.iter().find(|c| c.type_ == "Ready") {
            Some(c) if c.status == "False" && c.reason == "Paused" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;

    let reconciles = metric(&operator.controller, "redis_controller_reconciles_total").await?;
    let created = metric(&operator.controller, "redis_controller_pods_created_total").await?;
    let pods: Api<Pod> = ns.api();
    pods.delete("my-op-redis-1", &DeleteParams::default())
        .await
        .context("deleting my-op-redis-1 by hand")?;
    e2e::pods::wait_gone(&pods, "my-op-redis-1", CONVERGE).await?;
    // The pod's deletion woke the controller; once it has run, nothing was recreated.
    wait_for("a reconcile after the deletion", CONVERGE, || async {
        let now = metric(&operator.controller, "redis_controller_reconciles_total")
            .await
            .map_err(|e| e.to_string())?;
        if now > reconciles {
            Ok(())
        } else {
            Err(format!("reconciles {now}"))
        }
    })
    .await?;
    let left = pod_names(&pods, "my-op-redis")
        .await
        .map_err(|e| Error::process("listing pods", e))?;
    assert_eq!(left, ["my-op-redis-0"]);
    assert_eq!(
        metric(&operator.controller, "redis_controller_pods_created_total").await?,
        created,
        "no pod created while paused"
    );

    set_paused(&redis, false).await.context("resuming")?;
    wait_converged(&ns, "my-op-redis", &["my-op-redis-0", "my-op-redis-1"]).await?;

    // Deleting a paused Redis is not blocked: its finalizer is still honoured.
    set_paused(&redis, true).await.context("pausing again")?;
    redis
        .delete("my-op-redis", &DeleteParams::default())
        .await
        .context("deleting the paused Redis")?;
    e2e::pods::wait_gone(&redis, "my-op-redis", CONVERGE).await
}

/// A Redis being deleted is released even when the webhook is gone (uninstalled before the
/// controller, crashed, scaled to 0, failurePolicy Fail): admission skips objects that carry a
/// deletionTimestamp (the webhooks' matchConditions), so the controller's finalizer removal is
/// never refused (DESIGN §3i.5). The DELETE itself still goes through the webhook (deletion
/// protection).
#[tokio::test]
async fn a_deleted_redis_is_released_while_the_webhook_is_down() -> Result<(), Error> {
    let (_cluster, ns, mut operator) = setup("webhook-down").await?;
    let redis: Api<Redis> = ns.api();
    create(&redis, &sample_with_replicas(1)).await?;
    wait_converged(&ns, "my-op-redis", &["my-op-redis-0"]).await?;
    // The finalizer stays while no controller runs; the DELETE is judged by the webhook.
    operator.controller.process.kill();
    redis
        .delete("my-op-redis", &DeleteParams::default())
        .await
        .context("deleting my-op-redis")?;
    operator.webhook.process.kill();

    let mut restarted =
        Controller::start(&ns, &operator.identity, "redis-controller-restarted", &[]).await?;
    restarted.wait_ready(CONVERGE).await?;
    e2e::pods::wait_gone(&redis, "my-op-redis", CONVERGE).await?;
    Ok(())
}
