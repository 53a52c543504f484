//! Who may reach a Redis's pods (DESIGN §3j, `spec.networkPolicy`): one NetworkPolicy `<name>`
//! per Redis that sets it, selecting its pods, admitting on `spec.port` only its own pods
//! (replication), the operator's controller and `allowedClients`, and on the exporter's port only
//! `metricsFrom`. Ingress only: what the pods reach is left alone.
//!
//! - [`build`]: the policy and whether a stored one differs (pure).
//! - The write is the children's (`children::apply`): written only when it differs, deleted
//!   when the spec drops it, never over a foreign object of the same name (`NameConflict`).

pub mod build;

pub use build::{OperatorPods, network_policy, network_policy_differs};
