package main

// The rules on pod placement (crates/api/src/validation/placement.rs): spec.nodeSelector,
// affinity, tolerations, topologySpreadConstraints, priorityClassName, podLabels and
// podAnnotations, and the warnings about a Replication Redis held on one node and spread
// constraints that count no pod.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	maxAnnotationsBytes = 256 * 1024
	nodeNameField       = "metadata.name"
	hostnameTopologyKey = "kubernetes.io/hostname"
	operatorKeyPrefix   = "myapp.tangx.in/"
)

// sortedKeys: Rust's BTreeMap iterates its keys in order; a Go map does not.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isOperatorLabel(key string) bool {
	switch key {
	case "app", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by":
		return true
	}
	return strings.HasPrefix(key, operatorKeyPrefix)
}

func isOperatorAnnotation(key string) bool { return strings.HasPrefix(key, operatorKeyPrefix) }

func placementViolations(spec *RedisSpec) []Violation {
	var out []Violation
	for _, key := range sortedKeys(spec.NodeSelector) {
		labelPair(fmt.Sprintf("spec.nodeSelector[%s]", shown(key)), key, spec.NodeSelector[key], &out)
	}
	if spec.Affinity != nil {
		affinityViolations(spec.Affinity, &out)
	}
	for i := range spec.Tolerations {
		tolerationViolations(fmt.Sprintf("spec.tolerations[%d]", i), &spec.Tolerations[i], &out)
	}
	for i := range spec.TopologySpreadConstraints {
		spreadViolations(i, &spec.TopologySpreadConstraints[i], spec.TopologySpreadConstraints[:i], &out)
	}
	if name := spec.PriorityClassName; name != nil {
		if message := subdomainProblem(*name); message != "" {
			out = append(out, Violation{"spec.priorityClassName", message, rustQuote(*name)})
		}
	}
	for _, key := range sortedKeys(spec.PodLabels) {
		field := fmt.Sprintf("spec.podLabels[%s]", shown(key))
		if isOperatorLabel(key) {
			out = append(out, Violation{field, fmt.Sprintf("\"%s\" is a label the operator sets on its pods (its selectors, Services and roles read it); choose another key", shown(key)), key})
		} else {
			labelPair(field, key, spec.PodLabels[key], &out)
		}
	}
	if spec.PodAnnotations != nil {
		bytes := 0
		for _, key := range sortedKeys(spec.PodAnnotations) {
			field := fmt.Sprintf("spec.podAnnotations[%s]", shown(key))
			if isOperatorAnnotation(key) {
				out = append(out, Violation{field, fmt.Sprintf("\"%s\" is the operator's own (every %s key is); choose another key", shown(key), operatorKeyPrefix), key})
			} else if message := annotationKeyProblem(key); message != "" {
				out = append(out, Violation{field, message, key})
			}
			bytes += len(key) + len(spec.PodAnnotations[key])
		}
		if bytes > maxAnnotationsBytes {
			out = append(out, Violation{"spec.podAnnotations",
				fmt.Sprintf("must be no more than %d bytes in total (keys and values), got %d", maxAnnotationsBytes, bytes), strconv.Itoa(bytes)})
		}
	}
	return out
}

func labelPair(field, key, value string, out *[]Violation) {
	if message := labelKeyProblem(key); message != "" {
		*out = append(*out, Violation{field, message, key})
	}
	if message := labelValueProblem(value); message != "" {
		*out = append(*out, Violation{field, message, rustQuote(key) + "=" + rustQuote(value)})
	}
}

