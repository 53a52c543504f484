//! The Redis container as `controller::pods::build` makes it, started the way the kubelet starts
//! it (its `$(VAR)` references expanded from the container's environment, then exec'd) on this
//! machine's `sh` and redis-server (installed by hack/cluster/node/packages.sh): what a process
//! on the node can see of a tenant's password (DESIGN §9, tenancy).

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use api::{AuthSpec, RedisSpec, SecretKeyRef};
use controller::pods::build::pod_spec;
use e2e::operator::free_port;
use e2e::{Error, wait_for};

/// The kubelet's expansion of a container's command and args: `$(NAME)` becomes the value of
/// the environment variable NAME when the container defines it (left as written otherwise),
/// `$$` becomes `$`.
fn expand(text: &str, env: &BTreeMap<&str, &str>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = rest
            .strip_prefix("$(")
            .and_then(|r| r.split_once(')'))
            .filter(|(name, _)| env.contains_key(name))
        {
            out.push_str(env[name]);
            rest = after;
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// A process started from the pod's container, killed when dropped.
struct Container {
    /// The command line the kubelet hands the container runtime (which records it in the
    /// container's OCI spec, shown by `crictl inspect`).
    argv: Vec<String>,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the container of a Redis with `spec` as the kubelet would, with `env` as the values
/// its environment reads from the Secret. The image's entrypoint (used when the container sets
/// no command) execs its arguments; `extra` options follow the container's.
fn start(spec: &RedisSpec, env: &BTreeMap<&str, &str>, extra: &[&str]) -> Result<Container, Error> {
    let container = pod_spec("start", spec)
        .containers
        .into_iter()
        .next()
        .ok_or_else(|| Error::process("building the pod", "no container"))?;
    let argv: Vec<String> = container
        .command
        .unwrap_or_default()
        .iter()
        .chain(container.args.unwrap_or_default().iter())
        .map(|a| expand(a, env))
        .chain(extra.iter().map(|a| (*a).to_owned()))
        .collect();
    let dir =
        tempfile::tempdir().map_err(|e| Error::process("a working directory", e.to_string()))?;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::process("building the pod", "an empty command"))?;
    let child = Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(env.iter())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::process(format!("starting {argv:?}"), e.to_string()))?;
    Ok(Container {
        argv,
        child,
        _dir: dir,
    })
}

/// Every process on the machine whose command line contains `secret`, by pid.
fn command_lines_with(secret: &str) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![("/proc".into(), "unreadable".into())];
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let shown = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            shown
                .contains(secret)
                .then(|| (e.file_name().to_string_lossy().into_owned(), shown))
        })
        .collect()
}

async fn query(port: u16, password: Option<&str>, cmd: &[&str]) -> Result<redis::Value, String> {
    query_as(port, None, password, cmd).await
}

/// `cmd` as `user` (the default user: `None`).
async fn query_as(
    port: u16,
    user: Option<&str>,
    password: Option<&str>,
    cmd: &[&str],
) -> Result<redis::Value, String> {
    let mut settings = redis::RedisConnectionInfo::default();
    if let Some(password) = password {
        settings = settings.set_password(password);
    }
    if let Some(user) = user {
        settings = settings.set_username(user);
    }
    let info = redis::IntoConnectionInfo::into_connection_info(("127.0.0.1", port))
        .map_err(|e| e.to_string())?
        .set_redis_settings(settings);
    let client = redis::Client::open(info).map_err(|e| e.to_string())?;
    let mut con = tokio::time::timeout(
        Duration::from_secs(2),
        client.get_multiplexed_async_connection(),
    )
    .await
    .map_err(|_| "connect timed out".to_owned())?
    .map_err(|e| e.to_string())?;
    let mut command = redis::cmd(cmd[0]);
    for arg in &cmd[1..] {
        command.arg(*arg);
    }
    tokio::time::timeout(Duration::from_secs(2), command.query_async(&mut con))
        .await
        .map_err(|_| "timed out".to_owned())?
        .map_err(|e| e.to_string())
}

async fn config_get(port: u16, password: &str, name: &str) -> Result<String, Error> {
    let value = query(port, Some(password), &["CONFIG", "GET", name])
        .await
        .map_err(|e| Error::process(format!("CONFIG GET {name}"), e))?;
    let pair: Vec<String> = redis::from_redis_value(value)
        .map_err(|e| Error::process(format!("CONFIG GET {name}"), e.to_string()))?;
    pair.get(1)
        .cloned()
        .ok_or_else(|| Error::process(format!("CONFIG GET {name}"), format!("{pair:?}")))
}

