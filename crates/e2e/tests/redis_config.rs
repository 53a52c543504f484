//! Redis's own configuration (DESIGN §3m) against real redis-server processes on 127.0.0.1: the
//! table of directives agrees with the redis-server the bed runs (every default a directive is
//! set back to is the one it starts with, and `CONFIG SET` takes it back); the values the
//! webhook takes, redis-server takes, and the ones it refuses for Redis's reasons, redis-server
//! refuses; settings reach redis-server as the pods start it (values with spaces, empty ones);
//! and `Server::set_config` applies what it can, naming what redis-server refused.

use api::RedisSpec;
use api::config::{Applied, directive, owned, value_problem};
use controller::redis_server::config::NotSet;
use e2e::Error;
use e2e::local_redis::LocalRedis;
use serde_json::json;

/// Directives whose value at start depends on the machine, not on Redis's table.
const ENVIRONMENTAL: [&str; 1] = [
    // Lowered to what the open-files limit allows.
    "maxclients",
];

/// `Server::set_config` on `redis`: what it did not set.
async fn set(redis: &LocalRedis, settings: &[(&str, &str)]) -> Result<Vec<NotSet>, Error> {
    redis
        .server("local")
        .set_config(settings)
        .await
        .map_err(|e| Error::process("CONFIG SET", e))
}

/// Every live directive a Redis may set starts at the table's default on a redis-server started
/// without it, and `CONFIG SET` takes that default back: what a directive removed from the spec
/// is set to is what it was before it was set.
#[tokio::test]
async fn every_live_directive_a_redis_may_set_starts_at_the_table_s_default() -> Result<(), Error> {
    let redis = LocalRedis::start(&[]).await?;
    let plain = RedisSpec::default();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for d in api::config::directives::DIRECTIVES {
        let live = api::config::how_applied(d) == Applied::Live;
        if !live || owned(d.name, &plain).is_some() || ENVIRONMENTAL.contains(&d.name) {
            continue;
        }
        // The machine's redis-server may be built without TLS: its tls-* rows are the
        // operator's anyway (owned above).
        let now = redis.config_get(d.name).await?;
        if now != d.default {
            wrong.push(format!(
                "{}: starts at {now:?}, the table says {:?}",
                d.name, d.default
            ));
        }
        let set = set(&redis, &[(d.name, d.default)]).await?;
        if !set.is_empty() {
            wrong.push(format!("{}: CONFIG SET of the default: {set:?}", d.name));
        }
        checked += 1;
    }
    eprintln!("redis-config: {checked} live directives checked against redis-server");
    assert!(checked > 100, "only {checked} directives checked");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    Ok(())
}

/// Values the webhook's shapes take, redis-server takes; values they refuse for Redis's own
/// reasons (bounds, units, enum words, yes/no), redis-server refuses too.
#[tokio::test]
async fn the_value_shapes_agree_with_redis_server() -> Result<(), Error> {
    let redis = LocalRedis::start(&[]).await?;
    let taken = [
        ("maxmemory", "100mb"),
        ("maxmemory", "1GB"),
        ("maxmemory", "512k"),
        ("maxmemory-clients", "10%"),
        ("maxmemory-policy", "ALLKEYS-LRU"),
        ("lazyfree-lazy-eviction", "YES"),
        ("hz", "100"),
        ("save", ""),
        ("save", "3600 1 300 100"),
        ("notify-keyspace-events", "Ex"),
        ("client-output-buffer-limit", "pubsub 64mb 16mb 60"),
        ("shutdown-on-sigterm", "nosave force"),
    ];
    let refused = [
        ("maxmemory", "100MiB"),
        ("maxmemory", "1.5gb"),
        ("maxmemory-policy", "lru"),
        ("lazyfree-lazy-eviction", "true"),
        ("hz", "lots"),
        ("maxmemory-clients", "101%"),
        ("timeout", "-1"),
    ];
    for (name, value) in taken {
        let d = directive(name).expect(name);
        assert_eq!(value_problem(d, value), None, "{name} {value:?}");
        let not_set = set(&redis, &[(name, value)]).await?;
        assert!(not_set.is_empty(), "{name} {value:?}: {not_set:?}");
    }
    for (name, value) in refused {
        let d = directive(name).expect(name);
        assert!(
            value_problem(d, value).is_some(),
            "the webhook takes {name} {value:?}"
        );
        let not_set = set(&redis, &[(name, value)]).await?;
        assert!(
            matches!(not_set.as_slice(), [NotSet::Refused(_)]),
            "redis-server takes {name} {value:?}: {not_set:?}"
        );
    }
    Ok(())
}

/// A spec's settings as the pods start redis-server with them (one argument per value, spaces
/// and empty values included) are what redis-server runs; `set_config` applies every value it
/// can and names the one redis-server refuses.
#[tokio::test]
async fn settings_reach_redis_server_at_start_and_live() -> Result<(), Error> {
    let spec: RedisSpec = serde_json::from_value(json!({
        "resources": {"limits": {"memory": "128Mi"}},
        "config": {
            "save": "3600 1 300 100",
            "notify-keyspace-events": "Ex",
            "maxmemory-policy": "allkeys-lru",
            "databases": "4",
            "proc-title-template": "{title} {listen-addr} \"quoted\"",
        }
    }))
    .map_err(|e| Error::process("the spec", e))?;
    let settings = api::config::settings(&spec);
    let redis = LocalRedis::start(&api::config::start_args(&settings, false)).await?;
    for (name, value) in [
        ("save", "3600 1 300 100"),
        ("notify-keyspace-events", "xE"),
        ("maxmemory-policy", "allkeys-lru"),
        ("databases", "4"),
        ("maxmemory", "107374182"),
        ("proc-title-template", "{title} {listen-addr} \"quoted\""),
    ] {
        assert_eq!(redis.config_get(name).await?, value, "{name}");
    }
    let not_set = set(
        &redis,
        &[
            ("hz", "20"),
            ("save", "often"),
            ("maxmemory-policy", "volatile-lru"),
        ],
    )
    .await?;
    match not_set.as_slice() {
        [NotSet::Refused(message)] => assert!(message.starts_with("save \"often\": "), "{message}"),
        other => panic!("expected save refused, got {other:?}"),
    }
    assert_eq!(redis.config_get("hz").await?, "20");
    assert_eq!(redis.config_get("maxmemory-policy").await?, "volatile-lru");
    Ok(())
}
