package main

// The admission rules of DESIGN §2, ported line by line from crates/api/src/defaults.rs and
// crates/api/src/validation/*.rs (same order of checks, same field paths, same messages, same
// update ratchet), so hack/bench/webhook.sh can check that this server answers every bench
// review exactly as redis-webhook does before it compares their speed. This file holds the
// defaults, the policy and its entry points (CREATE, UPDATE with its ratchet, DELETE, the scale
// subresource), the order of every rule and warning, and the rules on metadata, spec.replicas,
// spec.port, spec.image, Replication mode, spec.auth and spec.podDisruptionBudget. The others are
// by the part of the spec they judge, as validation's modules are: placement.go, network.go
// (networkPolicy, service and the name its Services take), features.go (storage, exporter,
// tls), acl.go, config.go (with directives.go, generated from the Rust table) and backup.go;
// shown.go is how messages echo values, duration.go how failoverAfter is read.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	group                        = "myapp.tangx.in"
	deletionProtectionAnnotation = "myapp.tangx.in/deletion-protection"

	defaultReplicas        int32 = 1
	defaultImage                 = "redis:7.2-alpine"
	defaultPort            int32 = 6379
	defaultImagePullPolicy       = corev1.PullIfNotPresent
	// minReplicasToWrite is never stored: 1 from this many pods on, else 0 (defaults.rs).
	minReplicasToWriteFromPods int32 = 3
	defaultMinReplicasMaxLag   int32 = 10
	defaultFailoverAfter             = "10s"
	defaultSecretKey                 = "password"
	defaultKeep                int32 = 7

	maxNameLength         = 63
	generatedSuffixLength = 5
	schemaMinPort         = 1234
	schemaMaxPort         = 54321
	schemaMaxReplicas     = 10000
	maxSecretNameLength   = 253
	maxSecretKeyLength    = 253

	ratchetNote = " (allowed because the stored object already has this value; it will be refused once changed)"
)

// Policy is the configurable part of the rules (--reserved-names, --min-port, --max-replicas).
type Policy struct {
	ReservedNames []string
	MinPort       int32
	MaxReplicas   int32
}

// Violation is one broken rule; Value is the effective value judged (the ratchet compares it).
type Violation struct {
	Field, Message, Value string
}

func (v Violation) String() string { return v.Field + ": " + v.Message }

// Verdict is allowed when it has no violation; warnings either way.
type Verdict struct {
	Violations []Violation
	Warnings   []string
}

// Message joins every violation with "; " (the denial's status.message).
func (v Verdict) Message() string {
	parts := make([]string, len(v.Violations))
	for i, violation := range v.Violations {
		parts[i] = violation.String()
	}
	return strings.Join(parts, "; ")
}

// ---- defaults (crates/api/src/defaults.rs) ----

// applyDefaults fills exactly the fields RedisSpec::missing_defaults lists: the four of every
// spec, spec.replication (whole or its missing keys, but never minReplicasToWrite, whose default
// follows replicas) in Replication mode only, spec.auth.secretRef.key whenever spec.auth is set,
// and spec.backup.keep whenever spec.backup.schedule is. Set fields are never touched.
func applyDefaults(spec *RedisSpec) {
	if spec.Replicas == nil {
		spec.Replicas = ptr(defaultReplicas)
	}
	if spec.Image == nil {
		spec.Image = ptr(defaultImage)
	}
	if spec.Port == nil {
		spec.Port = ptr(defaultPort)
	}
	if spec.ImagePullPolicy == nil {
		spec.ImagePullPolicy = ptr(defaultImagePullPolicy)
	}
	if spec.mode() == ModeReplication {
		if spec.Replication == nil {
			spec.Replication = &ReplicationSpec{}
		}
		r := spec.Replication
		if r.MinReplicasMaxLag == nil {
			r.MinReplicasMaxLag = ptr(defaultMinReplicasMaxLag)
		}
		if r.FailoverAfter == nil {
			r.FailoverAfter = ptr(defaultFailoverAfter)
		}
	}
	if spec.Auth != nil && spec.Auth.SecretRef.Key == nil {
		spec.Auth.SecretRef.Key = ptr(defaultSecretKey)
	}
	if spec.Backup != nil && spec.Backup.Schedule != nil && spec.Backup.Keep == nil {
		spec.Backup.Keep = ptr(defaultKeep)
	}
}

