package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream/testreq"
	"github.com/tidwall/gjson"
)

// bigAnthropicRequest is the Claude Code-shaped request of about 80 KB
// shared with caddymodule's benchmarks (see testreq.ClaudeCodeRequest).
func bigAnthropicRequest() []byte {
	return testreq.ClaudeCodeRequest("claude-sonnet-4-5", true)
}

// bigResponsesRequest is the same conversation as a Responses request.
func bigResponsesRequest() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5","stream":true,"instructions":` + strconv.Quote(strings.Repeat("You are an interactive CLI tool that helps users with software engineering tasks. ", 200)) + `,"tools":[`)
	for i := 0; i < 24; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"function","name":"Tool` + strconv.Itoa(i) + `","description":` + strconv.Quote(strings.Repeat("Reads a file from the local filesystem. ", 40)) +
			`,"parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path"},"offset":{"type":"number"},"limit":{"type":"number"}},"required":["file_path"]}}`)
	}
	b.WriteString(`],"input":[`)
	for i := 0; i < 40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		id := "call_" + strconv.Itoa(i/4)
		switch i % 4 {
		case 0:
			b.WriteString(`{"role":"user","content":[{"type":"input_text","text":` + strconv.Quote(strings.Repeat("Please fix the failing test in pkg/server. ", 8)) + `}]}`)
		case 1:
			b.WriteString(`{"type":"function_call","id":"fc_` + strconv.Itoa(i) + `","call_id":"` + id + `","name":"Tool3","arguments":"{\"file_path\":\"/repo/x.go\"}"}`)
		case 2:
			b.WriteString(`{"type":"function_call_output","call_id":"` + id + `","output":` + strconv.Quote(strings.Repeat("func main() {\n\tfmt.Println(\"hello\")\n}\n", 20)) + `}`)
		case 3:
			b.WriteString(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + strconv.Quote(strings.Repeat("The test fails because the handler returns early. ", 5)) + `}]}`)
		}
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// benchRequest measures TranslateRequest; besides B/op it reports
// "x-body", the bytes allocated per request as a multiple of the body's
// size (issue 11: a translated request's peak memory must stay within 4x
// its body, of which the handler holds 1x itself).
func benchRequest(b *testing.B, from, to Dialect, body []byte) {
	b.Helper()
	if _, err := TranslateRequest(from, to, body, "upstream-model"); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := TranslateRequest(from, to, body, "upstream-model"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(len(body)), "x-body")
}

// bigUserMessage is a 6 MB Anthropic request: one user message of source
// code (newlines, quotes and tabs to escape), as a pasted file would be.
func bigUserMessage(size int) []byte {
	line := `\tif err := json.Unmarshal(data, &v); err != nil { return fmt.Errorf(\"decode %q: %w\", name, err) }\n`
	n := size / len(line)
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"` +
		strings.Repeat(line, n) + `"}]}]}`)
}

// manyImages is a 6 MB Anthropic request: a user turn of 24 base64 images
// of 256 KB each.
func manyImages(size int) []byte {
	img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 1, 2, 3}, size/24*3/4/7))
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[`)
	for i := 0; i < 24; i++ {
		b.WriteString(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + img + `"}},`)
	}
	b.WriteString(`{"type":"text","text":"What differs between these screenshots?"}]}]}`)
	return []byte(b.String())
}

