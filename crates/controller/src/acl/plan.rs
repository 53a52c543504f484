//! What the ACL step does in a pass (DESIGN §3l), planned from `spec.acl`, the passwords read,
//! the operator's Secret as found, the pods as cached and what the controller remembers of them:
//! whether the Secret is another's, which passwords it keeps, which users every pod is to have
//! and which a starting container loads, which pods to give them, and, once the pods answered,
//! what the pass found, remembers and reports. Pure.

use super::users::{self, Passwords, User};
use crate::cached::CachedPod;
use crate::k8s::{controlled_by, controller_of};
use api::acl::{AclSpec, USERS_KEY};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What the controller remembers of one Redis.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Applied {
    /// The config lines of the users last applied (their digest, in effect).
    pub users: String,
    /// Pods (by uid) given exactly those users.
    pub pods: Vec<String>,
    /// The failure last published, so a repeated one is not published every pass.
    pub reported: Option<String>,
    /// The operator's Secret as last read or written: read again only when the metadata cache
    /// shows another resourceVersion.
    pub secret: Option<Secret>,
}

/// What one pass found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// The operator user's password: the login of every other step. `None` without a Secret
    /// the operator owns.
    pub password: Option<String>,
    /// Pods not (yet) given the current users: unreachable, or refusing some (see `failure`).
    pub pending: Vec<String>,
    /// Pods that refuse both the operator's login and the default user's: nothing can reach
    /// them (the replication engine waits, as for a refused password).
    pub locked_out: Vec<String>,
    /// Why the users cannot all be applied.
    pub failure: Option<String>,
    /// `failure` is new: published as a Warning Event.
    pub report: bool,
}

impl Settled {
    /// A pass that stopped at `failure`, with no login.
    pub fn failed(failure: String) -> Self {
        Settled {
            failure: Some(failure),
            ..Settled::default()
        }
    }
}

/// Why the pass stops at the operator's Secret `secret_name` as found: it is not the Redis's
/// (of `uid`), and the operator never writes another's.
pub fn conflict(current: Option<&Secret>, uid: &str, secret_name: &str) -> Option<String> {
    let current = current.filter(|s| !controlled_by(*s, uid))?;
    Some(format!(
        "Secret {secret_name} exists and is not this Redis's ({}): the operator keeps its users' passwords there; delete or rename it",
        controller_of(current)
    ))
}

/// The generated password the Secret's `data` keeps under `key`; `None` when there is none (or
/// not one the operator generated): a new one is generated.
pub fn kept_password(data: &BTreeMap<String, ByteString>, key: &str) -> Option<String> {
    data.get(key)
        .and_then(|v| String::from_utf8(v.0.clone()).ok())
        .filter(|p| users::is_generated(p))
}

/// The users every pod is to have, or why they are not applied: `problems` with the passwords
/// read, or users the webhook should have refused.
pub fn wanted(
    acl: &AclSpec,
    passwords: Passwords<'_>,
    mut problems: Vec<String>,
) -> Result<Vec<User>, String> {
    if problems.is_empty() {
        match users::desired(acl, passwords) {
            Ok(wanted) => return Ok(wanted),
            Err(why) => problems.push(why),
        }
    }
    Err(format!(
        "the users are not applied: {}",
        problems.join("; ")
    ))
}

/// The users a container starting now loads (config lines): only users some running pod of
/// this Redis took whole, since redis-server refuses to start on a user line it rejects (a
/// command its version lacks): the Secret's (`data`), or on a new Secret the operator's own and
/// the default user. `Err` for users the webhook should have refused.
pub fn loaded(
    data: &BTreeMap<String, ByteString>,
    acl: &AclSpec,
    passwords: Passwords<'_>,
) -> Result<String, String> {
    if let Some(kept) = data.get(USERS_KEY) {
        return Ok(String::from_utf8_lossy(&kept.0).into_owned());
    }
    let own = AclSpec {
        users: Vec::new(),
        ..acl.clone()
    };
    let none = HashMap::new();
    let own = users::desired(
        &own,
        Passwords {
            users: &none,
            ..passwords
        },
    )?;
    Ok(users::config_lines(&own))
}

