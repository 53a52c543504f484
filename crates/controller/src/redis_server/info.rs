//! What one redis-server says about its part in replication (`INFO replication`), parsed. Pure.

/// Where a pod's redis-server points when it starts in Replication mode: a port nothing listens
/// on. A process that (re)starts is a replica of nowhere until the operator says otherwise, so a
/// primary whose redis-server restarted empty never feeds its emptiness to the replicas (they
/// get `-NOMASTERLINK` from it and keep their data), and a new pod never takes writes by itself.
pub const FENCE_HOST: &str = "127.0.0.1";
pub const FENCE_PORT: u16 = 1;

/// A redis-server's replication state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisRole {
    Primary {
        /// `master_repl_offset`.
        offset: i64,
        /// The replicas it sees (`slaveN:` lines).
        replicas: Vec<ReplicaLink>,
    },
    Replica {
        /// `master_host`, `master_port`: where it replicates from.
        primary_host: String,
        primary_port: u16,
        /// `master_link_status:up`.
        link_up: bool,
        /// It holds a primary's stream, taken since its process started: the link is up, or
        /// `master_link_down_since_seconds` counts from a link that was (it is `-1` for a
        /// server that never finished a sync: new, restarted, or in its first full sync), or it
        /// was a primary itself with data (`master_replid2` set by its promotion and an offset
        /// above 0: a promoted server told to follow the fence says `-1` too, as Redis resets
        /// the link's clock when it becomes a primary). Only such a server holds what a primary
        /// streamed or took; one told to follow the fence by the operator keeps it.
        linked: bool,
        /// `slave_repl_offset`: how much of the primary's stream it has processed.
        offset: i64,
        /// `master_last_io_seconds_ago`: how long since its primary last sent anything (its
        /// stream, or a ping every `repl-ping-replica-period`); `-1` when not linked.
        last_io: i64,
    },
}

/// One `slaveN:ip=...,port=...,state=online,offset=...,lag=...` line of a primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaLink {
    pub ip: String,
    pub port: u16,
    pub online: bool,
    pub offset: i64,
    /// Seconds since its last acknowledgement.
    pub lag: i64,
}

impl RedisRole {
    /// Reads the text of `INFO replication`; `None` when it is not that.
    pub fn parse(info: &str) -> Option<Self> {
        let field = |key: &str| {
            info.lines()
                .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':'))
                .map(str::trim)
        };
        let number = |key: &str| field(key).and_then(|v| v.parse::<i64>().ok());
        match field("role")? {
            "master" => Some(RedisRole::Primary {
                offset: number("master_repl_offset").unwrap_or(0),
                replicas: info.lines().filter_map(ReplicaLink::parse).collect(),
            }),
            "slave" => {
                let link_up = field("master_link_status") == Some("up");
                let offset = number("slave_repl_offset").unwrap_or(0);
                let was_primary =
                    field("master_replid2").is_some_and(|id| !id.trim_matches('0').is_empty());
                Some(RedisRole::Replica {
                    primary_host: field("master_host")?.to_owned(),
                    primary_port: field("master_port")?.parse().ok()?,
                    link_up,
                    linked: link_up
                        || number("master_link_down_since_seconds").is_some_and(|s| s >= 0)
                        || (was_primary && offset > 0),
                    offset,
                    last_io: if link_up {
                        number("master_last_io_seconds_ago").unwrap_or(-1)
                    } else {
                        -1
                    },
                })
            }
            _ => None,
        }
    }

    /// A replica of the fence address: started (or restarted) and not yet told whom to follow.
    pub fn is_fenced(&self) -> bool {
        matches!(self, RedisRole::Replica { primary_host, primary_port, .. }
            if primary_host == FENCE_HOST && *primary_port == FENCE_PORT)
    }

    /// True for a replica of `host:port`.
    pub fn follows(&self, host: &str, port: u16) -> bool {
        matches!(self, RedisRole::Replica { primary_host, primary_port, .. }
            if primary_host == host && *primary_port == port)
    }

    /// The replication offset: how much of a primary's stream this server has.
    pub fn offset(&self) -> i64 {
        match self {
            RedisRole::Primary { offset, .. } | RedisRole::Replica { offset, .. } => *offset,
        }
    }
}

/// Which replication history a server's offset counts in (`INFO replication`): offsets of two
/// histories say nothing of each other, so what the controller remembers of a server is compared
/// only within one (issue #41.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct History {
    /// `master_replid`: the history its offset counts in (a replica takes its primary's).
    pub replid: String,
    /// `master_replid2`: the history it continued from when it was promoted or its primary
    /// changed (all zeros: none).
    pub replid2: String,
    /// `second_repl_offset`: it holds `replid2`'s stream up to the byte before this one (`-1`:
    /// none).
    pub second_offset: i64,
}

