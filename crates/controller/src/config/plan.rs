//! What the configuration step does in a pass (DESIGN §3m), planned from the spec, the pods as
//! cached and what the controller remembers of each pod: which running pods to give which live
//! settings ([`plan`]), which run them already, and, once the pods answered, what the pass found,
//! what it remembers ([`record`]) and what its Events say. Pure.

use crate::cached::CachedPod;
use crate::pods::build::CONTAINER;
use crate::redis_server::config::NotSet;
use api::RedisSpec;
use api::config::{Applied, Setting, directive};
use kube::ResourceExt;
use std::collections::HashMap;
use std::sync::Arc;

/// What the controller remembers of one Redis's pods.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Known {
    /// Per pod uid: what it was last given.
    pub pods: HashMap<String, Given>,
    /// The refusals last published, so a repeated one is not published every pass.
    pub reported: Vec<String>,
}

/// What one pod was last given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Given {
    /// The redis container's restart count then.
    pub restarts: i32,
    /// [`wanted`] then, as `name value` lines, and its names.
    pub settings: String,
    pub names: Vec<&'static str>,
    /// What it refused of them (redis-server's messages).
    pub refused: Vec<String>,
    /// The Redis's metadata.generation whose live settings it runs in full (none refused).
    pub generation: Option<i64>,
}

/// What one pass found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// The Redis has settings, or pods started with some: the condition says how they stand.
    pub configured: bool,
    /// The live settings (names).
    pub live: Vec<&'static str>,
    /// Pods given changed settings in this pass.
    pub applied: Vec<String>,
    /// Pods not yet given the current settings (not reached, or loading their data).
    pub pending: Vec<String>,
    /// Refusals: pod, and redis-server's message.
    pub rejected: Vec<(String, String)>,
    /// Each running pod looked at, and the metadata.generation whose live settings it runs in
    /// full (`None`: not known, a pod not reached since this controller started).
    pub generations: Vec<(String, Option<i64>)>,
}

/// A pod to give its settings in this pass.
#[derive(Debug, PartialEq)]
pub struct Due {
    pub pod: Arc<CachedPod>,
    pub uid: String,
    pub restarts: i32,
    pub wanted: Vec<(&'static str, String)>,
    pub lines: String,
    /// Its settings change (an Event says so), rather than being set once more.
    pub changed: bool,
    /// The generation it ran in full before.
    pub generation: Option<i64>,
}

/// What a pass is to do.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// What it finds before it talks to any pod: whether the Redis is configured, its live
    /// settings, and the refusals and generation of each running pod that is not due.
    pub settled: Settled,
    /// The running pods to give their settings, in the order of the pods.
    pub due: Vec<Due>,
}

