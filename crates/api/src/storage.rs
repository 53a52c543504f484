//! Persistence (`spec.storage`): the types, their defaults, and the pure rules about claims that
//! the webhook and the controller share (DESIGN §3d). The admission webhook reports the claim rules
//! at their `spec.storage.*` paths through `validation`'s `storage` module.
//!
//! Each pod `<name>-<ordinal>` mounts the claim `data-<name>-<ordinal>` at /data, made from
//! [`StorageSpec`] the first time the ordinal is needed. What happens to the claims when the Redis
//! is deleted or scaled down follows the StatefulSet's `persistentVolumeClaimRetentionPolicy`.

use crate::shown::{shown, shown_list};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The volume each pod keeps its data in.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// Size of each pod's volume, a quantity such as "1Gi" or "500Mi". Raising it grows the existing claims when their StorageClass allows volume expansion (the `StorageResized` condition says when it does not); lowering it is refused.
    pub size: Quantity,

    /// StorageClass of the claims. The cluster's default class when not set. Cannot be changed once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,

    /// Access modes of the claims: ReadWriteOnce (the default) or ReadWriteOncePod. Cannot be changed once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_modes: Option<Vec<String>>,

    /// Run redis-server with `appendonly yes`: every write is logged to the volume, so a restart loses at most a second of writes instead of everything since the last snapshot. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_only: Option<bool>,

    /// What happens to the claims when the Redis is deleted or scaled down. Both default to Retain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<RetentionSpec>,
}

/// The fate of claims no pod needs any more (the StatefulSet `persistentVolumeClaimRetentionPolicy`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetentionSpec {
    /// When the Redis is deleted: Retain keeps the claims (a Redis created again with the same name finds its data), Delete deletes them with the Redis. Defaults to Retain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_deleted: Option<RetentionPolicy>,

    /// When replicas is lowered: Retain keeps the claims of the removed ordinals (scaling up again finds their data), Delete deletes them once their pods are gone. Defaults to Retain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_scaled: Option<RetentionPolicy>,
}

/// Keep or delete a claim.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schema::field_describes_enum)]
pub enum RetentionPolicy {
    /// Keep the claim and its volume.
    #[default]
    Retain,
    /// Delete the claim (and, through its StorageClass's reclaim policy, usually the volume).
    Delete,
}

impl RetentionPolicy {
    /// The value as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            RetentionPolicy::Retain => "Retain",
            RetentionPolicy::Delete => "Delete",
        }
    }
}

/// The access mode of a claim when the spec names none.
pub const DEFAULT_ACCESS_MODE: &str = "ReadWriteOnce";

/// The access modes a Redis pod can use: one node (or one pod) writing.
pub const ALLOWED_ACCESS_MODES: [&str; 2] = ["ReadWriteOnce", "ReadWriteOncePod"];

/// The volume name in the pod and the prefix of every claim's name.
pub const DATA_VOLUME: &str = "data";

impl StorageSpec {
    /// The effective access modes.
    pub fn access_modes(&self) -> Vec<String> {
        match &self.access_modes {
            Some(modes) if !modes.is_empty() => modes.clone(),
            _ => vec![DEFAULT_ACCESS_MODE.to_owned()],
        }
    }

    /// Whether redis-server runs with `appendonly yes`.
    pub fn append_only(&self) -> bool {
        self.append_only.unwrap_or(false)
    }

    /// The effective policy when the Redis is deleted.
    pub fn when_deleted(&self) -> RetentionPolicy {
        self.retention
            .as_ref()
            .and_then(|r| r.when_deleted)
            .unwrap_or_default()
    }

    /// The effective policy when replicas is lowered.
    pub fn when_scaled(&self) -> RetentionPolicy {
        self.retention
            .as_ref()
            .and_then(|r| r.when_scaled)
            .unwrap_or_default()
    }
}

/// The annotation on a claim naming the uid of the Redis that created it: a claim retained from an
/// earlier Redis of the same name is used by the new one, but deleted on scale-down
/// (`whenScaled: Delete`) only by the Redis that made it.
pub const ANNOTATION_CREATED_BY: &str = "myapp.tangx.in/created-by";

