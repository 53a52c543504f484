//! The controller's redis-server client against real redis-server processes on 127.0.0.1 (the
//! machine's, installed by hack/cluster/node/packages.sh), where the order of its I/O decides
//! whether an acknowledged write survives (DESIGN §9.4).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use controller::redis_server::{Server, switchover};
use e2e::Error;
use e2e::local_redis::LocalRedis;

/// A redis-server without persistence, replica of `primary` when given; not waited for.
fn replica_of(primary: Option<u16>) -> Result<LocalRedis, Error> {
    let builder = LocalRedis::builder().no_persistence();
    match primary {
        Some(port) => builder.replica_of(port),
        None => builder,
    }
    .spawn()
}

async fn connection(redis: &LocalRedis) -> Result<redis::aio::MultiplexedConnection, Error> {
    redis
        .connection()
        .await
        .map_err(|e| Error::process(format!("connecting to :{}", redis.port), e))
}

/// A primary `a` with two replicas, `b` (the heir of a switchover) and `c` (still following `a`
/// after it, as a replica the next pass repoints), and a writer on `a`.
struct Three {
    a: LocalRedis,
    b: LocalRedis,
    c: LocalRedis,
    stop: Arc<AtomicBool>,
    writer: tokio::task::JoinHandle<BTreeSet<u64>>,
}

impl Three {
    async fn start() -> Result<Self, Error> {
        let a = replica_of(None)?;
        a.wait_answering(None, None).await?;
        let b = replica_of(Some(a.port))?;
        let c = replica_of(Some(a.port))?;
        b.wait_linked().await?;
        c.wait_linked().await?;
        // A writer on the old primary: SET + WAIT 1, as a client that keeps its connection.
        let stop = Arc::new(AtomicBool::new(false));
        let writer = tokio::spawn(acknowledged_writes(connection(&a).await?, stop.clone()));
        tokio::time::sleep(Duration::from_millis(500)).await;
        Ok(Three {
            a,
            b,
            c,
            stop,
            writer,
        })
    }

    /// After a switchover from `a` to `b`: stops the writer, repoints `c` to `b` as the next
    /// pass would, and checks that `b` has every write that was acknowledged.
    async fn check_nothing_lost(self) -> Result<(), Error> {
        let Three {
            b, c, stop, writer, ..
        } = self;
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
        let mut heir = connection(&b).await?;
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
}

/// SET + WAIT 1 until `stop`, as a client that keeps its connection: the numbers of the writes
/// at least one replica acknowledged.
async fn acknowledged_writes(
    mut con: redis::aio::MultiplexedConnection,
    stop: Arc<AtomicBool>,
) -> BTreeSet<u64> {
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

/// A planned switchover whose label move outlasts the old primary's write pause (an API server
/// slow to take the PATCH): a third server still follows the old primary, so a write the old
/// primary takes after its pause ran out would be acknowledged by `WAIT 1` and then resynced
/// away. The old primary must follow the heir before the labels move, so it takes none.
#[tokio::test]
async fn a_switchover_whose_label_move_outlasts_the_pause_loses_no_acknowledged_write()
-> Result<(), Error> {
    let three = Three::start().await?;
    // The label move takes longer than the 5 s pause.
    let slow_label_move = || async {
        tokio::time::sleep(Duration::from_secs(7)).await;
        Ok(())
    };
    switchover(three.a.server("a"), three.b.server("b"), slow_label_move)
        .await
        .map_err(|e| Error::process("the switchover", e.to_string()))?;
    three.check_nothing_lost().await
}

/// A TCP proxy on 127.0.0.1 that holds every chunk the server sends back for `delay` before
/// passing it on: a heir on a slow node, each reply under the controller's 2 s timeout.
async fn slow_replies_to(upstream: u16, delay: Duration) -> Result<u16, Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::process("binding the proxy", e.to_string()))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::process("the proxy's port", e.to_string()))?
        .port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let requests = tokio::io::copy(&mut client_read, &mut server_write);
                let replies = async {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let mut buffer = vec![0u8; 64 * 1024];
                    loop {
                        let n = server_read.read(&mut buffer).await?;
                        if n == 0 {
                            return Ok::<(), std::io::Error>(());
                        }
                        tokio::time::sleep(delay).await;
                        client_write.write_all(&buffer[..n]).await?;
                    }
                };
                let _ = tokio::join!(requests, replies);
            });
        }
    });
    Ok(port)
}

/// A planned switchover to a heir whose every reply takes 0.9 s (a loaded node): reading it
/// (four `INFO`s and a `CONFIG GET`) and promoting it take longer than the old primary's 5 s
/// write pause. The pause must be renewed up to the moment the old primary follows the heir:
/// a write it took after its pause ran out, with the heir already promoted, is acknowledged by
/// `WAIT 1` through the third server still following it and then resynced away (issue #41.6).
#[tokio::test]
async fn a_switchover_to_a_slow_heir_keeps_writes_paused_until_the_old_primary_follows()
-> Result<(), Error> {
    let three = Three::start().await?;
    let slow_b = slow_replies_to(three.b.port, Duration::from_millis(900)).await?;
    let heir = Server {
        port: slow_b,
        ..three.b.server("b")
    };
    switchover(three.a.server("a"), heir, || async { Ok(()) })
        .await
        .map_err(|e| Error::process("the switchover", e.to_string()))?;
    three.check_nothing_lost().await
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
    let primary = replica_of(None)?;
    primary.wait_answering(None, None).await?;
    let replica = replica_of(Some(primary.port))?;
    replica.wait_linked().await?;
    let mut con = connection(&primary).await?;
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
