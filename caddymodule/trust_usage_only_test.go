package caddymodule

import (
	"testing"
)

// TestTrustUsageOnlyStreamMovesOn: an OpenAI Chat key whose stream is a
// usage chunk (choices: []) and [DONE], no choice at all and no block
// reason, answered nothing: from every client dialect the request moves
// on to the pool's other key, whose answer the client gets, and the
// first key's failure is counted (the upstream's, not the client's: no
// success, no relayed refusal).
func TestTrustUsageOnlyStreamMovesOn(t *testing.T) {
	u, gw := trustGateway(t)
	usageOnly := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x-chat","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}` + "\n\ndata: [DONE]\n\n"
	for _, client := range d2Clients {
		poolFor(t, "tc").ClearCooldown("")
		failsA := keyStatus(t, "tc", "tca").Failures
		u.set(trustKey("tc", "a"), trustAnswer{sse: true, body: usageOnly})
		u.set(trustKey("tc", "b"), trustAnswer{sse: true, body: d2Good["chat"]})
		askedB := u.count(trustKey("tc", "b"))
		path, body, hdr := d2Client(client, "x-chat", true)
		resp, b := post(t, gw+path, body, hdr...)
		if resp.StatusCode != 200 || d2Text(client, b, true) != "Paris" || !d2Clean(client, b) || resp.Header.Get("X-Routed-Via") != "tc/tcb" {
			t.Errorf("%s client: %d via %q %.600s", client, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
		if n := u.count(trustKey("tc", "b")) - askedB; n != 1 {
			t.Errorf("%s client: key b asked %d times, want 1", client, n)
		}
		if n := keyStatus(t, "tc", "tca").Failures - failsA; n != 1 {
			t.Errorf("%s client: key a counted %d failures for answering nothing, want 1", client, n)
		}
	}
}
