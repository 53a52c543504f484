//! `spec.nodeSelector`, `affinity`, `tolerations`, `topologySpreadConstraints`,
//! `priorityClassName`, `podLabels` and `podAnnotations`, and the warning about a Replication
//! Redis held on one node (§3h; `placement`).

use super::*;

/// The violations of a Redis whose spec is `placement` (a valid Standalone Redis otherwise), as
/// `(field, message)`.
fn placement(placement: serde_json::Value) -> Vec<(String, String)> {
    let mut spec = json!({"replicas": 2, "image": "redis:7.2-alpine"});
    for (k, v) in placement.as_object().cloned().unwrap_or_default() {
        spec[k] = v;
    }
    Policy::default()
        .validate_create(&redis("r", spec))
        .violations
        .into_iter()
        .map(|v| (v.field, v.message))
        .collect()
}

/// The fields `placement` is refused on.
fn placement_fields(spec: serde_json::Value) -> Vec<String> {
    placement(spec).into_iter().map(|(f, _)| f).collect()
}

#[test]
fn a_valid_placement_passes_quietly() {
    let v = Policy::default().validate_create(&replicated(json!({
        "nodeSelector": {"disktype": "ssd", "example.com/pool": ""},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "pool", "operator": "In", "values": ["a", "b"]},
                        {"key": "spot", "operator": "DoesNotExist"},
                        {"key": "cpus", "operator": "Gt", "values": ["4"]}
                    ]},
                    {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": {"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "Exists"}
                    ]}}
                ]
            },
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "r"}}
                }}
            ]}
        },
        "tolerations": [
            {"operator": "Exists"},
            {"key": "dedicated", "value": "redis", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            {"key": "capacity", "operator": "Gt", "value": "-5"}
        ],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
             "minDomains": 3, "nodeTaintsPolicy": "Honor",
             "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["r"]}]}},
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "r"}}}
        ],
        "priorityClassName": "redis-critical.v2",
        "podLabels": {"team": "cache", "app.kubernetes.io/component": "database"},
        "podAnnotations": {"Example.com/Backup": "yes, please"}
    })));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
}

#[test]
fn node_selectors_and_pod_labels_need_valid_label_keys_and_values() {
    for field in ["nodeSelector", "podLabels"] {
        for good in [
            json!({"a": ""}),
            json!({"example.com/a-b_c.d": "V-1_x.y"}),
            json!({ "k".repeat(63): "v".repeat(63) }),
        ] {
            assert!(
                placement(json!({ field: good })).is_empty(),
                "{field} {good}"
            );
        }
        for (key, value) in [
            ("", "v"),
            ("-a", "v"),
            ("a/", "v"),
            ("/a", "v"),
            ("Example.com/a", "v"),
            ("a/b/c", "v"),
            (&"k".repeat(64), "v"),
            ("a", "-v"),
            ("a", "v v"),
            ("a", &"v".repeat(64)),
        ] {
            let refused = placement(json!({ field: {key: value} }));
            assert_eq!(
                refused.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
                [format!("spec.{field}[{key}]")],
                "{field} {key:?}: {value:?}"
            );
        }
    }
    assert_eq!(
        placement(json!({"nodeSelector": {"a b": "c d"}})),
        [
            (
                "spec.nodeSelector[a b]".to_owned(),
                "must be a valid label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"a b\"".to_owned()
            ),
            (
                "spec.nodeSelector[a b]".to_owned(),
                "must be a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"c d\"".to_owned()
            ),
        ]
    );
}

#[test]
fn pod_labels_and_annotations_may_not_take_the_operators_keys() {
    for key in [
        "app",
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/managed-by",
        "myapp.tangx.in/role",
    ] {
        let refused = placement(json!({"podLabels": {key: "x"}}));
        assert_eq!(refused.len(), 1, "{key}: {refused:?}");
        assert_eq!(refused[0].0, format!("spec.podLabels[{key}]"));
        assert!(
            refused[0]
                .1
                .starts_with(&format!("{key:?} is a label the operator sets on its pods")),
            "{refused:?}"
        );
    }
    let refused = placement(json!({"podAnnotations": {"myapp.tangx.in/pod-spec-hash": "x"}}));
    assert_eq!(
        refused,
        [(
            "spec.podAnnotations[myapp.tangx.in/pod-spec-hash]".to_owned(),
            "\"myapp.tangx.in/pod-spec-hash\" is the operator's own (every myapp.tangx.in/ key is); choose another key".to_owned()
        )]
    );
    // Annotations may reuse the operator's label keys: nothing selects on annotations.
    assert!(placement(json!({"podAnnotations": {"app": "x"}})).is_empty());
}

