//! Pod helpers: a Pod Security "restricted"-compliant pod, a Redis's pods, what a pod says
//! about itself (readiness, IP, restarts), and waiting.

use std::fmt::Debug;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, Pod, PodSecurityContext, PodSpec, SeccompProfile, SecurityContext,
};
use kube::api::{ListParams, ObjectMeta};
use kube::{Api, Resource, ResourceExt};
use serde_json::Value;

use crate::{Context, Error, seen, wait_for};

/// An image that is never pulled on the test bed (kwok runs no containers), but is real.
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

/// A single-container pod that passes the Pod Security "restricted" profile: non-root, no
/// privilege escalation, all capabilities dropped, RuntimeDefault seccomp.
pub fn restricted_pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([("app".to_string(), name.to_string())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(65532),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".to_string(),
                    ..SeccompProfile::default()
                }),
                ..PodSecurityContext::default()
            }),
            containers: vec![Container {
                name: "main".to_string(),
                image: Some(PAUSE_IMAGE.to_string()),
                security_context: Some(SecurityContext {
                    allow_privilege_escalation: Some(false),
                    capabilities: Some(Capabilities {
                        drop: Some(vec!["ALL".to_string()]),
                        ..Capabilities::default()
                    }),
                    ..SecurityContext::default()
                }),
                ..Container::default()
            }],
            termination_grace_period_seconds: Some(1),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// True when the pod is Running with condition Ready=True.
pub fn is_ready(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// One line about a pod for failure messages: node, phase and conditions.
pub fn describe(pod: &Pod) -> String {
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("<unscheduled>");
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("<none>");
    let conditions = status
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let reason = c.message.as_deref().or(c.reason.as_deref()).unwrap_or("");
                    format!("{}={} {reason}", c.type_, c.status)
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    format!("node={node} phase={phase} conditions=[{conditions}]")
}

/// The pods of Redis `name` (terminating ones too), by name.
pub async fn of_redis(pods: &Api<Pod>, name: &str) -> Result<Vec<Pod>, Error> {
    let mut list = pods
        .list(&ListParams::default().labels(&api::pods::selector_string(name)))
        .await
        .context(format!("listing the pods of {name}"))?
        .items;
    list.sort_by_key(|p| p.name_any());
    Ok(list)
}

/// The pod's IP, once it has one.
pub fn ip(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.pod_ip.as_deref()
}

/// How often the pod's first container was restarted.
pub fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .map_or(0, |c| c.restart_count)
}

/// One line per pod: name, node, phase, readiness, restarts, role label and what its container
/// waits for, for failure messages.
pub fn describe_all(pods: &[Pod]) -> String {
    pods.iter()
        .map(|p| {
            let waiting = p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|cs| cs.first())
                .and_then(|c| c.state.as_ref())
                .and_then(|s| s.waiting.as_ref())
                .and_then(|w| w.reason.clone())
                .unwrap_or_default();
            let role = p
                .labels()
                .get(api::pods::ROLE_LABEL)
                .map(|r| format!(" role={r}"))
                .unwrap_or_default();
            format!(
                "{} {} restarts={}{role} {waiting}",
                p.name_any(),
                describe(p),
                restarts(p)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Waits until pod `name` is scheduled, Running and Ready.
pub async fn wait_ready(pods: &Api<Pod>, name: &str, timeout: Duration) -> Result<Pod, Error> {
    wait_for(&format!("pod {name} to be Ready"), timeout, || async {
        let pod = pods.get(name).await.map_err(seen)?;
        if is_ready(&pod) {
            Ok(pod)
        } else {
            Err(describe(&pod))
        }
    })
    .await
}

/// Waits until object `name` no longer exists.
pub async fn wait_gone<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<(), Error>
where
    K: Resource + Clone + Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    wait_for(&format!("{name} to be gone"), timeout, || async {
        match api.get_opt(name).await.map_err(seen)? {
            None => Ok(()),
            Some(obj) => {
                let value = serde_json::to_value(&obj).unwrap_or(Value::Null);
                Err(format!(
                    "still exists: deletionTimestamp={} finalizers={}",
                    value["metadata"]["deletionTimestamp"], value["metadata"]["finalizers"]
                ))
            }
        }
    })
    .await
}
