//! ACL users (DESIGN §3l) against real redis-server processes on 127.0.0.1 (the machine's,
//! installed by hack/cluster/node/packages.sh): the rule grammar the webhook checks against the
//! one `ACL SETUSER` applies, and the users the controller builds, loaded at start as a pod's
//! container loads them and then changed live.

use std::collections::HashMap;

use api::acl::{CATEGORIES, OPERATOR_USER, RULES_REDIS_REFUSES, RULES_REDIS_TAKES, parse_rules};
use controller::acl::users::{self, Passwords};
use controller::redis_server::{Login, Server};
use e2e::Error;
use e2e::local_redis::LocalRedis;

/// A redis-server on 127.0.0.1 reading its config from stdin (as the pods' launcher starts
/// it), without persistence; not waited for.
fn start(config: &str) -> Result<LocalRedis, Error> {
    LocalRedis::builder()
        .no_persistence()
        .config_on_stdin(config)
        .spawn()
}

/// `ACL SETUSER probe reset resetchannels on nopass <rules>` on `con`.
async fn set_user(
    con: &mut redis::aio::MultiplexedConnection,
    rules: &[String],
) -> redis::RedisResult<()> {
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("probe")
        .arg(&["reset", "resetchannels", "on", "nopass"][..])
        .arg(rules)
        .query_async(con)
        .await
}

/// What the webhook accepts, redis-server accepts; what it refuses for Redis's own reasons
/// (not the operator's: passwords and `reset`), redis-server refuses too. And the categories
/// it knows are the server's.
#[tokio::test]
async fn the_rules_the_webhook_takes_are_the_rules_redis_takes() -> Result<(), Error> {
    let server = start("")?;
    server.wait_answering(None, None).await?;
    let mut con = server
        .login(None, None)
        .await
        .map_err(|e| Error::process("connecting", e.to_string()))?;
    for rules in RULES_REDIS_TAKES {
        let parsed = parse_rules(rules).map_err(|e| Error::process(rules, e))?;
        set_user(&mut con, &parsed.args).await.map_err(|e| {
            Error::process(format!("redis-server refused {rules:?}"), e.to_string())
        })?;
    }
    for rules in RULES_REDIS_REFUSES {
        assert!(parse_rules(rules).is_err(), "the webhook takes {rules:?}");
        let words: Vec<String> = rules.split_whitespace().map(str::to_owned).collect();
        assert!(
            set_user(&mut con, &words).await.is_err(),
            "redis-server takes {rules:?}, which the webhook refuses"
        );
    }
    let served: Vec<String> = redis::cmd("ACL")
        .arg("CAT")
        .query_async(&mut con)
        .await
        .map_err(|e| Error::process("ACL CAT", e.to_string()))?;
    for category in CATEGORIES.iter().filter(|c| **c != "all") {
        assert!(
            served.iter().any(|s| s == category),
            "@{category} is not a category of this redis-server: {served:?}"
        );
    }
    Ok(())
}

