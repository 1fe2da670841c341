package translate

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Synthetic Responses upstream answers: the event and item kinds the
// recorded fixtures do not all show, and in-band failures.

const rsDone = `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[],"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":8},"total_tokens":50}}`

// rsReasoning is a reasoning item with two summary parts and encrypted
// content, streamed at output_index 0.
var rsReasoning = rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`) +
	rsEv("response.reasoning_summary_part.added", 3, `,"item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}`) +
	rsEv("response.reasoning_summary_text.delta", 4, `,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"first"`) +
	rsEv("response.reasoning_summary_part.added", 5, `,"item_id":"rs_1","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}`) +
	rsEv("response.reasoning_summary_text.delta", 6, `,"item_id":"rs_1","output_index":0,"summary_index":1,"delta":"second"`) +
	rsEv("response.output_item.done", 7, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"first"},{"type":"summary_text","text":"second"}],"encrypted_content":"gAAAAenc"}`)

// TestResponsesUpstreamStreamEvents: reasoning summaries and encrypted
// content, items that arrive only in output_item.done, hosted-tool and
// unknown events, streams without event: lines, response.incomplete, as
// Chat and Anthropic clients read them (official SDKs) and field by field.
func TestResponsesUpstreamStreamEvents(t *testing.T) {
	fcAdded := rsEv("response.output_item.added", 8, `,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_9","name":"get_weather","arguments":""}`)
	cases := []struct {
		name  string
		in    string
		want  summary
		check func(t *testing.T, to Dialect, out []byte)
	}{
		{"reasoning then tool call", rsPreamble + rsReasoning + fcAdded +
			rsEv("response.function_call_arguments.delta", 9, `,"item_id":"fc_1","output_index":1,"delta":"{\"city\":"`) +
			rsEv("response.function_call_arguments.delta", 10, `,"item_id":"fc_1","output_index":1,"delta":"\"Paris\"}"`) +
			rsEv("response.function_call_arguments.done", 11, `,"item_id":"fc_1","output_index":1,"arguments":"{\"city\":\"Paris\"}"`) +
			rsEv("response.output_item.done", 12, `,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_9","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`) +
			rsEv("response.completed", 13, rsDone),
			summary{thinking: "first\n\nsecond", tools: []toolSum{{"get_weather", `{"city":"Paris"}`}}, stop: "tool", in: i64(30), out: i64(20)},
			func(t *testing.T, to Dialect, out []byte) {
				s := string(out)
				switch to {
				case AnthropicMessages:
					if !strings.Contains(s, `"signature":"openai.reasoning.v1:gAAAAenc"`) || !strings.Contains(s, `"id":"call_9"`) {
						t.Errorf("signature or call id lost:\n%s", s)
					}
				case OpenAIChat:
					if !strings.Contains(s, `"signature":"openai.reasoning.v1:gAAAAenc"`) || !strings.Contains(s, `"id":"call_9"`) {
						t.Errorf("thinking_blocks signature or call id lost:\n%s", s)
					}
				}
			}},
		{"items only in output_item.done, no event lines, unknown events", strings.NewReplacer("event: response.created\n", "", "event: response.in_progress\n", "").Replace(rsPreamble) +
			rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress"}`) +
			rsEv("response.web_search_call.searching", 3, `,"output_index":0,"item_id":"ws_1"`) +
			rsEv("response.output_item.done", 4, `,"output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}`) +
			rsEv("response.output_item.done", 5, `,"output_index":1,"item":{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAAonly"}`) +
			rsEv("response.output_item.added", 6, `,"output_index":2,"item":{"id":"msg_2","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
			rsEv("response.output_text.annotation.added", 7, `,"output_index":2,"item_id":"msg_2","annotation":{"type":"url_citation"}`) +
			rsEv("response.future_kind.delta", 8, `,"output_index":2,"delta":"ignored"`) +
			rsEv("response.output_item.done", 9, `,"output_index":2,"item":{"id":"msg_2","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Done.","annotations":[]}]}`) +
			rsEv("response.output_item.done", 10, `,"output_index":3,"item":{"id":"fc_3","type":"function_call","status":"completed","call_id":"call_3","name":"f","arguments":"{\"a\":1}"}`) +
			rsEv("response.completed", 11, rsDone),
			summary{text: "Done.", tools: []toolSum{{"f", `{"a":1}`}}, stop: "tool", in: i64(30), out: i64(20)},
			func(t *testing.T, to Dialect, out []byte) {
				s := string(out)
				if strings.Contains(s, "ignored") || strings.Contains(s, "web_search") {
					t.Errorf("unknown or hosted events relayed:\n%s", s)
				}
				if to == AnthropicMessages && !strings.Contains(s, `"type":"redacted_thinking","data":"openai.reasoning.v1:gAAAAonly"`) {
					t.Errorf("encrypted reasoning without summary not carried as redacted_thinking:\n%s", s)
				}
			}},
		{"answer only in the terminal event", rsPreamble +
			rsEv("response.completed", 2, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[`+
				`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"why"}],"encrypted_content":"gAAAAt"},`+
				`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Here.","annotations":[]}]},`+
				`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_t","name":"g","arguments":"{\"x\":[1,2]}"}],"usage":{"input_tokens":9,"output_tokens":4}}`),
			summary{text: "Here.", thinking: "why", tools: []toolSum{{"g", `{"x":[1,2]}`}}, stop: "tool", in: i64(9), out: i64(4)},
			func(t *testing.T, to Dialect, out []byte) {
				if !strings.Contains(string(out), "openai.reasoning.v1:gAAAAt") || !strings.Contains(string(out), `"call_t"`) {
					t.Errorf("signature or call id lost:\n%s", out)
				}
			}},
		{"incomplete at max_output_tokens", rsPreamble + rsContent +
			rsEv("response.incomplete", 4, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"up","output":[],"usage":{"input_tokens":5,"output_tokens":16}}`),
			summary{text: "partial", stop: "length", in: i64(5), out: i64(16)},
			func(t *testing.T, to Dialect, out []byte) {
				if to == AnthropicMessages && !strings.Contains(string(out), `"stop_reason":"max_tokens"`) ||
					to == OpenAIChat && !strings.Contains(string(out), `"finish_reason":"length"`) {
					t.Errorf("stop reason:\n%s", out)
				}
			}},
		{"refusal", rsPreamble +
			rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
			rsEv("response.refusal.delta", 3, `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"No."`) +
			rsEv("response.completed", 4, rsDone),
			summary{text: "No.", stop: "refusal", in: i64(30), out: i64(20)},
			func(t *testing.T, to Dialect, out []byte) {
				if to == AnthropicMessages && !strings.Contains(string(out), `"stop_reason":"refusal"`) ||
					to == OpenAIChat && (!strings.Contains(string(out), `"finish_reason":"stop"`) || !strings.Contains(string(out), `"refusal":"No."`)) {
					t.Errorf("stop reason:\n%s", out)
				}
			}},
	}
	for _, c := range cases {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			label := c.name + " -> " + to.String()
			out, _, tr, err := collect(t, OpenAIResponses, to, "client-model", strings.NewReader(c.in))
			if err != nil || tr.Truncated() || tr.UpstreamError() != nil {
				t.Fatalf("%s: err %v truncated %v upstream error %v\n%s", label, err, tr.Truncated(), tr.UpstreamError(), out)
			}
			compareSummaries(t, label, c.want, clientSummary(t, to, out), to)
			for _, e := range strictCheckStream(t, to, out) {
				t.Errorf("%s: strict schema: %s", label, e)
			}
			c.check(t, to, out)
		}
	}
	// usage: cache and reasoning figures reach the translator and the client
	out, _, tr, _ := collect(t, OpenAIResponses, OpenAIChat, "m", strings.NewReader(rsPreamble+rsContent+rsEv("response.completed", 4, rsDone)))
	if got := tr.Usage().String(); got != "in=30 out=20 cache_read=10 cache_write=- reasoning=8" {
		t.Errorf("usage %s", got)
	}
	if got := clientUsage(t, OpenAIChat, out).String(); got != "in=30 out=20 cache_read=10 cache_write=- reasoning=8" {
		t.Errorf("client usage %s", got)
	}
}

// TestResponsesUpstreamStreamFailures: response.failed and error events
// (nested and flat), before and after content, and cut-off streams, from a
// Responses upstream to Chat and Anthropic clients, behave as they do from
// Chat and Anthropic upstreams: UpstreamError set with the vendor's type
// and status, the client's error form with nothing after it, secrets
// scrubbed; before the commit point (HoldPreamble) nothing is written and
// Run says so; a stream without a terminal event is a truncation.
func TestResponsesUpstreamStreamFailures(t *testing.T) {
	after := "after-the-error"
	tail := rsEv("response.output_text.delta", 9, `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"`+after+`"`) + rsEv("response.completed", 10, rsDone)
	cases := []struct {
		name       string
		in         string
		typ        string
		status     int
		clientType map[Dialect]string
	}{
		{"nested error then response.failed", rsPreamble + rsContent +
			rsEv("error", 4, `,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota","param":null}`) +
			rsEv("response.failed", 5, `,"response":{"id":"resp_1","status":"failed","error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}`) + tail,
			"insufficient_quota", 429, map[Dialect]string{AnthropicMessages: "rate_limit_error", OpenAIChat: "insufficient_quota"}},
		{"flat error", rsPreamble + rsContent + rsEv("error", 4, `,"code":"server_error","message":"boom for sk-abcdefghijklmnop","param":null`) + tail,
			"server_error", 500, map[Dialect]string{AnthropicMessages: "api_error"}},
		{"response.failed", rsPreamble + rsContent +
			rsEv("response.failed", 4, `,"response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"},"usage":{"input_tokens":3,"output_tokens":1}}`) + tail,
			"rate_limit_exceeded", 429, map[Dialect]string{AnthropicMessages: "rate_limit_error", OpenAIChat: "rate_limit_exceeded"}},
	}
	for _, c := range cases {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			label := c.name + " -> " + to.String()
			out := assertInBandError(t, label, OpenAIResponses, to, c.in, c.typ, c.status, c.clientType[to], after)
			if !strings.Contains(string(out), "partial") {
				t.Errorf("%s: content before the error lost:\n%s", label, out)
			}

			// the same failure before any content: nothing written with HoldPreamble
			before := strings.Replace(c.in, rsContent, "", 1)
			writes := 0
			h := NewStreamTranslator(OpenAIResponses, to, "m", EventWriterFunc(func([]byte) error { writes++; return nil }))
			h.HoldPreamble()
			err := h.Run(strings.NewReader(before))
			var hse *StreamError
			if writes != 0 || h.Committed() || !errors.Is(err, ErrNotCommitted) || !errors.As(err, &hse) || hse.Type != c.typ || hse.Status != c.status {
				t.Errorf("%s before content: %d writes, committed %v, err %v", label, writes, h.Committed(), err)
			}
		}
	}
	// cut off before the terminal event: a truncation (read errors and a
	// stream that is only a preamble are in TestReadErrorMidStream and
	// TestHoldPreambleFailureBeforeContent, which cover every direction)
	for name, in := range map[string]string{
		"eof after content":      rsPreamble + rsContent,
		"eof inside a tool call": rsPreamble + rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":""}`),
	} {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			label := name + " -> " + to.String()
			out, _, tr, err := collect(t, OpenAIResponses, to, "m", strings.NewReader(in))
			if err != nil || !tr.Truncated() || !strings.Contains(string(out), "without a finish reason") {
				t.Errorf("%s: err %v truncated %v\n%s", label, err, tr.Truncated(), out)
			}
			assertErrorForm(t, label, to, out, "")
		}
	}
}

