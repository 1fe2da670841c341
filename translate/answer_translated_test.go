package translate

import (
	"bytes"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// readAnswerOptions are the response options each body is read with: the
// default, and every option set (reasoning omitted, a custom tool named
// after the body's first tool call, the Responses echo of tools and
// tool_choice).
func readAnswerOptions(body []byte) []ResponseOptions {
	custom := []string{"apply_patch"}
	for _, p := range []string{"choices.0.message.tool_calls.0.function.name", "content.#(type==\"tool_use\").name", "output.#(type==\"function_call\").name"} {
		if n := gjson.GetBytes(body, p).Str; n != "" {
			custom = append(custom, n)
		}
	}
	return []ResponseOptions{{}, {
		OmitReasoning: true,
		CustomTools:   custom,
		Tools:         []byte(`[{"type":"function","name":"f","parameters":{"type":"object"}}]`),
		ToolChoice:    []byte(`"required"`),
	}}
}

// checkReadAnswer asserts that ReadAnswer and answerByOldSteps agree on
// body from upstream dialect from for a client of dialect to: the bytes,
// the usage, the error object and the *Error. It reports whether the
// answer was translated (no error of either kind).
func checkReadAnswer(t *testing.T, name string, from, to Dialect, body []byte, cm string, o ResponseOptions) bool {
	t.Helper()
	wOut, wU, wSE, wErr := answerByOldSteps(from, to, body, cm, o)
	out, u, se, err := ReadAnswer(from, to, body, cm, o)
	what := name + " (" + from.String() + " -> " + to.String() + `, client model "` + cm + `")`
	if !bytes.Equal(out, wOut) || (out == nil) != (wOut == nil) {
		t.Errorf("%s: bytes\n got  %s\n want %s", what, out, wOut)
	}
	if !reflect.DeepEqual(u, wU) {
		t.Errorf("%s: usage %s, want %s", what, fmtUsage(u), fmtUsage(wU))
	}
	if !reflect.DeepEqual(se, wSE) {
		t.Errorf("%s: error object %+v, want %+v", what, se, wSE)
	}
	var e, we *Error
	if (err == nil) != (wErr == nil) || (err != nil && (!errors.As(err, &e) || !errors.As(wErr, &we) || *e != *we)) {
		t.Errorf("%s: error %v, want %v", what, err, wErr)
	}
	// TranslateResponseWith, the validating entry point, decodes with the
	// same one-walk decoders: same answer, same *Error
	if se == nil && from != to {
		tOut, tU, tErr := TranslateResponseWith(from, to, body, cm, o)
		if !bytes.Equal(tOut, out) || !reflect.DeepEqual(tU, u) || (tErr == nil) != (err == nil) {
			t.Errorf("%s: TranslateResponseWith gives %s %s %v, ReadAnswer %s %s %v", what, tOut, fmtUsage(tU), tErr, out, fmtUsage(u), err)
		}
	}
	return se == nil && err == nil
}

// TestReadAnswerMatchesSteps: for every whole answer and error body of
// the corpus (testdata/, and ../shared/fixtures under TestSharedFixtures)
// of each upstream dialect, ReadAnswer gives, for every client dialect,
// client model and option set, what AnswerError then the former
// TranslateResponseWith (answer_old_test.go) gave: the same bytes, usage
// and error.
func TestReadAnswerMatchesSteps(t *testing.T) {
	bodies, translated := 0, map[[2]Dialect]int{}
	for _, from := range allDialects {
		fx := jsonFixtures(t, from, ValidJSON)
		names := make([]string, 0, len(fx))
		for name := range fx {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			body := fx[name]
			bodies++
			checkUsageReaders(t, name, gjson.GetBytes(body, "usage"))
			for _, to := range allDialects {
				for _, cm := range []string{"", "client-model"} {
					for _, o := range readAnswerOptions(body) {
						if checkReadAnswer(t, name, from, to, body, cm, o) && from != to {
							translated[[2]Dialect{from, to}]++
						}
					}
				}
			}
		}
	}
	t.Logf("%d bodies compared; translated answers per direction: %v", bodies, translated)
	if bodies < 10 {
		t.Errorf("%d bodies compared: the corpus is missing", bodies)
	}
	// every direction out of an upstream dialect with whole answers in the
	// corpus is exercised with real answers, not only error bodies
	for _, from := range allDialects {
		if len(wholeAnswers(t, from)) == 0 {
			continue
		}
		for _, to := range allDialects {
			if from != to && translated[[2]Dialect{from, to}] == 0 {
				t.Errorf("no %s answer translated for a %s client", from, to)
			}
		}
	}
}

// wholeAnswers returns the corpus's whole answers of dialect d (a
// chat.completion, a message or a response object).
func wholeAnswers(t *testing.T, d Dialect) map[string][]byte {
	return jsonFixtures(t, d, func(b []byte) bool {
		r := gjson.GetManyBytes(b, "object", "type")
		return r[0].Str == "chat.completion" || r[0].Str == "response" || r[1].Str == "message"
	})
}

// TestReadAnswerEdgeBodies: shapes a one-walk reader could get wrong give
// the same result as the former separate lookups, for every pair of
// dialects: error objects and answers that carry an "error" member,
// repeated members at each level (gjson's Get takes the first), escaped
// member names, members of the wrong type, non-object choices, messages,
// content blocks and output items, and roots that are not objects.
func TestReadAnswerEdgeBodies(t *testing.T) {
	const choice = `"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]`
	bodies := []string{
		`{"error":{"message":"upstream says no","type":"server_error","param":null,"code":null}}`,
		`{"error":"upstream says no"}`, `{"error":""}`, `{"error":{}}`, `{"error":null}`, `{"error":{"code":503}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{}`, `{"choices":[]}`, `{"choices":null}`, `{"choices":{}}`, `{"choices":[],"usage":{"prompt_tokens":2}}`,
		`{"choices":[],"error":{"message":"quota exhausted","type":"insufficient_quota"}}`,
		`{"id":"c",` + choice + `,"error":{"message":"relay warning","type":"server_error"}}`,
		`{"id":"c","model":"m","created":7,` + choice + `,"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		"  \n\t{\"model\" : \"m\", " + choice + "}",
		`{"mod\u0065l":"m","\u0063hoices":[{"message":{"c\u006fntent":"x"},"finish_reason":"length"}]}`,
		// repeated members: the first of each name
		`{"choices":{},"choices":[{"finish_reason":"error"}]}`,
		`{"choices":[{"index":0}],"choices":[{"finish_reason":"error"}]}`,
		`{"model":"a","model":"b","id":"x","id":"y",` + choice + `}`,
		`{"usage":1,"usage":{"prompt_tokens":1},` + choice + `}`,
		`{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2},` + choice + `}`,
		`{"choices":[{"finish_reason":"stop","finish_reason":"error","message":{"content":"a","content":"b","refusal":"r","refusal":"s"},"message":{"content":"c"}}]}`,
		`{"choices":[{"message":{"reasoning_content":"","reasoning":"think","reasoning":"again","reasoning_details":[{"text":"d"}],"tool_calls":[{"id":"t","function":{"name":"f","arguments":"{}"}}],"tool_calls":[]}}]}`,
		`{"choices":[{"message":{"reasoning_details":[{"text":"d1"},{"text":"d2"}],"content":[{"type":"text","text":"p1"},{"text":""},5]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"t","function":{"name":"f"},"function":{"name":"g","arguments":"{\"a\":1}"}}]},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"refusal":"I cannot"},"finish_reason":"stop"}]}`,
		// wrong types
		`{"choices":[5]}`, `{"choices":["x"]}`, `{"choices":[{"message":[{"content":"x"}]}]}`, `{"choices":[{"message":"x"}]}`,
		`{"choices":[[{"finish_reason":"error"}]]}`, `{"choices":[{"message":{"content":5}}]}`, `{"choices":[null]}`,
		`{"model":42,"id":{"a":1},"created":"9",` + choice + `}`,
		// Anthropic shapes
		`{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"hi"},{"type":"text","type":"thinking","text":"a","text":"b","thinking":"t"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3}}`,
		`{"type":"message","content":[5,"text",null,[{"type":"text","text":"x"}],{"type":"tool_use","id":"t","name":"n"},{"type":"tool_use","input":{"a":1},"input":{"b":2}}]}`,
		`{"type":"message","content":{"a":{"type":"text","text":"obj"}},"stop_reason":"stop_sequence","stop_sequence":"END"}`,
		`{"content":[{"type":"redacted_thinking","data":"d","data":"e"},{"type":"thinking","thinking":"t","signature":"s"}],"stop_reason":5}`,
		`{"type":"message","type":"other","content":[]}`, `{"type":"other","content":[]}`, `{"content":[]}`,
		`{"type":"message","content":[{"type":"text","text":"hi"}],"error":{"type":"overloaded_error","message":"x"}}`,
		`{"type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1},"usage":{"input_tokens":9}}`,
		// Responses shapes
		`{"id":"resp_1","object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}`,
		`{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error"},"error":{"message":"second"}}`,
		`{"object":"response","status":"in_progress","output":[]}`, `{"object":"response","status":"queued"}`,
		`{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"incomplete_details":{"reason":"max_output_tokens"},"output":[]}`,
		`{"id":"r","object":"response","status":"completed","model":"gpt","created_at":12,"output":[{"type":"message","content":[{"type":"output_text","text":"a","text":"b"},{"type":"refusal","refusal":"no","refusal":"nope"},5,{"text":"untyped"}]},{"type":"function_call","call_id":"c","call_id":"d","name":"f","arguments":"{}"},{"type":"reasoning","summary":[{"text":"s1"},{"text":"s2"}],"encrypted_content":"enc"},{"type":"reasoning","content":[{"text":"r"}]},{"type":"reasoning","encrypted_content":"only"},{"type":"web_search_call"},"x",7],"usage":{"input_tokens":5,"output_tokens":6,"input_tokens_details":{"cached_tokens":2},"output_tokens_details":{"reasoning_tokens":1}}}`,
		`{"object":"response","output":{"a":{"type":"message","content":[{"type":"output_text","text":"obj"}]}}}`,
		`{"output":[{"type":"message","type":"function_call","name":"f","content":[{"type":"text","text":"t"}]}],"status":"completed","status":"failed"}`,
		`{"object":"other","output":null}`, `{"object":"response"}`,
		// not objects
		`[]`, `[{"model":"m"}]`, `"x"`, `null`, `42`, `true`,
	}
	for _, b := range bodies {
		for _, from := range allDialects {
			for _, to := range allDialects {
				for _, cm := range []string{"", "client-model"} {
					for _, o := range readAnswerOptions([]byte(b)) {
						checkReadAnswer(t, b, from, to, []byte(b), cm, o)
					}
				}
			}
		}
	}
	// absolute results, not only agreement
	out, u, se, err := ReadAnswer(OpenAIChat, AnthropicMessages, []byte(`{"id":"c","model":"m",`+choice+`,"usage":{"prompt_tokens":3,"completion_tokens":4}}`), "claude-x", ResponseOptions{})
	if se != nil || err != nil || u.InputTokens == nil || *u.InputTokens != 3 || *u.OutputTokens != 4 {
		t.Fatalf("usage %s, error object %v, err %v; want [3 4 - - -]", fmtUsage(u), se, err)
	}
	if g := gjson.GetManyBytes(out, "type", "model", "content.0.text", "stop_reason"); g[0].Str != "message" || g[1].Str != "claude-x" || g[2].Str != "hi" || g[3].Str != "end_turn" {
		t.Errorf("translated answer %s", out)
	}
	if _, _, se, _ := ReadAnswer(OpenAIChat, AnthropicMessages, []byte(`{"error":{"code":"rate_limit_exceeded"}}`), "", ResponseOptions{}); se == nil || se.Status != 429 {
		t.Errorf("error object: %+v, want status 429", se)
	}
	if _, _, se, err := ReadAnswer(OpenAIChat, OpenAIResponses, []byte(`{"choices":[{"finish_reason":"error"}]}`), "", ResponseOptions{}); se != nil || err == nil || !strings.Contains(err.Error(), msgFinishError) {
		t.Errorf("finish_reason error: %v %v, want %q", se, err, msgFinishError)
	}
}