/// The users the controller builds: loaded by a redis-server at start from the config lines a
/// pod's container reads, then changed live as the controller changes them (a password
/// rotated, a user removed, the default user turned off), and a user whose rules this server
/// refuses reported by name while the others are applied.
#[tokio::test]
async fn the_users_load_at_start_and_change_live() -> Result<(), Error> {
    let acl = |value: serde_json::Value| -> Result<api::AclSpec, Error> {
        serde_json::from_value(value).map_err(|e| Error::process("acl", e.to_string()))
    };
    let reader = serde_json::json!({"name": "reader", "rules": "~* +@read +ping",
        "passwordSecretRef": {"name": "s"}});
    let writer = serde_json::json!({"name": "writer", "rules": "~* +@all",
        "passwordSecretRef": {"name": "s"}});
    let first = acl(serde_json::json!({"users": [reader, writer]}))?;
    let mut passwords = HashMap::from([
        ("reader".to_owned(), "reader-1".to_owned()),
        ("writer".to_owned(), "writer-1".to_owned()),
    ]);
    let operator = users::generate().map_err(|e| Error::process("password", e))?;
    let replication = users::generate().map_err(|e| Error::process("password", e))?;
    let built = |spec: &api::AclSpec, passwords: &HashMap<String, String>| {
        users::desired(
            spec,
            Passwords {
                default: Some("default-pw"),
                operator: &operator,
                replication: &replication,
                users: passwords,
            },
        )
        .map_err(|e| Error::process("users", e))
    };
    let server = start(&users::config_lines(&built(&first, &passwords)?))?;
    server
        .wait_answering(Some(OPERATOR_USER), Some(&operator))
        .await?;

    // As loaded at start.
    let mut reading = server
        .login(Some("reader"), Some("reader-1"))
        .await
        .map_err(|e| Error::process("reader's login", e.to_string()))?;
    let set: redis::RedisResult<()> = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut reading)
        .await;
    assert!(
        set.as_ref().is_err_and(|e| e.code() == Some("NOPERM")),
        "{set:?}"
    );
    let got: Option<String> = redis::cmd("GET")
        .arg("k")
        .query_async(&mut reading)
        .await
        .map_err(|e| Error::process("reader's GET", e.to_string()))?;
    assert_eq!(got, None);
    assert!(server.login(None, Some("default-pw")).await.is_ok());

    // Changed live, logged in as the operator's user: reader's password rotated, writer gone,
    // the default user off.
    passwords.insert("reader".to_owned(), "reader-2".to_owned());
    let second = acl(serde_json::json!({"defaultUser": "Disabled", "users": [
        {"name": "reader", "rules": "~* +@read +ping", "passwordSecretRef": {"name": "s"}}
    ]}))?;
    let wanted = built(&second, &passwords)?;
    let args: Vec<(&str, &[String])> = wanted
        .iter()
        .map(|u| (u.name.as_str(), u.args.as_slice()))
        .collect();
    let operator_server = Server {
        pod: "acl-0",
        ip: "127.0.0.1",
        port: server.port,
        login: Login {
            user: Some(OPERATOR_USER),
            password: Some(&operator),
        },
        tls: None,
    };
    operator_server
        .apply_users(&args, &replication)
        .await
        .map_err(|e| Error::process("applying the users", e.to_string()))?;
    assert!(server.login(Some("reader"), Some("reader-2")).await.is_ok());
    for (user, password) in [
        (Some("reader"), "reader-1"),
        (Some("writer"), "writer-1"),
        (None, "default-pw"),
    ] {
        assert!(
            server.login(user, Some(password)).await.is_err(),
            "{user:?} still logs in with {password}"
        );
    }
    // The operator's connection is still its own: it reads as before.
    operator_server
        .observe()
        .await
        .map_err(|e| Error::process("the operator's read", e.to_string()))?;

    // A user whose rules this server refuses: named, and the others applied all the same.
    let mut refused = wanted.clone();
    refused.push(users::User {
        name: "future".to_owned(),
        args: vec!["on".to_owned(), "+no-such-command".to_owned()],
    });
    passwords.insert("reader".to_owned(), "reader-3".to_owned());
    let mut refused_args: Vec<(&str, &[String])> = refused
        .iter()
        .map(|u| (u.name.as_str(), u.args.as_slice()))
        .collect();
    let third = built(&second, &passwords)?;
    if let Some(slot) = refused_args.iter_mut().find(|(n, _)| *n == "reader") {
        let reader = third
            .iter()
            .find(|u| u.name == "reader")
            .ok_or_else(|| Error::process("reader", "not built"))?;
        slot.1 = reader.args.as_slice();
    }
    let outcome = operator_server
        .apply_users(&refused_args, &replication)
        .await;
    assert!(
        outcome
            .as_ref()
            .is_err_and(|e| e.to_string().contains("user future")),
        "{outcome:?}"
    );
    assert!(server.login(Some("reader"), Some("reader-3")).await.is_ok());
    Ok(())
}
