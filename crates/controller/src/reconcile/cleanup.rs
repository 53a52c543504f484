//! Deletion of a Redis (DESIGN §3, the finalizer `myapp.tangx.in/cleanup`): delete its pods, and
//! release the Redis once every one of them is going (has a deletionTimestamp). A pod stuck
//! Terminating (say, on a lost node) must not hold the Redis forever: its owner reference lets
//! the garbage collector finish the job.

use super::context::Context;
use crate::Error;
use crate::k8s;
use crate::pods::{self, Deletion, PodWriter};
use api::Redis;
use kube::api::Api;
use kube::runtime::controller::Action as Requeue;
use kube::{Resource, ResourceExt};

pub async fn cleanup(redis: &Redis, ctx: &Context) -> Result<Requeue, Error> {
    let namespace = k8s::namespace(&redis.metadata)?;
    ctx.forget(redis.metadata.uid.as_deref().unwrap_or_default());
    let reference = redis.object_ref(&());
    let w = PodWriter {
        pods: Api::namespaced(ctx.client.clone(), namespace),
        recorder: &ctx.recorder,
        metrics: &ctx.metrics,
        reference: &reference,
    };
    let mut unsure = 0;
    let mut deleted = Vec::new();
    for pod in pods::owned_pods(&ctx.pods, redis)
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let (name, uid) = (pod.name_any(), pod.metadata.uid.as_deref());
        let why = "the Redis is being deleted";
        match pods::delete_pod(&w, &name, uid, why, false).await {
            Ok(Deletion::Deleted) => deleted.push((why, name)),
            // Gone means going; anything else is looked at again on the next pass.
            Ok(Deletion::Gone) => {}
            Ok(Deletion::Replaced) => unsure += 1,
            Err(refused) => {
                pods::announce_deletes(&w, &deleted).await;
                return Err(refused.into());
            }
        }
    }
    pods::announce_deletes(&w, &deleted).await;
    if unsure == 0 {
        Ok(Requeue::await_change())
    } else {
        Err(Error::PodsRemaining(unsure))
    }
}
