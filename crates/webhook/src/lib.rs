//! `redis-webhook`: the admission webhook for `Redis` (DESIGN §2, §4).
//!
//! - [`admission`]: decode an AdmissionReview and decide it (pure; the rules are in `api`).
//! - [`server`]: axum over tokio-rustls, the limits per client, graceful shutdown, the
//!   operations port; `loose`: the loose reading of refused reviews on a thread of its own.
//! - [`tls`]: certificate loading and reloading on change.
//! - [`metrics`]: Prometheus metrics.
//! - [`certs`]: the `gen-certs` subcommand.
//! - [`cli`]: flags and environment variables.

pub mod admission;
pub mod certs;
pub mod cli;
mod error;
mod loose;
pub mod metrics;
pub mod server;
pub mod tls;

pub use error::Error;
pub use server::{Config, Limits, Webhook};