func affinityViolations(affinity *corev1.Affinity, out *[]Violation) {
	if node := affinity.NodeAffinity; node != nil {
		const base = "spec.affinity.nodeAffinity"
		if required := node.RequiredDuringSchedulingIgnoredDuringExecution; required != nil {
			field := base + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
			terms := required.NodeSelectorTerms
			allEmpty := true
			for i := range terms {
				allEmpty = allEmpty && len(terms[i].MatchExpressions) == 0 && len(terms[i].MatchFields) == 0
			}
			if len(terms) == 0 {
				*out = append(*out, Violation{field, "must hold at least one term: with none no node matches, so the pods could never be scheduled", "[]"})
			} else if allEmpty {
				*out = append(*out, Violation{field, "every term is empty, and an empty term matches no node, so the pods could never be scheduled", fmt.Sprintf("%d empty term(s)", len(terms))})
			}
			for i := range terms {
				nodeTermViolations(fmt.Sprintf("%s[%d]", field, i), &terms[i], out)
			}
		}
		for i, term := range node.PreferredDuringSchedulingIgnoredDuringExecution {
			field := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", base, i)
			weightViolation(field, term.Weight, out)
			nodeTermViolations(field+".preference", &term.Preference, out)
		}
	}
	if pod := affinity.PodAffinity; pod != nil {
		podTermsViolations("spec.affinity.podAffinity", pod.RequiredDuringSchedulingIgnoredDuringExecution, pod.PreferredDuringSchedulingIgnoredDuringExecution, out)
	}
	if anti := affinity.PodAntiAffinity; anti != nil {
		podTermsViolations("spec.affinity.podAntiAffinity", anti.RequiredDuringSchedulingIgnoredDuringExecution, anti.PreferredDuringSchedulingIgnoredDuringExecution, out)
	}
}

func nodeTermViolations(field string, term *corev1.NodeSelectorTerm, out *[]Violation) {
	for j := range term.MatchExpressions {
		nodeRequirementViolations(fmt.Sprintf("%s.matchExpressions[%d]", field, j), &term.MatchExpressions[j], out)
	}
	for j := range term.MatchFields {
		nodeFieldViolations(fmt.Sprintf("%s.matchFields[%d]", field, j), &term.MatchFields[j], out)
	}
}

func nodeRequirementViolations(field string, r *corev1.NodeSelectorRequirement, out *[]Violation) {
	if message := labelKeyProblem(r.Key); message != "" {
		*out = append(*out, Violation{field + ".key", message, r.Key})
	}
	values := r.Values
	listed := shownList(values)
	written := rustQuoteList(values)
	operator := string(r.Operator)
	problem := ""
	switch operator {
	case "In", "NotIn":
		if len(values) == 0 {
			problem = fmt.Sprintf("must hold at least one value when the operator is %s", operator)
		}
	case "Exists", "DoesNotExist":
		if len(values) != 0 {
			problem = fmt.Sprintf("must be empty when the operator is %s (it matches on the key alone), got %s", operator, listed)
		}
	case "Gt", "Lt":
		if len(values) != 1 || !isInteger(values[0]) {
			problem = fmt.Sprintf("must hold exactly one value, an integer, when the operator is %s, got %s", operator, listed)
		}
	default:
		*out = append(*out, Violation{field + ".operator", fmt.Sprintf("must be In, NotIn, Exists, DoesNotExist, Gt or Lt, got \"%s\"", shown(operator)), rustQuote(operator)})
	}
	if problem != "" {
		*out = append(*out, Violation{field + ".values", problem, operator + " " + written})
	}
}

func nodeFieldViolations(field string, r *corev1.NodeSelectorRequirement, out *[]Violation) {
	if r.Key != nodeNameField {
		*out = append(*out, Violation{field + ".key", fmt.Sprintf("must be %s (the only node field a selector can match), got \"%s\"", nodeNameField, shown(r.Key)), r.Key})
	}
	operator := string(r.Operator)
	if operator != "In" && operator != "NotIn" {
		*out = append(*out, Violation{field + ".operator", fmt.Sprintf("must be In or NotIn for a node field, got \"%s\"", shown(operator)), rustQuote(operator)})
	} else if len(r.Values) != 1 {
		*out = append(*out, Violation{field + ".values", fmt.Sprintf("must hold exactly one node name for a node field, got %s", shownList(r.Values)), operator + " " + rustQuoteList(r.Values)})
	}
}