// benchAnswers returns an answer of about size bytes in each upstream
// dialect: testdata's Chat and Anthropic response-text.json with their
// text lengthened (quotes and newlines to escape), and the Chat one as a
// Responses upstream would send it.
func benchAnswers(b *testing.B, size int) map[Dialect][]byte {
	chat := benchAnswer(b, size)
	am := jsonIn(b, []string{testdataDir(b)}, AnthropicMessages, func([]byte) bool { return true })["response-text.json"]
	if am == nil {
		b.Fatal("testdata/anthropic-messages/response-text.json not found")
	}
	const unit = "The answer is \"391\".\nCheck: 17 × 23 = 391. "
	var text strings.Builder
	for len(am)+text.Len() < size {
		text.WriteString(unit)
	}
	am, err := sjson.SetBytes(am, "content.0.text", text.String())
	if err != nil {
		b.Fatal(err)
	}
	rs, _, err := TranslateResponse(OpenAIChat, OpenAIResponses, chat, "")
	if err != nil {
		b.Fatal(err)
	}
	return map[Dialect][]byte{OpenAIChat: chat, AnthropicMessages: am, OpenAIResponses: rs}
}

// BenchmarkTranslateAnswer compares the whole translated answer read
// (issue 15): "old" is AnswerError then the former TranslateResponseWith
// (a second validation, a gjson Get from the start per member;
// answer_old_test.go), "new" is ReadAnswer (one walk per level, the
// caller's validation trusted), on a 1 KB and a 20 KB answer, for a Chat
// upstream and an Anthropic client (the bench's gw-a2o), the reverse
// (gw-o2a) and a Responses upstream and a Chat client.
func BenchmarkTranslateAnswer(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"20KB", 20 << 10}} {
		answers := benchAnswers(b, size.n)
		for _, dir := range []struct {
			name     string
			from, to Dialect
		}{{"chat-to-anthropic", OpenAIChat, AnthropicMessages}, {"anthropic-to-chat", AnthropicMessages, OpenAIChat}, {"responses-to-chat", OpenAIResponses, OpenAIChat}} {
			body := answers[dir.from]
			for _, v := range []struct {
				name string
				read func(from, to Dialect, body []byte, cm string, o ResponseOptions) ([]byte, Usage, *StreamError, error)
			}{{"old", answerByOldSteps}, {"new", ReadAnswer}} {
				b.Run(size.name+"/"+dir.name+"/"+v.name, func(b *testing.B) {
					b.SetBytes(int64(len(body)))
					b.ReportAllocs()
					for range b.N {
						if _, _, se, err := v.read(dir.from, dir.to, body, "client-model", ResponseOptions{}); se != nil || err != nil {
							b.Fatal(se, err)
						}
					}
				})
			}
		}
	}
}

