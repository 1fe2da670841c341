package translate

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// collect runs a translator over r and returns the client bytes and events.
func collect(t testing.TB, from, to Dialect, model string, r io.Reader) ([]byte, [][]byte, *StreamTranslator, error) {
	t.Helper()
	return collectWith(from, to, model, r, false)
}

// collectWith is collect, with HoldPreamble when hold is set.
func collectWith(from, to Dialect, model string, r io.Reader, hold bool) ([]byte, [][]byte, *StreamTranslator, error) {
	var out []byte
	var evs [][]byte
	tr := NewStreamTranslator(from, to, model, EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		evs = append(evs, bytes.Clone(p))
		return nil
	}))
	if hold {
		tr.HoldPreamble()
	}
	err := tr.Run(r)
	return out, evs, tr, err
}

func TestPassthroughStreams(t *testing.T) {
	for _, d := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for _, fx := range streamFixtures(t, d) {
			// no model rewrite: byte-identical
			out, _, tr, err := collect(t, d, d, "", bytes.NewReader(fx.body))
			if err != nil {
				t.Fatalf("%s: %v", fx.name, err)
			}
			if !bytes.Equal(out, fx.body) && !bytes.Equal(out, append(bytes.Clone(fx.body), '\n')) && !bytes.Equal(out, append(bytes.Clone(fx.body), '\n', '\n')) {
				t.Errorf("%s: passthrough changed bytes", fx.name)
			}
			if tr.Usage().IsZero() && !strings.Contains(fx.name, "max-tokens") && d != OpenAIChat {
				t.Errorf("%s: no usage observed", fx.name)
			}
			// model rewrite: only the model changes
			out2, _, _, err := collect(t, d, d, "client-model", iotest.OneByteReader(bytes.NewReader(fx.body)))
			if err != nil {
				t.Fatal(err)
			}
			evs := readAllEvents(t, bytes.NewReader(out2))
			for _, ev := range evs {
				if len(ev.Data) == 0 || string(ev.Data) == "[DONE]" {
					continue
				}
				for _, p := range []string{"model", "message.model", "response.model"} {
					if m := gjson.GetBytes(ev.Data, p); m.Exists() && m.Str != "client-model" && p != "model" || (p == "model" && d == OpenAIChat && m.Exists() && m.Str != "client-model") {
						t.Errorf("%s: %s not rewritten: %s", fx.name, p, ev.Data)
					}
				}
			}
		}
	}
}

func TestPassthroughChatUsage(t *testing.T) {
	for _, fx := range streamFixtures(t, OpenAIChat) {
		_, _, tr, _ := collect(t, OpenAIChat, OpenAIChat, "", bytes.NewReader(fx.body))
		u := tr.Usage()
		if fx.noUsage { // never an invented 0
			if !u.IsZero() {
				t.Errorf("%s: usage %v from a stream without usage", fx.name, u)
			}
			continue
		}
		if u.InputTokens == nil || u.OutputTokens == nil {
			t.Errorf("%s: usage %v", fx.name, u)
		}
	}
}

func TestPassthroughTruncated(t *testing.T) {
	in := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}"
	out, _, _, err := collect(t, OpenAIChat, OpenAIChat, "", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	// a truncation: the client gets an error chunk, no finish and no [DONE]
	want := in + "\n\n" + `data: {"error":{"message":"upstream stream ended without a finish reason; the answer is incomplete","type":"server_error","param":null,"code":"upstream_unavailable"}}` + "\n\n"
	if string(out) != want {
		t.Errorf("truncation not relayed as an error:\n%s", out)
	}
	boom := errors.New("reset")
	out, _, _, err = collect(t, AnthropicMessages, AnthropicMessages, "", io.MultiReader(strings.NewReader("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":1}}}\n\n"), iotest.ErrReader(boom)))
	if err != boom || !strings.HasSuffix(string(out), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"upstream stream interrupted: connection error\"}}\n\n") {
		t.Errorf("error not reported: %v %s", err, out)
	}
}

func TestPassthroughResponsesFailedScrubbedAndRenamed(t *testing.T) {
	in := "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"model\":\"up\",\"status\":\"failed\",\"error\":{\"code\":\"x\",\"message\":\"bad key sk-abcdefghijklmnopqrst\"}}}\n\n"
	out, _, _, _ := collect(t, OpenAIResponses, OpenAIResponses, "client", strings.NewReader(in))
	if strings.Contains(string(out), "sk-abcdefghij") || !strings.Contains(string(out), `"model":"client"`) {
		t.Errorf("got %s", out)
	}
}

