package translate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ossestream "github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"
)

// chatCustomRequest is a Chat Completions request with custom tools (per
// OpenAI's Chat Completions API reference): apply_patch with a lark
// grammar, note with a text format, a function tool, a history with a
// custom tool call and its tool result, and a tool_choice naming the
// custom tool.
func chatCustomRequest() string {
	return `{"model":"m","messages":[` +
		`{"role":"user","content":"fix the greeting"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_p1","type":"custom","custom":{"name":"apply_patch","input":` + string(appendString(nil, codexPatch)) + `}}]},` +
		`{"role":"tool","tool_call_id":"call_p1","content":"Success."},` +
		`{"role":"user","content":"now run the tests"}],` +
		`"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object"}}},` +
		`{"type":"custom","custom":{"name":"apply_patch","description":"Use the ` + "`apply_patch`" + ` tool to edit files.","format":{"type":"grammar","grammar":{"definition":` + string(appendString(nil, codexGrammar)) + `,"syntax":"lark"}}}},` +
		`{"type":"custom","custom":{"name":"note","format":{"type":"text"}}}],` +
		`"tool_choice":{"type":"custom","custom":{"name":"apply_patch"}}}`
}

// TestChatCustomToolRequest: a Chat client's custom tools reach an
// Anthropic or Responses upstream as the function tool a Responses
// client's custom tool goes out as (one string parameter "input", the
// grammar in the description), its custom tool call history as a call of
// that function with {"input":…}, and a tool_choice naming it as a
// choice of that tool; nothing is dropped. Request.CustomTools names
// them for the answer.
func TestChatCustomToolRequest(t *testing.T) {
	body := []byte(chatCustomRequest())
	var params openai.ChatCompletionNewParams
	if err := json.Unmarshal(body, &params); err != nil || params.Tools[1].OfCustom == nil {
		t.Fatalf("test setup: not an openai-go request: %v", err)
	}
	wantDesc := "Use the `apply_patch` tool to edit files.\n\n" +
		`Pass the tool's whole input as the string parameter "input", exactly as the tool reads it (free-form text, not JSON).` +
		"\nThe input must match this lark grammar:\n```\n" + strings.TrimSuffix(codexGrammar, "\n") + "\n```"
	wantInput := `{"input":` + string(appendString(nil, codexPatch)) + `}`

	am, err := TranslateRequest(OpenAIChat, AnthropicMessages, body, "claude")
	if err != nil {
		t.Fatal(err)
	}
	tools := gjson.GetBytes(am, "tools")
	if n := len(tools.Array()); n != 3 {
		t.Fatalf("anthropic: %d tools: %s", n, tools.Raw)
	}
	if tools.Get("1.name").Str != "apply_patch" || tools.Get("1.description").Str != wantDesc || tools.Get("1.input_schema").Raw != customInputSchema {
		t.Errorf("anthropic apply_patch tool: %s", tools.Get("1").Raw)
	}
	if d := tools.Get("2.description").Str; tools.Get("2.name").Str != "note" || !strings.HasPrefix(d, "Pass the tool's whole input") || strings.Contains(d, "grammar") {
		t.Errorf("anthropic note tool: %s", tools.Get("2").Raw)
	}
	call := gjson.GetBytes(am, "messages.1.content.0")
	if call.Get("type").Str != "tool_use" || call.Get("id").Str != "call_p1" || call.Get("name").Str != "apply_patch" || call.Get("input.input").Str != codexPatch {
		t.Errorf("anthropic history call: %s", call.Raw)
	}
	if res := gjson.GetBytes(am, "messages.2.content.0"); res.Get("type").Str != "tool_result" || res.Get("tool_use_id").Str != "call_p1" {
		t.Errorf("anthropic tool result: %s", res.Raw)
	}
	if tc := gjson.GetBytes(am, "tool_choice").Raw; tc != `{"type":"tool","name":"apply_patch"}` {
		t.Errorf("anthropic tool_choice %s", tc)
	}

	rs, err := TranslateRequest(OpenAIChat, OpenAIResponses, body, "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	if tl := gjson.GetBytes(rs, "tools.1"); tl.Get("type").Str != "function" || tl.Get("name").Str != "apply_patch" || tl.Get("description").Str != wantDesc {
		t.Errorf("responses tool: %s", tl.Raw)
	}
	var fc gjson.Result
	gjson.GetBytes(rs, "input").ForEach(func(_, it gjson.Result) bool {
		if it.Get("type").Str == "function_call" {
			fc = it
		}
		return true
	})
	if fc.Get("name").Str != "apply_patch" || fc.Get("arguments").Str != wantInput {
		t.Errorf("responses history call: %s", fc.Raw)
	}
	if tc := gjson.GetBytes(rs, "tool_choice"); tc.Get("type").Str != "function" || tc.Get("name").Str != "apply_patch" {
		t.Errorf("responses tool_choice %s", tc.Raw)
	}

	r, err := ParseRequestFor(OpenAIChat, body, AnthropicMessages)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.CustomTools(); len(got) != 2 || got[0] != "apply_patch" || got[1] != "note" {
		t.Errorf("CustomTools %q", got)
	}
	// a grammar without a definition is refused, not dropped
	bad := strings.Replace(chatCustomRequest(), `"grammar":{"definition":`, `"grammar":{"x":`, 1)
	if _, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(bad), "claude"); err == nil || !strings.Contains(err.Error(), "tools[1].custom.format.grammar.definition") {
		t.Errorf("grammar without definition: %v", err)
	}
}