func (s *RedisSpec) replicas() int32 { return deref(s.Replicas, defaultReplicas) }
func (s *RedisSpec) image() string   { return deref(s.Image, defaultImage) }
func (s *RedisSpec) port() int32     { return deref(s.Port, defaultPort) }
func (s *RedisSpec) mode() Mode      { return deref(s.Mode, ModeStandalone) }

func (s *RedisSpec) minReplicasToWrite() int32 {
	var byPods int32
	if s.replicas() >= minReplicasToWriteFromPods {
		byPods = 1
	}
	if s.Replication == nil {
		return byPods
	}
	return deref(s.Replication.MinReplicasToWrite, byPods)
}

// ---- entry points (crates/api/src/validation/mod.rs) ----

// ValidateCreate: the name rules and the field rules.
func (p *Policy) ValidateCreate(r *Redis) Verdict {
	image := parseImage(r.Spec.image())
	return Verdict{Violations: p.objectViolations(r, image), Warnings: warnings(r, image)}
}

// ValidateUpdate: the same rules on the new object, ratcheted on the stored one's violations
// (same field and same effective value: a warning instead of a denial); before them the rules
// on changes that are never ratcheted (storage, TLS, ACL, restore).
func (p *Policy) ValidateUpdate(new, old *Redis) Verdict {
	image := parseImage(new.Spec.image())
	verdict := Verdict{Warnings: warnings(new, image)}
	verdict.Violations = append(verdict.Violations, storageUpdateViolations(&new.Spec, &old.Spec)...)
	verdict.Warnings = append(verdict.Warnings, storageUpdateWarnings(&new.Spec, &old.Spec)...)
	verdict.Violations = append(verdict.Violations, tlsUpdateViolations(&new.Spec, &old.Spec)...)
	verdict.Warnings = append(verdict.Warnings, tlsUpdateWarnings(&new.Spec, &old.Spec)...)
	verdict.Violations = append(verdict.Violations, aclUpdateViolations(&new.Spec, &old.Spec)...)
	verdict.Violations = append(verdict.Violations, restoreUpdateViolations(&new.Spec, &old.Spec)...)
	violations := p.objectViolations(new, image)
	if len(violations) == 0 {
		return verdict
	}
	stored := p.objectViolations(old, parseImage(old.Spec.image()))
	for _, v := range violations {
		ratcheted := false
		for _, s := range stored {
			if s.Field == v.Field && s.Value == v.Value {
				ratcheted = true
				break
			}
		}
		if ratcheted {
			verdict.Warnings = append(verdict.Warnings, v.String()+ratchetNote)
		} else {
			verdict.Violations = append(verdict.Violations, v)
		}
	}
	return verdict
}

// ValidateDelete: refused while the deletion-protection annotation is "true".
func (p *Policy) ValidateDelete(old *Redis) Verdict {
	var verdict Verdict
	value, ok := old.Annotations[deletionProtectionAnnotation]
	if ok && asciiEqualFold(strings.TrimSpace(value), "true") {
		name := "<name>"
		if old.Name != "" {
			name = shown(old.Name)
		}
		verdict.Violations = append(verdict.Violations, Violation{
			Field: "metadata.annotations[" + deletionProtectionAnnotation + "]",
			Value: "true",
			Message: fmt.Sprintf("deletion is refused while this annotation is \"true\" (remove it first: kubectl annotate redis/%s %s-)",
				name, deletionProtectionAnnotation),
		})
	}
	return verdict
}

// ValidateScale: UPDATE of redis/scale, the spec.replicas rules ratcheted on the stored Scale.
func (p *Policy) ValidateScale(replicas int32, stored *int32) Verdict {
	var verdict Verdict
	for _, v := range p.replicasViolations(replicas, true) {
		if stored != nil && *stored == replicas {
			verdict.Warnings = append(verdict.Warnings, v.String()+ratchetNote)
		} else {
			verdict.Violations = append(verdict.Violations, v)
		}
	}
	if replicas == 0 {
		verdict.Warnings = append(verdict.Warnings, "spec.replicas: 0 runs no Redis pods")
	}
	return verdict
}

