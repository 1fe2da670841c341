package translate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// checkResponsesRequest checks a translated Responses request body against
// the shapes OpenAI documents for POST /v1/responses (OpenAI API reference,
// "Create a model response"): the input item kinds and their members, the
// content part kinds per role, function calls paired with their outputs,
// function tools, store:false, and no field of another dialect.
func checkResponsesRequest(t testing.TB, label string, b []byte) {
	t.Helper()
	if !gjson.ValidBytes(b) {
		t.Fatalf("%s: invalid JSON: %s", label, b)
	}
	root := gjson.ParseBytes(b)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format+"\n%s", append([]any{label}, append(args, b)...)...)
	}
	if root.Get("store").Raw != "false" || root.Get("instructions").Type != gjson.String || !root.Get("input").IsArray() || root.Get("model").Str == "" {
		fail("store, instructions, input or model wrong")
	}
	for _, f := range []string{"messages", "system", "stop", "stop_sequences", "max_tokens", "max_completion_tokens", "top_k", "thinking", "stream_options", "response_format", "reasoning_effort", "n"} {
		if root.Get(f).Exists() {
			fail("field %q of another dialect", f)
		}
	}
	if m := root.Get("max_output_tokens"); m.Exists() && m.Int() < rsMinOutputTokens {
		fail("max_output_tokens %d", m.Int())
	}
	calls := map[string]bool{}
	root.Get("input").ForEach(func(k, it gjson.Result) bool {
		switch typ := it.Get("type").Str; typ {
		case "message":
			role := it.Get("role").Str
			want := "input_"
			switch role {
			case "assistant":
				want = "output_text"
			case "user", "system":
			default:
				fail("input %d: role %q", k.Int(), role)
			}
			if !it.Get("content").IsArray() {
				fail("input %d: content not an array", k.Int())
			}
			it.Get("content").ForEach(func(_, p gjson.Result) bool {
				if pt := p.Get("type").Str; !strings.HasPrefix(pt, want) {
					fail("input %d: %s part in a %s message", k.Int(), pt, role)
				}
				if p.Get("type").Str == "input_image" && !strings.Contains(" auto low high ", " "+p.Get("detail").Str+" ") {
					fail("input %d: image detail %q", k.Int(), p.Get("detail").Str)
				}
				return true
			})
		case "function_call":
			id, name, args := it.Get("call_id").Str, it.Get("name").Str, it.Get("arguments")
			// arguments are a JSON text the client replays: an object, or
			// whatever the model once produced (Responses, like Chat,
			// takes the string as it is); never absent or empty
			if id == "" || name == "" || args.Type != gjson.String || isBlank(args.Str) {
				fail("input %d: function_call %s", k.Int(), it.Raw)
			}
			calls[id] = true
		case "function_call_output":
			if !calls[it.Get("call_id").Str] {
				fail("input %d: output for unknown call %q", k.Int(), it.Get("call_id").Str)
			}
			if o := it.Get("output"); o.Type != gjson.String && !o.IsArray() {
				fail("input %d: output %s", k.Int(), o.Raw)
			}
		case "reasoning":
			if it.Get("encrypted_content").Str == "" || !it.Get("summary").IsArray() {
				fail("input %d: reasoning %s", k.Int(), it.Raw)
			}
		default:
			fail("input %d: item type %q", k.Int(), typ)
		}
		return true
	})
	root.Get("tools").ForEach(func(k, tl gjson.Result) bool {
		if tl.Get("type").Str != "function" || tl.Get("name").Str == "" || !tl.Get("parameters").IsObject() || !tl.Get("strict").IsBool() {
			fail("tool %d: %s", k.Int(), tl.Raw)
		}
		return true
	})
}

// TestRequestFixturesToResponses translates every Chat and Anthropic
// request fixture that translates to the other dialect to Responses too:
// the body has the documented shape, passes ValidateRequest as a Responses
// request, decodes to the same canonical content (canonDigest), and
// translates on to the other two dialects.
func TestRequestFixturesToResponses(t *testing.T) {
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages} {
		other := AnthropicMessages
		if from == AnthropicMessages {
			other = OpenAIChat
		}
		for name, body := range requestFixtures(t, from) {
			label := from.String() + "/" + name + " -> openai_responses"
			_, otherErr := TranslateRequest(from, other, body, "upstream-model")
			out, err := TranslateRequest(from, OpenAIResponses, body, "upstream-model")
			if otherErr != nil {
				continue // refused for every target (the vendor's 400 cases)
			}
			if err != nil {
				t.Errorf("%s: %v (translates to %s)", label, err, other)
				continue
			}
			n++
			checkResponsesRequest(t, label, out)
			if gjson.GetBytes(out, "model").Str != "upstream-model" {
				t.Errorf("%s: model not set", label)
			}
			if err := ValidateRequest(OpenAIResponses, out); err != nil {
				t.Errorf("%s: ValidateRequest: %v", label, err)
			}
			src, e1 := decodeRequest(from, body, true)
			back, e2 := decodeRequest(OpenAIResponses, out, true)
			if e1 != nil || e2 != nil {
				t.Fatalf("%s: decode %v %v", label, e1, e2)
			}
			src.model = back.model
			if a, b := strings.Join(canonDigest(src), "\n"), strings.Join(canonDigest(back), "\n"); a != b {
				t.Errorf("%s: content changed:\n%s\n---- back:\n%s", label, a, b)
			}
			// and on from Responses to each other upstream dialect
			for to, check := range map[Dialect]func(testing.TB, string, []byte){OpenAIChat: checkChatRequest, AnthropicMessages: checkAnthropicRequest} {
				next, err := TranslateRequest(OpenAIResponses, to, out, "")
				if err != nil {
					t.Fatalf("%s -> %s: %v", label, to, err)
				}
				check(t, label+" -> "+to.String(), next)
			}
			// translating is deterministic
			if again, _ := TranslateRequest(from, OpenAIResponses, body, "upstream-model"); !bytes.Equal(again, out) {
				t.Errorf("%s: two translations differ", label)
			}
		}
	}
	if n == 0 {
		t.Fatal("no request fixture translated")
	}
	t.Logf("%d requests translated to Responses and back", n)
}

// fuzzToResponses: any request that translates to Responses gives a body
// of the documented shape that the Responses decoder accepts.
func fuzzToResponses(f *testing.F, from Dialect) {
	seedRequests(f, from)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := TranslateRequest(from, OpenAIResponses, in, "m")
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		checkResponsesRequest(t, "fuzz", out)
		if _, e := decodeRequest(OpenAIResponses, out, true); e != nil {
			t.Fatalf("our Responses body is refused: %v\n%s\n->\n%s", e, in, out)
		}
	})
}

// FuzzChatToResponsesRequest fuzzes Chat requests translated to Responses.
func FuzzChatToResponsesRequest(f *testing.F) { fuzzToResponses(f, OpenAIChat) }

// FuzzAnthropicToResponsesRequest fuzzes Anthropic requests translated to
// Responses.
func FuzzAnthropicToResponsesRequest(f *testing.F) { fuzzToResponses(f, AnthropicMessages) }