/// A Redis with auth: its password (one that would add directives to a config file if written
/// into one unescaped) is required from clients and given to its primary, and it appears in no
/// command line: not the one the container runtime records, not that of any process on the
/// machine. redis-server is told not to rewrite its process title (`--set-proc-title no`, as an
/// image or a Redis before 2.6 would leave it): what hides the password must be the pod's making,
/// not a title that redis-server overwrites once it has started.
#[tokio::test]
async fn a_password_reaches_redis_server_on_no_command_line() -> Result<(), Error> {
    let port = free_port()?;
    let password = "s3cret-\"quoted\" \\back\\slash\nport 1\nrequirepass other $(X) `y` 'z' *";
    let spec = RedisSpec {
        port: Some(port.into()),
        auth: Some(AuthSpec {
            secret_ref: SecretKeyRef {
                name: "cache-auth".into(),
                key: None,
            },
        }),
        ..RedisSpec::default()
    };
    let env = BTreeMap::from([("REDIS_PASSWORD", password), ("REDISCLI_AUTH", password)]);
    let redis = start(
        &spec,
        &env,
        &[
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--set-proc-title",
            "no",
        ],
    )?;
    assert!(
        redis.argv.iter().all(|a| !a.contains("s3cret")),
        "the password is in the container's command line: {:?}",
        redis.argv
    );
    wait_for(
        &format!("redis-server :{port} answering PING with the password"),
        Duration::from_secs(30),
        || async {
            match query(port, Some(password), &["PING"]).await {
                Ok(redis::Value::SimpleString(s)) if s == "PONG" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await?;

    let seen = command_lines_with("s3cret");
    assert!(
        seen.is_empty(),
        "the password is in the command line of {seen:?}"
    );
    assert_eq!(config_get(port, password, "requirepass").await?, password);
    assert_eq!(config_get(port, password, "masterauth").await?, password);
    // Nothing in the password became a directive of its own.
    assert_eq!(config_get(port, password, "port").await?, port.to_string());
    let refused = query(port, Some("other"), &["PING"]).await;
    assert!(refused.is_err(), "a wrong password was taken: {refused:?}");
    let anonymous = query(port, None, &["GET", "k"]).await;
    assert!(
        anonymous.as_ref().is_err_and(|e| e.contains("NOAUTH")),
        "a client without the password was served: {anonymous:?}"
    );
    Ok(())
}

/// A Redis with ACL users (§3l): its container loads the users of the operator's Secret at start
/// (the operator's, the replication user's, the default user's and a tenant's), and gives its
/// primary the replication user's login; no password is on a command line or in the users
/// (they hold hashes).
#[tokio::test]
async fn acl_users_load_when_the_container_starts() -> Result<(), Error> {
    use controller::acl::users::{self, Passwords};
    let port = free_port()?;
    let spec: RedisSpec = serde_json::from_value(serde_json::json!({
        "port": port,
        "mode": "Replication",
        "auth": {"secretRef": {"name": "cache-auth"}},
        "acl": {"defaultUser": "Disabled", "users": [
            {"name": "reader", "rules": "~* +@read +ping", "passwordSecretRef": {"name": "r"}}
        ]},
    }))
    .map_err(|e| Error::process("the spec", e.to_string()))?;
    let operator = users::generate().map_err(|e| Error::process("a password", e))?;
    let replication = users::generate().map_err(|e| Error::process("a password", e))?;
    let tenants = std::collections::HashMap::from([("reader".to_owned(), "reader-pw".to_owned())]);
    let built = users::desired(
        spec.acl
            .as_ref()
            .ok_or_else(|| Error::process("the spec", "no acl"))?,
        Passwords {
            default: Some("default-pw"),
            operator: &operator,
            replication: &replication,
            users: &tenants,
        },
    )
    .map_err(|e| Error::process("the users", e))?;
    let lines = users::config_lines(&built);
    let env = BTreeMap::from([
        ("REDIS_ACL_USERS", lines.as_str()),
        ("REDIS_MASTERAUTH", replication.as_str()),
        ("REDISCLI_AUTH", operator.as_str()),
    ]);
    let _redis = start(
        &spec,
        &env,
        &["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    )?;
    let operator_login = |cmd: &'static [&'static str]| {
        let operator = operator.clone();
        async move { query_as(port, Some("redis-operator"), Some(&operator), cmd).await }
    };
    wait_for(
        &format!("redis-server :{port} answering the operator's user"),
        Duration::from_secs(30),
        || async {
            match operator_login(&["PING"]).await {
                Ok(redis::Value::SimpleString(s)) if s == "PONG" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await?;
    let config = |name: &'static str| {
        let operator = operator.clone();
        async move {
            let value = query_as(
                port,
                Some("redis-operator"),
                Some(&operator),
                &["CONFIG", "GET", name],
            )
            .await
            .map_err(|e| Error::process(format!("CONFIG GET {name}"), e))?;
            let pair: Vec<String> = redis::from_redis_value(value)
                .map_err(|e| Error::process(format!("CONFIG GET {name}"), e.to_string()))?;
            pair.get(1)
                .cloned()
                .ok_or_else(|| Error::process(format!("CONFIG GET {name}"), format!("{pair:?}")))
        }
    };
    assert_eq!(config("masteruser").await?, "masteruser");
    assert_eq!(config("masterauth").await?, replication);
    // Started fenced (a replica of nowhere), as every Replication pod.
    let read = query_as(port, Some("reader"), Some("reader-pw"), &["GET", "k"]).await;
    assert!(read.is_ok(), "{read:?}");
    let write = query_as(port, Some("reader"), Some("reader-pw"), &["SET", "k", "v"]).await;
    assert!(
        write
            .as_ref()
            .is_err_and(|e| e.contains("NoPerm") || e.contains("NOPERM")),
        "{write:?}"
    );
    let default = query(port, Some("default-pw"), &["PING"]).await;
    assert!(
        default.is_err(),
        "the disabled default user logged in: {default:?}"
    );
    for secret in [operator.as_str(), replication.as_str(), "reader-pw"] {
        let seen = command_lines_with(secret);
        assert!(
            seen.is_empty(),
            "a password is in the command line of {seen:?}"
        );
    }
    Ok(())
}