/// Which pods a pass gives the users.
#[derive(Debug, PartialEq)]
pub struct PodPlan<'p> {
    /// Live pods not yet given these users, in the order of the pods.
    pub give: Vec<&'p Arc<CachedPod>>,
    /// Live pods (by uid) given exactly these users before.
    pub done: Vec<String>,
}

/// Plans which of `pods` to give the users of config `lines`, by what was `applied` before.
/// A terminating pod is given nothing.
pub fn pods<'p>(lines: &str, applied: &Applied, pods: &'p [Arc<CachedPod>]) -> PodPlan<'p> {
    let same_users = applied.users == lines;
    let live: Vec<&Arc<CachedPod>> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let give = live
        .iter()
        .copied()
        .filter(|p| {
            !(same_users
                && p.metadata
                    .uid
                    .as_ref()
                    .is_some_and(|u| applied.pods.contains(u)))
        })
        .collect();
    let done = if same_users {
        applied
            .pods
            .iter()
            .filter(|u| live.iter().any(|p| p.metadata.uid.as_ref() == Some(*u)))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    PodPlan { give, done }
}

/// How giving one pod its users went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given {
    Done,
    /// redis-server refused some user (the message says which and why).
    Refused(String),
    /// Every login was refused.
    LockedOut,
    Unreachable,
}

/// What a pass found once the pods answered.
#[derive(Debug, PartialEq, Eq)]
pub struct Tally {
    /// With the operator's password, the pods pending and locked out, and the refusals.
    pub settled: Settled,
    /// Pods given the users in this pass (by name).
    pub updated: Vec<String>,
    /// Live pods (by uid) that have the users now.
    pub done: Vec<String>,
}

impl Tally {
    /// Whether the Secret is to hold the users of config `lines` (it holds `loaded`): a pod
    /// took them all, so containers started from now on load them too.
    pub fn loads(&self, lines: &str, loaded: &str) -> bool {
        !self.done.is_empty() && self.settled.failure.is_none() && lines != loaded
    }
}

/// Tallies the `answers` of the pods of `plan.give` (in that order); `operator`: the operator
/// user's password.
pub fn tally(operator: String, plan: PodPlan<'_>, answers: Vec<Given>) -> Tally {
    let mut tally = Tally {
        settled: Settled {
            password: Some(operator),
            ..Settled::default()
        },
        updated: Vec::new(),
        done: plan.done,
    };
    let settled = &mut tally.settled;
    let mut refused = Vec::new();
    for (pod, answer) in plan.give.iter().zip(answers) {
        let pod_name = pod.name_any();
        match answer {
            Given::Done => {
                tally.done.extend(pod.metadata.uid.clone());
                tally.updated.push(pod_name);
            }
            Given::Refused(why) => {
                refused.push(format!("pod {pod_name}: {why}"));
                settled.pending.push(pod_name);
            }
            Given::LockedOut => {
                settled.locked_out.push(pod_name.clone());
                settled.pending.push(pod_name);
            }
            Given::Unreachable => settled.pending.push(pod_name),
        }
    }
    if !refused.is_empty() {
        settled.failure = Some(refused.join("; "));
    }
    tally
}

/// A pass whose users are not applied (`failure`): every pod is pending; `operator`: the
/// operator user's password.
pub fn unapplied(operator: String, failure: String, pods: &[Arc<CachedPod>]) -> Settled {
    Settled {
        password: Some(operator),
        failure: Some(failure),
        pending: pods.iter().map(|p| p.name_any()).collect(),
        ..Settled::default()
    }
}

/// Records the failure of a pass in `applied`: [`Settled::report`] only when it is new.
pub fn report(applied: &mut Applied, mut settled: Settled) -> Settled {
    settled.report = settled.failure.is_some() && applied.reported != settled.failure;
    applied.reported.clone_from(&settled.failure);
    settled
}

