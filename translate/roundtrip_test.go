package translate

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// TestResponsesCarriesAnthropicSignature streams the recorded Anthropic
// thinking response to a Responses client, replays the client's output items
// as the next request's input, and checks that the Anthropic upstream gets
// the thinking block back with its signature, and the tool call paired.
func TestResponsesCarriesAnthropicSignature(t *testing.T) {
	var body []byte
	for _, fx := range streamFixtures(t, AnthropicMessages) {
		if strings.Contains(fx.name, "thinking-stream") || fx.name == "thinking.sse" {
			body = fx.body
		}
	}
	if body == nil {
		t.Fatal("thinking fixture missing")
	}
	src := anthropicSummary(t, body)
	var sig string
	for _, ev := range readAllEvents(t, bytes.NewReader(body)) {
		if s := gjson.GetBytes(ev.Data, "delta.signature"); s.Exists() {
			sig += s.Str
		}
	}
	out, _, _, err := collect(t, AnthropicMessages, OpenAIResponses, "m", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var output string
	for _, ev := range readAllEvents(t, bytes.NewReader(out)) {
		if ev.Event == "response.completed" {
			output = gjson.GetBytes(ev.Data, "response.output").Raw
		}
	}
	req := `{"model":"m","input":[{"role":"user","content":"q"}]}`
	items := gjson.Parse(output).Array()
	for _, it := range items {
		req, _ = setRawAppend(req, "input", it.Raw)
	}
	req, _ = setRawAppend(req, "input", `{"role":"user","content":"more"}`)
	am, err := TranslateRequest(OpenAIResponses, AnthropicMessages, []byte(req), "claude-sonnet-4-0")
	if err != nil {
		t.Fatal(err)
	}
	th := gjson.GetBytes(am, `messages.1.content.#(type=="thinking")`)
	if th.Get("signature").Str != sig || th.Get("thinking").Str != src.thinking || sig == "" {
		t.Errorf("thinking not carried back: %s", th.Raw)
	}
	// a Chat upstream gets the thinking text as reasoning_content, never
	// the signature
	cc, err := TranslateRequest(OpenAIResponses, OpenAIChat, []byte(req), "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cc), sig[:20]) || gjson.GetBytes(cc, "messages.1.reasoning_content").Str != src.thinking {
		t.Errorf("signature leaked or thinking lost to a chat upstream: %s", cc)
	}
}

// setRawAppend appends a raw JSON value to the array at path.
func setRawAppend(doc, path, raw string) (string, error) {
	arr := gjson.Get(doc, path)
	n := len(arr.Array())
	return sjson.SetRaw(doc, path+"."+strconv.Itoa(n), raw)
}
