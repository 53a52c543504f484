//! Image references and the `:latest` warning (`image`).

use super::*;
use crate::validation::image::{parse_image, parse_image_uncached};

#[test]
fn remembered_image_answers_are_the_fresh_ones() {
    let long = format!("redis:{}", "a".repeat(600));
    let images: Vec<String> = [
        "redis",
        "redis:latest",
        "redis:7",
        "Redis:7",
        "",
        "r@sha256:ab",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain((0..600).map(|i| format!("registry.local/redis-{i}:7")))
    .chain([long])
    .collect();
    // Twice: the second round answers from memory, after it has been emptied at least once.
    for _ in 0..2 {
        for image in &images {
            assert_eq!(parse_image(image), parse_image_uncached(image), "{image}");
        }
    }
}

#[test]
fn image_references_are_checked_properly() {
    for good in [
        "redis",
        "redis:7.2-alpine",
        "library/redis:7",
        "docker.io/library/redis:7.2",
        "localhost:5000/team/redis:1.0",
        "ghcr.io/acme/redis@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": good})));
        assert!(v.allowed(), "{good}: {}", v.message());
    }
    for bad in [
        "Redis:7",
        "redis:",
        "redis::7",
        "redis 7",
        " redis",
        "redis@sha256:abc",
        "-redis",
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": bad})));
        assert_eq!(fields(&v), vec!["spec.image"], "{bad} should be refused");
        assert!(
            v.message().contains("is not a valid image reference"),
            "{}",
            v.message()
        );
    }
    let v = Policy::default().validate_create(&redis("r", json!({"image": ""})));
    assert_eq!(v.message(), "spec.image: must not be empty");
    // As Go's distribution/reference (what containerd and the kubelet use) reads them.
    for (image, allowed) in [
        ("[::1]:5000/redis:7", true),
        ("registry.example.com:443/a/b/c:v1_2.3-x", true),
        ("redis:é", false),
        (
            "redis@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
            false,
        ),
        ("redis@md5:0123456789abcdef0123456789abcdef", false),
        ("a__b/c---d:1", true),
        ("a___b:1", false),
        (&format!("{}:1", "a".repeat(256)), false),
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": image})));
        assert_eq!(v.allowed(), allowed, "{image}: {}", v.message());
    }
}

#[test]
fn latest_is_no_tag_or_the_latest_tag_without_a_digest() {
    let latest = |image: &str| parse_image_uncached(image).map(|f| f.latest);
    assert_eq!(latest("redis"), Ok(true));
    assert_eq!(latest("redis:latest"), Ok(true));
    assert_eq!(latest("redis:7"), Ok(false));
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_eq!(latest(&format!("redis@{digest}")), Ok(false));
    assert_eq!(latest(&format!("redis:latest@{digest}")), Ok(false));
}

#[test]
fn latest_and_untagged_images_warn_but_pass() {
    for (image, hint) in [
        ("redis:latest", "uses the :latest tag"),
        ("redis", "has no tag"),
    ] {
        let v = Policy::default().validate_create(&redis("r", json!({"image": image})));
        assert!(v.allowed());
        assert_eq!(v.other_warnings().len(), 1, "{:?}", v.other_warnings());
        assert!(
            v.other_warnings()[0].starts_with("spec.image:")
                && v.other_warnings()[0].contains(hint),
            "{:?}",
            v.other_warnings()
        );
    }
    let pinned = "redis@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert!(
        Policy::default()
            .validate_create(&redis("r", json!({"image": pinned})))
            .other_warnings()
            .is_empty()
    );
}
