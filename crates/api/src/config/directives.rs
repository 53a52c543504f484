//! The redis.conf directives of Redis 7.0, as its `src/config.c` (`static_configs[]`, tag 7.0.15) lists them:
//! every `createXxxConfig(...)` row of that tag (commit f35f36a265403c07b119830aa4bb3b7d71653ec9, also the head
//! of the 7.0 branch), in order, with its flags, numeric bounds and `configEnum` words copied over.

/// What a directive's value looks like (what `CONFIG SET` would accept), as far as the table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// yes | no
    Bool,
    /// A whole number within bounds (Redis's numeric configs without MEMORY_CONFIG), inclusive.
    Integer { min: i64, max: i64 },
    /// A number of bytes, with an optional unit k kb m mb g gb (any case) (MEMORY_CONFIG), inclusive bounds in bytes;
    /// `percent`: PERCENT_CONFIG, where a value such as "10%" is accepted too.
    Memory { min: i64, max: i64, percent: bool },
    /// One of these words (createEnumConfig; any case). `several`: MULTI_ARG_CONFIG enums that take several words separated by spaces.
    Enum {
        values: &'static [&'static str],
        several: bool,
    },
    /// Free text (createStringConfig / createSDSConfig).
    Text,
    /// A special config (createSpecialConfig) whose own setter parses it (save, client-output-buffer-limit, oom-score-adj-values, notify-keyspace-events, bind, ...).
    Special,
}

/// Whether a running redis-server takes a new value (CONFIG SET) or only at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changes {
    /// Settable with CONFIG SET.
    Live,
    /// IMMUTABLE_CONFIG: read only at start.
    Restart,
    /// PROTECTED_CONFIG: CONFIG SET refuses it unless enable-protected-configs allows it.
    Protected,
}

/// One directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Directive {
    /// The name as redis.conf writes it.
    pub name: &'static str,
    /// The other name Redis accepts for it (e.g. "slaveof" for "replicaof"), if any.
    pub alias: Option<&'static str>,
    pub shape: Shape,
    pub changes: Changes,
    /// DENY_LOADING_CONFIG: refused while the dataset is loading (retry later).
    pub refused_while_loading: bool,
    /// The value a redis-server 7.0 started without any configuration reports for it (`CONFIG GET`), in the form `CONFIG SET` takes back: what a directive removed from `spec.config` is set back to.
    pub default: &'static str,
}

