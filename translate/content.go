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
// line breaks tolerated), without allocating a copy of the decoded payload.
func validBase64(s string) bool {
	if s == "" {
		return false
	}
	var scratch [3 * 256]byte
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", "", "\n", "").Replace(s)
	}
	if len(s)%4 != 0 {
		if strings.HasSuffix(s, "=") {
			return false
		}
		enc = base64.RawStdEncoding
	}
	for len(s) > 0 {
		n := 4 * 256
		if n > len(s) {
			n = len(s)
		}
		chunk := s[:n]
		s = s[n:]
		if len(s) > 0 {
			if _, err := enc.Decode(scratch[:], []byte(chunk)); err != nil {
				return false
			}
			continue
		}
		if _, err := enc.Decode(scratch[:], []byte(chunk)); err != nil {
			return false
		}
	}
	return true
}

// dataURL builds "data:<mt>;base64,<data>".
func dataURL(mediaType, data string) string {
	return "data:" + mediaType + ";base64," + data
}

// isBlank reports whether s is empty or only whitespace.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// textOf joins the text parts of ps with sep.
func textOf(ps []canonPart, sep string) string {
	n := 0
	var first string
	for i := range ps {
		if ps[i].kind == partText {
			if n == 0 {
				first = ps[i].text
			}
			n++
		}
	}
	if n <= 1 {
		return first
	}
	var b strings.Builder
	k := 0
	for i := range ps {
		if ps[i].kind == partText {
			if k > 0 {
				b.WriteString(sep)
			}
			b.WriteString(ps[i].text)
			k++
		}
	}
	return b.String()
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
func imagePartFromURL(u, detail, param string) (canonPart, *Error) {
	if u == "" {
		return canonPart{}, invalid(param, "%s: image URL is empty", param)
	}
	if mt, data, ok := parseDataURL(u); ok {
		if !validBase64(data) {
			return canonPart{}, invalid(param, "%s: image data is not valid base64", param)
		}
		return canonPart{kind: partImage, mediaType: mt, data: data, detail: detail}, nil
	}
	if strings.HasPrefix(u, "data:") {
		return canonPart{}, unsupported(param, "%s: only base64 data URLs are supported for images", param)
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
// the duration of a call and nothing derived from them outlives it, and
// every SSE event's bytes are a fresh allocation owned by the translator.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
