//! How the `redis` container starts: redis-server's options, and the launchers that hand it the
//! password (`spec.auth`, §3c) or the ACL users (§3l) on stdin, with the environment they read
//! from the Secrets.

use super::pieces::secret_env;
use super::volumes::DATA_PATH;
use crate::redis_server::{FENCE_HOST, FENCE_PORT};
use api::RedisSpec;
use k8s_openapi::api::core::v1::EnvVar;

/// The container's environment variable holding the password (auth on), from the Secret.
pub const PASSWORD_ENV: &str = "REDIS_PASSWORD";
/// The variable `redis-cli` (the probes) reads its password from.
pub(super) const REDISCLI_AUTH_ENV: &str = "REDISCLI_AUTH";

/// How a container with auth starts: `sh -c AUTH_LAUNCHER redis-server <options>`. The shell
/// turns `$REDIS_PASSWORD` into `requirepass` and `masterauth` lines of Redis's config format
/// (in double quotes, with `"`, `\` and newlines escaped, so that no password can add a
/// directive) and hands them to `redis-server -` on stdin, the options following. A
/// here-document is a pipe: nothing is written to the read-only root filesystem. `exec` keeps
/// redis-server the process that gets the kubelet's SIGTERM. The password is then in no
/// process's command line (`/proc/*/cmdline`, `ps` on the node), where
/// `--requirepass $(REDIS_PASSWORD)` put it.
///
/// POSIX sh and its builtins only (the official images' dash and busybox ash), and no `$(` or
/// `$$` in the text: the kubelet would take those for its own `$(VAR)` expansion.
pub const AUTH_LAUNCHER: &str = r#"p=$REDIS_PASSWORD q=
while [ -n "$p" ]; do
  r=${p#?}
  c=${p%"$r"}
  p=$r
  case $c in
    '"' | \\) q=$q\\$c ;;
    '
') q=$q\\n ;;
    *) q=$q$c ;;
  esac
done
exec redis-server - "$@" <<EOF
requirepass "$q"
masterauth "$q"
EOF
"#;

/// The variables of a container with ACL users (§3l), from the operator's Secret
/// (`api::acl::secret_name`): the redis.conf `user` lines, and the replication user's password.
pub const ACL_USERS_ENV: &str = "REDIS_ACL_USERS";
pub const MASTERAUTH_ENV: &str = "REDIS_MASTERAUTH";

/// How a container with ACL users starts: the users (as `user` lines, passwords hashed) and the
/// replication user's login reach `redis-server -` on stdin, as with [`AUTH_LAUNCHER`]. The
/// controller writes both values itself: names and rules it has checked (no quote, backslash or
/// line break: nothing a config line would read differently from `ACL SETUSER`), and a password
/// of hex digits. A variable's value in a here-document is not expanded again.
pub const ACL_LAUNCHER: &str = r#"exec redis-server - "$@" <<EOF
$REDIS_ACL_USERS
masteruser masteruser
masterauth $REDIS_MASTERAUTH
EOF
"#;

/// The command of a container with auth: the launcher, its `$0` `redis-server`; the container's
/// args are redis-server's options.
pub(super) const AUTH_COMMAND: [&str; 4] = ["sh", "-c", AUTH_LAUNCHER, "redis-server"];

pub(super) fn auth_launcher() -> Vec<String> {
    AUTH_COMMAND.map(str::to_owned).to_vec()
}

pub(super) fn acl_launcher() -> Vec<String> {
    ["sh", "-c", ACL_LAUNCHER, "redis-server"]
        .map(str::to_owned)
        .to_vec()
}

/// How the `redis` container starts: its command (the image's entrypoint, or a launcher that
/// hands the secrets to redis-server on stdin), its arguments and its environment.
pub(super) struct Start {
    pub command: Option<Vec<String>>,
    pub args: Vec<String>,
    pub env: Option<Vec<EnvVar>>,
}