/// The claim of the pod with this ordinal: `data-<redis>-<ordinal>`, the StatefulSet's naming, so
/// claims made by hand (or by a StatefulSet being migrated) are found; they are used only when
/// they carry the Redis's labels (`pods::selector_labels`), as claims it made or retained do.
pub fn claim_name(redis_name: &str, ordinal: u32) -> String {
    format!("{DATA_VOLUME}-{redis_name}-{ordinal}")
}

/// The ordinal of a claim of this Redis, from its name; `None` for any other name.
pub fn claim_ordinal(redis_name: &str, claim: &str) -> Option<u32> {
    let digits = claim
        .strip_prefix(DATA_VOLUME)?
        .strip_prefix('-')?
        .strip_prefix(redis_name)?
        .strip_prefix('-')?;
    // "07" or "+7" would parse, but no pod has that name.
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The number of bytes a quantity stands for, rounded up to a whole byte; `None` when it is not a
/// valid Kubernetes quantity (`<number><suffix>`: binary Ki..Ei, decimal m, k..E, or an exponent
/// e<n>), is negative, or is too large to be a size.
pub fn quantity_bytes(quantity: &str) -> Option<u128> {
    let s = quantity.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let number = number.strip_prefix('+').unwrap_or(number);
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if (whole.is_empty() && fraction.is_empty())
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || whole.len() + fraction.len() > 30
    {
        return None;
    }
    // The value is mantissa / 10^fraction.len() * multiplier / divisor.
    let mantissa: u128 = format!("{whole}{fraction}").parse().ok()?;
    let mut divisor = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let multiplier: u128 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        "m" => {
            divisor = divisor.checked_mul(1000)?;
            1
        }
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        exponent => {
            let power = exponent
                .strip_prefix('e')
                .or_else(|| exponent.strip_prefix('E'))?;
            let power: u32 = power.parse().ok().filter(|p| *p <= 30)?;
            10u128.checked_pow(power)?
        }
    };
    let scaled = mantissa.checked_mul(multiplier)?;
    Some(scaled.div_ceil(divisor))
}

/// Why a storage spec cannot be used: (field path under `spec.storage`, message).
pub fn storage_violations(storage: &StorageSpec) -> Vec<(String, String)> {
    let mut found = Vec::new();
    match quantity_bytes(&storage.size.0) {
        Some(0) => found.push(("size".into(), "must be more than 0".into())),
        Some(_) => {}
        None => found.push((
            "size".into(),
            format!(
                "\"{}\" is not a quantity (a number with an optional suffix such as Mi or Gi, e.g. \"1Gi\")",
                shown(&storage.size.0)
            ),
        )),
    }
    if let Some(modes) = &storage.access_modes {
        for (i, mode) in modes.iter().enumerate() {
            if !ALLOWED_ACCESS_MODES.contains(&mode.as_str()) {
                found.push((
                    format!("accessModes[{i}]"),
                    format!(
                        "\"{}\" is not usable by a Redis pod (one of {})",
                        shown(mode),
                        ALLOWED_ACCESS_MODES.join(", ")
                    ),
                ));
            }
        }
    }
    found
}

/// A storage class as messages have always written it (`Some("fast")`, `None`), cut and escaped.
fn shown_class(class: Option<&str>) -> String {
    class.map_or_else(|| "None".to_owned(), |c| format!("Some(\"{}\")", shown(c)))
}

