package main

// The rules on spec.acl (crates/api/src/validation/acl.rs), with the grammar of a user's rules
// as crates/api/src/acl.rs reads them (ACL SETUSER of Redis 7).

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// ---- spec.acl ----

const (
	maxUsers          = 32
	maxUserNameLength = 64
	maxRulesLength    = 4096
)

var (
	reservedUsers = []string{"default", "redis-operator", "masteruser"}
	aclCategories = []string{"all", "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
		"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
		"transaction", "scripting"}
)

func (a *ACLSpec) defaultUserDisabled() bool {
	return a.DefaultUser != nil && *a.DefaultUser == "Disabled"
}

func (u *ACLUser) secret() (string, string) {
	return u.PasswordSecretRef.Name, deref(u.PasswordSecretRef.Key, "password")
}

func aclViolations(spec *RedisSpec) []Violation {
	acl := spec.ACL
	if acl == nil {
		return nil
	}
	var out []Violation
	if len(acl.Users) > maxUsers {
		out = append(out, Violation{"spec.acl.users", fmt.Sprintf("must list at most %d users, got %d", maxUsers, len(acl.Users)), strconv.Itoa(len(acl.Users))})
	}
	for i := range acl.Users {
		user := &acl.Users[i]
		field := func(f string) string { return fmt.Sprintf("spec.acl.users[%d].%s", i, f) }
		if problem := userNameProblem(user.Name); problem != "" {
			out = append(out, Violation{field("name"), problem, user.Name})
		}
		for _, earlier := range acl.Users[:i] {
			if earlier.Name == user.Name {
				out = append(out, Violation{field("name"), fmt.Sprintf("user \"%s\" is listed twice", shown(user.Name)), user.Name})
				break
			}
		}
		if _, problem := parseRules(user.Rules); problem != "" {
			out = append(out, Violation{field("rules"), problem, user.Rules})
		}
		name, key := user.secret()
		if problem := secretNameProblem(name); problem != "" {
			out = append(out, Violation{field("passwordSecretRef.name"), problem, rustQuote(name)})
		}
		if problem := secretKeyProblem(key); problem != "" {
			out = append(out, Violation{field("passwordSecretRef.key"), problem, rustQuote(key)})
		}
	}
	return out
}

func aclWarnings(spec *RedisSpec) []string {
	acl := spec.ACL
	if acl == nil {
		return nil
	}
	var out []string
	for i, user := range acl.Users {
		unknown, problem := parseRules(user.Rules)
		if problem != "" || len(unknown) == 0 {
			continue
		}
		named := make([]string, len(unknown))
		for j, c := range unknown {
			named[j] = "@" + shown(c)
		}
		out = append(out, fmt.Sprintf("spec.acl.users[%d].rules: %s not a category of Redis 7 (%s); a server without it refuses the user", i, strings.Join(named, ", "), strings.Join(aclCategories, ", ")))
	}
	if acl.defaultUserDisabled() && len(acl.Users) == 0 {
		out = append(out, "spec.acl: the default user is disabled and no user is listed: no client can log in")
	}
	if !acl.defaultUserDisabled() && spec.Auth == nil {
		out = append(out, "spec.acl: the default user is enabled without spec.auth: any client that reaches the pods logs in as it, with every right")
	}
	return out
}

func aclUpdateViolations(new, old *RedisSpec) []Violation {
	locked := old.ACL != nil && old.ACL.defaultUserDisabled()
	if new.ACL != nil || !locked || !(new.replicated() && old.replicated()) {
		return nil
	}
	return []Violation{{"spec.acl", "cannot be removed while spec.acl.defaultUser is Disabled on a Replication Redis with replicas: the pods without ACLs would replicate as the default user, which the others refuse; set defaultUser to Enabled first, then remove spec.acl", "unset"}}
}

func userNameProblem(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if len(name) > maxUserNameLength {
		return fmt.Sprintf("must be no more than %d characters, got %d", maxUserNameLength, len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(isAlnum(c) || c == '-' || c == '_' || c == '.') {
			return "must consist of letters, digits, '-', '_' and '.'"
		}
	}
	for _, r := range reservedUsers {
		if asciiEqualFold(r, name) {
			return "is reserved: " + strings.Join(reservedUsers, ", ") + " are the operator's users"
		}
	}
	return ""
}

// isASCIIWhitespace is Rust's char::is_ascii_whitespace (no vertical tab).
func isASCIIWhitespace(c rune) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\x0c' || c == '\r'
}

