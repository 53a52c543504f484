package main

// The rules on spec.config and spec.maxMemoryPercentOfLimit (crates/api/src/validation/config.rs,
// with crates/api/src/config/mod.rs); the directives themselves are directives.go, generated.

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// ---- spec.config and spec.maxMemoryPercentOfLimit ----

const (
	maxDirectives        = 256
	maxValueLength       = 1024
	highMaxMemoryPercent = 90
)

type shape int

const (
	shapeBool shape = iota
	shapeInteger
	shapeMemory
	shapeEnum
	shapeText
	shapeSpecial
)

// directive: one redis.conf directive and what its value looks like (directives.go).
type directive struct {
	name, alias string
	shape       shape
	min, max    int64
	percent     bool
	values      []string
	several     bool
}

func lookupDirective(name string) *directive {
	for i := range directives {
		d := &directives[i]
		if asciiEqualFold(d.name, name) || (d.alias != "" && asciiEqualFold(d.alias, name)) {
			return d
		}
	}
	return nil
}

// ownedDirective: why the operator, not spec.config, sets directive name, if it does.
func ownedDirective(name string, spec *RedisSpec) string {
	switch {
	case name == "port" || name == "tls-port":
		return "the operator sets it from spec.port and spec.tls"
	case strings.HasPrefix(name, "tls-"):
		return "the operator sets TLS from spec.tls"
	}
	switch name {
	case "bind", "bind-source-addr", "protected-mode":
		return "the operator has redis-server listen on the pod network"
	case "replicaof", "masteruser", "masterauth", "replica-announce-ip", "replica-announce-port", "replica-announced":
		return "the operator sets replication (spec.mode) itself"
	case "min-replicas-to-write", "min-replicas-max-lag":
		return "set it in spec.replication (minReplicasToWrite, minReplicasMaxLag)"
	case "requirepass":
		return "the password is spec.auth's (or spec.acl's users)"
	case "aclfile", "acl-pubsub-default":
		return "ACL users are spec.acl's"
	case "dir", "dbfilename", "appendfilename", "appenddirname":
		return "the operator's data layout (spec.storage) puts them"
	case "appendonly":
		if spec.Storage != nil {
			return "set it in spec.storage.appendOnly"
		}
	case "daemonize", "supervised", "pidfile", "logfile":
		return "redis-server stays the container's process and logs to its output"
	case "cluster-enabled", "cluster-config-file":
		return "Cluster mode is not supported"
	}
	return ""
}

// refusedDirective: why no Redis may set directive name, if so (api::config::refused).
func refusedDirective(name string) string {
	switch name {
	case "enable-protected-configs":
		return "it lets CONFIG SET move dir and dbfilename at run time, under the operator's data layout and backups, and write files where the server can"
	case "enable-debug-command":
		return "DEBUG can crash, freeze or reload the server (DEBUG SEGFAULT, SLEEP, RELOAD) outside the operator's failover and rollout"
	case "enable-module-command":
		return "modules are not supported (MODULE LOAD runs any shared object the server can read)"
	}
	return ""
}

func notADirective(name string) string {
	switch name {
	case "rename-command":
		return "not settable here: restrict commands with ACL users (spec.acl) instead; the operator runs its own commands under their names"
	case "include":
		return "not settable here: set the directives themselves"
	case "loadmodule", "loadmodule-args":
		return "modules are not supported"
	case "user":
		return "ACL users are spec.acl's"
	}
	return ""
}

// memoryBytes reads a memory size as Redis's memtoull does (digits and an optional unit).
func memoryBytes(value string) *big.Int {
	split := strings.IndexFunc(value, func(c rune) bool { return c < '0' || c > '9' })
	if split < 0 {
		split = len(value)
	}
	digits, unit := value[:split], asciiLower(value[split:])
	if digits == "" || len(digits) > 20 {
		return nil
	}
	multipliers := map[string]int64{"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 * 1000, "mb": 1024 * 1024, "g": 1000 * 1000 * 1000, "gb": 1024 * 1024 * 1024}
	m, ok := multipliers[unit]
	if !ok {
		return nil
	}
	n, _ := new(big.Int).SetString(digits, 10)
	return n.Mul(n, big.NewInt(m))
}

func valueProblem(d *directive, value string) string {
	if len(value) > maxValueLength {
		return fmt.Sprintf("must be at most %d bytes, got %d", maxValueLength, len(value))
	}
	for _, c := range value {
		if unicode.Is(unicode.Cc, c) {
			return "must not contain control characters (line breaks, tabs, ...)"
		}
	}
	if strings.HasPrefix(value, "--") {
		return "must not start with --"
	}
	switch d.shape {
	case shapeBool:
		if !asciiEqualFold(value, "yes") && !asciiEqualFold(value, "no") {
			return "must be yes or no"
		}
	case shapeInteger:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return "must be a whole number"
		}
		if n < d.min || n > d.max {
			return fmt.Sprintf("must be between %d and %d", d.min, d.max)
		}
	case shapeMemory:
		if p, ok := strings.CutSuffix(value, "%"); d.percent && ok {
			if n, err := parseUnsigned(p, 8); err != nil || n > 100 {
				return "a percentage must be 0% to 100%"
			}
			return ""
		}
		extra := ""
		if d.percent {
			extra = ", or a percentage"
		}
		lowest := max(d.min, 0)
		n := memoryBytes(value)
		if n == nil {
			return fmt.Sprintf("must be a size in bytes with an optional unit (b, k, kb, m, mb, g, gb)%s, e.g. 100mb", extra)
		}
		if n.Cmp(big.NewInt(lowest)) < 0 || n.Cmp(big.NewInt(d.max)) > 0 {
			return fmt.Sprintf("must be between %d and %d bytes", lowest, d.max)
		}
	case shapeEnum:
		var words []string
		for _, w := range strings.Split(value, " ") {
			if w != "" {
				words = append(words, w)
			}
		}
		known := func(w string) bool {
			for _, v := range d.values {
				if asciiEqualFold(v, w) {
					return true
				}
			}
			return false
		}
		fits := len(words) > 0 && (d.several || len(words) == 1)
		for _, w := range words {
			fits = fits && known(w)
		}
		if !fits {
			how := "one of"
			if d.several {
				how = "words of"
			}
			return fmt.Sprintf("must be %s: %s", how, strings.Join(d.values, ", "))
		}
	}
	return ""
}

