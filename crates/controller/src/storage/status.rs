//! What persistence says in the status (DESIGN §3d): the `StorageResized` condition. Pure.

use crate::k8s::conditions::{condition, not_ready_for};
use crate::step::{Hold, Outcome, Step};
use api::RedisStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The condition saying whether every claim requests `spec.storage.size` (present only with
/// `spec.storage`).
pub const STORAGE_RESIZED: &str = "StorageResized";
/// Its reason when a claim cannot grow because its StorageClass does not allow expansion.
pub const EXPANSION_NOT_ALLOWED: &str = "ExpansionNotAllowed";

/// What the claims came to in one pass, for the status and the Events.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ClaimsReport {
    /// `spec.storage.size` as written.
    pub size: String,
    /// Claims that could not grow, with their StorageClass.
    pub cannot_grow: Vec<(String, Option<String>)>,
    /// Claims created, grown or deleted in this pass (for one Event).
    pub written: Vec<String>,
    /// Ordinals whose claim name another object holds (a claim without this Redis's labels):
    /// their pods are not created, which would mount it (DESIGN §3i.3).
    pub conflicts: Vec<ClaimConflict>,
}

/// A claim name this Redis needs, held by a claim it did not make or retain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimConflict {
    pub ordinal: u32,
    pub claim: String,
    /// Who controls the holder (`k8s::controller_of`).
    pub holder: String,
}

/// The Ready condition's reason while a claim name is held by another claim.
pub const CLAIM_CONFLICT: &str = "ClaimConflict";

impl ClaimConflict {
    /// What the user is told, in the Ready condition and a Warning Event.
    pub fn message(&self) -> String {
        format!(
            "PersistentVolumeClaim {} already exists without this Redis's labels ({}); its pod \
             is not created, so it does not mount another workload's data: delete or rename \
             the claim, or label it as this Redis's to use it",
            self.claim, self.holder
        )
    }
}

/// The status with Ready False for held claim names; unchanged without them.
pub fn with_conflicts(
    status: api::RedisStatus,
    report: Option<&ClaimsReport>,
    stored: Option<&api::RedisStatus>,
    now: Time,
) -> api::RedisStatus {
    let messages = report
        .map(|r| r.conflicts.iter().map(ClaimConflict::message).collect())
        .unwrap_or_default();
    not_ready_for(status, CLAIM_CONFLICT, messages, stored, now)
}

/// The status with the `StorageResized` condition (only with `spec.storage`); the transition time
/// is the stored one while the value stays.
pub fn with_condition(
    mut status: api::RedisStatus,
    report: Option<&ClaimsReport>,
    stored: Option<&api::RedisStatus>,
    now: Time,
) -> api::RedisStatus {
    let Some(report) = report else {
        return status;
    };
    let (value, reason, message) = if report.cannot_grow.is_empty() {
        (
            "True",
            "SizeApplied",
            format!("every claim requests {} or more", report.size),
        )
    } else {
        let claims: Vec<String> = report
            .cannot_grow
            .iter()
            .map(|(claim, class)| match class {
                Some(class) => format!("{claim} (StorageClass {class})"),
                None => format!("{claim} (no StorageClass)"),
            })
            .collect();
        (
            "False",
            EXPANSION_NOT_ALLOWED,
            format!(
                "cannot grow {} to {}: the StorageClass does not allow volume expansion (allowVolumeExpansion); the pods keep their current volumes",
                claims.join(", "),
                report.size
            ),
        )
    };
    let generation = status.observed_generation;
    status.conditions.push(condition(
        stored,
        STORAGE_RESIZED,
        value,
        reason,
        message,
        generation,
        now,
    ));
    status
}

/// The claims step's outcome (`spec.storage`, §3d): no pod of a Redis whose claims could not be
/// looked after in this pass, nor one whose claim name another object holds (it would mount
/// that claim); the `StorageResized` condition. The held names make Ready False too, after the
/// children's conflicts ([`Conflicts`]).
impl Outcome for Option<ClaimsReport> {
    fn hold(&self, step: &Step<'_>) -> Hold {
        match self {
            None if step.redis.spec.storage.is_some() => {
                Hold::All("the claims could not be looked after")
            }
            None => Hold::No,
            Some(report) => Hold::Ordinals(report.conflicts.iter().map(|c| c.ordinal).collect()),
        }
    }

    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        with_condition(status, self.as_ref(), stored, now)
    }
}

/// The claim names other objects hold, in the Ready condition: the claims step's other fold,
/// after the children's.
pub struct Conflicts<'a>(pub &'a Option<ClaimsReport>);

impl Outcome for Conflicts<'_> {
    fn fold(
        &self,
        _step: &Step<'_>,
        status: RedisStatus,
        stored: Option<&RedisStatus>,
        now: Time,
    ) -> RedisStatus {
        with_conflicts(status, self.0.as_ref(), stored, now)
    }
}

/// What the claims step leaves for after the status write: the first claim name another object
/// holds (said in the status; backing off, the claim may be renamed or deleted).
pub fn finish(report: Option<ClaimsReport>) -> Result<(), crate::Error> {
    match report.into_iter().flat_map(|r| r.conflicts).next() {
        Some(conflict) => Err(crate::Error::NameConflict {
            kind: "PersistentVolumeClaim".to_owned(),
            name: conflict.claim,
        }),
        None => Ok(()),
    }
}
