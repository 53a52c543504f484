//! Names and labels of the pods a `Redis` owns (DESIGN §3), their containers' names and the
//! spec-hash annotation. Both the controller (which creates, reads and selects pods) and the
//! status selector use these, so they can never disagree.

use std::collections::BTreeMap;

/// The tutorial's label, kept so its `kubectl get pods -l app=<name>` habits still work.
pub const LABEL_APP: &str = "app";
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Value of `app.kubernetes.io/name` on every pod.
pub const APP_NAME: &str = "redis";
/// Value of `app.kubernetes.io/managed-by` on every pod; also selects the pods the controller watches.
pub const MANAGED_BY: &str = "redis-operator";

/// Label the replication engine keeps on each pod of a Replication-mode Redis: its role, which
/// the `<name>` (primary) and `<name>-replicas` Services select on.
pub const ROLE_LABEL: &str = "myapp.tangx.in/role";
/// [`ROLE_LABEL`] value of the pod serving writes.
pub const ROLE_PRIMARY: &str = "primary";
/// [`ROLE_LABEL`] value of the pods replicating the primary.
pub const ROLE_REPLICA: &str = "replica";

/// The node label naming the node (the kubelet sets it): the topology key of "one node".
pub const HOSTNAME_TOPOLOGY_KEY: &str = "kubernetes.io/hostname";
/// The node label naming the node's zone (set by cloud providers; absent on many other clusters).
pub const ZONE_TOPOLOGY_KEY: &str = "topology.kubernetes.io/zone";

/// The annotation holding the hash of the pod spec a pod was built from (rolling updates compare
/// it with the current one).
pub const SPEC_HASH_ANNOTATION: &str = "myapp.tangx.in/pod-spec-hash";
/// The name of the pods' redis-server container.
pub const CONTAINER: &str = "redis";
/// The name of the metrics sidecar (`spec.exporter`).
pub const EXPORTER_CONTAINER: &str = "exporter";

/// The label naming the pod it is on (its value is the pod's name), as StatefulSets'
/// `statefulset.kubernetes.io/pod-name`: what a per-pod Service (`spec.service.perPod`) selects.
pub const POD_NAME_LABEL: &str = "myapp.tangx.in/pod-name";

/// The headless Service of a Replication Redis, `<name>-headless`: every pod's DNS name is
/// `<pod>.<name>-headless.<namespace>.svc` (the pods name it as their `subdomain`).
pub fn headless_service_name(redis_name: &str) -> String {
    format!("{redis_name}-headless")
}

/// Pod `ordinal` of the Redis `redis_name`: `<name>-<ordinal>`.
pub fn pod_name(redis_name: &str, ordinal: u32) -> String {
    format!("{redis_name}-{ordinal}")
}

/// The ordinal of `pod_name` if it is a pod name of `redis_name` (`<name>-<digits>`, no leading
/// zeros), else `None`. Pods of a Redis named `a-1` (`a-1-0`) are never taken for pods of `a`.
pub fn ordinal(redis_name: &str, pod_name: &str) -> Option<u32> {
    let digits = pod_name.strip_prefix(redis_name)?.strip_prefix('-')?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if canonical { digits.parse().ok() } else { None }
}

/// The labels that select the pods of `redis_name`; a subset of [`pod_labels`].
pub fn selector_labels(redis_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_NAME.to_owned(), APP_NAME.to_owned()),
        (LABEL_INSTANCE.to_owned(), redis_name.to_owned()),
        (LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned()),
    ])
}

/// The labels that select the pods of `redis_name` holding `role` ([`ROLE_PRIMARY`] or
/// [`ROLE_REPLICA`]): [`selector_labels`] plus [`ROLE_LABEL`].
pub fn role_selector(redis_name: &str, role: &str) -> BTreeMap<String, String> {
    let mut labels = selector_labels(redis_name);
    labels.insert(ROLE_LABEL.to_owned(), role.to_owned());
    labels
}

/// The labels that select the one pod `pod_name` of `redis_name`: [`selector_labels`] plus
/// [`POD_NAME_LABEL`].
pub fn pod_selector(redis_name: &str, pod_name: &str) -> BTreeMap<String, String> {
    let mut labels = selector_labels(redis_name);
    labels.insert(POD_NAME_LABEL.to_owned(), pod_name.to_owned());
    labels
}

/// All labels put on the pods of `redis_name`.
pub fn pod_labels(redis_name: &str) -> BTreeMap<String, String> {
    let mut labels = selector_labels(redis_name);
    labels.insert(LABEL_APP.to_owned(), redis_name.to_owned());
    labels
}

/// The prefix of every label and annotation key the operator owns (`myapp.tangx.in/`): the role
/// label, the spec hash annotation, and whatever later features add.
pub const OPERATOR_KEY_PREFIX: &str = "myapp.tangx.in/";