/// How the `redis` container of Redis `name` starts; `restart_only` leaves out the `spec.config`
/// directives redis-server takes live (§3m).
pub(super) fn start(name: &str, spec: &RedisSpec, restart_only: bool) -> Start {
    let args = server_args(spec, restart_only);
    // Auth: the container's environment reads the password from the Secret; the pod spec names
    // the Secret only, never the password. A rotation changes the Secret, not this spec: no
    // rolling restart (the operator sets the new password live, see `auth`), and every container
    // started later reads the Secret's current value. It reaches redis-server through
    // [`AUTH_LAUNCHER`], on stdin, never in an argument: anyone on the node can read a process's
    // command line.
    //
    // ACL users (§3l): the users, the replication user's password and the probes' login (the
    // operator's user) come from the operator's own Secret, whose name is all the spec holds: a
    // change of users or passwords is set live (see `acl`), and containers started later read it.
    let acl_secret = spec.acl.as_ref().map(|_| api::acl::secret_name(name));
    let env = match (&acl_secret, spec.auth_secret()) {
        (Some(secret), _) => Some(vec![
            secret_env(ACL_USERS_ENV, secret, api::acl::USERS_KEY),
            secret_env(MASTERAUTH_ENV, secret, api::acl::REPLICATION_PASSWORD_KEY),
            secret_env(REDISCLI_AUTH_ENV, secret, api::acl::OPERATOR_PASSWORD_KEY),
        ]),
        (None, Some((name, key))) => {
            let from_secret = |var: &str| secret_env(var, name, key);
            Some(vec![
                from_secret(PASSWORD_ENV),
                from_secret(REDISCLI_AUTH_ENV),
            ])
        }
        (None, None) => None,
    };
    let (command, args) = match (&acl_secret, &env) {
        (Some(_), _) => (Some(acl_launcher()), args),
        (None, Some(_)) => (Some(auth_launcher()), args),
        // The image's entrypoint is kept: it execs redis-server unchanged for non-root users.
        (None, None) => (None, [vec!["redis-server".to_owned()], args].concat()),
    };
    Start { command, args, env }
}

/// redis-server's options: `spec.config`'s directives, then the operator's.
fn server_args(spec: &RedisSpec, restart_only: bool) -> Vec<String> {
    let port = spec.port();
    // Redis's own configuration (§3m), first: the operator's options after it win, should a
    // directive it owns be stored while the webhook was away (`settings` leaves those out too).
    let config = api::config::start_args(&api::config::settings(spec), restart_only);
    // TLS (§3k): spec.port serves TLS (`--tls-port`), and `--port` only the plaintext port if
    // asked for (else 0: none).
    let listen = match &spec.tls {
        Some(tls) => api::tls::server_args(tls, port),
        None => vec!["--port".to_owned(), port.to_string()],
    };
    let mut args = [
        config,
        listen,
        vec![
            // Protected mode refuses every client but loopback when no password is set; the
            // official images are built with it off, Debian's redis-server is not. Clients reach
            // the pod over the pod network, so say it rather than depend on how the image was built.
            "--protected-mode".to_owned(),
            "no".to_owned(),
        ],
    ]
    .concat();
    if spec.mode() == api::Mode::Replication {
        // Start fenced: a replica of nowhere until the operator says whom to follow, so a
        // restarted primary never serves (or feeds its replicas) an empty data set.
        args.extend([
            "--replicaof".to_owned(),
            FENCE_HOST.to_owned(),
            FENCE_PORT.to_string(),
        ]);
    }
    // Persistence: the working directory on the claim (where dump.rdb and the append-only files
    // go; the images' own working directory is not something to rely on), and the AOF if asked.
    if let Some(storage) = &spec.storage {
        args.extend(["--dir".to_owned(), DATA_PATH.to_owned()]);
        if storage.append_only() {
            args.extend(["--appendonly".to_owned(), "yes".to_owned()]);
        }
    } else if spec.restore.is_some() {
        // A restored Redis (§3o) loads the RDB its restore step put in /data (its emptyDir).
        // `spec.restore` never changes after creation, so neither does this.
        args.extend(["--dir".to_owned(), DATA_PATH.to_owned()]);
    }
    args
}
