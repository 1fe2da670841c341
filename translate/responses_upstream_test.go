package translate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Tests of OpenAI Responses as an upstream dialect: recorded and testdata
// Responses answers rendered to every client dialect, streamed and not.

// rsExpect is what a client should end up with from a Responses response
// object (a whole answer, or the response of a stream's terminal event),
// read field by field with gjson, independently of the decoder: text
// (output_text and refusal parts), thinking (each reasoning item's summary
// parts joined by a blank line), function calls, the stop reason of
// MAPPING.md §3.3 and the usage totals.
func rsExpect(r gjson.Result) summary {
	var s summary
	called, refused := false, false
	r.Get("output").ForEach(func(_, it gjson.Result) bool {
		switch it.Get("type").Str {
		case "message":
			it.Get("content").ForEach(func(_, c gjson.Result) bool {
				s.text += c.Get("text").Str
				if c.Get("type").Str == "refusal" {
					s.text += c.Get("refusal").Str
					refused = true
				}
				return true
			})
		case "reasoning":
			var parts []string
			it.Get("summary").ForEach(func(_, p gjson.Result) bool {
				parts = append(parts, p.Get("text").Str)
				return true
			})
			s.thinking += strings.Join(parts, "\n\n")
		case "function_call":
			called = true
			s.tools = append(s.tools, toolSum{it.Get("name").Str, it.Get("arguments").Str})
		}
		return true
	})
	switch {
	case r.Get("status").Str == "incomplete" && r.Get("incomplete_details.reason").Str == "content_filter":
		s.stop = "refusal"
	case r.Get("status").Str == "incomplete":
		s.stop = "length"
	case called:
		s.stop = "tool"
	case refused:
		s.stop = "refusal"
	default:
		s.stop = "stop"
	}
	if u := r.Get("usage"); u.IsObject() {
		s.in, s.out = i64(u.Get("input_tokens").Int()), i64(u.Get("output_tokens").Int())
	}
	return s
}

// rsTerminal returns the response object of a stream's terminal event
// (response.completed or response.incomplete).
func rsTerminal(t testing.TB, body []byte) gjson.Result {
	t.Helper()
	var r gjson.Result
	for _, ev := range readAllEvents(t, bytes.NewReader(body)) {
		switch gjson.GetBytes(ev.Data, "type").Str {
		case "response.completed", "response.incomplete":
			r = gjson.ParseBytes(bytes.Clone(ev.Data)).Get("response")
		}
	}
	if !r.Exists() {
		t.Fatalf("no terminal event")
	}
	return r
}

// sameBytesButModel checks that out is in with every "model":"client-model"
// set back to the upstream's model: passthrough changes nothing else.
func sameBytesButModel(t testing.TB, label string, in, out []byte, upModel string) {
	t.Helper()
	back := bytes.ReplaceAll(out, []byte(`"model":"client-model"`), []byte(`"model":`+string(appendString(nil, upModel))))
	if !bytes.Equal(back, in) {
		t.Errorf("%s: passthrough changed more than the model", label)
	}
	if upModel != "client-model" && bytes.Contains(in, []byte(`"model":`)) && !bytes.Contains(out, []byte(`"model":"client-model"`)) {
		t.Errorf("%s: model not rewritten", label)
	}
}

