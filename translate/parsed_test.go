package translate

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

var parsedDialects = []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses}

// oldValidate is the check the handler ran before ParseRequest:
// RequestInfo, then ValidateRequest.
func oldValidate(d Dialect, body []byte) (model string, stream bool, err error) {
	model, stream, err = RequestInfo(d, body)
	if err == nil {
		err = ValidateRequest(d, body)
	}
	return model, stream, err
}

// oldSessionSeed is what caddymodule/session.go read before ParseRequest
// (the raw system text and first user message it hashes).
func oldSessionSeed(d Dialect, body []byte) (string, string) {
	var paths [2]string
	switch d {
	case AnthropicMessages:
		paths = [2]string{"system", `messages.#(role=="user").content`}
	case OpenAIResponses:
		paths = [2]string{"instructions", "input"}
	default:
		paths = [2]string{`messages.#(role=="system").content`, `messages.#(role=="user").content`}
	}
	// a read-only view of the body, as session.go reads it
	res := gjson.GetMany(view(body), paths[0], paths[1])
	first := res[1]
	if first.IsArray() && d == OpenAIResponses {
		first = first.Get(`#(role=="user")`)
	}
	return res[0].Raw, first.Raw
}

// oldSameDialect is the passthrough body the handler built before
// ParseRequest: SetModel, then the dialect's hygiene.
func oldSameDialect(d Dialect, body []byte, model string) ([]byte, error) {
	b := body
	if model != "" {
		var err error
		if b, err = SetModel(body, model); err != nil {
			return nil, err
		}
	}
	switch d {
	case OpenAIChat:
		b = ChatReasoningToContent(b)
	case AnthropicMessages:
		b = SanitizeAnthropicRequest(b)
	}
	return b, nil
}

// testBodies collects request bodies from this package's tests: every
// string literal of a _test.go file that holds a JSON object or starts
// like one (the invalid-request tables of request_test.go,
// validate_test.go, hygiene_test.go, ...), the field-check cases spliced
// into their bases, the recorded request fixtures (the fuzz seeds), a few
// malformed bodies, and truncations of all of these.
func testBodies(t testing.TB) [][]byte {
	t.Helper()
	seen := map[string]bool{}
	var out [][]byte
	add := func(b string) {
		if !seen[b] {
			seen[b] = true
			out = append(out, []byte(b))
		}
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") && len(s) < 1<<16 {
				add(s)
			}
			return true
		})
	}
	for d, cases := range map[Dialect][]fieldCase{OpenAIChat: chatFieldCases, AnthropicMessages: anthropicFieldCases, OpenAIResponses: responsesFieldCases} {
		add(fieldBases[d] + "}")
		for _, c := range cases {
			add(withField(d, c.extra))
		}
	}
	// the recorded requests (requestFixtures' files, the fuzz seeds), of
	// testdata/ and, when present, ../shared/fixtures, read directly
	dirs := []string{testdataDir(t)}
	if dir := sharedFixturesDir(); dir != "" {
		dirs = append(dirs, dir)
	}
	for _, d := range parsedDialects {
		walkDialect(t, dirs, d, []string{streamErrorsDir}, func(rel string, b []byte) {
			if strings.HasSuffix(rel, ".request.json") {
				add(string(b))
			}
		})
	}
	for _, b := range []string{
		"", " ", "[]", "null", `"x"`, "{", `{"model":"m",}`, `{"model":"m","model":"n","messages":[],"input":"x"}`,
		strings.Repeat("[", MaxNesting+1) + strings.Repeat("]", MaxNesting+1),
		`{"model":"m","messages":[],"input":[],"x":` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + `}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"input":"hi","system":"s","instructions":"i","max_tokens":5}`,
		`{"model":"m","stream":"yes","messages":[]}`, `{"model":"","messages":[]}`, `{"model":null,"messages":[]}`,
		// escaped keys and strings, the model last, whitespace around it
		`{"mod\u0065l":"m","messages":[{"role":"user","content":"hi"}],"input":"hi","max_tokens":5}`,
		`{"model":"m","mod\u0065l":"n","messages":[{"role":"user","content":"hi"}],"input":"hi"}`,
		`{"messages":[{"role":"user","content":"a \"quoted\" \\ word"}],"input":"hi\\","max_tokens":5, "model" :  "m\u00e9"  }`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":" "},{"type":"text","text":"x"}]}],"input":"x","max_tokens":5,"model":"m"}`,
		"{\n\t\"model\": \"m\",\n\t\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"input\": [{\"role\":\"user\",\"content\":\"hi\"}]\n}",
	} {
		add(b)
	}
	for _, b := range out[:len(out):len(out)] {
		if len(b) > 8 {
			add(string(b[:len(b)/2]))
			add(string(b[:len(b)-1]))
		}
	}
	add(string(bigAnthropicRequest()))
	add(string(bigResponsesRequest()))
	if cc, err := TranslateRequest(AnthropicMessages, OpenAIChat, bigAnthropicRequest(), ""); err == nil {
		add(string(cc))
	}
	return out
}

