//! What a Redis says about itself and where its clients reach it: its conditions, the
//! replication state its status and pods' role labels agree on, and its Services' addresses;
//! each read now or waited for.

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::{Api, ResourceExt};

use api::Redis;

use crate::pods::{describe_all, of_redis};
use crate::{Error, TestNamespace, seen, wait_for};

/// The status and reason of the Redis's condition `type_`, if it has one.
pub fn redis_condition(redis: &Redis, type_: &str) -> Option<(String, String)> {
    redis
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// The status, reason and message of the condition `type_` of the Redis `name`, read now.
pub async fn read_condition(
    ns: &TestNamespace,
    name: &str,
    type_: &str,
) -> Result<(String, String, String), Error> {
    let redis = ns
        .api::<Redis>()
        .get(name)
        .await
        .map_err(|e| Error::process(format!("reading Redis {name}"), seen(e)))?;
    redis
        .status
        .into_iter()
        .flat_map(|s| s.conditions)
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
        .ok_or_else(|| {
            Error::process(
                format!("reading Redis {name}"),
                format!("no {type_} condition"),
            )
        })
}

/// Waits until the Redis has `replicas` Ready pods, one primary (labelled, in status) other than
/// `not`, every other pod its replica, and the Replicating condition True. Returns the primary.
pub async fn wait_replicating(
    ns: &TestNamespace,
    name: &str,
    replicas: usize,
    timeout: Duration,
    not: Option<&str>,
) -> Result<String, Error> {
    let redis: Api<Redis> = ns.api();
    wait_for(
        &format!("{name}: {replicas} pods replicating a primary other than {not:?}"),
        timeout,
        || async {
            let pods = of_redis(&ns.api(), name).await?;
            let status = redis
                .get(name)
                .await
                .map_err(seen)?
                .status
                .unwrap_or_default();
            let replicating = status
                .conditions
                .iter()
                .any(|c| c.type_ == "Replicating" && c.status == "True");
            let labelled: Vec<String> = pods
                .iter()
                .filter(|p| {
                    p.labels().get(api::pods::ROLE_LABEL).map(String::as_str)
                        == Some(api::pods::ROLE_PRIMARY)
                })
                .map(|p| p.name_any())
                .collect();
            let replicas_ok = status.members.len() == replicas
                && status
                    .members
                    .iter()
                    .filter(|m| m.role == "primary")
                    .count()
                    == 1
                && status
                    .members
                    .iter()
                    .filter(|m| m.role == "replica")
                    .count()
                    == replicas - 1;
            let all_ready = pods.len() == replicas
                && pods
                    .iter()
                    .all(|p| crate::pods::is_ready(p) && p.metadata.deletion_timestamp.is_none());
            match (&status.primary, labelled.as_slice()) {
                (Some(primary), [one])
                    if one == primary
                        && Some(primary.as_str()) != not
                        && replicating
                        && replicas_ok
                        && all_ready =>
                {
                    Ok(primary.clone())
                }
                _ => Err(format!(
                    "primary={:?} labelled={labelled:?} members={:?} conditions={:?}; pods: {}",
                    status.primary,
                    status.members,
                    status
                        .conditions
                        .iter()
                        .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
                        .collect::<Vec<_>>(),
                    describe_all(&pods)
                )),
            }
        },
    )
    .await
}

/// Waits until a pod other than `old` is labelled primary and named primary in the status: the
/// failover happened, whatever state the lost node's pod is in.
pub async fn wait_promoted(
    ns: &TestNamespace,
    name: &str,
    old: &str,
    timeout: Duration,
) -> Result<String, Error> {
    let redis: Api<Redis> = ns.api();
    wait_for(
        &format!("{name}: a primary other than {old}"),
        timeout,
        || async {
            let status = redis
                .get(name)
                .await
                .map_err(seen)?
                .status
                .unwrap_or_default();
            let pods = of_redis(&ns.api(), name).await?;
            let labelled: Vec<String> = pods
                .iter()
                .filter(|p| {
                    p.labels().get(api::pods::ROLE_LABEL).map(String::as_str)
                        == Some(api::pods::ROLE_PRIMARY)
                })
                .map(|p| p.name_any())
                .collect();
            match (&status.primary, labelled.as_slice()) {
                (Some(primary), [one]) if one == primary && primary != old => Ok(primary.clone()),
                _ => Err(format!(
                    "primary={:?} labelled={labelled:?}; pods: {}",
                    status.primary,
                    describe_all(&pods)
                )),
            }
        },
    )
    .await
}

/// The ClusterIP of Service `name`, once it has one.
pub async fn service_ip(
    ns: &TestNamespace,
    name: &str,
    timeout: Duration,
) -> Result<String, Error> {
    let services: Api<Service> = ns.api();
    wait_for(&format!("Service {name}"), timeout, || async {
        let service = services.get(name).await.map_err(seen)?;
        service
            .spec
            .and_then(|s| s.cluster_ip)
            .filter(|ip| ip != "None")
            .ok_or_else(|| "no ClusterIP".to_owned())
    })
    .await
}