func (p *Policy) objectViolations(r *Redis, image parsedImage) []Violation {
	violations := p.nameViolations(r)
	violations = append(violations, serviceNameViolations(r, min(p.MaxReplicas, schemaMaxReplicas))...)
	return append(violations, p.specViolations(r, image)...)
}

func (p *Policy) specViolations(r *Redis, image parsedImage) []Violation {
	spec := &r.Spec
	defaulted := func(set bool) string {
		if set {
			return ""
		}
		return " (the default)"
	}
	violations := p.replicasViolations(spec.replicas(), spec.Replicas != nil)
	if image.problem != "" {
		violations = append(violations, Violation{"spec.image", image.problem, spec.image()})
	}
	port := spec.port()
	lowest := max(p.MinPort, schemaMinPort)
	if port < lowest {
		violations = append(violations, Violation{"spec.port",
			fmt.Sprintf("must be >= %d, got %d%s", lowest, port, defaulted(spec.Port != nil)), itoa(port)})
	}
	if port > schemaMaxPort {
		violations = append(violations, Violation{"spec.port", fmt.Sprintf("must be <= %d, got %d", schemaMaxPort, port), itoa(port)})
	}
	violations = append(violations, replicationViolations(spec)...)
	violations = append(violations, authViolations(spec)...)
	violations = append(violations, pdbViolations(spec)...)
	violations = append(violations, storageViolations(spec)...)
	violations = append(violations, exporterViolations(spec)...)
	violations = append(violations, placementViolations(spec)...)
	violations = append(violations, networkPolicyViolations(spec)...)
	violations = append(violations, tlsViolations(spec, lowest)...)
	violations = append(violations, aclViolations(spec)...)
	violations = append(violations, configViolations(spec)...)
	violations = append(violations, serviceViolations(spec)...)
	violations = append(violations, backupViolations(spec)...)
	return violations
}

// warnings: allowed but unwise, in redis-webhook's order.
func warnings(r *Redis, image parsedImage) []string {
	spec := &r.Spec
	var out []string
	if image.problem == "" && image.latest {
		how := "has no tag, so it means :latest"
		if strings.HasSuffix(spec.image(), ":latest") {
			how = "uses the :latest tag"
		}
		out = append(out, fmt.Sprintf("spec.image: \"%s\" %s; pods created at different times may run different Redis versions, pin a version", shown(spec.image()), how))
	}
	if spec.Replicas != nil && *spec.Replicas == 0 {
		out = append(out, "spec.replicas: 0 runs no Redis pods")
	}
	out = append(out, replicationWarnings(spec)...)
	out = append(out, placementWarnings(r)...)
	out = append(out, networkPolicyWarnings(spec)...)
	out = append(out, tlsWarnings(spec)...)
	out = append(out, aclWarnings(spec)...)
	out = append(out, configWarnings(spec)...)
	return append(out, serviceWarnings(spec)...)
}

func (p *Policy) replicasViolations(replicas int32, set bool) []Violation {
	var violations []Violation
	defaulted := ""
	if !set {
		defaulted = " (the default)"
	}
	if replicas < 0 {
		violations = append(violations, Violation{"spec.replicas", fmt.Sprintf("must be >= 0, got %d", replicas), itoa(replicas)})
	}
	highest := min(p.MaxReplicas, schemaMaxReplicas)
	if replicas > highest {
		violations = append(violations, Violation{"spec.replicas",
			fmt.Sprintf("must be <= %d, got %d%s", highest, replicas, defaulted), itoa(replicas)})
	}
	return violations
}

// ---- metadata (validation/meta.rs) ----

