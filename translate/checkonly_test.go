package translate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// passOutcome is what one validation pass of parseRequest decides: its
// error (the decoder's, else the pairing check's), and for an accepted
// body the hygiene flag and the session seeds it noted.
type passOutcome struct {
	err              *Error
	dirty            bool
	seedUser, seedSy string
}

// runPass runs parseRequest's validation pass over body, keeping the
// canonical form (the full decode, then canonRequest.validate) or only
// checking (checkOnly, then the pairing check's verdict).
func runPass(d Dialect, body []byte, checkOnly bool) (passOutcome, bool) {
	if checkSize(body) != nil {
		return passOutcome{}, false
	}
	root, e := checkJSONRoot(body)
	if e != nil || !d.valid() {
		return passOutcome{}, false
	}
	if _, e := outlineOf(d, root); e != nil {
		return passOutcome{}, false
	}
	c := &checker{d: d, translate: true, root: root, rootSet: true, checkOnly: checkOnly}
	canon, e := decodeWith(c, body)
	if e == nil {
		if checkOnly {
			e = c.pairErr
		} else {
			e = canon.validate()
		}
	}
	o := passOutcome{err: e}
	if e == nil {
		o.dirty, o.seedUser, o.seedSy = c.dirty, c.seedUser.Raw, c.seedSys.Raw
	}
	return o, true
}

// checkOnlySameAsFull fails t when the checkOnly pass over body decides
// anything other than the full decode does, in dialect d.
func checkOnlySameAsFull(t testing.TB, d Dialect, body []byte) bool {
	t.Helper()
	full, ok := runPass(d, body, false)
	if !ok {
		return false
	}
	only, _ := runPass(d, body, true)
	if !reflect.DeepEqual(only, full) {
		t.Fatalf("%s %.400s:\ncheckOnly %#v\nfull      %#v", d, body, only, full)
	}
	return true
}

// TestCheckOnlySameAsFull: on every body of the package's tests, fixtures
// and seeds (the hostile and invalid ones too), in every dialect, the
// checkOnly pass a passthrough takes accepts and refuses exactly what the
// pass that builds the canonical form does, with the same *Error (class,
// message, param, code), and notes the same hygiene flag and seeds.
func TestCheckOnlySameAsFull(t *testing.T) {
	bodies := append(testBodies(t), chatMultiTurn(50<<10), responsesMultiTurn(50<<10), harnessChatRequest())
	compared, refused := map[Dialect]int{}, map[Dialect]int{}
	for _, b := range bodies {
		for _, d := range parsedDialects {
			if checkOnlySameAsFull(t, d, b) {
				compared[d]++
				if o, _ := runPass(d, b, true); o.err != nil {
					refused[d]++
				}
			}
		}
	}
	t.Logf("%d bodies; passes compared %v, of them refused %v", len(bodies), compared, refused)
	for _, d := range parsedDialects {
		if compared[d]-refused[d] < 20 || refused[d] < 20 {
			t.Errorf("%s: %d compared, %d refused: the comparison needs both", d, compared[d], refused[d])
		}
	}
}