func BenchmarkRequest(b *testing.B) {
	am := bigAnthropicRequest()
	cc, err := TranslateRequest(AnthropicMessages, OpenAIChat, am, "gpt-5")
	if err != nil {
		b.Fatal(err)
	}
	rs := bigResponsesRequest()
	b.Logf("sizes: anthropic %d B, chat %d B, responses %d B", len(am), len(cc), len(rs))
	b.Run("anthropic_to_chat", func(b *testing.B) { benchRequest(b, AnthropicMessages, OpenAIChat, am) })
	b.Run("chat_to_anthropic", func(b *testing.B) { benchRequest(b, OpenAIChat, AnthropicMessages, cc) })
	b.Run("responses_to_chat", func(b *testing.B) { benchRequest(b, OpenAIResponses, OpenAIChat, rs) })
	b.Run("responses_to_anthropic", func(b *testing.B) { benchRequest(b, OpenAIResponses, AnthropicMessages, rs) })
	b.Run("passthrough_anthropic", func(b *testing.B) { benchRequest(b, AnthropicMessages, AnthropicMessages, am) })
	b.Run("passthrough_chat", func(b *testing.B) { benchRequest(b, OpenAIChat, OpenAIChat, cc) })
	text, images := bigUserMessage(6<<20), manyImages(6<<20)
	textCC, err := TranslateRequest(AnthropicMessages, OpenAIChat, text, "gpt-5")
	if err != nil {
		b.Fatal(err)
	}
	imagesCC, err := TranslateRequest(AnthropicMessages, OpenAIChat, images, "gpt-5")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("6 MB sizes: text %d B, images %d B", len(text), len(images))
	b.Run("6MB_text_anthropic_to_chat", func(b *testing.B) { benchRequest(b, AnthropicMessages, OpenAIChat, text) })
	b.Run("6MB_text_chat_to_anthropic", func(b *testing.B) { benchRequest(b, OpenAIChat, AnthropicMessages, textCC) })
	b.Run("6MB_images_anthropic_to_chat", func(b *testing.B) { benchRequest(b, AnthropicMessages, OpenAIChat, images) })
	b.Run("6MB_images_chat_to_anthropic", func(b *testing.B) { benchRequest(b, OpenAIChat, AnthropicMessages, imagesCC) })
}

// BenchmarkValidateRequest measures ValidateRequest, which the handler runs
// on every body before routing.
func BenchmarkValidateRequest(b *testing.B) {
	am := bigAnthropicRequest()
	for name, body := range map[string][]byte{"anthropic_80KB": am, "6MB_images": manyImages(6 << 20), "6MB_text": bigUserMessage(6 << 20)} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			for i := 0; i < b.N; i++ {
				if err := ValidateRequest(AnthropicMessages, body); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(len(body)), "x-body")
		})
	}
}

type discardWriter struct{ n int }

func (d *discardWriter) WriteEvent(p []byte) error { d.n += len(p); return nil }

func benchStream(b *testing.B, from, to Dialect, body []byte) {
	b.Helper()
	events := bytes.Count(body, []byte("\n\n"))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr := NewStreamTranslator(from, to, "client-model", &discardWriter{})
		if err := tr.Run(bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkStream(b *testing.B) {
	chat, anth := benchFixtures(b)
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		b.Run("chat_to_"+to.String(), func(b *testing.B) { benchStream(b, OpenAIChat, to, chat) })
	}
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		b.Run("anthropic_to_"+to.String(), func(b *testing.B) { benchStream(b, AnthropicMessages, to, anth) })
	}
}

func BenchmarkSSEReader(b *testing.B) {
	var body []byte
	for _, fx := range streamFixtures(b, OpenAIChat) {
		if strings.HasPrefix(fx.name, "vercel__openai-text") {
			body = fx.body
		}
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r := NewSSEReader(bytes.NewReader(body))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

// cpuMeter reports "cpu-ns/op", the process's user+system CPU time per
// operation (getrusage), next to ns/op: on a shared machine the wall time
// of an operation includes the time it waited for a core, its CPU time
// much less so.
type cpuMeter struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{processCPU()} }

func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-m.start)/float64(b.N), "cpu-ns/op")
}

// sessionHash is what caddymodule's sessionID does with a session seed:
// an FNV-64a of a 4 KiB prefix of each part.
func sessionHash(system, firstUser string) uint64 {
	if system == "" && firstUser == "" {
		return 0
	}
	h := fnv.New64a()
	const limit = 4 << 10
	_, _ = h.Write([]byte(system[:min(len(system), limit)]))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(firstUser[:min(len(firstUser), limit)]))
	return h.Sum64()
}

