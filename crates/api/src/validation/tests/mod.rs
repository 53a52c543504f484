//! The admission rules' tests (DESIGN §2), through the entry points of [`Policy`], as a
//! `kubectl` user meets the rules: one file per rule file of `validation` (`policy` for the
//! entry points and rules of `validation` itself), and here the fixtures they share.

mod acl;
mod auth;
mod config;
mod exporter;
mod image;
mod meta;
mod network_policy;
mod pdb;
mod placement;
mod policy;
mod replication;
mod service;
mod storage;
mod tls;
mod violation;

use super::*;
use crate::types::RedisSpec;
use serde_json::json;

fn redis(name: &str, spec: serde_json::Value) -> Redis {
    let spec: RedisSpec = serde_json::from_value(spec).expect("test spec decodes");
    let mut r = Redis::new(name, spec);
    r.metadata.namespace = Some("default".into());
    r
}

fn valid() -> Redis {
    redis(
        "my-op-redis",
        json!({"replicas": 2, "image": "redis:7.2-alpine", "port": 6379}),
    )
}

impl Verdict {
    /// The warnings other than the NetworkPolicy's (which every Redis without auth and a
    /// policy gets): what the tests of the other rules look at.
    fn other_warnings(&self) -> Vec<String> {
        self.warnings
            .iter()
            .filter(|w| !w.starts_with("spec.networkPolicy"))
            .cloned()
            .collect()
    }
}

fn fields(v: &Verdict) -> Vec<&str> {
    v.violations.iter().map(|v| v.field.as_str()).collect()
}

/// A Replication Redis that passes every rule without a warning.
fn replicated(extra: serde_json::Value) -> Redis {
    let mut spec = json!({
        "replicas": 3, "image": "redis:7.2-alpine", "mode": "Replication",
        "auth": {"secretRef": {"name": "my-redis-auth"}}
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    redis("r", spec)
}
