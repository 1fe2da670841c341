package caddymodule

import (
	"net/http"

	"github.com/llmgateway/llm_gateway/keypool"
)

// requestOwnFailure reports whether a relayed upstream error is the
// request's own (keypool.ClientError, not a request over a key's
// per-minute limit, whose relays keep their own retry hint: overlimit.go):
// retrying the same request cannot help, whatever status the upstream
// gave it (a context_length_exceeded on a 500 or 503, keypool's
// ClassifyResponse). The official SDKs (openai-go, openai-python,
// anthropic-sdk-go) read x-should-retry before the status, so such a
// relay says "false" and carries no Retry-After.
func requestOwnFailure(o keypool.Outcome) bool {
	return o.Kind == keypool.ClientError && o.OverLimit == 0
}

// noRetryHint sets X-Should-Retry: false on hdr (the client's response
// headers) and removes any Retry-After set on them: the failure is the
// request's own (requestOwnFailure).
func noRetryHint(hdr http.Header) {
	hdr.Set("X-Should-Retry", "false")
	hdr.Del("Retry-After")
}
