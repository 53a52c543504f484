//! The history of a write workload, Jepsen's way: writers of unique keys with `SET` + `WAIT 1`
//! through a Service, each acknowledgement recorded with the pod that gave it and when; checks
//! over the whole history at the end (every acknowledged key present with its value, no two
//! pods acknowledging as primary at once). Used by the chaos and node-loss tests.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::Error;

/// One write a writer saw acknowledged by `WAIT 1`: its key and value, the pod IP that
/// acknowledged it, and when it was sent and acknowledged.
#[derive(Debug, Clone)]
pub struct Ack {
    pub key: String,
    pub value: u64,
    /// The IP of the pod that acknowledged it.
    pub server: String,
    pub sent: Instant,
    pub acked: Instant,
}

#[derive(Default)]
pub struct History {
    pub acks: Vec<Ack>,
    /// Writes refused or not acknowledged by a replica (not promised, so not checked).
    pub unacknowledged: u64,
    /// Writes a pinned writer sent to a server that refused them as a replica (`READONLY`):
    /// the expected answer of every replica, kept apart from `unacknowledged`.
    pub refused: u64,
    /// What each member answered to `ROLE`, recorded when it changed
    /// ([`crate::witness`]).
    pub roles: Vec<RoleSample>,
    /// The ready endpoints of the clients' Service, recorded when they changed.
    pub endpoints: Vec<EndpointsSample>,
}

/// What a member answered to `ROLE` at `at`, dialled at `server` (its pod IP).
#[derive(Debug, Clone)]
pub struct RoleSample {
    pub at: Instant,
    pub member: String,
    pub server: String,
    pub role: Role,
}

/// A `ROLE` answer, or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// `master`, listing this many replicas.
    Master { replicas: usize },
    /// `slave` of `of` (`127.0.0.1:1`: fenced), its link `state` (`connected`, `sync`, ...).
    Replica { of: String, state: String },
    /// No answer within the sampler's timeout, or none it could read.
    Unread,
}

/// The addresses the clients' Service sent new connections to at `at` (its ready endpoints).
#[derive(Debug, Clone)]
pub struct EndpointsSample {
    pub at: Instant,
    pub ready: Vec<String>,
}

/// A time when two or more members answered `ROLE` as `master`, from the first sample that
/// made it so to the first that ended it (`None`: still so at the end of the history).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masters {
    pub from: Instant,
    pub to: Option<Instant>,
    /// The members answering master, and how many replicas each listed.
    pub members: Vec<(String, usize)>,
}

/// Every time two or more members answered `master` at once, by the samples (each member's
/// answer holds until its next sample). Not a failure by itself: an old primary back from a
/// freeze answers master until it is fenced, and acknowledges nothing without a replica; two
/// primaries *acknowledging* is [`overlapping`]'s to find.
pub fn masters_at_once(samples: &[RoleSample]) -> Vec<Masters> {
    let mut sorted: Vec<&RoleSample> = samples.iter().collect();
    sorted.sort_by_key(|s| s.at);
    let mut now: BTreeMap<&str, usize> = BTreeMap::new();
    let mut found: Vec<Masters> = Vec::new();
    for sample in sorted {
        match sample.role {
            Role::Master { replicas } => now.insert(sample.member.as_str(), replicas),
            _ => now.remove(sample.member.as_str()),
        };
        let open = found.last_mut().filter(|m| m.to.is_none());
        let members: Vec<(String, usize)> =
            now.iter().map(|(m, r)| ((*m).to_owned(), *r)).collect();
        match (open, members.len() >= 2) {
            (Some(open), true) => {
                for member in members {
                    if !open.members.iter().any(|(m, _)| *m == member.0) {
                        open.members.push(member);
                    }
                }
            }
            (Some(open), false) => open.to = Some(sample.at),
            (None, true) => found.push(Masters {
                from: sample.at,
                to: None,
                members,
            }),
            (None, false) => {}
        }
    }
    found
}

impl History {
    /// Prints `<label>: N writes acknowledged, M not, L lost`, and fails the test when too few
    /// writes were acknowledged to judge (20 or fewer) or any of `lost` was.
    pub fn assert_none_lost(&self, label: &str, lost: &[String]) {
        eprintln!(
            "{label}: {} writes acknowledged, {} not, {} lost",
            self.acks.len(),
            self.unacknowledged,
            lost.len()
        );
        self.assert_enough();
        assert_none_of(lost, "");
    }

