//! The rules on `spec.networkPolicy` (DESIGN §2, for §3j the NetworkPolicy): peers the API
//! server accepts in a NetworkPolicy's `from` (the controller copies them there; a peer it
//! refuses would leave the Redis without its policy), at most [`MAX_PEERS`] of each. The
//! warnings: a Redis anyone in the cluster can read and write (no auth, no policy; in Replication
//! mode the `replication` module's auth warning says it), a policy no client gets through, and
//! metrics settings that do nothing.

use super::placement::selector_violations;
use super::violation::{Violation, shown};
use crate::network_policy::MAX_PEERS;
use crate::types::{Mode, RedisSpec};
use k8s_openapi::api::networking::v1::{IPBlock, NetworkPolicyPeer};
use std::net::IpAddr;

/// `spec.networkPolicy` (checked when set, even turned off, so turning it on cannot fail later).
pub(super) fn network_policy_violations(spec: &RedisSpec) -> Vec<Violation> {
    let Some(policy) = &spec.network_policy else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (list, peers) in [
        ("allowedClients", policy.allowed_clients()),
        ("metricsFrom", policy.metrics_from()),
    ] {
        let field = format!("spec.networkPolicy.{list}");
        if peers.len() > MAX_PEERS {
            out.push(Violation::new(
                &field,
                peers.len(),
                format!("must hold at most {MAX_PEERS} peers, got {}", peers.len()),
            ));
            continue;
        }
        for (i, peer) in peers.iter().enumerate() {
            peer_violations(&format!("{field}[{i}]"), peer, &mut out);
        }
    }
    out
}

/// A peer as the API server validates one: at least one of the three, ipBlock alone.
fn peer_violations(field: &str, peer: &NetworkPolicyPeer, out: &mut Vec<Violation>) {
    let selectors = peer.pod_selector.is_some() || peer.namespace_selector.is_some();
    match (&peer.ip_block, selectors) {
        (None, false) => out.push(Violation::new(
            field,
            "{}",
            "must set podSelector, namespaceSelector (or both) or ipBlock: an empty peer is \
             refused by the API server",
        )),
        (Some(_), true) => out.push(Violation::new(
            field,
            "ipBlock with a selector",
            "must set either ipBlock or selectors (podSelector, namespaceSelector), not both",
        )),
        _ => {}
    }
    if let Some(selector) = &peer.pod_selector {
        selector_violations(&format!("{field}.podSelector"), selector, out);
    }
    if let Some(selector) = &peer.namespace_selector {
        selector_violations(&format!("{field}.namespaceSelector"), selector, out);
    }
    if let Some(block) = &peer.ip_block {
        ip_block_violations(&format!("{field}.ipBlock"), block, out);
    }
}

/// A CIDR, and exceptions each a strict subset of it (the API server's rule).
fn ip_block_violations(field: &str, block: &IPBlock, out: &mut Vec<Violation>) {
    let cidr = match parse_cidr(&block.cidr) {
        Ok(cidr) => Some(cidr),
        Err(message) => {
            out.push(Violation::new(
                format!("{field}.cidr"),
                &block.cidr,
                message,
            ));
            None
        }
    };
    for (i, except) in block.except.iter().flatten().enumerate() {
        let field = format!("{field}.except[{i}]");
        match (parse_cidr(except), cidr) {
            (Err(message), _) => out.push(Violation::new(field, except, message)),
            (Ok(inner), Some(outer)) if !strictly_within(inner, outer) => {
                out.push(Violation::new(
                    field,
                    except,
                    format!(
                        "must be a strict subset of cidr {}, got \"{}\"",
                        shown(&block.cidr),
                        shown(except)
                    ),
                ));
            }
            _ => {}
        }
    }
}

/// An address and a prefix length.
pub(super) type Cidr = (IpAddr, u8);

/// `address/prefix`, IPv4 or IPv6, the prefix within the address's bits.
pub(super) fn parse_cidr(text: &str) -> Result<Cidr, String> {
    let wrong = || {
        format!(
            "must be a CIDR such as 10.0.0.0/16 or fd00::/64, got \"{}\"",
            shown(text)
        )
    };
    let (address, prefix) = text.split_once('/').ok_or_else(wrong)?;
    let address: IpAddr = address.parse().map_err(|_| wrong())?;
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| !prefix.starts_with('+') && *p <= bits(address))
        .ok_or_else(wrong)?;
    Ok((address, prefix))
}

