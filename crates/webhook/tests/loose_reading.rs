//! Reviews the typed reading refuses are explained by the loose one, which builds the whole
//! object as a tree: a 1 MiB body of small array items costs it about 35 MiB. Sixteen of them at
//! once must not cost sixteen times that (the chart gives the webhook 128 MiB). A test binary of
//! its own: the process's peak memory is measured, and no other test shares it.

mod common;

use clap::Parser;
use serde_json::{Value, json};
use std::time::Duration;

/// Stops a test that would otherwise hang; never a measure of speed.
const GUARD: Duration = Duration::from_secs(120);

/// A review of a Redis whose `spec.replicas` is an array of `items` zeros: the typed reading
/// refuses it, the loose one reads every item.
fn refused_review(items: usize) -> Vec<u8> {
    let spec = json!({ "replicas": vec![0; items] });
    serde_json::to_vec(&common::review(
        "CREATE",
        common::redis("huge", spec),
        Value::Null,
    ))
    .expect("encodes")
}

// As many workers as bodies: a webhook on a larger machine decodes that many at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 16)]
async fn sixteen_bodies_for_the_loose_reading_at_once_cost_the_memory_of_one() {
    const BODIES: usize = 16;
    let cli = webhook::cli::Cli::try_parse_from(["redis-webhook"]).expect("parses");
    let defaults = webhook::Config::from(cli.serve);
    let running = common::start_with(|c| {
        c.max_body_bytes = defaults.max_body_bytes;
        c.limits = defaults.limits;
    })
    .await;
    // Just under the shipped body limit.
    let body = refused_review(defaults.max_body_bytes / 2 - 1024);
    assert!(body.len() < defaults.max_body_bytes);
    // Warm up with one, then take the baseline.
    let (status, _) = common::post(&running, "/validate", body.clone()).await;
    assert!(status.is_success() || status.is_client_error(), "{status}");
    // The client's copies are made before the baseline: only the webhook's memory is measured.
    let bodies = vec![body; BODIES];
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS");
    let before = common::peak_rss();

    let posts = bodies
        .into_iter()
        .map(|body| common::post(&running, "/validate", body));
    let answers = tokio::time::timeout(GUARD, futures::future::join_all(posts))
        .await
        .expect("every body was answered");
    for (status, answer) in &answers {
        // A denial or a 400 that says why; or 408 for a body that waited past the body timeout
        // for its client's budget. Never a crash.
        assert!(
            status.is_success() || [400, 408].contains(&status.as_u16()),
            "{status}: {}",
            String::from_utf8_lossy(answer)
        );
    }
    assert!(
        answers.iter().any(|(status, _)| status.is_success()),
        "at least the first bodies are explained"
    );
    let grown = common::peak_rss().saturating_sub(before);
    eprintln!("peak RSS grew by {} MiB", grown / (1024 * 1024));
    assert!(
        grown < 64 * 1024 * 1024,
        "peak RSS grew by {} MiB for {BODIES} bodies at once",
        grown / (1024 * 1024)
    );
}
