//! Whether the primary shares its node with another pod of the Redis (issue #41.2, DESIGN §10):
//! a write acknowledged by `WAIT 1` from a replica on the primary's node alone is lost with that
//! node, since the failover can only promote what it can read (and waits for the lost replica
//! until its pod goes: `plan::election::unread_ahead`). The default spread is only preferred
//! (§3h), so this can happen; the `Spread` condition and a Warning Event say so. Pure.

use crate::k8s::conditions;
use api::RedisStatus;

/// The condition's type.
pub const SPREAD: &str = "Spread";
const SHARES: &str = "PrimarySharesNode";

/// Where the primary runs, against the other pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spread {
    /// No other pod runs on the primary's node.
    Apart { primary: String, node: String },
    /// These pods run on the primary's node.
    Shares {
        primary: String,
        node: String,
        with: Vec<String>,
    },
    /// No primary, or its pod is not on a node yet.
    Unknown,
}

/// The spread of `pods` (name, `spec.nodeName`; terminating ones left out by the caller) with
/// `primary`.
pub fn spread(primary: Option<&str>, pods: &[(&str, Option<&str>)]) -> Spread {
    let Some((primary, Some(node))) = primary.and_then(|p| pods.iter().find(|(n, _)| *n == p))
    else {
        return Spread::Unknown;
    };
    let mut with: Vec<String> = pods
        .iter()
        .filter(|(name, on)| name != primary && *on == Some(*node))
        .map(|(name, _)| (*name).to_owned())
        .collect();
    with.sort();
    if with.is_empty() {
        Spread::Apart {
            primary: (*primary).to_owned(),
            node: (*node).to_owned(),
        }
    } else {
        Spread::Shares {
            primary: (*primary).to_owned(),
            node: (*node).to_owned(),
            with,
        }
    }
}

/// The `Spread` condition's (status, reason, message).
pub fn condition(spread: &Spread) -> (&'static str, &'static str, String) {
    match spread {
        Spread::Apart { primary, node } => (
            "True",
            "PrimaryNodeNotShared",
            format!("no other pod runs on {node}, the node of primary {primary}"),
        ),
        Spread::Shares {
            primary,
            node,
            with,
        } => {
            let with = with.join(", ");
            (
                "False",
                SHARES,
                format!(
                    "primary {primary} shares node {node} with {with}: a write acknowledged by \
                     WAIT 1 from {with} alone is lost if {node} fails; spread the pods over more \
                     nodes (spec.topologySpreadConstraints with whenUnsatisfiable DoNotSchedule)"
                ),
            )
        }
        Spread::Unknown => (
            "Unknown",
            "NoPrimaryNode",
            "no primary, or its pod is not on a node yet".to_owned(),
        ),
    }
}

/// The Warning to give when the primary has just come to share its node (the stored `Spread`
/// condition does not say so already, with the same pods): once, not every pass.
pub fn warning(spread: &Spread, stored: Option<&RedisStatus>) -> Option<String> {
    let (_, reason, message) = condition(spread);
    if reason != SHARES {
        return None;
    }
    let said = conditions::stored(stored, SPREAD)
        .is_some_and(|c| c.reason == SHARES && c.message == message);
    (!said).then_some(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    /// Pods and the nodes they run on.
    type Placed<'a> = &'a [(&'a str, Option<&'a str>)];

    #[test]
    fn the_primary_sharing_its_node_is_found() {
        let cases: [(&str, Option<&str>, Placed<'_>, Spread); 6] = [
            (
                "one pod per node",
                Some("r-0"),
                &[("r-0", Some("a")), ("r-1", Some("b")), ("r-2", Some("c"))],
                Spread::Apart {
                    primary: "r-0".into(),
                    node: "a".into(),
                },
            ),
            (
                "three pods on two nodes, a replica beside the primary",
                Some("r-0"),
                &[("r-0", Some("a")), ("r-1", Some("a")), ("r-2", Some("b"))],
                Spread::Shares {
                    primary: "r-0".into(),
                    node: "a".into(),
                    with: vec!["r-1".into()],
                },
            ),
            (
                "two replicas sharing a node, not the primary's",
                Some("r-0"),
                &[("r-0", Some("a")), ("r-1", Some("b")), ("r-2", Some("b"))],
                Spread::Apart {
                    primary: "r-0".into(),
                    node: "a".into(),
                },
            ),
            (
                "a pod not scheduled yet shares nothing",
                Some("r-0"),
                &[("r-0", Some("a")), ("r-1", None)],
                Spread::Apart {
                    primary: "r-0".into(),
                    node: "a".into(),
                },
            ),
            (
                "no primary",
                None,
                &[("r-0", Some("a")), ("r-1", Some("a"))],
                Spread::Unknown,
            ),
            (
                "the primary not scheduled",
                Some("r-0"),
                &[("r-0", None), ("r-1", None)],
                Spread::Unknown,
            ),
        ];
        for (case, primary, pods, want) in cases {
            assert_eq!(spread(primary, pods), want, "{case}");
        }
    }

    #[test]
    fn the_warning_is_given_once_when_the_primary_comes_to_share_its_node() {
        let shares = spread(
            Some("r-0"),
            &[("r-0", Some("a")), ("r-1", Some("a")), ("r-2", Some("b"))],
        );
        let stored_with = |spread: &Spread| {
            let (status, reason, message) = condition(spread);
            RedisStatus {
                conditions: vec![Condition {
                    type_: SPREAD.into(),
                    status: status.into(),
                    reason: reason.into(),
                    message,
                    observed_generation: None,
                    last_transition_time: conditions::now(),
                }],
                ..RedisStatus::default()
            }
        };
        let apart = spread(Some("r-0"), &[("r-0", Some("a")), ("r-1", Some("b"))]);
        let note = warning(&shares, Some(&stored_with(&apart))).expect("a warning");
        assert!(note.contains("r-0") && note.contains("r-1") && note.contains("WAIT 1"));
        assert_eq!(warning(&shares, None), Some(note));
        // Said already: not again.
        assert_eq!(warning(&shares, Some(&stored_with(&shares))), None);
        // Apart again, or unknown: nothing to warn of; the condition turns True or Unknown.
        assert_eq!(warning(&apart, Some(&stored_with(&shares))), None);
        assert_eq!(condition(&apart).0, "True");
        assert_eq!(warning(&Spread::Unknown, None), None);
        // Another replica came beside it: said again.
        let more = spread(
            Some("r-0"),
            &[("r-0", Some("a")), ("r-1", Some("a")), ("r-2", Some("a"))],
        );
        assert!(warning(&more, Some(&stored_with(&shares))).is_some());
    }
}
