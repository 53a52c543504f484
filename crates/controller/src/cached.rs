//! What the pod cache keeps of a pod: [`CachedPod`], only what the controller reads.
//!
//! A `Pod` is 2.4 KiB before any of its strings, lists and maps are counted (its spec is inline
//! even when `None`), a container status 752 bytes, and a label or annotation map at least a
//! 544-byte B-tree node: the few labels and the annotation read are fields of their own. At 3,000 pods those were most of the controller's memory, for fields it
//! never reads. The cache keeps a `CachedPod` instead, made by [`CachedPod::from_pod`] as each
//! pod comes off the watch; the readers (`plan::PodView`, `plan::PodTrouble`, replication, auth,
//! storage) read it, so a field they need and the cache drops cannot go unnoticed: it is not
//! there to read.

use k8s_openapi::api::core::v1::{ContainerState, ContainerStatus, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{NamespaceResourceScope, Resource as _};
use kube::Resource;
use kube::runtime::watcher;
use std::borrow::Cow;

/// A pod as the cache keeps it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedPod {
    /// Name, namespace, uid, resourceVersion, owner references and deletionTimestamp; no labels
    /// and no annotations (the ones read are the fields below), no managedFields.
    pub metadata: ObjectMeta,
    /// The instance label (`api::pods::LABEL_INSTANCE`): the Redis the pod is labelled for.
    pub instance: Option<String>,
    /// The role label (`api::pods::ROLE_LABEL`), Replication mode.
    pub role: Option<String>,
    /// The pod-name label (`api::pods::POD_NAME_LABEL`) names this pod: a per-pod Service
    /// selects it (pods made before the label are labelled in place).
    pub pod_name_labelled: bool,
    /// The spec-hash annotation (`api::pods::SPEC_HASH_ANNOTATION`).
    pub spec_hash: Option<String>,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `status.podIP`.
    pub ip: Option<String>,
    /// `spec.nodeName`: the node it was scheduled on (Replication mode says when the primary
    /// shares it, `replication::spread`).
    pub node: Option<String>,
    /// The Ready condition is True.
    pub ready: bool,
    /// The PodScheduled condition is False for reason Unschedulable: its message ("" without).
    pub unschedulable: Option<String>,
    /// The DisruptionTarget condition is True for reason DeletionByTaintManager: the pod was
    /// evicted because its node carries a NoExecute taint, as a node that stopped answering does
    /// (`node.kubernetes.io/unreachable`, `not-ready`).
    pub evicted_by_taint: bool,
    /// `status.containerStatuses`, in order.
    pub containers: Vec<CachedContainer>,
    /// The redis.conf directives the redis container was started with (`--name` options of its
    /// args; DESIGN §3m): a live one the spec no longer sets is set back to its default.
    pub start_config: Vec<&'static str>,
    /// The restore step (`spec.restore`, §3o) failed: its init container's last termination
    /// message (cut and escaped), while it has not succeeded since.
    pub restore_failure: Option<String>,
}

/// What the cache keeps of a container's status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CachedContainer {
    pub name: String,
    pub image: String,
    /// `restartCount`: a restarted redis-server runs its start options again.
    pub restart_count: i32,
    /// `None`: the kubelet reported no state.
    pub state: Option<CachedState>,
}

/// What the cache keeps of a container's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CachedState {
    /// `state.running` is set.
    pub running: bool,
    /// `state.waiting`: its reason and message.
    pub waiting: Option<(Option<String>, Option<String>)>,
}