func (p *Policy) nameViolations(r *Redis) []Violation {
	var violations []Violation
	switch name, prefix := r.Name, r.GenerateName; {
	case name != "":
		for _, reserved := range p.ReservedNames {
			if reserved == name {
				violations = append(violations, Violation{"metadata.name", fmt.Sprintf("\"%s\" is a reserved name", shown(name)), name})
				break
			}
		}
		if len(name) > maxNameLength {
			violations = append(violations, Violation{"metadata.name",
				fmt.Sprintf("must be no more than %d characters (it becomes a pod label value), got %d", maxNameLength, len(name)), name})
		}
	case prefix != "" && len(prefix)+generatedSuffixLength > maxNameLength:
		violations = append(violations, Violation{"metadata.generateName",
			fmt.Sprintf("must be no more than %d characters so the generated name fits in %d, got %d",
				maxNameLength-generatedSuffixLength, maxNameLength, len(prefix)), prefix})
	}
	return violations
}

// ---- Replication mode (validation/replication.rs) ----

func replicationViolations(spec *RedisSpec) []Violation {
	var violations []Violation
	replicas := spec.replicas()
	if spec.mode() == ModeReplication && replicas < 1 {
		violations = append(violations, Violation{"spec.replicas",
			fmt.Sprintf("must be >= 1 in Replication mode (one pod is the primary), got %d", replicas),
			fmt.Sprintf("%d in Replication mode", replicas)})
	}
	r := spec.Replication
	if r == nil {
		return violations
	}
	if n := r.MinReplicasToWrite; n != nil && *n < 0 {
		violations = append(violations, Violation{"spec.replication.minReplicasToWrite", fmt.Sprintf("must be >= 0, got %d", *n), itoa(*n)})
	}
	if lag := r.MinReplicasMaxLag; lag != nil && *lag < 1 {
		violations = append(violations, Violation{"spec.replication.minReplicasMaxLag", fmt.Sprintf("must be >= 1 (seconds), got %d", *lag), itoa(*lag)})
	}
	if text := r.FailoverAfter; text != nil {
		if problem := failoverAfterProblem(*text); problem != "" {
			violations = append(violations, Violation{"spec.replication.failoverAfter", problem, rustQuote(*text)})
		}
	}
	return violations
}

func failoverAfterProblem(text string) string {
	d, err := parseHumanDuration(strings.TrimSpace(text))
	if err != nil {
		return fmt.Sprintf("must be a duration such as \"10s\", \"1m30s\" or \"1h\", got \"%s\"", shown(text))
	}
	if d.sec < 1 || d.sec > 3600 || (d.sec == 3600 && d.nsec > 0) {
		return fmt.Sprintf("must be between 1s and 1h, got \"%s\"", shown(text))
	}
	return ""
}

func replicationWarnings(spec *RedisSpec) []string {
	var out []string
	if spec.mode() != ModeReplication {
		if spec.Replication != nil {
			out = append(out, "spec.replication: ignored in Standalone mode (set spec.mode: Replication to use it)")
		}
		return out
	}
	replicas := spec.replicas()
	if replicas == 1 {
		out = append(out, "spec.replicas: 1 in Replication mode runs only the primary, so no failover is possible; use at least 2 (3 to survive losing one pod with a replica to spare)")
	}
	if spec.Auth == nil {
		out = append(out, "spec.auth: not set in Replication mode, so any pod that can reach the pods can read and write (and replicate or reconfigure them); set spec.auth.secretRef to a Secret holding a password, and spec.networkPolicy to choose who can reach them")
	}
	toWrite := spec.minReplicasToWrite()
	available := replicas - 1
	if replicas == math.MinInt32 {
		available = math.MinInt32 // saturating_sub
	}
	if replicas >= 1 && toWrite > available {
		out = append(out, fmt.Sprintf("spec.replication.minReplicasToWrite: %d is more than the %d replica(s) of %d pods, so writes will be refused", toWrite, available, replicas))
	}
	if replicas >= 2 && toWrite == 0 {
		which := fmt.Sprintf("0 (the default below %d pods)", minReplicasToWriteFromPods)
		if spec.Replication != nil && spec.Replication.MinReplicasToWrite != nil {
			which = "0"
		}
		out = append(out, fmt.Sprintf("spec.replication.minReplicasToWrite: %s lets a primary cut off from its replicas keep accepting writes, which a failover to a replica then discards; set it to 1 so that such a primary refuses writes after minReplicasMaxLag seconds (writes then also wait for a connected replica), or run %d or more pods, where 1 is the default", which, minReplicasToWriteFromPods))
	}
	return out
}

