package translate

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// bareStarts and bareContents are, per upstream dialect, a stream's
// preamble and its first content.
var (
	bareStarts = map[Dialect]string{
		OpenAIChat:        ccChunk(`{"role":"assistant","content":""}`, "", ""),
		AnthropicMessages: amStart + amPing,
		OpenAIResponses:   rsPreamble,
	}
	bareContents = map[Dialect]string{
		OpenAIChat:        ccChunk(`{"content":"partial"}`, "", ""),
		AnthropicMessages: amText("partial"),
		OpenAIResponses:   rsContent,
	}
)

// TestBareJSONErrorInStream: a relay's JSON error written into a 200
// event stream without "data:" (one-api / new-api / OpenRouter style:
// {"error":{"message","type","code"}}, the same without the "error"
// wrapper, vLLM's "object":"error", an Anthropic-shaped error object;
// with and without a line end at EOF) is the upstream's in-band error,
// as the same error sent as data: is: after content the client gets it
// in its dialect (Chat data: {"error":…}, Anthropic event: error,
// Responses error and response.failed), its message scrubbed of
// credentials, never the gateway's truncation error; UpstreamError has its
// type and status; passthrough and translated. Before the first content,
// with HoldPreamble, nothing is written and Run's error wraps
// ErrNotCommitted and that StreamError. JSON that is no error is left as
// it was (the stream is a truncation).
func TestBareJSONErrorInStream(t *testing.T) {
	const secret = "sk-abcdefghijklmnopqrstu"
	type tc struct {
		name, raw  string
		typ        map[Dialect]string // UpstreamError().Type per upstream dialect ("" = same as any)
		status     int
		clientWord string // in the client's error message
	}
	cases := []tc{
		{"wrapped, numeric code", `{"error":{"message":"upstream provider failed for ` + secret + `","type":"server_error","code":502}}`,
			map[Dialect]string{OpenAIChat: "502", OpenAIResponses: "502", AnthropicMessages: "server_error"}, 502, "upstream provider failed"},
		{"wrapped, request's error", `{"error":{"message":"prompt is too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}` + "\n",
			map[Dialect]string{OpenAIChat: "context_length_exceeded", OpenAIResponses: "context_length_exceeded", AnthropicMessages: "invalid_request_error"}, 400, "prompt is too long"},
		{"flat", `{"message":"no channel available for model","type":"new_api_error","code":"model_not_found"}` + "\n\n",
			map[Dialect]string{OpenAIChat: "model_not_found", OpenAIResponses: "model_not_found", AnthropicMessages: "new_api_error"}, 404, "no channel available"},
		{"vLLM object error", `{"object":"error","message":"The model is overloaded","type":"ServiceUnavailableError","code":503}` + "\n\n",
			map[Dialect]string{OpenAIChat: "503", OpenAIResponses: "503", AnthropicMessages: "ServiceUnavailableError"}, 503, "overloaded"},
		{"Anthropic shape", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n",
			map[Dialect]string{OpenAIChat: "overloaded_error", OpenAIResponses: "overloaded_error", AnthropicMessages: "overloaded_error"}, 529, "Overloaded"},
		{"pretty-printed", "{\n  \"error\": {\n    \"message\": \"upstream timed out\",\n    \"type\": \"timeout\",\n    \"code\": 504\n  }\n}\n\n",
			map[Dialect]string{OpenAIChat: "504", OpenAIResponses: "504", AnthropicMessages: "timeout"}, 504, "upstream timed out"},
	}
	for _, c := range cases {
		for _, from := range allDialects {
			for _, to := range allDialects {
				label := c.name + ", " + from.String() + "→" + to.String()
				// after content: relayed in the client's dialect
				in := bareStarts[from] + bareContents[from] + c.raw
				out, _, tr, err := collect(t, from, to, "client-model", strings.NewReader(in))
				if err != nil {
					t.Fatalf("%s: Run: %v", label, err)
				}
				se := tr.UpstreamError()
				if se == nil || se.Type != c.typ[from] || se.Status != c.status || tr.Truncated() {
					t.Fatalf("%s: UpstreamError %+v, truncated %v", label, se, tr.Truncated())
				}
				s := string(out)
				if strings.Contains(s, secret) || strings.Contains(string(se.Body), secret) || strings.Contains(s, msgTruncated) {
					t.Errorf("%s: leaked the credential or ended as a truncation:\n%s", label, s)
				}
				last := lastEvent(t, out)
				msgPath := "error.message"
				if to == OpenAIResponses {
					msgPath = "response.error.message"
				}
				if m := gjson.GetBytes(last.Data, msgPath).Str; !strings.Contains(m, c.clientWord) {
					t.Errorf("%s: the client's error says %q, not the upstream's words:\n%s", label, m, s)
				}
				if from == to && to == OpenAIChat && gjson.GetBytes(last.Data, "error.type").Str != gjson.Get(strings.ReplaceAll(c.raw, "\n", ""), "error.type").Str &&
					gjson.Get(c.raw, "error").Exists() {
					t.Errorf("%s: the upstream's error type is not relayed: %s", label, last.Data)
				}
				assertErrorForm(t, label, to, out, "")
				// before content: nothing written, the attempt fails with it
				writes := 0
				th := NewStreamTranslator(from, to, "m", EventWriterFunc(func([]byte) error { writes++; return nil }))
				th.HoldPreamble()
				err = th.Run(strings.NewReader(bareStarts[from] + c.raw))
				var hse *StreamError
				if writes != 0 || !errors.Is(err, ErrNotCommitted) || !errors.As(err, &hse) || hse != th.UpstreamError() || hse.Status != c.status {
					t.Errorf("%s, before content: %d writes, err %v", label, writes, err)
				}
			}
		}
	}
	// JSON without data: that states no error stays what it was (a
	// relay's heartbeat with a type and a message too): the stream ends
	// without a finish reason
	for _, raw := range []string{`{"foo":1}`, `{"error":null}`, `{"error":{}}`, `{"message":"hello"}`, `{"type":"ping","message":"keep-alive"}`, `{"type":"status","message":"queued","code":null}`, `{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}],"message":"m","type":"t"}`} {
		for _, from := range allDialects {
			_, _, tr, _ := collect(t, from, from, "", strings.NewReader(bareStarts[from]+bareContents[from]+raw+"\n\n"))
			if tr.UpstreamError() != nil || !tr.Truncated() {
				t.Errorf("%s %s: UpstreamError %+v, truncated %v", from, raw, tr.UpstreamError(), tr.Truncated())
			}
		}
	}
}

