//! A redis-server process on 127.0.0.1 (the machine's, installed by
//! hack/cluster/node/packages.sh) for the io-level tests, killed when dropped (no snapshot
//! written then). One builder for every kind the tests start: Redis's defaults but the options
//! given, without persistence, a replica, TLS only from files, a config read on stdin (as the
//! pods' launcher starts it); always in working directory /tmp.
//!
//! ```no_run
//! # async fn f() -> Result<(), e2e::Error> {
//! use e2e::local_redis::LocalRedis;
//! let primary = LocalRedis::builder().no_persistence().spawn()?;
//! let replica = LocalRedis::builder().no_persistence().replica_of(primary.port).spawn()?;
//! replica.wait_linked().await?;
//! # Ok(()) }
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use controller::redis_server::{Login, Server};

use crate::operator::free_port;
use crate::{Error, wait_for};

/// How long a started redis-server may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(30);

pub struct LocalRedis {
    pub port: u16,
    child: Child,
}

/// What a [`LocalRedis`] is started with; [`LocalRedis::builder`].
#[derive(Default)]
pub struct Builder {
    no_persistence: bool,
    replica_of: Option<u16>,
    tls: Option<(PathBuf, String)>,
    config: Option<String>,
    options: Vec<String>,
}

impl Builder {
    /// `--save "" --appendonly no`.
    pub fn no_persistence(mut self) -> Self {
        self.no_persistence = true;
        self
    }

    /// `--replicaof 127.0.0.1 <primary>`.
    pub fn replica_of(mut self, primary: u16) -> Self {
        self.replica_of = Some(primary);
        self
    }

    /// TLS only (`--port 0`, the port is the TLS port), from ca.crt, tls.crt and tls.key in
    /// `dir`; `--tls-auth-clients <auth_clients>`.
    pub fn tls(mut self, dir: &Path, auth_clients: &str) -> Self {
        self.tls = Some((dir.to_owned(), auth_clients.to_owned()));
        self
    }

    /// The config file's text, given on stdin (`redis-server -`).
    pub fn config_on_stdin(mut self, config: &str) -> Self {
        self.config = Some(config.to_owned());
        self
    }

    /// Options after all the others.
    pub fn options(mut self, options: &[String]) -> Self {
        self.options.extend_from_slice(options);
        self
    }

    /// redis-server's command line for `port`.
    fn args(&self, port: u16) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        let mut push = |words: &[&str]| args.extend(words.iter().map(|w| (*w).to_owned()));
        if self.config.is_some() {
            push(&["-"]);
        }
        let port = port.to_string();
        match &self.tls {
            Some(_) => push(&["--port", "0", "--tls-port", &port]),
            None => push(&["--port", &port]),
        }
        push(&["--bind", "127.0.0.1"]);
        if self.no_persistence {
            push(&["--save", "", "--appendonly", "no"]);
        }
        push(&["--dir", "/tmp"]);
        if let Some((dir, auth_clients)) = &self.tls {
            let file = |name: &str| dir.join(name).display().to_string();
            push(&["--tls-cert-file", &file("tls.crt")]);
            push(&["--tls-key-file", &file("tls.key")]);
            push(&["--tls-ca-cert-file", &file("ca.crt")]);
            push(&["--tls-auth-clients", auth_clients]);
        }
        if let Some(primary) = self.replica_of {
            push(&["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        args.extend(self.options.iter().cloned());
        args
    }

    /// Starts it on a free port, without waiting for it to answer.
    pub fn spawn(self) -> Result<LocalRedis, Error> {
        let port = free_port()?;
        let mut child = Command::new("redis-server")
            .args(self.args(port))
            .stdin(if self.config.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                Error::process(
                    "starting redis-server (hack/cluster/node/packages.sh installs it)",
                    e,
                )
            })?;
        if let Some(config) = &self.config {
            let mut stdin = child
                .stdin
                .take()
                .ok_or_else(|| Error::process("redis-server's stdin", "not piped"))?;
            stdin
                .write_all(config.as_bytes())
                .map_err(|e| Error::process("writing redis-server's config", e))?;
        }
        Ok(LocalRedis { port, child })
    }

    /// Starts it and waits until it answers PING (plaintext, no login).
    pub async fn start(self) -> Result<LocalRedis, Error> {
        let server = self.spawn()?;
        server.wait_answering(None, None).await?;
        Ok(server)
    }
}

impl LocalRedis {
    /// What to start.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Starts `redis-server --port <free> --bind 127.0.0.1 --dir /tmp <options>` and waits until
    /// it answers PING.
    pub async fn start(options: &[String]) -> Result<Self, Error> {
        Self::builder().options(options).start().await
    }

