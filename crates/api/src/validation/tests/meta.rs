//! The name rules and deletion protection (`meta`).

use super::*;
use crate::DELETION_PROTECTION_ANNOTATION;
use std::collections::BTreeMap;

#[test]
fn reserved_name_is_refused_and_others_are_not() {
    let v = Policy::default().validate_create(&redis("tangx-in", json!({})));
    assert_eq!(
        v.message(),
        "metadata.name: \"tangx-in\" is a reserved name"
    );
    let policy = Policy {
        reserved_names: vec!["a".into(), "b".into()],
        ..Policy::default()
    };
    assert!(!policy.validate_create(&redis("b", json!({}))).allowed());
    assert!(
        policy
            .validate_create(&redis("tangx-in", json!({})))
            .allowed(),
        "list is configurable"
    );
    assert!(
        Policy::default()
            .validate_create(&redis("tangx-in-2", json!({})))
            .allowed()
    );
}

#[test]
fn long_names_are_refused() {
    let ok = "a".repeat(63);
    let long = "a".repeat(64);
    assert!(
        Policy::default()
            .validate_create(&redis(&ok, json!({})))
            .allowed()
    );
    let v = Policy::default().validate_create(&redis(&long, json!({})));
    assert_eq!(fields(&v), vec!["metadata.name"]);
    assert!(
        v.message().contains("no more than 63 characters"),
        "{}",
        v.message()
    );
}

#[test]
fn generate_name_must_leave_room_for_the_suffix() {
    let mut r = redis("", json!({}));
    r.metadata.name = None;
    r.metadata.generate_name = Some("a".repeat(58));
    assert!(Policy::default().validate_create(&r).allowed());
    r.metadata.generate_name = Some("a".repeat(59));
    assert_eq!(
        fields(&Policy::default().validate_create(&r)),
        vec!["metadata.generateName"]
    );
}

#[test]
fn delete_is_refused_only_while_protected() {
    let mut r = valid();
    assert!(Policy::default().validate_delete(&r).allowed());
    r.metadata.annotations = Some(BTreeMap::from([(
        DELETION_PROTECTION_ANNOTATION.to_owned(),
        "true".to_owned(),
    )]));
    let v = Policy::default().validate_delete(&r);
    assert_eq!(
        fields(&v),
        vec!["metadata.annotations[myapp.tangx.in/deletion-protection]"]
    );
    assert!(
        v.message()
            .contains("kubectl annotate redis/my-op-redis myapp.tangx.in/deletion-protection-")
    );
    r.metadata.annotations = Some(BTreeMap::from([(
        DELETION_PROTECTION_ANNOTATION.to_owned(),
        "false".to_owned(),
    )]));
    assert!(Policy::default().validate_delete(&r).allowed());
}

#[test]
fn delete_ignores_field_rules() {
    // An object stored with a now-invalid spec can still be deleted.
    let r = redis("tangx-in", json!({"port": 1000}));
    assert!(Policy::default().validate_delete(&r).allowed());
}