// parseRules checks a user's rules as ACL SETUSER reads them (crates/api/src/acl.rs's
// parse_rules): the categories Redis 7 does not know, or why the rules are refused.
func parseRules(rules string) ([]string, string) {
	if len(rules) > maxRulesLength {
		return nil, fmt.Sprintf("must be no more than %d characters, got %d", maxRulesLength, len(rules))
	}
	for _, c := range rules {
		if c == '"' || c == '\'' || c == '\\' || (unicode.Is(unicode.Cc, c) && !isASCIIWhitespace(c)) {
			return nil, "must not contain " + rustCharQuote(c)
		}
	}
	var unknown []string
	root := &selector{}
	tokens := strings.FieldsFunc(rules, isASCIIWhitespace)
	q := func(token string) string { return `"` + shown(token) + `"` }
	for t := 0; t < len(tokens); t++ {
		token := tokens[t]
		if strings.HasPrefix(token, "(") {
			parts := []string{token}
			for !strings.HasSuffix(parts[len(parts)-1], ")") {
				if t+1 >= len(tokens) {
					return nil, fmt.Sprintf("selector %s has no closing ')'", q(token))
				}
				t++
				parts = append(parts, tokens[t])
			}
			joined := strings.Join(parts, " ")
			inner := joined[1 : len(joined)-1]
			s := &selector{}
			for _, op := range strings.FieldsFunc(inner, isASCIIWhitespace) {
				if problem := s.apply(op, &unknown); problem != "" {
					return nil, problem
				}
			}
			continue
		}
		switch lower := asciiLower(token); {
		case lower == "on" || lower == "off" || lower == "sanitize-payload" || lower == "skip-sanitize-payload" || lower == "clearselectors":
		case lower == "reset":
			return nil, "must not contain \"reset\": every user starts from reset (no key, channel or command)"
		case lower == "nopass" || lower == "resetpass":
			return nil, fmt.Sprintf("must not contain %s: the password comes from passwordSecretRef", q(token))
		case strings.ContainsAny(token[:1], "><#!"):
			return nil, fmt.Sprintf("must not set passwords (%s...): the password comes from passwordSecretRef", rustQuote(token[:1]))
		case strings.HasSuffix(token, ")"):
			return nil, fmt.Sprintf("%s closes a selector never opened", q(token))
		default:
			if problem := root.apply(token, &unknown); problem != "" {
				return nil, problem
			}
		}
	}
	return unknown, ""
}

// selector: the key and channel state of one selector that decides whether a pattern is refused.
type selector struct{ allKeys, allChannels bool }

func (s *selector) apply(op string, unknown *[]string) string {
	q := func(token string) string { return `"` + shown(token) + `"` }
	lower := asciiLower(op)
	switch {
	case lower == "allkeys" || lower == "~*":
		s.allKeys = true
	case lower == "resetkeys":
		s.allKeys = false
	case lower == "allchannels" || lower == "&*":
		s.allChannels = true
	case lower == "resetchannels":
		s.allChannels = false
	case lower == "allcommands" || lower == "+@all" || lower == "nocommands" || lower == "-@all":
	case strings.HasPrefix(op, "~") || strings.HasPrefix(op, "%"):
		if s.allKeys {
			return fmt.Sprintf("%s: a key pattern after '~*' (or allkeys) has no effect; Redis refuses it (start with resetkeys)", q(op))
		}
		if rest, ok := strings.CutPrefix(op, "%"); ok {
			if why := keyPermission(rest); why != "" {
				return fmt.Sprintf("%s: %s", q(op), why)
			}
		}
	case strings.HasPrefix(op, "&"):
		if s.allChannels {
			return fmt.Sprintf("%s: a channel pattern after '&*' (or allchannels) has no effect; Redis refuses it (start with resetchannels)", q(op))
		}
	case strings.HasPrefix(op, "+@") || strings.HasPrefix(op, "-@"):
		category := lower[2:]
		if category == "" {
			return fmt.Sprintf("%s: no category after '@'", q(op))
		}
		known := false
		for _, c := range aclCategories {
			known = known || c == category
		}
		for _, c := range *unknown {
			known = known || c == category
		}
		if !known {
			*unknown = append(*unknown, category)
		}
	case strings.HasPrefix(op, "+") || strings.HasPrefix(op, "-"):
		if why := commandProblem(op[1:]); why != "" {
			return fmt.Sprintf("%s: %s", q(op), why)
		}
	default:
		return fmt.Sprintf("%s is not an ACL rule (on, off, ~pattern, %%R~pattern, &pattern, +command, -command, +@category, -@category, allkeys, resetkeys, allchannels, resetchannels, allcommands, nocommands, (selector), clearselectors)", q(op))
	}
	return ""
}

func keyPermission(rest string) string {
	flags, _, ok := strings.Cut(rest, "~")
	if !ok {
		return "a key permission is %R~, %W~ or %RW~ followed by a pattern"
	}
	var r, w bool
	for _, flag := range flags {
		upper := flag
		if 'a' <= flag && flag <= 'z' {
			upper = flag - 'a' + 'A'
		}
		switch upper {
		case 'R':
			if !r {
				r = true
				continue
			}
		case 'W':
			if !w {
				w = true
				continue
			}
		}
		return rustCharQuote(flag) + " is not R or W (each once)"
	}
	if !r && !w {
		return "no R or W before '~'"
	}
	return ""
}

func commandProblem(name string) string {
	word := func(w string) bool {
		if w == "" {
			return false
		}
		for i := 0; i < len(w); i++ {
			if c := w[i]; !(isAlnum(c) || c == '-' || c == '_' || c == '.' || c == ':') {
				return false
			}
		}
		return true
	}
	command, sub, piped := strings.Cut(name, "|")
	if (!piped && word(name)) || (piped && word(command) && word(sub)) {
		return ""
	}
	return "not a command name (letters, digits, '-', '_', '.', ':', and '|subcommand')"
}
