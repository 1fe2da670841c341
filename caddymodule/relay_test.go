package caddymodule

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/translate"
)

// TestLoggedErrorsCutOnce: an error message longer than maxErrorMessage
// (a request the gateway refused, an upstream's relayed error) is cut
// once, where it is logged: the count of bytes left out is the message's
// own, not that of an earlier cut.
func TestLoggedErrorsCutOnce(t *testing.T) {
	long := strings.Repeat("x", 3*maxErrorMessage)
	want := clipMessage(long, maxErrorMessage)
	if !strings.HasSuffix(want, " (8192 more bytes)") {
		t.Fatalf("clipMessage: %q", want[len(want)-40:])
	}
	rl := &requestLog{}
	rl.failRequest(httptest.NewRecorder(), translate.OpenAIChat, &translate.Error{Class: translate.ClassForStatus(400), Message: long})
	if got := clipMessage(rl.errMsg, maxErrorMessage); got != want {
		t.Fatalf("refused request: logged %q, want %q", got[len(got)-40:], want[len(want)-40:])
	}
	rl = &requestLog{}
	relayUpstreamError(httptest.NewRecorder(), rl, translate.OpenAIChat, "p/k", 400, nil,
		translate.ErrorBody(translate.OpenAIChat, translate.ClassForStatus(400), long))
	if got := clipMessage(rl.upstreamErr, maxErrorMessage); got != want {
		t.Fatalf("relayed upstream error: logged %q, want %q", got[len(got)-40:], want[len(want)-40:])
	}
}
