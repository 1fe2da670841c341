package caddymodule

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// postRaw sends body to the gateway's path with the gateway key and
// returns the answer's body.
func postRaw(t *testing.T, url, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	req.Header.Set("x-api-key", gatewayKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%s: %d %s", url, res.StatusCode, b)
	}
	return string(b)
}

// TestStopEmulationThroughGateway: an Anthropic client's stop_sequences
// and a Chat client's stop, sent to a Responses key (which has no stop
// parameter), are applied by the gateway: the text ends before the stop
// string, the turn ends with stop_reason stop_sequence and the string
// (Chat: finish_reason stop), whole and streamed, and the usage is the
// upstream's. An upstream that takes stop (a Chat key, an Anthropic
// passthrough) gets it and its answer is relayed as it came.
func TestStopEmulationThroughGateway(t *testing.T) {
	m, gw := dialectGateway(t)
	const msg = "alpha STOPHERE beta gamma"
	full := mockupstream.Text(msg)
	cut, _, ok := strings.Cut(full, "STOPHERE")
	if !ok {
		t.Fatalf("mock text %q", full)
	}
	words := int64(len(mockupstream.Words(full)))
	am := func(model string, stream bool) string {
		s := map[bool]string{true: `,"stream":true`}[stream]
		return `{"model":"` + model + `","max_tokens":200,"stop_sequences":["STOPHERE"]` + s + `,"messages":[{"role":"user","content":"` + msg + `"}]}`
	}
	cc := func(model string, stream bool) string {
		s := map[bool]string{true: `,"stream":true,"stream_options":{"include_usage":true}`}[stream]
		return `{"model":"` + model + `","stop":"STOPHERE"` + s + `,"messages":[{"role":"user","content":"` + msg + `"}]}`
	}
	sse := func(out string) []gjson.Result {
		var ds []gjson.Result
		for _, line := range strings.Split(out, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
				ds = append(ds, gjson.Parse(d))
			}
		}
		return ds
	}

	// Anthropic client, Responses key: emulated
	out := postRaw(t, gw+"/v1/messages", am("rs-x", false))
	if g := gjson.Get(out, "content.0.text").Str; g != cut || gjson.Get(out, "stop_reason").Str != "stop_sequence" || gjson.Get(out, "stop_sequence").Str != "STOPHERE" || gjson.Get(out, "usage.output_tokens").Int() != words {
		t.Errorf("anthropic whole: %s", out)
	}
	if b := m.Stats("rs-key").LastBody; gjson.GetBytes(b, "stop").Exists() || strings.Contains(string(b), `"STOPHERE"`) {
		t.Errorf("stop sent to a Responses key: %s", b)
	}
	out = postRaw(t, gw+"/v1/messages", am("rs-x", true))
	var text strings.Builder
	var md gjson.Result
	for _, d := range sse(out) {
		if d.Get("delta.type").Str == "text_delta" {
			text.WriteString(d.Get("delta.text").Str)
		}
		if d.Get("type").Str == "message_delta" {
			md = d
		}
	}
	if text.String() != cut || md.Get("delta.stop_reason").Str != "stop_sequence" || md.Get("delta.stop_sequence").Str != "STOPHERE" || md.Get("usage.output_tokens").Int() != words || !strings.Contains(out, "message_stop") {
		t.Errorf("anthropic stream: %q %s\n%s", text.String(), md.Raw, out)
	}

	// Chat client, Responses key: emulated
	out = postRaw(t, gw+"/v1/chat/completions", cc("rs-x", false))
	if g := gjson.Get(out, "choices.0.message.content").Str; g != cut || gjson.Get(out, "choices.0.finish_reason").Str != "stop" || gjson.Get(out, "usage.completion_tokens").Int() != words {
		t.Errorf("chat whole: %s", out)
	}
	out = postRaw(t, gw+"/v1/chat/completions", cc("rs-x", true))
	text.Reset()
	var frs []string
	var usage int64
	for _, d := range sse(out) {
		text.WriteString(d.Get("choices.0.delta.content").Str)
		if fr := d.Get("choices.0.finish_reason").Str; fr != "" {
			frs = append(frs, fr)
		}
		if u := d.Get("usage.completion_tokens"); u.Exists() {
			usage = u.Int()
		}
	}
	if text.String() != cut || strings.Join(frs, ",") != "stop" || usage != words || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Errorf("chat stream: %q %v %d\n%s", text.String(), frs, usage, out)
	}

	// upstreams that take stop: sent, not emulated (the mock ignores it)
	out = postRaw(t, gw+"/v1/messages", am("gpt-x", false))
	if gjson.Get(out, "content.0.text").Str != full || gjson.Get(out, "stop_reason").Str != "end_turn" {
		t.Errorf("anthropic to a Chat key: %s", out)
	}
	if s := gjson.GetBytes(m.Stats("oa-key").LastBody, "stop").Raw; s != `["STOPHERE"]` {
		t.Errorf("Chat key got stop %s", s)
	}
	out = postRaw(t, gw+"/v1/messages", am("claude-x", true))
	if !strings.Contains(out, "gamma") || strings.Contains(out, "stop_sequence\":\"STOPHERE") {
		t.Errorf("anthropic passthrough changed: %s", out)
	}
}