    /// Fails the test when too few writes were acknowledged to judge (20 or fewer), any of
    /// `lost` was, or two primaries acknowledged writes at once (`overlaps`, from
    /// [`overlapping`]). `note` ends the last two messages (e.g. ` (seed 7)`).
    pub fn assert_safe(&self, lost: &[String], overlaps: &[(Ack, Ack)], note: &str) {
        self.assert_enough();
        assert_none_of(lost, note);
        assert!(
            overlaps.is_empty(),
            "two primaries acknowledged writes at once{note}: {:?}",
            overlaps
                .iter()
                .take(5)
                .map(|(a, b)| format!("{} by {} / {} by {}", a.key, a.server, b.key, b.server))
                .collect::<Vec<_>>()
        );
    }

    fn assert_enough(&self) {
        assert!(
            self.acks.len() > 20,
            "too few writes acknowledged to judge: {}",
            self.acks.len()
        );
    }
}

fn assert_none_of(lost: &[String], note: &str) {
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost{note}: {:?}",
        lost.len(),
        &lost[..lost.len().min(20)]
    );
}

/// A writer of unique keys `w<id>-<n>` through `host`, each write followed by `WAIT 1 1000`;
/// reconnects after any error. Each connection asks the server its own address (`CLIENT
/// INFO`'s `laddr`), so each acknowledgement is attributed to a pod.
pub struct Writer {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

/// How the writers and the final check reach the Redis: its port, the login (an ACL user, or the
/// default user with its password), and TLS (the controller's own client: the CA of the Redis's
/// Secret, its certificate shown when asked, the name `<name>.<namespace>.svc` verified whatever
/// IP is dialled).
#[derive(Clone, Default)]
pub struct Target {
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    pub tls: Option<controller::redis_server::TlsClient>,
    /// The local address to connect from (None: the one the route picks). On the bed the
    /// host's own address ([`crate::node::HOST_ADDRESS`]), so that a cut of the controller's
    /// path to a pod (`fault.sh path-cut`) leaves the test's clients through.
    pub source: Option<std::net::IpAddr>,
}

impl Target {
    /// Plaintext, the default user with `password` (None: no AUTH).
    pub fn plain(port: u16, password: Option<String>) -> Self {
        Target {
            port,
            password,
            ..Target::default()
        }
    }

    /// Sends `command` to `host` on a connection of its own: its reply, or why there is none.
    pub async fn run(&self, host: &str, command: &redis::Cmd) -> Result<redis::Value, String> {
        let mut link = self
            .open(host)
            .await
            .ok_or_else(|| format!("no connection to {host} within 1s"))?;
        command
            .query_async(&mut link.con)
            .await
            .map_err(|e| e.to_string())
    }

    /// A TCP connection to `host` (an IP or name on `port`, or `ip:port`), from `source` when
    /// set.
    async fn dial(&self, host: &str) -> Option<tokio::net::TcpStream> {
        let address = match host.parse::<std::net::SocketAddr>() {
            Ok(address) => address,
            Err(_) => tokio::net::lookup_host((host, self.port))
                .await
                .ok()?
                .next()?,
        };
        let Some(source) = self.source else {
            return tokio::net::TcpStream::connect(address).await.ok();
        };
        let socket = if address.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .ok()?;
        socket.bind(std::net::SocketAddr::new(source, 0)).ok()?;
        socket.connect(address).await.ok()
    }

