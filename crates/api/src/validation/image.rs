//! Image references (DESIGN §2: `spec.image` and `spec.exporter.image` must be references a
//! container runtime pulls): parsing them with distribution/reference's grammar, a bounded memory
//! of the answers, and the warning about an image that means `:latest`.

use super::violation::{Violation, shown};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// What the rules need from `spec.image`: whether it is a valid reference and, if so, whether
/// it means the `latest` tag; otherwise why not.
pub(super) type ParsedImage = Result<ImageFacts, String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ImageFacts {
    /// Tagged `latest`, or untagged (which means `latest`), and not pinned by digest.
    pub(super) latest: bool,
}

/// Parses an image reference the way container runtimes do (distribution's grammar), with a
/// message naming the image when it is not one.
///
/// The grammar is a large regex, about 1 µs a match, most of a review's decision time, and a
/// cluster uses few distinct images: answers are remembered. Only short strings are (a valid
/// reference is at most a few hundred bytes), and the memory is emptied when full, so it stays
/// bounded whatever clients send.
pub(super) fn parse_image(image: &str) -> ParsedImage {
    const REMEMBERED_IMAGES: usize = 512;
    const REMEMBERED_LENGTH: usize = 512;
    static SEEN: LazyLock<Mutex<HashMap<String, ParsedImage>>> = LazyLock::new(Mutex::default);

    let remember = image.len() <= REMEMBERED_LENGTH;
    if remember
        && let Ok(seen) = SEEN.lock()
        && let Some(parsed) = seen.get(image)
    {
        return parsed.clone();
    }
    let parsed = parse_image_uncached(image);
    if remember && let Ok(mut seen) = SEEN.lock() {
        if seen.len() >= REMEMBERED_IMAGES {
            seen.clear();
        }
        seen.insert(image.to_owned(), parsed.clone());
    }
    parsed
}

pub(super) fn parse_image_uncached(image: &str) -> ParsedImage {
    if image.is_empty() {
        return Err("must not be empty".to_owned());
    }
    let invalid = |reason: &str| {
        format!(
            "\"{}\" is not a valid image reference: {reason}",
            shown(image)
        )
    };
    let captures = image_reference_regex()
        .captures(image)
        .ok_or_else(|| invalid("invalid reference format"))?;
    let name = captures.get(1).map_or("", |m| m.as_str());
    if name.len() > IMAGE_NAME_MAX {
        return Err(invalid(&format!(
            "repository name must not be more than {IMAGE_NAME_MAX} characters"
        )));
    }
    let tag = captures.get(2).map(|m| m.as_str());
    let digest = captures.get(3).map(|m| m.as_str());
    if let Some(digest) = digest {
        // As go-digest: a known algorithm and its length of lowercase hex.
        let (algorithm, hex) = digest
            .split_once(':')
            .ok_or_else(|| invalid("invalid checksum digest format"))?;
        let length = match algorithm {
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            _ => return Err(invalid("unsupported digest algorithm")),
        };
        if hex.len() != length {
            return Err(invalid("invalid checksum digest length"));
        }
        if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(invalid("invalid checksum digest format"));
        }
    }
    Ok(ImageFacts {
        latest: digest.is_none() && tag.is_none_or(|t| t == "latest"),
    })
}

/// distribution/reference's limit on the name (domain and path).
const IMAGE_NAME_MAX: usize = 255;

/// distribution/reference's `ReferenceRegexp` (name, `:tag`, `@digest`), as Go's RE2 reads it:
/// `\w` is ASCII, and a domain may be an IPv6 address in brackets. regex-lite has exactly those
/// ASCII semantics and compiles this in microseconds into a few KiB; the `regex` crate's Unicode
/// `\w` made it a multi-MiB automaton and accepted tags such as "é" that no runtime pulls.
fn image_reference_regex() -> &'static regex_lite::Regex {
    const DOMAIN_COMPONENT: &str = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    const PATH_COMPONENT: &str = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
    static REGEX: LazyLock<Option<regex_lite::Regex>> = LazyLock::new(|| {
        let host = format!(r"(?:{DOMAIN_COMPONENT}(?:\.{DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])");
        let domain = format!(r"{host}(?::[0-9]+)?");
        let name = format!(r"(?:{domain}/)?{PATH_COMPONENT}(?:/{PATH_COMPONENT})*");
        let tag = r"[\w][\w.-]{0,127}";
        let digest = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";
        regex_lite::Regex::new(&format!(r"^({name})(?::({tag}))?(?:@({digest}))?$")).ok()
    });
    // The pattern is a constant: a test builds it, so this never fails in a release.
    REGEX
        .as_ref()
        .unwrap_or_else(|| unreachable!("the image reference pattern compiles"))
}

/// The violation of an image field (`spec.image`, `spec.exporter.image`) that is not a valid
/// reference, if it is not.
pub(super) fn image_violation(field: &str, image: &str, parsed: &ParsedImage) -> Option<Violation> {
    let reason = parsed.as_ref().err()?;
    Some(Violation::new(field, image, reason.clone()))
}

/// `spec.image` allowed but unwise: an image that means `:latest` (tagged so, or untagged, and
/// not pinned by digest).
pub(super) fn image_warnings(image: &str, parsed: &ParsedImage) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Ok(ImageFacts { latest: true }) = parsed {
        let how = if image.ends_with(":latest") {
            "uses the :latest tag"
        } else {
            "has no tag, so it means :latest"
        };
        warnings.push(format!(
            "spec.image: \"{}\" {how}; pods created at different times may run different Redis versions, pin a version",
            shown(image)
        ));
    }
    warnings
}