#[test]
fn pod_annotation_keys_must_be_valid_and_fit() {
    assert!(placement(json!({"podAnnotations": {"A.B/C": "any value at all: { }"}})).is_empty());
    assert_eq!(
        placement_fields(json!({"podAnnotations": {"a b": "x", "ok": "x"}})),
        ["spec.podAnnotations[a b]"]
    );
    let big = "x".repeat(200 * 1024);
    let refused = placement(json!({"podAnnotations": {"a": big, "b": big}}));
    assert_eq!(
        refused,
        [(
            "spec.podAnnotations".to_owned(),
            "must be no more than 262144 bytes in total (keys and values), got 409602".to_owned()
        )]
    );
}

#[test]
fn priority_class_name_must_be_a_dns_subdomain() {
    for good in ["high", "system-cluster-critical", "a.b-c", &"a".repeat(253)] {
        assert!(
            placement(json!({"priorityClassName": good})).is_empty(),
            "{good}"
        );
    }
    for (bad, says) in [
        ("", "must not be empty".to_owned()),
        (
            "High",
            "must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"High\"".to_owned(),
        ),
        ("a_b", "must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"a_b\"".to_owned()),
        (&"a".repeat(254), "must be no more than 253 characters, got 254".to_owned()),
    ] {
        assert_eq!(
            placement(json!({"priorityClassName": bad})),
            [("spec.priorityClassName".to_owned(), says)],
            "{bad}"
        );
    }
}

/// `spec.affinity` with one required node term holding `requirement`.
fn node_requirement(requirement: serde_json::Value) -> Vec<(String, String)> {
    placement(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
        }}}}),
    )
}

const REQUIRED_TERM: &str = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]";

#[test]
fn node_selector_requirements_must_be_able_to_match() {
    let values = format!("{REQUIRED_TERM}.matchExpressions[0].values");
    for (requirement, says) in [
        (
            json!({"key": "a", "operator": "In"}),
            "must hold at least one value when the operator is In",
        ),
        (
            json!({"key": "a", "operator": "NotIn", "values": []}),
            "must hold at least one value when the operator is NotIn",
        ),
        (
            json!({"key": "a", "operator": "Exists", "values": ["x"]}),
            "must be empty when the operator is Exists (it matches on the key alone), got [\"x\"]",
        ),
        (
            json!({"key": "a", "operator": "DoesNotExist", "values": ["x"]}),
            "must be empty when the operator is DoesNotExist (it matches on the key alone), got [\"x\"]",
        ),
        (
            json!({"key": "a", "operator": "Gt"}),
            "must hold exactly one value, an integer, when the operator is Gt, got []",
        ),
        (
            json!({"key": "a", "operator": "Lt", "values": ["1", "2"]}),
            "must hold exactly one value, an integer, when the operator is Lt, got [\"1\", \"2\"]",
        ),
        (
            json!({"key": "a", "operator": "Gt", "values": ["4.5"]}),
            "must hold exactly one value, an integer, when the operator is Gt, got [\"4.5\"]",
        ),
    ] {
        assert_eq!(
            node_requirement(requirement.clone()),
            [(values.clone(), says.to_owned())],
            "{requirement}"
        );
    }
    assert_eq!(
        node_requirement(json!({"key": "a", "operator": "Has", "values": ["x"]})),
        [(
            format!("{REQUIRED_TERM}.matchExpressions[0].operator"),
            "must be In, NotIn, Exists, DoesNotExist, Gt or Lt, got \"Has\"".to_owned()
        )]
    );
    assert_eq!(
        placement_fields(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "bad key", "operator": "Exists"}]}]
            }}}})
        ),
        [format!("{REQUIRED_TERM}.matchExpressions[0].key")]
    );
    // Preferred terms are held to the same rules, and to a weight the scheduler takes.
    assert_eq!(
        placement_fields(
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
                {"weight": 101, "preference": {}}
            ]}}})
        ),
        [
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].weight",
        ]
    );
}

