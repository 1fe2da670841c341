package translate

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// runOpts is run with response options.
func runOpts(t *testing.T, from, to Dialect, in string, o ResponseOptions) string {
	t.Helper()
	var out []byte
	tr := NewStreamTranslator(from, to, "client-model", EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		return nil
	}))
	tr.SetOptions(o)
	if err := tr.Run(strings.NewReader(in)); err != nil {
		t.Fatalf("%s to %s: %v", from, to, err)
	}
	return string(out)
}

// stopStreams are upstream streams, one per dialect, whose reasoning
// holds the stop string "END" (never cut), whose text "alpha beta END
// gamma" comes in the deltas "alpha be", "ta E", "ND gamma", followed by a
// tool call, and which end with max_tokens / length and 20 output tokens.
var stopStreams = map[Dialect]string{
	OpenAIChat: ccChunk(`{"role":"assistant","content":"","reasoning_content":"think END"}`, "", "") +
		ccChunk(`{"content":"alpha be"}`, "", "") + ccChunk(`{"content":"ta E"}`, "", "") + ccChunk(`{"content":"ND gamma"}`, "", "") +
		ccChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"q\":\"END\"}"}}]}`, "", "") +
		ccChunk(`{}`, "length", "") +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":20,"total_tokens":50}}` + "\n\n" +
		"data: [DONE]\n\n",
	AnthropicMessages: amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":30,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think END"}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"alpha be"}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ta E"}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ND gamma"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"q\":\"END\"}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":2}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":20}}`) +
		amEv("message_stop", `{"type":"message_stop"}`),
	OpenAIResponses: rsPreamble +
		rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`) +
		rsEv("response.reasoning_summary_text.delta", 3, `,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"think END"`) +
		rsEv("response.output_item.done", 4, `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"think END"}]}`) +
		rsEv("response.output_item.added", 5, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
		rsEv("response.output_text.delta", 6, `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"alpha be"`) +
		rsEv("response.output_text.delta", 7, `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"ta E"`) +
		rsEv("response.output_text.delta", 8, `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"ND gamma"`) +
		rsEv("response.output_item.done", 9, `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"alpha beta END gamma","annotations":[]}]}`) +
		rsEv("response.output_item.added", 10, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"f","arguments":""}`) +
		rsEv("response.function_call_arguments.delta", 11, `,"item_id":"fc_1","output_index":2,"delta":"{\"q\":\"END\"}"`) +
		rsEv("response.output_item.done", 12, `,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"f","arguments":"{\"q\":\"END\"}"}`) +
		rsEv("response.incomplete", 13, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"up","output":[],"usage":{"input_tokens":30,"output_tokens":20,"total_tokens":50}}`),
}

// TestStopEmulationStream: stop strings the upstream was not sent
// (EmulateStops) cut a translated stream's text before the first one,
// across deltas, holding back only what may begin one; nothing after the
// match reaches the client (more text, the tool call), reasoning and tool
// arguments are not searched, the turn ends as a stop sequence ends it in
// the client's dialect, and the usage is the upstream's. Without
// EmulateStops nothing changes.
func TestStopEmulationStream(t *testing.T) {
	o := ResponseOptions{EmulateStops: []string{"", "zzz", "END"}}
	for from, in := range stopStreams {
		for _, to := range allDialects {
			if to == from {
				continue
			}
			out := runOpts(t, from, to, in, o)
			s := parseOK(t, to, out)
			if s.text != "alpha beta " || len(s.tools) != 0 || s.stop != "stop" || s.out == nil || *s.out != 20 || !strings.Contains(s.thinking, "think END") {
				t.Errorf("%s to %s: %+v\n%s", from, to, s, out)
			}
			// the text goes out as it comes, but for the "E" that may
			// begin "END"
			var deltas []string
			for _, d := range sseData(out) {
				switch to {
				case AnthropicMessages:
					if d.Get("delta.type").Str == "text_delta" {
						deltas = append(deltas, d.Get("delta.text").Str)
					}
					if d.Get("type").Str == "message_delta" && (d.Get("delta.stop_reason").Str != "stop_sequence" || d.Get("delta.stop_sequence").Str != "END" || d.Get("usage.output_tokens").Int() != 20) {
						t.Errorf("%s to %s: message_delta %s", from, to, d.Raw)
					}
				case OpenAIChat:
					if c := d.Get("choices.0.delta.content"); c.Str != "" {
						deltas = append(deltas, c.Str)
					}
					if fr := d.Get("choices.0.finish_reason"); fr.Exists() && fr.Type != gjson.Null && fr.Str != "stop" {
						t.Errorf("%s to %s: finish_reason %s", from, to, fr.Raw)
					}
				case OpenAIResponses:
					if d.Get("type").Str == "response.output_text.delta" {
						deltas = append(deltas, d.Get("delta").Str)
					}
					if d.Get("type").Str == "response.completed" && (d.Get("response.status").Str != "completed" || d.Get("response.usage.output_tokens").Int() != 20) {
						t.Errorf("%s to %s: %s", from, to, d.Raw)
					}
				}
			}
			if strings.Join(deltas, "|") != "alpha be|ta " {
				t.Errorf("%s to %s: text deltas %q", from, to, deltas)
			}
			if strings.Contains(out, "gamma") || strings.Contains(out, "response.incomplete") {
				t.Errorf("%s to %s: past the stop:\n%s", from, to, out)
			}
			// not emulated: the upstream's whole answer
			s = parseOK(t, to, runOpts(t, from, to, in, ResponseOptions{}))
			if s.text != "alpha beta END gamma" || len(s.tools) != 1 || s.stop != "length" {
				t.Errorf("%s to %s without emulation: %+v", from, to, s)
			}
		}
	}
}

// TestStopEmulationHold: what a delta holds back, the stop completed
// first, a stop string that spans several deltas and multi-byte text,
// and held text that no stop string follows (sent at the block's end).
func TestStopEmulationHold(t *testing.T) {
	for _, c := range []struct {
		text  string
		stops []string
		hold  int
	}{
		{"abc", []string{"END"}, 0},
		{"abcE", []string{"END"}, 1},
		{"abcEN", []string{"END"}, 2},
		{"abcEN", []string{"NX", "END"}, 2},
		{"abc «E", []string{"«E»"}, len("«E")},
		{"abc \u00ab", []string{"\u00ab\u00bb"}, 2},
		{"xxa", []string{"ab", "aab"}, 1},
		{"xaa", []string{"ab", "aab"}, 2},
		{"", []string{"ab"}, 0},
	} {
		longest := 0
		for _, s := range c.stops {
			longest = max(longest, len(s))
		}
		if h := holdLen(c.text, c.stops, longest); h != c.hold {
			t.Errorf("holdLen(%q, %q) = %d, want %d", c.text, c.stops, h, c.hold)
		}
	}
	if at, s := firstStop("xabcd", []string{"abcd", "bc"}); at != 2 || s != "bc" {
		t.Errorf("firstStop: %d %q", at, s)
	}
	if at, s := firstStop("xabc", []string{"bc", "abc"}); at != 1 || s != "abc" {
		t.Errorf("firstStop, same end: %d %q", at, s)
	}
	// a stop string across four deltas, and text held then released
	in := ccChunk(`{"role":"assistant","content":"na «"}`, "", "") + ccChunk(`{"content":"S"}`, "", "") + ccChunk(`{"content":"T"}`, "", "") +
		ccChunk(`{"content":"x «ST"}`, "", "") + ccChunk(`{"content":"»!"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
	var deltas []string
	for _, d := range sseData(runOpts(t, OpenAIChat, AnthropicMessages, in, ResponseOptions{EmulateStops: []string{"«ST»"}})) {
		if d.Get("delta.type").Str == "text_delta" {
			deltas = append(deltas, d.Get("delta.text").Str)
		}
		if d.Get("type").Str == "message_delta" && d.Get("delta.stop_sequence").Str != "«ST»" {
			t.Errorf("message_delta %s", d.Raw)
		}
	}
	if strings.Join(deltas, "|") != "na |«STx " {
		t.Errorf("deltas %q", deltas)
	}
	// no stop string completed: everything, the held tail at the block's end
	in = ccChunk(`{"role":"assistant","content":"ends with «S"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"
	s := parseOK(t, AnthropicMessages, runOpts(t, OpenAIChat, AnthropicMessages, in, ResponseOptions{EmulateStops: []string{"«ST»"}}))
	if s.text != "ends with «S" || s.stop != "stop" {
		t.Errorf("held tail: %+v", s)
	}
}

// TestStopEmulationInterruptedAfterStop: an upstream connection that
// breaks after the stop string matched ends the client's stream normally
// (its answer is whole), with the usage read so far; Run still reports
// the read error.
func TestStopEmulationInterruptedAfterStop(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":"alpha END beta"}`, "", "") + ccChunk(`{"content":" more"}`, "", "")
	var out []byte
	tr := NewStreamTranslator(OpenAIChat, AnthropicMessages, "cm", EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		return nil
	}))
	tr.SetOptions(ResponseOptions{EmulateStops: []string{"END"}})
	err := tr.Run(io.MultiReader(strings.NewReader(in), iotest.ErrReader(io.ErrUnexpectedEOF)))
	s := parseOK(t, AnthropicMessages, string(out))
	if !errors.Is(err, io.ErrUnexpectedEOF) || s.text != "alpha " || s.stop != "stop" || !strings.Contains(string(out), `"stop_sequence":"END"`) || strings.Contains(string(out), "event: error") {
		t.Errorf("%v %+v\n%s", err, s, out)
	}
}