impl History {
    /// Reads the text of `INFO replication`; `None` without a `master_replid`.
    pub fn parse(info: &str) -> Option<Self> {
        let field = |key: &str| {
            info.lines()
                .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':'))
                .map(str::trim)
        };
        Some(History {
            replid: field("master_replid")?.to_owned(),
            replid2: field("master_replid2").unwrap_or_default().to_owned(),
            second_offset: field("second_repl_offset")
                .and_then(|v| v.parse().ok())
                .unwrap_or(-1),
        })
    }

    /// How much of history `replid`'s stream a server of this history holding `offset` of its
    /// own has: all of it up to `offset` in its own history, up to where it left the one before
    /// in that one; `None` for any other (nothing can be said of it).
    pub fn holds_of(&self, offset: i64, replid: &str) -> Option<i64> {
        if replid == self.replid {
            Some(offset)
        } else if replid == self.replid2 && self.second_offset > 0 {
            Some(offset.min(self.second_offset - 1))
        } else {
            None
        }
    }
}

/// The keys of every database in the text of `INFO keyspace` (`db0:keys=3,expires=0,...`).
pub fn keys(info: &str) -> u64 {
    info.lines()
        .filter(|l| l.trim_start().starts_with("db"))
        .filter_map(|l| {
            let (_, fields) = l.split_once(':')?;
            fields
                .split(',')
                .find_map(|kv| kv.strip_prefix("keys="))?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .fold(0, u64::saturating_add)
}

/// Whether the text of `INFO persistence` says the server still loads its dataset
/// (`loading:1`): from its own files after a start, or what a primary sent it.
pub fn loading(info: &str) -> bool {
    info.lines()
        .filter_map(|l| l.trim().split_once(':'))
        .any(|(key, value)| key == "loading" && value.trim() == "1")
}

impl ReplicaLink {
    fn parse(line: &str) -> Option<Self> {
        let (key, value) = line.trim().split_once(':')?;
        let index = key.strip_prefix("slave")?;
        if index.is_empty() || !index.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let get = |name: &str| {
            value
                .split(',')
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        };
        Some(ReplicaLink {
            ip: get("ip")?.to_owned(),
            port: get("port")?.parse().ok()?,
            online: get("state") == Some("online"),
            offset: get("offset")?.parse().ok()?,
            lag: get("lag").and_then(|v| v.parse().ok()).unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIMARY: &str = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
        slave0:ip=10.88.1.2,port=6379,state=online,offset=1234,lag=0\r\n\
        slave1:ip=10.88.1.3,port=6379,state=wait_bgsave,offset=0,lag=7\r\n\
        master_failover_state:no-failover\r\nmaster_replid:abc\r\nmaster_repl_offset:1250\r\n";

    const REPLICA: &str = "# Replication\r\nrole:slave\r\nmaster_host:10.88.1.1\r\n\
        master_port:6379\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:1\r\n\
        slave_read_repl_offset:1250\r\nslave_repl_offset:1240\r\nmaster_repl_offset:1240\r\n";

    #[test]
    fn a_primary_and_its_replicas_are_read() {
        let role = RedisRole::parse(PRIMARY).expect("parses");
        assert_eq!(
            role,
            RedisRole::Primary {
                offset: 1250,
                replicas: vec![
                    ReplicaLink {
                        ip: "10.88.1.2".into(),
                        port: 6379,
                        online: true,
                        offset: 1234,
                        lag: 0
                    },
                    ReplicaLink {
                        ip: "10.88.1.3".into(),
                        port: 6379,
                        online: false,
                        offset: 0,
                        lag: 7
                    },
                ],
            }
        );
        assert_eq!(role.offset(), 1250);
        assert!(!role.is_fenced());
    }

    #[test]
    fn a_replica_is_read_with_its_processed_offset() {
        let role = RedisRole::parse(REPLICA).expect("parses");
        assert_eq!(
            role,
            RedisRole::Replica {
                primary_host: "10.88.1.1".into(),
                primary_port: 6379,
                link_up: true,
                linked: true,
                offset: 1240,
                last_io: 1,
            }
        );
        assert!(role.follows("10.88.1.1", 6379));
        assert!(!role.follows("10.88.1.1", 6380));
    }

    #[test]
    fn a_fenced_server_is_a_replica_of_nowhere() {
        let fenced = "role:slave\nmaster_host:127.0.0.1\nmaster_port:1\nmaster_link_status:down\n";
        let role = RedisRole::parse(fenced).expect("parses");
        assert!(role.is_fenced());
        assert_eq!(role.offset(), 0);
    }

    #[test]
    fn a_replica_that_was_linked_is_told_from_one_that_never_was() {
        // As Redis 7.0 says it: told to follow the fence after a sync, it keeps the data and
        // counts the seconds since the link went down; new (or restarted, or in its first full
        // sync) it says -1.
        let cut = "role:slave\nmaster_host:127.0.0.1\nmaster_port:1\nmaster_link_status:down\n\
                   slave_repl_offset:50\nmaster_link_down_since_seconds:3\n";
        let new = "role:slave\nmaster_host:127.0.0.1\nmaster_port:1\nmaster_link_status:down\n\
                   slave_repl_offset:1\nmaster_link_down_since_seconds:-1\n";
        let linked = |text| matches!(RedisRole::parse(text), Some(RedisRole::Replica { linked, .. }) if linked);
        assert!(linked(cut));
        assert!(!linked(new));
        assert!(linked(REPLICA), "the link is up");
    }

    #[test]
    fn a_promoted_server_told_to_follow_the_fence_still_holds_its_data() {
        // What a chaos run found (fault 112): promoted (REPLICAOF NO ONE), then cut off again
        // by the next pass, a server says its link never was (-1), like a new one. With every
        // data-holding server in that state no replica was a candidate, and the Redis stayed
        // without a primary. Its replid2 (set by the promotion) and offset say it holds data.
        let promoted_then_cut = "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n\
            master_port:1\r\nmaster_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\n\
            master_sync_in_progress:0\r\nslave_read_repl_offset:213846637\r\n\
            slave_repl_offset:213846637\r\nmaster_link_down_since_seconds:-1\r\n\
            master_replid:f532f8c04f23d59bfc4217c904949c33553aa004\r\n\
            master_replid2:cad48de83433fc631c3ad266896afd3499b3ee69\r\n\
            master_repl_offset:213846637\r\nsecond_repl_offset:213846638\r\n";
        let linked = |text: &str| matches!(RedisRole::parse(text), Some(RedisRole::Replica { linked, .. }) if linked);
        assert!(linked(promoted_then_cut));
        // Promoted while empty (a first election) and cut before any write: nothing to keep.
        let empty = "role:slave\nmaster_host:127.0.0.1\nmaster_port:1\nmaster_link_status:down\n\
            slave_repl_offset:0\nmaster_link_down_since_seconds:-1\n\
            master_replid2:0ba0ff10963fb3f639648e1358f1c6fbea6457dc\n";
        assert!(!linked(empty));
        // Never a primary (replid2 all zeros), new: not linked.
        let fresh = "role:slave\nmaster_host:127.0.0.1\nmaster_port:1\nmaster_link_status:down\n\
            slave_repl_offset:209262466\nmaster_link_down_since_seconds:-1\n\
            master_replid2:0000000000000000000000000000000000000000\n";
        assert!(!linked(fresh));
    }

    #[test]
    fn a_history_holds_its_own_stream_and_the_one_before_up_to_where_it_left_it() {
        let promoted = History::parse(
            "role:master\nmaster_replid:new\nmaster_replid2:old\n\
             master_repl_offset:900\nsecond_repl_offset:701\n",
        )
        .expect("parses");
        assert_eq!(promoted.holds_of(900, "new"), Some(900));
        assert_eq!(promoted.holds_of(900, "old"), Some(700));
        assert_eq!(promoted.holds_of(900, "other"), None);
        let never = History::parse(
            "role:slave\nmaster_replid:abc\n\
             master_replid2:0000000000000000000000000000000000000000\nsecond_repl_offset:-1\n",
        )
        .expect("parses");
        assert_eq!(
            never.holds_of(5, "0000000000000000000000000000000000000000"),
            None
        );
        assert_eq!(History::parse("role:master\n"), None);
    }

    #[test]
    fn keys_are_counted_over_every_database() {
        let info =
            "# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\ndb5:keys=10,expires=1,avg_ttl=9\r\n";
        assert_eq!(keys(info), 13);
        assert_eq!(keys("# Keyspace\r\n"), 0);
        assert_eq!(keys("db0:keys=x\r\n"), 0, "not a number: not counted");
    }

    #[test]
    fn other_text_is_not_a_role() {
        assert_eq!(RedisRole::parse(""), None);
        assert_eq!(RedisRole::parse("role:sentinel\n"), None);
        assert_eq!(RedisRole::parse("role:slave\nmaster_port:x\n"), None);
    }

    #[test]
    fn a_server_loading_its_dataset_says_so() {
        let persistence =
            "# Persistence\r\nloading:1\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\n";
        assert!(loading(persistence));
        assert!(!loading(
            "# Persistence\r\nloading:0\r\nasync_loading:0\r\n"
        ));
        assert!(!loading("async_loading:1\r\n"), "another field");
        assert!(!loading(""), "nothing said: not loading");
    }
}