#[test]
fn a_required_node_affinity_needs_a_term_that_can_match() {
    let terms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    let required = |terms: serde_json::Value| {
        placement(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": terms
            }}}}),
        )
    };
    assert_eq!(
        required(json!([])),
        [(
            terms.to_owned(),
            "must hold at least one term: with none no node matches, so the pods could never be scheduled".to_owned()
        )]
    );
    assert_eq!(
        required(json!([{}, {"matchExpressions": [], "matchFields": []}])),
        [(
            terms.to_owned(),
            "every term is empty, and an empty term matches no node, so the pods could never be scheduled".to_owned()
        )]
    );
    // One term that can match is enough (terms are alternatives).
    assert!(
        required(json!([{}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]))
            .is_empty()
    );
}

#[test]
fn node_field_requirements_name_one_node() {
    let field = |requirement: serde_json::Value| {
        placement(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [requirement]}]
            }}}}),
        )
    };
    assert!(field(json!({"key": "metadata.name", "operator": "In", "values": ["n1"]})).is_empty());
    let at = format!("{REQUIRED_TERM}.matchFields[0]");
    assert_eq!(
        field(json!({"key": "metadata.labels", "operator": "In", "values": ["n1", "n2"]})),
        [
            (
                format!("{at}.key"),
                "must be metadata.name (the only node field a selector can match), got \"metadata.labels\"".to_owned()
            ),
            (
                format!("{at}.values"),
                "must hold exactly one node name for a node field, got [\"n1\", \"n2\"]".to_owned()
            ),
        ]
    );
    assert_eq!(
        field(json!({"key": "metadata.name", "operator": "Exists"})),
        [(
            format!("{at}.operator"),
            "must be In or NotIn for a node field, got \"Exists\"".to_owned()
        )]
    );
}

#[test]
fn pod_affinity_terms_need_a_topology_key_and_selectors_that_can_match() {
    for kind in ["podAffinity", "podAntiAffinity"] {
        let refused = placement(json!({"affinity": {kind: {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "",
                "labelSelector": {
                    "matchLabels": {"app": "bad value!"},
                    "matchExpressions": [
                        {"key": "a", "operator": "In"},
                        {"key": "b", "operator": "Exists", "values": ["x"]},
                        {"key": "c", "operator": "Gt", "values": ["1"]}
                    ]
                },
                "namespaceSelector": {"matchExpressions": [{"key": "d", "operator": "NotIn", "values": []}]}
            }],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 200, "podAffinityTerm": {"topologyKey": "bad key"}}
            ]
        }}}));
        let base = format!("spec.affinity.{kind}");
        let required = format!("{base}.requiredDuringSchedulingIgnoredDuringExecution[0]");
        let preferred = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution[0]");
        assert_eq!(
            refused,
            [
                (format!("{required}.labelSelector.matchLabels[app]"), "must be a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"bad value!\"".to_owned()),
                (format!("{required}.labelSelector.matchExpressions[0].values"), "must hold at least one value when the operator is In".to_owned()),
                (format!("{required}.labelSelector.matchExpressions[1].values"), "must be empty when the operator is Exists (it matches on the key alone), got [\"x\"]".to_owned()),
                (format!("{required}.labelSelector.matchExpressions[2].operator"), "must be In, NotIn, Exists or DoesNotExist, got \"Gt\"".to_owned()),
                (format!("{required}.namespaceSelector.matchExpressions[0].values"), "must hold at least one value when the operator is NotIn".to_owned()),
                (format!("{required}.topologyKey"), "must not be empty: it names the node label whose nodes count as one domain, such as kubernetes.io/hostname".to_owned()),
                (format!("{preferred}.weight"), "must be between 1 and 100, got 200".to_owned()),
                (format!("{preferred}.podAffinityTerm.topologyKey"), "must be a valid label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"bad key\"".to_owned()),
            ],
            "{kind}"
        );
    }
}

