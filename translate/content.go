package translate

import (
	"encoding/base64"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// parseDataURL splits "data:<media type>;base64,<payload>". ok is false for
// anything else (including non-base64 data URLs).
func parseDataURL(u string) (mediaType, data string, ok bool) {
	if !strings.HasPrefix(u, "data:") {
		return "", "", false
	}
	rest := u[5:]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return "", "", false
	}
	meta := rest[:comma]
	if !strings.HasSuffix(meta, ";base64") {
		return "", "", false
	}
	mediaType = meta[:len(meta)-len(";base64")]
	if i := strings.IndexByte(mediaType, ';'); i >= 0 {
		mediaType = mediaType[:i]
	}
	return mediaType, rest[comma+1:], true
}

// validBase64 reports whether s is standard base64 (padding optional,
// line breaks tolerated), without allocating: the payload is decoded in
// place, 3 KB at a time, into a stack buffer.
func validBase64(s string) bool {
	if s == "" {
		return false
	}
	n := len(s) - strings.Count(s, "\r") - strings.Count(s, "\n")
	if n == 0 {
		return false
	}
	enc := base64.StdEncoding
	if n%4 != 0 {
		if strings.HasSuffix(strings.TrimRight(s, "\r\n"), "=") {
			return false
		}
		enc = base64.RawStdEncoding
	}
	var scratch [3 * 1024]byte
	for len(s) > 0 {
		// a chunk of 4096 data characters (line breaks do not count)
		end, k := 0, 0
		for end < len(s) && k < 4*1024 {
			if c := s[end]; c != '\r' && c != '\n' {
				k++
			}
			end++
		}
		chunk := s[:end]
		s = s[end:]
		// Decode only reads its source: a view of the string is safe
		if _, err := enc.Decode(scratch[:], unsafe.Slice(unsafe.StringData(chunk), len(chunk))); err != nil {
			return false
		}
	}
	return true
}

// appendDataURL appends "data:<mt>;base64,<data>" as a JSON string
// literal, without building the URL first.
func appendDataURL(b []byte, mediaType, data string) []byte {
	b = append(b, `"data:`...)
	b = appendEscaped(b, mediaType)
	b = append(b, ";base64,"...)
	b = appendEscaped(b, data)
	return append(b, '"')
}

// isBlank reports whether s is empty or only whitespace.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// appendTextOf appends prefix followed by the text parts of ps joined with
// sep, as one JSON string literal, without building the joined string.
func appendTextOf(b []byte, prefix string, ps []canonPart, sep string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, prefix)
	n := 0
	for i := range ps {
		if ps[i].kind == partText {
			if n > 0 {
				b = appendEscaped(b, sep)
			}
			b = appendEscaped(b, ps[i].text)
			n++
		}
	}
	return append(b, '"')
}

// blankText reports whether every text part of ps is blank (so their
// join with a whitespace separator is blank too).
func blankText(ps []canonPart) bool {
	for i := range ps {
		if ps[i].kind == partText && !isBlank(ps[i].text) {
			return false
		}
	}
	return true
}

// rawOrEmpty returns r.Raw when r exists and is not null.
func rawOrEmpty(r gjson.Result) string {
	if !r.Exists() || r.Type == gjson.Null {
		return ""
	}
	return r.Raw
}

// imagePartFromURL builds an image part from an OpenAI image URL (http(s)
// or a base64 data URL), validating the base64 payload.
func imagePartFromURL(u, detail string, param fpath) (canonPart, *Error) {
	if u == "" {
		return canonPart{}, invalidAt(param, ": image URL is empty")
	}
	if mt, data, ok := parseDataURL(u); ok {
		if !validBase64(data) {
			return canonPart{}, invalidAt(param, ": image data is not valid base64")
		}
		return canonPart{kind: partImage, mediaType: mt, data: data, detail: detail}, nil
	}
	if strings.HasPrefix(u, "data:") {
		return canonPart{}, unsupportedAt(param, ": only base64 data URLs are supported for images")
	}
	return canonPart{kind: partImage, url: u, detail: detail}, nil
}

// objFields is an object's members collected in one pass, so looking up
// many top-level fields of a large body does not rescan it for each one
// (gjson's Get scans from the start every time).
type objFields []objField

type objField struct {
	key string
	val gjson.Result
}

func fieldsOf(r gjson.Result) objFields {
	return fieldsInto(make(objFields, 0, 24), r)
}

// fieldsInto is fieldsOf reusing dst's storage.
func fieldsInto(dst objFields, r gjson.Result) objFields {
	dst = dst[:0]
	r.ForEach(func(k, v gjson.Result) bool {
		dst = append(dst, objField{k.Str, v})
		return true
	})
	return dst
}

// get returns the first member named key, like gjson's Get.
func (f objFields) get(key string) gjson.Result {
	for i := range f {
		if f[i].key == key {
			return f[i].val
		}
	}
	return gjson.Result{}
}

// view returns b as a string without copying it, so gjson reads request
// bodies and stream events in place. It is only used on bytes that are
// never modified afterwards: request and response bodies are read-only for
// the duration of a call and nothing derived from them outlives it; an SSE
// event's bytes are the reader's buffer, unchanged until the next event, so
// a stream decoder copies (strings.Clone) what it keeps beyond the event
// (TestStreamEventViewsNotKept).
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// getMany is gjson.GetMany (one gjson.Get per path, in order) into the
// array dst, which the caller keeps on its stack: GetMany allocates its
// result slice. At most len(dst) paths.
func getMany(dst *[4]gjson.Result, json string, paths ...string) []gjson.Result {
	for i, p := range paths {
		dst[i] = gjson.Get(json, p)
	}
	return dst[:len(paths)]
}