// TestToolNameClash: a custom tool and a function tool of one name cannot
// be translated (the upstream would get two tools of one name, and its
// call could not be told apart): a 400 invalid_request_error naming the
// tool, from Chat and Responses clients alike; a passthrough is the
// upstream's to judge.
func TestToolNameClash(t *testing.T) {
	chat := `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"apply_patch","parameters":{"type":"object"}}},{"type":"custom","custom":{"name":"apply_patch"}}]}`
	rs := `{"model":"m","input":"x","tools":[{"type":"custom","name":"apply_patch"},{"type":"function","name":"apply_patch","parameters":{"type":"object"}}]}`
	for _, c := range []struct {
		d    Dialect
		body string
	}{{OpenAIChat, chat}, {OpenAIResponses, rs}} {
		for _, to := range []Dialect{AnthropicMessages, OpenAIChat, OpenAIResponses} {
			if to == c.d {
				continue
			}
			_, err := TranslateRequest(c.d, to, []byte(c.body), "up")
			var te *Error
			if !errors.As(err, &te) || te.Class != ErrInvalidRequest || te.Param != "tools" || !strings.Contains(te.Message, `"apply_patch"`) {
				t.Fatalf("%s to %s: %v", c.d, to, err)
			}
			if st, eb := te.Class.Status(c.d), ErrorBody(c.d, te.Class, te.Message); st != 400 || gjson.GetBytes(eb, "error.type").Str != "invalid_request_error" || !strings.Contains(gjson.GetBytes(eb, "error.message").Str, "apply_patch") {
				t.Errorf("%s: %d %s", c.d, st, eb)
			}
			r, err := ParseRequestFor(c.d, []byte(c.body), to)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if _, err := r.Encode(to, "up"); err == nil || !strings.Contains(err.Error(), "apply_patch") {
				t.Errorf("%s Encode to %s: %v", c.d, to, err)
			}
		}
		if err := ValidateRequest(c.d, []byte(c.body)); err != nil {
			t.Errorf("%s: passthrough validation refuses: %v", c.d, err)
		}
	}
	// two custom tools or two function tools of different names are fine
	ok := strings.Replace(chat, `"custom":{"name":"apply_patch"}`, `"custom":{"name":"patch2"}`, 1)
	if _, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(ok), "up"); err != nil {
		t.Errorf("distinct names: %v", err)
	}
}

