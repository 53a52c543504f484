//! The rules on pod placement (DESIGN §2, for §3h placement): `spec.nodeSelector`, `affinity`,
//! `tolerations`, `topologySpreadConstraints`, `priorityClassName`, `podLabels` and
//! `podAnnotations`. They refuse what the API server would refuse in the pods the controller
//! builds (it would answer each create with an error, and the Redis would never run), selectors
//! that can never match, and pod labels or annotations that would take the operator's own keys.
//! The warning: a Replication Redis whose required placement puts every pod on one node.

use super::syntax::{
    annotation_key_problem, label_key_problem, label_value_problem, subdomain_problem,
};
use super::violation::{Violation, shown, shown_list};
use crate::pods::{HOSTNAME_TOPOLOGY_KEY, is_operator_annotation, is_operator_label, pod_labels};
use crate::types::{Mode, Redis, RedisSpec};
use k8s_openapi::api::core::v1::{
    Affinity, NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use std::collections::{BTreeMap, BTreeSet};

/// Most bytes (keys and values) the API server accepts in an object's annotations.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;
/// The one node field a node selector term's `matchFields` can name.
const NODE_NAME_FIELD: &str = "metadata.name";

/// Every placement rule broken by `spec`, in the order of the fields.
pub(super) fn placement_violations(spec: &RedisSpec) -> Vec<Violation> {
    let mut out = Vec::new();
    if let Some(selector) = &spec.node_selector {
        for (key, value) in selector {
            let field = format!("spec.nodeSelector[{}]", shown(key));
            label_pair(&field, key, value, &mut out);
        }
    }
    if let Some(affinity) = &spec.affinity {
        affinity_violations(affinity, &mut out);
    }
    for (i, toleration) in spec.tolerations.iter().flatten().enumerate() {
        toleration_violations(&format!("spec.tolerations[{i}]"), toleration, &mut out);
    }
    let constraints = spec
        .topology_spread_constraints
        .as_deref()
        .unwrap_or_default();
    for (i, constraint) in constraints.iter().enumerate() {
        spread_violations(i, constraint, &constraints[..i], &mut out);
    }
    if let Some(name) = &spec.priority_class_name
        && let Err(message) = subdomain_problem(name)
    {
        out.push(Violation::new(
            "spec.priorityClassName",
            format!("{name:?}"),
            message,
        ));
    }
    if let Some(labels) = &spec.pod_labels {
        for (key, value) in labels {
            let field = format!("spec.podLabels[{}]", shown(key));
            if is_operator_label(key) {
                out.push(Violation::new(
                    &field,
                    key,
                    format!(
                        "\"{}\" is a label the operator sets on its pods (its selectors, Services and roles read it); choose another key",
                        shown(key)
                    ),
                ));
            } else {
                label_pair(&field, key, value, &mut out);
            }
        }
    }
    if let Some(annotations) = &spec.pod_annotations {
        for key in annotations.keys() {
            let field = format!("spec.podAnnotations[{}]", shown(key));
            if is_operator_annotation(key) {
                out.push(Violation::new(
                    &field,
                    key,
                    format!(
                        "\"{}\" is the operator's own (every {} key is); choose another key",
                        shown(key),
                        crate::pods::OPERATOR_KEY_PREFIX
                    ),
                ));
            } else if let Err(message) = annotation_key_problem(key) {
                out.push(Violation::new(&field, key, message));
            }
        }
        let bytes: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
        if bytes > MAX_ANNOTATIONS_BYTES {
            out.push(Violation::new(
                "spec.podAnnotations",
                bytes,
                format!(
                    "must be no more than {MAX_ANNOTATIONS_BYTES} bytes in total (keys and values), got {bytes}"
                ),
            ));
        }
    }
    out
}

/// A label key and value (`spec.nodeSelector`, `spec.podLabels`, a selector's `matchLabels`).
fn label_pair(field: &str, key: &str, value: &str, out: &mut Vec<Violation>) {
    if let Err(message) = label_key_problem(key) {
        out.push(Violation::new(field, key, message));
    }
    if let Err(message) = label_value_problem(value) {
        // The key too: the field shows it cut, and two long keys must not read as one.
        out.push(Violation::new(field, format!("{key:?}={value:?}"), message));
    }
}

/// `spec.affinity`: node affinity terms that can match, pod (anti-)affinity terms with a
/// topology key and selectors that can match, weights the scheduler accepts.
fn affinity_violations(affinity: &Affinity, out: &mut Vec<Violation>) {
    if let Some(node) = &affinity.node_affinity {
        let base = "spec.affinity.nodeAffinity";
        if let Some(required) = &node.required_during_scheduling_ignored_during_execution {
            let field =
                format!("{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
            let terms = &required.node_selector_terms;
            if terms.is_empty() {
                out.push(Violation::new(
                    &field,
                    "[]",
                    "must hold at least one term: with none no node matches, so the pods could never be scheduled",
                ));
            } else if terms.iter().all(term_is_empty) {
                out.push(Violation::new(
                    &field,
                    format!("{} empty term(s)", terms.len()),
                    "every term is empty, and an empty term matches no node, so the pods could never be scheduled",
                ));
            }
            for (i, term) in terms.iter().enumerate() {
                node_term_violations(&format!("{field}[{i}]"), term, out);
            }
        }
        let preferred = node
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten();
        for (i, term) in preferred.enumerate() {
            let field = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
            weight_violation(&field, term.weight, out);
            node_term_violations(&format!("{field}.preference"), &term.preference, out);
        }
    }
    if let Some(pod) = &affinity.pod_affinity {
        pod_terms_violations(
            "spec.affinity.podAffinity",
            pod.required_during_scheduling_ignored_during_execution
                .as_deref(),
            pod.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            out,
        );
    }
    if let Some(anti) = &affinity.pod_anti_affinity {
        pod_terms_violations(
            "spec.affinity.podAntiAffinity",
            anti.required_during_scheduling_ignored_during_execution
                .as_deref(),
            anti.preferred_during_scheduling_ignored_during_execution
                .as_deref(),
            out,
        );
    }
}

/// A node selector term without a single requirement (it matches no node).
fn term_is_empty(term: &NodeSelectorTerm) -> bool {
    term.match_expressions
        .as_deref()
        .unwrap_or_default()
        .is_empty()
        && term.match_fields.as_deref().unwrap_or_default().is_empty()
}

fn node_term_violations(field: &str, term: &NodeSelectorTerm, out: &mut Vec<Violation>) {
    for (j, r) in term.match_expressions.iter().flatten().enumerate() {
        node_requirement_violations(&format!("{field}.matchExpressions[{j}]"), r, out);
    }
    for (j, r) in term.match_fields.iter().flatten().enumerate() {
        node_field_violations(&format!("{field}.matchFields[{j}]"), r, out);
    }
}

/// The values of a requirement, as written (the ratchet's value; messages show [`shown_list`]).
fn values_of(values: Option<&Vec<String>>) -> String {
    format!("{:?}", values.map(Vec::as_slice).unwrap_or_default())
}

/// A node label requirement: In/NotIn with values, Exists/DoesNotExist without, Gt/Lt with one
/// integer (the scheduler compares it as a number; anything else matches no node).
fn node_requirement_violations(field: &str, r: &NodeSelectorRequirement, out: &mut Vec<Violation>) {
    if let Err(message) = label_key_problem(&r.key) {
        out.push(Violation::new(format!("{field}.key"), &r.key, message));
    }
    let values = r.values.as_deref().unwrap_or_default();
    let listed = shown_list(values);
    let written = values_of(r.values.as_ref());
    let operator = r.operator.as_str();
    let problem = match operator {
        "In" | "NotIn" => values
            .is_empty()
            .then(|| format!("must hold at least one value when the operator is {operator}")),
        "Exists" | "DoesNotExist" => (!values.is_empty()).then(|| {
            format!("must be empty when the operator is {operator} (it matches on the key alone), got {listed}")
        }),
        "Gt" | "Lt" => (values.len() != 1 || !is_integer(&values[0])).then(|| {
            format!("must hold exactly one value, an integer, when the operator is {operator}, got {listed}")
        }),
        _ => {
            out.push(Violation::new(
                format!("{field}.operator"),
                format!("{operator:?}"),
                format!(
                    "must be In, NotIn, Exists, DoesNotExist, Gt or Lt, got \"{}\"",
                    shown(operator)
                ),
            ));
            None
        }
    };
    if let Some(message) = problem {
        out.push(Violation::new(
            format!("{field}.values"),
            format!("{operator} {written}"),
            message,
        ));
    }
}

/// A node field requirement: only the node's name, with In or NotIn and one value.
fn node_field_violations(field: &str, r: &NodeSelectorRequirement, out: &mut Vec<Violation>) {
    if r.key != NODE_NAME_FIELD {
        out.push(Violation::new(
            format!("{field}.key"),
            &r.key,
            format!(
                "must be {NODE_NAME_FIELD} (the only node field a selector can match), got \"{}\"",
                shown(&r.key)
            ),
        ));
    }
    let operator = r.operator.as_str();
    if !matches!(operator, "In" | "NotIn") {
        out.push(Violation::new(
            format!("{field}.operator"),
            format!("{operator:?}"),
            format!(
                "must be In or NotIn for a node field, got \"{}\"",
                shown(operator)
            ),
        ));
    } else if r.values.as_ref().is_none_or(|v| v.len() != 1) {
        out.push(Violation::new(
            format!("{field}.values"),
            format!("{operator} {}", values_of(r.values.as_ref())),
            format!(
                "must hold exactly one node name for a node field, got {}",
                shown_list(r.values.as_deref().unwrap_or_default())
            ),
        ));
    }
}

/// The required and preferred terms of a pod affinity or anti-affinity at `base`.
fn pod_terms_violations(
    base: &str,
    required: Option<&[PodAffinityTerm]>,
    preferred: Option<&[WeightedPodAffinityTerm]>,
    out: &mut Vec<Violation>,
) {
    for (i, term) in required.unwrap_or_default().iter().enumerate() {
        let field = format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]");
        pod_term_violations(&field, term, out);
    }
    for (i, term) in preferred.unwrap_or_default().iter().enumerate() {
        let field = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        weight_violation(&field, term.weight, out);
        pod_term_violations(
            &format!("{field}.podAffinityTerm"),
            &term.pod_affinity_term,
            out,
        );
    }
}

fn pod_term_violations(field: &str, term: &PodAffinityTerm, out: &mut Vec<Violation>) {
    if let Some(selector) = &term.label_selector {
        selector_violations(&format!("{field}.labelSelector"), selector, out);
    }
    if let Some(selector) = &term.namespace_selector {
        selector_violations(&format!("{field}.namespaceSelector"), selector, out);
    }
    topology_key_violation(&format!("{field}.topologyKey"), &term.topology_key, out);
}

/// A topology key: the node label whose value makes one domain; never empty.
fn topology_key_violation(field: &str, key: &str, out: &mut Vec<Violation>) {
    if key.is_empty() {
        out.push(Violation::new(
            field,
            "\"\"",
            format!(
                "must not be empty: it names the node label whose nodes count as one domain, such as {HOSTNAME_TOPOLOGY_KEY}"
            ),
        ));
    } else if let Err(message) = label_key_problem(key) {
        out.push(Violation::new(field, key, message));
    }
}

fn weight_violation(field: &str, weight: i32, out: &mut Vec<Violation>) {
    if !(1..=100).contains(&weight) {
        out.push(Violation::new(
            format!("{field}.weight"),
            weight,
            format!("must be between 1 and 100, got {weight}"),
        ));
    }
}

/// A label selector (of pods or namespaces): valid labels, requirements that can match.
pub(super) fn selector_violations(field: &str, selector: &LabelSelector, out: &mut Vec<Violation>) {
    for (key, value) in selector.match_labels.iter().flatten() {
        let field = format!("{field}.matchLabels[{}]", shown(key));
        label_pair(&field, key, value, out);
    }
    for (j, r) in selector.match_expressions.iter().flatten().enumerate() {
        label_requirement_violations(&format!("{field}.matchExpressions[{j}]"), r, out);
    }
}

/// A label selector requirement: In/NotIn with values, Exists/DoesNotExist without.
fn label_requirement_violations(
    field: &str,
    r: &LabelSelectorRequirement,
    out: &mut Vec<Violation>,
) {
    if let Err(message) = label_key_problem(&r.key) {
        out.push(Violation::new(format!("{field}.key"), &r.key, message));
    }
    let values = r.values.as_deref().unwrap_or_default();
    let listed = shown_list(values);
    let written = values_of(r.values.as_ref());
    let operator = r.operator.as_str();
    let problem = match operator {
        "In" | "NotIn" => values
            .is_empty()
            .then(|| format!("must hold at least one value when the operator is {operator}")),
        "Exists" | "DoesNotExist" => (!values.is_empty()).then(|| {
            format!("must be empty when the operator is {operator} (it matches on the key alone), got {listed}")
        }),
        _ => {
            out.push(Violation::new(
                format!("{field}.operator"),
                format!("{operator:?}"),
                format!(
                    "must be In, NotIn, Exists or DoesNotExist, got \"{}\"",
                    shown(operator)
                ),
            ));
            None
        }
    };
    if let Some(message) = problem {
        out.push(Violation::new(
            format!("{field}.values"),
            format!("{operator} {written}"),
            message,
        ));
    }
    for value in values {
        if let Err(message) = label_value_problem(value) {
            out.push(Violation::new(
                format!("{field}.values"),
                format!("{value:?}"),
                message,
            ));
        }
    }
}

/// A toleration the API server accepts: a known operator and effect, no value with Exists, an
/// integer with Gt/Lt, `tolerationSeconds` only with NoExecute, and Exists when no key is given.
fn toleration_violations(field: &str, t: &Toleration, out: &mut Vec<Violation>) {
    let key = t.key.as_deref().unwrap_or_default();
    let value = t.value.as_deref().unwrap_or_default();
    let effect = t.effect.as_deref().unwrap_or_default();
    let operator = t.operator.as_deref().unwrap_or_default();
    if !key.is_empty()
        && let Err(message) = label_key_problem(key)
    {
        out.push(Violation::new(format!("{field}.key"), key, message));
    }
    match operator {
        // Empty means Equal.
        "" | "Equal" | "Gt" | "Lt" if key.is_empty() => out.push(Violation::new(
            format!("{field}.operator"),
            format!("{operator:?} with no key"),
            format!(
                "must be Exists when no key is given (a toleration of every taint), got {:?}",
                if operator.is_empty() { "Equal" } else { operator }
            ),
        )),
        "" | "Equal" => {
            if let Err(message) = label_value_problem(value) {
                out.push(Violation::new(format!("{field}.value"), format!("{value:?}"), message));
            }
        }
        "Exists" if !value.is_empty() => out.push(Violation::new(
            format!("{field}.value"),
            format!("{value:?}"),
            format!(
                "must be empty when the operator is Exists (it tolerates every value of the key), got \"{}\"",
                shown(value)
            ),
        )),
        "Exists" => {}
        // Numeric comparisons (Kubernetes' TaintTolerationComparisonOperators feature).
        "Gt" | "Lt" if !is_integer(value) => out.push(Violation::new(
            format!("{field}.value"),
            format!("{value:?}"),
            format!(
                "must be an integer when the operator is {operator}, got \"{}\"",
                shown(value)
            ),
        )),
        "Gt" | "Lt" => {}
        _ => out.push(Violation::new(
            format!("{field}.operator"),
            format!("{operator:?}"),
            format!(
                "must be Equal, Exists, Gt or Lt, got \"{}\"",
                shown(operator)
            ),
        )),
    }
    if !matches!(effect, "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        out.push(Violation::new(
            format!("{field}.effect"),
            format!("{effect:?}"),
            format!(
                "must be NoSchedule, PreferNoSchedule or NoExecute (or empty for every effect), got \"{}\"",
                shown(effect)
            ),
        ));
    }
    if let Some(seconds) = t.toleration_seconds
        && effect != "NoExecute"
    {
        out.push(Violation::new(
            format!("{field}.tolerationSeconds"),
            format!("{seconds} with effect {effect:?}"),
            format!(
                "needs effect NoExecute (it is how long a pod stays on a node tainted NoExecute), got effect \"{}\"",
                shown(effect)
            ),
        ));
    }
}

