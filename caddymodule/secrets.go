package caddymodule

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// redactedMark replaces an upstream key wherever it is found.
const redactedMark = "[redacted]"

// minFormLen is the shortest secret whose encoded forms (percent-encoded,
// base64) are looked for: shorter strings would match innocent text.
// Literal occurrences are redacted whatever the length.
const minFormLen = 8

// secretForms finds an upstream key in the spellings an upstream (or a
// proxy in front of it) may echo it in an error body or a stream event:
//   - literally;
//   - percent-encoded, any mix of literal and %XX bytes (upper or lower case
//     hex), as in a URL or a form body echoed back;
//   - base64 in the standard and the URL alphabet, padded or not, also
//     inside a longer base64 token such as HTTP Basic credentials
//     base64("user:<key>") or base64("<key>:"): the key's base64 is looked
//     for at each of the three byte alignments it can have inside such a
//     token, and the whole token is redacted;
//   - inside a JSON string, once its escapes (\u0073, \/) are decoded
//     (found by contains; redact re-encodes such a body).
//
// Build one with newSecretForms; the zero value finds nothing.
type secretForms struct {
	secret []byte
	// b64 are the alignment-independent cores of base64(key): for each
	// alphabet and each alignment, the characters that depend on the key's
	// bytes alone; then hex(key) in lower and upper case.
	b64 [][]byte
}

// newSecretForms prepares the forms of secret. An empty secret gives a
// secretForms that finds nothing.
func newSecretForms(secret string) *secretForms {
	f := &secretForms{secret: []byte(secret)}
	if len(secret) < minFormLen {
		return f
	}
	n := len(secret)
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for shift := 0; shift < 3; shift++ {
			buf := make([]byte, shift+n)
			copy(buf[shift:], secret)
			s := enc.EncodeToString(buf)
			// the first characters mix in the shift bytes, the last one
			// mixes in whatever follows the key: keep only the rest
			lo := [3]int{0, 2, 3}[shift]
			hi := 8 * (shift + n) / 6
			core := []byte(s[lo:hi])
			dup := false
			for _, c := range f.b64 {
				dup = dup || bytes.Equal(c, core)
			}
			if !dup {
				f.b64 = append(f.b64, core)
			}
		}
	}
	// hex, both cases: its digits are base64 characters too, so the same
	// search and redaction serve
	h := hex.EncodeToString([]byte(secret))
	f.b64 = append(f.b64, []byte(h), bytes.ToUpper([]byte(h)))
	return f
}

// contains reports whether b holds the secret in any of its forms, JSON
// escapes included.
func (f *secretForms) contains(b []byte) bool {
	if f == nil || len(f.secret) == 0 {
		return false
	}
	if f.containsBytes(b) {
		return true
	}
	return bytes.IndexByte(b, '\\') >= 0 && f.inJSONStrings(b)
}

// containsBytes is contains without decoding JSON escapes.
func (f *secretForms) containsBytes(b []byte) bool {
	if bytes.Contains(b, f.secret) {
		return true
	}
	if len(f.secret) >= minFormLen && bytes.IndexByte(b, '%') >= 0 {
		if i, _ := f.percentMatch(b, 0); i >= 0 {
			return true
		}
	}
	for _, c := range f.b64 {
		if bytes.Contains(b, c) {
			return true
		}
	}
	return false
}

// inJSONStrings reports whether a string (or object key) of the JSON
// document b, once unescaped, holds the secret in any form.
func (f *secretForms) inJSONStrings(b []byte) bool {
	found := false
	var walk func(r gjson.Result) bool
	walk = func(r gjson.Result) bool {
		switch {
		case r.IsObject() || r.IsArray():
			r.ForEach(func(k, v gjson.Result) bool {
				if k.Type == gjson.String && f.containsBytes([]byte(k.Str)) {
					found = true
					return false
				}
				return walk(v)
			})
		case r.Type == gjson.String && f.containsBytes([]byte(r.Str)):
			found = true
		}
		return !found
	}
	walk(gjson.ParseBytes(b))
	return found
}

// redact returns b with every occurrence of the secret, in any form,
// replaced by [redacted]; a base64 occurrence takes the whole base64 token
// around it. b itself is returned when there is nothing to redact. A JSON
// body whose strings hold the secret only behind escapes is decoded,
// redacted and re-encoded; a body that is not JSON and still holds it that
// way is returned as [redacted] alone.
func (f *secretForms) redact(b []byte) []byte {
	if f == nil || len(f.secret) == 0 || len(b) == 0 {
		return b
	}
	out := f.redactBytes(b)
	if bytes.IndexByte(out, '\\') < 0 || !f.inJSONStrings(out) {
		return out
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return []byte(redactedMark)
	}
	re, err := json.Marshal(f.redactValue(v))
	if err != nil {
		return []byte(redactedMark)
	}
	return re
}

// redactValue redacts every string of a decoded JSON value.
func (f *secretForms) redactValue(v any) any {
	switch t := v.(type) {
	case string:
		return string(f.redactBytes([]byte(t)))
	case []any:
		for i := range t {
			t[i] = f.redactValue(t[i])
		}
	case map[string]any:
		for k, e := range t {
			rk := string(f.redactBytes([]byte(k)))
			if rk != k {
				delete(t, k)
			}
			t[rk] = f.redactValue(e)
		}
	}
	return v
}