/// Every directive of Redis 7.0's table, in the table's order.
///
/// Bounds are the table's, with `INT_MAX`, `INT_MIN` and `UINT_MAX` written out and `LONG_MAX`,
/// `LLONG_MAX`, `ULLONG_MAX` and `SSIZE_MAX` as `i64::MAX`. `unixsocketperm` is read in octal
/// (OCTAL_CONFIG), hence `0o777`. The rows between the TLS comments exist only in a build with TLS.
#[rustfmt::skip]
pub const DIRECTIVES: &[Directive] = &[
    // Bool configs.
    Directive { name: "rdbchecksum", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "yes" },
    Directive { name: "daemonize", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "io-threads-do-reads", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "always-show-logo", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "protected-mode", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "rdbcompression", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "rdb-del-sync-files", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "activerehashing", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "stop-writes-on-bgsave-error", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "set-proc-title", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "yes" },
    Directive { name: "dynamic-hz", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "lazyfree-lazy-eviction", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "lazyfree-lazy-expire", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "lazyfree-lazy-server-del", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "lazyfree-lazy-user-del", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "lazyfree-lazy-user-flush", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "repl-disable-tcp-nodelay", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "repl-diskless-sync", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "aof-rewrite-incremental-fsync", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "no-appendfsync-on-rewrite", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "cluster-require-full-coverage", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "rdb-save-incremental-fsync", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "aof-load-truncated", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "aof-use-rdb-preamble", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "aof-timestamp-enabled", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "cluster-replica-no-failover", alias: Some("cluster-slave-no-failover"), shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "replica-lazy-flush", alias: Some("slave-lazy-flush"), shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "replica-serve-stale-data", alias: Some("slave-serve-stale-data"), shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "replica-read-only", alias: Some("slave-read-only"), shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "replica-ignore-maxmemory", alias: Some("slave-ignore-maxmemory"), shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "jemalloc-bg-thread", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "activedefrag", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "syslog-enabled", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "cluster-enabled", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "appendonly", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: true, default: "no" },
    Directive { name: "cluster-allow-reads-when-down", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "cluster-allow-pubsubshard-when-down", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "crash-log-enabled", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "crash-memcheck-enabled", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "use-exit-on-panic", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "disable-thp", alias: None, shape: Shape::Bool, changes: Changes::Restart, refused_while_loading: false, default: "yes" },
    Directive { name: "cluster-allow-replica-migration", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "replica-announced", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "latency-tracking", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "aof-disable-auto-gc", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "replica-ignore-disk-write-errors", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    // String Configs.
    Directive { name: "aclfile", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    Directive { name: "unixsocket", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    Directive { name: "pidfile", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    Directive { name: "replica-announce-ip", alias: Some("slave-announce-ip"), shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "masteruser", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "cluster-announce-ip", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "cluster-config-file", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "nodes.conf" },
    Directive { name: "cluster-announce-hostname", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "syslog-ident", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "redis" },
    Directive { name: "dbfilename", alias: None, shape: Shape::Text, changes: Changes::Protected, refused_while_loading: false, default: "dump.rdb" },
    Directive { name: "appendfilename", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "appendonly.aof" },
    Directive { name: "appenddirname", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "appendonlydir" },
    Directive { name: "server_cpulist", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    Directive { name: "bio_cpulist", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    Directive { name: "aof_rewrite_cpulist", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    Directive { name: "bgsave_cpulist", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    Directive { name: "ignore-warnings", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "proc-title-template", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "{title} {listen-addr} {server-mode}" },
    Directive { name: "bind-source-addr", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "logfile", alias: None, shape: Shape::Text, changes: Changes::Restart, refused_while_loading: false, default: "" },
    // SDS Configs.
    Directive { name: "masterauth", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "requirepass", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    // Enum Configs.
    Directive { name: "supervised", alias: None, shape: Shape::Enum { values: &["upstart", "systemd", "auto", "no"], several: false }, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "syslog-facility", alias: None, shape: Shape::Enum { values: &["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"], several: false }, changes: Changes::Restart, refused_while_loading: false, default: "local0" },
    Directive { name: "repl-diskless-load", alias: None, shape: Shape::Enum { values: &["disabled", "on-empty-db", "swapdb"], several: false }, changes: Changes::Live, refused_while_loading: true, default: "disabled" },
    Directive { name: "loglevel", alias: None, shape: Shape::Enum { values: &["debug", "verbose", "notice", "warning"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "notice" },
    Directive { name: "maxmemory-policy", alias: None, shape: Shape::Enum { values: &["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "noeviction" },
    Directive { name: "appendfsync", alias: None, shape: Shape::Enum { values: &["everysec", "always", "no"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "everysec" },
    Directive { name: "oom-score-adj", alias: None, shape: Shape::Enum { values: &["no", "yes", "relative", "absolute"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "acl-pubsub-default", alias: None, shape: Shape::Enum { values: &["allchannels", "resetchannels"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "resetchannels" },
    Directive { name: "sanitize-dump-payload", alias: None, shape: Shape::Enum { values: &["no", "yes", "clients"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "enable-protected-configs", alias: None, shape: Shape::Enum { values: &["no", "yes", "local"], several: false }, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "enable-debug-command", alias: None, shape: Shape::Enum { values: &["no", "yes", "local"], several: false }, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "enable-module-command", alias: None, shape: Shape::Enum { values: &["no", "yes", "local"], several: false }, changes: Changes::Restart, refused_while_loading: false, default: "no" },
    Directive { name: "cluster-preferred-endpoint-type", alias: None, shape: Shape::Enum { values: &["ip", "hostname", "unknown-endpoint"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "ip" },
    Directive { name: "propagation-error-behavior", alias: None, shape: Shape::Enum { values: &["ignore", "panic", "panic-on-replicas"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "ignore" },
    Directive { name: "shutdown-on-sigint", alias: None, shape: Shape::Enum { values: &["default", "save", "nosave", "now", "force"], several: true }, changes: Changes::Live, refused_while_loading: false, default: "default" },
    Directive { name: "shutdown-on-sigterm", alias: None, shape: Shape::Enum { values: &["default", "save", "nosave", "now", "force"], several: true }, changes: Changes::Live, refused_while_loading: false, default: "default" },
    // Integer configs.
    Directive { name: "databases", alias: None, shape: Shape::Integer { min: 1, max: 2147483647 }, changes: Changes::Restart, refused_while_loading: false, default: "16" },
    Directive { name: "port", alias: None, shape: Shape::Integer { min: 0, max: 65535 }, changes: Changes::Live, refused_while_loading: false, default: "6379" },
    Directive { name: "io-threads", alias: None, shape: Shape::Integer { min: 1, max: 128 }, changes: Changes::Restart, refused_while_loading: false, default: "1" },
    Directive { name: "auto-aof-rewrite-percentage", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "100" },
    Directive { name: "cluster-replica-validity-factor", alias: Some("cluster-slave-validity-factor"), shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "list-max-listpack-size", alias: Some("list-max-ziplist-size"), shape: Shape::Integer { min: -2147483648, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "-2" },
    Directive { name: "tcp-keepalive", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "300" },
    Directive { name: "cluster-migration-barrier", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "1" },
    Directive { name: "active-defrag-cycle-min", alias: None, shape: Shape::Integer { min: 1, max: 99 }, changes: Changes::Live, refused_while_loading: false, default: "1" },
    Directive { name: "active-defrag-cycle-max", alias: None, shape: Shape::Integer { min: 1, max: 99 }, changes: Changes::Live, refused_while_loading: false, default: "25" },
    Directive { name: "active-defrag-threshold-lower", alias: None, shape: Shape::Integer { min: 0, max: 1000 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "active-defrag-threshold-upper", alias: None, shape: Shape::Integer { min: 0, max: 1000 }, changes: Changes::Live, refused_while_loading: false, default: "100" },
    Directive { name: "lfu-log-factor", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "lfu-decay-time", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "1" },
    Directive { name: "replica-priority", alias: Some("slave-priority"), shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "100" },
    Directive { name: "repl-diskless-sync-delay", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "5" },
    Directive { name: "maxmemory-samples", alias: None, shape: Shape::Integer { min: 1, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "5" },
    Directive { name: "maxmemory-eviction-tenacity", alias: None, shape: Shape::Integer { min: 0, max: 100 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "timeout", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "replica-announce-port", alias: Some("slave-announce-port"), shape: Shape::Integer { min: 0, max: 65535 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "tcp-backlog", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Restart, refused_while_loading: false, default: "511" },
    Directive { name: "cluster-port", alias: None, shape: Shape::Integer { min: 0, max: 65535 }, changes: Changes::Restart, refused_while_loading: false, default: "0" },
    Directive { name: "cluster-announce-bus-port", alias: None, shape: Shape::Integer { min: 0, max: 65535 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "cluster-announce-port", alias: None, shape: Shape::Integer { min: 0, max: 65535 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "cluster-announce-tls-port", alias: None, shape: Shape::Integer { min: 0, max: 65535 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "repl-timeout", alias: None, shape: Shape::Integer { min: 1, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "60" },
    Directive { name: "repl-ping-replica-period", alias: Some("repl-ping-slave-period"), shape: Shape::Integer { min: 1, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "list-compress-depth", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "rdb-key-save-delay", alias: None, shape: Shape::Integer { min: -2147483648, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "key-load-delay", alias: None, shape: Shape::Integer { min: -2147483648, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "active-expire-effort", alias: None, shape: Shape::Integer { min: 1, max: 10 }, changes: Changes::Live, refused_while_loading: false, default: "1" },
    Directive { name: "hz", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "min-replicas-to-write", alias: Some("min-slaves-to-write"), shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "min-replicas-max-lag", alias: Some("min-slaves-max-lag"), shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "watchdog-period", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "shutdown-timeout", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "10" },
    Directive { name: "repl-diskless-sync-max-replicas", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    // Unsigned int configs.
    Directive { name: "maxclients", alias: None, shape: Shape::Integer { min: 1, max: 4294967295 }, changes: Changes::Live, refused_while_loading: false, default: "10000" },
    Directive { name: "unixsocketperm", alias: None, shape: Shape::Integer { min: 0, max: 0o777 }, changes: Changes::Restart, refused_while_loading: false, default: "0" },
    Directive { name: "socket-mark-id", alias: None, shape: Shape::Integer { min: 0, max: 4294967295 }, changes: Changes::Restart, refused_while_loading: false, default: "0" },
    // Unsigned Long configs.
    Directive { name: "active-defrag-max-scan-fields", alias: None, shape: Shape::Integer { min: 1, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "1000" },
    Directive { name: "slowlog-max-len", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "128" },
    Directive { name: "acllog-max-len", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "128" },
    // Long Long configs.
    Directive { name: "busy-reply-threshold", alias: Some("lua-time-limit"), shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "5000" },
    Directive { name: "cluster-node-timeout", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "15000" },
    Directive { name: "slowlog-log-slower-than", alias: None, shape: Shape::Integer { min: -1, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "10000" },
    Directive { name: "latency-monitor-threshold", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "proto-max-bulk-len", alias: None, shape: Shape::Memory { min: 1024 * 1024, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "536870912" },
    Directive { name: "stream-node-max-entries", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "100" },
    Directive { name: "repl-backlog-size", alias: None, shape: Shape::Memory { min: 1, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "1048576" },
    // Unsigned Long Long configs.
    Directive { name: "maxmemory", alias: None, shape: Shape::Memory { min: 0, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "cluster-link-sendbuf-limit", alias: None, shape: Shape::Memory { min: 0, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    // Size_t configs.
    Directive { name: "hash-max-listpack-entries", alias: Some("hash-max-ziplist-entries"), shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "512" },
    Directive { name: "set-max-intset-entries", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "512" },
    Directive { name: "zset-max-listpack-entries", alias: Some("zset-max-ziplist-entries"), shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "128" },
    Directive { name: "active-defrag-ignore-bytes", alias: None, shape: Shape::Memory { min: 1, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "104857600" },
    Directive { name: "hash-max-listpack-value", alias: Some("hash-max-ziplist-value"), shape: Shape::Memory { min: 0, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "64" },
    Directive { name: "stream-node-max-bytes", alias: None, shape: Shape::Memory { min: 0, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "4096" },
    Directive { name: "zset-max-listpack-value", alias: Some("zset-max-ziplist-value"), shape: Shape::Memory { min: 0, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "64" },
    Directive { name: "hll-sparse-max-bytes", alias: None, shape: Shape::Memory { min: 0, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "3000" },
    Directive { name: "tracking-table-max-keys", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "1000000" },
    Directive { name: "client-query-buffer-limit", alias: None, shape: Shape::Memory { min: 1024 * 1024, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "1073741824" },
    Directive { name: "maxmemory-clients", alias: None, shape: Shape::Memory { min: -100, max: i64::MAX, percent: true }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    // Other configs.
    Directive { name: "repl-backlog-ttl", alias: None, shape: Shape::Integer { min: 0, max: i64::MAX }, changes: Changes::Live, refused_while_loading: false, default: "3600" },
    Directive { name: "auto-aof-rewrite-min-size", alias: None, shape: Shape::Memory { min: 0, max: i64::MAX, percent: false }, changes: Changes::Live, refused_while_loading: false, default: "67108864" },
    Directive { name: "loading-process-events-interval-bytes", alias: None, shape: Shape::Integer { min: 1024, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "2097152" },
    // Only in a build with TLS (`#ifdef USE_OPENSSL`).
    Directive { name: "tls-port", alias: None, shape: Shape::Integer { min: 0, max: 65535 }, changes: Changes::Live, refused_while_loading: false, default: "0" },
    Directive { name: "tls-session-cache-size", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "20480" },
    Directive { name: "tls-session-cache-timeout", alias: None, shape: Shape::Integer { min: 0, max: 2147483647 }, changes: Changes::Live, refused_while_loading: false, default: "300" },
    Directive { name: "tls-cluster", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "tls-replication", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "tls-auth-clients", alias: None, shape: Shape::Enum { values: &["no", "yes", "optional"], several: false }, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "tls-prefer-server-ciphers", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "no" },
    Directive { name: "tls-session-caching", alias: None, shape: Shape::Bool, changes: Changes::Live, refused_while_loading: false, default: "yes" },
    Directive { name: "tls-cert-file", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-key-file", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-key-file-pass", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-client-cert-file", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-client-key-file", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-client-key-file-pass", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-dh-params-file", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-ca-cert-file", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-ca-cert-dir", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-protocols", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-ciphers", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "tls-ciphersuites", alias: None, shape: Shape::Text, changes: Changes::Live, refused_while_loading: false, default: "" },
    // End of the TLS-only rows.
    // Special configs.
    Directive { name: "dir", alias: None, shape: Shape::Special, changes: Changes::Protected, refused_while_loading: true, default: "" },
    Directive { name: "save", alias: None, shape: Shape::Special, changes: Changes::Live, refused_while_loading: false, default: "3600 1 300 100 60 10000" },
    Directive { name: "client-output-buffer-limit", alias: None, shape: Shape::Special, changes: Changes::Live, refused_while_loading: false, default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60" },
    Directive { name: "oom-score-adj-values", alias: None, shape: Shape::Special, changes: Changes::Live, refused_while_loading: false, default: "0 200 800" },
    Directive { name: "notify-keyspace-events", alias: None, shape: Shape::Special, changes: Changes::Live, refused_while_loading: false, default: "" },
    Directive { name: "bind", alias: None, shape: Shape::Special, changes: Changes::Live, refused_while_loading: false, default: "* -::*" },
    Directive { name: "replicaof", alias: Some("slaveof"), shape: Shape::Special, changes: Changes::Restart, refused_while_loading: false, default: "no one" },
    Directive { name: "latency-tracking-info-percentiles", alias: None, shape: Shape::Special, changes: Changes::Live, refused_while_loading: false, default: "50 99 99.9" },
];

/// The directive called `name` (or by its alias), any case, as Redis looks names up.
pub fn directive(name: &str) -> Option<&'static Directive> {
    DIRECTIVES.iter().find(|d| {
        d.name.eq_ignore_ascii_case(name) || d.alias.is_some_and(|a| a.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> &'static Directive {
        directive(name).expect(name)
    }

    #[test]
    fn count_matches_the_source() {
        // 178 createXxxConfig rows in 7.0.15's static_configs[] (20 of them TLS-only).
        assert_eq!(DIRECTIVES.len(), 178);
        let count = |c: Changes| DIRECTIVES.iter().filter(|d| d.changes == c).count();
        assert_eq!(count(Changes::Restart), 32);
        assert_eq!(count(Changes::Protected), 2);
        assert_eq!(count(Changes::Live), 144);
    }

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut all: Vec<&str> = DIRECTIVES
            .iter()
            .flat_map(|d| std::iter::once(d.name).chain(d.alias))
            .collect();
        for n in &all {
            assert_eq!(*n, n.to_ascii_lowercase(), "{n}");
        }
        let before = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), before);
    }

    #[test]
    fn maxmemory() {
        let d = get("maxmemory");
        assert_eq!(
            d.shape,
            Shape::Memory {
                min: 0,
                max: i64::MAX,
                percent: false
            }
        );
        assert_eq!(d.changes, Changes::Live);
        assert_eq!(directive("MaxMemory"), Some(d));
    }

    #[test]
    fn maxmemory_clients_is_a_percentage() {
        let d = get("maxmemory-clients");
        assert_eq!(
            d.shape,
            Shape::Memory {
                min: -100,
                max: i64::MAX,
                percent: true
            }
        );
    }

    #[test]
    fn databases_needs_a_restart() {
        let d = get("databases");
        assert_eq!(d.changes, Changes::Restart);
        assert_eq!(
            d.shape,
            Shape::Integer {
                min: 1,
                max: 2147483647
            }
        );
    }

    #[test]
    fn aliases() {
        assert_eq!(get("slaveof").name, "replicaof");
        assert_eq!(get("SLAVEOF").changes, Changes::Restart);
        assert_eq!(get("lua-time-limit").name, "busy-reply-threshold");
        assert_eq!(
            get("hash-max-ziplist-entries").name,
            "hash-max-listpack-entries"
        );
        assert_eq!(directive("no-such-directive"), None);
    }

    #[test]
    fn protected_and_loading() {
        let dir = get("dir");
        assert_eq!(dir.changes, Changes::Protected);
        assert_eq!(dir.shape, Shape::Special);
        assert!(dir.refused_while_loading);
        assert_eq!(get("dbfilename").changes, Changes::Protected);
        assert!(get("appendonly").refused_while_loading);
        assert!(get("repl-diskless-load").refused_while_loading);
        let loading = DIRECTIVES
            .iter()
            .filter(|d| d.refused_while_loading)
            .count();
        assert_eq!(loading, 3);
    }

    #[test]
    fn enums() {
        let Shape::Enum { values, several } = get("maxmemory-policy").shape else {
            panic!("maxmemory-policy is an enum");
        };
        assert!(values.contains(&"allkeys-lru"));
        assert!(!several);
        let Shape::Enum { values, several } = get("shutdown-on-sigterm").shape else {
            panic!("shutdown-on-sigterm is an enum");
        };
        assert_eq!(values, ["default", "save", "nosave", "now", "force"]);
        assert!(several);
    }

    #[test]
    fn defaults_fit_their_shape() {
        for d in DIRECTIVES {
            match d.shape {
                Shape::Bool => assert!(
                    d.default == "yes" || d.default == "no",
                    "{}: {:?}",
                    d.name,
                    d.default
                ),
                Shape::Integer { min, max } | Shape::Memory { min, max, .. } => {
                    let n: i64 = d
                        .default
                        .parse()
                        .unwrap_or_else(|_| panic!("{}: {:?}", d.name, d.default));
                    assert!((min..=max).contains(&n), "{}: {n}", d.name);
                }
                Shape::Enum { values, several } => {
                    let words: Vec<&str> = d.default.split_whitespace().collect();
                    assert!(!words.is_empty(), "{}: empty", d.name);
                    assert!(several || words.len() == 1, "{}: {:?}", d.name, d.default);
                    for w in words {
                        assert!(
                            values.iter().any(|v| v.eq_ignore_ascii_case(w)),
                            "{}: {w:?}",
                            d.name
                        );
                    }
                }
                Shape::Text | Shape::Special => {}
            }
        }
    }

    #[test]
    fn some_defaults() {
        assert_eq!(get("maxmemory-policy").default, "noeviction");
        assert_eq!(get("databases").default, "16");
        assert_eq!(get("port").default, "6379");
        assert_eq!(get("proto-max-bulk-len").default, "536870912");
        assert_eq!(get("save").default, "3600 1 300 100 60 10000");
        assert_eq!(
            get("client-output-buffer-limit").default,
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        assert_eq!(get("oom-score-adj-values").default, "0 200 800");
        assert_eq!(get("notify-keyspace-events").default, "");
        assert_eq!(get("bind").default, "* -::*");
        assert_eq!(get("acl-pubsub-default").default, "resetchannels");
        assert_eq!(get("shutdown-on-sigterm").default, "default");
        assert_eq!(get("unixsocketperm").default, "0");
    }
}
