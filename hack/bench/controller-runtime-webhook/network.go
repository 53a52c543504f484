package main

// Who reaches the pods: spec.networkPolicy (crates/api/src/validation/network_policy.rs) and
// spec.service with the Redis's name as its Services need it (validation/service.rs).

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
)

const (
	maxPeers        = 32
	maxSourceRanges = 64
)

// ---- spec.networkPolicy ----

func networkPolicyViolations(spec *RedisSpec) []Violation {
	policy := spec.NetworkPolicy
	if policy == nil {
		return nil
	}
	var out []Violation
	for _, list := range []struct {
		name  string
		peers []networkingv1.NetworkPolicyPeer
	}{{"allowedClients", policy.AllowedClients}, {"metricsFrom", policy.MetricsFrom}} {
		field := "spec.networkPolicy." + list.name
		if len(list.peers) > maxPeers {
			out = append(out, Violation{field, fmt.Sprintf("must hold at most %d peers, got %d", maxPeers, len(list.peers)), strconv.Itoa(len(list.peers))})
			continue
		}
		for i := range list.peers {
			peerViolations(fmt.Sprintf("%s[%d]", field, i), &list.peers[i], &out)
		}
	}
	return out
}

func peerViolations(field string, peer *networkingv1.NetworkPolicyPeer, out *[]Violation) {
	selectors := peer.PodSelector != nil || peer.NamespaceSelector != nil
	switch {
	case peer.IPBlock == nil && !selectors:
		*out = append(*out, Violation{field, "must set podSelector, namespaceSelector (or both) or ipBlock: an empty peer is refused by the API server", "{}"})
	case peer.IPBlock != nil && selectors:
		*out = append(*out, Violation{field, "must set either ipBlock or selectors (podSelector, namespaceSelector), not both", "ipBlock with a selector"})
	}
	if peer.PodSelector != nil {
		selectorViolations(field+".podSelector", peer.PodSelector, out)
	}
	if peer.NamespaceSelector != nil {
		selectorViolations(field+".namespaceSelector", peer.NamespaceSelector, out)
	}
	if block := peer.IPBlock; block != nil {
		field := field + ".ipBlock"
		outer, message := parseCIDR(block.CIDR)
		if message != "" {
			*out = append(*out, Violation{field + ".cidr", message, block.CIDR})
		}
		for i, except := range block.Except {
			field := fmt.Sprintf("%s.except[%d]", field, i)
			inner, problem := parseCIDR(except)
			switch {
			case problem != "":
				*out = append(*out, Violation{field, problem, except})
			case message == "" && !strictlyWithin(inner, outer):
				*out = append(*out, Violation{field, fmt.Sprintf("must be a strict subset of cidr %s, got \"%s\"", shown(block.CIDR), shown(except)), except})
			}
		}
	}
}

// parseCIDR: address/prefix, IPv4 or IPv6 (no zone), the prefix within the address's bits, as
// Rust's IpAddr and u8 parsers read them.
func parseCIDR(text string) (netip.Prefix, string) {
	wrong := fmt.Sprintf("must be a CIDR such as 10.0.0.0/16 or fd00::/64, got \"%s\"", shown(text))
	address, prefix, ok := strings.Cut(text, "/")
	if !ok || strings.Contains(address, "%") || strings.HasPrefix(prefix, "+") {
		return netip.Prefix{}, wrong
	}
	addr, err := netip.ParseAddr(address)
	if err != nil {
		return netip.Prefix{}, wrong
	}
	bits, err := strconv.ParseUint(prefix, 10, 8)
	if err != nil || int(bits) > addr.BitLen() {
		return netip.Prefix{}, wrong
	}
	return netip.PrefixFrom(addr, int(bits)), ""
}

// strictlyWithin: inner lies inside outer and is smaller (same family).
func strictlyWithin(inner, outer netip.Prefix) bool {
	if inner.Addr().Is4() != outer.Addr().Is4() || inner.Bits() <= outer.Bits() {
		return false
	}
	a, _ := inner.Addr().Prefix(outer.Bits())
	b, _ := outer.Addr().Prefix(outer.Bits())
	return a == b
}

func networkPolicyWarnings(spec *RedisSpec) []string {
	port := spec.port()
	policy := spec.NetworkPolicy
	if policy != nil && policy.Enabled != nil && !*policy.Enabled {
		policy = nil // RedisSpec::network_policy: the settings of a policy that is kept
	}
	if policy == nil {
		if spec.Auth == nil && spec.mode() != ModeReplication {
			return []string{fmt.Sprintf("spec.networkPolicy and spec.auth are not set: any pod in the cluster can connect to port %d, read and write every key and change the configuration; set spec.networkPolicy.allowedClients to the clients that may connect, and spec.auth", port)}
		}
		return nil
	}
	var out []string
	if len(policy.AllowedClients) == 0 {
		out = append(out, fmt.Sprintf("spec.networkPolicy.allowedClients is empty: only the operator and this Redis's own pods can connect to port %d; list the clients' pods, namespaces or addresses there", port))
	}
	exporter := spec.exporter()
	switch {
	case exporter == nil && len(policy.MetricsFrom) != 0:
		out = append(out, "spec.networkPolicy.metricsFrom has no effect: no exporter runs (spec.exporter)")
	case exporter != nil && len(policy.MetricsFrom) == 0:
		out = append(out, fmt.Sprintf("spec.networkPolicy.metricsFrom is empty: nothing can scrape the exporter's port %d; list your Prometheus's pods or namespace there", exporter.port()))
	}
	return out
}

