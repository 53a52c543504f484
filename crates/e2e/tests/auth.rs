//! `spec.auth` on the real node, against real redis-servers: the password comes from a Secret,
//! clients without it are refused, and changing the Secret changes the password of the running
//! pods live: the old one stops working, the replicas stay linked, no pod restarts.

use std::collections::BTreeMap;
use std::time::Duration;

use api::{AuthSpec, Redis, RedisSpec, SecretKeyRef};
use e2e::node::{self, REDIS_IMAGE};
use e2e::replicated::Replicated;
use e2e::{conditions, pods, secrets};

use e2e::{Context, Error, TestNamespace, seen, wait_for};
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(120);
const PORT: u16 = 6379;
const NAME: &str = "cache";
const SECRET: &str = "cache-auth";
const FIRST: &str = "first-Passw0rd-for-the-bed";
const SECOND: &str = "second-Passw0rd-after-rotation";

/// `redis-cli` with `password` (none: no AUTH at all). redis-cli prints an error reply and exits
/// 0 when not on a terminal, so the caller reads the text.
async fn cli(host: &str, password: Option<&str>, args: &[&str]) -> Result<String, Error> {
    let mut all: Vec<&str> = match password {
        Some(p) => vec!["-a", p, "--no-auth-warning"],
        None => Vec::new(),
    };
    all.extend_from_slice(args);
    node::redis_cli(host, PORT, &all)
        .await
        .map_err(|reason| Error::process(format!("redis-cli -h {host} {args:?}"), reason))
}

/// Each pod's name, IP, uid and restart count.
async fn pods(ns: &TestNamespace) -> Result<Vec<(String, String, String, i32)>, Error> {
    let pods = pods::of_redis(&ns.api(), NAME).await?;
    Ok(pods
        .iter()
        .map(|p| {
            (
                p.name_any(),
                pods::ip(p).unwrap_or_default().to_owned(),
                p.uid().unwrap_or_default(),
                pods::restarts(p),
            )
        })
        .collect())
}

fn refused(answer: &str) -> bool {
    answer.contains("NOAUTH") || answer.contains("WRONGPASS")
}

/// Replication mode, 3 pods, auth from a Secret: refused without the password; after the Secret
/// changes, the new password works on every pod and the old one is refused, with the same pods
/// (no restart) still replicating; a write through the Service is read from a replica.
#[tokio::test]
async fn the_password_comes_from_the_secret_and_rotates_live() -> Result<(), Error> {
    let (_cluster, ns, _operator) = node::setup("auth-rotate").await?;
    secrets::create_password_secret(&ns, SECRET, FIRST).await?;
    let secrets: Api<Secret> = ns.api();
    let primary = Replicated::new(NAME, 3, "5s")
        .auth(SECRET)
        .create_replicating(&ns, CONVERGE)
        .await?;

    // The pod spec names the Secret; the password is nowhere in it, nor in the command line the
    // runtime was given (redis-server reads it on stdin).
    let pod_api: Api<Pod> = ns.api();
    let primary_pod = pod_api.get(&primary).await.context("reading the primary")?;
    let spec_json = serde_json::to_string(&primary_pod.spec).unwrap_or_default();
    assert!(
        !spec_json.contains(FIRST),
        "the password is in the pod spec"
    );
    assert!(spec_json.contains("secretKeyRef"), "{spec_json}");
    let command_line = node::runtime_command_line(&primary_pod, "redis")
        .await
        .map_err(|reason| {
            Error::process(
                format!("reading {primary}'s command line from the runtime"),
                reason,
            )
        })?;
    assert_eq!(command_line.first().map(String::as_str), Some("sh"));
    assert!(
        command_line.iter().all(|arg| !arg.contains(FIRST)),
        "the password is in the runtime's command line: {command_line:?}"
    );

    // (a) Without the password every pod refuses; with it, PONG.
    let before = pods(&ns).await?;
    for (name, ip, _, _) in &before {
        let anonymous = cli(ip, None, &["PING"]).await?;
        assert!(
            refused(&anonymous),
            "{name} without a password: {anonymous}"
        );
        assert_eq!(cli(ip, Some(FIRST), &["PING"]).await?, "PONG", "{name}");
    }

    // (c) Rotate: the Secret changes, the running pods take the new password.
    secrets
        .patch(
            SECRET,
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": SECOND}})),
        )
        .await
        .context("changing the password in the Secret")?;
    wait_for("every pod on the new password only", CONVERGE, || async {
        let mut not_yet = Vec::new();
        for (name, ip, _, _) in &before {
            let new = cli(ip, Some(SECOND), &["PING"])
                .await
                .unwrap_or_else(|e| e.to_string());
            let old = cli(ip, Some(FIRST), &["PING"])
                .await
                .unwrap_or_else(|e| e.to_string());
            if new != "PONG" || !refused(&old) {
                not_yet.push(format!("{name}: new={new} old={old}"));
            }
        }
        if not_yet.is_empty() {
            Ok(())
        } else {
            Err(not_yet.join("; "))
        }
    })
    .await?;
    let after_primary = conditions::wait_replicating(&ns, NAME, 3, CONVERGE, None).await?;
    assert_eq!(after_primary, primary, "no failover on a rotation");
    for (name, ip, _, _) in &before {
        if *name == primary {
            continue;
        }
        let info = cli(ip, Some(SECOND), &["INFO", "replication"]).await?;
        assert!(info.contains("master_link_status:up"), "{name}: {info}");
    }
    let after = pods(&ns).await?;
    assert_eq!(
        after, before,
        "same pods (uid), same IPs, no container restart"
    );

    // (d) A write through the Service with the new password reaches the replicas.
    let services: Api<Service> = ns.api();
    let service = services
        .get(NAME)
        .await
        .context("reading the Service")?
        .spec
        .and_then(|s| s.cluster_ip)
        .unwrap_or_default();
    let login = ["-a", SECOND, "--no-auth-warning"];
    let written = node::redis_cli_lines(
        &service,
        PORT,
        &login,
        &["SET greeting rotated", "WAIT 2 5000"],
    );
    assert_eq!(
        written.await?,
        ["OK", "2"],
        "written, and both replicas have it"
    );
    let replica = before
        .iter()
        .find(|(name, ..)| *name != primary)
        .map(|(_, ip, ..)| ip.clone())
        .unwrap_or_default();
    assert_eq!(
        cli(&replica, Some(SECOND), &["GET", "greeting"]).await?,
        "rotated"
    );
    Ok(())
}

