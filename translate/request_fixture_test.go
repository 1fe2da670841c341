package translate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// requestFixtures returns every request body of dialect d (files named
// *.request.json), by path relative to the dialect's folder.
func requestFixtures(t testing.TB, d Dialect) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	walkDialect(t, fixtureDirs(t), d, []string{streamErrorsDir}, func(rel string, b []byte) {
		if strings.HasSuffix(rel, ".request.json") {
			out[rel] = b
		}
	})
	return out
}

// checkAnthropicRequest checks the rules Anthropic enforces: max_tokens
// present, roles alternate, no blank text blocks, every tool_result answers
// a tool_use of the previous assistant turn and comes first in its turn,
// tool schemas are objects with properties.
func checkAnthropicRequest(t testing.TB, label string, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("%s: invalid JSON: %s", label, b)
	}
	root := gjson.ParseBytes(b)
	if root.Get("max_tokens").Int() <= 0 {
		t.Errorf("%s: max_tokens missing", label)
	}
	prevRole := ""
	var prevCalls map[string]bool
	root.Get("messages").ForEach(func(_, m gjson.Result) bool {
		role := m.Get("role").Str
		if role == prevRole {
			t.Errorf("%s: consecutive %s turns", label, role)
		}
		calls := map[string]bool{}
		seenOther := false
		m.Get("content").ForEach(func(_, blk gjson.Result) bool {
			switch blk.Get("type").Str {
			case "text":
				if strings.TrimSpace(blk.Get("text").Str) == "" {
					t.Errorf("%s: blank text block", label)
				}
				seenOther = true
			case "tool_use":
				calls[blk.Get("id").Str] = true
				if !blk.Get("input").IsObject() {
					t.Errorf("%s: tool_use input not an object", label)
				}
			case "tool_result":
				if seenOther {
					t.Errorf("%s: tool_result after other content", label)
				}
				if !prevCalls[blk.Get("tool_use_id").Str] {
					t.Errorf("%s: tool_result %s without tool_use in the previous turn", label, blk.Get("tool_use_id").Str)
				}
			default:
				seenOther = true
			}
			return true
		})
		prevCalls = calls
		prevRole = role
		return true
	})
	root.Get("tools").ForEach(func(_, tl gjson.Result) bool {
		s := tl.Get("input_schema")
		if s.Get("type").Str != "object" || !s.Get("properties").IsObject() {
			t.Errorf("%s: bad input_schema %s", label, s.Raw)
		}
		return true
	})
	root.Get("system").ForEach(func(_, blk gjson.Result) bool {
		if strings.TrimSpace(blk.Get("text").Str) == "" {
			t.Errorf("%s: blank system block", label)
		}
		return true
	})
}

// checkChatRequest checks OpenAI Chat rules: every tool message follows
// the assistant message with that tool call id; images are parts, never
// strings in tool messages.
func checkChatRequest(t testing.TB, label string, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("%s: invalid JSON: %s", label, b)
	}
	root := gjson.ParseBytes(b)
	open := map[string]bool{}
	root.Get("messages").ForEach(func(_, m gjson.Result) bool {
		switch m.Get("role").Str {
		case "assistant":
			open = map[string]bool{}
			m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				open[tc.Get("id").Str] = true
				if !json.Valid([]byte(tc.Get("function.arguments").Str)) {
					t.Errorf("%s: arguments not JSON", label)
				}
				return true
			})
		case "tool":
			if !open[m.Get("tool_call_id").Str] {
				t.Errorf("%s: tool message %s not answering the previous assistant turn", label, m.Get("tool_call_id").Str)
			}
			if m.Get("content").Type != gjson.String {
				t.Errorf("%s: tool content not a string", label)
			}
		case "user", "system":
		default:
			t.Errorf("%s: role %q", label, m.Get("role").Str)
		}
		return true
	})
	if root.Get("stream").Bool() && !root.Get("stream_options.include_usage").Bool() {
		t.Errorf("%s: stream without include_usage", label)
	}
}

// TestRequestFixturesAllDirections checks every request fixture: RequestInfo
// reads it; ValidateRequest refuses exactly the requests the vendor refused
// (a response fixture beside the request holding an invalid_request_error),
// and translating such a request gives the vendor's own message, type,
// param and code; every other request translates to OpenAI Chat and
// Anthropic Messages bodies those vendors accept (checkChatRequest,
// checkAnthropicRequest), and again from there to the other upstream
// dialect without losing its text.
func TestRequestFixturesAllDirections(t *testing.T) {
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for name, body := range requestFixtures(t, from) {
			if _, _, err := RequestInfo(from, body); err != nil {
				t.Errorf("%s: RequestInfo: %v", name, err)
			}
			// a request the vendor answered with a 400: translating it is
			// refused with the vendor's own message, param and code
			vendorErr := recordedError(t, from, name)
			// passthrough accepts every request the vendor accepted
			if err := ValidateRequest(from, body); (err != nil) != vendorErr.Exists() {
				t.Errorf("%s: ValidateRequest: %v; the vendor answered %s", name, err, vendorErr.Raw)
			}
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
				label := from.String() + "/" + name + " -> " + to.String()
				out, err := TranslateRequest(from, to, body, "upstream-model")
				if vendorErr.Exists() && from != to {
					var e *Error
					if !errors.As(err, &e) {
						t.Fatalf("%s: the vendor answered %s, translation gave %v", label, vendorErr.Raw, err)
					}
					got := gjson.ParseBytes(e.Body(from)).Get("error")
					for _, f := range []string{"message", "type", "param", "code"} {
						if got.Get(f).Raw != vendorErr.Get(f).Raw {
							t.Errorf("%s: error.%s = %s, vendor %s", label, f, got.Get(f).Raw, vendorErr.Get(f).Raw)
						}
					}
					n++
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				n++
				if gjson.GetBytes(out, "model").Str != "upstream-model" {
					t.Errorf("%s: model not set", label)
				}
				if from == to {
					continue
				}
				if to == AnthropicMessages {
					checkAnthropicRequest(t, label, out)
				} else {
					checkChatRequest(t, label, out)
				}
				// the other upstream from the translated body: still valid
				other := OpenAIChat
				if to == OpenAIChat {
					other = AnthropicMessages
				}
				out2, err := TranslateRequest(to, other, out, "")
				if err != nil {
					t.Fatalf("%s -> %s: %v", label, other, err)
				}
				if other == AnthropicMessages {
					checkAnthropicRequest(t, label+" -> "+other.String(), out2)
				} else {
					checkChatRequest(t, label+" -> "+other.String(), out2)
				}
				if countTexts(out2) == 0 && countTexts(out) > 0 {
					t.Errorf("%s: text lost in second hop", label)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d request translations", n)
	}
}

// recordedError returns the error object of the vendor's answer to the
// request fixture name (the NN.response.json or <name>.response.json beside
// it) when the vendor refused the request as invalid, or a non-existent
// result.
func recordedError(t *testing.T, d Dialect, name string) gjson.Result {
	t.Helper()
	p := filepath.Join(fixtureDirs(t)[0], dialectDir(d), filepath.FromSlash(strings.Replace(name, ".request.json", ".response.json", 1)))
	b, err := os.ReadFile(p)
	if err != nil {
		return gjson.Result{}
	}
	if e := gjson.GetBytes(b, "error"); e.Get("type").Str == "invalid_request_error" {
		return e
	}
	return gjson.Result{}
}

func countTexts(b []byte) int {
	return strings.Count(string(b), `"text"`) + strings.Count(string(b), `"content":"`)
}
