//! The controller's redis-server client against real redis-server processes on 127.0.0.1 (the
//! machine's, installed by hack/cluster/node/packages.sh), where the order of its I/O decides
//! whether an acknowledged write survives (DESIGN §9.4).

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use controller::redis_server::{Login, Server, switchover};
use e2e::operator::free_port;
use e2e::{Error, wait_for};

/// A redis-server on 127.0.0.1, killed when dropped.
struct RedisServer {
    port: u16,
    child: Child,
}

impl RedisServer {
    fn start(replica_of: Option<u16>) -> Result<Self, Error> {
        let port = free_port()?;
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir", "/tmp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(primary) = replica_of {
            command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        let child = command.spawn().map_err(|e| {
            Error::process(
                "starting redis-server (hack/cluster/node/packages.sh installs it)",
                e.to_string(),
            )
        })?;
        Ok(RedisServer { port, child })
    }

    fn server(&self, pod: &'static str) -> Server<'static> {
        Server {
            pod,
            ip: "127.0.0.1",
            port: self.port,
            login: Login::default(),
            tls: None,
        }
    }

    async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, Error> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .map_err(|e| Error::process("redis client", e.to_string()))?;
        client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| Error::process(format!("connecting to :{}", self.port), e.to_string()))
    }

    /// Waits until it answers and, as a replica, is linked.
    async fn wait_up(&self, linked: bool) -> Result<(), Error> {
        wait_for(
            &format!("redis-server :{}", self.port),
            Duration::from_secs(30),
            || async {
                let mut con = self.connection().await.map_err(|e| e.to_string())?;
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut con)
                    .await
                    .map_err(|e| e.to_string())?;
                if linked && !info.contains("master_link_status:up") {
                    return Err(info);
                }
                Ok(())
            },
        )
        .await
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A planned switchover whose label move outlasts the old primary's write pause (an API server
/// slow to take the PATCH): a third server still follows the old primary, so a write the old
/// primary takes after its pause ran out would be acknowledged by `WAIT 1` and then resynced
/// away. The old primary must follow the heir before the labels move, so it takes none.
#[tokio::test]
async fn a_switchover_whose_label_move_outlasts_the_pause_loses_no_acknowledged_write()
-> Result<(), Error> {
    let a = RedisServer::start(None)?;
    a.wait_up(false).await?;
    let b = RedisServer::start(Some(a.port))?;
    let c = RedisServer::start(Some(a.port))?;
    b.wait_up(true).await?;
    c.wait_up(true).await?;

    // A writer on the old primary: SET + WAIT 1, as a client that keeps its connection.
    let stop = Arc::new(AtomicBool::new(false));
    let mut con = a.connection().await?;
    let writer = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut acked = BTreeSet::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let written: redis::RedisResult<()> = redis::cmd("SET")
                    .arg(format!("k{n}"))
                    .arg(n)
                    .query_async(&mut con)
                    .await;
                let replicas: redis::RedisResult<i64> = match written {
                    Ok(()) => {
                        redis::cmd("WAIT")
                            .arg(1)
                            .arg(200)
                            .query_async(&mut con)
                            .await
                    }
                    Err(e) => Err(e),
                };
                match replicas {
                    Ok(r) if r >= 1 => {
                        acked.insert(n);
                    }
                    _ => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
            acked
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The label move takes longer than the 5 s pause.
    let slow_label_move = || async {
        tokio::time::sleep(Duration::from_secs(7)).await;
        Ok(())
    };
    switchover(a.server("a"), b.server("b"), slow_label_move)
        .await
        .map_err(|e| Error::process("the switchover", e.to_string()))?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let acked = writer
        .await
        .map_err(|e| Error::process("the writer", e.to_string()))?;
    // The next pass repoints the third server to the new primary.
    c.server("c")
        .follow("127.0.0.1", b.port)
        .await
        .map_err(|e| Error::process("repointing c", e.to_string()))?;

    assert!(
        acked.len() > 10,
        "too few writes acknowledged: {}",
        acked.len()
    );
    let mut heir = b.connection().await?;
    let written: Vec<(String, u64)> = acked.iter().map(|n| (format!("k{n}"), *n)).collect();
    let lost = e2e::history::missing_writes(&mut heir, &written).await?;
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost: {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(20)]
    );
    Ok(())
}

/// A failover whose pass ends after the promotion (a replica to repoint was still loading its
/// dataset) leaves the promoted server unlabelled; the next pass cuts it off the stream it now
/// leads, as it cuts every server off before choosing. Redis then says its link never was
/// (`master_link_down_since_seconds:-1`, as for a new server), and a chaos run found every
/// data-holding server in that state with no candidate left: no primary until someone stepped
/// in. The server promoted and cut must still count as holding its data.
#[tokio::test]
async fn a_server_promoted_then_cut_off_still_counts_as_holding_its_data() -> Result<(), Error> {
    use controller::redis_server::info::RedisRole;
    let primary = RedisServer::start(None)?;
    primary.wait_up(false).await?;
    let replica = RedisServer::start(Some(primary.port))?;
    replica.wait_up(true).await?;
    let mut con = primary.connection().await?;
    for n in 0..100 {
        let () = redis::cmd("SET")
            .arg(format!("k{n}"))
            .arg(n)
            .query_async(&mut con)
            .await
            .map_err(|e| Error::process("SET", e.to_string()))?;
    }
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query_async(&mut con)
        .await
        .map_err(|e| Error::process("WAIT", e.to_string()))?;
    assert_eq!(acked, 1, "the replica has every write");
    drop(primary);

    let server = replica.server("replica");
    server
        .promote()
        .await
        .map_err(|e| Error::process("promote", e.to_string()))?;
    server
        .fence()
        .await
        .map_err(|e| Error::process("fence", e.to_string()))?;
    let observed = server
        .observe()
        .await
        .map_err(|e| Error::process("observe", e.to_string()))?;
    assert_eq!(observed.keys, 100);
    match observed.role {
        RedisRole::Replica { linked, offset, .. } => {
            assert!(offset > 0, "offset {offset}");
            assert!(
                linked,
                "a promoted server cut off again keeps its data: {observed:?}"
            );
        }
        other => panic!("fenced, it is a replica: {other:?}"),
    }
    Ok(())
}