// ---- spec.service ----

func serviceType(spec *RedisSpec) string {
	if spec.Service == nil || spec.Service.Type == nil {
		return "ClusterIP"
	}
	return *spec.Service.Type
}

func serviceViolations(spec *RedisSpec) []Violation {
	service := spec.Service
	if service == nil {
		return nil
	}
	var out []Violation
	kind := serviceType(spec)
	bytes := 0
	for _, key := range sortedKeys(service.Annotations) {
		field := fmt.Sprintf("spec.service.annotations[%s]", shown(key))
		if isOperatorAnnotation(key) {
			out = append(out, Violation{field, fmt.Sprintf("\"%s\" is the operator's own (every %s key is); choose another key", shown(key), operatorKeyPrefix), key})
		} else if message := annotationKeyProblem(key); message != "" {
			out = append(out, Violation{field, message, key})
		}
		bytes += len(key) + len(service.Annotations[key])
	}
	if bytes > maxAnnotationsBytes {
		out = append(out, Violation{"spec.service.annotations", fmt.Sprintf("must be no more than %d bytes in total (keys and values), got %d", maxAnnotationsBytes, bytes), strconv.Itoa(bytes)})
	}
	if ranges := service.LoadBalancerSourceRanges; ranges != nil {
		const field = "spec.service.loadBalancerSourceRanges"
		if kind != "LoadBalancer" {
			out = append(out, Violation{field, fmt.Sprintf("only applies to type LoadBalancer, got type %s", kind), strings.Join(ranges, ",")})
		}
		if len(ranges) > maxSourceRanges {
			out = append(out, Violation{field, fmt.Sprintf("must hold at most %d CIDRs, got %d", maxSourceRanges, len(ranges)), strconv.Itoa(len(ranges))})
		}
		for i, r := range ranges {
			if i >= maxSourceRanges {
				break
			}
			if _, message := parseCIDR(strings.TrimSpace(r)); message != "" {
				out = append(out, Violation{fmt.Sprintf("%s[%d]", field, i), message, r})
			}
		}
	}
	if policy := service.ExternalTrafficPolicy; policy != nil && kind == "ClusterIP" {
		out = append(out, Violation{"spec.service.externalTrafficPolicy", "only applies to types NodePort and LoadBalancer, got type ClusterIP", *policy})
	}
	return out
}

// serviceNameViolations: the Redis's name (or generateName prefix) as its Services need it: a
// DNS-1035 label, with room for the longest suffix of its Services.
func serviceNameViolations(r *Redis, maxReplicas int32) []Violation {
	field, name, generated := "", "", 0
	switch {
	case r.Name != "":
		field, name = "metadata.name", r.Name
	case r.GenerateName != "":
		field, name, generated = "metadata.generateName", r.GenerateName, generatedSuffixLength
	default:
		return nil
	}
	var out []Violation
	letterFirst := name != "" && 'a' <= name[0] && name[0] <= 'z'
	charsOK := true
	for i := 0; i < len(name); i++ {
		charsOK = charsOK && (isLowerAlnum(name[i]) || name[i] == '-')
	}
	endOK := generated > 0 || (name != "" && isLowerAlnum(name[len(name)-1]))
	if !(letterFirst && charsOK && endOK) {
		out = append(out, Violation{field, fmt.Sprintf("must start with a lowercase letter, hold only lowercase letters, digits and '-', and end with a letter or digit: it names the Redis's Services, whose names Kubernetes requires to be DNS-1035 labels, got \"%s\"", shown(name)), name})
	}
	suffix, why := "", ""
	if r.Spec.mode() == ModeReplication {
		suffix, why = "-headless", "in Replication mode"
	}
	if r.Spec.Service != nil && r.Spec.Service.PerPod != nil && *r.Spec.Service.PerPod {
		highest := max(maxReplicas, 1) - 1
		if s := fmt.Sprintf("-%d", highest); len(s) > len(suffix) || suffix == "" {
			suffix, why = s, "with spec.service.perPod (the highest ordinal spec.replicas may reach)"
		}
	}
	if suffix != "" {
		budget := maxLabelLength - len(suffix) - generated
		total := len(name) + generated
		if len(name) > budget && total <= maxLabelLength {
			out = append(out, Violation{field, fmt.Sprintf("must be no more than %d characters %s, so the Service <name>%s fits in %d, got %d", budget, why, suffix, maxLabelLength, len(name)), name})
		}
	}
	return out
}

func serviceWarnings(spec *RedisSpec) []string {
	kind := serviceType(spec)
	if kind != "ClusterIP" && spec.Auth == nil && spec.ACL == nil {
		return []string{fmt.Sprintf("spec.service.type: %s makes the Redis reachable from outside the cluster, and it has no auth: anyone who reaches it can read and write", kind)}
	}
	return nil
}
