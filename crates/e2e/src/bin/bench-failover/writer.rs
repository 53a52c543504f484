//! The writer: `SET k<n> <n>` + `WAIT 1 1000` in a loop, to the `<name>` Service or to the
//! master the sentinels name; each acknowledgement recorded as an [`e2e::history::Ack`] whose
//! server is the run_id of the redis-server that gave it (a restarted process is another
//! server, on the same address).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use controller::redis_server::TlsClient;
use e2e::history::{Ack, History};
use redis::aio::MultiplexedConnection;

use crate::redis_io::{connect, info_field, key};
use crate::{MASTER, OUTAGE_LIMIT, RETRY};

/// Where the writer writes.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// One address: the `<name>` Service's ClusterIP, which follows the primary (over TLS with
    /// `tls`).
    Direct {
        host: String,
        port: u16,
        tls: Option<TlsClient>,
    },
    /// Ask the sentinels for the master (the first that answers), and check that it says it is
    /// one, as a sentinel-aware client does; ask again after any error.
    Sentinels { ports: Vec<u16> },
}

impl Target {
    /// A connection to where writes go, and the run_id of the redis-server behind it.
    pub(crate) async fn connect(&self) -> Result<(MultiplexedConnection, Arc<str>), String> {
        let (host, port, tls) = match self {
            Target::Direct { host, port, tls } => (host.clone(), *port, tls.as_ref()),
            Target::Sentinels { ports } => {
                let (host, port) = master_from_sentinels(ports).await?;
                (host, port, None)
            }
        };
        let mut con = connect(&host, port, tls).await?;
        if matches!(self, Target::Sentinels { .. }) {
            let role = info_field(&mut con, "replication", "role").await?;
            if role != "master" {
                return Err(format!("{host}:{port} is a {role}"));
            }
        }
        let id = info_field(&mut con, "server", "run_id").await?;
        Ok((con, Arc::from(id)))
    }
}

/// The master's address as the first sentinel that answers has it.
pub(crate) async fn master_from_sentinels(ports: &[u16]) -> Result<(String, u16), String> {
    let mut errors = Vec::new();
    for port in ports {
        match sentinel_master(*port).await {
            Ok(address) => return Ok(address),
            Err(e) => errors.push(e),
        }
    }
    Err(errors.join("; "))
}

pub(crate) async fn sentinel_master(port: u16) -> Result<(String, u16), String> {
    let mut con = connect("127.0.0.1", port, None).await?;
    let address: Option<Vec<String>> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(MASTER)
        .query_async(&mut con)
        .await
        .map_err(|e| format!("sentinel {port}: {e}"))?;
    match address.as_deref() {
        Some([host, master_port]) => master_port
            .parse()
            .map(|p| (host.clone(), p))
            .map_err(|_| format!("sentinel {port}: bad port {master_port}")),
        _ => Err(format!("sentinel {port}: no master {MASTER}")),
    }
}

/// What the writer saw: every acknowledged write (its server a run_id), and when writes were
/// refused or failed (or WAIT found no replica).
#[derive(Default)]
pub(crate) struct Journal {
    history: History,
    failures: Vec<Instant>,
}

impl Journal {
    fn failed(&mut self, at: Instant) {
        self.history.unacknowledged += 1;
        self.failures.push(at);
    }
}

pub(crate) struct Writer {
    stop: Arc<AtomicBool>,
    journal: Arc<Mutex<Journal>>,
    task: tokio::task::JoinHandle<()>,
}

impl Writer {
    pub(crate) fn start(target: Target, interval: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let journal = Arc::new(Mutex::new(Journal::default()));
        let (flag, log) = (stop.clone(), journal.clone());
        let task = tokio::spawn(async move {
            let mut n = 0u64;
            let mut current: Option<(MultiplexedConnection, Arc<str>)> = None;
            while !flag.load(Ordering::Relaxed) {
                let Some((con, server)) = current.as_mut() else {
                    match target.connect().await {
                        Ok(connected) => current = Some(connected),
                        Err(_) => tokio::time::sleep(RETRY).await,
                    }
                    continue;
                };
                n += 1;
                let started = Instant::now();
                let key = key(n);
                let written: redis::RedisResult<()> =
                    redis::cmd("SET").arg(&key).arg(n).query_async(con).await;
                let replicas: redis::RedisResult<i64> = match written {
                    Ok(()) => redis::cmd("WAIT").arg(1).arg(1000).query_async(con).await,
                    Err(e) => Err(e),
                };
                let at = Instant::now();
                let server = server.to_string();
                let broken = {
                    let mut journal = log.lock().unwrap_or_else(PoisonError::into_inner);
                    match replicas {
                        Ok(r) if r >= 1 => {
                            journal.history.acks.push(Ack {
                                key,
                                value: n,
                                server,
                                sent: started,
                                acked: at,
                            });
                            false
                        }
                        Ok(_) => {
                            journal.failed(at);
                            false
                        }
                        Err(_) => {
                            journal.failed(at);
                            true
                        }
                    }
                };
                if broken {
                    current = None;
                }
                let pause = if current.is_some() { interval } else { RETRY };
                tokio::time::sleep(pause).await;
            }
        });
        Writer {
            stop,
            journal,
            task,
        }
    }

    pub(crate) fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the first write that started at or after `since` was acknowledged by a
    /// redis-server other than `not` (bounded by [`OUTAGE_LIMIT`]).
    pub(crate) async fn wait_writable(&self, since: Instant, not: &str) -> Option<Instant> {
        while since.elapsed() < OUTAGE_LIMIT {
            let found = self
                .journal()
                .history
                .acks
                .iter()
                .rev()
                .take_while(|a| a.sent >= since)
                .filter(|a| a.server != not)
                .map(|a| a.acked)
                .min();
            if found.is_some() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    pub(crate) fn failures_between(&self, from: Instant, to: Instant) -> usize {
        self.journal()
            .failures
            .iter()
            .filter(|t| **t >= from && **t <= to)
            .count()
    }

    pub(crate) fn acked_keys(&self) -> Vec<u64> {
        self.journal()
            .history
            .acks
            .iter()
            .map(|a| a.value)
            .collect()
    }

    /// Stops it; (acknowledged keys, failed writes).
    pub(crate) async fn stop(mut self) -> (Vec<u64>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.task).await;
        let journal = self.journal.lock().unwrap_or_else(PoisonError::into_inner);
        (
            journal.history.acks.iter().map(|a| a.value).collect(),
            journal.failures.len(),
        )
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.abort();
    }
}