    /// A connection to `host` (1 s to connect, 2 s for each reply), and the task driving it.
    pub(crate) async fn open(&self, host: &str) -> Option<Link> {
        let mut settings = redis::RedisConnectionInfo::default();
        if let Some(user) = &self.user {
            settings = settings.set_username(user);
        }
        if let Some(password) = &self.password {
            settings = settings.set_password(password);
        }
        let config =
            redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(2)));
        let opened = async {
            let stream = self.dial(host).await?;
            let (con, driver) = match &self.tls {
                None => {
                    let (con, driver) = redis::aio::MultiplexedConnection::new_with_config(
                        &settings, stream, config,
                    )
                    .await
                    .ok()?;
                    (con, tokio::spawn(driver))
                }
                Some(tls) => {
                    let stream = tls.handshake(stream).await.ok()?;
                    let (con, driver) = redis::aio::MultiplexedConnection::new_with_config(
                        &settings, stream, config,
                    )
                    .await
                    .ok()?;
                    (con, tokio::spawn(driver))
                }
            };
            Some(Link { con, driver })
        };
        tokio::time::timeout(Duration::from_secs(1), opened)
            .await
            .ok()
            .flatten()
    }
}

/// A connection and the task that drives it, stopped with it.
pub(crate) struct Link {
    pub(crate) con: redis::aio::MultiplexedConnection,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Writer {
    /// Starts writer `id` against `host:port` with `password` (None: no AUTH).
    pub fn start(
        id: u32,
        host: String,
        port: u16,
        password: Option<String>,
        history: Arc<Mutex<History>>,
    ) -> Self {
        Self::start_to(id, host, Target::plain(port, password), history)
    }

    /// Starts writer `id` against `host` as `target` says.
    pub fn start_to(id: u32, host: String, target: Target, history: Arc<Mutex<History>>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let mut connection: Option<(Link, String)> = None;
            let mut n = 0u64;
            while !flag.load(Ordering::Relaxed) {
                if connection.is_none() {
                    connection = connect(&target, &host).await;
                }
                let Some((link, server)) = connection.as_mut() else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let con = &mut link.con;
                n += 1;
                let key = format!("w{id}-{n}");
                let sent = Instant::now();
                let written: redis::RedisResult<()> =
                    redis::cmd("SET").arg(&key).arg(n).query_async(con).await;
                let replicas: redis::RedisResult<i64> = match written {
                    Ok(()) => redis::cmd("WAIT").arg(1).arg(1000).query_async(con).await,
                    Err(e) => Err(e),
                };
                let acked = Instant::now();
                let failed = replicas.is_err();
                {
                    let mut history = history.lock().unwrap_or_else(|e| e.into_inner());
                    match replicas {
                        Ok(r) if r >= 1 => history.acks.push(Ack {
                            key,
                            value: n,
                            server: server.clone(),
                            sent,
                            acked,
                        }),
                        _ => history.unacknowledged += 1,
                    }
                }
                if failed {
                    connection = None;
                }
                if connection.is_none() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        Writer { stop, task }
    }

    pub async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
    }
}

/// A connection, and the address of the server it reached (through the Service's DNAT, the
/// pod's own IP).
async fn connect(target: &Target, host: &str) -> Option<(Link, String)> {
    let mut link = target.open(host).await?;
    let info: String = redis::cmd("CLIENT")
        .arg("INFO")
        .query_async(&mut link.con)
        .await
        .ok()?;
    let laddr = info
        .split_whitespace()
        .find_map(|field| field.strip_prefix("laddr="))?;
    let (ip, _) = laddr.rsplit_once(':')?;
    let ip = ip.to_owned();
    Some((link, ip))
}

/// Pairs of acknowledgements by two different pods whose (sent, acknowledged) intervals
/// overlap: two primaries acknowledging writes at once.
pub fn overlapping(acks: &[Ack]) -> Vec<(Ack, Ack)> {
    let mut sorted: Vec<&Ack> = acks.iter().collect();
    sorted.sort_by_key(|a| a.sent);
    let mut found = Vec::new();
    // The latest-ending acknowledgement of each server so far.
    let mut open: BTreeMap<&str, &Ack> = BTreeMap::new();
    for ack in sorted {
        for (server, other) in &open {
            if *server != ack.server && other.acked > ack.sent {
                found.push(((*other).clone(), ack.clone()));
            }
        }
        let entry = open.entry(ack.server.as_str()).or_insert(ack);
        if ack.acked > entry.acked {
            *entry = ack;
        }
    }
    found
}

/// Every acknowledged key on `host` with its value: the keys lost.
pub async fn lost_on(
    host: &str,
    port: u16,
    password: &str,
    acks: &[Ack],
) -> Result<Vec<String>, Error> {
    lost_on_target(host, &Target::plain(port, Some(password.to_owned())), acks).await
}

/// [`lost_on`], reaching `host` as `target` says.
pub async fn lost_on_target(
    host: &str,
    target: &Target,
    acks: &[Ack],
) -> Result<Vec<String>, Error> {
    let mut link = target.open(host).await.ok_or_else(|| Error::Process {
        what: format!("connecting to {host}"),
        reason: "no connection and login within 1s".to_owned(),
    })?;
    let written: Vec<(String, u64)> = acks.iter().map(|a| (a.key.clone(), a.value)).collect();
    missing_writes(&mut link.con, &written).await
}

/// Of `written` (key, value) pairs, the keys whose value `con` does not hold: writes lost.
pub async fn missing_writes(
    con: &mut redis::aio::MultiplexedConnection,
    written: &[(String, u64)],
) -> Result<Vec<String>, Error> {
    let mut missing = Vec::new();
    for chunk in written.chunks(500) {
        let keys: Vec<&str> = chunk.iter().map(|(k, _)| k.as_str()).collect();
        let values: Vec<Option<u64>> = redis::cmd("MGET")
            .arg(&keys)
            .query_async(con)
            .await
            .map_err(|e| Error::process("MGET", e))?;
        for ((key, value), held) in chunk.iter().zip(values) {
            if held != Some(*value) {
                missing.push(key.clone());
            }
        }
    }
    Ok(missing)
}

impl History {
    /// Takes the history recorded so far out of the shared one.
    pub fn take(shared: &Mutex<History>) -> History {
        std::mem::take(&mut *shared.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Writes the history to `path` as JSON lines, in time order, for rechecking a run after it
    /// ended: every acknowledgement (`{"ack": key, "value", "server", "sent_ms", "acked_ms"}`),
    /// every `event` (`{"event": what, "at_ms"}`, e.g. a fault injected) and every key found
    /// `lost` (`{"lost": key}`, last). Times are milliseconds since `origin`.
    pub fn write_jsonl(
        &self,
        path: &Path,
        origin: Instant,
        events: &[(Instant, String)],
        lost: &[String],
    ) -> Result<(), Error> {
        let ms = |t: Instant| t.saturating_duration_since(origin).as_millis();
        let mut lines: Vec<(u128, serde_json::Value)> = self
            .acks
            .iter()
            .map(|a| {
                let line = serde_json::json!({
                    "ack": a.key, "value": a.value, "server": a.server,
                    "sent_ms": ms(a.sent), "acked_ms": ms(a.acked),
                });
                (ms(a.sent), line)
            })
            .chain(
                self.roles
                    .iter()
                    .map(|r| (ms(r.at), role_line(r, ms(r.at)))),
            )
            .chain(self.endpoints.iter().map(|e| {
                let line = serde_json::json!({"endpoints": e.ready, "at_ms": ms(e.at)});
                (ms(e.at), line)
            }))
            .chain(events.iter().map(|(at, what)| {
                (
                    ms(*at),
                    serde_json::json!({"event": what, "at_ms": ms(*at)}),
                )
            }))
            .collect();
        lines.sort_by_key(|(at, _)| *at);
        let mut text = String::new();
        for line in lines
            .into_iter()
            .map(|(_, l)| l)
            .chain(lost.iter().map(|key| serde_json::json!({ "lost": key })))
        {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        let failed = |e: std::io::Error| Error::Process {
            what: format!("writing the history to {}", path.display()),
            reason: e.to_string(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        std::fs::write(path, text).map_err(failed)
    }
}

/// A role sample as a JSON line: `{"role": "master"|"replica"|"unread", "member", "server",
/// "at_ms", "replicas" | "of" and "state"}`.
fn role_line(sample: &RoleSample, at_ms: u128) -> serde_json::Value {
    let mut line = serde_json::json!({
        "member": sample.member, "server": sample.server, "at_ms": at_ms,
    });
    let fields = match &sample.role {
        Role::Master { replicas } => serde_json::json!({"role": "master", "replicas": replicas}),
        Role::Replica { of, state } => {
            serde_json::json!({"role": "replica", "of": of, "state": state})
        }
        Role::Unread => serde_json::json!({"role": "unread"}),
    };
    if let (Some(line), serde_json::Value::Object(fields)) = (line.as_object_mut(), fields) {
        line.extend(fields);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_finds_two_primaries_acknowledging_at_once() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let ack = |key: &str, server: &str, sent: u64, acked: u64| Ack {
            key: key.into(),
            value: 1,
            server: server.into(),
            sent: at(sent),
            acked: at(acked),
        };
        // One primary after the other: no overlap.
        let handover = [
            ack("a", "10.0.0.1", 0, 10),
            ack("b", "10.0.0.1", 20, 30),
            ack("c", "10.0.0.2", 40, 50),
        ];
        assert!(overlapping(&handover).is_empty());
        // Writer 2 acknowledged by the new primary while writer 1's write was still being
        // acknowledged by the old one.
        let split = [ack("a", "10.0.0.1", 0, 100), ack("b", "10.0.0.2", 50, 60)];
        assert_eq!(overlapping(&split).len(), 1);
    }

    /// Two primaries acknowledging at once, as the pinned writers record them: the new
    /// primary acknowledges while the old one, on its held connection, still does.
    fn two_primaries() -> History {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let ack = |key: &str, server: &str, sent: u64| Ack {
            key: key.into(),
            value: 1,
            server: server.into(),
            sent: at(sent),
            acked: at(sent + 3),
        };
        let role = |member: &str, ms: u64, role: Role| RoleSample {
            at: at(ms),
            member: member.into(),
            server: format!("10.0.0.{}", &member[member.len() - 1..]),
            role,
        };
        let master = |replicas| Role::Master { replicas };
        History {
            acks: (0..30)
                .map(|n| ack(&format!("p0-{n}"), "10.0.0.0", n * 10))
                .chain([ack("p1-1", "10.0.0.1", 201), ack("p1-2", "10.0.0.1", 251)])
                .collect(),
            roles: vec![
                role("cache-0", 0, master(2)),
                role(
                    "cache-1",
                    0,
                    Role::Replica {
                        of: "10.0.0.0:6379".into(),
                        state: "connected".into(),
                    },
                ),
                role("cache-1", 200, master(1)),
                role("cache-0", 400, Role::Unread),
            ],
            ..History::default()
        }
    }

    #[test]
    #[should_panic(expected = "two primaries acknowledged writes at once (seed 7)")]
    fn the_check_fails_on_two_primaries_acknowledging_at_once() {
        let history = two_primaries();
        let overlaps = overlapping(&history.acks);
        assert_eq!(overlaps.len(), 2, "{overlaps:?}");
        history.assert_safe(&[], &overlaps, " (seed 7)");
    }

    #[test]
    fn the_role_samples_show_two_masters_until_one_is_unread() {
        let history = two_primaries();
        let t0 = history.roles[0].at;
        let masters = masters_at_once(&history.roles);
        assert_eq!(
            masters,
            vec![Masters {
                from: t0 + Duration::from_millis(200),
                to: Some(t0 + Duration::from_millis(400)),
                members: vec![("cache-0".into(), 2), ("cache-1".into(), 1)],
            }]
        );
    }

    #[test]
    fn a_written_history_is_in_time_order_with_the_faults_and_the_lost_keys_last() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let ack = |key: &str, sent: u64| Ack {
            key: key.into(),
            value: 7,
            server: "10.0.0.1".into(),
            sent: at(sent),
            acked: at(sent + 5),
        };
        let history = History {
            acks: vec![ack("w0-2", 40), ack("w0-1", 10)],
            ..History::default()
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("h").join("history.jsonl");
        let fault = [(at(20), "round 1: ContainerKill on cache-0".to_owned())];
        history
            .write_jsonl(&path, t0, &fault, &["w0-1".to_owned()])
            .expect("written");
        let text = std::fs::read_to_string(&path).expect("read back");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0]["ack"], "w0-1");
        assert_eq!(lines[0]["acked_ms"], 15);
        assert_eq!(lines[1]["event"], "round 1: ContainerKill on cache-0");
        assert_eq!(lines[2]["ack"], "w0-2");
        assert_eq!(lines[3]["lost"], "w0-1");
    }
}