// TestStopEmulationUpstreamErrorAfterStop: an upstream error event after
// the stop string matched is still the upstream's error (UpstreamError),
// but the client's answer is whole: its stream ends normally, with the
// stop sequence, as after a broken connection.
func TestStopEmulationUpstreamErrorAfterStop(t *testing.T) {
	in := ccChunk(`{"role":"assistant","content":"alpha END beta"}`, "", "") + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, tr, err := collectOpts(t, OpenAIChat, to, in, ResponseOptions{EmulateStops: []string{"END"}})
		s := parseOK(t, to, out)
		if err != nil || tr.UpstreamError() == nil || s.text != "alpha " || s.stop != "stop" || strings.Contains(out, "overloaded") {
			t.Errorf("to %s: %v %+v %+v\n%s", to, err, tr.UpstreamError(), s, out)
		}
		if to == AnthropicMessages && !strings.Contains(out, `"stop_sequence":"END"`) {
			t.Errorf("to %s: no stop sequence\n%s", to, out)
		}
	}
}

// collectOpts runs a translator with options o on in.
func collectOpts(t *testing.T, from, to Dialect, in string, o ResponseOptions) (string, *StreamTranslator, error) {
	t.Helper()
	var out []byte
	tr := NewStreamTranslator(from, to, "client-model", EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		return nil
	}))
	tr.SetOptions(o)
	err := tr.Run(strings.NewReader(in))
	return string(out), tr, err
}

