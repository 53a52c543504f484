//! The Secret name and key of `spec.auth` (§3c; `auth`).

use super::*;

#[test]
fn secret_names_must_be_dns_subdomains() {
    let name_ok = |name: &str| {
        Policy::default()
            .validate_create(&replicated(json!({"auth": {"secretRef": {"name": name}}})))
    };
    for good in ["a", "my-redis-auth", "auth.v2", "0", &"a".repeat(253)] {
        let v = name_ok(good);
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for bad in ["My-Auth", "-a", "a-", "a..b", ".a", "a.", "a_b", "a b", ""] {
        let v = name_ok(bad);
        assert_eq!(fields(&v), vec!["spec.auth.secretRef.name"], "{bad}");
    }
    assert_eq!(
        name_ok("My-Auth").message(),
        "spec.auth.secretRef.name: must be a valid Secret name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"My-Auth\""
    );
    assert_eq!(
        name_ok(&"a".repeat(254)).message(),
        "spec.auth.secretRef.name: must be no more than 253 characters, got 254"
    );
}

#[test]
fn secret_keys_must_be_valid_data_keys() {
    let key_ok = |key: &str| {
        Policy::default().validate_create(&replicated(
            json!({"auth": {"secretRef": {"name": "s", "key": key}}}),
        ))
    };
    for good in [
        "password",
        "redis.pw",
        "A_b-1",
        "x",
        ".pw",
        &"k".repeat(253),
    ] {
        let v = key_ok(good);
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for bad in [
        "",
        "a/b",
        "pass word",
        "ü",
        ".",
        "..",
        "..pw",
        &"k".repeat(254),
    ] {
        let v = key_ok(bad);
        assert_eq!(fields(&v), vec!["spec.auth.secretRef.key"], "{bad}");
    }
    assert_eq!(
        key_ok("a/b").message(),
        "spec.auth.secretRef.key: must be a valid Secret key (letters, digits, '-', '_' and '.'), got \"a/b\""
    );
    // The default key is valid, and auth rules apply in Standalone mode too.
    let v = Policy::default()
        .validate_create(&redis("r", json!({"auth": {"secretRef": {"name": "Bad"}}})));
    assert_eq!(fields(&v), vec!["spec.auth.secretRef.name"]);
}