/// A topology spread constraint the scheduler can apply.
fn spread_violations(
    i: usize,
    c: &TopologySpreadConstraint,
    earlier: &[TopologySpreadConstraint],
    out: &mut Vec<Violation>,
) {
    let field = format!("spec.topologySpreadConstraints[{i}]");
    if c.max_skew < 1 {
        out.push(Violation::new(
            format!("{field}.maxSkew"),
            c.max_skew,
            format!("must be >= 1, got {}", c.max_skew),
        ));
    }
    topology_key_violation(&format!("{field}.topologyKey"), &c.topology_key, out);
    let when = c.when_unsatisfiable.as_str();
    if !matches!(when, "DoNotSchedule" | "ScheduleAnyway") {
        out.push(Violation::new(
            format!("{field}.whenUnsatisfiable"),
            format!("{when:?}"),
            format!(
                "must be DoNotSchedule or ScheduleAnyway, got \"{}\"",
                shown(when)
            ),
        ));
    }
    if let Some(min) = c.min_domains {
        if min < 1 {
            out.push(Violation::new(
                format!("{field}.minDomains"),
                min,
                format!("must be >= 1, got {min}"),
            ));
        } else if when != "DoNotSchedule" {
            out.push(Violation::new(
                format!("{field}.minDomains"),
                format!("{min} with {when:?}"),
                format!(
                    "can only be set with whenUnsatisfiable DoNotSchedule, got \"{}\"",
                    shown(when)
                ),
            ));
        }
    }
    for (name, policy) in [
        ("nodeAffinityPolicy", &c.node_affinity_policy),
        ("nodeTaintsPolicy", &c.node_taints_policy),
    ] {
        if let Some(policy) = policy
            && !matches!(policy.as_str(), "Honor" | "Ignore")
        {
            out.push(Violation::new(
                format!("{field}.{name}"),
                format!("{policy:?}"),
                format!("must be Honor or Ignore, got \"{}\"", shown(policy)),
            ));
        }
    }
    if let Some(k) = earlier.iter().position(|e| {
        e.topology_key == c.topology_key && e.when_unsatisfiable == c.when_unsatisfiable
    }) {
        out.push(Violation::new(
            &field,
            format!("{:?} {when:?}", c.topology_key),
            format!(
                "repeats the topologyKey and whenUnsatisfiable of spec.topologySpreadConstraints[{k}] (\"{}\", \"{}\"); merge them",
                shown(&c.topology_key),
                shown(when)
            ),
        ));
    }
    if let Some(selector) = &c.label_selector {
        selector_violations(&format!("{field}.labelSelector"), selector, out);
    }
}

