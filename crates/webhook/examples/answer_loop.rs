//! Instructions per review, for callgrind: answers one fixed review N times through the same
//! function the server's handler calls (`admission::respond`: decode, decide, the answer's bytes).
//!
//! Usage: answer_loop (validate-create | mutate-create | validate-update | mutate-update) N
//!
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out --collect-atstart=no \
//!     --toggle-collect='answer_loop::run' target/release/examples/answer_loop validate-update 1000
//!
//! with `--collect-atstart=no --toggle-collect='answer_loop::run'` to count only the loop (after
//! one warm-up review), and divide the total by N.

use api::Policy;
use serde_json::{Value, json};
use std::hint::black_box;
use webhook::admission::{self, Endpoint};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, which, n] = args.as_slice() else {
        return Err("usage: answer_loop REVIEW N".into());
    };
    let n: usize = n.parse()?;
    let (endpoint, body) = match which.as_str() {
        "validate-create" => (Endpoint::Validate, create_review(my_op_redis())),
        "mutate-create" => (Endpoint::Mutate, create_review(empty_spec())),
        "validate-update" => (Endpoint::Validate, update_review()),
        "mutate-update" => (Endpoint::Mutate, update_review()),
        other => return Err(format!("unknown review {other}").into()),
    };
    let policy = Policy::default();
    // Warm up: one-time work (the image reference regex, lazily compiled) is not per review.
    admission::respond(endpoint, &policy, &body)?;
    let bytes = run(endpoint, &policy, &body, n)?;
    eprintln!(
        "{which}: {} byte review, {bytes} bytes answered",
        body.len()
    );
    Ok(())
}

/// The measured loop: answer `n` times, as the handler does.
#[inline(never)]
fn run(
    endpoint: Endpoint,
    policy: &Policy,
    body: &[u8],
    n: usize,
) -> Result<usize, Box<dyn std::error::Error>> {
    let mut total = 0;
    for _ in 0..n {
        let answered = admission::respond(endpoint, policy, black_box(body))?;
        total += black_box(answered.body?).len();
    }
    Ok(total)
}

fn review(
    operation: &str,
    uid: &str,
    namespace: &str,
    object: Value,
    old: Value,
    user: Value,
) -> Vec<u8> {
    let options = match operation {
        "CREATE" => "CreateOptions",
        _ => "UpdateOptions",
    };
    let kind = json!({"group": "myapp.tangx.in", "version": "v1", "kind": "Redis"});
    let resource = json!({"group": "myapp.tangx.in", "version": "v1", "resource": "redis"});
    let name = object["metadata"]["name"].clone();
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
            "name": name, "namespace": namespace, "operation": operation,
            "userInfo": user,
            "object": object, "oldObject": old,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options}
        }
    }))
    .unwrap_or_default()
}

fn create_review(object: Value) -> Vec<u8> {
    let user = json!({"username": "bench", "groups": ["system:authenticated"]});
    review(
        "CREATE",
        "bench-create",
        "default",
        object,
        Value::Null,
        user,
    )
}

fn my_op_redis() -> Value {
    json!({"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
           "metadata": {"name": "my-op-redis", "namespace": "default"},
           "spec": {"replicas": 2, "image": "redis:5-alpine", "port": 8333}})
}

fn empty_spec() -> Value {
    json!({"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
           "metadata": {"name": "r", "namespace": "default"}, "spec": {}})
}

/// A managedFields `fieldsV1` tree from `|`-separated paths, as the API server writes it.
fn fields(paths: &[&str]) -> Value {
    let mut tree = serde_json::Map::new();
    for path in paths {
        let mut here = &mut tree;
        for part in path.split('|') {
            let next = here.entry(part).or_insert_with(|| json!({}));
            let Value::Object(map) = next else { break };
            here = map;
        }
    }
    fn dot(node: &mut serde_json::Map<String, Value>, top: bool) {
        let has_children = !node.is_empty();
        for (key, child) in node.iter_mut() {
            if let Value::Object(map) = child {
                dot(map, top && key == "f:metadata");
            }
        }
        if has_children && !top {
            node.insert(".".to_owned(), json!({}));
        }
    }
    for (key, child) in tree.iter_mut() {
        if let Value::Object(map) = child {
            dot(map, key == "f:metadata");
        }
    }
    Value::Object(tree)
}