// checkUsageReaders asserts that the usage readers (one walk, usageLookup)
// give what the former gjson Get per path gave on u, in every dialect.
func checkUsageReaders(t *testing.T, name string, u gjson.Result) {
	t.Helper()
	if g, w := chatUsage(u), oldChatUsage(u); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: chatUsage %s, want %s", name, fmtUsage(g), fmtUsage(w))
	}
	if g, w := responsesUsage(u), oldResponsesUsage(u); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: responsesUsage %s, want %s", name, fmtUsage(g), fmtUsage(w))
	}
	var a, w anthropicUsage
	a.v, w.v = [5]int64{1, 2, 3, 4, 5}, [5]int64{1, 2, 3, 4, 5} // add overwrites only what u reports
	a.set[1], w.set[1] = true, true
	a.add(u)
	w.oldAdd(u)
	if a != w {
		t.Errorf("%s: anthropicUsage.add %+v, want %+v", name, a, w)
	}
}

// TestUsageLookupMatchesGet: usage objects of every vendor's shape, and
// ones a one-walk reader could get wrong (repeated members at the top
// and in the details objects, details that are not objects, escaped
// names, numbers of every form), read as the former per-path lookups
// read them, in every dialect; and the absolute figures of a full one.
func TestUsageLookupMatchesGet(t *testing.T) {
	objs := []string{
		`{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":7}}`,
		`{"prompt_tokens":10,"completion_tokens":20,"prompt_cache_hit_tokens":6,"prompt_cache_miss_tokens":4}`,
		`{"prompt_tokens":10,"prompt_tokens_details":{"cache_write_tokens":3},"prompt_cache_hit_tokens":6}`,
		`{"input_tokens":5,"output_tokens":6,"input_tokens_details":{"cached_tokens":2,"cache_write_tokens":1},"output_tokens_details":{"reasoning_tokens":3}}`,
		`{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":7,"cache_creation_input_tokens":8,"output_tokens_details":{"thinking_tokens":9}}`,
		`{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":null,"completion_tokens":3}`,
		`{"prompt_tokens_details":{"audio_tokens":1},"prompt_tokens_details":{"cached_tokens":5}}`,
		`{"prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":{"cached_tokens":5,"cache_write_tokens":2}}`,
		`{"prompt_tokens_details":5,"prompt_tokens_details":{"cached_tokens":5}}`,
		`{"output_tokens_details":{},"output_tokens_details":{"thinking_tokens":4,"reasoning_tokens":4}}`,
		`{"input_tokens_details":[{"cached_tokens":1}],"output_tokens_details":"x","completion_tokens_details":null}`,
		`{"prompt_tokens_details":{"cached_tokens":{"a":1}},"completion_tokens_details":{"reasoning_tokens":"7"}}`,
		`{"pr\u006fmpt_tokens":11,"input_t\u006fkens":12,"prompt_tokens_details":{"c\u0061ched_tokens":13}}`,
		`{"prompt_tokens":1.5e2,"completion_tokens":-3,"input_tokens":0,"output_tokens":9007199254740993}`,
		`{}`, `[]`, `[{"prompt_tokens":1}]`, `"x"`, `5`, `null`, ``,
	}
	for _, o := range objs {
		checkUsageReaders(t, o, gjson.Parse(o))
	}
	u := chatUsage(gjson.Parse(objs[0]))
	if fmtUsage(u) != "[10 20 4 - 7]" {
		t.Errorf("chat usage %s, want [10 20 4 - 7]", fmtUsage(u))
	}
	var a anthropicUsage
	a.add(gjson.Parse(objs[4]))
	if got := fmtUsage(a.usage()); got != "[20 6 7 8 9]" {
		t.Errorf("anthropic usage %s, want [20 6 7 8 9]", got)
	}
	if got := fmtUsage(responsesUsage(gjson.Parse(objs[3]))); got != "[5 6 2 1 3]" {
		t.Errorf("responses usage %s, want [5 6 2 1 3]", got)
	}
}
