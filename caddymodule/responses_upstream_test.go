package caddymodule

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestResponsesPassthroughByteIdentical: an OpenAI Responses client served
// by a dialect responses key gets the upstream's bytes, streamed and not,
// exactly as a direct call to the upstream gets them (the model name
// rewritten only when the pool maps it), and the upstream gets the
// client's bytes.
func TestResponsesPassthroughByteIdentical(t *testing.T) {
	// what the upstream answers when called directly
	_, recBase := mock(t, mockupstream.Config{})
	direct := func(body string) []byte {
		resp, b := post(t, recBase+"/responses", []byte(body), "Authorization", "Bearer rs-direct")
		if resp.StatusCode != 200 {
			t.Fatalf("direct call: %d %s", resp.StatusCode, b)
		}
		return b
	}
	const tools = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	jsonBody := `{"model":"up-model","store":false,"instructions":"be brief","input":[{"role":"user","content":"please use the tool"}],` + tools + `,"reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"]}`
	streamBody := `{"model":"up-model","stream":true,"store":false,"input":"stream me"}`
	recJSON, recStream := direct(jsonBody), direct(streamBody)
	if !bytes.Contains(recJSON, []byte(`"model":"up-model"`)) || !bytes.Contains(recStream, []byte(`"model":"up-model"`)) ||
		!bytes.Contains(recJSON, []byte(`"type":"function_call"`)) || !bytes.Contains(recJSON, []byte(`"encrypted_content"`)) ||
		!bytes.Contains(recStream, []byte("response.output_text.delta")) {
		t.Fatalf("recorded answers lack a function call, encrypted reasoning or text deltas:\n%s\n%s", recJSON, recStream)
	}

	// the same bytes replayed by the keys behind the gateway
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"rs-json":   {ReplayBody: recJSON, ReplayContentType: "application/json"},
		"rs-stream": {ReplayBody: recStream, ReplayContentType: "text/event-stream"},
	}})
	rsKey := func(secret, id string) string {
		return "\t\t\tkey " + secret + " " + base + " {\n\t\t\t\tid " + id + "\n\t\t\t\tdialect responses\n\t\t\t}\n"
	}
	gw := gateway(t, gatewayBlock(
		"\t\tpool rj {\n\t\t\tmodels up-model alias-json\n\t\t\tmodel_map alias-json up-model\n"+rsKey("rs-json", "rj")+"\t\t}\n",
		"\t\tpool rst {\n\t\t\tmodels up-model-s alias-stream\n\t\t\tmodel_map alias-stream up-model\n"+rsKey("rs-stream", "rst")+"\t\t}\n"))

	cases := []struct {
		name, key, body, clientModel string
		mapped                       bool // the pool asks the upstream for up-model
		want                         []byte
	}{
		{"json", "rs-json", jsonBody, "up-model", false, recJSON},
		{"json, model mapped", "rs-json", jsonBody, "alias-json", true, recJSON},
		{"stream", "rs-stream", streamBody, "up-model-s", false, recStream},
		{"stream, model mapped", "rs-stream", streamBody, "alias-stream", true, recStream},
	}
	for _, c := range cases {
		body := strings.Replace(c.body, `"model":"up-model"`, `"model":"`+c.clientModel+`"`, 1)
		resp, got := post(t, gw+"/v1/responses", []byte(body))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.name, resp.StatusCode, got)
		}
		want := c.want
		if c.mapped {
			// the client sees its own model name, and nothing else changes
			want = bytes.ReplaceAll(want, []byte(`"model":"up-model"`), []byte(`"model":"`+c.clientModel+`"`))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: answer differs from the direct call's\n got: %s\nwant: %s", c.name, got, want)
		}
		// the upstream got the client's bytes, the model rewritten when mapped
		sent := m.Stats(c.key).LastBody
		wantSent := body
		if c.mapped {
			wantSent = strings.Replace(body, `"model":"`+c.clientModel+`"`, `"model":"up-model"`, 1)
		}
		if string(sent) != wantSent {
			t.Errorf("%s: upstream got\n%s\nwant\n%s", c.name, sent, wantSent)
		}
	}
}
