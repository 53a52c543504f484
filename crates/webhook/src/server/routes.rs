//! The routes: `/mutate` and `/validate` on the admission port, the operations router, and the
//! answer to one review with its metrics and log line.

use crate::admission::{self, Endpoint};
use crate::loose::LooseReader;
use crate::metrics::{Metrics, RequestLabels};
use api::Policy;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use kube::core::admission::Operation;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

pub(super) struct AppState {
    pub(super) policy: Policy,
    pub(super) metrics: Arc<Metrics>,
    /// True while the TLS listener accepts with a loaded certificate; false again while draining.
    pub(super) ready: Arc<AtomicBool>,
    pub(super) max_body_bytes: usize,
    /// The loose reading of the reviews the typed one refused, one at a time.
    pub(super) loose: LooseReader,
}

pub(super) fn admission_router(state: Arc<AppState>) -> Router {
    let limit = state.max_body_bytes;
    Router::new()
        .route("/mutate", post(mutate))
        .route("/validate", post(validate))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

pub(super) fn operations_router(state: &AppState) -> Router {
    let metrics = state.metrics.clone();
    ops::operations_router(
        state.ready.clone(),
        "not ready: the TLS listener is not serving",
        move || metrics.render(),
    )
}

async fn mutate(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    handle(Endpoint::Mutate, &state, body).await
}

async fn validate(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    handle(Endpoint::Validate, &state, body).await
}

/// Reads, decides and answers one review, recording metrics and a log line.
async fn handle(
    endpoint: Endpoint,
    state: &AppState,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let (response, operation, result) = match body {
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            let message = format!(
                "request body exceeds the limit of {} bytes (--max-body-bytes)",
                state.max_body_bytes
            );
            (
                (StatusCode::PAYLOAD_TOO_LARGE, message).into_response(),
                "none",
                "too_large",
            )
        }
        Err(rejection) => (
            (rejection.status(), rejection.body_text()).into_response(),
            "none",
            "bad_request",
        ),
        Ok(bytes) => match respond(endpoint, state, bytes).await {
            None => (
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the webhook's loose reading of reviews stopped",
                )
                    .into_response(),
                "none",
                "unavailable",
            ),
            Some(Ok(admission::Responded { answer, body })) => {
                let operation = operation_label(&answer.operation);
                let result = answer.outcome.as_str();
                let denied = answer.outcome == admission::Outcome::Denied;
                let message = answer.response.result.message.as_str();
                if denied {
                    tracing::info!(endpoint = endpoint.as_str(), operation, subject = %answer.subject(), message, "denied");
                } else {
                    tracing::debug!(endpoint = endpoint.as_str(), operation, subject = %answer.subject(), result, "answered");
                }
                let response = match body {
                    Ok(body) => ([(CONTENT_TYPE, "application/json")], body).into_response(),
                    // Unreachable in practice (plain strings and numbers always serialize).
                    Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
                };
                (response, operation, result)
            }
            Some(Err(bad)) => {
                tracing::warn!(endpoint = endpoint.as_str(), error = %bad, "bad admission request");
                (
                    (StatusCode::BAD_REQUEST, bad.to_string()).into_response(),
                    "none",
                    "bad_request",
                )
            }
        },
    };
    let endpoint_label = endpoint.as_str();
    state.metrics.count_request(RequestLabels {
        endpoint: endpoint_label,
        operation,
        result,
    });
    state
        .metrics
        .observe_duration(endpoint_label, started.elapsed().as_secs_f64());
    response
}

/// The answer by the typed reading, or else by the loose one (`None`: its thread is gone).
async fn respond(
    endpoint: Endpoint,
    state: &AppState,
    body: Bytes,
) -> Option<Result<admission::Responded, admission::BadReview>> {
    if let Some(responded) = admission::respond_typed(endpoint, &state.policy, &body) {
        return Some(Ok(responded));
    }
    state.loose.respond(endpoint, body).await
}

fn operation_label(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}
