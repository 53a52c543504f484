//! Skimming: the parts of a review that no decision reads (userInfo, options, managedFields,
//! labels, most annotations...) are checked to be what kube's and k8s-openapi's types would
//! accept, and dropped without being built. Building them (a `String` per string, a tree per
//! managedFields entry) was most of the cost of a realistic UPDATE.
//!
//! Each checker accepts no more than the type it stands for, so that the typed pass never
//! answers a body the loose reading would refuse (`read`'s property test holds them to it):
//! same keys, same value types, the same numbers (parsed, so out-of-range ones still fail),
//! last value wins for a repeated key, unknown keys ignored. A checker may refuse more: the
//! loose reading then answers, as for any body the typed pass cannot read.

use api::DELETION_PROTECTION_ANNOTATION;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;
use std::marker::PhantomData;

/// A JSON string (what `String` reads), checked and dropped: serde_json hands a string over
/// borrowed, or unescaped in its reused scratch buffer, so nothing is allocated.
#[derive(Default)]
pub(super) struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: Error>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        d.deserialize_string(V)
    }
}

/// A JSON string, checked by scanning its text in place: no copy, nothing unescaped. For long
/// strings with escapes, such as kubectl's last-applied-configuration annotation.
pub(super) struct ScannedStr;

impl<'de> Deserialize<'de> for ScannedStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // serde_json checks a raw value's syntax (escapes, control characters) as it skips it,
        // but not what a `\u` escape stands for, which `String` refuses when it is half of a
        // surrogate pair: a string with any `\u` is read as `String` reads it.
        let text = <&RawValue>::deserialize(d)?.get();
        if text.starts_with('"') && !text.contains("\\u") {
            return Ok(ScannedStr);
        }
        serde_json::from_str::<Str>(text)
            .map(|Str| ScannedStr)
            .map_err(D::Error::custom)
    }
}

/// A JSON array of `T` (what `Vec<T>` reads), checked and dropped.
pub(super) struct SeqOf<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for SeqOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = SeqOf<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SeqOf<T>, A::Error> {
                while seq.next_element::<T>()?.is_some() {}
                Ok(SeqOf(PhantomData))
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

/// A JSON object of string keys and `V` values (what `BTreeMap<String, V>` reads), dropped.
pub(super) struct MapOf<V>(PhantomData<V>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = MapOf<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MapOf<T>, A::Error> {
                while map.next_entry::<Str, T>()?.is_some() {}
                Ok(MapOf(PhantomData))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// Any JSON value (what `serde_json::Value` reads), dropped. Unlike `IgnoredAny`, numbers are
/// parsed, so one out of `f64`'s range fails here as it fails there.
pub(super) struct Json;

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any valid JSON value")
            }
            fn visit_bool<E: Error>(self, _: bool) -> Result<Json, E> {
                Ok(Json)
            }
            fn visit_i64<E: Error>(self, _: i64) -> Result<Json, E> {
                Ok(Json)
            }
            fn visit_u64<E: Error>(self, _: u64) -> Result<Json, E> {
                Ok(Json)
            }
            fn visit_f64<E: Error>(self, _: f64) -> Result<Json, E> {
                Ok(Json)
            }
            fn visit_str<E: Error>(self, _: &str) -> Result<Json, E> {
                Ok(Json)
            }
            fn visit_none<E: Error>(self) -> Result<Json, E> {
                Ok(Json)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
                Json::deserialize(d)
            }
            fn visit_unit<E: Error>(self) -> Result<Json, E> {
                Ok(Json)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                while seq.next_element::<Json>()?.is_some() {}
                Ok(Json)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                while map.next_entry::<Str, Json>()?.is_some() {}
                Ok(Json)
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of a k8s-openapi struct: the index of a known one, `None` for another (ignored).
struct Key(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Key {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|k| *k == v))
    }
}

/// The fields of a k8s-openapi struct, read by [`K8s`].
pub(super) trait Fields<'de>: Default {
    /// The JSON names of the known fields.
    const KEYS: &'static [&'static str];
    /// Reads the value of the known field `KEYS[index]`.
    fn field<A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error>;
}

/// A k8s-openapi struct read as its generated `Deserialize` reads it: an object whose known
/// keys are read by `T` (a repeated key's last value winning) and whose other keys are ignored.
#[derive(Default)]
pub(super) struct K8s<T>(pub(super) T);

