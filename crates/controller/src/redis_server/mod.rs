//! The one client of the controller for the redis-servers of a Redis (DESIGN §3b replication,
//! §3c auth): every command it sends a pod goes through [`Server`], to the pod IP, with short
//! timeouts: one that does not answer in time counts as unreachable, and the pass goes on.
//! [`info`] parses what a redis-server says about its part in replication (pure).
//! [`config`]: the live settings of `spec.config` (§3m), and what a server did not take.

mod acl;
mod capped;
pub mod config;
pub mod info;
mod tls;

use crate::Error;
use capped::Capped;
pub use capped::MAX_REPLY_BYTES;
use info::RedisRole;
pub use info::{FENCE_HOST, FENCE_PORT};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisConnectionInfo, RedisError};
use std::time::Duration;
pub use tls::TlsClient;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The TCP connect and the `AUTH` handshake together.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a switchover keeps the old primary's writes paused at most, and waits for the heir.
const SWITCHOVER_PAUSE_MS: u64 = 5_000;
// One renewed pause must outlast one call to a server (connect and reply): `switchover`.
const _: () = assert!(
    SWITCHOVER_PAUSE_MS as u128 > CONNECT_TIMEOUT.as_millis() + RESPONSE_TIMEOUT.as_millis()
);
const SWITCHOVER_CATCH_UP: Duration = Duration::from_secs(3);

/// Whether a redis-server refused the password it was given (or wanted one and got none):
/// an authentication failure, not an unreachable server.
pub fn refuses_auth(error: &RedisError) -> bool {
    error.kind() == redis::ErrorKind::AuthenticationFailed
        || matches!(error.code(), Some("NOAUTH" | "WRONGPASS"))
}

/// Who the controller logs in as: Redis's default user with `spec.auth`'s password (or none),
/// or with ACL users (§3l) the operator's own user.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Login<'a> {
    /// `None`: the default user.
    pub user: Option<&'a str>,
    pub password: Option<&'a str>,
}

impl<'a> Login<'a> {
    /// The default user with `password`.
    pub fn password(password: Option<&'a str>) -> Self {
        Login {
            user: None,
            password,
        }
    }
}

/// One redis-server: its pod (named in errors), the pod IP, port, the login, and the TLS client
/// when it serves TLS (`spec.tls`).
#[derive(Clone, Copy)]
pub struct Server<'a> {
    pub pod: &'a str,
    pub ip: &'a str,
    pub port: u16,
    pub login: Login<'a>,
    pub tls: Option<&'a TlsClient>,
}

/// What a redis-server said about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub role: RedisRole,
    /// Which replication history its offset counts in.
    pub history: Option<info::History>,
    /// `min-replicas-to-write`, `min-replicas-max-lag` as configured now.
    pub min_replicas: (i64, i64),
    /// The keys it holds, over every database (`INFO keyspace`).
    pub keys: u64,
    /// It still loads its dataset (`INFO persistence`): `keys` is what it loaded so far.
    pub loading: bool,
}

