//! A flight recorder for the tests that check acknowledged writes on the real nodes: while the
//! test runs, it keeps one timeline of what a post-mortem needs (every pod of the Redis as the
//! API server shows it, each redis-server's log and its replication and persistence state
//! sampled every [`SAMPLE`], the test's own steps, acknowledgements per server and second), and
//! on a failure [`FlightRecorder::report`] merges it with the controller's log into one text,
//! written beside the run's operator logs and printed (bounded) so a failure in CI explains
//! itself.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, LogParams};
use kube::runtime::watcher;
use tokio::task::JoinHandle;

use crate::history::{History, Target};
use crate::namespace::TestNamespace;

/// How often every pod's redis-server is asked for its replication and persistence state.
pub const SAMPLE: Duration = Duration::from_millis(250);
/// Lines kept at most (a long run keeps its latest).
const KEPT: usize = 200_000;
/// Lines of the report printed at most; the file has them all.
const PRINTED: usize = 400;
/// Characters of a printed line at most.
const SHOWN_WIDTH: usize = 240;

/// One line of the timeline: when, from where (`test`, `pod`, `redis`, `acks`, `controller`), what.
#[derive(Debug, Clone)]
struct Line {
    at: Timestamp,
    source: String,
    text: String,
}

#[derive(Default)]
struct Pods {
    /// The pod each name currently is (its uid) and its IP.
    current: HashMap<String, (String, Option<String>)>,
    /// Every pod seen, by uid: its name and what was last recorded of it.
    seen: HashMap<String, (String, String)>,
    /// Every IP each pod had, by IP: (pod name, uid).
    ips: BTreeMap<String, Vec<(String, String)>>,
}

struct Shared {
    lines: Mutex<Vec<Line>>,
    pods: Mutex<Pods>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The same moment on both clocks: acknowledgements are timed by `Instant`.
    anchor: (Instant, SystemTime),
}

impl Shared {
    fn record(&self, at: Timestamp, source: &str, text: impl Into<String>) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() >= KEPT {
            lines.drain(..KEPT / 10);
        }
        lines.push(Line {
            at,
            source: source.to_owned(),
            text: text.into(),
        });
    }

    fn now(&self, source: &str, text: impl Into<String>) {
        self.record(Timestamp::now(), source, text);
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task);
        self.tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(handle);
    }

    fn timestamp(&self, instant: Instant) -> Timestamp {
        let (anchor, wall) = self.anchor;
        let wall = if instant >= anchor {
            wall + (instant - anchor)
        } else {
            wall - (anchor - instant)
        };
        Timestamp::try_from(wall).unwrap_or_else(|_| Timestamp::now())
    }
}

/// Records the pods of Redis `redis` in `ns` until dropped.
pub struct FlightRecorder {
    shared: Arc<Shared>,
    namespace: String,
    redis: String,
}

impl FlightRecorder {
    /// Starts watching the pods of `redis` (their log and state), reaching their
    /// redis-servers as `target` says.
    pub fn start(ns: &TestNamespace, redis: &str, target: Target) -> Self {
        let shared = Arc::new(Shared {
            lines: Mutex::new(Vec::new()),
            pods: Mutex::new(Pods::default()),
            tasks: Mutex::new(Vec::new()),
            anchor: (Instant::now(), SystemTime::now()),
        });
        let pods: Api<Pod> = ns.api();
        shared.spawn(watch_pods(
            shared.clone(),
            pods,
            api::pods::selector_string(redis),
        ));
        shared.spawn(sample(shared.clone(), target));
        FlightRecorder {
            shared,
            namespace: ns.name().to_owned(),
            redis: redis.to_owned(),
        }
    }

    /// Records a step of the test ("deleting every pod").
    pub fn note(&self, what: impl Into<String>) {
        let what = what.into();
        eprintln!("{}: {what}", self.redis);
        self.shared.now("test", what);
    }

