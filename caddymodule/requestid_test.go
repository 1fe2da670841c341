package caddymodule

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestRequestID: a reasonable client X-Request-Id is kept; a missing, too
// long or unprintable one is replaced by a new 32-hex-digit id, different
// on every request.
func TestRequestID(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for _, h := range []string{"", strings.Repeat("a", 129), "has space", "tab\there", "caf\u00e9"} {
		for i := 0; i < 50; i++ {
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			if h != "" {
				r.Header.Set("X-Request-Id", h)
			}
			id := requestID(r)
			if !hex32.MatchString(id) || seen[id] {
				t.Fatalf("header %q: id %q (repeated: %v)", h, id, seen[id])
			}
			seen[id] = true
		}
	}
	for _, h := range []string{"req-123", strings.Repeat("b", 128), "!~"} {
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		r.Header.Set("X-Request-Id", h)
		if id := requestID(r); id != h {
			t.Errorf("header %q: id %q", h, id)
		}
	}
}
