package caddymodule

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/translate"
)

// TestSessionID checks the session id affinity keys on: a session header
// wins; else one conversation (same system text and first user message,
// whatever came after) gets one id, another conversation another; only
// 4 KiB of each seed count; a request without either has none.
func TestSessionID(t *testing.T) {
	id := func(hdr http.Header, body string) string {
		t.Helper()
		req, err := translate.ParseRequest(translate.OpenAIChat, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return sessionID(&http.Request{Header: hdr}, req)
	}
	conv := func(sys, user string, more string) string {
		return `{"model":"m","messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"` + user + `"}` + more + `]}`
	}
	a := id(http.Header{}, conv("be brief", "hello", ""))
	if !strings.HasPrefix(a, "c:") || len(a) < 4 {
		t.Fatalf("id %q", a)
	}
	if b := id(http.Header{}, conv("be brief", "hello", `,{"role":"assistant","content":"hi"},{"role":"user","content":"more"}`)); b != a {
		t.Errorf("a later turn of the same conversation: %q, want %q", b, a)
	}
	for _, other := range []string{conv("be brief", "hello!", ""), conv("be long", "hello", ""), conv("", "hello", "")} {
		if b := id(http.Header{}, other); b == a || b == "" {
			t.Errorf("another conversation %s: %q (first %q)", other, b, a)
		}
	}
	long := strings.Repeat("x", 4<<10)
	if b, c := id(http.Header{}, conv(long+"A", "q", "")), id(http.Header{}, conv(long+"B", "q", "")); b != c {
		t.Errorf("system texts differing after 4 KiB: %q and %q", b, c)
	}
	if b := id(http.Header{"X-Claude-Code-Session-Id": {"s-1"}}, conv("be brief", "hello", "")); b != "h:s-1" {
		t.Errorf("with a session header: %q", b)
	}
	if b := id(http.Header{}, `{"model":"m","messages":[{"role":"assistant","content":"x"}]}`); b != "" {
		t.Errorf("no system and no user message: %q, want none", b)
	}
	if seedHash("ab", "c") == seedHash("a", "bc") {
		t.Error("the seeds' boundary does not count")
	}
}
