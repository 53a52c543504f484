//! A key of a Secret, as `spec.auth` and `spec.acl.users[]` name one. Its own module, below
//! [`crate::types`] and [`crate::acl`], which both use it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A key of a Secret in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Name of the Secret (a DNS-1123 subdomain: lowercase letters, digits, '-' and '.').
    #[schemars(length(min = 1))]
    pub name: String,

    /// Key in the Secret's data (letters, digits, '-', '_' and '.'). Defaults to "password".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}
