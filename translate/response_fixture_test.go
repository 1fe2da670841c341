package translate

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

func chatCompletionSummary(t testing.TB, b []byte) summary {
	t.Helper()
	var c openai.ChatCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("openai-go ChatCompletion: %v\n%s", err, b)
	}
	if len(c.Choices) == 0 {
		t.Fatalf("no choices: %s", b)
	}
	ch := c.Choices[0]
	s := summary{text: ch.Message.Content + ch.Message.Refusal}
	s.thinking = gjson.GetBytes(b, "choices.0.message.reasoning_content").String()
	for _, tc := range ch.Message.ToolCalls {
		s.tools = append(s.tools, toolSum{tc.Function.Name, tc.Function.Arguments})
	}
	stop := stopFromChat(ch.FinishReason)
	if ch.Message.Refusal != "" && stop == stopEndTurn {
		stop = stopRefusal
	}
	s.stop = coarseStop(stop)
	if c.JSON.Usage.Valid() {
		s.in, s.out = i64(c.Usage.PromptTokens), i64(c.Usage.CompletionTokens)
	}
	return s
}

func wholeSummary(t testing.TB, d Dialect, b []byte) summary {
	t.Helper()
	switch d {
	case OpenAIChat:
		return chatCompletionSummary(t, b)
	case AnthropicMessages:
		var m anthropic.Message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("anthropic-sdk-go Message: %v\n%s", err, b)
		}
		if m.Type != "message" || m.Role != "assistant" {
			t.Fatalf("not a message: %s", b)
		}
		return anthropicMessageSummary(m)
	}
	var r responses.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("openai-go Response: %v\n%s", err, b)
	}
	if r.Object != "response" {
		t.Fatalf("not a response: %s", b)
	}
	s := responsesObjectSummary(r)
	outText := ""
	for _, it := range r.Output {
		for _, c := range it.Content {
			if c.Type == "output_text" {
				outText += c.Text
			}
		}
	}
	if r.OutputText() != outText {
		t.Fatalf("OutputText mismatch")
	}
	return s
}

// TestResponseFixturesAllDirections translates every recorded whole
// response of an upstream dialect into every client dialect and checks it
// with the client's SDK types.
func TestResponseFixturesAllDirections(t *testing.T) {
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages} {
		for name, body := range wholeResponseFixtures(t, from) {
			n++
			src := wholeSummary(t, from, body)
			srcUsage := ResponseUsage(from, body)
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
				label := name + " -> " + to.String()
				out, u, err := TranslateResponse(from, to, body, "client-model")
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if !json.Valid(out) {
					t.Fatalf("%s: invalid JSON %s", label, out)
				}
				if m := gjson.GetBytes(out, "model").Str; m != "client-model" {
					t.Errorf("%s: model %q", label, m)
				}
				if u.String() != srcUsage.String() {
					t.Errorf("%s: usage %v, want %v", label, u, srcUsage)
				}
				got := wholeSummary(t, to, out)
				compareSummaries(t, label, src, got, to)
				if from != to {
					// cache and reasoning figures survive field by field
					back := ResponseUsage(to, out)
					if want := usageIn(to, srcUsage); back.String() != want.String() {
						t.Errorf("%s: usage round trip %v, want %v", label, back, want)
					}
				}
			}
		}
	}
	if n < 4 {
		t.Fatalf("only %d response fixtures found", n)
	}
}

// fixtureStatus returns the HTTP status an error body fixture was sent
// with: NNN from a file named error-NNN-*.json (testdata), else 404 or 429
// when the recorded file's name says so, else 400.
func fixtureStatus(name string) int {
	base := name[strings.LastIndex(name, "/")+1:]
	if rest, ok := strings.CutPrefix(base, "error-"); ok && len(rest) > 4 && rest[3] == '-' {
		if n, err := strconv.Atoi(rest[:3]); err == nil {
			return n
		}
	}
	switch {
	case strings.Contains(name, "404"):
		return 404
	case strings.Contains(name, "quota"):
		return 429
	}
	return 400
}

// TestErrorFixturesAllDirections renders every upstream error body in every
// client dialect and checks the shape, the status and that the upstream
// message survives (with anything that looks like a key scrubbed).
func TestErrorFixturesAllDirections(t *testing.T) {
	isErr := func(b []byte) bool { return gjson.GetBytes(b, "error").IsObject() }
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for name, body := range jsonFixtures(t, from, isErr) {
			n++
			msg := ScrubSecrets(gjson.GetBytes(body, "error.message").Str)
			status := fixtureStatus(name)
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
				out := TranslateError(from, to, status, body)
				if !json.Valid(out) {
					t.Fatalf("%s -> %s: %s", name, to, out)
				}
				if got := gjson.GetBytes(out, "error.message").Str; got != msg {
					t.Errorf("%s -> %s: message %q, want %q", name, to, got, msg)
				}
				if to == AnthropicMessages && gjson.GetBytes(out, "type").Str != "error" {
					t.Errorf("%s -> %s: %s", name, to, out)
				}
				if to != AnthropicMessages && !gjson.GetBytes(out, "error.type").Exists() {
					t.Errorf("%s -> %s: %s", name, to, out)
				}
				if cs := ClientStatus(to, status); cs < 400 || cs > 599 || (cs != status && !(status == 529 && cs == 503)) {
					t.Errorf("%s -> %s: client status %d for upstream %d", name, to, cs, status)
				}
			}
		}
	}
	if n < 4 {
		t.Fatalf("only %d error fixtures", n)
	}
}