// prepareBefore is the handler's preparation of a request before
// ParseRequest: RequestInfo, ValidateRequest, the session lookup as
// caddymodule/session.go did it (gjson queries on the body), the token
// estimate, then the upstream body (SetModel and the dialect's hygiene for
// passthrough, TranslateRequest otherwise).
func prepareBefore(from, to Dialect, body []byte, model string) ([]byte, error) {
	if _, _, err := RequestInfo(from, body); err != nil {
		return nil, err
	}
	if err := ValidateRequest(from, body); err != nil {
		return nil, err
	}
	s, u := oldSessionSeed(from, body)
	_ = sessionHash(s, u)
	_ = int64(len(body) / 4)
	if from == to {
		return oldSameDialect(from, body, model)
	}
	return TranslateRequest(from, to, body, model)
}

// prepare is the same preparation with ParseRequest.
func prepare(from, to Dialect, body []byte, model string) (*Request, []byte, error) {
	return prepareWith(ParseRequest, from, to, body, model)
}

// prepareFor is prepare with ParseRequestFor told the upstream dialect
// (a handler that knows its pool's dialect before parsing).
func prepareFor(from, to Dialect, body []byte, model string) (*Request, []byte, error) {
	return prepareWith(func(d Dialect, b []byte) (*Request, error) { return ParseRequestFor(d, b, to) }, from, to, body, model)
}

// prepareWith is the preparation with the parse function given.
func prepareWith(parse func(Dialect, []byte) (*Request, error), from, to Dialect, body []byte, model string) (*Request, []byte, error) {
	r, err := parse(from, body)
	if err != nil {
		return nil, nil, err
	}
	_ = sessionHash(r.SessionSeed())
	_ = r.EstimatedTokens()
	b, err := r.Encode(to, model)
	return r, b, err
}

// claudeCodeThinking is bigAnthropicRequest with extended thinking on, as
// Claude Code sends it: "thinking" enabled with a budget, and each
// assistant tool-call turn starting with a signed thinking block.
func claudeCodeThinking() []byte {
	am := bigAnthropicRequest()
	const turn = `{"type":"text","text":"Let me read the file."}`
	thinking := `{"type":"thinking","thinking":` + strconv.Quote(strings.Repeat("The failing test points at the handler's early return; reading server.go first. ", 6)) +
		`,"signature":"` + strings.Repeat("EqQBCkYIBhABGAIiQL", 12) + `"},` + turn
	am = bytes.ReplaceAll(am, []byte(turn), []byte(thinking))
	return bytes.Replace(am, []byte(`{"model":`), []byte(`{"thinking":{"type":"enabled","budget_tokens":16000},"model":`), 1)
}

// prepareCases are the directions the preparation benchmarks measure, on
// the 80 KB Claude Code-shaped request (and its Chat translation).
func prepareCases(b *testing.B) []prepareCase {
	am := claudeCodeThinking()
	cc, err := TranslateRequest(AnthropicMessages, OpenAIChat, am, "gpt-5")
	if err != nil {
		b.Fatal(err)
	}
	// the load harness's request (bench/bodies.go): 2 KB, two messages
	small, err := json.Marshal(map[string]any{"model": "bench-sse", "stream": true, "max_tokens": 1024, "temperature": 0.2,
		"messages": []map[string]any{{"role": "system", "content": "You are a terse assistant."},
			{"role": "user", "content": "Summarise: " + strings.Repeat("the quick brown fox jumps over the lazy dog while a gateway relays tokens ", 27)}}})
	if err != nil {
		b.Fatal(err)
	}
	return []prepareCase{
		{"passthrough_chat_2k", OpenAIChat, OpenAIChat, small, "up-model"},
		{"passthrough_anthropic", AnthropicMessages, AnthropicMessages, am, "claude-opus-4-1"},
		{"anthropic_to_chat", AnthropicMessages, OpenAIChat, am, "gpt-5"},
		{"chat_to_anthropic", OpenAIChat, AnthropicMessages, cc, "claude-sonnet-4-5"},
	}
}

// prepareCase is one direction of the preparation benchmarks.
type prepareCase = struct {
	name     string
	from, to Dialect
	body     []byte
	model    string
}