// TestChatCustomToolAnswer: a translated whole answer's call of a Chat
// client's custom tool is a tool_calls entry of "type":"custom" with
// custom.name and custom.input (the "input" string unwrapped), as OpenAI's
// Chat Completions API returns one; other calls stay function calls.
func TestChatCustomToolAnswer(t *testing.T) {
	anth := `{"id":"msg_9","type":"message","role":"assistant","model":"up","content":[{"type":"text","text":"patching"},{"type":"tool_use","id":"toolu_a","name":"apply_patch","input":{"input":` +
		string(appendString(nil, codexPatch)) + `}},{"type":"tool_use","id":"toolu_b","name":"shell","input":{"command":["ls"]}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2}}`
	rs := `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"up","output":[{"type":"function_call","id":"fc_1","call_id":"call_a","name":"apply_patch","arguments":` +
		string(appendString(nil, `{"input":`+string(appendString(nil, codexPatch))+`}`)) + `,"status":"completed"}],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}`
	opts := ResponseOptions{CustomTools: []string{"apply_patch", "note"}}
	for _, c := range []struct {
		from Dialect
		body string
		id   string
	}{{AnthropicMessages, anth, "toolu_a"}, {OpenAIResponses, rs, "call_a"}} {
		out, _, err := TranslateResponseWith(c.from, OpenAIChat, []byte(c.body), "m", opts)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"id":"` + c.id + `","type":"custom","custom":{"name":"apply_patch","input":` + string(appendString(nil, codexPatch)) + `}}`
		if got := gjson.GetBytes(out, "choices.0.message.tool_calls.0").Raw; got != want {
			t.Errorf("%s: call\n%s\nwant\n%s", c.from, got, want)
		}
		var cc openai.ChatCompletion
		if err := json.Unmarshal(out, &cc); err != nil {
			t.Fatal(err)
		}
		tc := cc.Choices[0].Message.ToolCalls[0]
		if tc.Type != "custom" || tc.Custom.Input != codexPatch || tc.Custom.Name != "apply_patch" || tc.ID != c.id || cc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("%s: SDK sees %+v", c.from, tc)
		}
		if c.from == AnthropicMessages {
			if f := cc.Choices[0].Message.ToolCalls[1]; f.Type != "function" || f.Function.Arguments != `{"command":["ls"]}` {
				t.Errorf("function call changed: %s", gjson.GetBytes(out, "choices.0.message.tool_calls.1").Raw)
			}
		}
		plain, _, _ := TranslateResponseWith(c.from, OpenAIChat, []byte(c.body), "m", ResponseOptions{})
		if gjson.GetBytes(plain, "choices.0.message.tool_calls.0.type").Str != "function" {
			t.Errorf("%s: without CustomTools: %s", c.from, plain)
		}
	}
}

// chatStreamOut runs a translated stream to a Chat client with opts and
// returns the chunks' raw JSON after the openai-go SDK read them all.
func chatStreamOut(t *testing.T, from Dialect, in string, opts ResponseOptions) []gjson.Result {
	t.Helper()
	var out []byte
	tr := NewStreamTranslator(from, OpenAIChat, "m", EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		return nil
	}))
	tr.SetOptions(opts)
	if err := tr.Run(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	st := ossestream.NewStream[openai.ChatCompletionChunk](ossestream.NewDecoder(sseResponse(out)), nil)
	var evs []gjson.Result
	for st.Next() {
		evs = append(evs, gjson.Parse(st.Current().RawJSON()))
	}
	if err := st.Err(); err != nil {
		t.Fatalf("SDK: %v\n%s", err, out)
	}
	return evs
}

// TestChatCustomToolStream: streamed to a Chat client, a call of its
// custom tool opens with a tool_calls delta {"index","id","type":"custom",
// "custom":{"name","input":""}} and its input arrives decoded in
// {"index","custom":{"input":…}} deltas (the Chat counterpart of
// response.custom_tool_call_input.delta); never function arguments.
func TestChatCustomToolStream(t *testing.T) {
	args := `{"input":` + string(appendString(nil, codexPatch)) + `}`
	args = strings.Replace(args, "😀", `\ud83d\ude00`, 1)
	anthIn := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"apply_patch","input":{}}}`)
	for len(args) > 0 {
		n := min(7, len(args))
		anthIn += amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(appendString(nil, args[:n]))+`}}`)
		args = args[n:]
	}
	anthIn += amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"shell","input":{}}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":[\"ls\"]}"}}`) +
		amEv("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)

	evs := chatStreamOut(t, AnthropicMessages, anthIn, ResponseOptions{CustomTools: []string{"apply_patch"}})
	var first string
	var input, fnArgs strings.Builder
	n0 := 0
	for _, ev := range evs {
		ev.Get("choices.0.delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
			switch tc.Get("index").Int() {
			case 0:
				if n0 == 0 {
					first = tc.Raw
				} else if tc.Get("function").Exists() || tc.Get("type").Exists() || tc.Raw != `{"index":0,"custom":{"input":`+tc.Get("custom.input").Raw+`}}` {
					t.Errorf("custom delta %s", tc.Raw)
				}
				n0++
				input.WriteString(tc.Get("custom.input").Str)
			case 1:
				fnArgs.WriteString(tc.Get("function.arguments").Str)
			}
			return true
		})
	}
	if first != `{"index":0,"id":"toolu_a","type":"custom","custom":{"name":"apply_patch","input":""}}` {
		t.Errorf("first delta %s", first)
	}
	if input.String() != codexPatch || n0 < 4 {
		t.Errorf("%d deltas, input %q", n0, input.String())
	}
	if strings.ContainsRune(input.String(), '\uFFFD') {
		t.Error("a delta split a character")
	}
	if fnArgs.String() != `{"command":["ls"]}` {
		t.Errorf("function call %q", fnArgs.String())
	}
	if fr := evs[len(evs)-2].Get("choices.0.finish_reason").Str; fr != "tool_calls" {
		t.Errorf("finish_reason %q", fr)
	}

	// a whole answer the client asked to stream
	whole := `{"id":"msg_9","type":"message","role":"assistant","model":"up","content":[{"type":"tool_use","id":"toolu_a","name":"apply_patch","input":{"input":"a\nb"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2}}`
	out, _, err := ResponseAsStream(AnthropicMessages, OpenAIChat, []byte(whole), "m", ResponseOptions{CustomTools: []string{"apply_patch"}})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	typ := ""
	for _, ev := range readAllEvents(t, strings.NewReader(string(out))) {
		d := gjson.ParseBytes(ev.Data)
		if tp := d.Get("choices.0.delta.tool_calls.0.type").Str; tp != "" {
			typ = tp
		}
		got.WriteString(d.Get("choices.0.delta.tool_calls.0.custom.input").Str)
	}
	if typ != "custom" || got.String() != "a\nb" {
		t.Errorf("whole as stream: %s %q", typ, got.String())
	}

	// without CustomTools: a function call, as before
	for _, ev := range chatStreamOut(t, AnthropicMessages, anthIn, ResponseOptions{}) {
		if ev.Get("choices.0.delta.tool_calls.0.custom").Exists() {
			t.Fatalf("custom delta without CustomTools: %s", ev.Raw)
		}
	}
}

// TestCustomInputNotJSON: arguments that are not valid JSON (cut short
// inside the input string, or with junk after it) give the same input
// whole and streamed, and the streamed deltas add up to what the .done
// event and the item carry: the input string decoded as far as it was
// written, then what could not be decoded as written (a dangling escape).
func TestCustomInputNotJSON(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{`{"input":"a\nb`, "a\nb"},
		{`{"input":"a\nb\u00`, "a\nb\\u00"},
		{`{"input":"a\nb"}}`, "a\nb"},
		{`{"input":"a\nb", "x":`, "a\nb"},
		{`not json`, "not json"},
	} {
		var a customArgs
		sent := a.next(c.args)
		if got := a.input(c.args); got != c.want || !strings.HasPrefix(got, sent) {
			t.Errorf("%s: sent %q, input %q; want %q", c.args, sent, got, c.want)
		}
		if got := unwrapCustomInput(c.args); got != c.want {
			t.Errorf("%s: whole %q, want %q", c.args, got, c.want)
		}
		in := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_c","type":"function","function":{"name":"apply_patch","arguments":`+string(appendString(nil, c.args))+`}}]}`, "", "") +
			ccChunk(`{}`, "length", "") + "data: [DONE]\n\n"
		var deltas, done, item string
		for _, ev := range customStreamEvents(t, OpenAIChat, in, ResponseOptions{CustomTools: []string{"apply_patch"}}) {
			switch ev.Get("type").Str {
			case "response.custom_tool_call_input.delta":
				deltas += ev.Get("delta").Str
			case "response.custom_tool_call_input.done":
				done = ev.Get("input").Str
			case "response.output_item.done":
				item = ev.Get("item.input").Str
			}
		}
		if deltas != c.want || done != c.want || item != c.want {
			t.Errorf("%s: deltas %q, done %q, item %q; want %q", c.args, deltas, done, item, c.want)
		}
	}
}
