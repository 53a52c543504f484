package main

// The rules on spec.storage (crates/api/src/validation/storage.rs, with crates/api/src/storage.rs),
// spec.exporter (validation/exporter.rs) and spec.tls (validation/tls.rs); acl.go, config.go and
// backup.go hold the other features' rules.

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// ---- spec.storage ----

var allowedAccessModes = []string{"ReadWriteOnce", "ReadWriteOncePod"}

// accessModes: the effective modes (ReadWriteOnce when none are written).
func (s *StorageSpec) accessModes() []string {
	if len(s.AccessModes) == 0 {
		return []string{"ReadWriteOnce"}
	}
	return s.AccessModes
}

// quantityBytes reads a Kubernetes quantity as whole bytes (rounded up), as
// crates/api/src/storage.rs's quantity_bytes does; nil when it is not one.
func quantityBytes(quantity string) *big.Int {
	s := strings.TrimSpace(quantity)
	split := strings.IndexFunc(s, func(c rune) bool { return !(('0' <= c && c <= '9') || c == '.' || c == '+') })
	if split < 0 {
		split = len(s)
	}
	number, suffix := strings.TrimPrefix(s[:split], "+"), s[split:]
	whole, fraction, _ := strings.Cut(number, ".")
	digitsOnly := func(t string) bool { return strings.IndexFunc(t, func(c rune) bool { return c < '0' || c > '9' }) < 0 }
	if (whole == "" && fraction == "") || !digitsOnly(whole) || !digitsOnly(fraction) || len(whole)+len(fraction) > 30 {
		return nil
	}
	mantissa, ok := new(big.Int).SetString(whole+fraction, 10)
	if !ok {
		return nil
	}
	pow10 := func(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }
	divisor := pow10(len(fraction))
	multiplier := big.NewInt(1)
	switch suffix {
	case "":
	case "Ki", "Mi", "Gi", "Ti", "Pi", "Ei":
		multiplier.Lsh(multiplier, uint(10*(1+strings.Index("KMGTPE", suffix[:1]))))
	case "m":
		divisor.Mul(divisor, big.NewInt(1000))
	case "k", "M", "G", "T", "P", "E":
		multiplier = pow10(3 * (1 + strings.Index("kMGTPE", suffix)))
	default:
		power, ok := strings.CutPrefix(suffix, "e")
		if !ok {
			power, ok = strings.CutPrefix(suffix, "E")
		}
		p, err := parseUnsigned(power, 32)
		if !ok || err != nil || p > 30 {
			return nil
		}
		multiplier = pow10(int(p))
	}
	scaled := new(big.Int).Mul(mantissa, multiplier)
	// Beyond u128, Rust's checked arithmetic gives up.
	if scaled.BitLen() > 128 || divisor.BitLen() > 128 {
		return nil
	}
	q, r := new(big.Int).QuoRem(scaled, divisor, new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

func storageViolations(spec *RedisSpec) []Violation {
	s := spec.Storage
	if s == nil {
		return nil
	}
	var out []Violation
	modes := rustQuoteList(s.accessModes())
	switch bytes := quantityBytes(s.Size); {
	case bytes == nil:
		out = append(out, Violation{"spec.storage.size", fmt.Sprintf("\"%s\" is not a quantity (a number with an optional suffix such as Mi or Gi, e.g. \"1Gi\")", shown(s.Size)), s.Size})
	case bytes.Sign() == 0:
		out = append(out, Violation{"spec.storage.size", "must be more than 0", s.Size})
	}
	for i, mode := range s.AccessModes {
		if mode != allowedAccessModes[0] && mode != allowedAccessModes[1] {
			out = append(out, Violation{fmt.Sprintf("spec.storage.accessModes[%d]", i),
				fmt.Sprintf("\"%s\" is not usable by a Redis pod (one of %s)", shown(mode), strings.Join(allowedAccessModes, ", ")), modes})
		}
	}
	return out
}

func storageUpdateViolations(new, old *RedisSpec) []Violation {
	if new.Storage == nil || old.Storage == nil {
		return nil
	}
	n, o := new.Storage, old.Storage
	var out []Violation
	if before, after := quantityBytes(o.Size), quantityBytes(n.Size); before != nil && after != nil && after.Cmp(before) < 0 {
		out = append(out, Violation{"spec.storage.size", fmt.Sprintf("cannot shrink from %s to %s: a volume cannot be made smaller (create a new Redis and copy the data)", shown(o.Size), shown(n.Size)), n.Size})
	}
	class := func(c *string) string {
		if c == nil {
			return "None"
		}
		return fmt.Sprintf("Some(\"%s\")", shown(*c))
	}
	if (o.StorageClassName == nil) != (n.StorageClassName == nil) || (o.StorageClassName != nil && *o.StorageClassName != *n.StorageClassName) {
		out = append(out, Violation{"spec.storage.storageClassName", fmt.Sprintf("cannot change from %s to %s: the claims exist in the old class", class(o.StorageClassName), class(n.StorageClassName)), n.Size})
	}
	if rustQuoteList(o.accessModes()) != rustQuoteList(n.accessModes()) {
		out = append(out, Violation{"spec.storage.accessModes", fmt.Sprintf("cannot change from %s to %s: the claims exist with the old modes", shownList(o.accessModes()), shownList(n.accessModes())), n.Size})
	}
	return out
}

func storageUpdateWarnings(new, old *RedisSpec) []string {
	switch {
	case old.Storage == nil && new.Storage != nil:
		return []string{"spec.storage: the pods are replaced one at a time onto new, empty claims; what they hold in memory and their emptyDir is not copied"}
	case old.Storage != nil && new.Storage == nil:
		return []string{"spec.storage: removed; the pods are replaced onto emptyDir volumes and the claims are kept (delete them by hand)"}
	}
	return nil
}

// ---- spec.exporter ----

const (
	defaultExporterImage       = "oliver006/redis_exporter:v1.45.0"
	defaultExporterPort  int32 = 9121
)

func (e *ExporterSpec) image() string { return deref(e.Image, defaultExporterImage) }
func (e *ExporterSpec) port() int32   { return deref(e.Port, defaultExporterPort) }

// exporter: the exporter settings when the sidecar runs.
func (s *RedisSpec) exporter() *ExporterSpec {
	if s.Exporter == nil || (s.Exporter.Enabled != nil && !*s.Exporter.Enabled) {
		return nil
	}
	return s.Exporter
}

func exporterViolations(spec *RedisSpec) []Violation {
	e := spec.Exporter
	if e == nil {
		return nil
	}
	var out []Violation
	if image := parseImage(e.image()); image.problem != "" {
		out = append(out, Violation{"spec.exporter.image", image.problem, e.image()})
	}
	port := e.port()
	if port < 1 || port > 65535 {
		out = append(out, Violation{"spec.exporter.port", fmt.Sprintf("must be between 1 and 65535, got %d", port), itoa(port)})
	} else if port == spec.port() {
		out = append(out, Violation{"spec.exporter.port", fmt.Sprintf("must differ from spec.port (%d): redis-server listens there", port), itoa(port)})
	}
	return out
}

// ---- spec.tls ----

func tlsViolations(spec *RedisSpec, lowest int32) []Violation {
	tls := spec.TLS
	if tls == nil {
		return nil
	}
	var out []Violation
	if problem := secretNameProblem(tls.SecretRef.Name); problem != "" {
		out = append(out, Violation{"spec.tls.secretRef.name", problem, rustQuote(tls.SecretRef.Name)})
	}
	if p := tls.PlaintextPort; p != nil {
		const field = "spec.tls.plaintextPort"
		port := *p
		if port < lowest {
			out = append(out, Violation{field, fmt.Sprintf("must be >= %d, got %d", lowest, port), itoa(port)})
		}
		if port > schemaMaxPort {
			out = append(out, Violation{field, fmt.Sprintf("must be <= %d, got %d", schemaMaxPort, port), itoa(port)})
		}
		if port == spec.port() {
			out = append(out, Violation{field, fmt.Sprintf("must differ from spec.port (TLS is served there), got %d", port), itoa(port)})
		}
		if e := spec.exporter(); e != nil && port == e.port() {
			out = append(out, Violation{field, fmt.Sprintf("must differ from spec.exporter.port (the metrics port), got %d", port), itoa(port)})
		}
	}
	return out
}

func tlsWarnings(spec *RedisSpec) []string {
	if spec.TLS == nil || spec.TLS.PlaintextPort == nil {
		return nil
	}
	what := "the data"
	if spec.Auth != nil {
		what = "the password and the data"
	}
	return []string{fmt.Sprintf("spec.tls.plaintextPort: port %d serves Redis without TLS; %s cross the network in clear there", *spec.TLS.PlaintextPort, what)}
}

// replicated: a Replication Redis with replicas (TLS and ACLs are not switched under it).
func (s *RedisSpec) replicated() bool { return s.mode() == ModeReplication && s.replicas() > 1 }

func tlsUpdateViolations(new, old *RedisSpec) []Violation {
	if (new.TLS != nil) == (old.TLS != nil) || !(new.replicated() && old.replicated()) {
		return nil
	}
	verb, value := "removed from", "unset"
	if new.TLS != nil {
		verb, value = "added to", "set"
	}
	return []Violation{{"spec.tls", fmt.Sprintf("cannot be %s a Replication Redis with replicas: its pods are replaced one at a time, and a pod with TLS cannot replicate from one without it; scale it to 1 replica first (with spec.storage the data stays), or create a new Redis", verb), value}}
}

func tlsUpdateWarnings(new, old *RedisSpec) []string {
	if new.TLS != nil && old.TLS != nil && new.TLS.SecretRef.Name != old.TLS.SecretRef.Name {
		return []string{fmt.Sprintf("spec.tls.secretRef.name: the pods are replaced one at a time to read Secret %s; until all are, replication needs each Secret's ca.crt to hold the CA of the other's certificate", rustQuote(new.TLS.SecretRef.Name))}
	}
	return nil
}

// parseUnsigned is Rust's str::parse of an unsigned integer: decimal digits, one optional '+'.
func parseUnsigned(text string, bitSize int) (uint64, error) {
	return strconv.ParseUint(strings.TrimPrefix(text, "+"), 10, bitSize)
}