impl Server<'_> {
    /// The error of a failed call to this server.
    fn failed(&self, source: RedisError) -> Error {
        Error::Redis {
            pod: self.pod.to_owned(),
            source,
        }
    }

    /// This server answered, but not as the step needs.
    fn refused(&self, reason: String) -> Error {
        Error::RedisState {
            pod: self.pod.to_owned(),
            reason,
        }
    }

    /// A connection whose replies are capped at [`MAX_REPLY_BYTES`] in all, and each given
    /// [`RESPONSE_TIMEOUT`].
    async fn connect(&self) -> redis::RedisResult<Link> {
        let mut settings = RedisConnectionInfo::default();
        if let Some(password) = self.login.password {
            settings = settings.set_password(password);
        }
        if let Some(user) = self.login.user {
            settings = settings.set_username(user);
        }
        let config = AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
        let handshake = async {
            let stream = TcpStream::connect((self.ip, self.port)).await?;
            // The cap is on what Redis says, under TLS as without it.
            match self.tls {
                None => open(stream, &settings, config).await,
                Some(tls) => open(tls.handshake(stream).await?, &settings, config).await,
            }
        };
        let (con, driver) = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
            .await
            .map_err(|_| timed_out())??;
        Ok(Link { con, driver })
    }

    /// The certificate this server shows in a TLS handshake (`None` without TLS); the handshake
    /// verifies it against the CAs and the name as every connection does.
    pub async fn served_certificate(
        &self,
    ) -> Result<Option<rustls::pki_types::CertificateDer<'static>>, Error> {
        let Some(tls) = self.tls else {
            return Ok(None);
        };
        let handshake = async {
            let stream = TcpStream::connect((self.ip, self.port)).await?;
            tls.handshake(stream).await
        };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
            .await
            .map_err(|_| self.failed(timed_out()))?
            .map_err(|e| self.failed(RedisError::from(e)))?;
        Ok(tls::served(&stream))
    }

    /// `CONFIG SET tls-cert-file … tls-key-file … tls-ca-cert-file …` with the paths it already
    /// has (read with `CONFIG GET`): redis-server (7.0 on) reloads its TLS context from those
    /// files even when the values are the same (they are `VOLATILE_CONFIG`), so a renewed
    /// certificate that the kubelet wrote into the pod's Secret volume is served to new
    /// connections. A key that does not match its certificate is refused by redis-server, which
    /// keeps the context it had.
    pub async fn reload_tls(&self) -> Result<(), Error> {
        const FILES: [&str; 3] = ["tls-cert-file", "tls-key-file", "tls-ca-cert-file"];
        let mut link = self.connect().await.map_err(|e| self.failed(e))?;
        let mut get = redis::cmd("CONFIG");
        get.arg("GET").arg(&FILES[..]);
        let current: Vec<String> = get
            .query_async(&mut link.con)
            .await
            .map_err(|e| self.failed(e))?;
        let mut set = redis::cmd("CONFIG");
        set.arg("SET");
        for name in FILES {
            let value = current
                .chunks(2)
                .find(|kv| kv.first().map(String::as_str) == Some(name))
                .and_then(|kv| kv.get(1))
                .filter(|v| !v.is_empty())
                .ok_or_else(|| self.refused(format!("no {name} configured")))?;
            set.arg(name).arg(value);
        }
        set.query_async::<()>(&mut link.con)
            .await
            .map_err(|e| self.failed(e))
    }

    /// Its role and settings; `Err` when it cannot be reached or answers something else.
    pub async fn observe(&self) -> Result<Observed, Error> {
        let mut link = self.connect().await.map_err(|e| self.failed(e))?;
        let con = &mut link.con;
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(con)
            .await
            .map_err(|e| self.failed(e))?;
        let role = RedisRole::parse(&info)
            .ok_or_else(|| self.refused("INFO replication said no role".to_owned()))?;
        let keyspace: String = redis::cmd("INFO")
            .arg("keyspace")
            .query_async(con)
            .await
            .map_err(|e| self.failed(e))?;
        let persistence: String = redis::cmd("INFO")
            .arg("persistence")
            .query_async(con)
            .await
            .map_err(|e| self.failed(e))?;
        let config: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("min-replicas-*")
            .query_async(con)
            .await
            .map_err(|e| self.failed(e))?;
        let value = |name: &str| {
            config
                .chunks(2)
                .find(|kv| kv.first().map(String::as_str) == Some(name))
                .and_then(|kv| kv.get(1)?.parse().ok())
                .unwrap_or(0)
        };
        Ok(Observed {
            role,
            history: info::History::parse(&info),
            keys: info::keys(&keyspace),
            loading: info::loading(&persistence),
            min_replicas: (
                value("min-replicas-to-write"),
                value("min-replicas-max-lag"),
            ),
        })
    }

    /// Runs one command on a new connection; its reply is discarded.
    async fn run(&self, command: &redis::Cmd) -> redis::RedisResult<()> {
        let mut link = self.connect().await?;
        command.query_async(&mut link.con).await
    }

    /// `REPLICAOF NO ONE`.
    pub async fn promote(&self) -> Result<(), Error> {
        let mut command = redis::cmd("REPLICAOF");
        command.arg("NO").arg("ONE");
        self.run(&command).await.map_err(|e| self.failed(e))
    }

    /// `REPLICAOF host port`.
    pub async fn follow(&self, host: &str, port: u16) -> Result<(), Error> {
        let mut command = redis::cmd("REPLICAOF");
        command.arg(host).arg(port);
        self.run(&command).await.map_err(|e| self.failed(e))
    }

    /// `REPLICAOF` the fence: off whatever stream it is on, its data kept (a replica keeps
    /// its dataset and offset; a primary becomes a replica of nowhere, refusing writes).
    pub async fn fence(&self) -> Result<(), Error> {
        let mut command = redis::cmd("REPLICAOF");
        command.arg(FENCE_HOST).arg(FENCE_PORT);
        self.run(&command).await.map_err(|e| self.failed(e))
    }

    /// `CONFIG SET min-replicas-to-write N min-replicas-max-lag M`.
    pub async fn set_min_replicas(&self, to_write: i64, max_lag: i64) -> Result<(), Error> {
        let mut command = redis::cmd("CONFIG");
        command
            .arg("SET")
            .arg("min-replicas-to-write")
            .arg(to_write)
            .arg("min-replicas-max-lag")
            .arg(max_lag);
        self.run(&command).await.map_err(|e| self.failed(e))
    }

    /// `CONFIG SET requirepass P masterauth P`: the password a server asks for and the one it
    /// gives its primary. Live, no restart; connections already authenticated stay.
    pub async fn set_password(&self, password: &str) -> redis::RedisResult<()> {
        let mut command = redis::cmd("CONFIG");
        command
            .arg("SET")
            .arg("masterauth")
            .arg(password)
            .arg("requirepass")
            .arg(password);
        self.run(&command).await
    }

    /// `PING`, authenticated with the password when there is one. The raw result: auth tells a
    /// refused password from an unreachable server by the error's kind.
    pub async fn ping(&self) -> redis::RedisResult<()> {
        self.run(&redis::cmd("PING")).await
    }
}