// checkSameAsOld compares ParseRequest and everything a Request answers
// with the functions the handler called before it, for one body.
func checkSameAsOld(t *testing.T, d Dialect, body []byte) {
	t.Helper()
	checkParsedSameAsOld(t, d, body, func() (*Request, error) { return ParseRequest(d, body) })
	// the canonical form built in the validation pass (a translation
	// expected) or not (a passthrough expected): the same answers
	// (the passthrough of each dialect among them: ParseRequestFor(d, d)
	// is its checkOnly pass)
	for _, up := range parsedDialects {
		checkParsedSameAsOld(t, d, body, func() (*Request, error) { return ParseRequestFor(d, body, up) })
	}
}

// checkParsedSameAsOld is checkSameAsOld for one way of parsing.
func checkParsedSameAsOld(t *testing.T, d Dialect, body []byte, parse func() (*Request, error)) {
	t.Helper()
	keep := append([]byte(nil), body...)
	model, stream, oldErr := oldValidate(d, body)
	r, err := parse()
	if !reflect.DeepEqual(err, oldErr) {
		t.Fatalf("%s %.300s:\nParseRequest error %#v\nold error          %#v", d, body, err, oldErr)
	}
	if err != nil {
		if r != nil {
			t.Fatalf("%s: a Request with an error", d)
		}
		return
	}
	if r.Dialect() != d || r.Model() != model || r.Stream() != stream || !bytes.Equal(r.Body(), keep) || &r.Body()[0] != &body[0] {
		t.Fatalf("%s %.300s: got %s %q %v, want %q %v", d, body, r.Dialect(), r.Model(), r.Stream(), model, stream)
	}
	if r.EstimatedTokens() != int64(len(body)/4) {
		t.Fatalf("EstimatedTokens %d for %d bytes", r.EstimatedTokens(), len(body))
	}
	s, u := r.SessionSeed()
	if os, ou := oldSessionSeed(d, body); s != os || u != ou {
		t.Fatalf("%s %.300s: SessionSeed %q %q, want %q %q", d, body, s, u, os, ou)
	}
	for _, to := range parsedDialects {
		for _, m := range []string{"", "up-model", model} {
			var want []byte
			var wantErr error
			if to == d {
				want, wantErr = oldSameDialect(d, body, m)
			} else {
				want, wantErr = TranslateRequest(d, to, body, m)
			}
			got, gotErr := r.Encode(to, m)
			if !bytes.Equal(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("%s→%s model %q %.300s:\nEncode %.300s %v\nold    %.300s %v", d, to, m, body, got, gotErr, want, wantErr)
			}
			again, againErr := r.Encode(to, m)
			if !bytes.Equal(again, got) || (len(got) > 0 && &again[0] != &got[0]) || !reflect.DeepEqual(againErr, gotErr) {
				t.Fatalf("%s→%s: second Encode differs", d, to)
			}
		}
	}
	if !bytes.Equal(body, keep) {
		t.Fatalf("%s: the client's body changed", d)
	}
	// what the handler reads for a Responses client answered by another
	// dialect: the custom tools of the canonical form (nil when the
	// request cannot be translated) and the echo, whichever pass it took
	if got, want := r.CustomTools(), oldCustomTools(d, body); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %.300s: CustomTools %q, want %q", d, body, got, want)
	}
	gt, gc := r.ResponsesEcho()
	wt, wc := (&Request{d: d, body: body}).ResponsesEcho()
	if !bytes.Equal(gt, wt) || !bytes.Equal(gc, wc) {
		t.Fatalf("%s %.300s: ResponsesEcho %s %s, want %s %s", d, body, gt, gc, wt, wc)
	}
}

