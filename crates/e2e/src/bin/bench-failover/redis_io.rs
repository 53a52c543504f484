//! Talking to a redis-server: a connection (over TLS when asked), a field of INFO, its run_id,
//! the acknowledged keys it lacks.

use std::collections::BTreeSet;

use controller::redis_server::TlsClient;
use redis::aio::MultiplexedConnection;

use crate::{CONNECT_TIMEOUT, RESPONSE_TIMEOUT};

/// A connection to `host:port`; over TLS with `tls` (the controller's own client: the Redis's CA,
/// the name `<name>.<namespace>.svc` whatever the address).
pub(crate) async fn connect(
    host: &str,
    port: u16,
    tls: Option<&TlsClient>,
) -> Result<MultiplexedConnection, String> {
    if let Some(tls) = tls {
        let config =
            redis::AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
        let opened = async {
            let stream = tokio::net::TcpStream::connect((host, port))
                .await
                .map_err(|e| e.to_string())?;
            let stream = tls.handshake(stream).await.map_err(|e| e.to_string())?;
            let (con, driver) = MultiplexedConnection::new_with_config(
                &redis::RedisConnectionInfo::default(),
                stream,
                config,
            )
            .await
            .map_err(|e| e.to_string())?;
            // It ends when the last handle of the connection is dropped.
            tokio::spawn(driver);
            Ok::<_, String>(con)
        };
        return tokio::time::timeout(CONNECT_TIMEOUT, opened)
            .await
            .map_err(|_| format!("connecting to {host}:{port}: no TLS connection in time"))?
            .map_err(|e| format!("connecting to {host}:{port}: {e}"));
    }
    let client = redis::Client::open(format!("redis://{host}:{port}/"))
        .map_err(|e| format!("{host}:{port}: {e}"))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("connecting to {host}:{port}: {e}"))
}

/// A field of `INFO <section>`.
pub(crate) async fn info_field(
    con: &mut MultiplexedConnection,
    section: &str,
    field: &str,
) -> Result<String, String> {
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(con)
        .await
        .map_err(|e| format!("INFO {section}: {e}"))?;
    info.lines()
        .find_map(|l| l.trim().strip_prefix(field)?.strip_prefix(':'))
        .map(str::to_owned)
        .ok_or_else(|| format!("INFO {section} has no {field}"))
}

/// The run_id of the redis-server at host:port (new at each start).
pub(crate) async fn run_id(
    host: &str,
    port: u16,
    tls: Option<&TlsClient>,
) -> Result<String, String> {
    let mut con = connect(host, port, tls).await?;
    info_field(&mut con, "server", "run_id").await
}

/// The acknowledged keys that are not on host:port with their value.
pub(crate) async fn missing(
    host: &str,
    port: u16,
    tls: Option<&TlsClient>,
    keys: &[u64],
) -> Result<BTreeSet<u64>, String> {
    let mut con = connect(host, port, tls).await?;
    let written: Vec<(String, u64)> = keys.iter().map(|n| (key(*n), *n)).collect();
    let lost = e2e::history::missing_writes(&mut con, &written)
        .await
        .map_err(|e| format!("on {host}:{port}: {e}"))?;
    let lost: BTreeSet<&str> = lost.iter().map(String::as_str).collect();
    Ok(written
        .iter()
        .filter(|(k, _)| lost.contains(k.as_str()))
        .map(|(_, n)| *n)
        .collect())
}

/// The key of write `n`.
pub(crate) fn key(n: u64) -> String {
    format!("k{n}")
}
