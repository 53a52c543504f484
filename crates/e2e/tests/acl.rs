//! ACL users (DESIGN §3l) on the bed's real nodes: users with their own rules and passwords,
//! set live (no pod restarts); the default user turned off; a failover with the default user
//! off loses no acknowledged write; the operator's Secret is never one it does not own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::Redis;
use e2e::history::{History, Target, Writer, lost_on_target};
use e2e::node::{self, REDIS_IMAGE};
use e2e::{Context, Error, TestNamespace, seen, wait_for};
use e2e::{conditions, pods, secrets};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(120);
const PORT: u16 = 6379;
const DEFAULT_PASSWORD: &str = "acl-default-Passw0rd";

/// `redis-cli` on `host` as `user` with `password` (the default user: `None`); its output, or
/// the error it printed.
async fn cli_as(host: &str, user: Option<&str>, password: &str, args: &[&str]) -> String {
    let mut all = vec!["--no-auth-warning"];
    if let Some(user) = user {
        all.extend(["--user", user]);
    }
    all.extend(["--pass", password]);
    all.extend(args);
    match node::redis_cli(host, PORT, &all).await {
        Ok(out) => out,
        Err(e) => e.to_string(),
    }
}

async fn put_password(ns: &TestNamespace, name: &str, password: &str) -> Result<(), Error> {
    secrets::create_password_secret(ns, name, password).await
}

/// Waits until every pod of `name` answers `check` as wanted.
async fn wait_on_every_pod(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    user: Option<&str>,
    password: &str,
    args: &[&str],
    wanted: impl Fn(&str) -> bool,
) -> Result<(), Error> {
    wait_for(what, CONVERGE, || async {
        let pods = pods::of_redis(&ns.api(), name).await?;
        let mut seen = Vec::new();
        for pod in &pods {
            let ip = pods::ip(pod).unwrap_or_default();
            let out = cli_as(ip, user, password, args).await;
            if !wanted(&out) {
                seen.push(format!("{}: {out}", pod.name_any()));
            }
        }
        if seen.is_empty() && pods.len() == 3 {
            Ok(())
        } else {
            Err(seen.join("; "))
        }
    })
    .await
}

/// What redis-cli prints when its login was refused (and its command then too).
fn login_refused(out: &str) -> bool {
    ["WRONGPASS", "AUTH failed", "NOAUTH"]
        .iter()
        .any(|said| out.contains(said))
}

fn restarts_of(pods: &[Pod]) -> BTreeMap<String, i32> {
    pods.iter()
        .map(|p| (p.name_any(), pods::restarts(p)))
        .collect()
}