// TestDecodeResponsesResponse: whole Responses answers of every kind to
// the three client dialects, and the answers that are failures.
func TestDecodeResponsesResponse(t *testing.T) {
	const usage = `,"usage":{"input_tokens":40,"input_tokens_details":{"cached_tokens":32,"cache_write_tokens":0},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":7},"total_tokens":52}`
	resp := func(status, extra, output string) []byte {
		return []byte(`{"id":"resp_9","object":"response","created_at":1700000500,"status":"` + status + `"` + extra + `,"model":"gpt-up","output":[` + output + `]` + usage + `}`)
	}
	reasoning := `{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":"gAAAAxyz"}`
	redacted := `{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAAonly"}`
	msg := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]}]}`
	call := `{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"lookup","arguments":"{\"q\":\"x\"}"}`
	refusal := `{"id":"msg_2","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"Cannot."}]}`
	hosted := `{"id":"ws_1","type":"web_search_call","status":"completed"}`
	for _, c := range []struct {
		name string
		body []byte
		want summary
		anth []string // Anthropic content block types, in order
	}{
		{"reasoning text call", resp("completed", "", reasoning+","+hosted+","+msg+","+call), summary{text: "Hello", thinking: "plan", tools: []toolSum{{"lookup", `{"q":"x"}`}}, stop: "tool", in: i64(40), out: i64(12)}, []string{"thinking", "text", "tool_use"}},
		{"encrypted reasoning only", resp("completed", "", redacted+","+msg), summary{text: "Hello", stop: "stop", in: i64(40), out: i64(12)}, []string{"redacted_thinking", "text"}},
		{"refusal", resp("completed", "", refusal), summary{text: "Cannot.", stop: "refusal", in: i64(40), out: i64(12)}, []string{"text"}},
		{"max_output_tokens", resp("incomplete", `,"incomplete_details":{"reason":"max_output_tokens"}`, msg), summary{text: "Hello", stop: "length", in: i64(40), out: i64(12)}, []string{"text"}},
		{"content_filter", resp("incomplete", `,"incomplete_details":{"reason":"content_filter"}`, msg), summary{text: "Hello", stop: "refusal", in: i64(40), out: i64(12)}, []string{"text"}},
	} {
		for _, to := range allDialects {
			label := c.name + " -> " + to.String()
			out, u, err := TranslateResponse(OpenAIResponses, to, c.body, "client-model")
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			if u.String() != "in=40 out=12 cache_read=32 cache_write=0 reasoning=7" {
				t.Errorf("%s: usage %s", label, u)
			}
			if to == OpenAIResponses && c.name == "refusal" {
				// passthrough; openai-go's summary reads output_text only
				if string(out) != strings.Replace(string(c.body), `"gpt-up"`, `"client-model"`, 1) {
					t.Errorf("%s: passthrough changed bytes: %s", label, out)
				}
				continue
			}
			compareSummaries(t, label, c.want, wholeSummary(t, to, out), to)
			if to != OpenAIResponses { // passthrough: the (abbreviated) source itself
				for _, e := range strictCheckBody(to, out) {
					t.Errorf("%s: strict schema: %s", label, e)
				}
			}
			if to != AnthropicMessages {
				continue
			}
			var types []string
			gjson.GetBytes(out, "content").ForEach(func(_, b gjson.Result) bool {
				types = append(types, b.Get("type").Str)
				return true
			})
			if strings.Join(types, ",") != strings.Join(c.anth, ",") {
				t.Errorf("%s: blocks %v, want %v", label, types, c.anth)
			}
			if s := string(out); strings.Contains(c.name, "reasoning") && !strings.Contains(s, `"openai.reasoning.v1:gAAAA`) ||
				strings.Contains(c.name, "call") && !strings.Contains(s, `"id":"call_1"`) || !strings.Contains(s, `"id":"msg_9"`) {
				t.Errorf("%s: signature, call id or message id lost: %s", label, s)
			}
		}
	}
	for _, c := range []struct {
		name  string
		body  string
		class ErrorClass
		msg   string
	}{
		{"failed", `{"id":"resp_1","object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached for sk-abcdefghijklmnop"},"output":[]}`, ErrRateLimited, "Rate limit reached"},
		{"failed server_error", `{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, ErrAPI, "boom"},
		{"in_progress", `{"id":"resp_1","object":"response","status":"in_progress","output":[]}`, ErrAPI, "in_progress"},
		{"not a response", `{"id":"x","object":"list","data":[]}`, ErrAPI, "not an OpenAI Responses"},
		{"not JSON", `{"id":`, ErrAPI, "not valid JSON"},
	} {
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			out, _, err := TranslateResponse(OpenAIResponses, to, []byte(c.body), "m")
			var e *Error
			if out != nil || !errors.As(err, &e) || e.Class != c.class || !strings.Contains(e.Message, c.msg) || strings.Contains(e.Message, "sk-abcdefghijklmnop") {
				t.Errorf("%s -> %s: %s %v", c.name, to, out, err)
			}
		}
	}
}