// TestResponsesUpstreamStreams replays every Responses stream of the corpus
// (testdata/, or ../shared/fixtures under TestSharedFixtures) into Chat and
// Anthropic clients, whole, one byte per read and split at many offsets,
// parses the output with openai-go's ChatCompletionAccumulator and
// anthropic-sdk-go's Message.Accumulate, and compares text, thinking,
// tool calls (name, arguments), stop reason and usage with the source's
// terminal response, and validates every event against the client
// dialect's strict schema; Responses clients get the bytes unchanged apart
// from the model.
func TestResponsesUpstreamStreams(t *testing.T) {
	fxs := streamFixtures(t, OpenAIResponses)
	if len(fxs) < 3 {
		t.Fatalf("only %d Responses streams found", len(fxs))
	}
	for _, fx := range fxs {
		term := rsTerminal(t, fx.body)
		want := rsExpect(term)
		srcUsage := responsesUsage(term.Get("usage"))
		// the source agrees with itself as openai-go reads it
		sdk := responsesSummary(t, fx.body)
		if len(sdk.tools) != len(want.tools) || p(sdk.in) != p(want.in) || p(sdk.out) != p(want.out) {
			t.Fatalf("%s: fixture inconsistent: %+v vs %+v", fx.name, sdk, want)
		}
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			label := fx.name + " -> " + to.String()
			out, _, tr, err := collect(t, OpenAIResponses, to, "client-model", bytes.NewReader(fx.body))
			if err != nil || tr.Truncated() || tr.UpstreamError() != nil {
				t.Fatalf("%s: err %v truncated %v upstream error %v", label, err, tr.Truncated(), tr.UpstreamError())
			}
			assertSameUnderSplits(t, label, OpenAIResponses, to, fx.body, out, 60)
			if !bytes.Contains(out, []byte(`"model":"client-model"`)) {
				t.Errorf("%s: client model not used", label)
			}
			compareSummaries(t, label, want, clientSummary(t, to, out), to)
			for _, e := range strictCheckStream(t, to, out) {
				t.Errorf("%s: strict schema: %s", label, e)
			}
			if got := tr.Usage().String(); got != srcUsage.String() {
				t.Errorf("%s: translator usage %s, want %s", label, got, srcUsage)
			}
			if got, w := clientUsage(t, to, out).String(), usageIn(to, srcUsage).String(); got != w {
				t.Errorf("%s: client usage %s, want %s", label, got, w)
			}
		}
		// Responses -> Responses: byte for byte, model rewritten
		out, _, tr, err := collect(t, OpenAIResponses, OpenAIResponses, "client-model", bytes.NewReader(fx.body))
		if err != nil || tr.Truncated() || tr.UpstreamError() != nil {
			t.Fatalf("%s passthrough: %v", fx.name, err)
		}
		sameBytesButModel(t, fx.name+" passthrough", fx.body, out, term.Get("model").Str)
		if tr.Usage().String() != srcUsage.String() {
			t.Errorf("%s passthrough: usage %s, want %s", fx.name, tr.Usage(), srcUsage)
		}
		same, _, _, _ := collect(t, OpenAIResponses, OpenAIResponses, "", bytes.NewReader(fx.body))
		if !bytes.Equal(same, fx.body) {
			t.Errorf("%s passthrough without a client model changed bytes", fx.name)
		}
	}
}

// TestResponsesUpstreamWhole renders every whole Responses answer of the
// corpus to the three client dialects and checks it with the SDK types
// (openai-go ChatCompletion and Response, anthropic-sdk-go Message): text,
// thinking, tool calls, stop reason, usage. Responses -> Responses is the
// same bytes apart from the model.
func TestResponsesUpstreamWhole(t *testing.T) {
	bodies := jsonFixtures(t, OpenAIResponses, func(b []byte) bool { return gjson.GetBytes(b, "object").Str == "response" })
	if strings.HasPrefix(t.Name(), "TestSharedFixtures/") && len(bodies) < 3 {
		t.Fatalf("only %d recorded Responses answers", len(bodies))
	}
	for name, body := range bodies {
		want := rsExpect(gjson.ParseBytes(body))
		srcUsage := ResponseUsage(OpenAIResponses, body)
		for _, to := range allDialects {
			label := name + " -> " + to.String()
			out, u, err := TranslateResponse(OpenAIResponses, to, body, "client-model")
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			if u.String() != srcUsage.String() {
				t.Errorf("%s: usage %s, want %s", label, u, srcUsage)
			}
			if gjson.GetBytes(out, "model").Str != "client-model" {
				t.Errorf("%s: model %s", label, gjson.GetBytes(out, "model"))
			}
			compareSummaries(t, label, want, wholeSummary(t, to, out), to)
			if to != OpenAIResponses {
				for _, e := range strictCheckBody(to, out) {
					t.Errorf("%s: strict schema: %s", label, e)
				}
			}
			if to == OpenAIResponses {
				// byte for byte but the top-level model's value
				m := gjson.GetBytes(body, "model")
				w := append(append(append([]byte{}, body[:m.Index]...), `"client-model"`...), body[m.Index+len(m.Raw):]...)
				if m.Index <= 0 || !bytes.Equal(out, w) {
					t.Errorf("%s: passthrough changed more than the model", label)
				}
				continue
			}
			if back := ResponseUsage(to, out); back.String() != usageIn(to, srcUsage).String() {
				t.Errorf("%s: usage in the client's fields %s, want %s", label, back, usageIn(to, srcUsage))
			}
		}
	}
}