/// Whether `key` is a pod label the operator sets (the keys of [`pod_labels`], or any key under
/// [`OPERATOR_KEY_PREFIX`], such as [`ROLE_LABEL`]): a user's `spec.podLabels` may not set it, since
/// the pods' selectors, Services and roles depend on it.
pub fn is_operator_label(key: &str) -> bool {
    matches!(
        key,
        LABEL_APP | LABEL_NAME | LABEL_INSTANCE | LABEL_MANAGED_BY
    ) || key.starts_with(OPERATOR_KEY_PREFIX)
}

/// Whether `key` is a pod annotation the operator sets (any key under [`OPERATOR_KEY_PREFIX`],
/// such as the spec hash): a user's `spec.podAnnotations` may not set it.
pub fn is_operator_annotation(key: &str) -> bool {
    key.starts_with(OPERATOR_KEY_PREFIX)
}

/// [`selector_labels`] as a label-selector string (`k=v,k=v`, sorted), for `status.selector`
/// and for list/watch calls.
pub fn selector_string(redis_name: &str) -> String {
    to_selector(&selector_labels(redis_name))
}

/// The selector matching every pod managed by this operator, in any Redis.
pub fn managed_pods_selector() -> String {
    format!("{LABEL_MANAGED_BY}={MANAGED_BY}")
}

fn to_selector(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_names_are_name_dash_ordinal() {
        assert_eq!(pod_name("my-op-redis", 0), "my-op-redis-0");
        assert_eq!(pod_name("my-op-redis", 12), "my-op-redis-12");
    }

    #[test]
    fn ordinal_parses_only_own_canonical_names() {
        assert_eq!(ordinal("my-op-redis", "my-op-redis-0"), Some(0));
        assert_eq!(ordinal("my-op-redis", "my-op-redis-12"), Some(12));
        assert_eq!(ordinal("a", "a-1-0"), None, "pod of Redis a-1, not of a");
        assert_eq!(ordinal("a-1", "a-1-0"), Some(0));
        assert_eq!(
            ordinal("a", "a-01"),
            None,
            "leading zero is not a name we make"
        );
        assert_eq!(ordinal("a", "a-"), None);
        assert_eq!(ordinal("a", "a"), None);
        assert_eq!(ordinal("a", "b-0"), None);
        assert_eq!(ordinal("a", "a-x"), None);
        assert_eq!(
            ordinal("a", "a-99999999999999999999"),
            None,
            "overflow is not a pod of ours"
        );
    }

    #[test]
    fn labels_include_tutorial_and_recommended_labels() {
        let labels = pod_labels("my-op-redis");
        assert_eq!(labels.get("app").map(String::as_str), Some("my-op-redis"));
        assert_eq!(
            labels.get("app.kubernetes.io/name").map(String::as_str),
            Some("redis")
        );
        assert_eq!(
            labels.get("app.kubernetes.io/instance").map(String::as_str),
            Some("my-op-redis")
        );
        assert_eq!(
            labels
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str),
            Some("redis-operator")
        );
        assert!(
            selector_labels("my-op-redis")
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        );
    }

    #[test]
    fn the_operators_own_keys_are_its_labels_and_its_domain() {
        for key in pod_labels("r").keys().chain([&ROLE_LABEL.to_owned()]) {
            assert!(is_operator_label(key), "{key}");
        }
        assert!(is_operator_annotation("myapp.tangx.in/pod-spec-hash"));
        for key in [
            "team",
            "app.kubernetes.io/component",
            "app.kubernetes.io/version",
            "example.com/app",
            "myapp.tangx.in",
            "sub.myapp.tangx.in/x",
        ] {
            assert!(!is_operator_label(key), "{key}");
            assert!(!is_operator_annotation(key), "{key}");
        }
        assert!(
            !is_operator_annotation("app"),
            "annotations have no selector role"
        );
        assert_eq!(OPERATOR_KEY_PREFIX, format!("{}/", crate::GROUP));
    }

    #[test]
    fn role_selector_narrows_the_pod_selector_to_one_role() {
        let primary = role_selector("my-op-redis", ROLE_PRIMARY);
        assert_eq!(
            primary.get("myapp.tangx.in/role").map(String::as_str),
            Some("primary")
        );
        assert!(
            selector_labels("my-op-redis")
                .iter()
                .all(|(k, v)| primary.get(k) == Some(v))
        );
        assert_eq!(primary.len(), selector_labels("my-op-redis").len() + 1);
        assert_eq!(
            role_selector("my-op-redis", ROLE_REPLICA)
                .get(ROLE_LABEL)
                .map(String::as_str),
            Some("replica")
        );
    }

    #[test]
    fn selector_string_is_sorted_and_stable() {
        assert_eq!(
            selector_string("my-op-redis"),
            "app.kubernetes.io/instance=my-op-redis,app.kubernetes.io/managed-by=redis-operator,app.kubernetes.io/name=redis"
        );
        assert_eq!(
            managed_pods_selector(),
            "app.kubernetes.io/managed-by=redis-operator"
        );
    }
}