// oldCustomTools is what CustomTools answered when every Responses
// request's validation pass built the canonical form: the custom tools'
// names of a translation's decoding, nil when it refuses the request (a
// Chat request's custom tools too, since they are translated).
func oldCustomTools(d Dialect, body []byte) []string {
	if d != OpenAIResponses && d != OpenAIChat {
		return nil
	}
	canon, e := decodeRequest(d, body, true)
	if e == nil {
		e = canon.validate()
	}
	if e != nil {
		return nil
	}
	return canon.customToolNames()
}

// TestParseRequestSameAsOld: for every body of the package's tests,
// fixtures and seeds, in every dialect, ParseRequest's error is the one
// RequestInfo then ValidateRequest gave, and Model, Stream, SessionSeed
// and Encode (same dialect and translated, with and without a model)
// answer exactly what the old calls did.
func TestParseRequestSameAsOld(t *testing.T) {
	bodies := testBodies(t)
	if len(bodies) < 300 {
		t.Fatalf("only %d bodies collected", len(bodies))
	}
	accepted := map[Dialect]int{}
	for _, b := range bodies {
		for _, d := range append(parsedDialects, Dialect(0)) {
			checkSameAsOld(t, d, b)
			if _, err := ParseRequest(d, b); err == nil {
				accepted[d]++
			}
		}
	}
	t.Logf("%d bodies; accepted: %v", len(bodies), accepted)
	for _, d := range parsedDialects {
		if accepted[d] < 20 {
			t.Errorf("%s: only %d bodies accepted; the comparison needs valid requests too", d, accepted[d])
		}
	}
}

// dialectBody is a request body of a client dialect.
type dialectBody struct {
	d    Dialect
	body []byte
}

// bigRequests are the 80 KB Claude Code-shaped request as Anthropic and
// Chat clients send it, and the Responses request of the same size.
func bigRequests(t *testing.T) []dialectBody {
	t.Helper()
	cc, err := TranslateRequest(AnthropicMessages, OpenAIChat, bigAnthropicRequest(), "")
	if err != nil {
		t.Fatal(err)
	}
	return []dialectBody{{AnthropicMessages, bigAnthropicRequest()}, {OpenAIChat, cc}, {OpenAIResponses, bigResponsesRequest()}}
}

// TestParseCountOnePerRequest: one full parse per request, whatever is
// asked of it after: passthrough and translated encodes, repeated (a
// retry on another key) and to two other dialects.
func TestParseCountOnePerRequest(t *testing.T) {
	for _, c := range bigRequests(t) {
		before := ParseCount()
		r, err := ParseRequest(c.d, c.body)
		if err != nil {
			t.Fatal(err)
		}
		if n := ParseCount() - before; n != 1 {
			t.Fatalf("%s: ParseRequest made %d full parses, want 1", c.d, n)
		}
		s, u := r.SessionSeed()
		if s == "" || u == "" {
			t.Errorf("%s: SessionSeed %.40q %.40q", c.d, s, u)
		}
		_ = r.EstimatedTokens()
		for attempt := 0; attempt < 3; attempt++ {
			for _, to := range []Dialect{c.d, OpenAIChat, AnthropicMessages} {
				for _, m := range []string{"", "other-model"} {
					if _, err := r.Encode(to, m); err != nil {
						t.Fatalf("%s→%s: %v", c.d, to, err)
					}
				}
			}
		}
		if n := ParseCount() - before; n != 1 {
			t.Errorf("%s: %d full parses for one request with retries and two upstream dialects, want 1", c.d, n)
		}
	}
	// the old sequence, for the record: RequestInfo, ValidateRequest and a
	// translation each read the whole body
	am := bigAnthropicRequest()
	before := ParseCount()
	if _, _, err := oldValidate(AnthropicMessages, am); err != nil {
		t.Fatal(err)
	}
	if _, err := TranslateRequest(AnthropicMessages, OpenAIChat, am, "m"); err != nil {
		t.Fatal(err)
	}
	if n := ParseCount() - before; n != 3 {
		t.Errorf("old sequence: %d full parses, want 3", n)
	}
}