func podTermsViolations(base string, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, out *[]Violation) {
	for i := range required {
		podTermViolations(fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", base, i), &required[i], out)
	}
	for i := range preferred {
		field := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", base, i)
		weightViolation(field, preferred[i].Weight, out)
		podTermViolations(field+".podAffinityTerm", &preferred[i].PodAffinityTerm, out)
	}
}

func podTermViolations(field string, term *corev1.PodAffinityTerm, out *[]Violation) {
	if term.LabelSelector != nil {
		selectorViolations(field+".labelSelector", term.LabelSelector, out)
	}
	if term.NamespaceSelector != nil {
		selectorViolations(field+".namespaceSelector", term.NamespaceSelector, out)
	}
	topologyKeyViolation(field+".topologyKey", term.TopologyKey, out)
}

func topologyKeyViolation(field, key string, out *[]Violation) {
	if key == "" {
		*out = append(*out, Violation{field, fmt.Sprintf("must not be empty: it names the node label whose nodes count as one domain, such as %s", hostnameTopologyKey), `""`})
	} else if message := labelKeyProblem(key); message != "" {
		*out = append(*out, Violation{field, message, key})
	}
}

func weightViolation(field string, weight int32, out *[]Violation) {
	if weight < 1 || weight > 100 {
		*out = append(*out, Violation{field + ".weight", fmt.Sprintf("must be between 1 and 100, got %d", weight), itoa(weight)})
	}
}

// selectorViolations: a label selector (of pods or namespaces) with valid labels and
// requirements that can match.
func selectorViolations(field string, selector *metav1.LabelSelector, out *[]Violation) {
	for _, key := range sortedKeys(selector.MatchLabels) {
		labelPair(fmt.Sprintf("%s.matchLabels[%s]", field, shown(key)), key, selector.MatchLabels[key], out)
	}
	for j := range selector.MatchExpressions {
		labelRequirementViolations(fmt.Sprintf("%s.matchExpressions[%d]", field, j), &selector.MatchExpressions[j], out)
	}
}

func labelRequirementViolations(field string, r *metav1.LabelSelectorRequirement, out *[]Violation) {
	if message := labelKeyProblem(r.Key); message != "" {
		*out = append(*out, Violation{field + ".key", message, r.Key})
	}
	values := r.Values
	operator := string(r.Operator)
	problem := ""
	switch operator {
	case "In", "NotIn":
		if len(values) == 0 {
			problem = fmt.Sprintf("must hold at least one value when the operator is %s", operator)
		}
	case "Exists", "DoesNotExist":
		if len(values) != 0 {
			problem = fmt.Sprintf("must be empty when the operator is %s (it matches on the key alone), got %s", operator, shownList(values))
		}
	default:
		*out = append(*out, Violation{field + ".operator", fmt.Sprintf("must be In, NotIn, Exists or DoesNotExist, got \"%s\"", shown(operator)), rustQuote(operator)})
	}
	if problem != "" {
		*out = append(*out, Violation{field + ".values", problem, operator + " " + rustQuoteList(values)})
	}
	for _, value := range values {
		if message := labelValueProblem(value); message != "" {
			*out = append(*out, Violation{field + ".values", message, rustQuote(value)})
		}
	}
}

func tolerationViolations(field string, t *corev1.Toleration, out *[]Violation) {
	key, value, effect, operator := t.Key, t.Value, string(t.Effect), string(t.Operator)
	if key != "" {
		if message := labelKeyProblem(key); message != "" {
			*out = append(*out, Violation{field + ".key", message, key})
		}
	}
	switch {
	case key == "" && (operator == "" || operator == "Equal" || operator == "Gt" || operator == "Lt"):
		named := operator
		if named == "" {
			named = "Equal"
		}
		*out = append(*out, Violation{field + ".operator",
			fmt.Sprintf("must be Exists when no key is given (a toleration of every taint), got %s", rustQuote(named)),
			rustQuote(operator) + " with no key"})
	case operator == "" || operator == "Equal":
		if message := labelValueProblem(value); message != "" {
			*out = append(*out, Violation{field + ".value", message, rustQuote(value)})
		}
	case operator == "Exists":
		if value != "" {
			*out = append(*out, Violation{field + ".value",
				fmt.Sprintf("must be empty when the operator is Exists (it tolerates every value of the key), got \"%s\"", shown(value)), rustQuote(value)})
		}
	case operator == "Gt" || operator == "Lt":
		if !isInteger(value) {
			*out = append(*out, Violation{field + ".value", fmt.Sprintf("must be an integer when the operator is %s, got \"%s\"", operator, shown(value)), rustQuote(value)})
		}
	default:
		*out = append(*out, Violation{field + ".operator", fmt.Sprintf("must be Equal, Exists, Gt or Lt, got \"%s\"", shown(operator)), rustQuote(operator)})
	}
	switch effect {
	case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
	default:
		*out = append(*out, Violation{field + ".effect",
			fmt.Sprintf("must be NoSchedule, PreferNoSchedule or NoExecute (or empty for every effect), got \"%s\"", shown(effect)), rustQuote(effect)})
	}
	if t.TolerationSeconds != nil && effect != "NoExecute" {
		*out = append(*out, Violation{field + ".tolerationSeconds",
			fmt.Sprintf("needs effect NoExecute (it is how long a pod stays on a node tainted NoExecute), got effect \"%s\"", shown(effect)),
			fmt.Sprintf("%d with effect %s", *t.TolerationSeconds, rustQuote(effect))})
	}
}

func spreadViolations(i int, c *corev1.TopologySpreadConstraint, earlier []corev1.TopologySpreadConstraint, out *[]Violation) {
	field := fmt.Sprintf("spec.topologySpreadConstraints[%d]", i)
	if c.MaxSkew < 1 {
		*out = append(*out, Violation{field + ".maxSkew", fmt.Sprintf("must be >= 1, got %d", c.MaxSkew), itoa(c.MaxSkew)})
	}
	topologyKeyViolation(field+".topologyKey", c.TopologyKey, out)
	when := string(c.WhenUnsatisfiable)
	if when != "DoNotSchedule" && when != "ScheduleAnyway" {
		*out = append(*out, Violation{field + ".whenUnsatisfiable", fmt.Sprintf("must be DoNotSchedule or ScheduleAnyway, got \"%s\"", shown(when)), rustQuote(when)})
	}
	if m := c.MinDomains; m != nil {
		if *m < 1 {
			*out = append(*out, Violation{field + ".minDomains", fmt.Sprintf("must be >= 1, got %d", *m), itoa(*m)})
		} else if when != "DoNotSchedule" {
			*out = append(*out, Violation{field + ".minDomains", fmt.Sprintf("can only be set with whenUnsatisfiable DoNotSchedule, got \"%s\"", shown(when)), fmt.Sprintf("%d with %s", *m, rustQuote(when))})
		}
	}
	for _, p := range []struct {
		name   string
		policy *corev1.NodeInclusionPolicy
	}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
		if p.policy != nil && *p.policy != "Honor" && *p.policy != "Ignore" {
			*out = append(*out, Violation{field + "." + p.name, fmt.Sprintf("must be Honor or Ignore, got \"%s\"", shown(string(*p.policy))), rustQuote(string(*p.policy))})
		}
	}
	for k := range earlier {
		if earlier[k].TopologyKey == c.TopologyKey && earlier[k].WhenUnsatisfiable == c.WhenUnsatisfiable {
			*out = append(*out, Violation{field,
				fmt.Sprintf("repeats the topologyKey and whenUnsatisfiable of spec.topologySpreadConstraints[%d] (\"%s\", \"%s\"); merge them", k, shown(c.TopologyKey), shown(when)),
				rustQuote(c.TopologyKey) + " " + rustQuote(when)})
			break
		}
	}
	if c.LabelSelector != nil {
		selectorViolations(field+".labelSelector", c.LabelSelector, out)
	}
}