/// A decimal integer as the scheduler reads one (an optional `-`, digits, within 64 bits).
fn is_integer(text: &str) -> bool {
    !text.starts_with('+') && text.parse::<i64>().is_ok()
}

/// Allowed but unwise placement: a Replication Redis of several pods whose required placement
/// puts them all on one node (losing it loses the primary and every replica at once), and spread
/// constraints without a selector (they count no pod, so spread nothing).
pub(super) fn placement_warnings(redis: &Redis) -> Vec<String> {
    let spec = &redis.spec;
    let mut warnings = Vec::new();
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        if c.label_selector.is_none() {
            warnings.push(format!(
                "spec.topologySpreadConstraints[{i}].labelSelector: not set, so the constraint counts no pods and spreads nothing; select this Redis's pods, e.g. app.kubernetes.io/instance: {}",
                redis
                    .metadata
                    .name
                    .as_deref()
                    .map_or_else(|| "<name>".to_owned(), shown)
            ));
        }
    }
    let replicas = spec.replicas();
    if spec.mode() != Mode::Replication || replicas < 2 {
        return warnings;
    }
    let one_node = |field: &str, how: String| {
        format!(
            "{field}: {how}, so the {replicas} pods of this Replication Redis share one node: losing it loses the primary and every replica at once"
        )
    };
    if let Some(node) = spec
        .node_selector
        .as_ref()
        .and_then(|s| s.get(HOSTNAME_TOPOLOGY_KEY))
    {
        warnings.push(one_node(
            &format!("spec.nodeSelector[{HOSTNAME_TOPOLOGY_KEY}]"),
            format!("pins every pod to node \"{}\"", shown(node)),
        ));
    }
    let affinity = spec.affinity.as_ref();
    let required_nodes = affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .and_then(|r| pinned_nodes(&r.node_selector_terms));
    if let Some(nodes) = required_nodes
        && let [node] = nodes.iter().collect::<Vec<_>>()[..]
    {
        warnings.push(one_node(
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            format!("allows node \"{}\" only", shown(node)),
        ));
    }
    let own_labels = own_pod_labels(redis);
    let together = affinity
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|p| {
            p.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    for (i, term) in together.iter().copied().flatten().enumerate() {
        if term.topology_key == HOSTNAME_TOPOLOGY_KEY
            && own_labels
                .as_ref()
                .is_some_and(|labels| selects_own_pods(redis, term, labels))
        {
            warnings.push(one_node(
                &format!(
                    "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                ),
                format!("requires each pod on the node of another pod of this Redis ({HOSTNAME_TOPOLOGY_KEY})"),
            ));
        }
    }
    warnings
}

/// The nodes a required node affinity allows when every one of its terms names them (an `In` on
/// the hostname label, or on the node's name); `None` when some term allows nodes by anything else.
fn pinned_nodes(terms: &[NodeSelectorTerm]) -> Option<BTreeSet<&str>> {
    let mut nodes = BTreeSet::new();
    for term in terms {
        let pins = term
            .match_expressions
            .iter()
            .flatten()
            .filter(|r| r.key == HOSTNAME_TOPOLOGY_KEY)
            .chain(
                term.match_fields
                    .iter()
                    .flatten()
                    .filter(|r| r.key == NODE_NAME_FIELD),
            )
            .filter(|r| r.operator == "In");
        // A term's requirements all hold: it allows the nodes every pin of it names.
        let mut allowed: Option<BTreeSet<&str>> = None;
        for pin in pins {
            let named: BTreeSet<&str> = pin.values.iter().flatten().map(String::as_str).collect();
            allowed = Some(match allowed {
                None => named,
                Some(before) => before.intersection(&named).copied().collect(),
            });
        }
        nodes.extend(allowed?);
    }
    Some(nodes)
}

/// The labels every pod of `redis` carries from its creation (the role label comes later):
/// the operator's and the spec's `podLabels`. `None` while the name is not known yet.
fn own_pod_labels(redis: &Redis) -> Option<BTreeMap<String, String>> {
    let name = redis.metadata.name.as_deref().filter(|n| !n.is_empty())?;
    let mut labels = redis.spec.pod_labels.clone().unwrap_or_default();
    labels.extend(pod_labels(name));
    Some(labels)
}

/// Whether a pod affinity term counts the pods of `redis` itself: its namespaces include the
/// Redis's, and its label selector matches their labels.
fn selects_own_pods(
    redis: &Redis,
    term: &PodAffinityTerm,
    labels: &BTreeMap<String, String>,
) -> bool {
    let own_namespace = match (&term.namespaces, &term.namespace_selector) {
        (_, Some(selector)) => is_empty_selector(selector),
        (Some(names), None) if !names.is_empty() => names
            .iter()
            .any(|n| Some(n.as_str()) == redis.metadata.namespace.as_deref()),
        _ => true,
    };
    own_namespace
        && term
            .label_selector
            .as_ref()
            .is_some_and(|s| selector_matches(s, labels))
}

/// `{}`: every object (as a namespace selector, every namespace).
fn is_empty_selector(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// Whether `selector` matches an object with `labels` (unknown operators match nothing).
fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions = selector.match_expressions.iter().flatten().all(|r| {
        let values = r.values.as_deref().unwrap_or_default();
        let value = labels.get(&r.key);
        match r.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    pairs && expressions
}