// TestStopEmulationCompletedOnClose: a stop string completed by what
// closing a block sends (a lone high surrogate held at a delta's end goes
// out as U+FFFD when its block closes) ends the turn there: the finish or
// the block whose start closed it comes after the end and is dropped, as
// the upstream's own finish is, so the client gets one finish, with the
// stop sequence, and nothing past it.
func TestStopEmulationCompletedOnClose(t *testing.T) {
	o := ResponseOptions{EmulateStops: []string{"\uFFFD"}}
	text := ccChunk(`{"role":"assistant","content":"ab\ud83d"}`, "", "")
	for name, in := range map[string]string{
		"finish":     text + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n",
		"next block": text + ccChunk(`{"reasoning_content":"past"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n",
	} {
		out := runOpts(t, OpenAIChat, AnthropicMessages, in, o)
		s := parseOK(t, AnthropicMessages, out)
		var stops []string
		for _, d := range sseData(out) {
			if d.Get("type").Str == "message_delta" {
				stops = append(stops, d.Get("delta.stop_reason").Str+"/"+d.Get("delta.stop_sequence").Str)
			}
		}
		if s.text != "ab" || strings.Contains(out, "past") || len(stops) != 1 || stops[0] != "stop_sequence/\uFFFD" {
			t.Errorf("%s, to Anthropic: %+v %q\n%s", name, s, stops, out)
		}
		out = runOpts(t, OpenAIChat, OpenAIResponses, in, o)
		if s := parseOK(t, OpenAIResponses, out); s.text != "ab" || strings.Contains(out, "past") || strings.Count(out, "event: response.completed") != 1 {
			t.Errorf("%s, to Responses: %+v\n%s", name, s, out)
		}
	}
}

// TestStopEmulationAnswer: the same for whole answers (ReadAnswer,
// TranslateResponseWith, and ResponseAsStream for a client that asked
// for a stream).
func TestStopEmulationAnswer(t *testing.T) {
	bodies := map[Dialect]string{
		OpenAIChat:        `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"think END","content":"alpha beta END gamma","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":20,"total_tokens":50}}`,
		AnthropicMessages: `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"alpha beta END gamma"},{"type":"tool_use","id":"toolu_1","name":"f","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":20}}`,
		OpenAIResponses:   `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"alpha beta END gamma","annotations":[]}]},{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"f","arguments":"{}"}],"usage":{"input_tokens":30,"output_tokens":20,"total_tokens":50}}`,
	}
	o := ResponseOptions{EmulateStops: []string{"END"}}
	for from, body := range bodies {
		for _, to := range allDialects {
			if to == from {
				continue
			}
			out, u, se, err := ReadAnswer(from, to, []byte(body), "cm", o)
			if err != nil || se != nil || u.OutputTokens == nil || *u.OutputTokens != 20 {
				t.Fatalf("%s to %s: %v %v %+v", from, to, err, se, u)
			}
			var text, stop string
			switch to {
			case AnthropicMessages:
				text = gjson.GetBytes(out, `content.#(type=="text").text`).Str
				stop = gjson.GetBytes(out, "stop_reason").Str + "/" + gjson.GetBytes(out, "stop_sequence").Str
				if gjson.GetBytes(out, `content.#(type=="tool_use")`).Exists() {
					t.Errorf("%s to %s: tool call past the stop %s", from, to, out)
				}
			case OpenAIChat:
				text = gjson.GetBytes(out, "choices.0.message.content").Str
				stop = gjson.GetBytes(out, "choices.0.finish_reason").Str
				if gjson.GetBytes(out, "choices.0.message.tool_calls").Exists() {
					t.Errorf("%s to %s: tool call past the stop %s", from, to, out)
				}
			case OpenAIResponses:
				text = gjson.GetBytes(out, `output.#(type=="message").content.0.text`).Str
				stop = gjson.GetBytes(out, "status").Str
				if gjson.GetBytes(out, `output.#(type=="function_call")`).Exists() {
					t.Errorf("%s to %s: tool call past the stop %s", from, to, out)
				}
			}
			want := map[Dialect]string{AnthropicMessages: "stop_sequence/END", OpenAIChat: "stop", OpenAIResponses: "completed"}[to]
			if text != "alpha beta " || stop != want {
				t.Errorf("%s to %s: %q %q\n%s", from, to, text, stop, out)
			}
			if strings.Contains(string(out), "gamma") {
				t.Errorf("%s to %s: past the stop %s", from, to, out)
			}
			if from == OpenAIChat && !strings.Contains(string(out), "think END") {
				t.Errorf("%s to %s: reasoning cut %s", from, to, out)
			}
			alt, _, err := TranslateResponseWith(from, to, []byte(body), "cm", o)
			if err != nil || string(alt) != string(out) {
				t.Errorf("%s to %s: TranslateResponseWith differs: %v\n%s\n%s", from, to, err, alt, out)
			}
			st, _, err := ResponseAsStream(from, to, []byte(body), "cm", o)
			if s := parseOK(t, to, string(st)); err != nil || s.text != "alpha beta " || s.stop != "stop" || len(s.tools) != 0 {
				t.Errorf("%s to %s as a stream: %v %+v", from, to, err, s)
			}
			// without emulation, as it came
			out, _, _, _ = ReadAnswer(from, to, []byte(body), "cm", ResponseOptions{})
			if !strings.Contains(string(out), "alpha beta END gamma") {
				t.Errorf("%s to %s without emulation: %s", from, to, out)
			}
		}
	}
	// a stop string at the very start leaves no text part
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"END now"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`
	out, _, _, err := ReadAnswer(AnthropicMessages, OpenAIChat, []byte(body), "cm", o)
	if err != nil || gjson.GetBytes(out, "choices.0.message.content").Str != "" || strings.Contains(string(out), "now") {
		t.Errorf("stop at the start: %v %s", err, out)
	}
}

// TestUnsentStopSequences: which stop strings a request's body for each
// upstream leaves out (what the gateway emulates), and that a passthrough
// and an upstream that takes them all get none.
func TestUnsentStopSequences(t *testing.T) {
	am := `{"model":"M","max_tokens":10,"stop_sequences":["a","b","c","d","e"],"messages":[{"role":"user","content":"hi"}]}`
	cc := `{"model":"M","stop":["END","\n\n"],"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		d          Dialect
		body       string
		to         Dialect
		model, out string
	}{
		{AnthropicMessages, am, OpenAIResponses, "gpt-4o", "a,b,c,d,e"},
		{AnthropicMessages, am, OpenAIChat, "gpt-4o", "e"},
		{AnthropicMessages, am, OpenAIChat, "o3", "a,b,c,d,e"},
		{AnthropicMessages, am, OpenAIChat, "openai/gpt-5-mini", "a,b,c,d,e"},
		{AnthropicMessages, am, OpenAIChat, "o1", "e"},
		{AnthropicMessages, am, AnthropicMessages, "other", ""},
		{OpenAIChat, cc, AnthropicMessages, "claude-sonnet-4-5", "\n\n"},
		{OpenAIChat, cc, OpenAIResponses, "", "END,\n\n"},
		{OpenAIChat, cc, OpenAIChat, "o3", ""},
		{OpenAIChat, `{"model":"M","messages":[{"role":"user","content":"hi"}]}`, OpenAIResponses, "", ""},
	} {
		for _, up := range allDialects {
			r, err := ParseRequestFor(c.d, []byte(c.body), up)
			if err != nil {
				t.Fatal(err)
			}
			got := r.UnsentStopSequences(c.to, c.model)
			if strings.Join(got, ",") != c.out || (c.out == "") != (got == nil) {
				t.Errorf("%s to %s %s: %q, want %q", c.d, c.to, c.model, got, c.out)
			}
			// the encoded body carries exactly the others
			if c.to != c.d {
				enc, _ := r.Encode(c.to, c.model)
				sent := gjson.GetBytes(enc, "stop_sequences").String() + gjson.GetBytes(enc, "stop").String()
				for _, s := range got {
					if strings.Contains(sent, `"`+strings.ReplaceAll(s, "\n", `\n`)+`"`) {
						t.Errorf("%s to %s %s: %q sent and emulated: %s", c.d, c.to, c.model, s, enc)
					}
				}
			}
			if st := r.StopSequences(); st == nil {
				t.Errorf("StopSequences nil")
			}
		}
	}
	r, _ := ParseRequest(AnthropicMessages, []byte(am))
	if st := r.StopSequences(); strings.Join(st, ",") != "a,b,c,d,e" {
		t.Errorf("StopSequences %q", st)
	}
}