    /// A new connection (no login).
    pub async fn connection(&self) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        self.login(None, None).await
    }

    /// A connection logged in as `user` (the default user: `None`) with `password`.
    pub async fn login(
        &self,
        user: Option<&str>,
        password: Option<&str>,
    ) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        // The tests' names and passwords are letters, digits and '-': nothing to escape.
        let url = match (user, password) {
            (None, None) => format!("redis://127.0.0.1:{}/", self.port),
            _ => format!(
                "redis://{}:{}@127.0.0.1:{}/",
                user.unwrap_or(""),
                password.unwrap_or(""),
                self.port
            ),
        };
        redis::Client::open(url)?
            .get_multiplexed_async_connection()
            .await
    }

    /// The controller's client for it as pod `pod` (no login, no TLS).
    pub fn server<'a>(&self, pod: &'a str) -> Server<'a> {
        Server {
            pod,
            ip: "127.0.0.1",
            port: self.port,
            login: Login::default(),
            tls: None,
        }
    }

    /// Waits (30 s) until it answers PING, logged in as `user` with `password` when given.
    pub async fn wait_answering(
        &self,
        user: Option<&str>,
        password: Option<&str>,
    ) -> Result<(), Error> {
        wait_for(
            &format!("redis-server :{}", self.port),
            START_TIMEOUT,
            || async {
                let mut con = self
                    .login(user, password)
                    .await
                    .map_err(|e| e.to_string())?;
                redis::cmd("PING")
                    .query_async::<String>(&mut con)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            },
        )
        .await
    }

    /// Waits (30 s) until it answers and, as a replica, its link to its primary is up.
    pub async fn wait_linked(&self) -> Result<(), Error> {
        wait_for(
            &format!("redis-server :{}", self.port),
            START_TIMEOUT,
            || async {
                let mut con = self.connection().await.map_err(|e| e.to_string())?;
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut con)
                    .await
                    .map_err(|e| e.to_string())?;
                if !info.contains("master_link_status:up") {
                    return Err(info);
                }
                Ok(())
            },
        )
        .await
    }

    /// `CONFIG GET name`: its value.
    pub async fn config_get(&self, name: &str) -> Result<String, Error> {
        let mut con = self
            .connection()
            .await
            .map_err(|e| Error::process("connecting", e))?;
        let pair: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(&mut con)
            .await
            .map_err(|e| Error::process(format!("CONFIG GET {name}"), e))?;
        pair.get(1)
            .cloned()
            .ok_or_else(|| Error::process(format!("CONFIG GET {name}"), "no such directive"))
    }
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_lines_are_the_ones_the_tests_started_by_hand() {
        let words = |b: Builder| b.args(7000).join(" ");
        assert_eq!(
            words(LocalRedis::builder().options(&["--appendonly".into(), "yes".into()])),
            "--port 7000 --bind 127.0.0.1 --dir /tmp --appendonly yes"
        );
        assert_eq!(
            words(LocalRedis::builder().no_persistence().replica_of(6999)),
            "--port 7000 --bind 127.0.0.1 --save  --appendonly no --dir /tmp --replicaof \
             127.0.0.1 6999"
        );
        assert_eq!(
            words(LocalRedis::builder().no_persistence().config_on_stdin("")),
            "- --port 7000 --bind 127.0.0.1 --save  --appendonly no --dir /tmp"
        );
        assert_eq!(
            words(
                LocalRedis::builder()
                    .no_persistence()
                    .tls(Path::new("/d"), "no")
            ),
            "--port 0 --tls-port 7000 --bind 127.0.0.1 --save  --appendonly no --dir /tmp \
             --tls-cert-file /d/tls.crt --tls-key-file /d/tls.key --tls-ca-cert-file /d/ca.crt \
             --tls-auth-clients no"
        );
    }
}
