//! The Redis objects as both reconcilers watch them (the Redis one and the backup one):
//! untyped (`DynamicObject`), decoded one by one.
//!
//! A typed watch (`Api<Redis>`) fails the whole list when one stored object does not decode (say
//! `spec.replicas: 3000000000`, stored while the webhook was bypassed and before the schema had
//! a maximum), and then no Redis at all is reconciled. Untyped, every object is read; the one that
//! does not decode is reported on its own by the Redis reconciler
//! (`reconcile::undecodable`) while the others keep reconciling.

use api::{Redis, RedisSpec};
use kube::api::{ApiResource, DynamicObject};

/// The `Redis` kind, for untyped access.
pub fn resource() -> ApiResource {
    ApiResource::erase::<Redis>(&())
}

/// Drops from a watched Redis what the controller never reads, before the cache keeps it: its
/// managedFields, and every annotation but the pause (kubectl apply's copy of the whole object,
/// last-applied-configuration, is the largest part of many objects).
pub fn strip(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
    if let Some(annotations) = obj.metadata.annotations.as_mut() {
        annotations.retain(|k, _| k == api::PAUSED_ANNOTATION);
        if annotations.is_empty() {
            obj.metadata.annotations = None;
        }
    }
}

/// The typed Redis, or what in it does not decode.
pub fn decode(obj: &DynamicObject) -> Result<Redis, String> {
    let value = serde_json::to_value(obj).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// A Redis with only the metadata of `obj`: enough to delete its pods and release it when the
/// rest does not decode (a Redis that cannot be read must still be deletable).
pub fn metadata_only(obj: &DynamicObject) -> Redis {
    Redis {
        metadata: obj.metadata.clone(),
        spec: RedisSpec::default(),
        status: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A stored Redis object with this `spec`, as the untyped watch gets it.
    pub(crate) fn object(spec: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "myapp.tangx.in/v1",
            "kind": "Redis",
            "metadata": {"name": "big", "namespace": "ns", "uid": "u1", "generation": 2},
            "spec": spec,
        }))
        .expect("any JSON object reads as a DynamicObject")
    }

    #[test]
    fn a_good_object_decodes() {
        let redis = decode(&object(json!({"replicas": 3, "port": 6379}))).expect("decodes");
        assert_eq!(redis.spec.replicas, Some(3));
        assert_eq!(redis.metadata.uid.as_deref(), Some("u1"));
    }

    #[test]
    fn replicas_beyond_int32_do_not_decode_but_the_object_is_still_read() {
        // Issue item 2: stored while the webhook was bypassed and the schema had no maximum.
        let big = object(json!({"replicas": 3_000_000_000_u64}));
        let error = decode(&big).expect_err("not an int32");
        assert!(error.contains("3000000000"), "{error}");
        let bare = metadata_only(&big);
        assert_eq!(bare.metadata.name.as_deref(), Some("big"));
        assert_eq!(bare.spec, RedisSpec::default());
    }

    #[test]
    fn a_watch_list_with_one_bad_object_reads_every_object_untyped() {
        // A typed list fails as a whole; the untyped one does not.
        let list = json!({
            "apiVersion": "myapp.tangx.in/v1", "kind": "RedisList", "metadata": {},
            "items": [
                {"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
                 "metadata": {"name": "ok"}, "spec": {"replicas": 1}},
                {"apiVersion": "myapp.tangx.in/v1", "kind": "Redis",
                 "metadata": {"name": "big"}, "spec": {"replicas": 3_000_000_000_u64}},
            ]
        });
        assert!(serde_json::from_value::<kube::core::ObjectList<Redis>>(list.clone()).is_err());
        let untyped: kube::core::ObjectList<DynamicObject> =
            serde_json::from_value(list).expect("untyped");
        let decoded: Vec<bool> = untyped.items.iter().map(|o| decode(o).is_ok()).collect();
        assert_eq!(decoded, vec![true, false]);
    }

    #[test]
    fn the_cache_keeps_the_pause_of_the_annotations_and_no_managed_fields() {
        let mut paused = object(json!({"replicas": 1}));
        paused.metadata.annotations = Some(
            [
                (api::PAUSED_ANNOTATION, "true"),
                ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        );
        paused.metadata.managed_fields = Some(vec![Default::default()]);
        strip(&mut paused);
        assert!(api::is_paused(&paused.metadata));
        assert_eq!(
            paused.metadata.annotations.as_ref().map(|a| a.len()),
            Some(1)
        );
        assert_eq!(paused.metadata.managed_fields, None);
        let mut applied = object(json!({"replicas": 1}));
        applied.metadata.annotations = Some(
            [(
                "kubectl.kubernetes.io/last-applied-configuration".to_owned(),
                "{}".to_owned(),
            )]
            .into(),
        );
        strip(&mut applied);
        assert_eq!(applied.metadata.annotations, None);
        assert_eq!(decode(&applied).map(|r| r.spec.replicas), Ok(Some(1)));
    }
}
