package translate

import (
	"bytes"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
)

// Expectations for the project's own fixtures in testdata/ (testdata/README.md
// says what each file shows and which vendor reference it follows). The
// generic fixture tests compare a translation with its source; these pin
// what each source holds, so a fixture that stops showing what it is named
// for, or a figure lost on the way to a client, is caught.

// streamWant is what a healthy testdata stream holds, as its dialect's
// official SDK accumulates it (clientSummary) and as the translator reads
// its usage (Usage.String).
type streamWant struct {
	text     string
	thinking bool
	tools    []toolSum // name and arguments (compared as JSON)
	stop     string    // coarse stop reason: stop, length, tool, refusal
	usage    string
}

var testdataStreams = map[string]streamWant{
	"openai-chat/text.sse":                {text: "Bonjour ! ¡Hola! 👋 Both mean \"hello\".", stop: "stop", usage: "in=1317 out=12 cache_read=1152 cache_write=- reasoning=0"},
	"openai-chat/tool-call.sse":           {tools: []toolSum{{"get_weather", `{"location":"São Paulo, BR","unit":"celsius","note":"say \"hi\"\n"}`}}, stop: "tool", usage: "in=94 out=31 cache_read=0 cache_write=- reasoning=0"},
	"openai-chat/parallel-tool-calls.sse": {text: "Checking both cities.", tools: []toolSum{{"get_weather", `{"location":"Paris, FR"}`}, {"get_time", `{"timezone":"Asia/Tokyo"}`}}, stop: "tool", usage: "in=210 out=58 cache_read=0 cache_write=- reasoning=0"},
	"openai-chat/reasoning-content.sse":   {text: "17 × 23 = **391**.", thinking: true, stop: "stop", usage: "in=18 out=46 cache_read=0 cache_write=- reasoning=33"},
	"openai-chat/refusal.sse":             {text: "I'm sorry, but I can't help with that.", stop: "refusal", usage: "in=41 out=9 cache_read=0 cache_write=- reasoning=0"},
	"openai-chat/length.sse":              {text: "Once upon a time, in a", stop: "length", usage: "in=15 out=5 cache_read=0 cache_write=- reasoning=0"},
	"openai-chat/no-usage.sse":            {text: "Four.", stop: "stop", usage: "in=- out=- cache_read=- cache_write=- reasoning=-"},
	"openai-chat/crlf-keepalive.sse":      {text: "Line one.\nLine two.", stop: "stop", usage: "in=25 out=6 cache_read=0 cache_write=- reasoning=0"},
	"openai-chat/multiline-data.sse":      {text: "Splitting", stop: "stop", usage: "in=20 out=4 cache_read=0 cache_write=- reasoning=0"},

	"anthropic-messages/text.sse":                  {text: "Bonjour ! ¡Hola! 👋 Both mean \"hello\".", stop: "stop", usage: "in=21 out=14 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/tool-use.sse":              {text: "I'll check the weather in São Paulo.", tools: []toolSum{{"get_weather", `{"location":"São Paulo, BR","unit":"celsius","note":"say \"hi\"\n"}`}}, stop: "tool", usage: "in=412 out=89 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/tool-use-parallel.sse":     {tools: []toolSum{{"get_weather", `{"location":"Paris, FR"}`}, {"get_time", `{"timezone":"Asia/Tokyo"}`}}, stop: "tool", usage: "in=530 out=97 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/tool-use-no-input.sse":     {tools: []toolSum{{"get_current_time", `{}`}}, stop: "tool", usage: "in=380 out=38 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/thinking.sse":              {text: "17 × 23 = **391**.", thinking: true, stop: "stop", usage: "in=58 out=112 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/thinking-tool-use.sse":     {thinking: true, tools: []toolSum{{"get_weather", `{"location":"Paris, FR"}`}}, stop: "tool", usage: "in=640 out=131 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/redacted-thinking.sse":     {text: "Here is my answer.", thinking: true, stop: "stop", usage: "in=96 out=160 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/prompt-cache.sse":          {text: "Cached context read.", stop: "stop", usage: "in=5644 out=7 cache_read=4096 cache_write=1536 reasoning=-"},
	"anthropic-messages/max-tokens.sse":            {text: "Once upon a time", stop: "length", usage: "in=15 out=5 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/stop-sequence.sse":         {text: "- one\n- two\n", stop: "stop", usage: "in=30 out=9 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/refusal.sse":               {text: "I can't help with that.", stop: "refusal", usage: "in=44 out=8 cache_read=0 cache_write=0 reasoning=-"},
	"anthropic-messages/crlf-padded.sse":           {text: "Padded text.", stop: "stop", usage: "in=19 out=4 cache_read=0 cache_write=0 reasoning=-"},
	"openai-responses/text.sse":                    {text: "Bonjour ! ¡Hola! 👋 Both mean \"hello\".", stop: "stop", usage: "in=1320 out=14 cache_read=1152 cache_write=- reasoning=0"},
	"openai-responses/function-call.sse":           {tools: []toolSum{{"get_weather", `{"location":"São Paulo, BR"}`}}, stop: "tool", usage: "in=88 out=19 cache_read=0 cache_write=- reasoning=0"},
	"openai-responses/parallel-function-calls.sse": {tools: []toolSum{{"get_weather", `{"location":"Paris, FR"}`}, {"get_time", `{"timezone":"Asia/Tokyo"}`}}, stop: "tool", usage: "in=150 out=46 cache_read=0 cache_write=- reasoning=0"},
	"openai-responses/reasoning.sse":               {text: "17 × 23 = **391**.", thinking: true, stop: "stop", usage: "in=22 out=210 cache_read=0 cache_write=- reasoning=192"},
	"openai-responses/incomplete.sse":              {text: "Once upon a time", stop: "length", usage: "in=15 out=16 cache_read=0 cache_write=- reasoning=0"},
	// the SDK summary reads output_text and refusal parts alike, and a
	// completed answer with a refusal part as a refusal (as Chat's)
	"openai-responses/refusal.sse": {text: "I'm sorry, but I can't help with that.", stop: "refusal", usage: "in=41 out=11 cache_read=0 cache_write=- reasoning=0"},
}

// clientUsage reads the usage a client of dialect d finds in stream out:
// the Chat usage chunk, Anthropic message_start usage overwritten by
// message_delta's, the Responses terminal event's response.usage.
func clientUsage(t testing.TB, d Dialect, out []byte) Usage {
	t.Helper()
	var u Usage
	var au anthropicUsage
	for _, ev := range readAllEvents(t, bytes.NewReader(out)) {
		switch d {
		case OpenAIChat:
			if x := gjson.GetBytes(ev.Data, "usage"); x.IsObject() {
				u = chatUsage(x)
			}
		case AnthropicMessages:
			switch gjson.GetBytes(ev.Data, "type").Str {
			case "message_start":
				au.add(gjson.GetBytes(ev.Data, "message.usage"))
			case "message_delta":
				au.add(gjson.GetBytes(ev.Data, "usage"))
			}
			u = au.usage()
		case OpenAIResponses:
			if x := gjson.GetBytes(ev.Data, "response.usage"); x.IsObject() {
				u = responsesUsage(x)
			}
		}
	}
	return u
}

// testdataKey is a fixture's path below testdata/.
func testdataKey(d Dialect, name string) string { return dialectDir(d) + "/" + name }

// TestTestdataStreams: every healthy testdata stream holds what
// testdataStreams says (text, thinking, tool calls, stop reason, usage
// with cache and reasoning figures), the translator reads that usage in
// every direction, and the client finds every figure in its own dialect's
// usage fields (a stream that reports no usage gets none invented, apart
// from the zeros Anthropic's message_start schema requires).
func TestTestdataStreams(t *testing.T) {
	seen := map[string]bool{}
	for _, from := range allDialects {
		for _, fx := range streamsIn(t, []string{testdataDir(t)}, from) {
			key := testdataKey(from, fx.name)
			seen[key] = true
			want, ok := testdataStreams[key]
			if !ok {
				t.Errorf("%s: no entry in testdataStreams", key)
				continue
			}
			src := clientSummary(t, from, fx.body)
			if src.text != want.text || (src.thinking != "") != want.thinking || src.stop != want.stop {
				t.Errorf("%s: text %q thinking %q stop %s; want text %q thinking %v stop %s", key, src.text, src.thinking, src.stop, want.text, want.thinking, want.stop)
			}
			if len(src.tools) != len(want.tools) {
				t.Errorf("%s: tools %v, want %v", key, src.tools, want.tools)
			} else {
				for i := range want.tools {
					if src.tools[i].name != want.tools[i].name || !jsonEqual(src.tools[i].args, want.tools[i].args) {
						t.Errorf("%s: tool %d = %+v, want %+v", key, i, src.tools[i], want.tools[i])
					}
				}
			}
			if key == "openai-responses/refusal.sse" {
				if !bytes.Contains(fx.body, []byte(`"refusal":"I'm sorry, but I can't help with that."`)) {
					t.Errorf("%s: no response.refusal.done with the whole refusal", key)
				}
			}
			for _, to := range allDialects {
				label := key + " -> " + to.String()
				out, _, tr, err := collect(t, from, to, "client-model", bytes.NewReader(fx.body))
				if err != nil || tr.Truncated() || tr.UpstreamError() != nil {
					t.Fatalf("%s: err %v truncated %v upstream error %v", label, err, tr.Truncated(), tr.UpstreamError())
				}
				if got := tr.Usage().String(); got != want.usage {
					t.Errorf("%s: translator usage %s, want %s", label, got, want.usage)
				}
				got := clientUsage(t, to, out)
				switch {
				case !fx.noUsage:
					if w := usageIn(to, tr.Usage()).String(); got.String() != w {
						t.Errorf("%s: client usage %s, want %s", label, got, w)
					}
				case to == AnthropicMessages:
					if s := got.String(); s != "in=0 out=0 cache_read=- cache_write=- reasoning=-" {
						t.Errorf("%s: client usage %s, want only the schema's zeros", label, s)
					}
				default:
					if !got.IsZero() {
						t.Errorf("%s: client usage %s invented", label, got)
					}
				}
			}
		}
	}
	for key := range testdataStreams {
		if !seen[key] {
			t.Errorf("%s: in testdataStreams but not found under testdata/", key)
		}
	}
}

// streamFailureWant is how a testdata/<dialect>/stream-errors/ stream
// fails: an in-band error event (typ and status as StreamError reports
// them, message as the client reads it) or, with typ "", a stream cut off
// before its finish (Truncated). beforeContent: the failure comes before
// the first content event, so with HoldPreamble nothing reaches the client
// and the handler may retry on another key.
type streamFailureWant struct {
	typ           string
	status        int
	message       string
	beforeContent bool
}

const truncatedMessage = "upstream stream ended without a finish reason; the answer is incomplete"

var testdataStreamFailures = map[string]streamFailureWant{
	"openai-chat/stream-errors/server-error-after-text.sse":          {"server_error", 500, "The server had an error while processing your request. Sorry about that!", false},
	"openai-chat/stream-errors/rate-limit-before-content.sse":        {"rate_limit_exceeded", 429, "Rate limit reached for gpt-4o in organization org-Hq2Lr8Wm4Tz6Xb1Nc3Vd on tokens per min (TPM): Limit 30000, Used 29870, Requested 412. Please try again in 564ms. Visit https://platform.openai.com/account/rate-limits to learn more.", true},
	"openai-chat/stream-errors/truncated.sse":                        {"", 0, truncatedMessage, false},
	"openai-chat/stream-errors/done-without-finish.sse":              {"", 0, truncatedMessage, false},
	"anthropic-messages/stream-errors/overloaded-after-text.sse":     {"overloaded_error", 529, "Overloaded", false},
	"anthropic-messages/stream-errors/overloaded-before-content.sse": {"overloaded_error", 529, "Overloaded", true},
	"anthropic-messages/stream-errors/api-error-mid-tool-use.sse":    {"api_error", 500, "Internal server error", false},
	"anthropic-messages/stream-errors/truncated.sse":                 {"", 0, truncatedMessage, false},
	"openai-responses/stream-errors/failed-after-text.sse":           {"server_error", 500, "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.", false},
	"openai-responses/stream-errors/error-before-content.sse":        {"rate_limit_exceeded", 429, "Rate limit reached for gpt-4.1 in organization org-Hq2Lr8Wm4Tz6Xb1Nc3Vd on tokens per min (TPM): Limit 30000, Used 29870, Requested 412. Please try again in 564ms.", true},
	"openai-responses/stream-errors/truncated.sse":                   {"", 0, truncatedMessage, false},
}

// clientErrorMessage returns the message of the error a client of dialect
// d reads at the end of stream out: a Chat error chunk's or Anthropic
// error event's error.message, a Responses error event's message or
// response.failed's response.error.message.
func clientErrorMessage(t testing.TB, d Dialect, out []byte) string {
	t.Helper()
	last := lastEvent(t, out)
	if d == OpenAIResponses {
		if m := gjson.GetBytes(last.Data, "response.error.message"); m.Exists() {
			return m.Str
		}
		return gjson.GetBytes(last.Data, "message").Str
	}
	return gjson.GetBytes(last.Data, "error.message").Str
}

// TestTestdataStreamFailures replays every testdata stream that fails (an
// in-band error, a cut-off stream) into every client dialect, whole and
// one byte per read, with and without HoldPreamble: the failure is
// reported (UpstreamError with the vendor's type and status, or
// Truncated), the client gets it in its own dialect with the upstream's
// message and no finish (a passthrough relays the vendor's error event
// byte for byte), and a failure before the first content event writes
// nothing under HoldPreamble.
func TestTestdataStreamFailures(t *testing.T) {
	seen := map[string]bool{}
	for _, from := range allDialects {
		for _, fx := range streamFailureFixtures(t, from) {
			key := testdataKey(from, fx.name)
			seen[key] = true
			want, ok := testdataStreamFailures[key]
			if !ok {
				t.Errorf("%s: no entry in testdataStreamFailures", key)
				continue
			}
			for _, to := range allDialects {
				label := key + " -> " + to.String()
				out, _, tr, err := collect(t, from, to, "client-model", bytes.NewReader(fx.body))
				if err != nil || !tr.Committed() {
					t.Fatalf("%s: Run %v, committed %v", label, err, tr.Committed())
				}
				if want.typ == "" {
					if !tr.Truncated() || tr.UpstreamError() != nil {
						t.Errorf("%s: truncated %v, upstream error %v; want a truncation", label, tr.Truncated(), tr.UpstreamError())
					}
				} else if se := tr.UpstreamError(); se == nil || se.Type != want.typ || se.Status != want.status || tr.Truncated() {
					t.Errorf("%s: upstream error %+v truncated %v; want %s (%d)", label, se, tr.Truncated(), want.typ, want.status)
				}
				if got := clientErrorMessage(t, to, out); got != want.message {
					t.Errorf("%s: client error message %q, want %q", label, got, want.message)
				}
				switch {
				case from == to && want.typ != "":
					// the vendor's own error event, byte for byte, and nothing after it
					if verbatim, _, _, _ := collect(t, from, to, "", bytes.NewReader(fx.body)); !bytes.Equal(verbatim, fx.body) {
						t.Errorf("%s: passthrough changed the stream:\n%s", label, verbatim)
					}
					if to != OpenAIResponses {
						assertErrorForm(t, label, to, out, "")
					}
				default:
					assertErrorForm(t, label, to, out, "")
				}
				one, _, _, _ := collect(t, from, to, "client-model", iotest.OneByteReader(bytes.NewReader(fx.body)))
				if !bytes.Equal(one, out) {
					t.Errorf("%s: one-byte reads changed the output", label)
				}
				held, _, trh, errh := collectHold(t, from, to, "client-model", iotest.OneByteReader(bytes.NewReader(fx.body)))
				if want.beforeContent {
					if !errors.Is(errh, ErrNotCommitted) || trh.Committed() || len(held) != 0 || trh.UpstreamError() == nil {
						t.Errorf("%s: HoldPreamble: err %v committed %v wrote %d bytes; want nothing written and ErrNotCommitted", label, errh, trh.Committed(), len(held))
					}
				} else if errh != nil || !bytes.Equal(held, out) {
					t.Errorf("%s: HoldPreamble: err %v, output differs %v", label, errh, !bytes.Equal(held, out))
				}
			}
		}
	}
	for key := range testdataStreamFailures {
		if !seen[key] {
			t.Errorf("%s: in testdataStreamFailures but not found under testdata/", key)
		}
	}
}

// errorBodyWant is what a client makes of a testdata HTTP error body
// (error-NNN-*.json, sent with status NNN) from the other vendor family:
// an Anthropic client's error.type, an OpenAI client's error.type and
// error.code ("" = null), and the statuses ClientStatus gives them.
type errorBodyWant struct {
	anthropicType               string
	openAIType, openAICode      string
	anthropicStatus, openStatus int
}

var testdataErrorBodies = map[string]errorBodyWant{
	"openai-chat/error-400-context-length-exceeded.json":      {"invalid_request_error", "", "", 400, 400},
	"openai-chat/error-401-invalid-api-key.json":              {"authentication_error", "", "", 401, 401},
	"openai-chat/error-404-model-not-found.json":              {"not_found_error", "", "", 404, 404},
	"openai-chat/error-429-rate-limit-exceeded.json":          {"rate_limit_error", "", "", 429, 429},
	"openai-chat/error-500-server-error.json":                 {"api_error", "", "", 500, 500},
	"openai-responses/error-400-invalid-value.json":           {"invalid_request_error", "", "", 400, 400},
	"openai-responses/error-429-insufficient-quota.json":      {"rate_limit_error", "", "", 429, 429},
	"anthropic-messages/error-400-invalid-request-error.json": {"", "invalid_request_error", "", 400, 400},
	"anthropic-messages/error-401-authentication-error.json":  {"", "invalid_request_error", "invalid_api_key", 401, 401},
	"anthropic-messages/error-403-permission-error.json":      {"", "permission_error", "permission_denied", 403, 403},
	"anthropic-messages/error-404-not-found-error.json":       {"", "invalid_request_error", "not_found", 404, 404},
	"anthropic-messages/error-413-request-too-large.json":     {"", "invalid_request_error", "request_too_large", 413, 413},
	"anthropic-messages/error-429-rate-limit-error.json":      {"", "rate_limit_error", "rate_limit_exceeded", 429, 429},
	"anthropic-messages/error-500-api-error.json":             {"", "server_error", "", 500, 500},
	"anthropic-messages/error-529-overloaded-error.json":      {"", "service_unavailable_error", "server_is_overloaded", 529, 503},
}

// TestTestdataErrorBodies: each testdata HTTP error body, rendered for a
// client of the other vendor family, gets the error type (and OpenAI
// code) of its class and the matching status; for a client of its own
// dialect it is the vendor's body unchanged unless a secret had to be
// scrubbed from the message.
func TestTestdataErrorBodies(t *testing.T) {
	var keys []string
	isErr := func(b []byte) bool { return gjson.GetBytes(b, "error").IsObject() }
	for _, from := range allDialects {
		for name, body := range jsonIn(t, []string{testdataDir(t)}, from, isErr) {
			if !strings.HasPrefix(filepath.Base(name), "error-") {
				continue // a request's recorded refusal (TestRequestFixturesAllDirections)
			}
			key := testdataKey(from, name)
			keys = append(keys, key)
			want, ok := testdataErrorBodies[key]
			if !ok {
				t.Errorf("%s: no entry in testdataErrorBodies", key)
				continue
			}
			status := fixtureStatus(name)
			for _, to := range allDialects {
				out := TranslateError(from, to, status, body)
				label := key + " -> " + to.String()
				msg := gjson.GetBytes(body, "error.message").Str
				if to == from && ScrubSecrets(msg) == msg && !bytes.Equal(out, bytes.TrimSpace(body)) {
					t.Errorf("%s: own dialect's body changed: %s", label, out)
				}
				if (to == AnthropicMessages) == (from == AnthropicMessages) {
					continue
				}
				e := gjson.GetBytes(out, "error")
				if to == AnthropicMessages {
					if e.Get("type").Str != want.anthropicType || ClientStatus(to, status) != want.anthropicStatus {
						t.Errorf("%s: type %s status %d, want %s %d", label, e.Get("type").Str, ClientStatus(to, status), want.anthropicType, want.anthropicStatus)
					}
					continue
				}
				if e.Get("type").Str != want.openAIType || e.Get("code").Str != want.openAICode || ClientStatus(to, status) != want.openStatus {
					t.Errorf("%s: type %s code %s status %d, want %s %q %d", label, e.Get("type").Str, e.Get("code").Raw, ClientStatus(to, status), want.openAIType, want.openAICode, want.openStatus)
				}
			}
		}
	}
	sort.Strings(keys)
	if len(keys) != len(testdataErrorBodies) {
		t.Errorf("error bodies under testdata/: %v; testdataErrorBodies has %d", keys, len(testdataErrorBodies))
	}
}