// ---- spec.auth (validation/auth.rs) ----

func authViolations(spec *RedisSpec) []Violation {
	var violations []Violation
	if spec.Auth == nil {
		return violations
	}
	name, key := spec.Auth.SecretRef.Name, deref(spec.Auth.SecretRef.Key, defaultSecretKey)
	if problem := secretNameProblem(name); problem != "" {
		violations = append(violations, Violation{"spec.auth.secretRef.name", problem, rustQuote(name)})
	}
	if problem := secretKeyProblem(key); problem != "" {
		violations = append(violations, Violation{"spec.auth.secretRef.key", problem, rustQuote(key)})
	}
	return violations
}

func secretNameProblem(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if len(name) > maxSecretNameLength {
		return fmt.Sprintf("must be no more than %d characters, got %d", maxSecretNameLength, len(name))
	}
	if !isDNS1123Subdomain(name) {
		return fmt.Sprintf("must be a valid Secret name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"%s\"", shown(name))
	}
	return ""
}

func secretKeyProblem(key string) string {
	if key == "" {
		return "must not be empty"
	}
	if len(key) > maxSecretKeyLength {
		return fmt.Sprintf("must be no more than %d characters, got %d", maxSecretKeyLength, len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !(isAlnum(c) || c == '-' || c == '_' || c == '.') {
			return fmt.Sprintf("must be a valid Secret key (letters, digits, '-', '_' and '.'), got \"%s\"", shown(key))
		}
	}
	if key == "." || strings.HasPrefix(key, "..") {
		return fmt.Sprintf("must not be '.' or start with '..', got \"%s\"", shown(key))
	}
	return ""
}

// ---- spec.podDisruptionBudget (validation/pdb.rs) ----

func pdbViolations(spec *RedisSpec) []Violation {
	if spec.PodDisruptionBudget == nil || spec.PodDisruptionBudget.MaxUnavailable == nil {
		return nil
	}
	const field = "spec.podDisruptionBudget.maxUnavailable"
	max := spec.PodDisruptionBudget.MaxUnavailable
	if max.Type == intstr.Int {
		if max.IntVal < 0 {
			return []Violation{{field, fmt.Sprintf("must be >= 0, got %d", max.IntVal), itoa(max.IntVal)}}
		}
		return nil
	}
	if p, ok := percentage(max.StrVal); ok && p <= 100 {
		return nil
	}
	return []Violation{{field,
		fmt.Sprintf("must be a number >= 0 or a percentage between \"0%%\" and \"100%%\", got \"%s\"", shown(max.StrVal)),
		rustQuote(max.StrVal)}}
}

func percentage(text string) (uint64, bool) {
	digits, ok := strings.CutSuffix(text, "%")
	if !ok || digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return math.MaxUint64, true
	}
	return n, true
}

// ---- images (validation/image.rs) ----

// parsedImage: why an image is refused ("" when it is valid), and whether it means :latest.
type parsedImage struct {
	problem string
	latest  bool
}

// parseImage reads an image reference with distribution's grammar, as container runtimes do.
// redis-webhook (a port of the same grammar) says "invalid reference format" where
// distribution's Parse says "repository name must be lowercase" (its extra guess), so that one
// message is mapped back.
func parseImage(image string) parsedImage {
	if image == "" {
		return parsedImage{problem: "must not be empty"}
	}
	ref, err := reference.Parse(image)
	if err != nil {
		if errors.Is(err, reference.ErrNameContainsUppercase) {
			err = reference.ErrReferenceInvalidFormat
		}
		return parsedImage{problem: fmt.Sprintf("\"%s\" is not a valid image reference: %v", shown(image), err)}
	}
	_, digested := ref.(reference.Digested)
	tagged, isTagged := ref.(reference.Tagged)
	return parsedImage{latest: !digested && (!isTagged || tagged.Tag() == "latest")}
}

// ---- small helpers ----

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	lower := func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T, fallback T) T {
	if p == nil {
		return fallback
	}
	return *p
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }
