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

// answerBySteps is the sequence the gateway ran on a non-streamed
// passthrough answer before PassthroughAnswer, written with the exported
// API only: AnswerError, then TranslateResponseWith from d to d.
func answerBySteps(d Dialect, body []byte, clientModel string) ([]byte, Usage, *StreamError, error) {
	if se := AnswerError(d, body); se != nil {
		return nil, Usage{}, se, nil
	}
	out, u, err := TranslateResponseWith(d, d, body, clientModel, ResponseOptions{})
	return out, u, nil, err
}

// sameData reports whether a and b are the same backing bytes (no copy).
func sameData(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// checkOnePass asserts that PassthroughAnswer and answerBySteps agree on
// body for dialect d and clientModel: the bytes (and whether body is
// returned without a copy), the usage, the error object (status, type,
// message, client body) and the *Error.
func checkOnePass(t *testing.T, name string, d Dialect, body []byte, clientModel string) {
	t.Helper()
	wOut, wU, wSE, wErr := answerBySteps(d, body, clientModel)
	out, u, se, err := PassthroughAnswer(d, body, clientModel)
	what := name + " (" + d.String() + ", client model " + `"` + clientModel + `")`
	if !bytes.Equal(out, wOut) || (out == nil) != (wOut == nil) {
		t.Errorf("%s: bytes\n got  %q\n want %q", what, out, wOut)
	}
	if sameData(wOut, body) != sameData(out, body) {
		t.Errorf("%s: body returned without a copy: %v, by steps %v", what, sameData(out, body), sameData(wOut, body))
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
}

// fmtUsage renders u's figures ("-" for unreported).
func fmtUsage(u Usage) string {
	var b strings.Builder
	for _, p := range []*int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens} {
		if p == nil {
			b.WriteString(" -")
		} else {
			b.WriteString(" " + sprintf("%d", *p))
		}
	}
	return "[" + b.String()[1:] + "]"
}

// onePassModels are the client models each body is checked with: none
// (the gateway asked the upstream for the client's model), the body's own
// model, a different one, and one that needs escaping.
func onePassModels(body []byte) []string {
	return []string{"", gjson.GetBytes(body, "model").String(), "client-model", "a\"b\\c\u2028d"}
}

// TestPassthroughAnswerMatchesSteps: for every whole answer and error body
// of the corpus (testdata/, and ../shared/fixtures under
// TestSharedFixtures), PassthroughAnswer gives what AnswerError then
// TranslateResponseWith give, for each client model, and takes the
// one-walk path (no repeated member) on every one of them.
func TestPassthroughAnswerMatchesSteps(t *testing.T) {
	n, rewritten := 0, 0
	for _, d := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		fx := jsonFixtures(t, d, ValidJSON)
		names := make([]string, 0, len(fx))
		for name := range fx {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			body := fx[name]
			var m answerRoot
			if !answerRootOf(body, &m) || m.dup {
				t.Errorf("%s: not read in one walk (object %v, repeated member %v)", name, answerRootOf(body, &answerRoot{}), m.dup)
			}
			for _, cm := range onePassModels(body) {
				checkOnePass(t, name, d, body, cm)
				if out, _, _, err := PassthroughAnswer(d, body, cm); err == nil && out != nil && !sameData(out, body) {
					if got := gjson.GetBytes(out, "model").Str; got != cm {
						t.Errorf("%s: model %q after the rewrite, want %q", name, got, cm)
					}
					rewritten++
				}
			}
			n++
		}
	}
	if n < 10 || rewritten == 0 {
		t.Errorf("%d bodies compared, %d rewritten: the corpus is missing", n, rewritten)
	}
	t.Logf("%d bodies compared, %d model rewrites", n, rewritten)
}

// TestPassthroughAnswerEdgeBodies: the bodies of the AnswerError and
// passthrough-check tests, and shapes a one-walk reader could get wrong
// (leading space, a repeated member, escaped names, a model that is not a
// string, not an object), give the same result as the separate lookups,
// in every dialect.
func TestPassthroughAnswerEdgeBodies(t *testing.T) {
	const choice = `"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]`
	bodies := []string{
		`{"error":{"message":"upstream says no","type":"server_error","param":null,"code":null}}`,
		`{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`,
		`{"error":"upstream says no"}`,
		`{"error":{"message":"key sk-abcdefghijklmnopqrstuvwx is bad","type":"server_error"}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"error":""}`, `{"error":{}}`, `{"error":null}`, `{"error":{"code":0}}`, `{"error":[]}`, `{"error":{"code":503}}`,
		`{"error":{"message":"","type":"","code":null,"param":null}}`,
		`{}`, `{"choices":[]}`, `{"choices":null}`, `{"choices":{}}`, `{"code":500,"message":"x"}`,
		`{"choices":[],"error":{"message":"quota exhausted","type":"insufficient_quota"}}`,
		`{"content":[],"error":{"message":"no"}}`,
		`{"id":"c",` + choice + `,"error":{"message":"relay warning: slow upstream","type":"server_error"}}`,
		`{"id":"c","model":"m",` + choice + `,"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Par"},"finish_reason":"error"}]}`,
		`{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"failed"}}`,
		`{"id":"resp_1","object":"response","status":"completed","model":"gpt","output":[],"usage":{"input_tokens":5,"output_tokens":6,"input_tokens_details":{"cached_tokens":2}}}`,
		`{"object":"response","status":"in_progress","output":[]}`,
		`{"type":"message","model":"claude","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}`,
		`{"type":"message","content":[{"type":"text","text":"hi"}],"error":{"type":"overloaded_error","message":"x"}}`,
		"  \n\t{\"model\" : \"m\", " + choice + "}",
		`{"model":null,` + choice + `}`, `{"model":42,` + choice + `}`, `{"model":{"a":[1]},` + choice + `}`,
		`{"mod\u0065l":"m",` + choice + `}`, `{"model":"m\u00e9",` + choice + `}`,
		// repeated members: the separate lookups' first-found rules
		`{"choices":{},"choices":[{"finish_reason":"error"}]}`,
		`{"choices":[{"index":0}],"choices":[{"finish_reason":"error"}]}`,
		`{"model":"a","model":"b",` + choice + `}`,
		`{"usage":1,"usage":{"prompt_tokens":1},` + choice + `}`,
		`{"error":{"message":"x"},"error":null}`,
		`[]`, `[{"model":"m"}]`, `"x"`, `null`, `42`,
	}
	for _, b := range bodies {
		for _, d := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
			for _, cm := range onePassModels([]byte(b)) {
				checkOnePass(t, b, d, []byte(b), cm)
			}
		}
	}
	// absolute figures, not only agreement
	_, u, _, err := PassthroughAnswer(OpenAIChat, []byte(`{"id":"c","model":"m",`+choice+`,"usage":{"prompt_tokens":3,"completion_tokens":4}}`), "")
	if err != nil || u.InputTokens == nil || *u.InputTokens != 3 || *u.OutputTokens != 4 {
		t.Errorf("usage %s, err %v; want [3 4 - - -]", fmtUsage(u), err)
	}
	out, _, _, _ := PassthroughAnswer(OpenAIChat, []byte("  {\"model\" : \"m\", "+choice+"}"), "x")
	if want := "  {\"model\" : \"x\", " + choice + "}"; string(out) != want {
		t.Errorf("rewrite after leading space: %q, want %q", out, want)
	}
	if _, _, se, _ := PassthroughAnswer(OpenAIChat, []byte(`{"error":{"code":"rate_limit_exceeded"}}`), ""); se == nil || se.Status != 429 {
		t.Errorf("error object: %+v, want status 429", se)
	}
}

// benchAnswer returns a Chat Completions answer (testdata's
// response-text.json, its content lengthened with text that has quotes
// and newlines to escape) of about size bytes.
func benchAnswer(b *testing.B, size int) []byte {
	body := jsonIn(b, []string{testdataDir(b)}, OpenAIChat, func(b []byte) bool { return true })["response-text.json"]
	if body == nil {
		b.Fatal("testdata/openai-chat/response-text.json not found")
	}
	const unit = "The answer is \"391\".\nCheck: 17 × 23 = 391. "
	var text strings.Builder
	for len(body)+text.Len() < size {
		text.WriteString(unit)
	}
	out, err := sjson.SetBytes(body, "choices.0.message.content", text.String())
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkPassthroughAnswer compares the whole-answer passthrough read
// (issue 15, item 4): "steps" is AnswerError then TranslateResponseWith
// (what relayJSON ran before), "onepass" is PassthroughAnswer, on a 1 KB
// and a 20 KB Chat answer, with the upstream's model kept ("") and
// rewritten ("client-model"). "validjson" is the ValidJSON check both
// paths keep, for scale.
func BenchmarkPassthroughAnswer(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"20KB", 20 << 10}} {
		body := benchAnswer(b, size.n)
		for _, cm := range []string{"", "client-model"} {
			mn := "model=kept"
			if cm != "" {
				mn = "model=rewritten"
			}
			b.Run(size.name+"/"+mn+"/steps", func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for range b.N {
					if _, _, se, err := answerBySteps(OpenAIChat, body, cm); se != nil || err != nil {
						b.Fatal(se, err)
					}
				}
			})
			b.Run(size.name+"/"+mn+"/onepass", func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for range b.N {
					if _, _, se, err := PassthroughAnswer(OpenAIChat, body, cm); se != nil || err != nil {
						b.Fatal(se, err)
					}
				}
			})
		}
		b.Run(size.name+"/validjson", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				if !ValidJSON(body) {
					b.Fatal("not valid")
				}
			}
		})
	}
}
