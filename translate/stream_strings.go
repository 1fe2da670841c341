package translate

// Strings in an upstream's stream events are read as the upstream wrote
// them. A translated stream reads each event's data with gjson, unchecked
// (a validation pass per event would double the reading, and a passthrough
// relays the bytes anyway). gjson is lenient about a raw control byte in a
// string (RFC 8259 section 7 asks for it escaped): without a backslash in
// the string it keeps the byte, but its unescaper stops at the byte once
// the string holds any escape, and stops too at an escape RFC 8259 does
// not define (`\q`, `\u` without four hex digits). A delta such as
// "a<0x01>b\nc" came out as "a": the rest of the text lost, silently, and
// only when an escape happened to follow.
//
// The text is kept instead: a raw control byte is that character (as
// Python's json.loads(strict=False) and gjson's own escape-free case read
// it) and an escape that means nothing is its backslash and characters as
// written. The client gets them in valid JSON (appendEscaped writes
// \u00XX for a control character). Failing the stream would lose the
// answer for a byte whose meaning is plain, once the client already holds
// part of it. A whole answer is one JSON document validated before
// anything is sent: invalid JSON there stays the upstream's failure
// (decodeResponse), reported in the client's dialect.

// escapeNext is true for the bytes that may follow a backslash in a JSON
// string (RFC 8259 section 7), 'u' included.
var escapeNext = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true, 'u': true}

// lenientStrings returns data, or (copied), when one of its strings holds a raw
// control byte or an escape RFC 8259 does not define (see above), a copy
// in buf[:0] (grown as needed) in which each such control byte is a
// \u00XX escape and each such backslash is escaped itself, so that gjson
// reads every string's text whole. Bytes outside strings are copied as
// they are. The common case costs one read of data and no allocation.
func lenientStrings(data, buf []byte) (_ []byte, copied bool) {
	if !needsLenient(data) {
		return data, false
	}
	out := buf[:0]
	in := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case !in:
			in = c == '"'
			out = append(out, c)
		case c == '"':
			in = false
			out = append(out, c)
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		case c == '\\':
			if n := validEscape(data, i); n > 0 {
				out = append(out, data[i:i+n]...)
				i += n - 1
			} else {
				out = append(out, '\\', '\\')
			}
		default:
			out = append(out, c)
		}
	}
	return out, true
}

// needsLenient reports whether data holds a byte below 0x20 or a
// backslash that does not begin an escape RFC 8259 defines (validEscape).
// Outside strings both are invalid JSON too, save white space, which a
// block of several data: lines holds ("\n" between them): such a block is
// copied by lenientStrings, with its white space outside strings kept.
func needsLenient(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c < 0x20:
			return true
		case c == '\\':
			n := validEscape(data, i)
			if n == 0 {
				return true
			}
			i += n - 1
		}
	}
	return false
}

// validEscape returns the length of the escape RFC 8259 defines that
// begins at data[i] (a backslash): 2, 6 for \uXXXX, 0 when none does.
func validEscape(data []byte, i int) int {
	if i+1 >= len(data) || !escapeNext[data[i+1]] {
		return 0
	}
	if data[i+1] != 'u' {
		return 2
	}
	if i+6 > len(data) {
		return 0
	}
	for _, h := range data[i+2 : i+6] {
		if !isHex(h) {
			return 0
		}
	}
	return 6
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