// TestChatStopReasonIsRequestStop: a Chat upstream's choice stop_reason
// string is the matched stop sequence only when it is one of the
// request's stop strings (StopSequences); another server's "end_turn"
// there stays a plain end of turn, streamed and whole. Without the
// request's list, a stop reason's name is never taken for a stop string.
func TestChatStopReasonIsRequestStop(t *testing.T) {
	fin := func(sr string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"up","choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":` + sr + `}]}` + "\n\n"
	}
	text := ccChunk(`{"role":"assistant","content":"alpha beta "}`, "", "")
	for _, c := range []struct {
		sr    string
		stops []string
		want  string
	}{
		{`"STOP"`, []string{"STOP"}, "stop_sequence/STOP"},
		{`"end_turn"`, []string{"STOP"}, "end_turn/"},
		{`"OTHER"`, []string{"STOP"}, "end_turn/"},
		{`"STOP"`, []string{}, "end_turn/"},
		{`"end_turn"`, nil, "end_turn/"},
		{`"eos"`, nil, "end_turn/"},
		{`"STOP"`, nil, "stop_sequence/STOP"},
	} {
		o := ResponseOptions{StopSequences: c.stops}
		var md gjson.Result
		for _, d := range sseData(runOpts(t, OpenAIChat, AnthropicMessages, text+fin(c.sr)+ccUsage+"data: [DONE]\n\n", o)) {
			if d.Get("type").Str == "message_delta" {
				md = d
			}
		}
		if got := md.Get("delta.stop_reason").Str + "/" + md.Get("delta.stop_sequence").Str; got != c.want {
			t.Errorf("stream %s %q: %s", c.sr, c.stops, got)
		}
		body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"alpha beta "},"finish_reason":"stop","stop_reason":` + c.sr + `}]}`
		for _, f := range []func() []byte{
			func() []byte {
				out, _, _, _ := ReadAnswer(OpenAIChat, AnthropicMessages, []byte(body), "cm", o)
				return out
			},
			func() []byte {
				out, _, _ := TranslateResponseWith(OpenAIChat, AnthropicMessages, []byte(body), "cm", o)
				return out
			},
		} {
			out := f()
			if got := gjson.GetBytes(out, "stop_reason").Str + "/" + gjson.GetBytes(out, "stop_sequence").Str; got != c.want {
				t.Errorf("answer %s %q: %s", c.sr, c.stops, out)
			}
		}
	}
}

