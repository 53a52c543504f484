//! Witnesses of split brain, for the chaos test (issue #41): for each member of a Redis, a
//! writer pinned to it on a long-lived connection and a sampler of its `ROLE`; on the bed, a
//! sampler of the clients' Service's ready endpoints too. All of it goes into the shared
//! [`History`]: two primaries acknowledging writes at once show as overlapping
//! acknowledgements by two servers ([`crate::history::overlapping`]), two members answering
//! `master` at once as [`crate::history::masters_at_once`].
//!
//! A writer pinned to a member reconnects only after an error of the connection (not after a
//! server's error reply such as `READONLY`), and then to the member's address of that moment:
//! an old primary that keeps acknowledging on connections it already has (a force-deleted
//! pod's container still running, a primary the controller cannot reach) is written to, and
//! seen, as long as it answers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use tokio::task::JoinHandle;

use crate::history::{Ack, EndpointsSample, History, Link, Role, RoleSample, Target};
use crate::namespace::TestNamespace;

/// How often each member is asked its `ROLE`, and how long its answer may take.
const ROLE_EVERY: Duration = Duration::from_millis(200);
const ROLE_TIMEOUT: Duration = Duration::from_millis(500);
/// How often the pods' addresses and the Service's endpoints are read.
const PODS_EVERY: Duration = Duration::from_millis(500);
/// The pause after a write a server refused (a replica's `READONLY`), so that the writers
/// pinned to replicas do not spin.
const REFUSED_PAUSE: Duration = Duration::from_millis(200);

/// Each member's address now (its pod IP; `ip:port` off the bed), by member name.
pub type Addresses = Arc<Mutex<BTreeMap<String, String>>>;

/// The witnesses' tasks, stopped by [`Witnesses::stop`] (or aborted when dropped).
pub struct Witnesses {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Witnesses {
    /// A pinned writer (keys `p<i>-<n>`) and a `ROLE` sampler for each of `members`, reaching
    /// them at their address in `addresses` as `target` says.
    pub fn start(
        members: &[String],
        addresses: Addresses,
        target: Target,
        history: Arc<Mutex<History>>,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for (i, member) in members.iter().enumerate() {
            let pinned = Pinned {
                member: member.clone(),
                addresses: addresses.clone(),
                target: target.clone(),
                history: history.clone(),
                stop: stop.clone(),
            };
            tasks.push(tokio::spawn(pinned.clone().write(format!("p{i}"))));
            tasks.push(tokio::spawn(pinned.sample_role()));
        }
        Witnesses { stop, tasks }
    }

    /// [`Witnesses::start`] for the pods `<redis>-0..n` in `ns`, their addresses kept from the
    /// API server, and the ready endpoints of Service `<redis>` sampled.
    pub fn start_on_pods(
        ns: &TestNamespace,
        redis: &str,
        replicas: usize,
        target: Target,
        history: Arc<Mutex<History>>,
    ) -> Self {
        let members: Vec<String> = (0..replicas).map(|i| format!("{redis}-{i}")).collect();
        let addresses: Addresses = Arc::default();
        let mut witnesses = Self::start(&members, addresses.clone(), target, history.clone());
        let follow = follow_pods(
            ns.api(),
            ns.api(),
            redis.to_owned(),
            addresses,
            history,
            witnesses.stop.clone(),
        );
        witnesses.tasks.push(tokio::spawn(follow));
        witnesses
    }