// mustParse is ParseRequest for a body the test knows valid.
func mustParse(t *testing.T, d Dialect, body []byte) *Request {
	t.Helper()
	r, err := ParseRequest(d, body)
	if err != nil {
		t.Fatalf("%s: %v", d, err)
	}
	return r
}

// TestEncodeRetryCostsNothing: a second Encode with the same upstream
// dialect and model returns the cached body without allocating.
func TestEncodeRetryCostsNothing(t *testing.T) {
	am := bigAnthropicRequest()
	r := mustParse(t, AnthropicMessages, am)
	for _, c := range []struct {
		to    Dialect
		model string
	}{{AnthropicMessages, ""}, {AnthropicMessages, "claude-opus-4-1"}, {OpenAIChat, "gpt-5"}, {OpenAIResponses, "gpt-5"}, {OpenAIChat, "gpt-5-mini"}} {
		first, err := r.Encode(c.to, c.model)
		if err != nil {
			t.Fatal(err)
		}
		if allocs := testing.AllocsPerRun(20, func() {
			b, _ := r.Encode(c.to, c.model)
			if len(b) != len(first) {
				t.Fatal("cached body differs")
			}
		}); allocs != 0 {
			t.Errorf("→%s %q: retry allocates %.0f times", c.to, c.model, allocs)
		}
	}
	// passthrough without a model change is the client's own slice
	b, _ := r.Encode(AnthropicMessages, "")
	if &b[0] != &am[0] {
		t.Error("passthrough without a model change copied the body")
	}
	b, _ = r.Encode(AnthropicMessages, "claude-opus-4-1")
	if gjson.GetBytes(b, "model").Str != "claude-opus-4-1" || len(b) != len(am)-len("claude-sonnet-4-5")+len("claude-opus-4-1") {
		t.Errorf("model rewrite: model %q, %d bytes from %d", gjson.GetBytes(b, "model").Str, len(b), len(am))
	}
}

// TestParseRequestTranslateOnlyErrors: a request its own dialect accepts
// but a translation refuses (the vendor's ranges and enums, n > 1, a
// feature without a counterpart) parses, passes through, and Encode to
// another dialect gives TranslateRequest's error, every time.
func TestParseRequestTranslateOnlyErrors(t *testing.T) {
	for _, c := range []struct {
		d    Dialect
		body string
		want string
	}{
		{OpenAIChat, `{"model":"m","n":3,"messages":[{"role":"user","content":"x"}]}`, "n=1"},
		{OpenAIChat, `{"model":"m","temperature":3,"messages":[{"role":"user","content":"x"}]}`, "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead."},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, "temperature: Input should be less than or equal to 1"},
		{AnthropicMessages, `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens: 0"},
		{OpenAIResponses, `{"model":"m","input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
	} {
		r, err := ParseRequest(c.d, []byte(c.body))
		if err != nil {
			t.Fatalf("%s %s: %v", c.d, c.body, err)
		}
		if b, err := r.Encode(c.d, "up"); err != nil || gjson.GetBytes(b, "model").Str != "up" {
			t.Errorf("%s passthrough: %s %v", c.d, b, err)
		}
		for _, to := range parsedDialects {
			if to == c.d {
				continue
			}
			for i := 0; i < 2; i++ {
				_, err := r.Encode(to, "")
				e, ok := err.(*Error)
				if !ok || e.Class != ErrInvalidRequest || !strings.Contains(e.Message, c.want) {
					t.Errorf("%s→%s %s: %v, want %q", c.d, to, c.body, err, c.want)
				}
			}
		}
	}
	if _, err := ParseRequest(AnthropicMessages, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`)); err != nil {
		t.Fatal(err)
	}
	r, _ := ParseRequest(AnthropicMessages, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`))
	if _, err := r.Encode(Dialect(99), ""); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unknown upstream dialect: %v", err)
	}
}