/// Why an UPDATE from `old` to `new` cannot be stored: claims exist already, and a claim can grow
/// but not shrink, nor change class or access modes. (field path under `spec.storage`, message).
pub fn storage_update_violations(old: &StorageSpec, new: &StorageSpec) -> Vec<(String, String)> {
    let mut found = Vec::new();
    if let (Some(before), Some(after)) = (quantity_bytes(&old.size.0), quantity_bytes(&new.size.0))
        && after < before
    {
        found.push((
            "size".into(),
            format!(
                "cannot shrink from {} to {}: a volume cannot be made smaller (create a new Redis and copy the data)",
                shown(&old.size.0),
                shown(&new.size.0)
            ),
        ));
    }
    if old.storage_class_name != new.storage_class_name {
        found.push((
            "storageClassName".into(),
            format!(
                "cannot change from {} to {}: the claims exist in the old class",
                shown_class(old.storage_class_name.as_deref()),
                shown_class(new.storage_class_name.as_deref())
            ),
        ));
    }
    if old.access_modes() != new.access_modes() {
        found.push((
            "accessModes".into(),
            format!(
                "cannot change from {} to {}: the claims exist with the old modes",
                shown_list(&old.access_modes()),
                shown_list(&new.access_modes())
            ),
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(size: &str) -> StorageSpec {
        StorageSpec {
            size: Quantity(size.into()),
            ..StorageSpec::default()
        }
    }

    #[test]
    fn quantities_are_read_as_kubernetes_reads_them() {
        for (text, bytes) in [
            ("1Gi", 1 << 30),
            ("500Mi", 500 << 20),
            ("1.5Gi", 3 << 29),
            ("1G", 1_000_000_000),
            ("2k", 2_000),
            ("100", 100),
            ("1e3", 1_000),
            ("1E3", 1_000),
            ("+64Mi", 64 << 20),
            ("1500m", 2), // rounded up to a whole byte
            (".5Ki", 512),
            ("0", 0),
        ] {
            assert_eq!(quantity_bytes(text), Some(bytes), "{text}");
        }
        for text in [
            "", "Gi", "1GB", "-1Gi", "1..5Gi", "1 Gi", "abc", "1e", "1e99", "1.2.3",
        ] {
            assert_eq!(quantity_bytes(text), None, "{text}");
        }
    }

    #[test]
    fn claims_are_named_like_a_statefulsets_and_read_back() {
        assert_eq!(claim_name("cache", 2), "data-cache-2");
        assert_eq!(claim_ordinal("cache", "data-cache-2"), Some(2));
        assert_eq!(claim_ordinal("cache", "data-cache-10"), Some(10));
        for other in [
            "data-cache-",
            "data-cache-02",
            "data-cache-x",
            "data-cach-1",
            "data-cache-1-1",
            "cache-1",
        ] {
            assert_eq!(claim_ordinal("cache", other), None, "{other}");
        }
        // A Redis whose name extends another's does not claim its claims.
        assert_eq!(claim_ordinal("cache", "data-cache-a-1"), None);
    }

    #[test]
    fn defaults_are_read_write_once_no_aof_and_retain() {
        let s = spec("1Gi");
        assert_eq!(s.access_modes(), vec!["ReadWriteOnce".to_owned()]);
        assert!(!s.append_only());
        assert_eq!(s.when_deleted(), RetentionPolicy::Retain);
        assert_eq!(s.when_scaled(), RetentionPolicy::Retain);
    }

    #[test]
    fn bad_sizes_and_modes_are_named_by_field() {
        assert!(storage_violations(&spec("1Gi")).is_empty());
        let zero = storage_violations(&spec("0"));
        assert_eq!(zero[0].0, "size");
        let words = storage_violations(&spec("lots"));
        assert!(words[0].1.contains("not a quantity"), "{words:?}");
        let many = StorageSpec {
            access_modes: Some(vec!["ReadWriteOnce".into(), "ReadOnlyMany".into()]),
            ..spec("1Gi")
        };
        let found = storage_violations(&many);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "accessModes[1]");
    }

    #[test]
    fn claims_grow_but_never_shrink_or_move() {
        assert!(storage_update_violations(&spec("1Gi"), &spec("2Gi")).is_empty());
        assert!(storage_update_violations(&spec("1Gi"), &spec("1024Mi")).is_empty());
        let shrink = storage_update_violations(&spec("2Gi"), &spec("1Gi"));
        assert_eq!(shrink[0].0, "size");
        assert!(shrink[0].1.contains("cannot shrink from 2Gi to 1Gi"));
        let moved = StorageSpec {
            storage_class_name: Some("fast".into()),
            ..spec("1Gi")
        };
        assert_eq!(
            storage_update_violations(&spec("1Gi"), &moved)[0].0,
            "storageClassName"
        );
        // The default written out is no change.
        let explicit = StorageSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            ..spec("1Gi")
        };
        assert!(storage_update_violations(&spec("1Gi"), &explicit).is_empty());
    }
}
