package caddymodule

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestAnthropicClientToOpenAIReasoningModel: an Anthropic Messages request
// with temperature 0.2, top_p and stop_sequences (Claude Code sends
// temperature) reaches an OpenAI-dialect key serving o3 without them, as
// OpenAI refuses them for its reasoning models, and to a Responses-dialect
// key serving gpt-5-mini likewise; the same request for gpt-4o keeps them,
// and a Chat client's own request to o3 passes through byte for byte apart
// from the model.
func TestAnthropicClientToOpenAIReasoningModel(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"oa-key": {}, "rs-key": {},
	}})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool oa {\n\t\t\tmodels o3 gpt-4o\n\t\t\tkey oa-key "+base+" {\n\t\t\t\tid oa\n\t\t\t}\n\t\t}\n"+
		"\t\tpool rs {\n\t\t\tmodels gpt-5-mini\n\t\t\tkey rs-key "+base+" {\n\t\t\t\tid rs\n\t\t\t\tdialect responses\n\t\t\t}\n\t\t}\n\t}\n")
	am := func(model string) []byte {
		return []byte(`{"model":"` + model + `","max_tokens":256,"temperature":0.2,"top_p":0.9,"stop_sequences":["END"],` +
			`"system":"be brief","messages":[{"role":"user","content":"hello"}]}`)
	}
	for _, c := range []struct {
		model, key string
		want       map[string]string // member of the upstream request -> raw ("" = absent)
	}{
		{"o3", "oa-key", map[string]string{"temperature": "", "top_p": "", "stop": "", "max_completion_tokens": "256", "model": `"o3"`}},
		{"gpt-4o", "oa-key", map[string]string{"temperature": "0.2", "top_p": "0.9", "stop": `["END"]`, "max_completion_tokens": "256"}},
		{"gpt-5-mini", "rs-key", map[string]string{"temperature": "", "top_p": "", "max_output_tokens": "256", "instructions": `"be brief"`}},
	} {
		resp, b := post(t, gw+"/v1/messages", am(c.model))
		if resp.StatusCode != 200 || gjson.GetBytes(b, "type").Str != "message" || gjson.GetBytes(b, "content.0.text").Str != mockupstream.Text("hello") {
			t.Fatalf("%s: %d %s", c.model, resp.StatusCode, b)
		}
		sent := m.Stats(c.key).LastBody
		for path, want := range c.want {
			if got := gjson.GetBytes(sent, path).Raw; got != want {
				t.Errorf("%s: upstream %s = %s, want %q\n%s", c.model, path, got, want, sent)
			}
		}
	}

	// a Chat client on a Chat key: passthrough, its parameters untouched
	chat := `{"model":"o3","temperature":0.2,"stop":["END"],"messages":[{"role":"user","content":"hello"}]}`
	resp, b := post(t, gw+"/v1/chat/completions", []byte(chat))
	if resp.StatusCode != 200 {
		t.Fatalf("chat passthrough: %d %s", resp.StatusCode, b)
	}
	if got := string(m.Stats("oa-key").LastBody); got != chat {
		t.Errorf("chat passthrough changed the body:\n got %s\nwant %s", got, chat)
	}
	if !strings.Contains(string(b), `"chat.completion"`) {
		t.Errorf("chat passthrough answer %s", b)
	}
}
