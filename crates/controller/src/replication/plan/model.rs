//! What the replication planner reads and decides (DESIGN §3b): a member as the API server and
//! its redis-server describe it, the settings of a pass, the steps, and the decision. Pure data.

use crate::redis_server::info::{History, RedisRole};
use std::time::Duration;

/// The role label a pod carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Primary,
    Replica,
}

/// One pod of the Redis, as the API server and its redis-server describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub ordinal: Option<u32>,
    pub ip: Option<String>,
    /// Its Ready condition is True.
    pub ready: bool,
    pub terminating: bool,
    /// Runs the current pod spec (a rolling update will not replace it).
    pub current: bool,
    /// Its redis container is not running (exited, waiting to be restarted): the process that
    /// held the data is gone, whatever comes next.
    pub process_gone: bool,
    /// Its redis-server still loads its dataset (from its volume, or a full sync): it answers
    /// `INFO`, but `keys` counts only what it loaded so far, and it refuses `REPLICAOF`.
    pub loading: bool,
    pub label: Option<Label>,
    /// How many keys its redis-server holds (`INFO keyspace`); 0 when it could not be read.
    pub keys: u64,
    /// Its redis-server refused the operator's password (`WRONGPASS`, `NOAUTH`): it runs, and
    /// is not to be taken for unreachable.
    pub refuses_auth: bool,
    /// What its redis-server answered; `None` when it could not be reached.
    pub redis: Option<RedisRole>,
    /// The replication history its offset counts in, when it answered.
    pub history: Option<History>,
    /// When it could not be read now: where it was last seen (earlier in this pass, or in an
    /// earlier one, by this controller; its own read, or its primary's count of what it
    /// acknowledged). A server unread now may hold everything up to there (DESIGN §10).
    pub last_read: Option<LastRead>,
}

/// Where a server was last seen: an offset in a replication history (`master_replid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRead {
    pub replid: String,
    pub offset: i64,
}

/// What to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Set (or with `None` remove) the pod's role label.
    Label { pod: String, role: Option<Label> },
    /// `REPLICAOF NO ONE`.
    Promote { pod: String },
    /// `REPLICAOF <host> <port>`.
    Follow { pod: String, host: String },
    /// `REPLICAOF` the fence: cut off whatever stream it is on, keeping its data.
    Fence { pod: String },
    /// Planned handover: pause writes on `from`, wait until `to` has everything, promote `to`,
    /// make `from` follow `to`, then move the labels and unpause (see
    /// [`crate::redis_server::switchover`]).
    Switchover { from: String, to: String },
}

/// The state of replication, for the status and Events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// A primary serves and every other pod replicates it in time.
    Replicating,
    /// A primary serves; some replicas are not linked or lag (the message says which).
    Degraded(String),
    /// The primary is unhealthy, for less than `failoverAfter` so far.
    PrimaryUnhealthy(String),
    /// A replica is promoted in this pass.
    FailingOver(String),
    /// The primary is lost, and a replica could take over, but a member the controller cannot
    /// read may hold acknowledged writes it lacks (issue #41.2): nothing is promoted until that
    /// member is read, its process is gone or its pod goes (the message says which).
    WaitingForMember(String),
    /// The primary is lost and no replica can take over.
    NoCandidate(String),
    /// No primary yet: waiting for the first pod's redis-server.
    Electing,
}

/// The decision for one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub steps: Vec<Step>,
    /// The primary once the steps are done.
    pub primary: Option<String>,
    pub health: Health,
    /// An Event to record: (reason, note).
    pub event: Option<(&'static str, String)>,
}

/// The inputs besides the members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Desired number of pods: ordinals at or above it are going away.
    pub replicas: u32,
    pub port: u16,
    /// How long the labelled primary has been seen unhealthy (`None`: it is healthy or unknown).
    pub primary_unhealthy_for: Option<Duration>,
    pub failover_after: Duration,
    /// `minReplicasMaxLag`: a replica whose last acknowledgement is older lags.
    pub max_lag_seconds: i64,
    /// A primary was ever chosen (`status.primary` is set): some pod may hold data.
    pub had_primary: bool,
    /// The ordinal of the last primary chosen (`status.primary`): after every pod restarted
    /// from its volume, it holds every write it acknowledged (a graceful stop flushes its
    /// append-only file), where a replica's copy may lack the latest ones, deletions included.
    pub last_primary: Option<u32>,
    /// While a restore is under way (`spec.restore`, §3o): the ordinal that starts with the
    /// backup's data, the only one that may be the first primary (any other would be empty).
    pub restored: Option<u32>,
}
