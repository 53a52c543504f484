//! The reference: Redis Sentinel (Debian's redis-sentinel) and redis-server as processes on
//! 127.0.0.1, the master killed each round and restarted at once or after the failover.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2e::bench::progress;
use e2e::{Error, wait_for};
use redis::aio::MultiplexedConnection;

use crate::redis_io::{connect, missing, run_id};
use crate::results::{Part, Round};
use crate::writer::{Target, Writer, master_from_sentinels, sentinel_master};
use crate::{Args, CONVERGE, MASTER, OUTAGE_LIMIT};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Restart {
    /// Like kubelet restarting a container: the killed master comes back at once, empty.
    AtOnce,
    /// Like a supervisor that waits for the failover: the killed master comes back once
    /// another is writable, and sentinel makes it a replica.
    AfterFailover,
}

impl Restart {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Restart::AtOnce => "killed and restarted at once",
            Restart::AfterFailover => "killed and restarted after failover",
        }
    }
}

/// A redis-server of the sentinel setup: its port and config file (which sentinel rewrites).
pub(crate) struct Server {
    port: u16,
    config: PathBuf,
    child: Option<Child>,
}

/// 3 redis-servers and 3 sentinels in a temporary directory: everything stopped and the
/// directory removed when dropped.
pub(crate) struct SentinelBed {
    dir: PathBuf,
    servers: Vec<Server>,
    sentinels: Vec<Child>,
    sentinel_ports: Vec<u16>,
}