// TestPassthroughResponsesErrorScrubbedBoth: a Responses error event with
// both the flat message and the nested error.message (OpenAI sends both) is
// relayed with a secret removed from each, every other byte kept.
func TestPassthroughResponsesErrorScrubbedBoth(t *testing.T) {
	const data = `{"type":"error","sequence_number":2,"code":"invalid_api_key","message":"bad key sk-abcdefghijklmnopqrst","param":null,` +
		`"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"bad key sk-abcdefghijklmnopqrst","param":null}}`
	out, _, tr, _ := collect(t, OpenAIResponses, OpenAIResponses, "", strings.NewReader("event: error\ndata: "+data+"\n\n"))
	clean := ScrubSecrets("bad key sk-abcdefghijklmnopqrst")
	want := "event: error\ndata: " + strings.ReplaceAll(data, "bad key sk-abcdefghijklmnopqrst", clean) + "\n\n"
	if clean == "bad key sk-abcdefghijklmnopqrst" || string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if tr.UpstreamError() == nil || tr.UpstreamError().Status != 401 {
		t.Errorf("upstream error %+v", tr.UpstreamError())
	}
}

func TestAddStreamUsageAndHide(t *testing.T) {
	body := []byte(`{"model":"m","stream":true,"messages":[]}`)
	out, asked := AddStreamUsage(body)
	if asked || string(out) != `{"model":"m","stream":true,"messages":[],"stream_options":{"include_usage":true}}` {
		t.Errorf("%v %s", asked, out)
	}
	if _, asked = AddStreamUsage([]byte(`{"stream":true,"stream_options":{"include_usage":true}}`)); !asked {
		t.Error("client ask not seen")
	}
	if out, _ = AddStreamUsage([]byte(`{"messages":[]}`)); string(out) != `{"messages":[]}` {
		t.Error("non-stream changed")
	}
	for _, fx := range streamFixtures(t, OpenAIChat) {
		var got []byte
		tr := NewStreamTranslator(OpenAIChat, OpenAIChat, "", EventWriterFunc(func(p []byte) error { got = append(got, p...); return nil }))
		tr.HideUsageChunk()
		if err := tr.Run(bytes.NewReader(fx.body)); err != nil {
			t.Fatal(err)
		}
		if tr.Usage().InputTokens == nil && !fx.noUsage {
			t.Errorf("%s: usage not observed", fx.name)
		}
		for _, ev := range readAllEvents(t, bytes.NewReader(got)) {
			if gjson.GetBytes(ev.Data, "usage").IsObject() && gjson.GetBytes(ev.Data, "choices.#").Int() == 0 {
				t.Errorf("%s: usage chunk not hidden", fx.name)
			}
		}
		if !bytes.HasSuffix(bytes.TrimRight(got, "\r\n"), []byte("data: [DONE]")) { // CRLF streams keep their line ends
			t.Errorf("%s: terminator lost", fx.name)
		}
	}
}

// TestChatModelPlaceReused checks the passthrough's model rewrite when it
// reuses the place of the previous chunk's model (modelPlace): chunks
// with the same leading bytes are rewritten there; a chunk whose leading
// bytes differ, whose model moved, whose model is another name, or whose
// nested object has a "model" where the top-level one was, is looked up
// again; every chunk comes out as sjson would rewrite its top-level model.
func TestChatModelPlaceReused(t *testing.T) {
	chunks := []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-m","choices":[{"index":0,"delta":{"content":"b \"model\":\"x\""},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":2,"model":"up-m","choices":[{"index":0,"delta":{"content":"c"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":2,"model":"up-m2","choices":[{"index":0,"delta":{"content":"d"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":2,"choices":[{"index":0,"delta":{"content":"e"},"finish_reason":null}],"model":"up-m"}`,
		`{"id":"c1","object":"chat.completion.chunk","created":2,"x":{"model":"up-m"},"model":"up-m","choices":[{"index":0,"delta":{"content":"f"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":2,"model":"client-m","choices":[{"index":0,"delta":{"content":"g"},"finish_reason":"stop"}]}`,
	}
	var in, want bytes.Buffer
	for _, c := range chunks {
		in.WriteString("data: " + c + "\n\n")
		w, err := sjson.Set(c, "model", "client-m")
		if err != nil {
			t.Fatal(err)
		}
		want.WriteString("data: " + w + "\n\n")
	}
	in.WriteString("data: [DONE]\n\n")
	want.WriteString("data: [DONE]\n\n")
	var out []byte
	tr := NewStreamTranslator(OpenAIChat, OpenAIChat, "client-m", EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		return nil
	}))
	if err := tr.Run(&in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want.Bytes()) {
		t.Fatalf("got\n%s\nwant\n%s", out, want.Bytes())
	}
}
