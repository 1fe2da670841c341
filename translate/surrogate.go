package translate

import (
	"strings"
	"unicode/utf16"

	"github.com/tidwall/gjson"
)

// Upstreams that write non-BMP characters as JSON escapes (`\ud83d\ude00`
// for U+1F600) can cut a UTF-16 surrogate pair between two deltas: one
// event's string ends with the high half, the next one's starts with the
// low half. Decoded one event at a time, each lone half is U+FFFD (JSON
// decoders replace unpaired surrogates), so the character is lost. A
// translated stream decodes every delta on its own, so the canonical
// stream joins such halves again (deltaJSON); passthrough relays the
// upstream's bytes and needs nothing.

// replacementChar is U+FFFD as UTF-8, what gjson decodes a lone surrogate
// escape to.
const replacementChar = "\uFFFD"

// deltaJSON is delta for the JSON string value v of an upstream event (a
// view of it): a high surrogate escape that ends v is held back, and
// joined with a low surrogate escape that starts the next delta of the
// same block. A half without its partner is sent as U+FFFD, as a decoder
// would have.
func (cs *canonStream) deltaJSON(k deltaKind, v gjson.Result) {
	s := v.Str
	if cs.hiSur != 0 {
		hi := cs.hiSur
		cs.hiSur = 0
		if lo, ok := surrogateAt(v.Raw, 1); ok && lo >= 0xdc00 && cs.open == cs.hiBlk && k == cs.hiKind && strings.HasPrefix(s, replacementChar) {
			s = string(utf16.DecodeRune(hi, lo)) + s[len(replacementChar):]
		} else if cs.open == cs.hiBlk {
			cs.delta(cs.hiKind, replacementChar)
		}
	}
	if n := len(v.Raw); n >= 8 && strings.HasSuffix(s, replacementChar) {
		if hi, ok := surrogateAt(v.Raw, n-7); ok && hi < 0xdc00 && escapedAt(v.Raw, n-7) {
			s = s[:len(s)-len(replacementChar)]
			cs.hiSur, cs.hiBlk, cs.hiKind = hi, cs.open, k
		}
	}
	if s != "" || v.Str == "" {
		cs.delta(k, s) // an empty delta goes out as before
	}
}

// flushSurrogate sends a held high surrogate that no low one followed
// as U+FFFD, before its block closes.
func (cs *canonStream) flushSurrogate() {
	if cs.hiSur != 0 {
		cs.hiSur = 0
		if cs.open == cs.hiBlk {
			cs.delta(cs.hiKind, replacementChar)
		}
	}
}

// surrogateAt reads a `\uXXXX` escape at raw[i:] whose code unit is a
// UTF-16 surrogate (0xd800-0xdfff).
func surrogateAt(raw string, i int) (rune, bool) {
	if i < 0 || i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range []byte(raw[i+2 : i+6]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, r >= 0xd800 && r <= 0xdfff
}

// escapedAt reports whether the backslash at raw[i] starts an escape (an
// even number of backslashes precede it), not the second half of `\\`.
func escapedAt(raw string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && raw[j] == '\\'; j-- {
		n++
	}
	return n%2 == 0
}
