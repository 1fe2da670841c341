package translate

import (
	"bytes"
	"strings"
	"testing"
)

// TestStreamUsageAsked: only stream true with stream_options.include_usage
// true asks for the usage chunk (OpenAI API reference, "stream_options").
func TestStreamUsageAsked(t *testing.T) {
	for body, want := range map[string]bool{
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`:               true,
		`{"stream_options":{"include_usage":true},"model":"m","stream":true}`:                             true,
		`{"model":"m","stream":true,"messages":[]}`:                                                       false,
		`{"model":"m","stream":true,"stream_options":{"include_usage":false}}`:                            false,
		`{"model":"m","stream":true,"stream_options":null}`:                                               false,
		`{"model":"m","stream":false,"stream_options":{"include_usage":true}}`:                            false,
		`{"model":"m","stream":true,"stream_options":{},"stream_options":{"include_usage":true}}`:         true, // the last, as the vendor reads it
		`{"model":"m","stream":"true","stream_options":{"include_usage":true}}`:                           false,
		`{"model":"m","stream":true,"stream_options":{"include_usage":"true"}}`:                           false,
		`{"model":"m","stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true}}`: true,
	} {
		if got := StreamUsageAsked([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}

// TestRequestStreamUsageAsked: a parsed request keeps what
// StreamUsageAsked reads of its body (its parse walked the top level
// already), for Chat only.
func TestRequestStreamUsageAsked(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, c := range []struct {
		d    Dialect
		body string
		want bool
	}{
		{OpenAIChat, `{"model":"m","stream":true,"stream_options":{"include_usage":true},` + msgs + `}`, true},
		{OpenAIChat, `{"stream_options":{"include_obfuscation":false,"include_usage":true},"model":"m",` + msgs + `,"stream":true}`, true},
		{OpenAIChat, `{"model":"m","stream":true,` + msgs + `}`, false},
		{OpenAIChat, `{"model":"m","stream":true,"stream_options":{"include_usage":false},` + msgs + `}`, false},
		{OpenAIChat, `{"model":"m","stream":true,"stream_options":null,` + msgs + `}`, false},
		{OpenAIChat, `{"model":"m","stream":false,"stream_options":{"include_usage":true},` + msgs + `}`, false},
		{OpenAIChat, `{"model":"m",` + msgs + `}`, false},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"stream":true,"stream_options":{"include_usage":true},` + msgs + `}`, false},
	} {
		for _, up := range []Dialect{OpenAIChat, AnthropicMessages} {
			r, err := ParseRequestFor(c.d, []byte(c.body), up)
			if err != nil {
				if c.d == AnthropicMessages {
					continue // stream_options is no Anthropic member
				}
				t.Fatal(c.body, err)
			}
			if got := r.StreamUsageAsked(); got != c.want || (c.d == OpenAIChat && got != StreamUsageAsked([]byte(c.body))) {
				t.Errorf("%s (for %s): %v, want %v", c.body, up, got, c.want)
			}
		}
	}
}

// TestTranslatedChatStreamHidesUsageChunk: a stream translated to a Chat
// client ends with the usage-only chunk (choices []) only when the client
// asked for it; with HideUsageChunk it is left out, every other chunk is
// the same, and Usage still reports the upstream's counts.
func TestTranslatedChatStreamHidesUsageChunk(t *testing.T) {
	am := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","model":"c","content":[],"usage":{"input_tokens":7,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)
	for _, from := range []Dialect{AnthropicMessages} { // Responses upstreams: TestOpenAIChatSDKAgainstAnthropicUpstream
		var shown, hidden bytes.Buffer
		full := NewStreamTranslator(from, OpenAIChat, "client-model", EventWriterFunc(func(p []byte) error { shown.Write(p); return nil }))
		if err := full.Run(strings.NewReader(am)); err != nil {
			t.Fatal(err)
		}
		h := NewStreamTranslator(from, OpenAIChat, "client-model", EventWriterFunc(func(p []byte) error { hidden.Write(p); return nil }))
		h.HideUsageChunk()
		if err := h.Run(strings.NewReader(am)); err != nil {
			t.Fatal(err)
		}
		const usageChunk = `"choices":[],"usage":`
		evs := strings.SplitAfter(shown.String(), "\n\n")
		if strings.Count(shown.String(), usageChunk) != 1 || len(evs) < 3 || !strings.Contains(evs[len(evs)-3], usageChunk) || evs[len(evs)-2] != "data: [DONE]\n\n" {
			t.Fatalf("%s: the stream does not end with one usage chunk:\n%s", from, shown.String())
		}
		if strings.Contains(hidden.String(), `"choices":[]`) || strings.Contains(hidden.String(), `"usage"`) {
			t.Fatalf("%s: usage chunk sent with HideUsageChunk:\n%s", from, hidden.String())
		}
		// the same stream without that one event
		var events []string
		for _, ev := range strings.SplitAfter(shown.String(), "\n\n") {
			if !strings.Contains(ev, usageChunk) {
				events = append(events, ev)
			}
		}
		if got := strings.Join(events, ""); got != hidden.String() {
			t.Fatalf("%s: hidden stream differs beyond the usage chunk:\n%s\nwant\n%s", from, hidden.String(), got)
		}
		if !strings.HasSuffix(hidden.String(), "data: [DONE]\n\n") {
			t.Fatalf("%s: no [DONE]:\n%s", from, hidden.String())
		}
		if u := h.Usage(); u.InputTokens == nil || *u.InputTokens != 7 || u.OutputTokens == nil || *u.OutputTokens != 2 {
			t.Fatalf("%s: usage %v", from, u)
		}
	}
}
