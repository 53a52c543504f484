//! `spec.acl` (§3l; `acl`).

use super::*;

fn acl_redis(acl: serde_json::Value) -> Redis {
    redis(
        "r",
        json!({"auth": {"secretRef": {"name": "pw"}}, "acl": acl}),
    )
}

#[test]
fn acl_users_with_rules_redis_takes_are_accepted() {
    let v = Policy::default().validate_create(&acl_redis(json!({
        "defaultUser": "Disabled",
        "users": [
            {"name": "reader", "rules": "~cache:* +@read", "passwordSecretRef": {"name": "reader-pw"}},
            {"name": "app.v2", "rules": "~app:* (%R~shared:* +get) +@all -flushall",
             "passwordSecretRef": {"name": "app-pw", "key": "secret"}},
        ],
    })));
    assert!(v.allowed(), "{}", v.message());
    assert!(v.other_warnings().is_empty(), "{:?}", v.other_warnings());
}

#[test]
fn acl_refuses_reserved_and_repeated_names_bad_rules_and_bad_secrets_at_once() {
    let v = Policy::default().validate_create(&acl_redis(json!({"users": [
        {"name": "redis-operator", "rules": "+get", "passwordSecretRef": {"name": "s"}},
        {"name": "app", "rules": "~* ~cache:*", "passwordSecretRef": {"name": "s"}},
        {"name": "app", "rules": ">hunter2 +get", "passwordSecretRef": {"name": "Bad_Name"}},
    ]})));
    assert_eq!(
        fields(&v),
        [
            "spec.acl.users[0].name",
            "spec.acl.users[1].rules",
            "spec.acl.users[2].name",
            "spec.acl.users[2].rules",
            "spec.acl.users[2].passwordSecretRef.name",
        ]
    );
    let message = v.message();
    for expected in [
        "is reserved",
        "has no effect; Redis refuses it",
        "listed twice",
        "the password comes from passwordSecretRef",
        "must be a valid Secret name",
    ] {
        assert!(message.contains(expected), "{expected}: {message}");
    }
    // The password never appears in what the webhook says.
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn acl_warns_of_unknown_categories_and_of_a_redis_nobody_can_log_in_to() {
    let v = Policy::default().validate_create(&acl_redis(json!({
        "defaultUser": "Disabled",
        "users": [{"name": "s", "rules": "+@search", "passwordSecretRef": {"name": "p"}}],
    })));
    assert!(v.allowed(), "{}", v.message());
    assert!(
        v.other_warnings()
            .iter()
            .any(|w| w.contains("@search not a category of Redis 7")),
        "{:?}",
        v.other_warnings()
    );
    let v = Policy::default().validate_create(&acl_redis(json!({"defaultUser": "Disabled"})));
    assert!(
        v.other_warnings()
            .iter()
            .any(|w| w.contains("no client can log in")),
        "{:?}",
        v.other_warnings()
    );
}

#[test]
fn acl_is_not_removed_while_running_replicas_refuse_the_default_user() {
    let with = |acl: serde_json::Value| {
        let mut spec = json!({"mode": "Replication", "replicas": 3,
            "auth": {"secretRef": {"name": "pw"}}});
        if !acl.is_null() {
            spec["acl"] = acl;
        }
        redis("r", spec)
    };
    let locked = with(json!({"defaultUser": "Disabled"}));
    let open = with(json!({}));
    let none = with(serde_json::Value::Null);
    let removed = Policy::default().validate_update(&none, &locked);
    assert_eq!(fields(&removed), ["spec.acl"]);
    assert!(
        removed
            .message()
            .contains("set defaultUser to Enabled first"),
        "{}",
        removed.message()
    );
    assert!(Policy::default().validate_update(&none, &open).allowed());
    assert!(Policy::default().validate_update(&open, &locked).allowed());
    assert!(Policy::default().validate_update(&locked, &none).allowed());
}