// TestBareJSONErrorBesideData: a relay's JSON error written into the
// same SSE block as an event's data (no blank line between them), after
// the data line or before it, is the upstream's in-band error as a bare
// error block is: per the SSE spec the line is an unknown field, ignored,
// so the client's reader would have lost it. After the data, the data is
// handled first (the content reaches the client), then the error; before
// it, the error ends the stream there. Passthrough and translated. JSON
// there that is no error (a heartbeat) changes nothing.
func TestBareJSONErrorBesideData(t *testing.T) {
	const errLine = `{"error":{"message":"upstream provider failed","type":"server_error","code":502}}`
	for _, from := range allDialects {
		content := strings.TrimSuffix(bareContents[from], "\n\n")
		for name, in := range map[string]string{
			"after the data":  bareStarts[from] + content + "\n" + errLine + "\n\n",
			"before the data": bareStarts[from] + bareContents[from] + errLine + "\ndata: [DONE]\n\n",
			"pretty, after":   bareStarts[from] + content + "\n{\n  \"error\": {\"message\": \"upstream provider failed\", \"code\": 502}\n}\n\n",
		} {
			for _, to := range allDialects {
				label := name + ", " + from.String() + "→" + to.String()
				out, _, tr, err := collect(t, from, to, "client-model", strings.NewReader(in))
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				se := tr.UpstreamError()
				if se == nil || se.Status != 502 || !strings.Contains(se.Message, "upstream provider failed") || tr.Truncated() {
					t.Fatalf("%s: UpstreamError %+v, truncated %v\n%s", label, se, tr.Truncated(), out)
				}
				if !strings.Contains(string(out), "partial") {
					t.Errorf("%s: the content before the error is lost:\n%s", label, out)
				}
				assertErrorForm(t, label, to, out, "")
			}
		}
		// a heartbeat beside the data is no error: the stream goes on
		in := bareStarts[from] + content + "\n" + `{"type":"ping","message":"keep-alive"}` + "\n\n"
		_, _, tr, _ := collect(t, from, from, "", strings.NewReader(in))
		if tr.UpstreamError() != nil {
			t.Errorf("%s: heartbeat read as an error: %+v", from, tr.UpstreamError())
		}
	}
}

// A JSON error beside an event's data is found whichever line terminator
// the upstream uses (the SSE reader takes LF, CR and CRLF): with CR alone
// the error line was read as part of the data line and lost.
func TestStrayErrorLineTerminators(t *testing.T) {
	for _, nl := range []string{"\n", "\r", "\r\n"} {
		r := NewSSEReader(strings.NewReader(`data: {"id":"x","object":"chat.completion.chunk","choices":[]}` + nl + `{"error":{"message":"boom","code":"x"}}` + nl + nl))
		ev, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		se, first := strayError(OpenAIChat, &ev)
		if se == nil || first || se.Message != "boom" {
			t.Errorf("%q: strayError = %v, first %v; want the error boom after the data", nl, se, first)
		}
	}
}