#[test]
fn tolerations_must_be_ones_the_api_server_accepts() {
    let toleration = |t: serde_json::Value| placement(json!({"tolerations": [t]}));
    for (t, field, says) in [
        (
            json!({"key": "a", "operator": "Exists", "value": "x"}),
            "value",
            "must be empty when the operator is Exists (it tolerates every value of the key), got \"x\"",
        ),
        (
            json!({"key": "a", "operator": "Matches", "value": "x"}),
            "operator",
            "must be Equal, Exists, Gt or Lt, got \"Matches\"",
        ),
        (
            json!({"key": "a", "value": "x", "effect": "NoRun"}),
            "effect",
            "must be NoSchedule, PreferNoSchedule or NoExecute (or empty for every effect), got \"NoRun\"",
        ),
        (
            json!({"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}),
            "tolerationSeconds",
            "needs effect NoExecute (it is how long a pod stays on a node tainted NoExecute), got effect \"NoSchedule\"",
        ),
        (
            json!({"key": "a", "operator": "Exists", "tolerationSeconds": 60}),
            "tolerationSeconds",
            "needs effect NoExecute (it is how long a pod stays on a node tainted NoExecute), got effect \"\"",
        ),
        (
            json!({"value": "x"}),
            "operator",
            "must be Exists when no key is given (a toleration of every taint), got \"Equal\"",
        ),
        (
            json!({"key": "a", "operator": "Lt", "value": "ten"}),
            "value",
            "must be an integer when the operator is Lt, got \"ten\"",
        ),
        (
            json!({"key": "a", "value": "not a label value"}),
            "value",
            "must be a valid label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"not a label value\"",
        ),
        (
            json!({"key": "bad key", "operator": "Exists"}),
            "key",
            "must be a valid label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"bad key\"",
        ),
    ] {
        assert_eq!(
            toleration(t.clone()),
            [(format!("spec.tolerations[0].{field}"), says.to_owned())],
            "{t}"
        );
    }
}

#[test]
fn topology_spread_constraints_must_be_ones_the_scheduler_applies() {
    let selector = json!({"matchLabels": {"app": "r"}});
    let refused = placement(json!({"topologySpreadConstraints": [
        {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Sometimes", "labelSelector": selector},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2,
         "nodeAffinityPolicy": "Always", "labelSelector": selector},
        {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 0,
         "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector}
    ]}));
    let at = |i: usize, field: &str| format!("spec.topologySpreadConstraints[{i}]{field}");
    assert_eq!(
        refused,
        [
            (at(0, ".maxSkew"), "must be >= 1, got 0".to_owned()),
            (at(0, ".topologyKey"), "must not be empty: it names the node label whose nodes count as one domain, such as kubernetes.io/hostname".to_owned()),
            (at(0, ".whenUnsatisfiable"), "must be DoNotSchedule or ScheduleAnyway, got \"Sometimes\"".to_owned()),
            (at(1, ".minDomains"), "can only be set with whenUnsatisfiable DoNotSchedule, got \"ScheduleAnyway\"".to_owned()),
            (at(1, ".nodeAffinityPolicy"), "must be Honor or Ignore, got \"Always\"".to_owned()),
            (at(2, ".minDomains"), "must be >= 1, got 0".to_owned()),
            (at(2, ".labelSelector.matchExpressions[0].values"), "must hold at least one value when the operator is In".to_owned()),
            (at(3, ""), "repeats the topologyKey and whenUnsatisfiable of spec.topologySpreadConstraints[1] (\"zone\", \"ScheduleAnyway\"); merge them".to_owned()),
        ]
    );
}

#[test]
fn a_spread_constraint_without_a_selector_is_warned_about() {
    let v = Policy::default().validate_create(&redis(
        "cache",
        json!({"image": "redis:7", "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}
        ]}),
    ));
    assert!(v.allowed(), "{}", v.message());
    assert_eq!(
        v.other_warnings(),
        [
            "spec.topologySpreadConstraints[0].labelSelector: not set, so the constraint counts no pods and spreads nothing; select this Redis's pods, e.g. app.kubernetes.io/instance: cache"
        ]
    );
}

#[test]
fn a_replication_redis_held_on_one_node_is_warned_about() {
    let warns = |extra: serde_json::Value| Policy::default().validate_create(&replicated(extra));
    let one_node = |field: &str, how: &str| {
        format!(
            "{field}: {how}, so the 3 pods of this Replication Redis share one node: losing it loses the primary and every replica at once"
        )
    };
    let v = warns(json!({"nodeSelector": {"kubernetes.io/hostname": "n1"}}));
    assert!(v.allowed(), "{}", v.message());
    assert_eq!(
        v.other_warnings(),
        [one_node(
            "spec.nodeSelector[kubernetes.io/hostname]",
            "pins every pod to node \"n1\""
        )]
    );
    let required = |terms: serde_json::Value| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms
        }}}})
    };
    let pinned = one_node(
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        "allows node \"n1\" only",
    );
    for terms in [
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]),
        json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]),
        // Two terms naming the same node, and a term narrowed to one node by two requirements.
        json!([
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]},
            {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]},
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n3"]}
            ]}
        ]),
    ] {
        assert_eq!(
            warns(required(terms.clone())).other_warnings(),
            std::slice::from_ref(&pinned),
            "{terms}"
        );
    }
    for spread in [
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]}]}]),
        json!([
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]},
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["redis"]}]}
        ]),
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["n1"]}]}]),
    ] {
        assert!(
            warns(required(spread.clone())).other_warnings().is_empty(),
            "{spread}"
        );
    }
    // Required affinity to its own pods on the hostname: every pod follows the first.
    let together = |selector: serde_json::Value, namespaces: serde_json::Value| {
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": "kubernetes.io/hostname", "labelSelector": selector, "namespaces": namespaces
        }]}}})
    };
    let follows = one_node(
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
        "requires each pod on the node of another pod of this Redis (kubernetes.io/hostname)",
    );
    for selector in [
        json!({"matchLabels": {"app.kubernetes.io/instance": "r"}}),
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["r", "s"]}]}),
        json!({"matchLabels": {"app": "r"}, "matchExpressions": [{"key": "role", "operator": "DoesNotExist"}]}),
    ] {
        assert_eq!(
            warns(together(selector.clone(), json!(null))).other_warnings(),
            std::slice::from_ref(&follows),
            "{selector}"
        );
    }
    assert_eq!(
        warns(together(
            json!({"matchLabels": {"app": "r"}}),
            json!(["default"])
        ))
        .other_warnings(),
        [follows]
    );
    for (selector, namespaces) in [
        (json!({"matchLabels": {"app": "other"}}), json!(null)),
        (json!({"matchLabels": {"app": "r"}}), json!(["elsewhere"])),
    ] {
        assert!(
            warns(together(selector.clone(), namespaces))
                .other_warnings()
                .is_empty(),
            "{selector}"
        );
    }
    // One pod, or Standalone mode: nothing to keep apart.
    let pin = json!({"nodeSelector": {"kubernetes.io/hostname": "n1"}});
    let mut one = pin.clone();
    one["replicas"] = json!(1);
    assert_eq!(
        warns(one).other_warnings().len(),
        1,
        "only the one-pod warning"
    );
    let standalone = Policy::default().validate_create(&redis(
        "r",
        json!({"replicas": 3, "image": "redis:7", "nodeSelector": {"kubernetes.io/hostname": "n1"}}),
    ));
    assert!(
        standalone.other_warnings().is_empty(),
        "{:?}",
        standalone.other_warnings()
    );
}

#[test]
fn placement_violations_are_listed_with_the_others_and_ratcheted() {
    let v = Policy::default().validate_create(&redis(
        "r",
        json!({
            "port": 6000,
            "nodeSelector": {"a": "b c"},
            "tolerations": [{"key": "a", "operator": "Exists", "value": "x"}],
            "priorityClassName": "High",
            "podLabels": {"app": "x"}
        }),
    ));
    assert_eq!(
        fields(&v),
        [
            "spec.port",
            "spec.nodeSelector[a]",
            "spec.tolerations[0].value",
            "spec.priorityClassName",
            "spec.podLabels[app]",
        ]
    );
    // Stored before these rules: an unchanged value passes with a warning, a new one is judged.
    let old = redis("r", json!({"podLabels": {"app": "x"}}));
    let v = Policy::default().validate_update(&old.clone(), &old);
    assert!(v.allowed(), "{}", v.message());
    let changed = redis(
        "r",
        json!({"podLabels": {"app": "x", "app.kubernetes.io/name": "y"}}),
    );
    assert_eq!(
        fields(&Policy::default().validate_update(&changed, &old)),
        ["spec.podLabels[app.kubernetes.io/name]"]
    );
}
