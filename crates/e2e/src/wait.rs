use std::future::Future;
use std::time::{Duration, Instant};

use crate::Error;

/// Polls `check` until it returns `Ok`, for at most `timeout`.
///
/// `check` returns `Err(what it saw)` while the condition does not hold yet; on timeout the
/// last observation is part of the error, so a failing test says what the cluster looked like.
/// Errors of API calls inside `check` are observations too (map them with [`seen`]): a
/// transient failure is retried like any other "not yet".
///
/// ```no_run
/// # async fn f(pods: kube::Api<k8s_openapi::api::core::v1::Pod>) -> Result<(), e2e::Error> {
/// use std::time::Duration;
/// let pod = e2e::wait_for("pod web to be scheduled", Duration::from_secs(30), || async {
///     let pod = pods.get("web").await.map_err(e2e::seen)?;
///     match pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
///         Some(_) => Ok(pod),
///         None => Err("spec.nodeName not set yet".to_string()),
///     }
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let start = Instant::now();
    let mut interval = Duration::from_millis(100);
    loop {
        let last_seen = match check().await {
            Ok(value) => return Ok(value),
            Err(seen) => seen,
        };
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            return Err(Error::Timeout {
                what: what.to_string(),
                after: timeout,
                last_seen,
            });
        }
        tokio::time::sleep(interval.min(timeout - elapsed)).await;
        interval = (interval * 2).min(Duration::from_secs(1));
    }
}

/// Turns an API error into an observation for [`wait_for`].
pub fn seen(err: kube::Error) -> String {
    format!("API error: {err}")
}

/// Waits until Redis `name` reports its Ready condition False with `reason`; its message.
pub async fn wait_not_ready_because(
    redis: &kube::Api<api::Redis>,
    name: &str,
    reason: &str,
    timeout: Duration,
) -> Result<String, Error> {
    wait_for(
        &format!("Redis {name}: Ready False, reason {reason}"),
        timeout,
        || async {
            let current = redis.get(name).await.map_err(seen)?;
            let ready = current
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
                .cloned();
            match ready {
                Some(c) if c.status == "False" && c.reason == reason => Ok(c.message),
                other => Err(format!("Ready is {other:?}")),
            }
        },
    )
    .await
}