// redactBytes replaces the literal, percent-encoded and base64 forms.
func (f *secretForms) redactBytes(b []byte) []byte {
	out := b
	// literal and percent-encoded (one matcher covers both)
	if bytes.Contains(out, f.secret) || (len(f.secret) >= minFormLen && bytes.IndexByte(out, '%') >= 0) {
		var buf []byte
		last := 0
		for from := 0; ; {
			i, end := f.percentMatch(out, from)
			if i < 0 {
				break
			}
			buf = append(buf, out[last:i]...)
			buf = append(buf, redactedMark...)
			last, from = end, end
		}
		if buf != nil {
			out = append(buf, out[last:]...)
		}
	}
	for _, c := range f.b64 {
		for {
			i := bytes.Index(out, c)
			if i < 0 {
				break
			}
			lo, hi := i, i+len(c)
			for lo > 0 && isBase64Char(out[lo-1]) {
				lo--
			}
			for hi < len(out) && isBase64Char(out[hi]) {
				hi++
			}
			for hi < len(out) && out[hi] == '=' {
				hi++
			}
			n := make([]byte, 0, len(out)-(hi-lo)+len(redactedMark))
			n = append(n, out[:lo]...)
			n = append(n, redactedMark...)
			out = append(n, out[hi:]...)
		}
	}
	return out
}

// percentMatch finds the first occurrence of the secret in b at or after
// from (see matchAt). It returns the match's start and end, or -1.
func (f *secretForms) percentMatch(b []byte, from int) (int, int) {
	s := f.secret
	encoded := len(s) >= minFormLen
	for i := from; i < len(b); i++ {
		if b[i] != s[0] && (!encoded || b[i] != '%') {
			continue
		}
		if end := matchAt(b, i, s, encoded); end >= 0 {
			return i, end
		}
	}
	return -1, -1
}

// matchAt reports where s ends when it occurs in b at i, -1 when it does
// not. With encoded, each byte of s may also appear as %XX (either case)
// and a space as '+'.
func matchAt(b []byte, i int, s []byte, encoded bool) int {
	j := i
	for k := 0; k < len(s); k++ {
		switch {
		case j >= len(b):
			return -1
		case b[j] == s[k]:
			j++
		case encoded && b[j] == '%' && j+2 < len(b) && unhex(b[j+1], b[j+2]) == int(s[k]):
			j += 3
		case encoded && b[j] == '+' && s[k] == ' ':
			j++
		default:
			return -1
		}
	}
	return j
}

// minTail is the shortest end of a secret that redactTails takes.
const minTail = 4

// redactTails extends every [redacted] mark in b over an end of the
// secret that follows it (literal or percent-encoded, at least minTail
// bytes). A generic scrubber that recognises a key by its prefix
// ("sk-...") stops at the first character it does not expect and leaves
// the rest of the key after its mark; this takes that rest too.
func (f *secretForms) redactTails(b []byte) []byte {
	mark := []byte(redactedMark)
	var out []byte
	last := 0
	for from := 0; from < len(b); {
		i := bytes.Index(b[from:], mark)
		if i < 0 {
			break
		}
		end := from + i + len(mark)
		next := end
		for k := 1; k <= len(f.secret)-minTail; k++ {
			if j := matchAt(b, end, f.secret[k:], len(f.secret) >= minFormLen); j >= 0 {
				next = j
				break
			}
		}
		if next > end {
			out = append(out, b[last:end]...)
			last = next
		}
		from = next
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// unhex decodes two hex digits, -1 when they are not.
func unhex(a, b byte) int {
	h, l := hexDigit(a), hexDigit(b)
	if h < 0 || l < 0 {
		return -1
	}
	return h<<4 | l
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// isBase64Char reports whether c belongs to the standard or the URL
// base64 alphabet (padding aside).
func isBase64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

// redactSecret returns b with the upstream key secret redacted in every
// form secretForms knows (literal, percent-encoded, base64 in either
// alphabet including inside Basic credentials, JSON-escaped). Use it on
// any upstream bytes that are relayed to a client or written to a log.
// b itself is returned when there is nothing to redact.
func redactSecret(b []byte, secret string) []byte {
	return newSecretForms(secret).redact(b)
}

// redactEvent returns an SSE event (or group of events) with the secret
// redacted, p itself when it holds none. Besides the forms redactBytes
// takes, it takes the rest of a key that a prefix-based scrubber upstream
// of it (translate.ScrubSecrets) left after its [redacted] mark, and it
// looks at the data of each "data:" line as JSON, so a key behind \u or
// \/ escapes is found too; such a line is re-encoded.
func (f *secretForms) redactEvent(p []byte) []byte {
	if f == nil || len(f.secret) == 0 {
		return p
	}
	out := p
	if f.containsBytes(out) {
		out = f.redactBytes(out)
	}
	if bytes.Contains(out, []byte(redactedMark)) {
		out = f.redactTails(out)
	}
	if !bytes.Contains(out, []byte(`\u`)) && !bytes.Contains(out, []byte(`\/`)) {
		return out
	}
	var buf []byte
	changed := false
	for rest := out; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		body := bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(body, []byte("data:")); ok && bytes.IndexByte(d, '\\') >= 0 && f.inJSONStrings(d) {
			red := f.redact(d)
			if len(d) > 0 && d[0] == ' ' && (len(red) == 0 || red[0] != ' ') {
				red = append([]byte{' '}, red...) // re-encoding dropped the space after "data:"
			}
			line = append(append([]byte("data:"), red...), line[len(body):]...)
			changed = true
		}
		buf = append(buf, line...)
	}
	if !changed {
		return out
	}
	return buf
}
