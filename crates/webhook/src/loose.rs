//! The loose reading of the reviews the typed one refused, on one thread of its own (DESIGN §9
//! tenancy). It explains what is wrong with a body by building the whole object as a tree,
//! which for an array of small items costs 35 times the body; sixteen 1 MiB bodies at once grew
//! the webhook by 516 MiB. One at a time, and always on the same thread, so the allocator reuses
//! one arena's memory instead of growing one per worker thread.

use crate::Error;
use crate::admission::{self, BadReview, Endpoint, Responded};
use api::Policy;
use axum::body::Bytes;
use tokio::sync::{mpsc, oneshot};

struct Job {
    endpoint: Endpoint,
    body: Bytes,
    answer: oneshot::Sender<Result<Responded, BadReview>>,
}

/// The thread reading bodies loosely, one at a time; it stops when this is dropped.
pub struct LooseReader {
    jobs: mpsc::Sender<Job>,
}

impl LooseReader {
    pub fn start(policy: Policy) -> Result<Self, Error> {
        // One waiting job: the others wait for their turn in `respond`, holding only their body.
        let (jobs, mut queue) = mpsc::channel::<Job>(1);
        std::thread::Builder::new()
            .name("loose-reading".to_owned())
            .spawn(move || {
                while let Some(job) = queue.blocking_recv() {
                    let _ = job
                        .answer
                        .send(admission::respond(job.endpoint, &policy, &job.body));
                }
            })
            .map_err(Error::Thread)?;
        Ok(LooseReader { jobs })
    }

    /// The answer of the loose reading; `None` if its thread is gone.
    pub async fn respond(
        &self,
        endpoint: Endpoint,
        body: Bytes,
    ) -> Option<Result<Responded, BadReview>> {
        let (answer, answered) = oneshot::channel();
        self.jobs
            .send(Job {
                endpoint,
                body,
                answer,
            })
            .await
            .ok()?;
        answered.await.ok()
    }
}
