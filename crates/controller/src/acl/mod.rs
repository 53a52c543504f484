//! ACL users (`spec.acl`, DESIGN §3l): the operator's Secret `<name>-acl`, and the users set
//! live on every pod.
//!
//! With `spec.acl` the controller logs in as its own user (`redis-operator`) and the replicas as
//! `masteruser`, with passwords it generates once and keeps in the Secret `<name>-acl`, which the
//! Redis owns (the garbage collector deletes it with the Redis). The same Secret holds the users
//! as redis.conf lines (passwords hashed): a container reads them when it starts (see
//! `pods::build::ACL_LAUNCHER`). A running pod gets every change live: whenever the users change
//! (a rule, a user added or removed, a password in a user's Secret, `spec.auth`'s, the default
//! user turned off), each pod is given them all with `ACL SETUSER` and loses the others with
//! `ACL DELUSER` (`redis_server::Server::apply_users`). The controller remembers, per pod (by
//! uid), which users it was given; a pod made later starts with the Secret's.
//!
//! A pod that does not know the operator's user yet (`spec.acl` was just added) is reached as
//! the default user with `spec.auth`'s password. A Secret `<name>-acl` that this Redis does not
//! own is never written: the Redis is not Ready (`ACLSecretConflict`) until it is gone.
//!
//! - [`users`]: which users, and their arguments and config lines (pure).
//! - [`status`]: the `UsersApplied` condition, and Ready False without a login (pure).

pub mod status;
pub mod users;