    /// The whole timeline, merged with the acknowledgements of `history` (per server and
    /// second), the `lost` keys (grouped by the server that acknowledged them, with the pods
    /// that had its IP) and the controller's log lines above debug. Written to
    /// `target/e2e-logs/<namespace>/flight-<redis>.txt`; returns the part to print: the lost
    /// keys' summary and the timeline around them (or its end), at most [`PRINTED`] lines.
    pub fn report(&self, history: &History, lost: &[String]) -> String {
        let mut lines = self
            .shared
            .lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        lines.extend(ack_lines(&self.shared, history));
        lines.extend(controller_lines(&self.namespace));
        lines.sort_by_key(|l| l.at);
        let summary = self.lost_summary(history, lost);
        let window = lost_window(&self.shared, history, lost);
        let render = |l: &Line| {
            format!(
                "{} {:<10} {}",
                l.at.strftime("%H:%M:%S%.3f"),
                l.source,
                l.text
            )
        };
        // Printed lines are cut short (a redis-server's client descriptions run to 400
        // characters); the file keeps them whole.
        let short_line = |l: &Line| render(l).chars().take(SHOWN_WIDTH).collect::<String>();
        let all: Vec<String> = lines.iter().map(render).collect();
        let path = self.file();
        let written = std::fs::create_dir_all(path.parent().unwrap_or(&path))
            .and_then(|()| std::fs::write(&path, [summary.clone(), all.join("\n")].join("\n")));
        let mut shown: Vec<String> = match window {
            Some((from, to)) => lines
                .iter()
                .filter(|l| l.at >= from && l.at <= to)
                .map(short_line)
                .collect(),
            None => lines.iter().map(short_line).collect(),
        };
        if shown.len() > PRINTED {
            let cut = shown.len() - PRINTED;
            let head: Vec<String> = shown.drain(..PRINTED / 2).collect();
            shown.drain(..cut);
            shown.splice(0..0, head);
            shown.insert(PRINTED / 2, format!("... {cut} lines left out ..."));
        }
        let file = match written {
            Ok(()) => format!("the whole timeline: {}", path.display()),
            Err(e) => format!("could not write {}: {e}", path.display()),
        };
        format!(
            "--- flight recorder of {} ({file}) ---\n{summary}\n{}\n--- end of the flight recorder ---",
            self.redis,
            shown.join("\n")
        )
    }

    fn file(&self) -> PathBuf {
        crate::operator::log_dir(&self.namespace).join(format!("flight-{}.txt", self.redis))
    }

    /// The lost keys by the server that acknowledged them: how many, the first and last key,
    /// when, and the pods that had that IP.
    fn lost_summary(&self, history: &History, lost: &[String]) -> String {
        if lost.is_empty() {
            return "no acknowledged write lost".to_owned();
        }
        let lost: HashSet<&str> = lost.iter().map(String::as_str).collect();
        let mut by_server: BTreeMap<&str, Vec<&crate::history::Ack>> = BTreeMap::new();
        for ack in history
            .acks
            .iter()
            .filter(|a| lost.contains(a.key.as_str()))
        {
            by_server.entry(ack.server.as_str()).or_default().push(ack);
        }
        let pods = self.shared.pods.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = vec![format!("{} acknowledged writes lost:", lost.len())];
        for (server, acks) in by_server {
            let first = acks.iter().min_by_key(|a| a.sent);
            let last = acks.iter().max_by_key(|a| a.acked);
            let holders = pods.ips.get(server).map_or_else(String::new, |p| {
                p.iter()
                    .map(|(name, uid)| format!("{name}#{}", short(uid)))
                    .collect::<Vec<_>>()
                    .join(", ")
            });
            if let (Some(first), Some(last)) = (first, last) {
                out.push(format!(
                    "  {} acknowledged by {server} (pods with that IP: {holders}) from {} ({}) to {} ({})",
                    acks.len(),
                    first.key,
                    self.shared.timestamp(first.sent).strftime("%H:%M:%S%.3f"),
                    last.key,
                    self.shared.timestamp(last.acked).strftime("%H:%M:%S%.3f"),
                ));
            }
        }
        out.join("\n")
    }
}