fn bits(address: IpAddr) -> u8 {
    match address {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// The network part of `address`, `prefix` bits, as a number.
fn network(address: IpAddr, prefix: u8) -> u128 {
    let (value, width) = match address {
        IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
        IpAddr::V6(a) => (u128::from(a), 128),
    };
    let host_bits = u32::from(width - prefix);
    value.checked_shr(host_bits).unwrap_or(0)
}

/// `inner` lies inside `outer` and is smaller (same family).
fn strictly_within(inner: Cidr, outer: Cidr) -> bool {
    let same_family = inner.0.is_ipv4() == outer.0.is_ipv4();
    same_family && inner.1 > outer.1 && network(inner.0, outer.1) == network(outer.0, outer.1)
}

/// What the policy settings leave open or closed that the user may not mean.
pub(super) fn network_policy_warnings(spec: &RedisSpec) -> Vec<String> {
    let mut warnings = Vec::new();
    let port = spec.port();
    match spec.network_policy() {
        // Replication mode says it in its own warning about auth.
        None if spec.auth.is_none() && spec.mode() != Mode::Replication => warnings.push(format!(
            "spec.networkPolicy and spec.auth are not set: any pod in the cluster can connect to \
             port {port}, read and write every key and change the configuration; set \
             spec.networkPolicy.allowedClients to the clients that may connect, and spec.auth"
        )),
        None => {}
        Some(policy) => {
            if policy.allowed_clients().is_empty() {
                warnings.push(format!(
                    "spec.networkPolicy.allowedClients is empty: only the operator and this \
                     Redis's own pods can connect to port {port}; list the clients' pods, \
                     namespaces or addresses there"
                ));
            }
            match spec.exporter() {
                None if !policy.metrics_from().is_empty() => warnings.push(
                    "spec.networkPolicy.metricsFrom has no effect: no exporter runs (spec.exporter)"
                        .to_owned(),
                ),
                Some(exporter) if policy.metrics_from().is_empty() => warnings.push(format!(
                    "spec.networkPolicy.metricsFrom is empty: nothing can scrape the exporter's \
                     port {}; list your Prometheus's pods or namespace there",
                    exporter.port()
                )),
                _ => {}
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_are_parsed_with_their_family_bounds() {
        assert!(parse_cidr("10.0.0.0/16").is_ok());
        assert!(parse_cidr("0.0.0.0/0").is_ok());
        assert!(parse_cidr("fd00::/64").is_ok());
        assert!(parse_cidr("10.1.2.3/32").is_ok());
        for bad in [
            "",
            "10.0.0.0",
            "10.0.0.0/33",
            "fd00::/129",
            "10.0.0/8",
            "x/8",
            "10.0.0.0/+8",
            "10.0.0.0/-1",
            "10.0.0.0/8/8",
            " 10.0.0.0/8",
        ] {
            assert!(parse_cidr(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_exception_must_lie_strictly_inside_its_cidr() {
        let c = |t: &str| parse_cidr(t).expect(t);
        assert!(strictly_within(c("10.1.0.0/24"), c("10.0.0.0/8")));
        assert!(strictly_within(c("10.255.255.255/32"), c("10.0.0.0/8")));
        assert!(!strictly_within(c("10.0.0.0/8"), c("10.0.0.0/8")), "equal");
        assert!(
            !strictly_within(c("11.0.0.0/16"), c("10.0.0.0/8")),
            "outside"
        );
        assert!(!strictly_within(c("10.0.0.0/7"), c("10.0.0.0/8")), "larger");
        assert!(
            !strictly_within(c("::/128"), c("0.0.0.0/0")),
            "other family"
        );
        assert!(strictly_within(c("fd00:1::/32"), c("fd00::/16")));
        assert!(strictly_within(c("1.2.3.4/1"), c("0.0.0.0/0")));
    }
}