// TestCheckOnlyPairing: the pairing check of a checkOnly pass numbers the
// messages as the canonical form merges them (leading system messages
// apart, later ones on their own, same-role turns and tool results
// merged), so a refused request names the same message.
func TestCheckOnlyPairing(t *testing.T) {
	cases := []struct {
		d    Dialect
		body string
		want string // the message of the error; "" when accepted
	}{
		{OpenAIChat, `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":"d"},{"role":"user","content":"u"},{"role":"user","content":"u2"},{"role":"tool","tool_call_id":"x","content":"r"}]}`,
			`messages[0]: tool result for "x" has no matching tool call earlier in the conversation`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"system","content":"s"},{"role":"system","content":[{"type":"text","text":"s2"}]},{"role":"assistant","content":"a"},{"role":"tool","tool_call_id":"x","content":"r"}]}`,
			`messages[4]: tool result for "x" has no matching tool call earlier in the conversation`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"ok"}]},{"role":"tool","tool_call_id":"c2","content":"no"}]}`,
			`messages[2]: tool result for "c2" has no matching tool call earlier in the conversation`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"","arguments":"{}"}}]}]}`,
			`messages[1]: tool call "c1" without a name`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"a","tool_calls":[{"id":"c1","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"user","content":"thanks"}]}`, ""},
		{OpenAIResponses, `{"model":"m","input":[{"role":"developer","content":"d"},{"type":"reasoning","summary":[]},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
			`messages[0]: tool result for "c" has no matching tool call earlier in the conversation`},
		{OpenAIResponses, `{"model":"m","input":[{"role":"user","content":"u"},{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}]},{"role":"system","content":"s"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]}`,
			`messages[3]: tool result for "c" has no matching tool call earlier in the conversation`},
		{OpenAIResponses, `{"model":"m","input":[{"role":"user","content":"u"},{"type":"reasoning","summary":[],"encrypted_content":"e"},{"type":"web_search_call","id":"w"},{"type":"custom_tool_call","call_id":"p","name":"apply_patch","input":"x"},{"type":"custom_tool_call_output","call_id":"p","output":"done"},{"type":"function_call_output","call_id":"q","output":"o"}]}`,
			`messages[2]: tool result for "q" has no matching tool call earlier in the conversation`},
		{OpenAIResponses, `{"model":"m","input":[{"role":"user","content":"u"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`, ""},
	}
	for _, c := range cases {
		checkOnlySameAsFull(t, c.d, []byte(c.body))
		o, _ := runPass(c.d, []byte(c.body), true)
		got := ""
		if o.err != nil {
			got = o.err.Message
		}
		if got != c.want {
			t.Errorf("%s %s:\ngot  %q\nwant %q", c.d, c.body, got, c.want)
		}
		// and through ParseRequestFor: refused as a passthrough too
		_, err := ParseRequestFor(c.d, []byte(c.body), c.d)
		if (err == nil) != (c.want == "") || err != nil && err.(*Error).Message != c.want {
			t.Errorf("%s %s: ParseRequestFor error %v, want %q", c.d, c.body, err, c.want)
		}
	}
}

// TestPassthroughKeepsNoCanonical: ParseRequestFor a request's own dialect
// keeps no canonical form in every dialect; the passthrough Encode builds
// none, the first translation (or CustomTools) builds it once, and what
// they answer is what a fresh translation answers.
func TestPassthroughKeepsNoCanonical(t *testing.T) {
	custom := []byte(`{"model":"gpt-5","input":"hi","tools":[{"type":"custom","name":"apply_patch","description":"patch"},{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"auto"}`)
	cases := append(bigRequests(t), dialectBody{OpenAIChat, harnessChatRequest()}, dialectBody{OpenAIChat, chatMultiTurn(50 << 10)},
		dialectBody{OpenAIResponses, responsesMultiTurn(50 << 10)}, dialectBody{OpenAIResponses, custom})
	for _, c := range cases {
		builds := canonBuilds.Load()
		r, err := ParseRequestFor(c.d, c.body, c.d)
		if err != nil {
			t.Fatalf("%s: %v", c.d, err)
		}
		if r.canon != nil {
			t.Errorf("%s: the passthrough pass kept a canonical form", c.d)
		}
		for _, m := range []string{"", "up"} {
			if _, err := r.Encode(c.d, m); err != nil {
				t.Fatal(err)
			}
		}
		if n := canonBuilds.Load() - builds; n != 0 {
			t.Errorf("%s: passthrough built the canonical form %d times", c.d, n)
		}
		if c.d == OpenAIResponses {
			got := r.CustomTools()
			want := oldCustomTools(c.d, c.body)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("CustomTools %q, want %q", got, want)
			}
		}
		for _, to := range parsedDialects {
			if to == c.d {
				continue
			}
			got, gotErr := r.Encode(to, "up")
			want, wantErr := TranslateRequest(c.d, to, c.body, "up")
			if !bytes.Equal(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
				t.Errorf("%s→%s: Encode differs from TranslateRequest: %v %v", c.d, to, gotErr, wantErr)
			}
		}
		if n := canonBuilds.Load() - builds; n != 1 {
			t.Errorf("%s: canonical form built %d times, want 1", c.d, n)
		}
	}
	r, err := ParseRequestFor(OpenAIResponses, custom, OpenAIResponses)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.CustomTools(); !reflect.DeepEqual(got, []string{"apply_patch"}) {
		t.Errorf("CustomTools of a passthrough parse: %q, want [apply_patch]", got)
	}
}

// FuzzCheckOnly: for any body, in every dialect, the checkOnly pass and
// the full decode accept and refuse alike, with the same error, hygiene
// flag and seeds; and the passthrough parse (ParseRequestFor its own
// dialect) answers what the handler's old calls did.
func FuzzCheckOnly(f *testing.F) {
	for _, b := range testBodies(f) {
		if len(b) < 8<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, d := range parsedDialects {
			checkOnlySameAsFull(t, d, in)
			checkParsedSameAsOld(t, d, in, func() (*Request, error) { return ParseRequestFor(d, in, d) })
		}
	})
}

// harnessChatRequest is the request the load harness sends to gw-pass
// (bench/bodies.go chatRequest: 2 KB, a system and a user message,
// max_tokens, temperature).
func harnessChatRequest() []byte {
	const words = "the quick brown fox jumps over the lazy dog while a gateway relays tokens "
	b, _ := json.Marshal(map[string]any{"model": "bench-json", "stream": false, "max_tokens": 1024, "temperature": 0.2,
		"messages": []map[string]any{{"role": "system", "content": "You are a terse assistant."},
			{"role": "user", "content": "Summarise: " + strings.Repeat(words, 26)}}})
	return b
}

// chatMultiTurn is a coding agent's Chat Completions request of about size
// bytes: a system prompt, function tools, then turns of a user message,
// an assistant tool call, its tool result and an assistant answer.
func chatMultiTurn(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5","stream":false,"max_completion_tokens":4096,"tools":[`)
	for i := 0; i < 8; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"function","function":{"name":"Tool` + strconv.Itoa(i) + `","description":"Reads a file from the local filesystem.","parameters":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}}}`)
	}
	b.WriteString(`],"messages":[{"role":"system","content":` + strconv.Quote(strings.Repeat("You are a coding agent. ", 40)) + `}`)
	for i := 0; b.Len() < size-40; i++ {
		id := "call_" + strconv.Itoa(i)
		b.WriteString(`,{"role":"user","content":[{"type":"text","text":` + strconv.Quote(strings.Repeat("Please fix the failing test in pkg/server. ", 6)) + `}]}`)
		b.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"Tool3","arguments":"{\"file_path\":\"/repo/x.go\"}"}}]}`)
		b.WriteString(`,{"role":"tool","tool_call_id":"` + id + `","content":` + strconv.Quote(strings.Repeat("func main() {\n\tfmt.Println(\"hello\")\n}\n", 12)) + `}`)
		b.WriteString(`,{"role":"assistant","content":` + strconv.Quote(strings.Repeat("The test fails because the handler returns early. ", 4)) + `}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// responsesMultiTurn is chatMultiTurn's conversation as a Codex-shaped
// Responses request: instructions, function and custom tools, then turns
// of a user message, a reasoning item, a function call and its output.
func responsesMultiTurn(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5","stream":false,"instructions":` + strconv.Quote(strings.Repeat("You are a coding agent. ", 40)) +
		`,"tools":[{"type":"custom","name":"apply_patch","description":"Apply a patch"}`)
	for i := 0; i < 8; i++ {
		b.WriteString(`,{"type":"function","name":"Tool` + strconv.Itoa(i) + `","description":"Reads a file.","parameters":{"type":"object","properties":{"file_path":{"type":"string"}}}}`)
	}
	b.WriteString(`],"reasoning":{"effort":"medium","summary":"auto"},"input":[`)
	for i := 0; b.Len() < size-40; i++ {
		id := "call_" + strconv.Itoa(i)
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"message","role":"user","content":[{"type":"input_text","text":` + strconv.Quote(strings.Repeat("Please fix the failing test in pkg/server. ", 6)) + `}]}`)
		b.WriteString(`,{"type":"reasoning","summary":[{"type":"summary_text","text":"Reading the handler first."}],"encrypted_content":"` + strings.Repeat("gAAAAB", 40) + `"}`)
		b.WriteString(`,{"type":"function_call","call_id":"` + id + `","name":"Tool3","arguments":"{\"file_path\":\"/repo/x.go\"}"}`)
		b.WriteString(`,{"type":"function_call_output","call_id":"` + id + `","output":` + strconv.Quote(strings.Repeat("func main() {\n\tfmt.Println(\"hello\")\n}\n", 12)) + `}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkParsePassthrough measures the preparation of a passthrough
// request as the handler does it (ParseRequestFor its own dialect, the
// session seed, Encode for the same dialect with the upstream's model),
// on the load harness's 2 KB Chat request and 50 KB multi-turn Chat and
// Responses requests. The file runs unchanged on the code before the
// checkOnly pass of Chat and Responses (the old figures); "building" is
// the same preparation with the pass that keeps the canonical form, for
// a comparison within one build.
func BenchmarkParsePassthrough(b *testing.B) {
	for _, c := range []struct {
		name string
		d    Dialect
		body []byte
	}{
		{"chat_2k", OpenAIChat, harnessChatRequest()},
		{"chat_50k", OpenAIChat, chatMultiTurn(50 << 10)},
		{"responses_50k", OpenAIResponses, responsesMultiTurn(50 << 10)},
	} {
		for _, mode := range []struct {
			name  string
			parse func() (*Request, error)
		}{
			{"passthrough", func() (*Request, error) { return ParseRequestFor(c.d, c.body, c.d) }},
			{"building", func() (*Request, error) { return ParseRequest(c.d, c.body) }},
		} {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				want, err := oldSameDialect(c.d, c.body, "up-model")
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(c.body)))
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU()
				for i := 0; i < b.N; i++ {
					r, err := mode.parse()
					if err != nil {
						b.Fatal(err)
					}
					_, _ = r.SessionSeed()
					if out, err := r.Encode(c.d, "up-model"); err != nil || len(out) != len(want) {
						b.Fatal("output differs", err)
					}
				}
				cpu.report(b)
			})
		}
	}
}
