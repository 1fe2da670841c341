package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

const emptyObjectSchema = `{"type":"object","properties":{}}`

// normSchema returns a tool input schema every upstream accepts: a missing
// schema becomes {"type":"object","properties":{}}, an object schema
// without "properties" gets an empty one, and a schema without "type"
// gets "object" (Anthropic requires input_schema.type "object"; several
// OpenAI-compatible upstreams reject an object schema without properties).
func normSchema(raw string) string {
	if raw == "" || raw == "null" {
		return emptyObjectSchema
	}
	res := gjson.GetMany(raw, "type", "properties")
	if !gjson.Parse(raw).IsObject() {
		return emptyObjectSchema
	}
	out := raw
	if !res[0].Exists() {
		if s, err := sjson.SetRaw(out, "type", `"object"`); err == nil {
			out = s
		}
	}
	if !res[1].Exists() && (res[0].Str == "object" || !res[0].Exists()) {
		if s, err := sjson.SetRaw(out, "properties", `{}`); err == nil {
			out = s
		}
	}
	return out
}

// anthropicToolID makes a tool call id acceptable to Anthropic, whose ids
// must match ^[a-zA-Z0-9_-]+$. The mapping is deterministic, so a call and
// its result stay paired.
func anthropicToolID(id string) string {
	ok := id != ""
	for i := 0; i < len(id) && ok; i++ {
		c := id[i]
		ok = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if ok {
		return id
	}
	if id == "" {
		return "toolu_empty"
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// OpenAI's limits on tool call ids: Chat Completions refuses a
// tool_calls[].id or tool_call_id longer than 40 characters, Responses a
// call_id longer than 64 ("string too long. Expected a string with
// maximum length 40"; code string_above_max_length).
const (
	chatToolIDMax      = 40
	responsesToolIDMax = 64
)

// openAIToolID returns id when it is at most max bytes long, else
// "call_" and the first max-5 hex digits of its SHA-256: a deterministic
// short id, so a call and its result, translated apart, still match.
func openAIToolID(id string, max int) string {
	if len(id) <= max {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return ("call_" + hex.EncodeToString(sum[:]))[:max]
}

// trimIDPrefix strips a vendor id prefix ("chatcmpl-", "msg_", "resp_",
// "call_", "toolu_", "fc_") to build ids of another vendor's shape.
func trimIDPrefix(id string) string {
	for _, p := range [...]string{"chatcmpl-", "msg_", "resp_", "call_", "toolu_", "fc_", "rs_"} {
		if strings.HasPrefix(id, p) {
			return id[len(p):]
		}
	}
	return id
}

// withPrefix returns id when it already starts with prefix, else
// prefix + the id without its vendor prefix.
func withPrefix(prefix, id string) string {
	if strings.HasPrefix(id, prefix) {
		return id
	}
	if id == "" {
		id = "gateway"
	}
	return prefix + trimIDPrefix(id)
}