impl<'de, T: Fields<'de>> Deserialize<'de> for K8s<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Fields<'de>> Visitor<'de> for V<T> {
            type Value = K8s<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<K8s<T>, A::Error> {
                let mut fields = T::default();
                while let Some(key) = map.next_key_seed(Key(T::KEYS))? {
                    match key {
                        Some(index) => fields.field(index, &mut map)?,
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(K8s(fields))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// `userInfo` (k8s-openapi's `UserInfo`), checked: no decision depends on who asks.
#[derive(Default)]
pub(super) struct UserInfo;

impl<'de> Fields<'de> for UserInfo {
    const KEYS: &'static [&'static str] = &["extra", "groups", "uid", "username"];
    fn field<A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error> {
        match index {
            0 => map.next_value::<Option<MapOf<SeqOf<Str>>>>().map(drop),
            1 => map.next_value::<Option<SeqOf<Str>>>().map(drop),
            _ => map.next_value::<Option<Str>>().map(drop),
        }
    }
}

/// A `metadata.managedFields` entry (k8s-openapi's `ManagedFieldsEntry`), checked.
#[derive(Default)]
struct ManagedFieldsEntry;

impl<'de> Fields<'de> for ManagedFieldsEntry {
    const KEYS: &'static [&'static str] = &[
        "apiVersion",
        "fieldsType",
        "fieldsV1",
        "manager",
        "operation",
        "subresource",
        "time",
    ];
    fn field<A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error> {
        match index {
            // FieldsV1 is a `serde_json::Value`.
            2 => map.next_value::<Option<Json>>().map(drop),
            6 => map.next_value::<Option<Time>>().map(drop),
            _ => map.next_value::<Option<Str>>().map(drop),
        }
    }
}

/// The metadata the admission rules read (k8s-openapi's `ObjectMeta`, every other field
/// checked and dropped): the name, the name prefix, and the deletion-protection annotation.
/// A rule that reads more of the metadata must keep it here.
#[derive(Debug, Default)]
pub(super) struct Meta {
    pub(super) name: Option<String>,
    pub(super) generate_name: Option<String>,
    /// The value of the [`DELETION_PROTECTION_ANNOTATION`], when annotated.
    pub(super) deletion_protection: Option<String>,
}

impl<'de> Fields<'de> for Meta {
    const KEYS: &'static [&'static str] = &[
        "annotations",
        "creationTimestamp",
        "deletionGracePeriodSeconds",
        "deletionTimestamp",
        "finalizers",
        "generateName",
        "generation",
        "labels",
        "managedFields",
        "name",
        "namespace",
        "ownerReferences",
        "resourceVersion",
        "selfLink",
        "uid",
    ];
    fn field<A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error> {
        match index {
            0 => {
                self.deletion_protection =
                    map.next_value::<Option<Annotations>>()?.and_then(|a| a.0);
                Ok(())
            }
            1 | 3 => map.next_value::<Option<Time>>().map(drop),
            2 | 6 => map.next_value::<Option<i64>>().map(drop),
            4 => map.next_value::<Option<SeqOf<Str>>>().map(drop),
            5 => {
                self.generate_name = map.next_value()?;
                Ok(())
            }
            7 => map.next_value::<Option<MapOf<Str>>>().map(drop),
            8 => map
                .next_value::<Option<SeqOf<K8s<ManagedFieldsEntry>>>>()
                .map(drop),
            9 => {
                self.name = map.next_value()?;
                Ok(())
            }
            // Rare on a Redis, and with required fields: read by the real type.
            11 => map.next_value::<Option<Vec<OwnerReference>>>().map(drop),
            _ => map.next_value::<Option<Str>>().map(drop),
        }
    }
}

/// `metadata.annotations` (a string to string map), keeping only the deletion protection.
struct Annotations(Option<String>);

impl<'de> Deserialize<'de> for Annotations {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Annotations;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Annotations, A::Error> {
                let mut protection = None;
                while let Some(key) = map.next_key_seed(Key(&[DELETION_PROTECTION_ANNOTATION]))? {
                    match key {
                        // A map's repeated key keeps its last value.
                        Some(_) => protection = Some(map.next_value::<String>()?),
                        None => map.next_value::<ScannedStr>().map(drop)?,
                    }
                }
                Ok(Annotations(protection))
            }
        }
        d.deserialize_map(V)
    }
}

/// `requestKind` (kube's `GroupVersionKind`), checked.
#[derive(Deserialize)]
#[allow(dead_code)] // Read only to be checked.
pub(super) struct Gvk {
    group: Str,
    version: Str,
    kind: Str,
}

/// `requestResource` (kube's `GroupVersionResource`), checked.
#[derive(Deserialize)]
#[allow(dead_code)] // Read only to be checked.
pub(super) struct Gvr {
    group: Str,
    version: Str,
    resource: Str,
    #[serde(default)]
    api_version: Str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scanned_string_is_what_a_string_reads() {
        for text in [
            r#""x""#,
            r#""\"\n""#,
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
            r#""\\u""#,
            "1",
            "[]",
            "{}",
            "null",
        ] {
            let string = serde_json::from_str::<Str>(text).is_ok();
            let scanned = serde_json::from_str::<ScannedStr>(text).is_ok();
            assert_eq!(string, scanned, "{text}");
        }
    }
}