impl CachedPod {
    /// Keeps of `pod` what the controller reads.
    pub fn from_pod(pod: Pod) -> Self {
        let Pod {
            metadata,
            spec,
            status,
        } = pod;
        let node = spec.as_ref().and_then(|s| s.node_name.clone());
        let start_config = spec
            .and_then(|s| {
                s.containers
                    .into_iter()
                    .find(|c| c.name == api::pods::CONTAINER)
            })
            .and_then(|c| c.args)
            .map(|args| api::config::start_names(&args))
            .unwrap_or_default();
        let spec_hash = metadata
            .annotations
            .and_then(|mut a| a.remove(api::pods::SPEC_HASH_ANNOTATION));
        let mut labels = metadata.labels.unwrap_or_default();
        let pod_name_labelled = metadata.name.is_some()
            && labels.get(api::pods::POD_NAME_LABEL) == metadata.name.as_ref();
        let status = status.unwrap_or_default();
        let conditions = status.conditions.unwrap_or_default();
        CachedPod {
            metadata: ObjectMeta {
                name: metadata.name,
                namespace: metadata.namespace,
                uid: metadata.uid,
                resource_version: metadata.resource_version,
                owner_references: metadata.owner_references,
                deletion_timestamp: metadata.deletion_timestamp,
                ..ObjectMeta::default()
            },
            pod_name_labelled,
            instance: labels.remove(api::pods::LABEL_INSTANCE),
            role: labels.remove(api::pods::ROLE_LABEL),
            spec_hash,
            phase: status.phase,
            ip: status.pod_ip,
            node,
            ready: conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True"),
            evicted_by_taint: conditions.iter().any(|c| {
                c.type_ == "DisruptionTarget"
                    && c.status == "True"
                    && c.reason.as_deref() == Some("DeletionByTaintManager")
            }),
            unschedulable: conditions.into_iter().find_map(unschedulable),
            restore_failure: status
                .init_container_statuses
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.name == api::backup::RESTORE_CONTAINER)
                .and_then(restore_failure),
            containers: status
                .container_statuses
                .unwrap_or_default()
                .into_iter()
                .map(CachedContainer::from_status)
                .collect(),
            start_config,
        }
    }

    /// The pod's IP, once it has one.
    pub fn ip(&self) -> Option<&str> {
        self.ip.as_deref()
    }
}