// benchPrepare measures run on each case, after checking that its output
// is the old preparation's, byte for byte.
func benchPrepare(b *testing.B, run func(c prepareCase) ([]byte, error)) {
	for _, c := range prepareCases(b) {
		b.Run(c.name, func(b *testing.B) {
			want, err := prepareBefore(c.from, c.to, c.body, c.model)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := run(c); err != nil || !bytes.Equal(got, want) {
				b.Fatal("output differs from the old preparation's", err)
			}
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			for i := 0; i < b.N; i++ {
				if got, err := run(c); err != nil || len(got) != len(want) {
					b.Fatal("output differs", err)
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkPrepareBefore measures the old preparation of one request
// (prepareBefore): four to five full readings of the body.
func BenchmarkPrepareBefore(b *testing.B) {
	benchPrepare(b, func(c prepareCase) ([]byte, error) { return prepareBefore(c.from, c.to, c.body, c.model) })
}

// BenchmarkPrepare measures the preparation of one request with
// ParseRequest: parse and validate, session seed, token estimate, encode
// for the upstream.
func BenchmarkPrepare(b *testing.B) {
	benchPrepare(b, func(c prepareCase) ([]byte, error) {
		_, out, err := prepare(c.from, c.to, c.body, c.model)
		return out, err
	})
}

// BenchmarkPrepareFor is BenchmarkPrepare with ParseRequestFor told the
// upstream dialect: for a translation the canonical form is built in the
// validation pass instead of by a second walk on the first Encode.
func BenchmarkPrepareFor(b *testing.B) {
	benchPrepare(b, func(c prepareCase) ([]byte, error) {
		_, out, err := prepareFor(c.from, c.to, c.body, c.model)
		return out, err
	})
}

// BenchmarkPrepareRetry measures a second attempt on another key: Encode
// again on the same Request (cached: no work, no allocation).
func BenchmarkPrepareRetry(b *testing.B) {
	for _, c := range prepareCases(b) {
		b.Run(c.name, func(b *testing.B) {
			r, first, err := prepare(c.from, c.to, c.body, c.model)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if got, err := r.Encode(c.to, c.model); err != nil || len(got) != len(first) {
					b.Fatal("output differs", err)
				}
			}
		})
	}
}

// BenchmarkPrepareStages measures the stages of the preparation of the
// 80 KB Claude Code-shaped Anthropic request one by one, to show where
// its time goes: the depth scan, gjson's validity check, the top-level
// walk (checkJSONRoot: both plus the walk), the validation pass that
// keeps no canonical form (ParseRequest's for Anthropic), the one that
// builds it, encoding it for Chat, and the passthrough's model splice.
func BenchmarkPrepareStages(b *testing.B) {
	body := claudeCodeThinking()
	root, e := checkJSONRoot(body)
	if e != nil {
		b.Fatal(e)
	}
	pass := func(checkOnly bool) func() {
		return func() {
			c := &checker{d: AnthropicMessages, translate: true, root: root, rootSet: true, checkOnly: checkOnly}
			if _, e := decodeWith(c, body); e != nil {
				b.Fatal(e)
			}
		}
	}
	canon, e := decodeWith(&checker{d: AnthropicMessages, translate: true, root: root, rootSet: true}, body)
	if e != nil {
		b.Fatal(e)
	}
	lit := []byte(`"claude-opus-4-1"`)
	for _, s := range []struct {
		name string
		run  func()
	}{
		{"tooDeep", func() { tooDeep(body, MaxNesting) }},
		{"ValidBytes", func() { gjson.ValidBytes(body) }},
		{"checkJSONRoot", func() { _, _ = checkJSONRoot(body) }},
		{"pass_check_only", pass(true)},
		{"pass_building_canonical", pass(false)},
		{"encode_chat", func() { _, _ = encodeCanon(canon, OpenAIChat, "gpt-5") }},
		{"model_splice", func() { _ = splice(body, 1, len(lit), lit) }},
	} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := startCPU()
			for i := 0; i < b.N; i++ {
				s.run()
			}
			cpu.report(b)
		})
	}
}