// isInteger: a decimal integer as the scheduler reads one (an optional '-', digits, 64 bits).
func isInteger(text string) bool {
	if strings.HasPrefix(text, "+") {
		return false
	}
	_, err := strconv.ParseInt(text, 10, 64)
	return err == nil
}

func placementWarnings(r *Redis) []string {
	spec := &r.Spec
	var out []string
	for i := range spec.TopologySpreadConstraints {
		if spec.TopologySpreadConstraints[i].LabelSelector == nil {
			name := "<name>"
			if r.Name != "" {
				name = shown(r.Name)
			}
			out = append(out, fmt.Sprintf("spec.topologySpreadConstraints[%d].labelSelector: not set, so the constraint counts no pods and spreads nothing; select this Redis's pods, e.g. app.kubernetes.io/instance: %s", i, name))
		}
	}
	replicas := spec.replicas()
	if spec.mode() != ModeReplication || replicas < 2 {
		return out
	}
	oneNode := func(field, how string) string {
		return fmt.Sprintf("%s: %s, so the %d pods of this Replication Redis share one node: losing it loses the primary and every replica at once", field, how, replicas)
	}
	if node, ok := spec.NodeSelector[hostnameTopologyKey]; ok {
		out = append(out, oneNode(fmt.Sprintf("spec.nodeSelector[%s]", hostnameTopologyKey), fmt.Sprintf("pins every pod to node \"%s\"", shown(node))))
	}
	affinity := spec.Affinity
	if affinity != nil && affinity.NodeAffinity != nil && affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if nodes, ok := pinnedNodes(affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms); ok && len(nodes) == 1 {
			out = append(out, oneNode("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", fmt.Sprintf("allows node \"%s\" only", shown(nodes[0]))))
		}
	}
	if affinity != nil && affinity.PodAffinity != nil {
		labels := ownPodLabels(r)
		for i := range affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			term := &affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
			if term.TopologyKey == hostnameTopologyKey && labels != nil && selectsOwnPods(r, term, labels) {
				out = append(out, oneNode(fmt.Sprintf("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[%d]", i),
					fmt.Sprintf("requires each pod on the node of another pod of this Redis (%s)", hostnameTopologyKey)))
			}
		}
	}
	return out
}

