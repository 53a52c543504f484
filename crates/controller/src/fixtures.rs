//! A fake API server for unit tests of the async shell, in the style of kube-rs's controller-rs
//! `fixtures.rs`: a `kube::Client` over a `tower_test` mock service, and a script of the requests
//! the code under test must make, in order, each answered with a canned response. A request that
//! is not the next one in the script, one too many, or one missing fails the test.

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::Value;
use std::time::Duration;
use tokio::task::JoinHandle;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// A client whose requests go to the returned fake server.
pub fn client() -> (Client, ApiServer) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), ApiServer(handle))
}

/// The server side of [`client`].
pub struct ApiServer(Handle);

/// One request the code under test must make, and the answer it gets.
pub struct Exchange {
    method: Method,
    path: String,
    /// `key=value` pairs the query string must hold (percent-encoded, as sent).
    query: Vec<String>,
    status: StatusCode,
    reply: Reply,
}

enum Reply {
    Json(Value),
    /// The request body sent back, as the API server does for a create.
    Echo,
}

impl Exchange {
    /// A `method` request on `path`, answered 200 with `{}` until told otherwise.
    pub fn expect(method: Method, path: &str) -> Self {
        Exchange {
            method,
            path: path.to_owned(),
            query: Vec::new(),
            status: StatusCode::OK,
            reply: Reply::Json(serde_json::json!({})),
        }
    }

    /// The query string must hold `pair` (`key=value`).
    pub fn with_query(mut self, pair: &str) -> Self {
        self.query.push(pair.to_owned());
        self
    }

    /// Answered with `status` and `body`.
    pub fn respond(mut self, status: u16, body: Value) -> Self {
        self.status = StatusCode::from_u16(status).expect("status code");
        self.reply = Reply::Json(body);
        self
    }

    /// Answered with `status` and the request's own body.
    pub fn echo(mut self, status: u16) -> Self {
        self.status = StatusCode::from_u16(status).expect("status code");
        self.reply = Reply::Echo;
        self
    }
}

/// A `Status` failure as the API server sends it.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    })
}

/// Long enough for any scripted exchange; short enough that a test stuck on a request that never
/// comes fails instead of hanging.
const WAIT: Duration = Duration::from_secs(5);

impl ApiServer {
    /// Serves `script` in the background. [`Served::verify`] returns the JSON bodies of the
    /// requests (`Null` when empty), once every client has been dropped.
    pub fn serve(self, script: Vec<Exchange>) -> Served {
        let mut handle = self.0;
        Served(tokio::spawn(async move {
            let mut bodies = Vec::new();
            for (i, exchange) in script.into_iter().enumerate() {
                let next = tokio::time::timeout(WAIT, handle.next_request()).await;
                let Ok(Some((request, send))) = next else {
                    panic!(
                        "request {i} never came: {} {}",
                        exchange.method, exchange.path
                    );
                };
                let uri = request.uri().clone();
                assert_eq!(
                    (request.method(), uri.path()),
                    (&exchange.method, exchange.path.as_str()),
                    "request {i}: {uri}"
                );
                let query: Vec<&str> = uri.query().unwrap_or_default().split('&').collect();
                for pair in &exchange.query {
                    assert!(
                        query.contains(&pair.as_str()),
                        "request {i}: {uri} lacks {pair}"
                    );
                }
                let bytes = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .expect("request body");
                let body: Value = if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).expect("a JSON request body")
                };
                let reply = match exchange.reply {
                    Reply::Json(value) => serde_json::to_vec(&value).expect("reply"),
                    Reply::Echo => bytes.to_vec(),
                };
                send.send_response(
                    Response::builder()
                        .status(exchange.status)
                        .body(Body::from(reply))
                        .expect("response"),
                );
                bodies.push(body);
            }
            let extra = tokio::time::timeout(WAIT, handle.next_request()).await;
            match extra {
                Ok(None) => {}
                Ok(Some((request, _))) => {
                    panic!("unexpected request: {} {}", request.method(), request.uri())
                }
                Err(_) => panic!("a client is still alive: drop it before verify()"),
            }
            bodies
        }))
    }
}

/// A script being served.
pub struct Served(JoinHandle<Vec<Value>>);

impl Served {
    /// Waits for the script to be played out, and fails the test if it was not, exactly.
    pub async fn verify(self) -> Vec<Value> {
        match self.0.await {
            Ok(bodies) => bodies,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// A pod `cache-0` whose controller is a ReplicaSet of uid `controller_uid` (`None`: no
/// controller, as `kubectl run` makes it).
pub fn pod_owned_by(controller_uid: Option<&str>) -> k8s_openapi::api::core::v1::Pod {
    let owners: Vec<_> = controller_uid
        .map(|uid| {
            serde_json::json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
                               "uid": uid, "controller": true})
        })
        .into_iter()
        .collect();
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "cache-0", "ownerReferences": owners}
    }))
    .expect("pod")
}

/// A status with only a Ready condition, True (what the status steps' tests start from).
pub fn ready_status() -> api::RedisStatus {
    serde_json::from_value(serde_json::json!({"conditions": [{
        "type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "3/3",
        "lastTransitionTime": "2024-01-01T00:00:00Z"
    }]}))
    .expect("status")
}

/// The Unix epoch, as a condition's time.
pub fn epoch() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}