/// A pod watch's event, with the pod as the cache keeps it.
pub fn event(event: watcher::Event<Pod>) -> watcher::Event<CachedPod> {
    match event {
        watcher::Event::Apply(pod) => watcher::Event::Apply(CachedPod::from_pod(pod)),
        watcher::Event::Delete(pod) => watcher::Event::Delete(CachedPod::from_pod(pod)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(pod) => watcher::Event::InitApply(CachedPod::from_pod(pod)),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// Why the restore init container failed: its current termination (a non-zero exit), or the
/// last one while it waits to run again; `None` once it succeeded or while it first runs.
fn restore_failure(c: ContainerStatus) -> Option<String> {
    let failed = |state: Option<ContainerState>| {
        state
            .and_then(|s| s.terminated)
            .filter(|t| t.exit_code != 0)
            .map(|t| {
                t.message
                    .filter(|m| !m.trim().is_empty())
                    .or(t.reason)
                    .unwrap_or_else(|| format!("exit code {}", t.exit_code))
            })
    };
    let waiting = c.state.as_ref().is_some_and(|s| s.waiting.is_some());
    let message = failed(c.state).or_else(|| waiting.then(|| failed(c.last_state)).flatten())?;
    // Cut and escaped: the message may quote what the tenant's object store answered.
    Some(api::validation::shown(message.trim()))
}

/// The message of a PodScheduled condition saying no node fits.
fn unschedulable(c: PodCondition) -> Option<String> {
    (c.type_ == "PodScheduled"
        && c.status == "False"
        && c.reason.as_deref() == Some("Unschedulable"))
    .then(|| c.message.unwrap_or_default())
}

impl CachedContainer {
    fn from_status(c: ContainerStatus) -> Self {
        CachedContainer {
            name: c.name,
            image: c.image,
            restart_count: c.restart_count,
            state: c.state.map(
                |ContainerState {
                     running, waiting, ..
                 }| CachedState {
                    running: running.is_some(),
                    waiting: waiting.map(|w| (w.reason, w.message)),
                },
            ),
        }
    }
}

/// A `CachedPod` is a `Pod` to the reflector and to the Controller's trigger (owner references).
impl Resource for CachedPod {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(Pod::KIND)
    }

    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(Pod::GROUP)
    }

    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(Pod::VERSION)
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(Pod::API_VERSION)
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(Pod::URL_PATH_SEGMENT)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// `CachedPod::from_pod` of a pod given as JSON (tests).
#[cfg(test)]
pub fn pod(json: serde_json::Value) -> CachedPod {
    CachedPod::from_pod(serde_json::from_value(json).expect("a pod"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_keeps_what_the_controller_reads_and_nothing_else() {
        let cached = pod(json!({
            "metadata": {
                "name": "r-0", "namespace": "ns", "uid": "u0", "resourceVersion": "7",
                "labels": {api::pods::LABEL_INSTANCE: "r", api::pods::ROLE_LABEL: "primary",
                           api::pods::POD_NAME_LABEL: "r-0",
                           "app.kubernetes.io/managed-by": "redis-operator"},
                "annotations": {api::pods::SPEC_HASH_ANNOTATION: "abc", "other": "x"},
                "ownerReferences": [{"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
                                     "name": "r", "uid": "ru", "controller": true}],
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "finalizers": ["f"], "generateName": "r-",
                "managedFields": [{"manager": "m", "operation": "Update"}],
            },
            "spec": {"containers": [
                {"name": "redis", "image": "redis:7",
                 "args": ["--maxmemory-policy", "allkeys-lru", "--port", "6379", "--nope", "x"]},
                {"name": "exporter", "image": "e", "args": ["--save", ""]},
            ]},
            "status": {
                "phase": "Running", "podIP": "10.0.0.1", "hostIP": "192.168.0.1",
                "reason": "r", "message": "m", "qosClass": "BestEffort",
                "conditions": [
                    {"type": "Initialized", "status": "True"},
                    {"type": "Ready", "status": "True"},
                    {"type": "PodScheduled", "status": "True"},
                ],
                "containerStatuses": [{
                    "name": "redis", "image": "redis:7", "imageID": "sha", "ready": true,
                    "restartCount": 2, "containerID": "containerd://1",
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
                }],
            },
        }));
        let meta = &cached.metadata;
        assert_eq!(meta.name.as_deref(), Some("r-0"));
        assert_eq!(meta.namespace.as_deref(), Some("ns"));
        assert_eq!(meta.uid.as_deref(), Some("u0"));
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert_eq!(meta.owner_references.as_ref().map(Vec::len), Some(1));
        assert!(meta.deletion_timestamp.is_some());
        assert_eq!(
            (&meta.labels, &meta.annotations, &meta.finalizers),
            (&None, &None, &None)
        );
        assert_eq!(meta.generate_name, None);
        assert_eq!(cached.instance.as_deref(), Some("r"));
        assert_eq!(cached.role.as_deref(), Some("primary"));
        assert!(cached.pod_name_labelled);
        assert_eq!(meta.managed_fields, None);
        assert_eq!(cached.spec_hash.as_deref(), Some("abc"));
        assert_eq!(cached.phase.as_deref(), Some("Running"));
        assert_eq!(cached.ip(), Some("10.0.0.1"));
        assert!(cached.ready);
        assert_eq!(cached.unschedulable, None);
        assert_eq!(
            cached.containers,
            vec![CachedContainer {
                name: "redis".into(),
                image: "redis:7".into(),
                restart_count: 2,
                state: Some(CachedState {
                    running: true,
                    waiting: None
                }),
            }]
        );
        assert_eq!(
            cached.start_config,
            ["maxmemory-policy", "port"],
            "the redis container's directives only"
        );
    }

    #[test]
    fn a_pod_labelled_with_another_name_is_not_labelled() {
        let labelled = |labels: serde_json::Value| {
            pod(json!({"metadata": {"name": "r-1", "labels": labels}})).pod_name_labelled
        };
        assert!(labelled(json!({api::pods::POD_NAME_LABEL: "r-1"})));
        assert!(!labelled(json!({api::pods::POD_NAME_LABEL: "r-0"})));
        assert!(!labelled(json!({})));
    }

    #[test]
    fn a_pod_without_status_is_not_ready_and_has_nothing_to_say() {
        let cached = pod(json!({"metadata": {"name": "r-0"}}));
        assert!(!cached.ready);
        assert_eq!(
            (cached.phase, cached.ip, cached.unschedulable),
            (None, None, None)
        );
        assert!(cached.containers.is_empty());
    }

    #[test]
    fn ready_false_is_not_ready_and_a_waiting_or_stateless_container_says_so() {
        let cached = pod(json!({
            "metadata": {"name": "r-0"},
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
                ],
                "containerStatuses": [
                    {"name": "redis", "image": "i", "imageID": "", "ready": false,
                     "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                    {"name": "exporter", "image": "e", "imageID": "", "ready": false,
                     "restartCount": 0},
                ],
            },
        }));
        assert!(!cached.ready);
        assert_eq!(cached.unschedulable.as_deref(), Some(""));
        let states: Vec<_> = cached.containers.iter().map(|c| c.state.clone()).collect();
        assert_eq!(
            states,
            vec![
                Some(CachedState {
                    running: false,
                    waiting: Some((Some("CrashLoopBackOff".into()), None)),
                }),
                None,
            ]
        );
    }

    #[test]
    fn it_is_a_pod_to_kube() {
        assert_eq!(CachedPod::kind(&()), "Pod");
        assert_eq!(CachedPod::api_version(&()), "v1");
        assert_eq!(CachedPod::plural(&()), "pods");
        assert_eq!(CachedPod::group(&()), "");
    }
}