// pinnedNodes: the nodes a required node affinity allows when every one of its terms names them
// (sorted); false when some term allows nodes by anything else.
func pinnedNodes(terms []corev1.NodeSelectorTerm) ([]string, bool) {
	nodes := map[string]bool{}
	for _, term := range terms {
		var allowed map[string]bool
		pin := func(r corev1.NodeSelectorRequirement) {
			named := map[string]bool{}
			for _, v := range r.Values {
				named[v] = true
			}
			if allowed == nil {
				allowed = named
				return
			}
			for v := range allowed {
				if !named[v] {
					delete(allowed, v)
				}
			}
		}
		for _, r := range term.MatchExpressions {
			if r.Key == hostnameTopologyKey && r.Operator == "In" {
				pin(r)
			}
		}
		for _, r := range term.MatchFields {
			if r.Key == nodeNameField && r.Operator == "In" {
				pin(r)
			}
		}
		if allowed == nil {
			return nil, false
		}
		for v := range allowed {
			nodes[v] = true
		}
	}
	out := make([]string, 0, len(nodes))
	for v := range nodes {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, true
}

// ownPodLabels: the labels every pod of the Redis carries from its creation (nil without a name).
func ownPodLabels(r *Redis) map[string]string {
	if r.Name == "" {
		return nil
	}
	labels := copyMap(r.Spec.PodLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/name"] = "redis"
	labels["app.kubernetes.io/instance"] = r.Name
	labels["app.kubernetes.io/managed-by"] = "redis-operator"
	labels["app"] = r.Name
	return labels
}

func selectsOwnPods(r *Redis, term *corev1.PodAffinityTerm, labels map[string]string) bool {
	ownNamespace := true
	switch {
	case term.NamespaceSelector != nil:
		ownNamespace = len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0
	case len(term.Namespaces) != 0:
		// The Redis's namespace, as redis-webhook reads the object: it keeps only the name,
		// generateName and the deletion-protection annotation of the metadata, so a term naming
		// namespaces never counts as its own (kept here to answer alike).
		ownNamespace = false
	}
	return ownNamespace && term.LabelSelector != nil && selectorMatches(term.LabelSelector, labels)
}

func selectorMatches(selector *metav1.LabelSelector, labels map[string]string) bool {
	for k, v := range selector.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range selector.MatchExpressions {
		value, has := labels[r.Key]
		in := false
		for _, v := range r.Values {
			in = in || (has && v == value)
		}
		ok := false
		switch r.Operator {
		case "In":
			ok = in
		case "NotIn":
			ok = !in
		case "Exists":
			ok = has
		case "DoesNotExist":
			ok = !has
		}
		if !ok {
			return false
		}
	}
	return true
}