// FuzzStopEmulation: a Chat upstream's text, cut into deltas at '|', with
// one or two emulated stop strings: an Anthropic client gets exactly the
// text before the stop string completed first, in order, and stop_reason
// stop_sequence with it, or all the text and the upstream's stop when
// none is there; the client's stream stays well formed. Arbitrary
// upstream bytes with the same stops never break a stream either.
func FuzzStopEmulation(f *testing.F) {
	f.Add("alpha be|ta E|ND gamma", "END", "")
	f.Add("na «|S|T|x «ST|»!", "«ST»", "x")
	f.Add("aaa|ab|", "aab", "ab")
	f.Add("\u00e9|\u00e9t\u00e9", "\u00e9t", "")
	f.Fuzz(func(t *testing.T, text, stop1, stop2 string) {
		if !utf8.ValidString(text) || !utf8.ValidString(stop1) || !utf8.ValidString(stop2) {
			return // upstream text and stop strings are JSON strings: valid UTF-8
		}
		stops := []string{stop1, stop2}
		in := ccChunk(`{"role":"assistant","content":""}`, "", "")
		for _, d := range strings.Split(text, "|") {
			in += ccChunk(string(appendString([]byte(`{"content":`), d))+"}", "", "")
		}
		in += ccChunk(`{}`, "length", "") + ccUsage + "data: [DONE]\n\n"
		whole := strings.ReplaceAll(text, "|", "")
		var got strings.Builder
		var md gjson.Result
		out := runOpts(t, OpenAIChat, AnthropicMessages, in, ResponseOptions{EmulateStops: stops})
		for _, d := range sseData(out) {
			if !d.IsObject() {
				t.Fatalf("not JSON: %s", out)
			}
			if d.Get("delta.type").Str == "text_delta" {
				got.WriteString(d.Get("delta.text").Str)
			}
			if d.Get("type").Str == "message_delta" {
				md = d
			}
		}
		want, reason, seq := whole, "max_tokens", ""
		if at, s := firstStop(whole, nonEmpty(stops)); s != "" {
			want, reason, seq = whole[:at], "stop_sequence", s
		}
		if got.String() != want || md.Get("delta.stop_reason").Str != reason || md.Get("delta.stop_sequence").Str != seq || !strings.HasSuffix(out, "message_stop\"}\n\n") {
			t.Fatalf("text %q stops %q: got %q, message_delta %s\n%s", text, stops, got.String(), md.Raw, out)
		}
		for _, from := range allDialects {
			for _, to := range allDialects {
				if from != to {
					var w []byte
					tr := NewStreamTranslator(from, to, "m", EventWriterFunc(func(p []byte) error {
						w = append(w, p...)
						return nil
					}))
					tr.SetOptions(ResponseOptions{EmulateStops: stops})
					_ = tr.Run(strings.NewReader(text))
					for _, d := range sseData(string(w)) {
						if !d.IsObject() {
							t.Fatalf("%s to %s: not JSON: %s", from, to, w)
						}
					}
				}
			}
		}
	})
}

// BenchmarkTranslatedStreamStops: translated streams with two emulated
// stop strings that never match (every text delta searched, a tail held
// where one may begin), to compare with BenchmarkTranslatedStream: no
// allocation per event beyond the output.
func BenchmarkTranslatedStreamStops(b *testing.B) {
	for _, c := range []streamBench{
		{from: OpenAIChat, to: AnthropicMessages},
		{from: AnthropicMessages, to: OpenAIChat},
		{from: OpenAIResponses, to: AnthropicMessages},
	} {
		c.stops = []string{"\n\nHuman:", "<|im_end|>"}
		c.name = strings.ReplaceAll(c.from.String()+"_to_"+c.to.String(), "/", "_")
		b.Run(c.name, func(b *testing.B) { benchSteady(b, c, steadyBody(b, c.from)) })
	}
}
