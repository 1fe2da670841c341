package caddymodule

import (
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/keypool"
)

// chatFinish is a Chat stream's finish chunk.
const chatFinish = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"

// TestBareEmptyChatStreamMovesOn: a Chat stream of a bare "choices": []
// chunk (no promptFeedback block reason, no usage) then [DONE] is an
// upstream that answered nothing, not a blocked prompt: nothing reaches
// the client, the attempt counts against its key, and the request moves
// on to the next key, whose answer the client gets byte for byte.
func TestBareEmptyChatStreamMovesOn(t *testing.T) {
	m, gw, appLog := streamEndGateway(t)
	m.SetKey("oa-1", replay("data: {\"id\":\"c0\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[]}\n\ndata: [DONE]\n\n"))
	good := chatRole + chatText + chatFinish + "data: [DONE]\n\n"
	m.SetKey("oa-2", replay(good))
	resp, b := post(t, gw+"/v1/chat/completions", []byte(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if resp.StatusCode != 200 || string(b) != good || resp.Header.Get("X-Routed-Via") != "oa/o2" {
		t.Fatalf("chat client: %d via %q\n%s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
	e := requestEntries(t, appLog, 1)[0]
	if e["key"] != "o2" || num(e["attempts"]) != 2 || e["stream_outcome"] != streamComplete {
		t.Errorf("request: key %v attempts %v outcome %v, want o2 2 complete", e["key"], e["attempts"], e["stream_outcome"])
	}
	if s := keyStatus(t, "oa", "o1"); s.State == keypool.StateReady && s.Reason == "" {
		t.Errorf("o1 after an empty stream: %s %q, want the failure counted", s.State, s.Reason)
	}
}

// TestMalformedChoicesChunkIsAFailure: a Chat chunk whose "choices" is an
// object (here a usage chunk, {"choices":{"0":…}}) after content went out
// is the upstream's failure: the Chat client's stream ends with an error
// chunk (no [DONE]), the request log says so, and the key cools as for a
// server error.
func TestMalformedChoicesChunkIsAFailure(t *testing.T) {
	m, gw, appLog := streamEndGateway(t)
	bad := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":{\"0\":{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}},\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n"
	m.SetKey("oa-1", replay(chatRole+chatText+bad+"data: [DONE]\n\n"))
	resp, b := post(t, gw+"/v1/chat/completions", []byte(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	got := string(b)
	if resp.StatusCode != 200 || !strings.HasPrefix(got, chatRole+chatText+"data: {\"error\":{") || !strings.Contains(got, "choices is not an array") ||
		strings.Contains(got, "[DONE]") || strings.Contains(got, "\"0\":") {
		t.Fatalf("chat client: %d\n%s", resp.StatusCode, b)
	}
	e := requestEntries(t, appLog, 1)[0]
	if e["key"] != "o1" || e["stream_outcome"] != streamErrorEvent {
		t.Errorf("request: key %v outcome %v, want o1 error", e["key"], e["stream_outcome"])
	}
	if s := keyStatus(t, "oa", "o1"); s.State != keypool.StateCooling || s.Reason != "server_error" {
		t.Errorf("o1 after a malformed chunk: %s %s", s.State, s.Reason)
	}
}
