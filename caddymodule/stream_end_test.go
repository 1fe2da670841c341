package caddymodule

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// streamEndGateway is streamPair with prices (claude-x $4 / $8, gpt-x
// $1 / $2 per million input / output tokens) and the request log in a
// file, whose path it returns.
func streamEndGateway(t *testing.T) (m *mockupstream.Server, gw, appLog string) {
	t.Helper()
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	appLog = filepath.Join(t.TempDir(), "app.log")
	forgetCostState()
	t.Cleanup(forgetCostState)
	gw = gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n"+
		"\t\tprice claude-x input 4 output 8\n\t\tprice gpt-x input 1 output 2\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n"+
		"\t\t\tkey an-1 "+root+" {\n\t\t\t\tid a1\n\t\t\t\tdialect anthropic\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey an-2 "+root+" {\n\t\t\t\tid a2\n\t\t\t\tdialect anthropic\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n"+
		"\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n"+
		"\t\t\tkey oa-1 "+base+" {\n\t\t\t\tid o1\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey oa-2 "+base+" {\n\t\t\t\tid o2\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	return m, gw, appLog
}

const (
	// OpenAI's usage-only chunk (include_usage), after the error chunk
	chatLateUsage = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":13,\"total_tokens\":34}}\n\n"
	// Anthropic's message_delta with the cumulative usage, after the error
	anthropicLateUsage = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":17}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// TestUsageAfterStreamError: the usage an upstream sends after its
// in-band error event (after content went out) is booked: the request
// log's tokens and cost are those figures at the configured prices, the
// stream still ends as an error for the client and the key (cooling, as
// for the error's status). A Chat passthrough relays the usage-only chunk
// byte for byte when the client asked for usage (and drops it when the
// gateway asked); a translated Responses client gets the usage in
// response.failed.
func TestUsageAfterStreamError(t *testing.T) {
	m, gw, appLog := streamEndGateway(t)
	chatStream := chatRole + chatText + chatErrorJSON + chatLateUsage + "data: [DONE]\n\n"
	m.SetKey("oa-1", replay(chatStream))
	m.SetKey("oa-2", replay(chatStream))
	m.SetKey("an-1", replay(anthropicStart+anthropicText+anthropicOverloaded+anthropicLateUsage))

	// Chat passthrough, the client asked for usage: the vendor's bytes
	resp, b := post(t, gw+"/v1/chat/completions", []byte(`{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`))
	if want := chatRole + chatText + chatErrorJSON + chatLateUsage; resp.StatusCode != 200 || string(b) != want {
		t.Fatalf("chat client, usage asked: %d\n%s\nwant\n%s", resp.StatusCode, b, want)
	}
	// the gateway asked for usage: the client gets what it would have had
	resp, b = post(t, gw+"/v1/chat/completions", []byte(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if want := chatRole + chatText + chatErrorJSON; resp.StatusCode != 200 || string(b) != want {
		t.Fatalf("chat client: %d\n%s\nwant\n%s", resp.StatusCode, b, want)
	}
	// translated: Anthropic upstream, Responses client
	resp, b = post(t, gw+"/v1/responses", []byte(`{"model":"claude-x","stream":true,"input":"hi"}`))
	evs := sseEvents(b)
	last := evs[len(evs)-1]
	if resp.StatusCode != 200 || last.Event != "response.failed" || evs[len(evs)-2].Event != "error" ||
		gjson.GetBytes(last.Data, "response.usage.input_tokens").Int() != 3 || gjson.GetBytes(last.Data, "response.usage.output_tokens").Int() != 17 ||
		bytes.Contains(b, []byte("response.completed")) {
		t.Fatalf("responses client: %d\n%s", resp.StatusCode, b)
	}

	es := requestEntries(t, appLog, 3)
	for i, w := range []struct {
		key     string
		in, out float64
		usd     float64
	}{
		{"o1", 21, 13, 0.000047}, // 21 × $1 + 13 × $2 per million
		{"o2", 21, 13, 0.000047},
		{"a1", 3, 17, 0.000148}, // 3 × $4 + 17 × $8 per million
	} {
		e := es[i]
		if e["key"] != w.key || num(e["input_tokens"]) != w.in || num(e["output_tokens"]) != w.out || num(e["cost_usd"]) != w.usd ||
			num(e["status"]) != 200 || e["stream_outcome"] != streamErrorEvent {
			t.Errorf("request %d: key %v tokens %v / %v cost %v status %v outcome %v, want %s %v / %v %v 200 error",
				i, e["key"], e["input_tokens"], e["output_tokens"], e["cost_usd"], e["status"], e["stream_outcome"], w.key, w.in, w.out, w.usd)
		}
	}
	for _, k := range []struct{ pool, key string }{{"oa", "o1"}, {"oa", "o2"}, {"an", "a1"}} {
		if s := keyStatus(t, k.pool, k.key); s.State != keypool.StateCooling || s.Reason != "server_error" {
			t.Errorf("%s after a mid-stream error: %s %s", k.key, s.State, s.Reason)
		}
	}
}

// geminiBlockedStream is what Gemini's OpenAI-compatible endpoint streams
// for a prompt its safety filter blocks: chunks with "choices": [] and no
// finish_reason.
const geminiBlockedStream = "data: {\"id\":\"g1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[],\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"}}\n\n" +
	"data: {\"id\":\"g1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":0,\"total_tokens\":9}}\n\n" +
	"data: [DONE]\n\n"

// TestBlockedPromptStreamIsAnAnswer: a stream of "choices": [] chunks
// alone that ends cleanly is the answer to a blocked prompt, not a
// truncation: the Chat client gets it byte for byte, an Anthropic client
// an empty message with stop_reason "refusal", a Responses client
// response.incomplete (content_filter); every request is complete, and
// the key stays ready.
func TestBlockedPromptStreamIsAnAnswer(t *testing.T) {
	m, gw, appLog := streamEndGateway(t)
	m.SetKey("oa-1", replay(geminiBlockedStream))
	resp, b := post(t, gw+"/v1/chat/completions", []byte(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"blocked"}]}`))
	if resp.StatusCode != 200 || string(b) != geminiBlockedStream || resp.Header.Get("X-Routed-Via") != "oa/o1" {
		t.Fatalf("chat client: %d via %q\n%s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
	}
	resp, b = post(t, gw+"/v1/messages", []byte(`{"model":"gpt-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"blocked"}]}`), "Anthropic-Version", "2023-06-01")
	var names []string
	var delta []byte
	for _, e := range sseEvents(b) {
		names = append(names, e.Event)
		if e.Event == "message_delta" {
			delta = e.Data
		}
	}
	if resp.StatusCode != 200 || strings.Join(names, ",") != "message_start,ping,message_delta,message_stop" ||
		gjson.GetBytes(delta, "delta.stop_reason").Str != "refusal" || gjson.GetBytes(delta, "usage.input_tokens").Int() != 9 {
		t.Fatalf("anthropic client: %d %v\n%s", resp.StatusCode, names, b)
	}
	resp, b = post(t, gw+"/v1/responses", []byte(`{"model":"gpt-x","stream":true,"input":"blocked"}`))
	evs := sseEvents(b)
	if last := evs[len(evs)-1]; resp.StatusCode != 200 || last.Event != "response.incomplete" ||
		gjson.GetBytes(last.Data, "response.incomplete_details.reason").Str != "content_filter" {
		t.Fatalf("responses client: %d\n%s", resp.StatusCode, b)
	}
	for i, e := range requestEntries(t, appLog, 3) {
		if e["key"] != "o1" || num(e["status"]) != 200 || e["stream_outcome"] != streamComplete || num(e["input_tokens"]) != 9 ||
			num(e["output_tokens"]) != 0 || num(e["cost_usd"]) != 0.000009 || num(e["attempts"]) != 1 {
			t.Errorf("request %d: key %v status %v outcome %v tokens %v / %v cost %v attempts %v", i, e["key"], e["status"], e["stream_outcome"],
				e["input_tokens"], e["output_tokens"], e["cost_usd"], e["attempts"])
		}
	}
	if s := keyStatus(t, "oa", "o1"); s.State != keypool.StateReady {
		t.Errorf("o1 after a blocked prompt: %s %s", s.State, s.Reason)
	}
}

// sseEvents splits an SSE body into its events.
func sseEvents(b []byte) []translate.SSEEvent {
	var evs []translate.SSEEvent
	r := translate.NewSSEReader(bytes.NewReader(b))
	for {
		e, err := r.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, e.Clone())
	}
}