/// `kubectl apply` of a Replication-mode Redis, replicas 3 -> 5, as kube-apiserver sends it
/// (~6 KiB: managedFields of three managers, labels, a last-applied-configuration, status).
fn update_review() -> Vec<u8> {
    let labels = json!({"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": "cache",
                        "team": "payments"});
    let applied = |replicas: i32| {
        json!({"replicas": replicas, "image": "redis:7.2.5-alpine", "port": 6379, "mode": "Replication",
               "replication": {"failoverAfter": "15s"},
               "auth": {"secretRef": {"name": "cache-auth"}},
               "resources": {"requests": {"memory": "256Mi"}}})
    };
    let last_applied = |spec: Value| {
        format!(
            "{}\n",
            json!({"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
                   "metadata": {"annotations": {"myapp.tangx.in/deletion-protection": "true"},
                                "labels": labels, "name": "cache", "namespace": "shop"},
                   "spec": spec})
        )
    };
    let kubectl = fields(&[
        "f:metadata|f:annotations|f:kubectl.kubernetes.io/last-applied-configuration",
        "f:metadata|f:annotations|f:myapp.tangx.in/deletion-protection",
        "f:metadata|f:labels|f:app.kubernetes.io/name",
        "f:metadata|f:labels|f:app.kubernetes.io/instance",
        "f:metadata|f:labels|f:team",
        "f:spec|f:auth|f:secretRef|f:name",
        "f:spec|f:image",
        "f:spec|f:mode",
        "f:spec|f:port",
        "f:spec|f:replicas",
        "f:spec|f:replication|f:failoverAfter",
        "f:spec|f:resources|f:requests|f:memory",
    ]);
    let controller = fields(&["f:metadata|f:finalizers|v:\"myapp.tangx.in/cleanup\""]);
    let mut status_paths = Vec::new();
    for t in ["Ready", "Replicating"] {
        for f in ["lastTransitionTime", "message", "reason", "status", "type"] {
            status_paths.push(format!(
                "f:status|f:conditions|k:{{\"type\":\"{t}\"}}|f:{f}"
            ));
        }
    }
    for f in [
        "observedGeneration",
        "primary",
        "readyReplicas",
        "replicas",
        "selector",
    ] {
        status_paths.push(format!("f:status|f:{f}"));
    }
    let status = fields(&status_paths.iter().map(String::as_str).collect::<Vec<_>>());
    let object = |replicas: i32, generation: i64, resource_version: &str, applied_at: &str| {
        let mut spec = applied(replicas);
        spec["imagePullPolicy"] = json!("IfNotPresent");
        spec["replication"] = json!({"minReplicasMaxLag": 10, "failoverAfter": "15s"});
        spec["auth"] = json!({"secretRef": {"name": "cache-auth", "key": "password"}});
        spec["podDisruptionBudget"] = json!({"maxUnavailable": 1});
        json!({
            "apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
            "metadata": {
                "name": "cache", "namespace": "shop", "uid": "6f1c2b7e-8d4a-4e3b-9a51-0c2d7e9f4b18",
                "resourceVersion": resource_version, "generation": generation,
                "creationTimestamp": "2026-11-20T09:14:07Z",
                "labels": labels,
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": last_applied(applied(replicas)),
                    "myapp.tangx.in/deletion-protection": "true"
                },
                "finalizers": ["myapp.tangx.in/cleanup"],
                "managedFields": [
                    {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "myapp.tangx.in/v1",
                     "time": applied_at, "fieldsType": "FieldsV1", "fieldsV1": kubectl},
                    {"manager": "redis-controller", "operation": "Update", "apiVersion": "myapp.tangx.in/v1",
                     "time": "2026-11-20T09:14:08Z", "fieldsType": "FieldsV1", "fieldsV1": controller},
                    {"manager": "redis-controller", "operation": "Update", "apiVersion": "myapp.tangx.in/v1",
                     "time": "2026-12-03T08:02:41Z", "fieldsType": "FieldsV1", "fieldsV1": status,
                     "subresource": "status"}
                ]
            },
            "spec": spec,
            "status": {
                "replicas": 3, "readyReplicas": 3,
                "selector": "app.kubernetes.io/instance=cache,app.kubernetes.io/managed-by=redis-operator,app.kubernetes.io/name=redis",
                "observedGeneration": 3,
                "conditions": [
                    {"type": "Ready", "status": "True", "observedGeneration": 3,
                     "lastTransitionTime": "2026-11-20T09:14:52Z", "reason": "AllPodsReady",
                     "message": "3 of 3 pods are Ready"},
                    {"type": "Replicating", "status": "True", "observedGeneration": 3,
                     "lastTransitionTime": "2026-11-20T09:15:03Z", "reason": "ReplicasInSync",
                     "message": "2 of 2 replicas in sync"}
                ],
                "primary": "cache-0"
            }
        })
    };
    let user = json!({"username": "alice@example.com", "uid": "a1b2c3",
                      "groups": ["platform-admins", "system:authenticated"],
                      "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=6f0a4c1b"]}});
    review(
        "UPDATE",
        "8b1e4f7a-2c3d-4e5f-9a0b-1c2d3e4f5a6b",
        "shop",
        object(5, 4, "48213", "2026-12-03T10:21:35Z"),
        object(3, 3, "48177", "2026-11-20T09:14:07Z"),
        user,
    )
}
