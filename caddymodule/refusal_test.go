package caddymodule

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestRefusalReachesResponsesClient: a Chat Completions upstream's
// refusal (message.refusal, streamed delta.refusal) reaches an openai-go
// Responses client through the gateway as a refusal content part
// (response.refusal.delta / .done in the stream), not as output_text, so
// OutputText() stays empty and the client can tell a refusal from an
// answer, as with OpenAI's own Responses API.
func TestRefusalReachesResponsesClient(t *testing.T) {
	m, gw := streamPair(t)
	const refusal = "I'm sorry, I can't help with that."
	c := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	params := responses.ResponseNewParams{Model: "gpt-x", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("something it refuses")}}
	refusalOf := func(r *responses.Response) string {
		if len(r.Output) != 1 || len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Type != "refusal" {
			return ""
		}
		return r.Output[0].Content[0].Refusal
	}

	m.SetKey("oa-1", mockupstream.KeyBehavior{ReplayStatus: 200, ReplayContentType: "application/json", ReplayBody: []byte(
		`{"id":"chatcmpl-r","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"` + refusal + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}`)})
	r, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := refusalOf(r); got != refusal || r.OutputText() != "" {
		t.Errorf("whole answer: refusal %q, output_text %q: %s", got, r.OutputText(), r.RawJSON())
	}

	chunk := func(delta string) string {
		return `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	m.SetKey("oa-1", replay(chunk(`{"role":"assistant","content":null,"refusal":""}`)+
		chunk(`{"refusal":"I'm sorry, "}`)+chunk(`{"refusal":"I can't help with that."}`)+
		`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"+
		`data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}`+"\n\n"+
		"data: [DONE]\n\n"))
	st := c.Responses.NewStreaming(context.Background(), params)
	var deltas, done string
	var final *responses.Response
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "response.output_text.delta":
			t.Errorf("refusal streamed as output_text: %s", ev.RawJSON())
		case "response.refusal.delta":
			deltas += ev.Delta
		case "response.refusal.done":
			done = ev.Refusal
		case "response.completed", "response.incomplete":
			resp := ev.Response
			final = &resp
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != refusal || done != refusal {
		t.Errorf("stream: refusal deltas %q, done %q", deltas, done)
	}
	if final == nil || refusalOf(final) != refusal || final.OutputText() != "" {
		t.Errorf("stream: terminal response %+v", final)
	}
}
