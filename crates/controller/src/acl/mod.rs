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
//! - [`plan`]: the Secret's passwords and users, which pods to give the users, and what the
//!   pass found and reports (pure).
//! - [`status`]: the `UsersApplied` condition, and Ready False without a login (pure).
//! - this module: the memory, the reads and writes of the Secrets, `ACL SETUSER` and the Events.

pub mod plan;
pub mod status;
pub mod users;

use crate::Error;
use crate::auth;
use crate::cached::CachedPod;
use crate::k8s;
use crate::k8s::by_redis::{ByRedis, Remembers};
use crate::k8s::events::publish;
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
pub use plan::Settled;
use plan::{Applied, Given};
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

impl State {
    /// Forgets a Redis (deleted).
    pub fn forget(&self, uid: &str) {
        self.by_redis.forget(uid);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, crate::k8s::by_redis::Memory<String, Applied>> {
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
    if let Some(note) = plan::updated_note(&updated) {
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
    let read = read_passwords(auth, client, redis, &uid, namespace).await?;

    // The operator's Secret, with its generated passwords.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret_name = api::acl::secret_name(name);
    let current = operators_secret(state, auth, &secrets, (&uid, namespace, &secret_name)).await?;
    if let Some(failure) = plan::conflict(current.as_ref(), &uid, &secret_name) {
        return Ok((report(state, &uid, Settled::failed(failure)), Vec::new()));
    }
    let data = current
        .as_ref()
        .and_then(|s| s.data.clone())
        .unwrap_or_default();
    let generated = |key: &str| match plan::kept_password(&data, key) {
        Some(p) => Ok(p),
        None => users::generate().map_err(Error::Acl),
    };
    let operator = generated(OPERATOR_PASSWORD_KEY)?;
    let replication = generated(REPLICATION_PASSWORD_KEY)?;
    let passwords = Passwords {
        default: read.default.as_deref(),
        operator: &operator,
        replication: &replication,
        users: &read.users,
    };
    let wanted = plan::wanted(acl, passwords, read.problems);
    let loaded = plan::loaded(&data, acl, passwords).map_err(Error::Acl)?;
    let keeper = SecretKeeper {
        api: &secrets,
        redis,
        name: &secret_name,
        operator: &operator,
        replication: &replication,
    };
    let written = keeper.keep(current, &loaded).await?;
    state.map().entry(uid.clone()).or_default().secret = Some(written.clone());
    let wanted = match wanted {
        Ok(wanted) => wanted,
        Err(failure) => {
            let settled = plan::unapplied(operator.clone(), failure, pods);
            return Ok((report(state, &uid, settled), Vec::new()));
        }
    };

    // Every pod not yet given these users.
    let lines = users::config_lines(&wanted);
    let applied = state.map().get(&uid).cloned().unwrap_or_default();
    let todo = plan::pods(&lines, &applied, pods);
    let logins = [
        Login {
            user: Some(OPERATOR_USER),
            password: Some(&operator),
        },
        Login::password(read.default.as_deref()),
    ];
    let answers = give_all(&todo.give, port, tls, &logins, &wanted, &replication).await;
    let tally = plan::tally(operator.clone(), todo, answers);
    if tally.loads(&lines, &loaded) {
        let written = keeper.keep(Some(written), &lines).await?;
        state.map().entry(uid.clone()).or_default().secret = Some(written);
    }
    {
        let mut map = state.map();
        let entry = map.entry(uid.clone()).or_default();
        entry.users = lines;
        entry.pods = tally.done;
    }
    Ok((report(state, &uid, tally.settled), tally.updated))
}

/// The passwords of `spec.auth` and of every user of `spec.acl`, each from its Secret, and what
/// kept any from being read.
struct ReadPasswords {
    default: Option<String>,
    users: HashMap<String, String>,
    problems: Vec<String>,
}

/// Reads the passwords of `redis`'s `spec.auth` and `spec.acl` users (their slots in the auth
/// step's memory are `uid` and `uid/<user>`).
async fn read_passwords(
    auth: &auth::State,
    client: &Client,
    redis: &Redis,
    uid: &str,
    namespace: &str,
) -> Result<ReadPasswords, Error> {
    let mut read = ReadPasswords {
        default: None,
        users: HashMap::new(),
        problems: Vec::new(),
    };
    if let Some((secret, key)) = redis.spec.auth_secret() {
        match auth::secret_value(auth, client, uid, (namespace, secret, key)).await? {
            Ok(password) => read.default = Some(password),
            Err(why) => read.problems.push(format!("spec.auth: {why}")),
        }
    }
    for user in redis.spec.acl.iter().flat_map(|acl| &acl.users) {
        let slot = format!("{uid}/{}", user.name);
        let (secret, key) = user.secret();
        match auth::secret_value(auth, client, &slot, (namespace, secret, key)).await? {
            Ok(password) => {
                read.users.insert(user.name.clone(), password);
            }
            Err(why) => read.problems.push(format!("user {}: {why}", user.name)),
        }
    }
    Ok(read)
}

/// The operator's Secret `name` as stored: the one remembered while the metadata cache shows
/// its resourceVersion, read otherwise.
async fn operators_secret(
    state: &State,
    auth: &auth::State,
    secrets: &Api<Secret>,
    (uid, namespace, name): (&str, &str, &str),
) -> Result<Option<Secret>, Error> {
    let kept = state.map().get(uid).and_then(|a| a.secret.clone());
    match (kept, auth.cached_version(namespace, name)) {
        (Some(kept), Some(Some(version)))
            if kept.metadata.resource_version.as_deref() == Some(version.as_str()) =>
        {
            Ok(Some(kept))
        }
        _ => secrets.get_opt(name).await.map_err(Error::Kube),
    }
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

/// Records the failure of a pass: [`Settled::report`] only when it is new.
fn report(state: &State, uid: &str, settled: Settled) -> Settled {
    plan::report(state.map().entry(uid.to_owned()).or_default(), settled)
}

/// Gives each of `pods` the users, all at once: how it went, in the order of `pods`.
async fn give_all(
    pods: &[&Arc<CachedPod>],
    port: u16,
    tls: Option<&TlsClient>,
    logins: &[Login<'_>],
    wanted: &[User],
    replication: &str,
) -> Vec<Given> {
    let args: Vec<(&str, &[String])> = wanted
        .iter()
        .map(|u| (u.name.as_str(), u.args.as_slice()))
        .collect();
    future::join_all(
        pods.iter()
            .map(|pod| give_users(pod, port, tls, logins, &args, replication)),
    )
    .await
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