    pub async fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

impl Drop for Witnesses {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What one member's witnesses share.
#[derive(Clone)]
struct Pinned {
    member: String,
    addresses: Addresses,
    target: Target,
    history: Arc<Mutex<History>>,
    stop: Arc<AtomicBool>,
}

impl Pinned {
    fn address(&self) -> Option<String> {
        self.addresses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.member)
            .cloned()
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Writes `<prefix>-<n>` with `SET` + `WAIT 1 1000` on one connection until it fails.
    async fn write(self, prefix: String) {
        let mut held: Option<(Link, String)> = None;
        let mut n = 0u64;
        while !self.stopped() {
            if held.is_none() {
                held = match self.address() {
                    Some(address) => self.target.open(&address).await.map(|l| (l, address)),
                    None => None,
                };
            }
            let Some((link, server)) = held.as_mut() else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            n += 1;
            let key = format!("{prefix}-{n}");
            let sent = Instant::now();
            let written: redis::RedisResult<()> = redis::cmd("SET")
                .arg(&key)
                .arg(n)
                .query_async(&mut link.con)
                .await;
            let replicas: redis::RedisResult<i64> = match written {
                Ok(()) => {
                    redis::cmd("WAIT")
                        .arg(1)
                        .arg(1000)
                        .query_async(&mut link.con)
                        .await
                }
                Err(e) => Err(e),
            };
            let acked = Instant::now();
            {
                let mut history = self.history.lock().unwrap_or_else(|e| e.into_inner());
                match &replicas {
                    Ok(r) if *r >= 1 => history.acks.push(Ack {
                        key,
                        value: n,
                        server: server.clone(),
                        sent,
                        acked,
                    }),
                    Err(e) if e.code() == Some("READONLY") => history.refused += 1,
                    _ => history.unacknowledged += 1,
                }
            }
            match replicas {
                // The server answered: the connection is kept, whatever it said.
                Err(e) if e.code().is_some() => tokio::time::sleep(REFUSED_PAUSE).await,
                Err(_) => {
                    held = None;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(_) => {}
            }
        }
    }

    /// Asks the member's current address its `ROLE` every [`ROLE_EVERY`]; records each change.
    async fn sample_role(self) {
        let mut held: Option<(Link, String)> = None;
        let mut last: Option<(String, Role)> = None;
        while !self.stopped() {
            let address = self.address();
            if held.as_ref().map(|(_, a)| a) != address.as_ref() {
                held = None;
            }
            let role = match (&mut held, &address) {
                (None, None) => None,
                (Some((link, _)), _) => Some(ask_role(link).await),
                (None, Some(address)) => {
                    let opened =
                        tokio::time::timeout(ROLE_TIMEOUT, self.target.open(address)).await;
                    match opened {
                        Ok(Some(mut link)) => {
                            let role = ask_role(&mut link).await;
                            held = Some((link, address.clone()));
                            Some(role)
                        }
                        _ => Some(Role::Unread),
                    }
                }
            };
            if role == Some(Role::Unread) {
                held = None;
            }
            if let (Some(role), Some(address)) = (role, address) {
                let now = (address, role);
                if last.as_ref() != Some(&now) {
                    self.history
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .roles
                        .push(RoleSample {
                            at: Instant::now(),
                            member: self.member.clone(),
                            server: now.0.clone(),
                            role: now.1.clone(),
                        });
                    last = Some(now);
                }
            }
            tokio::time::sleep(ROLE_EVERY).await;
        }
    }
}

async fn ask_role(link: &mut Link) -> Role {
    let role = redis::cmd("ROLE");
    let asked = role.query_async::<redis::Value>(&mut link.con);
    match tokio::time::timeout(ROLE_TIMEOUT, asked).await {
        Ok(Ok(value)) => role_of(&value),
        _ => Role::Unread,
    }
}

/// A `ROLE` reply: `[master, offset, [[ip, port, offset], ...]]` or `[slave, host, port, state,
/// offset]`; anything else is unread.
pub fn role_of(value: &redis::Value) -> Role {
    use redis::Value;
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    };
    let Value::Array(parts) = value else {
        return Role::Unread;
    };
    match (parts.first().and_then(text).as_deref(), parts.as_slice()) {
        (Some("master"), [_, _, Value::Array(replicas), ..]) => Role::Master {
            replicas: replicas.len(),
        },
        (Some("slave"), [_, host, port, state, ..]) => {
            match (text(host), text(port), text(state)) {
                (Some(host), Some(port), Some(state)) => Role::Replica {
                    of: format!("{host}:{port}"),
                    state,
                },
                _ => Role::Unread,
            }
        }
        _ => Role::Unread,
    }
}

/// Keeps `addresses` at the pods' IPs and records the ready endpoints of Service `redis` when
/// they change.
async fn follow_pods(
    pods: Api<Pod>,
    slices: Api<EndpointSlice>,
    redis: String,
    addresses: Addresses,
    history: Arc<Mutex<History>>,
    stop: Arc<AtomicBool>,
) {
    let of_redis = ListParams::default().labels(&api::pods::selector_string(&redis));
    let of_service = ListParams::default().labels(&format!("kubernetes.io/service-name={redis}"));
    let mut last: Option<Vec<String>> = None;
    while !stop.load(Ordering::Relaxed) {
        if let Ok(list) = pods.list(&of_redis).await {
            let mut now = addresses.lock().unwrap_or_else(|e| e.into_inner());
            for pod in &list.items {
                if let Some(ip) = crate::pods::ip(pod) {
                    now.insert(pod.name_any(), ip.to_owned());
                }
            }
        }
        if let Ok(list) = slices.list(&of_service).await {
            let mut ready: Vec<String> = list
                .items
                .iter()
                .flat_map(|s| s.endpoints.iter().flatten())
                .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
                .flat_map(|e| e.addresses.iter().cloned())
                .collect();
            ready.sort();
            if last.as_ref() != Some(&ready) {
                history
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .endpoints
                    .push(EndpointsSample {
                        at: Instant::now(),
                        ready: ready.clone(),
                    });
                last = Some(ready);
            }
        }
        tokio::time::sleep(PODS_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn role_replies_are_read_as_redis_gives_them() {
        let master = Value::Array(vec![
            bulk("master"),
            Value::Int(3129659),
            Value::Array(vec![Value::Array(vec![
                bulk("10.88.2.5"),
                bulk("6379"),
                bulk("3129242"),
            ])]),
        ]);
        assert_eq!(role_of(&master), Role::Master { replicas: 1 });
        let fenced = Value::Array(vec![
            bulk("slave"),
            bulk("127.0.0.1"),
            Value::Int(1),
            bulk("connect"),
            Value::Int(-1),
        ]);
        assert_eq!(
            role_of(&fenced),
            Role::Replica {
                of: "127.0.0.1:1".into(),
                state: "connect".into()
            }
        );
        assert_eq!(role_of(&bulk("master")), Role::Unread);
    }
}
