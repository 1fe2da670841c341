package caddymodule

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// bareClientMessage returns the error message a client's failed stream
// ends with (Chat's error chunk, Anthropic's event: error, Responses'
// response.failed or error).
func bareClientMessage(client string, b []byte) string {
	evs := sseEvents(b)
	if len(evs) == 0 {
		return ""
	}
	last := evs[len(evs)-1]
	if client == "responses" && last.Event == "response.failed" {
		return gjson.GetBytes(last.Data, "response.error.message").Str
	}
	if m := gjson.GetBytes(last.Data, "error.message").Str; m != "" {
		return m
	}
	return gjson.GetBytes(last.Data, "message").Str
}

// TestTrustBareErrorInStream: a relay's JSON error written into its 200
// event stream without "data:" ({"error":{"message","type","code"}}, as
// one-api, new-api and OpenRouter-style relays write it once they have
// sent the stream's headers), through a real gateway, from each upstream
// dialect to each client dialect:
//   - after content: the client's stream ends with the upstream's error
//     (its message, the credential in it redacted) in its dialect, never
//     the gateway's "ended without a finish reason"; the key's outcome is
//     the error's (a 502: a failure of the key);
//   - before content, the key's failure (code 503): the pool's other key
//     answers, the client sees nothing of the first;
//   - before content, the request's own (context_length_exceeded, on a
//     400 and on a 503): relayed with that status in the client's
//     dialect, X-Should-Retry false, the other key not asked, no key
//     blamed.
func TestTrustBareErrorInStream(t *testing.T) {
	u, gw := trustGateway(t)
	starts := map[string]string{"chat": d2ChatRole, "anthropic": d2AnStart + d2AnPing, "responses": d2RsCreated + d2RsInProgress}
	contents := map[string]string{"chat": d2ChatText, "anthropic": d2AnText, "responses": d2RsItem + d2RsDelta}
	for _, p := range trustPools {
		secret := trustKey(p.pool, "a")
		keyErr := `{"error":{"message":"Upstream provider returned error for ` + secret + `","type":"server_error","code":502}}`
		for _, client := range d2Clients {
			name := fmt.Sprintf("%s upstream, %s client", p.up, client)
			path, body, hdr := d2Client(client, p.model, true)

			// after content
			poolFor(t, p.pool).ClearCooldown("")
			failsA := keyStatus(t, p.pool, p.pool+"a").Failures
			u.set(trustKey(p.pool, "a"), trustAnswer{sse: true, body: starts[p.up] + contents[p.up] + keyErr})
			resp, b := post(t, gw+path, body, hdr...)
			if resp.StatusCode != 200 || sessionClientFailed(client, resp.StatusCode, b, true) != "" || d2Text(client, b, true) != "Paris" {
				t.Errorf("%s, after content: %d %.600s", name, resp.StatusCode, b)
			}
			if m := bareClientMessage(client, b); !strings.Contains(m, "Upstream provider returned error") || strings.Contains(string(b), secret) {
				t.Errorf("%s, after content: the client's error says %q, not the upstream's words (or shows the key):\n%s", name, m, b)
			}
			if n := keyStatus(t, p.pool, p.pool+"a").Failures - failsA; n != 1 {
				t.Errorf("%s, after content: key a counted %d failures, want 1 (the upstream's 502)", name, n)
			}

			// before content, the key's failure: the other key answers
			poolFor(t, p.pool).ClearCooldown("")
			u.set(trustKey(p.pool, "a"), trustAnswer{sse: true, body: starts[p.up] + `{"error":{"message":"upstream overloaded","type":"server_error","code":503}}` + "\n\n"})
			u.set(trustKey(p.pool, "b"), trustAnswer{sse: true, body: d2Good[p.up]})
			askedB := u.count(trustKey(p.pool, "b"))
			resp, b = post(t, gw+path, body, hdr...)
			if resp.StatusCode != 200 || d2Text(client, b, true) != "Paris" || !d2Clean(client, b) || d2Preambles(client, b) != 1 || resp.Header.Get("X-Routed-Via") != p.pool+"/"+p.pool+"b" {
				t.Errorf("%s, key's failure before content: %d via %q %.600s", name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
			}
			if n := u.count(trustKey(p.pool, "b")) - askedB; n != 1 {
				t.Errorf("%s, key's failure before content: key b asked %d times, want 1", name, n)
			}

			// before content, the request's own error
			for _, c := range []struct {
				code   string
				status int
			}{{`"context_length_exceeded"`, 400}, {"503", 503}} {
				poolFor(t, p.pool).ClearCooldown("")
				before := trustFailures(t, p.pool)
				u.set(trustKey(p.pool, "a"), trustAnswer{sse: true, body: starts[p.up] +
					`{"error":{"message":"This model's maximum context length is 8192 tokens","type":"context_length_exceeded","code":` + c.code + `}}`})
				askedB = u.count(trustKey(p.pool, "b"))
				resp, b = post(t, gw+path, body, hdr...)
				label := fmt.Sprintf("%s, request's own error, code %s", name, c.code)
				if resp.StatusCode != c.status || sessionClientFailed(client, resp.StatusCode, b, true) != "" || !strings.Contains(string(b), "maximum context length") {
					t.Errorf("%s: %d %.600s", label, resp.StatusCode, b)
				}
				if got := resp.Header.Get("X-Should-Retry"); got != "false" {
					t.Errorf("%s: X-Should-Retry %q, want false", label, got)
				}
				if n := u.count(trustKey(p.pool, "b")) - askedB; n != 0 {
					t.Errorf("%s: key b asked %d times", label, n)
				}
				trustUnblamed(t, label, p.pool, before)
			}
		}
	}
}