// TestEncodeLeavesCanonicalForm: encoding to one dialect with one model
// does not change what another encode gives (the canonical form is
// shared between them).
func TestEncodeLeavesCanonicalForm(t *testing.T) {
	am := bigAnthropicRequest()
	r := mustParse(t, AnthropicMessages, am)
	a1, _ := r.Encode(OpenAIChat, "a")
	_, _ = r.Encode(OpenAIResponses, "b")
	k, _ := r.Encode(OpenAIChat, "")
	want, _ := TranslateRequest(AnthropicMessages, OpenAIChat, am, "")
	if !bytes.Equal(k, want) {
		t.Errorf("Encode(chat, \"\") after other encodes differs from TranslateRequest")
	}
	if gjson.GetBytes(a1, "model").Str != "a" || gjson.GetBytes(k, "model").Str != "claude-sonnet-4-5" {
		t.Errorf("models: %q %q", gjson.GetBytes(a1, "model").Str, gjson.GetBytes(k, "model").Str)
	}
}

// FuzzParseRequest: for any body, ParseRequest and the Request agree with
// the functions the handler called before it.
func FuzzParseRequest(f *testing.F) {
	for _, b := range testBodies(f) {
		if len(b) < 8<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, max := range []int{1, 3, MaxNesting} {
			if tooDeep(in, max) != tooDeepRef(in, max) {
				t.Fatalf("tooDeep(%q, %d) differs from its definition", in, max)
			}
		}
		if hasBlankString(in) != hasBlankStringRef(in) {
			t.Fatalf("hasBlankString(%q) differs from its definition", in)
		}
		for _, d := range parsedDialects {
			checkSameAsOld(t, d, in)
		}
	})
}

// jsonString matches a complete JSON string literal (any escapes).
var jsonString = regexp.MustCompile(`"(?:[^"\\]|\\[\s\S])*"`)

// tooDeepRef is an independent statement of tooDeep: drop every complete
// string literal, cut at an unterminated one (the rest is inside it),
// then count brackets.
func tooDeepRef(body []byte, max int) bool {
	rest := jsonString.ReplaceAll(body, nil)
	if i := bytes.IndexByte(rest, '"'); i >= 0 {
		rest = rest[:i]
	}
	depth := 0
	for _, c := range rest {
		if c == '{' || c == '[' {
			if depth++; depth > max {
				return true
			}
		} else if c == '}' || c == ']' {
			depth--
		}
	}
	return false
}

