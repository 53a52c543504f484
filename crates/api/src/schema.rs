//! The bottom layer of the crate: what the CRD schema is generated with (DESIGN §1, the API and
//! its schema). The bounds the API server enforces even when the webhook is bypassed, which the
//! admission rules check too (the `validation` module), and the schemars transform that keeps a
//! field's description over its enum type's. It uses nothing else in the crate.

/// The port bounds (the tutorial's markers): the CRD schema's `spec.port` minimum and maximum
/// are generated from these (see `types::RedisSpec`), and the webhook checks the same ones.
pub const SCHEMA_MIN_PORT: i32 = 1234;
pub const SCHEMA_MAX_PORT: i32 = 54321;
/// The schema's hard ceiling on `spec.replicas` (generated from this, as the port bounds are),
/// enforced by the API server even when the webhook is bypassed (down with `failurePolicy:
/// Ignore`, or a write it is not sent). It bounds what the controller can be asked to plan: 100x
/// the webhook's default `--max-replicas`, so no policy a user would choose is capped by it, yet
/// `kubectl scale --replicas=2147483647` cannot make the planner build billions of pod steps.
pub const SCHEMA_MAX_REPLICAS: i32 = 10_000;

/// Drops an enum type's own description from its schema, so that `kubectl explain` shows the
/// field's: kube inlines an `Option<Enum>` field's schema with the type's description over the
/// field's (`mode` read "How the pods of a Redis relate to each other." instead of what each
/// mode does). The type's doc comment stays for rustdoc.
pub(crate) fn field_describes_enum(schema: &mut schemars::Schema) {
    schema.remove("description");
}