/// Three pods with a `reader` and a `writer` user: the reader reads and cannot write; the
/// default user is turned off and refused; the reader's password is rotated live; then, with the
/// default user off, writers (as `writer`, `SET` + `WAIT 1`) run through the primary's deletion
/// and no acknowledged write is lost. No pod restarts for any change of users.
#[tokio::test]
async fn acl_users_change_live_and_a_failover_without_the_default_user_loses_nothing()
-> Result<(), Error> {
    const NAME: &str = "guarded";
    let (_cluster, ns, _operator) = node::setup("acl").await?;
    put_password(&ns, "guarded-auth", DEFAULT_PASSWORD).await?;
    put_password(&ns, "reader-pw", "reader-1").await?;
    put_password(&ns, "writer-pw", "writer-1").await?;
    let redis: Redis = serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1",
        "kind": "Redis",
        "metadata": {"name": NAME},
        "spec": {
            "replicas": 3, "image": REDIS_IMAGE, "port": PORT, "mode": "Replication",
            "auth": {"secretRef": {"name": "guarded-auth"}},
            "exporter": {"image": "localhost/redis-exporter:bed"},
            "acl": {"users": [
                {"name": "reader", "rules": "~* +@read +ping",
                 "passwordSecretRef": {"name": "reader-pw"}},
                {"name": "writer", "rules": "~* +@all -@dangerous +wait",
                 "passwordSecretRef": {"name": "writer-pw"}},
            ]},
        },
    }))
    .map_err(|e| Error::process("the Redis", e.to_string()))?;
    let api: Api<Redis> = ns.api();
    api.create(&PostParams::default(), &redis)
        .await
        .context("creating the Redis")?;
    let primary = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    let service = conditions::service_ip(&ns, NAME, CONVERGE).await?;
    // The exporter logs in as the operator's user and reads what it needs.
    let pods: Api<Pod> = ns.api();
    let metrics_url = format!("http://{}:9121/metrics", ip_of(&pods, &primary).await?);
    wait_for("the exporter's redis_up 1", CONVERGE, || async {
        let metrics = node::http_get(&metrics_url).await?;
        match (
            node::sample(&metrics, "redis_up"),
            node::sample(&metrics, "redis_config_maxclients"),
        ) {
            (Some("1"), Some(_)) => Ok(()),
            other => Err(format!("redis_up, redis_config_maxclients: {other:?}")),
        }
    })
    .await?;

    // The reader reads and cannot write; the default user still logs in.
    wait_for(
        "the reader reading through the Service",
        CONVERGE,
        || async {
            let out = cli_as(&service, Some("reader"), "reader-1", &["GET", "k"]).await;
            if out.is_empty() { Ok(()) } else { Err(out) }
        },
    )
    .await?;
    let refused = cli_as(&service, Some("reader"), "reader-1", &["SET", "k", "v"]).await;
    assert!(refused.contains("NOPERM"), "the reader wrote: {refused}");
    assert_eq!(
        cli_as(&service, None, DEFAULT_PASSWORD, &["PING"]).await,
        "PONG"
    );
    let before = restarts_of(&pods::of_redis(&ns.api(), NAME).await?);

    // The default user off, live.
    api.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"acl": {"defaultUser": "Disabled"}}})),
    )
    .await
    .context("disabling the default user")?;
    wait_on_every_pod(
        &ns,
        NAME,
        "every pod refusing the default user",
        None,
        DEFAULT_PASSWORD,
        &["PING"],
        login_refused,
    )
    .await?;

    // The reader's password rotated, live.
    put_password(&ns, "reader-pw", "reader-2").await?;
    wait_on_every_pod(
        &ns,
        NAME,
        "every pod taking the reader's new password",
        Some("reader"),
        "reader-2",
        &["PING"],
        |out| out == "PONG",
    )
    .await?;
    wait_on_every_pod(
        &ns,
        NAME,
        "every pod refusing the reader's old password",
        Some("reader"),
        "reader-1",
        &["PING"],
        login_refused,
    )
    .await?;
    let after = restarts_of(&pods::of_redis(&ns.api(), NAME).await?);
    assert_eq!(before, after, "a change of users restarted a pod");

    // A failover with the default user off: the operator (its own user) and the replicas
    // (masteruser) still do their work, and no write acknowledged to `writer` is lost.
    let history = Arc::new(Mutex::new(History::default()));
    let writer = Target {
        port: PORT,
        user: Some("writer".to_owned()),
        password: Some("writer-1".to_owned()),
        tls: None,
        source: None,
    };
    let writers: Vec<Writer> = (0..2)
        .map(|id| Writer::start_to(id, service.clone(), writer.clone(), history.clone()))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    pods.delete(&primary, &DeleteParams::default())
        .await
        .context(format!("deleting the primary {primary}"))?;
    let promoted = conditions::wait_promoted(&ns, NAME, &primary, CONVERGE).await?;
    conditions::wait_replicating(&ns, NAME, 3, CONVERGE, Some(&primary)).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    for writer in writers {
        writer.stop().await;
    }
    let now = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    eprintln!("acl: the primary moved from {primary} to {promoted}; {now} at the end");
    let history = History::take(&history);
    let primary_pod = pods.get(&now).await.context("the primary")?;
    let ip = pods::ip(&primary_pod).unwrap_or_default().to_owned();
    let lost = lost_on_target(&ip, &writer, &history.acks).await?;
    history.assert_none_lost("acl", &lost);
    // The new pod (made after the users changed) started with them.
    let replaced = cli_as(
        &ip_of(&pods, &primary).await?,
        Some("reader"),
        "reader-2",
        &["PING"],
    )
    .await;
    assert_eq!(replaced, "PONG");

    // The operator's Secret: owned by the Redis, its users hashed.
    let secret: Secret = ns
        .api::<Secret>()
        .get("guarded-acl")
        .await
        .context("the operator's Secret")?;
    let owned = secret
        .owner_references()
        .iter()
        .any(|o| o.kind == "Redis" && o.name == NAME && o.controller == Some(true));
    assert!(owned, "{:?}", secret.owner_references());
    let users = secret
        .data
        .as_ref()
        .and_then(|d| d.get("users.conf"))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .unwrap_or_default();
    assert!(users.contains("user reader "), "{users}");
    for clear in ["reader-2", "writer-1", DEFAULT_PASSWORD] {
        assert!(
            !users.contains(clear),
            "a password in clear in the users: {users}"
        );
    }
    let reasons = ns.event_reasons(None).await?;
    assert!(reasons.iter().any(|r| r == "UsersUpdated"), "{reasons:?}");
    Ok(())
}