// TestTooDeepSkipsStrings: brackets inside strings, escaped quotes and
// runs of backslashes before a quote are read as tooDeepRef, its
// independent statement, reads them.
func TestTooDeepSkipsStrings(t *testing.T) {
	cases := []string{
		`[[[]]]`, `[["[[[["]]]`, `[["\"[[[["]]]`, `[["\\"[[[[]]]]]`, `[["\\\"[[[["]]]`, `[["\\\\"[[[]]]]]`,
		`["\`, `["\\`, `["abc`, `"`, `[[[`, `{"a":{"b":["[{","\"]}"]}}`, `["\\\\\\\\\\\\\\\\\\\\\\\\\\"[[[`,
	}
	for _, c := range cases {
		for max := 0; max <= 6; max++ {
			if got, want := tooDeep([]byte(c), max), tooDeepRef([]byte(c), max); got != want {
				t.Errorf("tooDeep(%s, %d) = %v, want %v", c, max, got, want)
			}
		}
	}
	if !tooDeep([]byte(`{"a":"x\\"}`+strings.Repeat("[", 300)), MaxNesting) || tooDeep([]byte(`{"a":"x\"`+strings.Repeat("[", 300)+`"}`), MaxNesting) {
		t.Error("escaped quote read wrongly")
	}
}

// blankMember is hasBlankString's definition as a regular expression: a
// "text", "content", "system" or "signature" key (wherever a quote
// starts it) whose value is a string of JSON whitespace, raw or escaped.
var blankMember = regexp.MustCompile(`"(?:text|content|system|signature)"[ \t\r\n]*:[ \t\r\n]*"(?:[ \t\r\n]|\\[nrt])*"`)

// hasBlankStringRef is the regular expression's answer.
func hasBlankStringRef(body []byte) bool { return blankMember.Match(body) }

// TestHasBlankStringSameAsByteScan: the quote-jumping scan finds what
// its definition (blankMember) finds, on every test body and the edge
// cases of a key at the very end.
func TestHasBlankStringSameAsByteScan(t *testing.T) {
	bodies := testBodies(t)
	for _, s := range []string{`"text":""`, `"text":" "`, `x"text":"`, `"text":`, `""""""""text":""`, `{"content": "\n\t"}`, `"system"  :  "\r"`, `"signature":"\\n"`} {
		bodies = append(bodies, []byte(s))
	}
	found := 0
	for _, b := range bodies {
		for _, cut := range []int{len(b), len(b) - 1, len(b) - 3} {
			if cut < 0 {
				continue
			}
			got, want := hasBlankString(b[:cut]), hasBlankStringRef(b[:cut])
			if got != want {
				t.Fatalf("hasBlankString(%.300q) = %v, want %v", b[:cut], got, want)
			}
			if got {
				found++
			}
		}
	}
	if found < 10 {
		t.Errorf("only %d bodies with a blank string: the comparison needs both answers", found)
	}
}

// TestHygieneFlaggedByParse: the validation pass flags every body the
// same-dialect hygiene would change (SanitizeAnthropicRequest for
// Anthropic Messages, ChatReasoningToContent for OpenAI Chat), over every
// body of the package's corpus, so Encode may skip the hygiene's scans
// on the others. A body flagged but left unchanged only costs the scans.
func TestHygieneFlaggedByParse(t *testing.T) {
	hygiene := map[Dialect]func([]byte) []byte{AnthropicMessages: SanitizeAnthropicRequest, OpenAIChat: ChatReasoningToContent}
	bodies := append(testBodies(t),
		[]byte(`{"model":"m","max_tokens":5,"system":" \n","messages":[{"role":"user","content":"hi"}]}`),
		[]byte(`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"\t"}],"messages":[{"role":"user","content":"hi"}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"\n"},{"role":"user","content":"x"}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":"\r\n "}]}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":" "}]}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":""},{"type":"text","text":"ok"}]}]}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":""},{"type":"text","text":"a"}]}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"openai.reasoning.v1:abc"},{"type":"text","text":"a"}]}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"openai.reasoning.v1:abc"},{"type":"text","text":"a"}]}]}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a","reasoning":"r"}]}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a","reasoning":1,"reasoning":"r"}]}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a","reas\u006fning":"r"}]}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a","reasoning":"r","reasoning_content":"c"}]}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","reasoning":"r","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`),
		[]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"a","reasoning":""},{"role":"user","content":"more"},{"role":"assistant","content":"b","reasoning":"r2"}]}`),
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi","reasoning":"not an assistant's"},{"role":"assistant","content":"a","reasoning":null}]}`),
	)
	changed, flagged, refused := map[Dialect]int{}, map[Dialect]int{}, map[Dialect]int{}
	for _, b := range bodies {
		for d, clean := range hygiene {
			r, err := ParseRequest(d, b)
			if err != nil {
				continue
			}
			out := clean(b)
			same := len(out) == len(b) && (len(b) == 0 || &out[0] == &b[0])
			if !same {
				changed[d]++
				if r.clean {
					t.Errorf("%s %.300s: the hygiene changes the body but the parse did not flag it", d, b)
				}
			}
			switch {
			case r.xerr != nil:
				refused[d]++ // the hygiene runs with its own scans
			case !r.clean && same:
				flagged[d]++ // flagged, unchanged: only its scans are spent
			}
		}
	}
	t.Logf("%d bodies; changed by the hygiene %v; flagged but unchanged %v; refused by a translation (not flagged: the hygiene scans) %v", len(bodies), changed, flagged, refused)
	for d := range hygiene {
		if changed[d] < 5 {
			t.Errorf("%s: only %d bodies the hygiene changes; the check needs them", d, changed[d])
		}
	}
}