/// The note of the Normal Event of a pass that gave pods the users.
pub fn updated_note(updated: &[String]) -> Option<String> {
    (!updated.is_empty()).then(|| format!("Gave pod(s) {} the current users", updated.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::users::tests::{acl, passwords};
    use api::acl::OPERATOR_PASSWORD_KEY;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
    use serde_json::json;

    fn pod(name: &str) -> Arc<CachedPod> {
        let mut pod = CachedPod::default();
        pod.metadata.name = Some(name.into());
        pod.metadata.uid = Some(format!("uid-{name}"));
        Arc::new(pod)
    }

    fn terminating(name: &str) -> Arc<CachedPod> {
        let mut pod = (*pod(name)).clone();
        pod.metadata.deletion_timestamp = Some(Time(Default::default()));
        Arc::new(pod)
    }

    fn names(pods: &[&Arc<CachedPod>]) -> Vec<String> {
        pods.iter().map(|p| p.name_any()).collect()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_secret_of_the_name_that_is_not_the_redis_s_stops_the_pass() {
        let owned_by = |uid: &str, controller: bool| Secret {
            metadata: kube::api::ObjectMeta {
                owner_references: Some(vec![OwnerReference {
                    api_version: "myapp.tangx.in/v1".into(),
                    kind: "Redis".into(),
                    name: "cache".into(),
                    uid: uid.into(),
                    controller: Some(controller),
                    ..OwnerReference::default()
                }]),
                ..Default::default()
            },
            ..Secret::default()
        };
        let cases = [
            ("none yet: made", None, false),
            ("the Redis's", Some(owned_by("u-1", true)), false),
            ("another's", Some(owned_by("u-2", true)), true),
            (
                "owned but not controlled",
                Some(owned_by("u-1", false)),
                true,
            ),
            ("made by hand", Some(Secret::default()), true),
        ];
        for (why, secret, stops) in cases {
            let got = conflict(secret.as_ref(), "u-1", "cache-acl");
            let expected = secret.filter(|_| stops).map(|s| {
                format!(
                    "Secret cache-acl exists and is not this Redis's ({}): the operator keeps its users' passwords there; delete or rename it",
                    controller_of(&s)
                )
            });
            assert_eq!(got, expected, "{why}");
        }
    }

    #[test]
    fn only_a_generated_password_is_kept() {
        let generated = "a".repeat(64);
        let cases = [
            (
                "generated",
                Some(generated.as_bytes().to_vec()),
                Some(generated.as_str()),
            ),
            ("edited by hand", Some(b"short".to_vec()), None),
            ("not UTF-8", Some(vec![0xff; 64]), None),
            ("missing", None, None),
        ];
        for (why, value, kept) in cases {
            let data: BTreeMap<String, ByteString> = value
                .map(|v| (OPERATOR_PASSWORD_KEY.to_owned(), ByteString(v)))
                .into_iter()
                .collect();
            assert_eq!(
                kept_password(&data, OPERATOR_PASSWORD_KEY).as_deref(),
                kept,
                "{why}"
            );
        }
    }

    #[test]
    fn the_users_are_applied_only_with_every_password_and_valid_rules() {
        let users = HashMap::from([("reader".to_owned(), "r-pass".to_owned())]);
        let reader = acl(json!({"users": [{"name": "reader", "rules": "+@read",
            "passwordSecretRef": {"name": "s"}}]}));
        let stranger = acl(json!({"users": [{"name": "y", "rules": "",
            "passwordSecretRef": {"name": "s"}}]}));
        let cases = [
            ("all read", &reader, vec![], Ok(4)),
            (
                "some not read",
                &reader,
                strings(&[
                    "spec.auth: Secret a not found",
                    "user reader: Secret s not found",
                ]),
                Err(
                    "the users are not applied: spec.auth: Secret a not found; user reader: Secret s not found",
                ),
            ),
            (
                "a user without a password",
                &stranger,
                vec![],
                Err("the users are not applied: "),
            ),
        ];
        for (why, spec, problems, expected) in cases {
            match (wanted(spec, passwords(&users), problems), expected) {
                (Ok(got), Ok(count)) => assert_eq!(got.len(), count, "{why}"),
                (Err(got), Err(start)) => assert!(got.starts_with(start), "{why}: {got}"),
                (got, _) => panic!("{why}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_starting_container_loads_the_secret_s_users_or_on_a_new_secret_the_operator_s_own() {
        let users = HashMap::from([("reader".to_owned(), "r-pass".to_owned())]);
        let spec = acl(json!({"users": [{"name": "reader", "rules": "+@read",
            "passwordSecretRef": {"name": "s"}}]}));
        let kept = BTreeMap::from([(USERS_KEY.to_owned(), ByteString(b"user x on\n".to_vec()))]);
        assert_eq!(
            loaded(&kept, &spec, passwords(&users)).as_deref(),
            Ok("user x on\n")
        );
        let own = users::desired(&acl(json!({})), passwords(&HashMap::new())).expect("valid");
        let fresh = loaded(&BTreeMap::new(), &spec, passwords(&users)).expect("valid");
        assert_eq!(fresh, users::config_lines(&own));
        assert!(!fresh.contains("reader"), "{fresh}");
    }

    #[test]
    fn every_live_pod_not_given_these_users_is_given_them() {
        let applied = Applied {
            users: "user a\n".into(),
            pods: strings(&["uid-p0", "uid-p1", "uid-gone"]),
            ..Applied::default()
        };
        let pods = [pod("p0"), terminating("p1"), pod("p2")];
        let cases = [
            (
                "the same users: the others",
                "user a\n",
                vec!["p2"],
                vec!["uid-p0"],
            ),
            (
                "other users: every live pod",
                "user b\n",
                vec!["p0", "p2"],
                vec![],
            ),
        ];
        for (why, lines, give, done) in cases {
            let plan = super::pods(lines, &applied, &pods);
            assert_eq!(names(&plan.give), give, "{why}");
            assert_eq!(plan.done, done, "{why}");
        }
    }

    #[test]
    fn the_answers_say_which_pods_have_the_users_and_which_wait() {
        let pods = [pod("a"), pod("b"), pod("c"), pod("d")];
        let plan = PodPlan {
            give: pods.iter().collect(),
            done: strings(&["uid-x"]),
        };
        let answers = vec![
            Given::Done,
            Given::Refused("ERR unknown command 'xyz'".into()),
            Given::LockedOut,
            Given::Unreachable,
        ];
        let tally = tally("op".into(), plan, answers);
        assert_eq!(
            tally,
            Tally {
                settled: Settled {
                    password: Some("op".into()),
                    pending: strings(&["b", "c", "d"]),
                    locked_out: strings(&["c"]),
                    failure: Some("pod b: ERR unknown command 'xyz'".into()),
                    report: false,
                },
                updated: strings(&["a"]),
                done: strings(&["uid-x", "uid-a"]),
            }
        );

        // The Secret takes the users once a pod took them all, and none refused them.
        let cases = [
            (
                "a pod took them",
                vec![Given::Done, Given::Unreachable],
                "new",
                true,
            ),
            ("and the Secret has them", vec![Given::Done], "old", false),
            ("no pod took them", vec![Given::Unreachable], "new", false),
            (
                "one refused them",
                vec![Given::Done, Given::Refused("no".into())],
                "new",
                false,
            ),
        ];
        for (why, answers, lines, loads) in cases {
            let plan = PodPlan {
                give: pods[..answers.len()].iter().collect(),
                done: Vec::new(),
            };
            let tally = super::tally("op".into(), plan, answers);
            assert_eq!(tally.loads(lines, "old"), loads, "{why}");
        }
    }

    #[test]
    fn users_not_applied_leave_every_pod_pending() {
        let pods = [pod("a"), terminating("b")];
        assert_eq!(
            unapplied("op".into(), "why".into(), &pods),
            Settled {
                password: Some("op".into()),
                pending: strings(&["a", "b"]),
                failure: Some("why".into()),
                ..Settled::default()
            }
        );
    }

    #[test]
    fn a_failure_is_reported_once_until_it_changes_or_clears() {
        let mut applied = Applied::default();
        let passes = [
            (Some("refused"), true),
            (Some("refused"), false),
            (Some("other"), true),
            (None, false),
            (Some("other"), true),
        ];
        for (i, (failure, reported)) in passes.into_iter().enumerate() {
            let settled = Settled {
                failure: failure.map(str::to_owned),
                ..Settled::default()
            };
            let settled = report(&mut applied, settled);
            assert_eq!(settled.report, reported, "pass {i}");
            assert_eq!(applied.reported.as_deref(), failure, "pass {i}");
        }
    }

    #[test]
    fn the_event_names_the_pods_given_the_users() {
        assert_eq!(
            updated_note(&strings(&["cache-0", "cache-2"])).as_deref(),
            Some("Gave pod(s) cache-0, cache-2 the current users")
        );
        assert_eq!(updated_note(&[]), None);
    }
}
