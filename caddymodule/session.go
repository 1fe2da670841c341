package caddymodule

import (
	"hash/fnv"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/llmgateway/llm_gateway/translate"
)

// sessionHeaders are the request headers that name a conversation, most
// explicit first: the gateway's own, Claude Code's and Codex's.
var sessionHeaders = []string{"X-Session-Id", "X-Claude-Code-Session-Id", "Session-Id"}

// sessionID identifies the conversation a request belongs to, for session
// affinity: a session header when the client sends one, else a hash of the
// first system text and the first user message (stable across the turns of
// one conversation, different between conversations), which the one parse
// of the request found (translate.Request.SessionSeed).
func sessionID(r *http.Request, req *translate.Request) string {
	for _, h := range sessionHeaders {
		if v := r.Header.Get(h); v != "" && len(v) <= 256 {
			return "h:" + v
		}
	}
	sys, first := req.SessionSeed()
	if sys == "" && first == "" {
		return ""
	}
	h := fnv.New64a()
	const limit = 4 << 10 // a prefix identifies the conversation well enough
	_, _ = h.Write(unsafe.Slice(unsafe.StringData(sys), min(len(sys), limit)))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(unsafe.Slice(unsafe.StringData(first), min(len(first), limit)))
	return "c:" + strconv.FormatUint(h.Sum64(), 36)
}
