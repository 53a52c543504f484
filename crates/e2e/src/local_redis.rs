//! A redis-server process on 127.0.0.1 (the machine's, installed by
//! hack/cluster/node/packages.sh) for the io-level tests: started with Redis's defaults but the
//! options given (working directory /tmp), killed when dropped (no snapshot written then).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::operator::free_port;
use crate::{Error, wait_for};

pub struct LocalRedis {
    pub port: u16,
    child: Child,
}

impl LocalRedis {
    /// Starts `redis-server --port <free> --bind 127.0.0.1 --dir /tmp <options>` and waits until it
    /// answers PING.
    pub async fn start(options: &[String]) -> Result<Self, Error> {
        let port = free_port()?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", "/tmp"])
            .args(options)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                Error::process(
                    "starting redis-server (hack/cluster/node/packages.sh installs it)",
                    e,
                )
            })?;
        let server = LocalRedis { port, child };
        wait_for(
            &format!("redis-server :{port}"),
            Duration::from_secs(30),
            || async {
                let mut con = server.connection().await.map_err(|e| e.to_string())?;
                redis::cmd("PING")
                    .query_async::<String>(&mut con)
                    .await
                    .map_err(|e| e.to_string())
            },
        )
        .await?;
        Ok(server)
    }

    /// A new connection (no login).
    pub async fn connection(&self) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?
            .get_multiplexed_async_connection()
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