impl Drop for SentinelBed {
    fn drop(&mut self) {
        let children = self
            .servers
            .iter_mut()
            .filter_map(|s| s.child.as_mut())
            .chain(self.sentinels.iter_mut());
        for child in children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn spawn(program: &str, config: &std::path::Path, log: PathBuf) -> Result<Child, Error> {
    let out = File::options()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| Error::process(format!("creating {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| Error::process(format!("opening {}", log.display()), e))?;
    Command::new(program)
        .arg(config)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| {
            Error::process(
                format!("starting {program} (hack/cluster/node/packages.sh installs it)"),
                e,
            )
        })
}

pub(crate) fn write_file(path: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::process(format!("writing {}", path.display()), e))
}

/// Six distinct free ports on 127.0.0.1.
pub(crate) fn free_ports(n: usize) -> Result<Vec<u16>, Error> {
    let mut ports = Vec::new();
    for _ in 0..100 {
        let port = e2e::operator::free_port()?;
        if !ports.contains(&port) {
            ports.push(port);
        }
        if ports.len() == n {
            return Ok(ports);
        }
    }
    Err(Error::process(
        "finding free ports",
        "the same ports came back",
    ))
}

impl SentinelBed {
    pub(crate) fn start(down_after: Duration, restart: Restart) -> Result<Self, Error> {
        let tag = match restart {
            Restart::AtOnce => "at-once",
            Restart::AfterFailover => "after",
        };
        let dir = std::env::temp_dir().join(format!(
            "bench-failover-sentinel-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::process(format!("creating {}", dir.display()), e))?;
        let ports = free_ports(6)?;
        let (server_ports, sentinel_ports) = ports.split_at(3);
        let mut bed = SentinelBed {
            dir: dir.clone(),
            servers: Vec::new(),
            sentinels: Vec::new(),
            sentinel_ports: sentinel_ports.to_vec(),
        };
        let master = server_ports[0];
        for (i, port) in server_ports.iter().enumerate() {
            let data = dir.join(format!("server-{i}"));
            std::fs::create_dir_all(&data)
                .map_err(|e| Error::process(format!("creating {}", data.display()), e))?;
            let replica_of = if i == 0 {
                String::new()
            } else {
                format!("replicaof 127.0.0.1 {master}\n")
            };
            let config = dir.join(format!("server-{i}.conf"));
            write_file(
                &config,
                &format!(
                    "bind 127.0.0.1\nport {port}\ndaemonize no\nlogfile \"\"\nsave \"\"\n\
                     appendonly no\ndir {}\n{replica_of}",
                    data.display()
                ),
            )?;
            bed.servers.push(Server {
                port: *port,
                config,
                child: None,
            });
            bed.start_server(i)?;
        }
        let down_ms = down_after.as_millis().max(1);
        let failover_timeout = (down_ms * 3).max(10_000);
        for (i, port) in sentinel_ports.iter().enumerate() {
            let config = dir.join(format!("sentinel-{i}.conf"));
            write_file(
                &config,
                &format!(
                    "bind 127.0.0.1\nport {port}\ndaemonize no\nlogfile \"\"\ndir {}\n\
                     sentinel monitor {MASTER} 127.0.0.1 {master} 2\n\
                     sentinel down-after-milliseconds {MASTER} {down_ms}\n\
                     sentinel failover-timeout {MASTER} {failover_timeout}\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    dir.display()
                ),
            )?;
            let child = spawn(
                "redis-sentinel",
                &config,
                dir.join(format!("sentinel-{i}.log")),
            )?;
            bed.sentinels.push(child);
        }
        Ok(bed)
    }

    pub(crate) fn start_server(&mut self, i: usize) -> Result<(), Error> {
        let log = self.dir.join(format!("server-{i}.log"));
        let server = &mut self.servers[i];
        server.child = Some(spawn("redis-server", &server.config, log)?);
        Ok(())
    }

    /// SIGKILL, as a crash would.
    pub(crate) fn kill_server(&mut self, i: usize) {
        if let Some(mut child) = self.servers[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn index_of(&self, port: u16) -> Result<usize, Error> {
        self.servers
            .iter()
            .position(|s| s.port == port)
            .ok_or_else(|| Error::process("the sentinels' master", format!("unknown port {port}")))
    }

    /// Waits until the three sentinels agree on a master (other than port `not`), know each
    /// other and its two replicas as healthy, and the master has both replicas online.
    pub(crate) async fn wait_replicating(&self, not: Option<u16>) -> Result<u16, Error> {
        wait_for(
            &format!("sentinel setup replicating a master other than {not:?}"),
            CONVERGE,
            || async {
                let mut master = None;
                for port in &self.sentinel_ports {
                    let (_, m) = sentinel_master(*port).await?;
                    if master.is_some_and(|x| x != m) {
                        return Err(format!("sentinels disagree: {master:?} vs {m}"));
                    }
                    master = Some(m);
                    let mut con = connect("127.0.0.1", *port, None).await?;
                    let replicas = sentinel_list(&mut con, "replicas").await?;
                    let healthy = replicas
                        .iter()
                        .filter(|r| {
                            field(r, "flags") == Some("slave")
                                && field(r, "master-link-status") == Some("ok")
                        })
                        .count();
                    let others = sentinel_list(&mut con, "sentinels").await?.len();
                    if healthy != 2 || others != 2 {
                        return Err(format!(
                            "sentinel {port}: {healthy} healthy replicas, knows {others} other \
                             sentinels"
                        ));
                    }
                }
                let master = master.ok_or("no sentinel")?;
                if Some(master) == not {
                    return Err(format!("the master is still {master}"));
                }
                let mut con = connect("127.0.0.1", master, None).await?;
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut con)
                    .await
                    .map_err(|e| e.to_string())?;
                let online = info
                    .lines()
                    .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                    .count();
                if info.contains("role:master") && online == 2 {
                    Ok(master)
                } else {
                    Err(format!("master {master}: {online} replicas online"))
                }
            },
        )
        .await
    }
}

/// `SENTINEL replicas|sentinels <master>`: one list of alternating names and values each.
pub(crate) async fn sentinel_list(
    con: &mut MultiplexedConnection,
    what: &str,
) -> Result<Vec<Vec<String>>, String> {
    redis::cmd("SENTINEL")
        .arg(what)
        .arg(MASTER)
        .query_async(con)
        .await
        .map_err(|e| format!("SENTINEL {what}: {e}"))
}

pub(crate) fn field<'a>(pairs: &'a [String], name: &str) -> Option<&'a str> {
    pairs
        .chunks(2)
        .find(|kv| kv.first().map(String::as_str) == Some(name))
        .and_then(|kv| kv.get(1))
        .map(String::as_str)
}

pub(crate) async fn sentinel_part(
    args: &Args,
    down_after: Duration,
    restart: Restart,
) -> Result<Part, Error> {
    progress(format!(
        "starting the sentinel setup ({})",
        restart.describe()
    ));
    let mut bed = SentinelBed::start(down_after, restart)?;
    let master = bed.wait_replicating(None).await?;
    let mut part = Part::new(format!("sentinel, {}", restart.describe()));
    let writer = Writer::start(
        Target::Sentinels {
            ports: bed.sentinel_ports.clone(),
        },
        Duration::from_millis(args.write_interval_ms),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (master, missing_before) = part
        .run_rounds(args.rounds, master, async |master, missing_before| {
            sentinel_round(&mut bed, restart, &writer, *master, missing_before).await
        })
        .await;
    let (acked, failed) = writer.stop().await;
    let lost = missing("127.0.0.1", master, None, &acked)
        .await
        .map(|m| m.len());
    part.finish(
        &format!("127.0.0.1:{master}"),
        acked.len(),
        lost,
        missing_before.len(),
        failed,
    );
    drop(bed);
    Ok(part)
}

pub(crate) async fn sentinel_round(
    bed: &mut SentinelBed,
    restart: Restart,
    writer: &Writer,
    master: u16,
    missing_before: &BTreeSet<u64>,
) -> Result<(Round, u16, BTreeSet<u64>), Error> {
    let victim = bed.index_of(master)?;
    let victim_id = run_id("127.0.0.1", master, None)
        .await
        .map_err(|e| Error::process(format!("run_id of 127.0.0.1:{master}"), e))?;
    progress(format!("killing the master 127.0.0.1:{master}"));
    let killed = Instant::now();
    bed.kill_server(victim);
    if restart == Restart::AtOnce {
        bed.start_server(victim)?;
    }
    let writable = writer.wait_writable(killed, &victim_id).await;
    let refused = writer.failures_between(killed, writable.unwrap_or_else(Instant::now));
    let not = match restart {
        Restart::AtOnce => None,
        Restart::AfterFailover => {
            // The writer may have found a new master before all sentinels agree on it.
            let ports = bed.sentinel_ports.clone();
            let _ = wait_for("the sentinels' failover", OUTAGE_LIMIT, || async {
                match master_from_sentinels(&ports).await {
                    Ok((_, port)) if port != master => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            })
            .await;
            bed.start_server(victim)?;
            Some(master)
        }
    };
    let next = bed.wait_replicating(not).await?;
    let keys = writer.acked_keys();
    let missing_now = missing("127.0.0.1", next, None, &keys)
        .await
        .map_err(|e| Error::process("checking acknowledged writes", e))?;
    let round = Round {
        victim: format!("127.0.0.1:{master}"),
        successor: format!("127.0.0.1:{next}"),
        writable: writable.map(|at| at - killed),
        refused,
        lost_now: missing_now.difference(missing_before).count(),
        acked_so_far: keys.len(),
    };
    Ok((round, next, missing_now))
}