/// A connection over `stream`, its replies capped at [`MAX_REPLY_BYTES`], and the task that
/// drives it.
async fn open<S>(
    stream: S,
    settings: &RedisConnectionInfo,
    config: AsyncConnectionConfig,
) -> redis::RedisResult<(MultiplexedConnection, JoinHandle<()>)>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let stream = Capped::new(stream, MAX_REPLY_BYTES);
    let (con, driver) = MultiplexedConnection::new_with_config(settings, stream, config).await?;
    Ok((con, tokio::spawn(driver)))
}

fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no connection and handshake within {CONNECT_TIMEOUT:?}"),
    ))
}

/// A connection and the task that drives it, stopped with it: a server that never closes its
/// side does not keep the task alive.
struct Link {
    con: MultiplexedConnection,
    driver: JoinHandle<()>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// A planned handover from `from` (a healthy primary) to `to` (its replica), DESIGN §9.4: writes
/// on `from` are paused (the pause renewed while `to` catches up to `from`'s offset), `to` is
/// promoted, `from` follows it, and only then does `move_label` run (the Services move) and the
/// pause end. `from` never takes a write after the heir's promotion: were it still a primary
/// when a slow label move outlasted the pause, a write it took would be acknowledged by a
/// replica still following it and then resynced away. When `from` cannot be repointed it is
/// left paused and cut off as a last resort.
pub async fn switchover<F, Fut>(
    from: Server<'_>,
    to: Server<'_>,
    move_label: F,
) -> Result<(), Error>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(), Error>>,
{
    let mut old_link = from.connect().await.map_err(|e| from.failed(e))?;
    let old = &mut old_link.con;
    pause_writes(&from, old).await?;
    let caught_up = async {
        let target = match from.observe().await?.role {
            RedisRole::Primary { offset, .. } => offset,
            RedisRole::Replica { .. } => {
                return Err(from.refused("the primary is no longer one".to_owned()));
            }
        };
        let deadline = tokio::time::Instant::now() + SWITCHOVER_CATCH_UP;
        loop {
            if to.observe().await?.role.offset() >= target {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(from.refused(format!("the heir did not reach offset {target} in time")));
            }
            pause_writes(&from, old).await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    .await;
    if let Err(e) = caught_up {
        unpause_writes(old).await;
        return Err(e);
    }
    // Each call below may take a whole timeout (connect and reply): the pause is renewed
    // before each, so it cannot run out while `to` is already a primary and `from` still
    // takes writes that a replica following it would acknowledge (issue #41.6).
    if let Err(e) = pause_writes(&from, old).await {
        unpause_writes(old).await;
        return Err(e);
    }
    if let Err(e) = to.promote().await {
        // Nothing changed hands: `from` is still the primary.
        unpause_writes(old).await;
        return Err(e);
    }
    // From here on `to` is a primary: `from` must not take another write. A renewal that
    // fails (its connection broke) changes nothing: the repoint, or the fence after it, is
    // still what stops `from` taking writes.
    let _ = pause_writes(&from, old).await;
    if let Err(e) = from.follow(to.ip, to.port).await {
        let _ = from.fence().await;
        return Err(e);
    }
    let labelled = move_label().await;
    // A replica now: writes sent to it are refused, paused or not.
    unpause_writes(old).await;
    labelled
}

/// `CLIENT PAUSE <SWITCHOVER_PAUSE_MS> WRITE`: also renews a pause already in force.
async fn pause_writes(server: &Server<'_>, con: &mut MultiplexedConnection) -> Result<(), Error> {
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(SWITCHOVER_PAUSE_MS)
        .arg("WRITE")
        .query_async::<()>(con)
        .await
        .map_err(|e| server.refused(format!("pausing writes on the primary: {e}")))
}

/// `CLIENT UNPAUSE`, best effort (the pause runs out by itself).
async fn unpause_writes(con: &mut MultiplexedConnection) {
    let _: redis::RedisResult<()> = redis::cmd("CLIENT").arg("UNPAUSE").query_async(con).await;
}
