package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ossestream "github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// codexPatch is an apply_patch input as Codex sends it: lines, quotes,
// a backslash, a tab and non-ASCII text (an emoji outside the BMP too).
const codexPatch = "*** Begin Patch\n*** Update File: src/a.go\n@@\n-\tfmt.Println(\"old\")\n+\tfmt.Println(\"new \\\\ café 😀\")\n*** End Patch\n"

const codexGrammar = "start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\nend_patch: \"*** End Patch\" LF?\n"

// codexRequest is a Codex-shaped Responses request built with the
// openai-go SDK: a function tool (shell), apply_patch as a custom tool
// with a lark grammar, a custom tool without format, and a history with
// an apply_patch custom_tool_call and its custom_tool_call_output.
func codexRequest(t *testing.T) []byte {
	t.Helper()
	params := responses.ResponseNewParams{
		Model:        shared.ResponsesModel("gpt-5-codex"),
		Instructions: openai.String("You are a coding agent."),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("fix the greeting", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfCustomToolCall("call_p1", codexPatch, "apply_patch"),
			responses.ResponseInputItemParamOfCustomToolCallOutput("call_p1", "Success. Updated the following files:\nM src/a.go"),
			responses.ResponseInputItemParamOfMessage("now run the tests", responses.EasyInputMessageRoleUser),
		}},
		Tools: []responses.ToolUnionParam{
			{OfFunction: &responses.FunctionToolParam{Name: "shell", Parameters: map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}},
			{OfCustom: &responses.CustomToolParam{
				Name:        "apply_patch",
				Description: openai.String("Use the `apply_patch` tool to edit files."),
				Format:      shared.CustomToolInputFormatUnionParam{OfGrammar: &shared.CustomToolInputFormatGrammarParam{Syntax: "lark", Definition: codexGrammar}},
			}},
			{OfCustom: &responses.CustomToolParam{Name: "note"}},
		},
	}
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCustomToolRequest: a Responses client's custom tools reach a Chat
// or Anthropic upstream as function tools with one string parameter
// "input" (the grammar in the description), its custom_tool_call history
// as a call of that function with {"input":…}, and the
// custom_tool_call_output as the call's tool result; nothing is dropped.
func TestCustomToolRequest(t *testing.T) {
	body := codexRequest(t)
	wantDesc := "Use the `apply_patch` tool to edit files.\n\n" +
		`Pass the tool's whole input as the string parameter "input", exactly as the tool reads it (free-form text, not JSON).` +
		"\nThe input must match this lark grammar:\n```\n" + strings.TrimSuffix(codexGrammar, "\n") + "\n```"
	wantArgs := `{"input":` + string(appendString(nil, codexPatch)) + `}`

	chat, err := TranslateRequest(OpenAIResponses, OpenAIChat, body, "")
	if err != nil {
		t.Fatal(err)
	}
	tools := gjson.GetBytes(chat, "tools")
	if n := len(tools.Array()); n != 3 {
		t.Fatalf("chat: %d tools: %s", n, tools.Raw)
	}
	wantTool := `{"type":"function","function":{"name":"apply_patch","description":` + string(appendString(nil, wantDesc)) + `,"parameters":` + customInputSchema + `}}`
	if got := tools.Get("1").Raw; got != wantTool {
		t.Errorf("chat apply_patch tool:\n%s\nwant\n%s", got, wantTool)
	}
	if d := tools.Get("2.function.description").Str; !strings.HasPrefix(d, `Pass the tool's whole input`) || strings.Contains(d, "grammar") {
		t.Errorf("chat note tool description %q", d)
	}
	msgs := gjson.GetBytes(chat, "messages")
	if got := msgs.Get("2.tool_calls.0").Raw; got != `{"id":"call_p1","type":"function","function":{"name":"apply_patch","arguments":`+string(appendString(nil, wantArgs))+`}}` {
		t.Errorf("chat tool call %s", got)
	}
	if in := gjson.Get(msgs.Get("2.tool_calls.0.function.arguments").Str, "input").Str; in != codexPatch {
		t.Errorf("chat call input %q", in)
	}
	if r := msgs.Get("3"); r.Get("role").Str != "tool" || r.Get("tool_call_id").Str != "call_p1" || r.Get("content").Str != "Success. Updated the following files:\nM src/a.go" {
		t.Errorf("chat tool result %s", r.Raw)
	}

	an, err := TranslateRequest(OpenAIResponses, AnthropicMessages, body, "")
	if err != nil {
		t.Fatal(err)
	}
	at := gjson.GetBytes(an, "tools.1")
	if at.Get("name").Str != "apply_patch" || at.Get("description").Str != wantDesc || at.Get("input_schema").Raw != customInputSchema {
		t.Errorf("anthropic apply_patch tool %s", at.Raw)
	}
	use := gjson.GetBytes(an, "messages.1.content.0")
	if use.Get("type").Str != "tool_use" || use.Get("name").Str != "apply_patch" || use.Get("input").Raw != wantArgs {
		t.Errorf("anthropic tool_use %s", use.Raw)
	}
	res := gjson.GetBytes(an, "messages.2.content.0")
	if res.Get("type").Str != "tool_result" || res.Get("tool_use_id").Str != use.Get("id").Str || !strings.Contains(res.Raw, "M src/a.go") {
		t.Errorf("anthropic tool_result %s", res.Raw)
	}

	// tool_choice naming a custom tool names the function it became
	forced := strings.Replace(string(body), `"model"`, `"tool_choice":{"type":"custom","name":"apply_patch"},"model"`, 1)
	an, err = TranslateRequest(OpenAIResponses, AnthropicMessages, []byte(forced), "")
	if err != nil || gjson.GetBytes(an, "tool_choice").Raw != `{"type":"tool","name":"apply_patch"}` {
		t.Errorf("tool_choice: %v %s", err, gjson.GetBytes(an, "tool_choice").Raw)
	}

	// the parsed Request names its custom tools; a passthrough is untouched
	r, err := ParseRequestFor(OpenAIResponses, body, OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.CustomTools(); len(got) != 2 || got[0] != "apply_patch" || got[1] != "note" {
		t.Errorf("CustomTools %q", got)
	}
	if same, err := TranslateRequest(OpenAIResponses, OpenAIResponses, body, ""); err != nil || string(same) != string(body) {
		t.Errorf("passthrough changed: %v", err)
	}

	// a malformed custom tool or call is refused in the client's words
	for _, c := range []struct{ body, param string }{
		{`{"model":"m","input":"x","tools":[{"type":"custom"}]}`, "tools[0].name"},
		{`{"model":"m","input":"x","tools":[{"type":"custom","name":"p","format":{"type":"grammar","syntax":"ebnf","definition":"x"}}]}`, "tools[0].format.syntax"},
		{`{"model":"m","input":[{"type":"custom_tool_call","call_id":"c","name":"p","input":{"a":1}}]}`, "input[0].input"},
		{`{"model":"m","input":[{"type":"custom_tool_call_output","call_id":"zz","output":"x"}]}`, "messages"},
	} {
		_, err := TranslateRequest(OpenAIResponses, OpenAIChat, []byte(c.body), "")
		if e, ok := err.(*Error); !ok || e.Param != c.param {
			t.Errorf("%s: %v, want an error on %s", c.body, err, c.param)
		}
	}
}

// TestCustomToolAnswer: a Chat or Anthropic upstream's call of a tool
// the client declared custom reaches the Responses client as a
// custom_tool_call item, its input the "input" string unwrapped; other
// calls stay function_call items, and without CustomTools nothing changes.
func TestCustomToolAnswer(t *testing.T) {
	args := string(appendString(nil, `{"input":`+string(appendString(nil, codexPatch))+`}`))
	chat := `{"id":"chatcmpl-9","object":"chat.completion","created":7,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_a","type":"function","function":{"name":"apply_patch","arguments":` + args + `}},` +
		`{"id":"call_b","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"go\",\"test\"]}"}},` +
		`{"id":"call_c","type":"function","function":{"name":"note","arguments":"plain words"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	anth := `{"id":"msg_9","type":"message","role":"assistant","model":"up","content":[{"type":"tool_use","id":"toolu_a","name":"apply_patch","input":{"input":` +
		string(appendString(nil, codexPatch)) + `}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2}}`
	opts := ResponseOptions{CustomTools: []string{"apply_patch", "note"}}
	for _, c := range []struct {
		from Dialect
		body string
		id   string
	}{{OpenAIChat, chat, "call_a"}, {AnthropicMessages, anth, "toolu_a"}} {
		out, _, err := TranslateResponseWith(c.from, OpenAIResponses, []byte(c.body), "gpt-5-codex", opts)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"id":"ctc_` + strings.TrimPrefix(c.id, "toolu_") + `","type":"custom_tool_call","status":"completed","call_id":"` + c.id + `","input":` + string(appendString(nil, codexPatch)) + `,"name":"apply_patch"}`
		if c.from == OpenAIChat {
			want = strings.Replace(want, `"ctc_call_a"`, `"ctc_a"`, 1)
		}
		if got := gjson.GetBytes(out, "output.0").Raw; got != want {
			t.Errorf("%s: item\n%s\nwant\n%s", c.from, got, want)
		}
		var resp responses.Response
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		ct := resp.Output[0].AsCustomToolCall()
		if resp.Output[0].Type != "custom_tool_call" || ct.Input != codexPatch || ct.Name != "apply_patch" || ct.CallID != c.id {
			t.Errorf("%s: SDK sees %+v", c.from, ct)
		}
		if c.from == OpenAIChat {
			if resp.Output[1].Type != "function_call" || resp.Output[1].Arguments.OfString != `{"command":["go","test"]}` {
				t.Errorf("function call changed: %s", gjson.GetBytes(out, "output.1").Raw)
			}
			// arguments that are not {"input":…} are the input as written
			if it := resp.Output[2]; it.Type != "custom_tool_call" || it.AsCustomToolCall().Input != "plain words" {
				t.Errorf("note: %s", gjson.GetBytes(out, "output.2").Raw)
			}
		}
		plain, _, _ := TranslateResponseWith(c.from, OpenAIResponses, []byte(c.body), "gpt-5-codex", ResponseOptions{})
		if gjson.GetBytes(plain, "output.0.type").Str != "function_call" {
			t.Errorf("%s: without CustomTools: %s", c.from, gjson.GetBytes(plain, "output.0").Raw)
		}
	}
}

// customStreamEvents runs a translated stream with opts and returns the
// client's events (type → data, in order) after checking the stream with
// the openai-go SDK.
func customStreamEvents(t *testing.T, from Dialect, in string, opts ResponseOptions) []gjson.Result {
	t.Helper()
	var out []byte
	tr := NewStreamTranslator(from, OpenAIResponses, "gpt-5-codex", EventWriterFunc(func(p []byte) error {
		out = append(out, p...)
		return nil
	}))
	tr.SetOptions(opts)
	if err := tr.Run(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	st := ossestream.NewStream[responses.ResponseStreamEventUnion](ossestream.NewDecoder(sseResponse(out)), nil)
	var evs []gjson.Result
	for st.Next() {
		evs = append(evs, gjson.Parse(st.Current().RawJSON()))
	}
	if err := st.Err(); err != nil {
		t.Fatalf("SDK: %v\n%s", err, out)
	}
	return evs
}

// TestCustomToolStream: streamed, a call of a custom tool is a
// custom_tool_call item whose input arrives unwrapped in
// response.custom_tool_call_input.delta events (the JSON string decoded
// as it streams, whatever the upstream's fragments split: the key, an
// escape, a surrogate pair), then response.custom_tool_call_input.done
// and response.output_item.done with the whole input; never
// function_call_arguments events. Chat and Anthropic upstreams, and a
// whole answer turned into a stream.
func TestCustomToolStream(t *testing.T) {
	args := `{"input":` + string(appendString(nil, codexPatch)) + `}`
	args = strings.Replace(args, "😀", `\ud83d\ude00`, 1)
	// fragments cut inside the key, inside escapes and between the
	// surrogate halves
	var frags []string
	for _, cut := range []string{`{"in`, `put": "`, `*** Begin Patch\`, `n*** Update`, `\ud83d`, `\ude`} {
		i := strings.Index(args, cut) + len(cut)
		frags = append(frags, args[:i])
		args = args[i:]
	}
	frags = append(frags, args)
	full := strings.Join(frags, "")
	if gjson.Get(full, "input").Str != codexPatch {
		t.Fatalf("test setup: %s", full)
	}
	chatIn := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"apply_patch","arguments":""}}]}`, "", "")
	anthIn := amEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}`) +
		amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"apply_patch","input":{}}}`)
	for _, f := range frags {
		chatIn += ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(appendString(nil, f))+`}}]}`, "", "")
		anthIn += amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(appendString(nil, f))+`}}`)
	}
	chatIn += ccChunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"ls\"]}"}}]}`, "", "") +
		ccChunk(`{}`, "tool_calls", "") + ccUsage + "data: [DONE]\n\n"
	anthIn += amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`) +
		amEv("message_stop", `{"type":"message_stop"}`)

	opts := ResponseOptions{CustomTools: []string{"apply_patch"}}
	check := func(label string, evs []gjson.Result, callID string, deltasAtLeast int) {
		t.Helper()
		var deltas []string
		var done, added, itemDone, completed gjson.Result
		for _, ev := range evs {
			switch ev.Get("type").Str {
			case "response.custom_tool_call_input.delta":
				deltas = append(deltas, ev.Get("delta").Str)
			case "response.custom_tool_call_input.done":
				done = ev
			case "response.output_item.added":
				if ev.Get("output_index").Int() == 0 {
					added = ev
				}
			case "response.output_item.done":
				if ev.Get("output_index").Int() == 0 {
					itemDone = ev
				}
			case "response.function_call_arguments.delta", "response.function_call_arguments.done":
				if ev.Get("output_index").Int() == 0 {
					t.Errorf("%s: function call event for the custom tool: %s", label, ev.Raw)
				}
			case "response.completed":
				completed = ev
			}
		}
		itemID := "ctc_" + strings.TrimPrefix(strings.TrimPrefix(callID, "call_"), "toolu_")
		if added.Get("item").Raw != `{"id":"`+itemID+`","type":"custom_tool_call","status":"in_progress","call_id":"`+callID+`","input":"","name":"apply_patch"}` {
			t.Errorf("%s: added %s", label, added.Raw)
		}
		if strings.Join(deltas, "") != codexPatch || len(deltas) < deltasAtLeast {
			t.Errorf("%s: %d deltas %q", label, len(deltas), deltas)
		}
		for _, d := range deltas {
			if strings.ContainsRune(d, '\uFFFD') {
				t.Errorf("%s: a delta split a character: %q", label, d)
			}
		}
		if done.Get("input").Str != codexPatch || done.Get("item_id").Str != itemID || done.Get("output_index").Int() != 0 {
			t.Errorf("%s: done %s", label, done.Raw)
		}
		want := `{"id":"` + itemID + `","type":"custom_tool_call","status":"completed","call_id":"` + callID + `","input":` + string(appendString(nil, codexPatch)) + `,"name":"apply_patch"}`
		if itemDone.Get("item").Raw != want || completed.Get("response.output.0").Raw != want {
			t.Errorf("%s: item\n%s\n%s\nwant\n%s", label, itemDone.Get("item").Raw, completed.Get("response.output.0").Raw, want)
		}
		var resp responses.Response
		if err := json.Unmarshal([]byte(completed.Get("response").Raw), &resp); err != nil || resp.Output[0].AsCustomToolCall().Input != codexPatch {
			t.Errorf("%s: SDK: %v", label, err)
		}
	}
	evs := customStreamEvents(t, OpenAIChat, chatIn, opts)
	check("chat", evs, "call_a", 4)
	if n := len(evs); evs[n-1].Get("response.output.1.type").Str != "function_call" || evs[n-1].Get("response.output.1.arguments").Str != `{"command":["ls"]}` {
		t.Errorf("chat: the function call %s", evs[n-1].Get("response.output.1").Raw)
	}
	check("anthropic", customStreamEvents(t, AnthropicMessages, anthIn, opts), "toolu_a", 4)

	// a whole answer the client asked to stream
	whole := `{"id":"chatcmpl-9","object":"chat.completion","created":7,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_a","type":"function","function":{"name":"apply_patch","arguments":` + string(appendString(nil, full)) + `}}]},"finish_reason":"tool_calls"}]}`
	out, _, err := ResponseAsStream(OpenAIChat, OpenAIResponses, []byte(whole), "gpt-5-codex", opts)
	if err != nil {
		t.Fatal(err)
	}
	var wevs []gjson.Result
	for _, ev := range readAllEvents(t, strings.NewReader(string(out))) {
		wevs = append(wevs, gjson.ParseBytes(ev.Data))
	}
	check("whole as stream", wevs, "call_a", 1)

	// arguments cut short after the input string (max_tokens): the done
	// event and the item hold what the deltas add up to
	cut := ccChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_c","type":"function","function":{"name":"apply_patch","arguments":"{\"input\": \"ab\\nc\", \"x"}}]}`, "", "") +
		ccChunk(`{}`, "length", "") + "data: [DONE]\n\n"
	var cutDeltas, cutDone, cutItem string
	for _, ev := range customStreamEvents(t, OpenAIChat, cut, opts) {
		switch ev.Get("type").Str {
		case "response.custom_tool_call_input.delta":
			cutDeltas += ev.Get("delta").Str
		case "response.custom_tool_call_input.done":
			cutDone = ev.Get("input").Str
		case "response.output_item.done":
			cutItem = ev.Get("item.input").Str
		}
	}
	if cutDeltas != "ab\nc" || cutDone != cutDeltas || cutItem != cutDeltas {
		t.Errorf("cut arguments: deltas %q, done %q, item %q; want %q", cutDeltas, cutDone, cutItem, "ab\nc")
	}

	// without CustomTools the same stream is a function call, as before
	for _, ev := range customStreamEvents(t, OpenAIChat, chatIn, ResponseOptions{}) {
		if strings.Contains(ev.Get("type").Str, "custom_tool_call") || ev.Get("item.type").Str == "custom_tool_call" {
			t.Fatalf("custom item without CustomTools: %s", ev.Raw)
		}
	}
}

// TestCustomArgsUnwrap: the streaming unwrapper of {"input":"…"} sends
// every complete character once, whatever the cuts, and gives up on
// arguments of another shape (sent whole at the end).
func TestCustomArgsUnwrap(t *testing.T) {
	args := `{ "input" : "a\"b\\c\n\u00e9\ud83d\ude00\t end" }`
	want := gjson.Get(args, "input").Str
	for cut := 1; cut < len(args); cut++ {
		var a customArgs
		got := a.next(args[:cut]) + a.next(args)
		if got != want || a.state != customDone {
			t.Fatalf("cut %d: %q (state %d), want %q", cut, got, a.state, want)
		}
	}
	for _, other := range []string{`{"patch":"x"}`, `["x"]`, `plain`} {
		var a customArgs
		if s := a.next(other); s != "" || a.state != customOther || unwrapCustomInput(other) != other {
			t.Errorf("%s: %q state %d", other, s, a.state)
		}
	}
	if unwrapCustomInput(`  `) != "" || unwrapCustomInput(`{"input":"x","extra":1}`) != "x" {
		t.Error("unwrapCustomInput")
	}
	// the whole input: the decoded string once it ended, even when the
	// arguments break off after it (the deltas sent add up to it); the
	// arguments as they are when the string never ended
	for _, c := range []struct{ args, want string }{
		{`{"input":"a\nb"}`, "a\nb"},
		{`{"input":"a\nb"`, "a\nb"},
		{`{"input":"a\nb", "x":`, "a\nb"},
		{`{"input":"a\nb`, "a\nb"}, // as streamed (TestCustomInputNotJSON)
		{`{"patch":"x"}`, `{"patch":"x"}`},
	} {
		var a customArgs
		sent := a.next(c.args)
		if got := a.input(c.args); got != c.want {
			t.Errorf("%s: input %q, want %q", c.args, got, c.want)
		}
		if a.state == customDone && sent != c.want {
			t.Errorf("%s: sent %q, input %q", c.args, sent, c.want)
		}
	}
}

// TestCustomArgsEveryByte: arguments {"input":"…"} that grow one byte at
// a time stream, delta after delta, exactly the input the whole
// arguments decode to (the one response.custom_tool_call_input.done
// carries), lone and doubled surrogate halves included: a high surrogate
// followed by another high one is decoded alone, and the pair after it
// stays a pair.
func TestCustomArgsEveryByte(t *testing.T) {
	for _, args := range []string{
		`{"input":"a\"b\\c\n\u00e9\ud83d\ude00\t end"}`,
		`{"input":"\ud83d\ud83d\ude00"}`, `{"input":"\ud83d\u0041z"}`, `{"input":"\ud83dx"}`,
		`{"input":"\ude00 low"}`, `{"input":"\ud83d"}`, `{"input":"é😀\/\b\f\r"}`,
	} {
		var a customArgs
		got := ""
		for i := 1; i <= len(args); i++ {
			got += a.next(args[:i])
		}
		if whole := unwrapCustomInput(args); got != whole || a.state != customDone {
			t.Errorf("%s: every byte %q (state %d), whole %q", args, got, a.state, whole)
		}
	}
}
