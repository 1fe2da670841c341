package translate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapedRef states appendEscaped's output rune by rune: quotes and
// backslashes behind a backslash, \n \r \t, other control characters
// and U+2028/U+2029 as \u00XX/\u202X, each byte of invalid UTF-8 as
// \ufffd, everything else as it is.
func escapedRef(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// TestAppendEscapedSameAsDefinition: appendEscaped (with its table of
// plain ASCII bytes) writes what escapedRef states, for every byte value
// alone and in context, and for the package's request bodies.
func TestAppendEscapedSameAsDefinition(t *testing.T) {
	inputs := []string{"", "plain", "a\"b\\c", "\u2028\u2029\ufffd", "\xff\xfe", "é\x00\x1f\x7f", "tab\there\nnew\r"}
	for c := 0; c < 256; c++ {
		inputs = append(inputs, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"yz")
	}
	for _, b := range testBodies(t) {
		inputs = append(inputs, string(b))
	}
	for _, s := range inputs {
		if got, want := string(appendEscaped([]byte("pre"), s)), "pre"+escapedRef(s); got != want {
			t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzAppendEscaped checks appendEscaped against escapedRef.
func FuzzAppendEscaped(f *testing.F) {
	f.Add("a\"\\\n\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendEscaped(nil, s)), escapedRef(s); got != want {
			t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, want)
		}
	})
}