impl Drop for FlightRecorder {
    fn drop(&mut self) {
        for task in self
            .shared
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}

fn short(uid: &str) -> &str {
    uid.get(..5).unwrap_or(uid)
}

/// From 30 s before the first lost write was sent to 30 s after the last was acknowledged.
fn lost_window(
    shared: &Shared,
    history: &History,
    lost: &[String],
) -> Option<(Timestamp, Timestamp)> {
    let lost: HashSet<&str> = lost.iter().map(String::as_str).collect();
    let acks: Vec<_> = history
        .acks
        .iter()
        .filter(|a| lost.contains(a.key.as_str()))
        .collect();
    let from = acks.iter().map(|a| a.sent).min()?;
    let to = acks.iter().map(|a| a.acked).max()?;
    let margin = Duration::from_secs(30);
    Some((
        shared.timestamp(from.checked_sub(margin).unwrap_or(from)),
        shared.timestamp(to + margin),
    ))
}

/// One line per second that had acknowledgements: how many each server gave.
fn ack_lines(shared: &Shared, history: &History) -> Vec<Line> {
    let (anchor, _) = shared.anchor;
    let mut seconds: BTreeMap<i64, BTreeMap<&str, usize>> = BTreeMap::new();
    for ack in &history.acks {
        let second = if ack.acked >= anchor {
            i64::try_from((ack.acked - anchor).as_secs()).unwrap_or(i64::MAX)
        } else {
            -i64::try_from((anchor - ack.acked).as_secs()).unwrap_or(i64::MAX) - 1
        };
        *seconds
            .entry(second)
            .or_default()
            .entry(ack.server.as_str())
            .or_default() += 1;
    }
    seconds
        .into_iter()
        .map(|(second, counts)| {
            let offset = Duration::from_secs(second.unsigned_abs());
            let at = if second >= 0 {
                anchor + offset
            } else {
                anchor.checked_sub(offset).unwrap_or(anchor)
            };
            Line {
                at: shared.timestamp(at),
                source: "acks".to_owned(),
                text: counts
                    .iter()
                    .map(|(server, n)| format!("{server}={n}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            }
        })
        .collect()
}

/// The controller's log lines above debug (its decisions, steps and Events), timed by their
/// own timestamps; without kube-runtime's span of each pass ("reconciling object{..}: "), and its
/// line of each pass left out.
fn controller_lines(namespace: &str) -> Vec<Line> {
    let path = crate::operator::log_dir(namespace).join("redis-controller.log");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(without_colours)
        .filter(|l| !l.contains(" DEBUG ") && !l.contains(" TRACE "))
        .filter_map(|l| without_pass_span(&l))
        .filter_map(|l| {
            let (stamp, rest) = l.split_once(' ')?;
            let at: Timestamp = stamp.parse().ok()?;
            Some(Line {
                at,
                source: "controller".to_owned(),
                text: rest.trim().to_owned(),
            })
        })
        .collect()
}

/// `line` without the span kube-runtime opens for each pass; `None` for the span's own line.
fn without_pass_span(line: &str) -> Option<String> {
    const SPAN: &str = "reconciling object{";
    let Some(start) = line.find(SPAN) else {
        return Some(line.to_owned());
    };
    let end = line[start..].find("}: ")? + start + 3;
    Some(format!("{}{}", &line[..start], &line[end..]))
}

/// `line` without its ANSI escape sequences (the log's colours).
fn without_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, ending with a letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Records every change of the Redis's pods, and follows each new pod's redis log.
async fn watch_pods(shared: Arc<Shared>, api: Api<Pod>, selector: String) {
    let config = watcher::Config::default().labels(&selector);
    let mut events = watcher(api.clone(), config).boxed();
    loop {
        let event = match events.try_next().await {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(e) => {
                shared.now("pod", format!("watch error: {e}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        match event {
            watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => {
                seen_pod(&shared, &api, &pod);
            }
            watcher::Event::Delete(pod) => {
                let name = pod.name_any();
                let uid = pod.uid().unwrap_or_default();
                shared.now("pod", format!("{name}#{} deleted", short(&uid)));
                let mut pods = shared.pods.lock().unwrap_or_else(|e| e.into_inner());
                if pods.current.get(&name).is_some_and(|(u, _)| *u == uid) {
                    pods.current.remove(&name);
                }
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }
}

fn seen_pod(shared: &Arc<Shared>, api: &Api<Pod>, pod: &Pod) {
    let name = pod.name_any();
    let uid = pod.uid().unwrap_or_default();
    let ip = crate::pods::ip(pod).map(str::to_owned);
    let role = pod
        .labels()
        .get(api::pods::ROLE_LABEL)
        .cloned()
        .unwrap_or_else(|| "-".to_owned());
    let redis_state = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "redis"))
        .map(|c| {
            let state = c.state.as_ref();
            let what = if state.is_some_and(|s| s.running.is_some()) {
                "running"
            } else if state.is_some_and(|s| s.terminated.is_some()) {
                "terminated"
            } else {
                "waiting"
            };
            format!("{what} restarts={}", c.restart_count)
        })
        .unwrap_or_else(|| "no container".to_owned());
    let running = redis_state.starts_with("running");
    let summary = format!(
        "ip={} role={role} ready={} {redis_state}{} node={}",
        ip.as_deref().unwrap_or("-"),
        crate::pods::is_ready(pod),
        if pod.metadata.deletion_timestamp.is_some() {
            " TERMINATING"
        } else {
            ""
        },
        crate::node::node_of(pod).unwrap_or("-"),
    );
    let mut pods = shared.pods.lock().unwrap_or_else(|e| e.into_inner());
    let first = !pods.seen.contains_key(&uid);
    let changed = pods.seen.get(&uid).is_none_or(|(_, s)| *s != summary);
    let follow = running
        && pods
            .seen
            .get(&uid)
            .is_none_or(|(_, s)| !s.contains("running"));
    pods.seen
        .insert(uid.clone(), (name.clone(), summary.clone()));
    if pod.metadata.deletion_timestamp.is_none()
        || pods.current.get(&name).is_some_and(|(u, _)| *u == uid)
    {
        pods.current.insert(name.clone(), (uid.clone(), ip.clone()));
    }
    if let Some(ip) = &ip {
        let holders = pods.ips.entry(ip.clone()).or_default();
        if !holders.iter().any(|(_, u)| *u == uid) {
            holders.push((name.clone(), uid.clone()));
        }
    }
    drop(pods);
    if changed {
        let what = if first { "new" } else { "now" };
        shared.now("pod", format!("{name}#{} {what} {summary}", short(&uid)));
    }
    if follow {
        shared.spawn(follow_log(shared.clone(), api.clone(), name, uid));
    }
}

/// Follows the redis container's log of pod `name` while it is the pod `uid` (a pod of the
/// same name made later has a follower of its own); each line timed by the kubelet.
async fn follow_log(shared: Arc<Shared>, api: Api<Pod>, name: String, uid: String) {
    let source = format!("{name}#{}", short(&uid));
    let params = LogParams {
        container: Some("redis".to_owned()),
        follow: true,
        timestamps: true,
        ..LogParams::default()
    };
    let mut last: Option<Timestamp> = None;
    for _ in 0..50 {
        let current = shared
            .pods
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .current
            .get(&name)
            .is_some_and(|(u, _)| *u == uid);
        if !current {
            return;
        }
        let params = LogParams {
            since_time: last,
            ..params.clone()
        };
        let stream = match api.log_stream(&name, &params).await {
            Ok(stream) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(300)).await;
                continue;
            }
        };
        let mut lines = stream.lines();
        while let Some(Ok(line)) = lines.next().await {
            let (at, text) = match line.split_once(' ') {
                Some((stamp, text)) => match stamp.parse::<Timestamp>() {
                    Ok(at) => (at, text.to_owned()),
                    Err(_) => (Timestamp::now(), line.clone()),
                },
                None => (Timestamp::now(), line.clone()),
            };
            if last.is_some_and(|l| at <= l) {
                continue;
            }
            last = Some(at);
            shared.record(at, &source, text);
        }
        // The container ended (or the stream broke): once more in case it broke.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Every [`SAMPLE`], each current pod's replication and persistence state, recorded when it
/// changes (offsets and key counts shown, not compared).
async fn sample(shared: Arc<Shared>, target: Target) {
    let mut last: HashMap<String, String> = HashMap::new();
    loop {
        let current: Vec<(String, String, String)> = shared
            .pods
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .current
            .iter()
            .filter_map(|(name, (uid, ip))| Some((name.clone(), uid.clone(), ip.clone()?)))
            .collect();
        let reads = futures::future::join_all(current.iter().map(|(_, _, ip)| {
            let target = target.clone();
            async move {
                let mut info = redis::cmd("INFO");
                info.arg("replication").arg("persistence").arg("keyspace");
                let read =
                    tokio::time::timeout(Duration::from_secs(1), target.run(ip, &info)).await;
                match read {
                    Ok(Ok(value)) => {
                        redis::from_redis_value::<String>(value).map_err(|e| e.to_string())
                    }
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err("no answer within 1s".to_owned()),
                }
            }
        }))
        .await;
        for ((name, uid, ip), read) in current.iter().zip(reads) {
            let (compared, shown) = match read {
                Ok(info) => describe_info(&info),
                Err(e) => {
                    let e: String = e.chars().take(120).collect();
                    (format!("unread: {e}"), format!("unread: {e}"))
                }
            };
            let key = format!("{name}#{uid}");
            if last.get(&key) != Some(&compared) {
                shared.now("redis", format!("{name}#{} {ip} {shown}", short(uid)));
                last.insert(key, compared);
            }
        }
        tokio::time::sleep(SAMPLE).await;
    }
}

/// A redis-server's `INFO replication persistence keyspace` in one line: (what is compared
/// between samples, what is shown).
fn describe_info(info: &str) -> (String, String) {
    let fields: HashMap<&str, &str> = info
        .lines()
        .filter_map(|l| l.trim().split_once(':'))
        .collect();
    let get = |k: &str| fields.get(k).copied().unwrap_or("?");
    let role = get("role");
    let replication = if role == "master" {
        format!("master slaves={}", get("connected_slaves"))
    } else {
        format!(
            "replica of {}:{} link={}",
            get("master_host"),
            get("master_port"),
            get("master_link_status")
        )
    };
    let persistence = format!(
        "aof={} aof_rewrite={}/{} last_rewrite={} bgsave={} loading={}",
        get("aof_enabled"),
        get("aof_rewrite_in_progress"),
        get("aof_rewrite_scheduled"),
        get("aof_last_bgrewrite_status"),
        get("rdb_bgsave_in_progress"),
        get("loading"),
    );
    let compared = format!("{replication} {persistence}");
    let keys = get("db0").split(',').next().unwrap_or("");
    let shown = format!(
        "{compared} offset={} replid={} {keys}",
        get("master_repl_offset"),
        get("master_replid").get(..8).unwrap_or("?"),
    );
    (compared, shown)
}

#[cfg(test)]
mod tests {
    use super::{describe_info, without_colours, without_pass_span};

    #[test]
    fn the_span_of_a_pass_is_taken_out_and_its_own_line_left_out() {
        assert_eq!(
            without_pass_span("T  INFO reconciling object{object.ref=R/x object.reason=y}: controller::pods: created").as_deref(),
            Some("T  INFO controller::pods: created")
        );
        assert_eq!(
            without_pass_span("T  INFO reconciling object{object.ref=R/x}"),
            None
        );
        assert_eq!(
            without_pass_span("T  INFO run").as_deref(),
            Some("T  INFO run")
        );
    }

    #[test]
    fn colours_are_taken_out_of_log_lines() {
        assert_eq!(
            without_colours(
                "\u{1b}[2m2026-12-06T04:17:06.954139Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m run"
            ),
            "2026-12-06T04:17:06.954139Z  INFO run"
        );
    }

    #[test]
    fn info_is_one_line_whose_compared_part_leaves_out_offsets_and_keys() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nmaster_replid:0123456789abcdef\r\nmaster_repl_offset:77\r\n# Persistence\r\nloading:0\r\naof_enabled:1\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:1\r\naof_last_bgrewrite_status:ok\r\nrdb_bgsave_in_progress:0\r\n# Keyspace\r\ndb0:keys=12,expires=0,avg_ttl=0\r\n";
        let (compared, shown) = describe_info(info);
        assert_eq!(
            compared,
            "master slaves=2 aof=1 aof_rewrite=0/1 last_rewrite=ok bgsave=0 loading=0"
        );
        assert!(
            shown.ends_with("offset=77 replid=01234567 keys=12"),
            "{shown}"
        );
    }
}