// memoryLimit: the redis container's memory limit in bytes, if it has one.
func memoryLimit(spec *RedisSpec) *big.Int {
	if spec.Resources == nil || spec.Resources.Limits == nil {
		return nil
	}
	q, ok := spec.Resources.Limits["memory"]
	if !ok {
		return nil
	}
	bytes := quantityBytes(q.String())
	if bytes == nil || bytes.Sign() <= 0 {
		return nil
	}
	return bytes
}

func configViolations(spec *RedisSpec) []Violation {
	var out []Violation
	if p := spec.MaxMemoryPercentOfLimit; p != nil && (*p < 1 || *p > 100) {
		out = append(out, Violation{"spec.maxMemoryPercentOfLimit", fmt.Sprintf("must be between 1 and 100, got %d", *p), itoa(*p)})
	}
	if spec.Config == nil {
		return out
	}
	if len(spec.Config) > maxDirectives {
		return append(out, Violation{"spec.config", fmt.Sprintf("must hold at most %d directives, got %d", maxDirectives, len(spec.Config)), strconv.Itoa(len(spec.Config))})
	}
	seen := map[string]string{}
	for _, name := range sortedKeys(spec.Config) {
		value := spec.Config[name]
		field := fmt.Sprintf("spec.config[%s]", shown(name))
		d := lookupDirective(name)
		if d == nil {
			why := notADirective(asciiLower(name))
			if why == "" {
				why = "is not a redis.conf directive of Redis 7.0 (names are as redis.conf writes them, e.g. maxmemory-policy)"
			}
			out = append(out, Violation{field, why, name})
			continue
		}
		if why := ownedDirective(d.name, spec); why != "" {
			out = append(out, Violation{field, "is set by the operator: " + why, name})
			continue
		}
		if why := refusedDirective(d.name); why != "" {
			out = append(out, Violation{field, "is not allowed: " + why, name})
			continue
		}
		// As Rust's BTreeMap::insert: the name written last replaces the one before.
		first, ok := seen[d.name]
		seen[d.name] = name
		if ok {
			out = append(out, Violation{field, fmt.Sprintf("is the same directive as %s (one name of it only)", shown(first)), name})
			continue
		}
		if problem := valueProblem(d, value); problem != "" {
			out = append(out, Violation{field, fmt.Sprintf("%s, got %s", problem, rustQuote(shown(value))), value})
		}
	}
	return out
}

func configWarnings(spec *RedisSpec) []string {
	var out []string
	limit := memoryLimit(spec)
	var set *string
	for _, name := range sortedKeys(spec.Config) {
		if d := lookupDirective(name); d != nil && d.name == "maxmemory" {
			v := spec.Config[name]
			set = &v
			break
		}
	}
	if set != nil && limit != nil {
		if bytes := memoryBytes(*set); bytes != nil && (bytes.Sign() == 0 || bytes.Cmp(limit) > 0) {
			what := bytes.String() + " bytes"
			if bytes.Sign() == 0 {
				what = "0 (no limit)"
			}
			out = append(out, fmt.Sprintf("spec.config[maxmemory]: %s lets Redis grow past the container's memory limit (%s bytes): the kernel kills it (OOMKilled) before it evicts", what, limit.String()))
		}
	}
	if p := spec.MaxMemoryPercentOfLimit; p != nil {
		switch {
		case set != nil:
			out = append(out, "spec.maxMemoryPercentOfLimit: not used, spec.config sets maxmemory")
		case limit == nil:
			out = append(out, "spec.maxMemoryPercentOfLimit: not used, the redis container has no memory limit (spec.resources.limits.memory)")
		case *p > highMaxMemoryPercent:
			out = append(out, fmt.Sprintf("spec.maxMemoryPercentOfLimit: %d%% leaves little room for a fork's copy-on-write (BGSAVE, a replica's full sync) and buffers: under writes the kernel may kill Redis (OOMKilled)", *p))
		}
	}
	return out
}