use crate::Error;
use crate::auth;
use crate::cached::CachedPod;
use crate::k8s::by_redis::{ByRedis, Remembers};
use crate::k8s::events::publish;
use crate::k8s::{self, controlled_by};
use crate::redis_server::{Login, Server, TlsClient, refuses_auth};
use crate::step::Step;
use api::Redis;
use api::acl::{OPERATOR_PASSWORD_KEY, OPERATOR_USER, REPLICATION_PASSWORD_KEY, USERS_KEY};
use futures::future;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use kube::runtime::events::{EventType, Recorder};
use kube::{Client, Resource, ResourceExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use users::{Passwords, User};

/// Reason of the Normal Event when pods were given the current users.
pub const USERS_UPDATED: &str = "UsersUpdated";
/// Reason of the Warning Event (and the condition) when a pod refuses a user's rules.
pub const USERS_REFUSED: &str = "UsersRefused";

/// What the controller remembers per Redis (by uid). In memory: a new leader gives every pod
/// the users once more, which changes nothing on a pod that has them.
#[derive(Default)]
pub struct State {
    by_redis: ByRedis<Applied>,
}

#[derive(Default, Clone)]
struct Applied {
    /// The config lines of the users last applied (their digest, in effect).
    users: String,
    /// Pods (by uid) given exactly those users.
    pods: Vec<String>,
    /// The failure last published, so a repeated one is not published every pass.
    reported: Option<String>,
    /// The operator's Secret as last read or written: read again only when the metadata cache
    /// shows another resourceVersion.
    secret: Option<Secret>,
}

impl State {
    /// Forgets a Redis (deleted).
    pub fn forget(&self, uid: &str) {
        self.by_redis.forget(uid);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Applied>> {
        self.by_redis.lock()
    }
}

impl Remembers for State {
    fn forget(&self, uid: &str) {
        State::forget(self, uid);
    }

    fn keep_only(&self, exists: &dyn Fn(&str) -> bool) {
        self.by_redis.keep_only(exists);
    }
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
    /// The auth step's outcome for the steps after it: the operator's login, and a failure only
    /// when it leaves the controller without a login or locked out of a pod.
    pub fn auth(&self) -> auth::Settled {
        let failure = match (&self.password, self.locked_out.as_slice()) {
            (None, _) => self.failure.clone(),
            (Some(_), []) => None,
            (Some(_), pods) => Some(format!(
                "pod(s) {} refuse the operator's user and the default user's password",
                pods.join(", ")
            )),
        };
        auth::Settled {
            user: Some(OPERATOR_USER),
            password: self.password.clone(),
            failure,
            ..auth::Settled::default()
        }
    }
}

/// How the controller logs in to the pods, as the ACL step or the auth step settled it (§3l,
/// §3c): with ACL users, the operator's own user; otherwise the default user's password.
/// Neither runs while `spec.tls` has no client yet (nothing can reach the pods).
#[derive(Debug, Default)]
pub struct Access {
    /// `Some` with `spec.acl`, once its step ran.
    pub acl: Option<Settled>,
    /// The login of the steps after it, once settled.
    pub auth: Option<auth::Settled>,
}

impl Access {
    /// The login of the steps that talk to the pods; `None` while it does not work.
    pub fn login(&self) -> Option<Login<'_>> {
        self.auth
            .as_ref()
            .filter(|a| a.failure.is_none())
            .map(auth::Settled::login)
    }
}

/// The login step of a pass: the ACL step with `spec.acl` ([`apply`]), the password step
/// otherwise (`auth::apply`). After the TLS step, before anything else talks to the pods.
pub async fn access(step: &Step<'_>, state: &State, auth: &auth::State) -> Result<Access, Error> {
    if step.tls_blocked() {
        return Ok(Access::default());
    }
    let (client, recorder, redis, pods) = (step.client, step.recorder, step.redis, step.pods);
    if redis.spec.acl.is_some() {
        let acl = apply(state, auth, client, recorder, redis, pods, step.tls).await?;
        return Ok(Access {
            auth: Some(acl.auth()),
            acl: Some(acl),
        });
    }
    Ok(Access {
        acl: None,
        auth: auth::apply(auth, client, recorder, redis, pods, step.tls).await?,
    })
}

/// The ACL step of a pass: [`settle`], and Events (only when new).
pub async fn apply(
    state: &State,
    auth: &auth::State,
    client: &Client,
    recorder: &Recorder,
    redis: &Redis,
    pods: &[Arc<CachedPod>],
    tls: Option<&TlsClient>,
) -> Result<Settled, Error> {
    let (settled, updated) = settle(state, auth, client, redis, pods, tls).await?;
    let reference = redis.object_ref(&());
    if !updated.is_empty() {
        let note = format!("Gave pod(s) {} the current users", updated.join(", "));
        tracing::info!(redis = %redis.name_any(), %note, "ACL users applied");
        publish(
            recorder,
            &reference,
            None,
            EventType::Normal,
            USERS_UPDATED,
            "ApplyUsers",
            note,
        )
        .await;
    }
    if settled.report
        && let Some(note) = &settled.failure
    {
        tracing::warn!(redis = %redis.name_any(), %note, "ACL users not applied");
        publish(
            recorder,
            &reference,
            None,
            EventType::Warning,
            USERS_REFUSED,
            "ApplyUsers",
            note.clone(),
        )
        .await;
    }
    Ok(settled)
}

/// One pass: the passwords read, the Secret kept, the users given to every pod that lacks
/// them. Returns what it found and the pods updated. `Err` only for a failed API call.
pub async fn settle(
    state: &State,
    auth: &auth::State,
    client: &Client,
    redis: &Redis,
    pods: &[Arc<CachedPod>],
    tls: Option<&TlsClient>,
) -> Result<(Settled, Vec<String>), Error> {
    let Some(acl) = &redis.spec.acl else {
        return Ok((Settled::default(), Vec::new()));
    };
    let uid = redis.metadata.uid.clone().unwrap_or_default();
    let (name, namespace) = k8s::name_and_namespace(&redis.metadata)?;
    let port = u16::try_from(redis.spec.port()).unwrap_or_default();

    // The passwords of spec.auth and of every user, each from its Secret.
    let mut problems = Vec::new();
    let default = match redis.spec.auth_secret() {
        None => None,
        Some((secret, key)) => {
            match auth::secret_value(auth, client, &uid, (namespace, secret, key)).await? {
                Ok(password) => Some(password),
                Err(why) => {
                    problems.push(format!("spec.auth: {why}"));
                    None
                }
            }
        }
    };
    let mut passwords = HashMap::new();
    for user in &acl.users {
        let slot = format!("{uid}/{}", user.name);
        let (secret, key) = user.secret();
        match auth::secret_value(auth, client, &slot, (namespace, secret, key)).await? {
            Ok(password) => {
                passwords.insert(user.name.clone(), password);
            }
            Err(why) => problems.push(format!("user {}: {why}", user.name)),
        }
    }

    // The operator's Secret, with its generated passwords.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret_name = api::acl::secret_name(name);
    let kept = state.map().get(&uid).and_then(|a| a.secret.clone());
    let current = match (kept, auth.cached_version(namespace, &secret_name)) {
        (Some(kept), Some(Some(version)))
            if kept.metadata.resource_version.as_deref() == Some(version.as_str()) =>
        {
            Some(kept)
        }
        _ => secrets.get_opt(&secret_name).await.map_err(Error::Kube)?,
    };
    if let Some(current) = &current
        && !controlled_by(current, &uid)
    {
        let failure = format!(
            "Secret {secret_name} exists and is not this Redis's ({}): the operator keeps its users' passwords there; delete or rename it",
            k8s::controller_of(current)
        );
        return Ok((report(state, &uid, Settled::failed(failure)), Vec::new()));
    }
    let data = current
        .as_ref()
        .and_then(|s| s.data.clone())
        .unwrap_or_default();
    let generated = |key: &str| -> Result<String, Error> {
        match data
            .get(key)
            .and_then(|v| String::from_utf8(v.0.clone()).ok())
        {
            Some(p) if users::is_generated(&p) => Ok(p),
            _ => users::generate().map_err(Error::Acl),
        }
    };
    let operator = generated(OPERATOR_PASSWORD_KEY)?;
    let replication = generated(REPLICATION_PASSWORD_KEY)?;
    let wanted = if problems.is_empty() {
        users::desired(
            acl,
            Passwords {
                default: default.as_deref(),
                operator: &operator,
                replication: &replication,
                users: &passwords,
            },
        )
        .map_err(|why| problems.push(why))
        .ok()
    } else {
        None
    };
    // The users a container starting now loads: only users some running pod of this Redis took
    // whole, since redis-server refuses to start on a user line it rejects (a command its
    // version lacks): the Secret's, or on a new Secret the operator's own and the default user.
    let loaded = match data.get(USERS_KEY) {
        Some(kept) => String::from_utf8_lossy(&kept.0).into_owned(),
        None => {
            let own = api::acl::AclSpec {
                users: Vec::new(),
                ..acl.clone()
            };
            let own = users::desired(
                &own,
                Passwords {
                    default: default.as_deref(),
                    operator: &operator,
                    replication: &replication,
                    users: &HashMap::new(),
                },
            )
            .map_err(Error::Acl)?;
            users::config_lines(&own)
        }
    };
    let keeper = SecretKeeper {
        api: &secrets,
        redis,
        name: &secret_name,
        operator: &operator,
        replication: &replication,
    };
    let written = keeper.keep(current, &loaded).await?;
    state.map().entry(uid.clone()).or_default().secret = Some(written.clone());

    let mut settled = Settled {
        password: Some(operator.clone()),
        ..Settled::default()
    };
    let Some(wanted) = wanted else {
        settled.failure = Some(format!(
            "the users are not applied: {}",
            problems.join("; ")
        ));
        settled.pending = pods.iter().map(|p| p.name_any()).collect();
        return Ok((report(state, &uid, settled), Vec::new()));
    };

    // Every pod not yet given these users.
    let lines = users::config_lines(&wanted);
    let applied = state.map().get(&uid).cloned().unwrap_or_default();
    let same_users = applied.users == lines;
    let live: Vec<&Arc<CachedPod>> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let todo: Vec<&Arc<CachedPod>> = live
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
    let args: Vec<(&str, &[String])> = wanted
        .iter()
        .map(|u: &User| (u.name.as_str(), u.args.as_slice()))
        .collect();
    let logins = [
        Login {
            user: Some(OPERATOR_USER),
            password: Some(&operator),
        },
        Login::password(default.as_deref()),
    ];
    let outcomes = future::join_all(
        todo.iter()
            .map(|pod| give_users(pod, port, tls, &logins, &args, &replication)),
    )
    .await;
    let mut done: Vec<String> = if same_users {
        applied
            .pods
            .iter()
            .filter(|u| live.iter().any(|p| p.metadata.uid.as_ref() == Some(*u)))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let mut updated = Vec::new();
    let mut refused = Vec::new();
    for (pod, outcome) in todo.iter().zip(outcomes) {
        let pod_name = pod.name_any();
        match outcome {
            Given::Done => {
                done.extend(pod.metadata.uid.clone());
                updated.push(pod_name);
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
    // A pod took them all: containers started from now on load them too.
    if !done.is_empty() && refused.is_empty() && lines != loaded {
        let written = keeper.keep(Some(written), &lines).await?;
        state.map().entry(uid.clone()).or_default().secret = Some(written);
    }
    {
        let mut map = state.map();
        let entry = map.entry(uid.clone()).or_default();
        entry.users = lines;
        entry.pods = done;
    }
    if !refused.is_empty() {
        settled.failure = Some(refused.join("; "));
    }
    Ok((report(state, &uid, settled), updated))
}

/// Writes the operator's Secret: created when missing, replaced when its passwords or users
/// differ; the Secret as stored is returned.
struct SecretKeeper<'a> {
    api: &'a Api<Secret>,
    redis: &'a Redis,
    name: &'a str,
    operator: &'a str,
    replication: &'a str,
}

impl SecretKeeper<'_> {
    async fn keep(&self, current: Option<Secret>, users: &str) -> Result<Secret, Error> {
        let data = BTreeMap::from([
            (
                OPERATOR_PASSWORD_KEY.to_owned(),
                ByteString(self.operator.as_bytes().to_vec()),
            ),
            (
                REPLICATION_PASSWORD_KEY.to_owned(),
                ByteString(self.replication.as_bytes().to_vec()),
            ),
            (USERS_KEY.to_owned(), ByteString(users.as_bytes().to_vec())),
        ]);
        match current {
            None => {
                let metadata = crate::children::meta::metadata(self.redis, self.name.to_owned())
                    .ok_or_else(|| Error::Acl("the Redis has no name or uid".to_owned()))?;
                let secret = Secret {
                    metadata,
                    type_: Some("Opaque".to_owned()),
                    data: Some(data),
                    ..Secret::default()
                };
                self.api
                    .create(&PostParams::default(), &secret)
                    .await
                    .map_err(Error::Kube)
            }
            Some(mut secret) if secret.data.as_ref() != Some(&data) => {
                secret.data = Some(data);
                secret.string_data = None;
                self.api
                    .replace(self.name, &PostParams::default(), &secret)
                    .await
                    .map_err(Error::Kube)
            }
            Some(secret) => Ok(secret),
        }
    }
}

impl Settled {
    fn failed(failure: String) -> Self {
        Settled {
            failure: Some(failure),
            ..Settled::default()
        }
    }
}

/// Records the failure of a pass: [`Settled::report`] only when it is new.
fn report(state: &State, uid: &str, mut settled: Settled) -> Settled {
    let mut map = state.map();
    let entry = map.entry(uid.to_owned()).or_default();
    settled.report = settled.failure.is_some() && entry.reported != settled.failure;
    entry.reported.clone_from(&settled.failure);
    settled
}

/// How giving one pod its users went.
enum Given {
    Done,
    /// redis-server refused some user (the message says which and why).
    Refused(String),
    /// Every login was refused.
    LockedOut,
    Unreachable,
}

/// Gives `pod` the users, logging in with the first of `logins` it accepts.
async fn give_users(
    pod: &CachedPod,
    port: u16,
    tls: Option<&TlsClient>,
    logins: &[Login<'_>],
    users: &[(&str, &[String])],
    replication: &str,
) -> Given {
    let Some(ip) = pod.ip() else {
        return Given::Unreachable;
    };
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    for login in logins {
        let server = Server {
            pod: name,
            ip,
            port,
            login: *login,
            tls,
        };
        match server.apply_users(users, replication).await {
            Ok(()) => return Given::Done,
            Err(Error::Redis { source, .. }) if refuses_auth(&source) => {}
            Err(Error::RedisState { reason, .. }) => return Given::Refused(reason),
            Err(e) => {
                tracing::debug!(pod = %name, error = %e, "could not give the users");
                return Given::Unreachable;
            }
        }
    }
    Given::LockedOut
}