// TestCanonicalBuiltOnDemand: an Anthropic Messages request's validation
// pass keeps no canonical form; the first translation builds it, once,
// without counting a parse, and passthrough never does. Chat and
// Responses requests keep theirs from the validation pass.
func TestCanonicalBuiltOnDemand(t *testing.T) {
	for _, c := range bigRequests(t) {
		var want uint64 // canonical forms built after ParseRequest
		if c.d == AnthropicMessages {
			want = 1
		}
		parses, builds := ParseCount(), canonBuilds.Load()
		r := mustParse(t, c.d, c.body)
		if (r.canon == nil) != (want == 1) {
			t.Errorf("%s: canonical form kept by the validation pass: %v", c.d, r.canon != nil)
		}
		for attempt := 0; attempt < 2; attempt++ {
			for _, m := range []string{"", "m2"} {
				if _, err := r.Encode(c.d, m); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n := canonBuilds.Load() - builds; n != 0 {
			t.Errorf("%s: passthrough built the canonical form %d times", c.d, n)
		}
		for attempt := 0; attempt < 2; attempt++ {
			for _, to := range parsedDialects {
				for _, m := range []string{"", "m2"} {
					if _, err := r.Encode(to, m); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if n := canonBuilds.Load() - builds; n != want {
			t.Errorf("%s: canonical form built %d times for two translations and retries, want %d", c.d, n, want)
		}
		if n := ParseCount() - parses; n != 1 {
			t.Errorf("%s: %d full parses, want 1", c.d, n)
		}
	}
}

// TestSessionSeedNotedInPass checks the session seeds the validation pass
// notes against SessionSeed's old queries on conversations where the
// first "system" or "user" message is not the first message, roles
// repeat, or the seed is absent.
func TestSessionSeedNotedInPass(t *testing.T) {
	cases := []struct {
		d    Dialect
		body string
	}{
		{OpenAIChat, `{"model":"m","messages":[{"role":"developer","content":"dev"},{"role":"user","content":"u1"},{"role":"system","content":[{"type":"text","text":"s1"}]},{"role":"user","content":"u2"},{"role":"system","content":"s2"}]}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"x"}]}]}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"developer","content":"only dev"}]}`},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":"u1"},{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"u2"}]}]}`},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"prefill only"}]}`},
		{OpenAIResponses, `{"model":"m","instructions":"ins","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"},{"role":"assistant","content":"a"},{"type":"message","role":"user","content":[{"type":"input_text","text":"u1"}]},{"role":"user","content":"u2"}]}`},
		{OpenAIResponses, `{"model":"m","input":"just text"}`},
		{OpenAIResponses, `{"model":"m","input":[{"role":"developer","content":"d"}]}`},
	}
	for _, c := range cases {
		r, err := ParseRequest(c.d, []byte(c.body))
		if err != nil {
			t.Fatalf("%s %s: %v", c.d, c.body, err)
		}
		s, u := r.SessionSeed()
		os, ou := oldSessionSeed(c.d, []byte(c.body))
		if s != os || u != ou {
			t.Errorf("%s %s: SessionSeed %q %q, want %q %q", c.d, c.body, s, u, os, ou)
		}
	}
}

// TestParsedRequestsOutliveScratch: the buffers a parse walks objects
// into are reused by the next parse (parseScratchPool), so a Request must
// keep nothing that points into them. Every body of the corpus is parsed
// first, in every dialect and for every upstream, and only then encoded:
// each Encode must still answer what a fresh translation does, and the
// session seed what it did right after the parse.
func TestParsedRequestsOutliveScratch(t *testing.T) {
	type parsed struct {
		r            *Request
		body         []byte
		seedS, seedU string
	}
	var all []parsed
	for _, b := range testBodies(t) {
		for _, d := range parsedDialects {
			for _, up := range parsedDialects {
				r, err := ParseRequestFor(d, b, up)
				if err != nil {
					continue
				}
				s, u := r.SessionSeed()
				all = append(all, parsed{r, b, s, u})
			}
		}
	}
	if len(all) < 300 {
		t.Fatalf("only %d requests parsed", len(all))
	}
	for _, p := range all {
		d := p.r.Dialect()
		if s, u := p.r.SessionSeed(); s != p.seedS || u != p.seedU {
			t.Fatalf("%s %.200s: SessionSeed changed after other parses", d, p.body)
		}
		for _, to := range parsedDialects {
			if to == d {
				continue
			}
			want, wantErr := TranslateRequest(d, to, p.body, "up-model")
			got, gotErr := p.r.Encode(to, "up-model")
			if !bytes.Equal(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("%s→%s %.300s:\nEncode %.300s %v\nfresh  %.300s %v", d, to, p.body, got, gotErr, want, wantErr)
			}
		}
	}
	t.Logf("%d requests parsed before any was encoded", len(all))
}
