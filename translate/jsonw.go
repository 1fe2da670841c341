package translate

import (
	"strconv"
	"unicode/utf8"
)

// This file holds the append-based JSON writing helpers. Reading is always
// done with gjson; these only produce output.

const hexDigits = "0123456789abcdef"

// plainASCII marks the bytes appendEscaped copies as they are: ASCII from
// 0x20 up, but for '"' and '\\' (one table load per byte instead of four
// comparisons).
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendJSONString appends s to dst as a JSON string literal (quotes
// included), escaped the way encoding/json does it without HTML escaping:
// quotes, backslashes and control characters are escaped, invalid UTF-8
// becomes U+FFFD, and U+2028 / U+2029 are escaped so the output is also
// valid JavaScript and safe inside an SSE data line. It allocates only when
// dst must grow. The mock upstream shares it.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendString appends s as a JSON string literal, escaped the way
// encoding/json does it (without HTML escaping): quotes, backslashes and
// control characters are escaped, invalid UTF-8 becomes U+FFFD, and U+2028 /
// U+2029 are escaped so the output is also valid JavaScript.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends s escaped as the inside of a JSON string literal
// (see appendString), without the quotes, so one literal can be written
// from several pieces without joining them first.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	words := true // test eight bytes at a time (off in text dense with escapes)
	for i := 0; i < len(s); {
		// a run of plain ASCII: eight bytes at a time while the runs are
		// long, then byte by byte up to the byte that stopped it (within
		// the word that failed); a run shorter than 16 bytes turns the
		// word tests off until a longer one
		j := i
		if words {
			for i+8 <= len(s) && plain8(s[i:i+8]) {
				i += 8
			}
		}
		for i < len(s) && plainASCII[s[i]] {
			i++
		}
		if i >= len(s) {
			break
		}
		words = i-j >= 16
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// Constants of plain8's byte-parallel tests.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether the eight bytes of w are all plainASCII (what
// appendEscaped copies as they are), testing them as one word: no byte
// from 0x80 up, none below 0x20, none equal to '"' or '\\'. Each test is
// the classic "has a zero byte" one, (x - ones) &^ x & highs, which is
// exact as a whole (its false positives only follow a true one).
func plain8(w string) bool {
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	q := x ^ ('"' * ones)
	b := x ^ ('\\' * ones)
	t := x | ((x - 0x20*ones) &^ x) | ((q - ones) &^ q) | ((b - ones) &^ b)
	return t&highs == 0
}

// appendKey appends `"key":` preceded by a comma when needed (see
// appendComma). key must not need escaping.
func appendKey(dst []byte, key string) []byte {
	dst = appendComma(dst)
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendStrField appends `,"key":"value"`.
func appendStrField(dst []byte, key, value string) []byte {
	return appendString(appendKey(dst, key), value)
}

// appendIntField appends `,"key":n`.
func appendIntField(dst []byte, key string, n int64) []byte {
	return strconv.AppendInt(appendKey(dst, key), n, 10)
}

// appendRawField appends `,"key":raw` where raw is already valid JSON.
func appendRawField(dst []byte, key, raw string) []byte {
	return append(appendKey(dst, key), raw...)
}

// appendComma appends a comma unless dst is empty or ends in '{', '[',
// ':' or ','.
func appendComma(dst []byte) []byte {
	if n := len(dst); n > 0 {
		switch dst[n-1] {
		case '{', '[', ':', ',':
		default:
			dst = append(dst, ',')
		}
	}
	return dst
}