async fn ip_of(pods: &Api<Pod>, name: &str) -> Result<String, Error> {
    wait_for(&format!("{name} with an IP"), CONVERGE, || async {
        let pod = pods.get(name).await.map_err(seen)?;
        pods::ip(&pod)
            .map(str::to_owned)
            .ok_or_else(|| "no IP yet".to_owned())
    })
    .await
}

/// A Secret named as the operator's (`<name>-acl`) but made by someone else is never written,
/// and no pod is made to read it: the Redis says so in its Ready condition; once it is gone,
/// the operator makes its own and the pod serves.
#[tokio::test]
async fn a_secret_the_redis_does_not_own_is_never_written() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("acl-taken").await?;
    let foreign = BTreeMap::from([(
        "users.conf".to_owned(),
        k8s_openapi::ByteString(b"user default on nopass ~* +@all\n".to_vec()),
    )]);
    secrets::put_secret(&ns, "taken-acl", None, foreign.clone()).await?;
    let redis: Redis = serde_json::from_value(json!({
        "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
        "metadata": {"name": "taken"},
        "spec": {"replicas": 1, "image": REDIS_IMAGE, "port": PORT,
                 "acl": {"defaultUser": "Disabled"}},
    }))
    .map_err(|e| Error::process("the Redis", e.to_string()))?;
    let api: Api<Redis> = ns.api();
    api.create(&PostParams::default(), &redis)
        .await
        .context("creating the Redis")?;
    let message = e2e::wait_not_ready_because(&api, "taken", "AuthFailed", CONVERGE).await?;
    assert!(message.contains("taken-acl"), "{message}");
    let secrets: Api<Secret> = ns.api();
    let kept = secrets
        .get("taken-acl")
        .await
        .context("the foreign Secret")?;
    assert_eq!(
        kept.data.as_ref(),
        Some(&foreign),
        "the foreign Secret was written"
    );
    let pods: Api<Pod> = ns.api();
    assert!(
        pods.get_opt("taken-0")
            .await
            .context("reading the pod")?
            .is_none(),
        "a pod reading the foreign Secret was made"
    );

    secrets
        .delete("taken-acl", &DeleteParams::default())
        .await
        .context("deleting the foreign Secret")?;
    wait_for(
        "the operator's own Secret and a Ready pod",
        CONVERGE,
        || async {
            let secret = secrets.get_opt("taken-acl").await.map_err(seen)?;
            let owned = secret
                .as_ref()
                .is_some_and(|s| s.owner_references().iter().any(|o| o.name == "taken"));
            let pod = pods.get_opt("taken-0").await.map_err(seen)?;
            let ready = pod.as_ref().is_some_and(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            });
            if owned && ready {
                Ok(())
            } else {
                Err(format!("owned: {owned}, ready: {ready}"))
            }
        },
    )
    .await
}
