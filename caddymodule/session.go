package caddymodule

import (
	"hash/fnv"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/translate"
)

// sessionHeaders are the request headers that name a conversation, most
// explicit first: the gateway's own, Claude Code's and Codex's.
var sessionHeaders = []string{"X-Session-Id", "X-Claude-Code-Session-Id", "Session-Id"}

// sessionID identifies the conversation a request belongs to, for session
// affinity: a session header when the client sends one, else a hash of the
// first system text and the first user message (stable across the turns of
// one conversation, different between conversations).
func sessionID(r *http.Request, d translate.Dialect, body []byte) string {
	for _, h := range sessionHeaders {
		if v := r.Header.Get(h); v != "" && len(v) <= 256 {
			return "h:" + v
		}
	}
	var paths [2]string
	switch d {
	case translate.AnthropicMessages:
		paths = [2]string{"system", `messages.#(role=="user").content`}
	case translate.OpenAIResponses:
		paths = [2]string{"instructions", "input"}
	default:
		paths = [2]string{`messages.#(role=="system").content`, `messages.#(role=="user").content`}
	}
	// a read-only view of the body: GetManyBytes would copy what it finds
	// (the whole system prompt and first message) only to hash 4 KiB
	res := gjson.GetMany(unsafe.String(unsafe.SliceData(body), len(body)), paths[0], paths[1])
	first := res[1]
	if first.IsArray() && d == translate.OpenAIResponses {
		first = first.Get(`#(role=="user")`)
	}
	if !res[0].Exists() && !first.Exists() {
		return ""
	}
	h := fnv.New64a()
	const limit = 4 << 10 // a prefix identifies the conversation well enough
	_, _ = h.Write([]byte(res[0].Raw[:min(len(res[0].Raw), limit)]))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(first.Raw[:min(len(first.Raw), limit)]))
	return "c:" + strconv.FormatUint(h.Sum64(), 36)
}