/// The Ready condition's (status, reason).
async fn ready(ns: &TestNamespace) -> Result<(String, String), String> {
    let redis: Api<Redis> = ns.api();
    let status = redis
        .get(NAME)
        .await
        .map_err(seen)?
        .status
        .unwrap_or_default();
    status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.clone(), c.reason.clone()))
        .ok_or_else(|| "no Ready condition".to_owned())
}

/// Standalone mode (the controller does not otherwise talk to its pods): a rotation still
/// reaches every pod live. Then a rotation while the controller is down: the new controller
/// knows only the Secret's new password, which the pods refuse, so it says AuthFailed (Ready
/// False, Warning Event) and touches nothing; putting the pods' password back clears it.
#[tokio::test]
async fn standalone_rotates_and_a_password_the_pods_refuse_is_reported() -> Result<(), Error> {
    let (_cluster, ns, mut operator) = node::setup("auth-standalone").await?;
    let secrets: Api<Secret> = ns.api();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(SECRET.into()),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([("pw".to_owned(), FIRST.to_owned())])),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .context("creating the Secret")?;
    let spec = RedisSpec {
        replicas: Some(2),
        image: Some(REDIS_IMAGE.into()),
        auth: Some(AuthSpec {
            secret_ref: SecretKeyRef {
                name: SECRET.into(),
                key: Some("pw".into()),
            },
        }),
        ..RedisSpec::default()
    };
    let redis: Api<Redis> = ns.api();
    redis
        .create(&PostParams::default(), &Redis::new(NAME, spec))
        .await
        .context("creating the Redis")?;
    wait_for("Ready True", CONVERGE, || async {
        match ready(&ns).await? {
            (s, _) if s == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    let before = pods(&ns).await?;
    let set = |password: &'static str| {
        let secrets = secrets.clone();
        async move {
            secrets
                .patch(
                    SECRET,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"stringData": {"pw": password}})),
                )
                .await
                .context("changing the Secret")
        }
    };
    let on = |password: &'static str| {
        let before = before.clone();
        async move {
            for (name, ip, _, _) in &before {
                let answer = cli(ip, Some(password), &["PING"])
                    .await
                    .unwrap_or_else(|e| e.to_string());
                if answer != "PONG" {
                    return Err(format!("{name}: {answer}"));
                }
            }
            Ok(())
        }
    };

    set(SECOND).await?;
    wait_for("both pods on the second password", CONVERGE, || on(SECOND)).await?;

    // The controller is down while the Secret changes: the pods keep the second password.
    operator
        .controller
        .process
        .terminate()
        .map_err(|e| Error::process("stopping the controller", e.to_string()))?;
    set("third-password-nobody-set").await?;
    let mut controller =
        e2e::operator::Controller::start(&ns, &operator.identity, "redis-controller-2", &[])
            .await?;
    controller.wait_ready(Duration::from_secs(60)).await?;
    operator.controller = controller;
    wait_for("Ready False AuthFailed", CONVERGE, || async {
        match ready(&ns).await? {
            (s, r) if s == "False" && r == "AuthFailed" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    on(SECOND)
        .await
        .map_err(|e| Error::process("the pods' password", e))?;
    let events = ns.event_reasons(None).await?.join(" ");
    assert!(events.contains("AuthFailed"), "{events}");
    assert!(events.contains("PasswordRotated"), "{events}");

    // The pods' password back in the Secret: Ready again, same pods.
    set(SECOND).await?;
    wait_for("Ready True again", CONVERGE, || async {
        match ready(&ns).await? {
            (s, _) if s == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await?;
    assert_eq!(pods(&ns).await?, before, "no pod replaced or restarted");
    Ok(())
}