/// The live settings a pod that `started_with` these directives is to run: `settings` (of
/// `spec`), and Redis's default for each live directive it started with that the spec no longer
/// sets, the operator's own excepted (`--appendonly` of `spec.storage`, say). By name.
pub fn wanted(
    spec: &RedisSpec,
    settings: &[Setting],
    started_with: &[&'static str],
) -> Vec<(&'static str, String)> {
    let mut wanted: Vec<(&'static str, String)> = settings
        .iter()
        .filter(|s| s.applied == Applied::Live)
        .map(|s| (s.name, s.value.clone()))
        .collect();
    for name in started_with {
        let Some(d) = directive(name) else { continue };
        let live = api::config::how_applied(d) == Applied::Live;
        let operators = api::config::owned(d.name, spec).is_some();
        if live && !operators && !wanted.iter().any(|(n, _)| n == name) {
            wanted.push((d.name, d.default.to_owned()));
        }
    }
    wanted.sort();
    wanted.dedup_by(|a, b| a.0 == b.0);
    wanted
}

/// The restart count of `pod`'s redis container, when it runs.
fn running_restarts(pod: &CachedPod) -> Option<i32> {
    pod.containers
        .iter()
        .find(|c| c.name == CONTAINER)
        .filter(|c| c.state.as_ref().is_some_and(|s| s.running))
        .map(|c| c.restart_count)
}

/// Plans a pass over `pods` for the Redis of `spec` at `generation`. Forgets in `known` the
/// pods gone from the cache, and notes that a pod given the current settings in full runs
/// `generation`.
pub fn plan(
    spec: &RedisSpec,
    generation: Option<i64>,
    pods: &[Arc<CachedPod>],
    known: &mut Known,
) -> Plan {
    let settings = api::config::settings(spec);
    let mut plan = Plan {
        settled: Settled {
            configured: !settings.is_empty() || pods.iter().any(|p| !p.start_config.is_empty()),
            live: settings
                .iter()
                .filter(|s| s.applied == Applied::Live)
                .map(|s| s.name)
                .collect(),
            ..Settled::default()
        },
        due: Vec::new(),
    };
    let cached: Vec<&str> = pods
        .iter()
        .filter_map(|p| p.metadata.uid.as_deref())
        .collect();
    known
        .pods
        .retain(|pod_uid, _| cached.contains(&pod_uid.as_str()));
    // Pods to look at: running ones, with what they are to run.
    for pod in pods {
        let name = pod.name_any();
        let (Some(pod_uid), Some(_), Some(restarts), None) = (
            pod.metadata.uid.as_deref(),
            pod.ip(),
            running_restarts(pod),
            &pod.metadata.deletion_timestamp,
        ) else {
            continue;
        };
        // What it started with and what it was given since: a live directive among them
        // that the spec no longer sets goes back to the default.
        let earlier = known.pods.get_mut(pod_uid);
        let mut started = pod.start_config.clone();
        started.extend(earlier.iter().flat_map(|g| g.names.iter().copied()));
        let wanted = wanted(spec, &settings, &started);
        if wanted.is_empty() && earlier.is_none() {
            // Nothing set on it, nothing to set (no connection): it runs the current spec's.
            plan.settled.generations.push((name, generation));
            continue;
        }
        let lines: String = wanted.iter().map(|(n, v)| format!("{n} {v}\n")).collect();
        match earlier {
            Some(given) if given.restarts == restarts && given.settings == lines => {
                plan.settled
                    .rejected
                    .extend(given.refused.iter().map(|r| (name.clone(), r.clone())));
                // Same settings as the current spec's: it runs this generation's, unless
                // it refused some.
                if given.refused.is_empty() {
                    given.generation = generation;
                }
                plan.settled.generations.push((name, given.generation));
            }
            earlier => {
                // Said in an Event when it is news: not for a pod that started with
                // these directives (a new pod, or one first seen by this controller).
                let changed = match &earlier {
                    Some(given) => given.settings != lines,
                    None => !wanted.iter().all(|(n, _)| pod.start_config.contains(n)),
                };
                plan.due.push(Due {
                    pod: Arc::clone(pod),
                    uid: pod_uid.to_owned(),
                    restarts,
                    wanted,
                    lines,
                    changed,
                    generation: earlier.and_then(|g| g.generation),
                });
            }
        }
    }
    plan
}

/// What a pass found once each due pod answered (`answers`, in the order of `plan.due`: what
/// it did not set, `None` when it was not reached), with what `known` now remembers of them.
/// Returns the settled pass and the refusals not published before (`pod <name>: <message>`).
pub fn record(
    generation: Option<i64>,
    plan: Plan,
    answers: Vec<Option<Vec<NotSet>>>,
    known: &mut Known,
) -> (Settled, Vec<String>) {
    let Plan { mut settled, due } = plan;
    let mut newly_refused = Vec::new();
    for (due, answer) in due.into_iter().zip(answers) {
        let name = due.pod.name_any();
        let names: Vec<&'static str> = due.wanted.iter().map(|(n, _)| *n).collect();
        let not_set = match answer {
            Some(not_set) if !not_set.contains(&NotSet::Loading) => not_set,
            // Not reached, or loading its data: the next pass tries again.
            _ => {
                settled.generations.push((name.clone(), due.generation));
                settled.pending.push(name);
                continue;
            }
        };
        let refused: Vec<String> = not_set
            .into_iter()
            .filter_map(|n| match n {
                NotSet::Refused(message) => Some(api::validation::shown(&message)),
                NotSet::Loading => None,
            })
            .collect();
        for r in &refused {
            settled.rejected.push((name.clone(), r.clone()));
            if !known.reported.contains(r) {
                newly_refused.push(format!("pod {name}: {r}"));
            }
        }
        let runs = if refused.is_empty() {
            generation
        } else {
            due.generation
        };
        settled.generations.push((name.clone(), runs));
        if due.changed && refused.is_empty() {
            settled.applied.push(name);
        }
        known.pods.insert(
            due.uid,
            Given {
                restarts: due.restarts,
                settings: due.lines,
                names,
                refused,
                generation: runs,
            },
        );
    }
    known.reported = settled.rejected.iter().map(|(_, r)| r.clone()).collect();
    settled.applied.sort();
    settled.pending.sort();
    settled.rejected.sort();
    settled.generations.sort();
    (settled, newly_refused)
}

/// The note of the Normal Event of a pass that gave pods changed settings.
pub fn applied_note(settled: &Settled) -> Option<String> {
    (!settled.applied.is_empty()).then(|| {
        format!(
            "Pod(s) {} run the current configuration, set live (no restart)",
            settled.applied.join(", ")
        )
    })
}

/// The note of the Warning Event of a pass that met new refusals.
pub fn refused_note(newly_refused: &[String]) -> Option<String> {
    (!newly_refused.is_empty()).then(|| newly_refused.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cached::{CachedContainer, CachedState};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn spec(value: serde_json::Value) -> api::RedisSpec {
        serde_json::from_value(value).expect("spec")
    }

    #[test]
    fn a_pod_runs_the_live_settings_and_defaults_for_the_ones_removed_since_it_started() {
        let s = spec(json!({"config": {"maxmemory-policy": "allkeys-lru", "databases": "4"}}));
        let now = api::config::settings(&s);
        assert_eq!(
            wanted(&s, &now, &[]),
            [("maxmemory-policy", "allkeys-lru".to_owned())],
            "databases is read at start: not set live"
        );
        // It started with notify-keyspace-events (since removed) and the operator's --port.
        let started = [
            "notify-keyspace-events",
            "port",
            "maxmemory-policy",
            "databases",
        ];
        assert_eq!(
            wanted(&s, &now, &started),
            [
                ("maxmemory-policy", "allkeys-lru".to_owned()),
                ("notify-keyspace-events", String::new()),
            ]
        );
        let plain = spec(json!({}));
        assert_eq!(
            wanted(&plain, &[], &["maxmemory"]),
            [("maxmemory", "0".to_owned())],
            "a derived maxmemory whose limit went away goes back to no limit"
        );
        assert_eq!(
            wanted(&plain, &[], &["appendonly"]),
            [("appendonly", "no".to_owned())],
            "appendonly the Redis set itself, since removed"
        );
        let stored = spec(json!({"storage": {"size": "1Gi", "appendOnly": true}}));
        assert!(
            wanted(&stored, &[], &["appendonly", "dir", "replicaof"]).is_empty(),
            "the operator's own options are not the configuration's to undo"
        );
    }

    /// The Redis's generation in these tests.
    const NOW: Option<i64> = Some(7);

    /// A running pod (its redis container restarted `restarts` times) that started with these
    /// directives.
    fn pod(name: &str, restarts: i32, started: &[&'static str]) -> CachedPod {
        let mut pod = CachedPod {
            ip: Some("10.0.0.1".into()),
            containers: vec![CachedContainer {
                name: CONTAINER.into(),
                restart_count: restarts,
                state: Some(CachedState {
                    running: true,
                    waiting: None,
                }),
                ..CachedContainer::default()
            }],
            start_config: started.to_vec(),
            ..CachedPod::default()
        };
        pod.metadata.name = Some(name.into());
        pod.metadata.uid = Some(format!("uid-{name}"));
        pod
    }

    fn lines(settings: &[(&'static str, &str)]) -> String {
        settings.iter().map(|(n, v)| format!("{n} {v}\n")).collect()
    }

    /// What a pod was given at its restart `restarts`.
    fn given(
        settings: &[(&'static str, &str)],
        restarts: i32,
        refused: &[&str],
        generation: Option<i64>,
    ) -> Given {
        Given {
            restarts,
            settings: lines(settings),
            names: settings.iter().map(|(n, _)| *n).collect(),
            refused: refused.iter().map(|r| (*r).to_owned()).collect(),
            generation,
        }
    }

    fn owned(settings: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        settings
            .iter()
            .map(|(n, v)| (*n, (*v).to_owned()))
            .collect()
    }

    const POLICY: (&str, &str) = ("maxmemory-policy", "allkeys-lru");

    /// What the plan does with one pod.
    #[derive(Debug, PartialEq)]
    enum Seen {
        /// Not looked at.
        Skipped,
        /// Not due: the generation it runs, and its refusals.
        Runs(Option<i64>, Vec<String>),
        /// Due: its settings, whether that is news, and the generation it ran before.
        Due(Vec<(&'static str, String)>, bool, Option<i64>),
    }

    #[test]
    fn each_running_pod_is_given_its_settings_unless_it_has_them() {
        let policy = spec(json!({"config": {"maxmemory-policy": "allkeys-lru"}}));
        let plain = spec(json!({}));
        let stopped = {
            let mut p = pod("p", 0, &[]);
            p.containers[0].state = Some(CachedState::default());
            p
        };
        let terminating = {
            let mut p = pod("p", 0, &[]);
            p.metadata.deletion_timestamp = Some(Time(Default::default()));
            p
        };
        let unaddressed = CachedPod {
            ip: None,
            ..pod("p", 0, &[])
        };
        let cases: Vec<(&str, &api::RedisSpec, CachedPod, Option<Given>, Seen)> = vec![
            (
                "a stopped redis container is not looked at",
                &policy,
                stopped,
                None,
                Seen::Skipped,
            ),
            (
                "nor a terminating pod",
                &policy,
                terminating,
                None,
                Seen::Skipped,
            ),
            (
                "nor a pod without an address",
                &policy,
                unaddressed,
                None,
                Seen::Skipped,
            ),
            (
                "nothing set, nothing to set: it runs this generation, no connection",
                &plain,
                pod("p", 0, &["port"]),
                None,
                Seen::Runs(NOW, vec![]),
            ),
            (
                "a pod that started with the setting gets it once more, no news",
                &policy,
                pod("p", 0, &["maxmemory-policy"]),
                None,
                Seen::Due(owned(&[POLICY]), false, None),
            ),
            (
                "a pod that started without it gets it, news",
                &policy,
                pod("p", 0, &[]),
                None,
                Seen::Due(owned(&[POLICY]), true, None),
            ),
            (
                "given the same since its start: it runs this generation",
                &policy,
                pod("p", 0, &[]),
                Some(given(&[POLICY], 0, &[], Some(3))),
                Seen::Runs(NOW, vec![]),
            ),
            (
                "refused some of the same: it keeps its refusals and its generation",
                &policy,
                pod("p", 0, &[]),
                Some(given(&[POLICY], 0, &["bad"], Some(3))),
                Seen::Runs(Some(3), vec!["bad".into()]),
            ),
            (
                "restarted since: given them again, no news",
                &policy,
                pod("p", 1, &[]),
                Some(given(&[POLICY], 0, &[], Some(3))),
                Seen::Due(owned(&[POLICY]), false, Some(3)),
            ),
            (
                "given a directive the spec dropped since: back to its default, news",
                &plain,
                pod("p", 0, &[]),
                Some(given(&[("notify-keyspace-events", "KEA")], 0, &[], Some(3))),
                Seen::Due(owned(&[("notify-keyspace-events", "")]), true, Some(3)),
            ),
        ];
        for (why, spec, pod, memory, seen) in cases {
            let mut known = Known::default();
            known
                .pods
                .extend(memory.clone().map(|g| ("uid-p".to_owned(), g)));
            let plan = plan(spec, NOW, &[Arc::new(pod)], &mut known);
            let got = match (plan.due.as_slice(), plan.settled.generations.as_slice()) {
                ([], []) => Seen::Skipped,
                ([], [(_, generation)]) => Seen::Runs(
                    *generation,
                    plan.settled
                        .rejected
                        .iter()
                        .map(|(_, r)| r.clone())
                        .collect(),
                ),
                ([due], []) => Seen::Due(due.wanted.clone(), due.changed, due.generation),
                _ => panic!("{why}: {plan:?}"),
            };
            assert_eq!(got, seen, "{why}");
            // A pod not due is remembered to run what it runs; a due one as it was until it
            // answers.
            let remembered = known.pods.get("uid-p").map(|g| g.generation);
            let expected = match &seen {
                Seen::Runs(generation, _) => memory.map(|_| *generation),
                _ => memory.map(|g| g.generation),
            };
            assert_eq!(remembered, expected, "{why}: memory");
        }
    }

    #[test]
    fn the_plan_says_whether_the_redis_is_configured_and_forgets_pods_gone() {
        let policy = spec(json!({"config": {"maxmemory-policy": "allkeys-lru", "databases": "4"}}));
        let mut known = Known::default();
        known
            .pods
            .insert("uid-gone".into(), given(&[POLICY], 0, &[], NOW));
        known
            .pods
            .insert("uid-p".into(), given(&[POLICY], 0, &[], NOW));
        let p = plan(&policy, NOW, &[Arc::new(pod("p", 0, &[]))], &mut known);
        assert!(p.settled.configured);
        assert_eq!(
            p.settled.live,
            ["maxmemory-policy"],
            "databases is read at start"
        );
        assert_eq!(known.pods.keys().collect::<Vec<_>>(), ["uid-p"]);

        let plain = spec(json!({}));
        let cases = [
            (vec![], false),
            (vec![pod("p", 0, &[])], false),
            (vec![pod("p", 0, &["maxmemory"])], true),
        ];
        for (pods, configured) in cases {
            let pods: Vec<Arc<CachedPod>> = pods.into_iter().map(Arc::new).collect();
            let p = plan(&plain, NOW, &pods, &mut Known::default());
            assert_eq!(p.settled.configured, configured, "{pods:?}");
        }
    }

    /// A case of [`record`]: why, whether the settings changed, the pod's answer, the refusals
    /// reported before, what the pass finds, and the refusals it publishes.
    type Answered = (
        &'static str,
        bool,
        Option<Vec<NotSet>>,
        Vec<String>,
        Settled,
        Vec<String>,
    );

    #[test]
    fn the_answers_say_what_each_pod_runs_and_which_refusals_are_news() {
        let refusal = "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy')";
        let shown = api::validation::shown(refusal);
        let cases: Vec<Answered> = vec![
            (
                "not reached: pending, as it was",
                true,
                None,
                vec![],
                Settled {
                    pending: vec!["p".into()],
                    generations: vec![("p".into(), Some(3))],
                    ..Settled::default()
                },
                vec![],
            ),
            (
                "loading its data: pending, as it was",
                true,
                Some(vec![NotSet::Loading]),
                vec![],
                Settled {
                    pending: vec!["p".into()],
                    generations: vec![("p".into(), Some(3))],
                    ..Settled::default()
                },
                vec![],
            ),
            (
                "set, news: applied, runs this generation",
                true,
                Some(vec![]),
                vec![],
                Settled {
                    applied: vec!["p".into()],
                    generations: vec![("p".into(), NOW)],
                    ..Settled::default()
                },
                vec![],
            ),
            (
                "set once more: runs this generation, nothing to say",
                false,
                Some(vec![]),
                vec![],
                Settled {
                    generations: vec![("p".into(), NOW)],
                    ..Settled::default()
                },
                vec![],
            ),
            (
                "refused: rejected, as it was, news",
                true,
                Some(vec![NotSet::Refused(refusal.into())]),
                vec![],
                Settled {
                    rejected: vec![("p".into(), shown.clone())],
                    generations: vec![("p".into(), Some(3))],
                    ..Settled::default()
                },
                vec![format!("pod p: {shown}")],
            ),
            (
                "refused again: no news",
                true,
                Some(vec![NotSet::Refused(refusal.into())]),
                vec![shown.clone()],
                Settled {
                    rejected: vec![("p".into(), shown.clone())],
                    generations: vec![("p".into(), Some(3))],
                    ..Settled::default()
                },
                vec![],
            ),
        ];
        for (why, changed, answer, reported, settled, news) in cases {
            let due = Due {
                pod: Arc::new(pod("p", 2, &[])),
                uid: "uid-p".into(),
                restarts: 2,
                wanted: owned(&[POLICY]),
                lines: lines(&[POLICY]),
                changed,
                generation: Some(3),
            };
            let mut known = Known {
                reported,
                ..Known::default()
            };
            let reached = matches!(&answer, Some(a) if !a.contains(&NotSet::Loading));
            let plan = Plan {
                settled: Settled::default(),
                due: vec![due],
            };
            let (got, got_news) = record(NOW, plan, vec![answer], &mut known);
            assert_eq!(got, settled, "{why}");
            assert_eq!(got_news, news, "{why}");
            let refused: Vec<String> = settled.rejected.iter().map(|(_, r)| r.clone()).collect();
            assert_eq!(known.reported, refused, "{why}: reported");
            let remembered = known.pods.get("uid-p");
            if reached {
                let run = settled.generations[0].1;
                let mut expected = given(&[POLICY], 2, &[], run);
                expected.refused = refused;
                assert_eq!(remembered, Some(&expected), "{why}: memory");
            } else {
                assert_eq!(remembered, None, "{why}: memory");
            }
        }
    }

    #[test]
    fn the_events_name_the_pods_changed_and_the_new_refusals() {
        let settled = Settled {
            applied: vec!["cache-0".into(), "cache-1".into()],
            ..Settled::default()
        };
        assert_eq!(
            applied_note(&settled).as_deref(),
            Some("Pod(s) cache-0, cache-1 run the current configuration, set live (no restart)")
        );
        assert_eq!(applied_note(&Settled::default()), None);
        let news = [
            "pod cache-0: bad".to_owned(),
            "pod cache-1: worse".to_owned(),
        ];
        assert_eq!(
            refused_note(&news).as_deref(),
            Some("pod cache-0: bad; pod cache-1: worse")
        );
        assert_eq!(refused_note(&[]), None);
    }
}
