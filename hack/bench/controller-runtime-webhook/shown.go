package main

// How messages echo a tenant's strings (crates/api/src/shown.rs) and how they quote values as
// Rust's `{:?}` does, so both servers' messages are byte for byte the same; and the syntax of
// Kubernetes names and keys (crates/api/src/validation/syntax.rs).

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxShownChars is the most characters of a tenant's string that a message echoes.
const maxShownChars = 256

// escapeDebug is Rust's char::escape_debug: the escapes of control and unprintable characters
// (and of grapheme extenders), the character itself otherwise. Quotes and backslashes are the
// caller's to escape or not.
func escapeDebug(c rune) string {
	switch c {
	case 0:
		return `\0`
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	case '\n':
		return `\n`
	}
	if c == utf8.RuneError || unicode.In(c, unicode.Mn, unicode.Me) || !(unicode.IsPrint(c) || c == ' ') {
		return fmt.Sprintf(`\u{%x}`, c)
	}
	return string(c)
}

// shown is a tenant's string as a message echoes it: at most maxShownChars characters, then
// "…(N bytes)"; control and unprintable characters escaped, quotes and backslashes as they are.
func shown(value string) string {
	var out strings.Builder
	length := 0
	for _, c := range value {
		piece := string(c)
		if c != '"' && c != '\'' && c != '\\' {
			piece = escapeDebug(c)
		}
		length += utf8.RuneCountInString(piece)
		if length > maxShownChars {
			fmt.Fprintf(&out, "…(%d bytes)", len(value))
			break
		}
		out.WriteString(piece)
	}
	return out.String()
}

// shownList is a list of a tenant's strings as Rust's `{:?}` writes it, each shown, and no more
// of them once maxShownChars are written.
func shownList(values []string) string {
	var out strings.Builder
	out.WriteByte('[')
	for i, value := range values {
		if i > 0 {
			out.WriteString(", ")
			if utf8.RuneCountInString(out.String()) > maxShownChars {
				fmt.Fprintf(&out, "…(%d values)", len(values))
				break
			}
		}
		out.WriteString(`"` + shown(value) + `"`)
	}
	out.WriteByte(']')
	return out.String()
}

// rustQuote formats a string as Rust's `{:?}` does.
func rustQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(escapeDebug(c))
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rustCharQuote formats a character as Rust's `{:?}` does ('x', '\”, '"').
func rustCharQuote(c rune) string {
	switch c {
	case '\'':
		return `'\''`
	case '\\':
		return `'\\'`
	}
	return "'" + escapeDebug(c) + "'"
}

// rustQuoteList formats a list of strings as Rust's `{:?}` does (["a", "b"]).
func rustQuoteList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = rustQuote(v)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// ---- syntax (crates/api/src/validation/syntax.rs) ----

const (
	maxSubdomainLength = 253
	maxLabelLength     = 63
)

func isLowerAlnum(c byte) bool { return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || ('A' <= c && c <= 'Z') }

// isDNS1123Subdomain: dot-separated parts of lowercase letters, digits and '-', each starting and
// ending with a letter or digit (length aside).
func isDNS1123Subdomain(name string) bool {
	for _, part := range strings.Split(name, ".") {
		if part == "" || !isLowerAlnum(part[0]) || !isLowerAlnum(part[len(part)-1]) {
			return false
		}
		for i := 0; i < len(part); i++ {
			if !isLowerAlnum(part[i]) && part[i] != '-' {
				return false
			}
		}
	}
	return true
}

func subdomainProblem(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if len(name) > maxSubdomainLength {
		return fmt.Sprintf("must be no more than %d characters, got %d", maxSubdomainLength, len(name))
	}
	if !isDNS1123Subdomain(name) {
		return fmt.Sprintf("must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), got \"%s\"", shown(name))
	}
	return ""
}

func isLabelWord(text string) bool {
	if len(text) > maxLabelLength || text == "" || !isAlnum(text[0]) || !isAlnum(text[len(text)-1]) {
		return false
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func labelKeyProblem(key string) string {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name = key
	}
	prefixOK := !hasPrefix || (prefix != "" && len(prefix) <= maxSubdomainLength && isDNS1123Subdomain(prefix))
	if prefixOK && isLabelWord(name) {
		return ""
	}
	return fmt.Sprintf("must be a valid label key (an optional DNS subdomain prefix and '/', then at most %d letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"%s\"", maxLabelLength, shown(key))
}

func annotationKeyProblem(key string) string {
	if labelKeyProblem(asciiLower(key)) == "" {
		return ""
	}
	return fmt.Sprintf("must be a valid annotation key (an optional DNS subdomain prefix and '/', then at most %d letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"%s\"", maxLabelLength, shown(key))
}

func labelValueProblem(value string) string {
	if value == "" || isLabelWord(value) {
		return ""
	}
	return fmt.Sprintf("must be a valid label value (empty, or at most %d letters, digits, '-', '_' or '.', starting and ending with a letter or digit), got \"%s\"", maxLabelLength, shown(value))
}

// asciiLower is Rust's to_ascii_lowercase.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
