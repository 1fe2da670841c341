package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// In-process benchmarks of one full request through the handler: the
// upstream client's transport is swapped for an in-memory RoundTripper
// that serves canned mockupstream bytes, so no socket is involved. They are
// Benchmark functions only and never run in `go test ./...`.
//
//	go test -run '^$' -bench BenchmarkGateway -benchmem ./caddymodule/
//	go test -run '^$' -bench 'BenchmarkGateway/passthrough/stream' -cpuprofile cpu.prof ./caddymodule/

const (
	benchGatewayKey = "sk-bench-gateway-0123456789"
	benchReqSize    = 2048
	benchRespSize   = 1024
	benchEvents     = 200
)

// benchFiller returns n bytes of plain words.
func benchFiller(n int) string {
	const words = "the quick brown fox jumps over the lazy dog while a gateway relays tokens "
	return strings.Repeat(words, n/len(words)+1)[:n]
}

// benchPadded marshals build(filler) with the filler sized so that the JSON
// document is about size bytes.
func benchPadded(size int, build func(string) any) []byte {
	base, _ := json.Marshal(build(""))
	b, _ := json.Marshal(build(benchFiller(max(0, size-len(base)))))
	return b
}

func benchChatRequest(model string, stream bool) []byte {
	return benchPadded(benchReqSize, func(fill string) any {
		return map[string]any{"model": model, "stream": stream, "max_tokens": 1024, "temperature": 0.2,
			"messages": []map[string]any{
				{"role": "system", "content": "You are a terse assistant."},
				{"role": "user", "content": "Summarise: " + fill},
			}}
	})
}

func benchMessagesRequest(model string, stream bool) []byte {
	return benchPadded(benchReqSize, func(fill string) any {
		return map[string]any{"model": model, "stream": stream, "max_tokens": 1024, "temperature": 0.2,
			"system":   "You are a terse assistant.",
			"messages": []map[string]any{{"role": "user", "content": "Summarise: " + fill}}}
	})
}

func benchChatResponse() []byte {
	return benchPadded(benchRespSize, func(fill string) any {
		return map[string]any{"id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "bench-upstream",
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": fill}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 512, "completion_tokens": 200, "total_tokens": 712}}
	})
}

func benchMessagesResponse() []byte {
	return benchPadded(benchRespSize, func(fill string) any {
		return map[string]any{"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench-upstream",
			"content":     []map[string]any{{"type": "text", "text": fill}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 512, "output_tokens": 200}}
	})
}

func benchChatStream(events int) []byte {
	const head = `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-upstream","choices":[{"index":0,"delta":`
	var b strings.Builder
	b.WriteString(head + `{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := 0; i < events-3; i++ {
		b.WriteString(head + `{"content":"tok` + strconv.Itoa(i) + ` "},"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(head + `{},"finish_reason":"stop"}],"usage":{"prompt_tokens":512,"completion_tokens":197,"total_tokens":709}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

func benchMessagesStream(events int) []byte {
	var b strings.Builder
	ev := func(name, data string) { b.WriteString("event: " + name + "\ndata: " + data + "\n\n") }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"bench-upstream","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":512,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for i := 0; i < events-5; i++ {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok`+strconv.Itoa(i)+` "}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":195}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return []byte(b.String())
}

// benchUpstream is an in-memory upstream: a mockupstream.Server per
// workload (upstream key prefix "json" or "sse") and dialect (path ending
// in /messages: Anthropic), served through a recorder, without sockets.
type benchUpstream map[string]*mockupstream.Server

func newBenchUpstream() benchUpstream {
	replay := func(body []byte, ctype string) *mockupstream.Server {
		return mockupstream.New(mockupstream.Config{Seed: 1, Default: mockupstream.KeyBehavior{ReplayBody: body, ReplayContentType: ctype}})
	}
	const sse, js = "text/event-stream; charset=utf-8", "application/json"
	return benchUpstream{
		"json/openai":    replay(benchChatResponse(), js),
		"json/anthropic": replay(benchMessagesResponse(), js),
		"sse/openai":     replay(benchChatStream(benchEvents), sse),
		"sse/anthropic":  replay(benchMessagesStream(benchEvents), sse),
	}
}

// RoundTrip implements http.RoundTripper.
func (u benchUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Header.Get("X-Api-Key")
	if a := req.Header.Get("Authorization"); len(a) > 7 {
		key = a[7:]
	}
	workload, _, _ := strings.Cut(key, "-")
	dialect := "openai"
	if strings.HasSuffix(req.URL.Path, "/messages") {
		dialect = "anthropic"
	}
	rec := httptest.NewRecorder()
	u[workload+"/"+dialect].ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// benchWriter is a ResponseWriter that keeps the status and discards the
// body.
type benchWriter struct {
	h      http.Header
	status int
	n      int
	first  time.Time // when the first body byte was written
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.n == 0 && len(p) > 0 {
		w.first = time.Now()
	}
	w.n += len(p)
	return len(p), nil
}
func (w *benchWriter) Flush() {}

// benchHandler provisions a handler whose pools "json" and "sse" (models
// bench-json, bench-sse) hold keys keys each, of the given upstream
// dialect; logger receives its per-request log entries.
func benchHandler(b *testing.B, keys int, upstream string, logger *zap.Logger) *Handler {
	b.Helper()
	var cf strings.Builder
	// the key as its hash: a literal one is warned about on stderr, which
	// would land in the middle of the benchmark's result lines
	cf.WriteString("llm_gateway {\n\tapi_key " + hashGatewayKey(benchGatewayKey) + "\n")
	for _, wl := range []string{"json", "sse"} {
		// pool names are process-wide; keep them apart per configuration
		name := "bench-" + wl + "-" + upstream + "-" + strconv.Itoa(keys)
		cf.WriteString("\tpool " + name + " {\n\t\tmodels bench-" + wl + "\n")
		for i := 1; i <= keys; i++ {
			k := wl + "-" + strconv.Itoa(i)
			cf.WriteString("\t\tkey " + k + " http://upstream.invalid/v1 {\n\t\t\tid " + k + "\n")
			if upstream == "anthropic" {
				cf.WriteString("\t\t\tdialect anthropic\n")
			}
			cf.WriteString("\t\t}\n")
		}
		cf.WriteString("\t\tmax_concurrency_per_key 100000\n\t}\n")
	}
	cf.WriteString("}\n")
	h := new(Handler)
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(cf.String())); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	b.Cleanup(cancel)
	if err := h.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Cleanup() })
	h.logger = logger
	return h
}

// benchServe runs one request through h and fails b unless it is a 200.
// It returns the time from the start of ServeHTTP to the first body byte
// written to the client (for a stream: the held preamble and the first
// content event).
func benchServe(b *testing.B, h *Handler, path string, hdr http.Header, body []byte) time.Duration {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header[k] = v
	}
	w := &benchWriter{h: http.Header{}}
	req = caddyhttp.PrepareRequest(req, caddy.NewReplacer(), w, &caddyhttp.Server{})
	start := time.Now()
	if err := h.ServeHTTP(w, req, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
		b.Fatal(err)
	}
	if w.status != http.StatusOK || w.n == 0 {
		b.Fatalf("status %d, %d bytes", w.status, w.n)
	}
	return w.first.Sub(start)
}

// BenchmarkGateway measures one full request through the handler, per
// mode: passthrough (OpenAI in and out), passthrough with 1000 keys,
// Anthropic in -> OpenAI up, OpenAI in -> Anthropic up; each with a 2 KB
// request and a 1 KB answer (json) or a 200-event stream (stream).
// "upstream-only" is the in-memory upstream alone, to subtract.
func BenchmarkGateway(b *testing.B) {
	upstream := newBenchUpstream()
	saved := upstreamClient.Transport
	upstreamClient.Transport = upstream
	b.Cleanup(func() { upstreamClient.Transport = saved })

	benchGatewayModes(b, true)
	openaiHdr := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + benchGatewayKey}}
	// the per-request log entry at INFO, encoded as JSON and discarded
	b.Run("passthrough-info-log/json", func(b *testing.B) {
		core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.InfoLevel)
		h := benchHandler(b, 1, "openai", zap.New(core))
		body := benchChatRequest("bench-json", false)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			benchServe(b, h, "/v1/chat/completions", openaiHdr, body)
		}
	})
	for _, wl := range []string{"json", "stream"} {
		b.Run("upstream-only/"+wl, func(b *testing.B) {
			key, body := "json-1", benchChatRequest("bench-json", false)
			if wl == "stream" {
				key, body = "sse-1", benchChatRequest("bench-sse", true)
			}
			b.ReportAllocs()
			var ttfb time.Duration
			buf := make([]byte, 1)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				req, _ := http.NewRequest(http.MethodPost, "http://upstream.invalid/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, _ := upstream.RoundTrip(req)
				_, _ = io.ReadFull(resp.Body, buf)
				ttfb += time.Since(start)
				_, _ = io.Copy(io.Discard, resp.Body)
			}
			b.ReportMetric(float64(ttfb.Nanoseconds())/float64(b.N), "ttfb-ns")
		})
	}
}

// BenchmarkStreamCommitPoint measures what the stream commit point costs
// a healthy stream: the time from the start of ServeHTTP to the client's
// first body byte (ttfb-ns) and the whole request, with the preamble held
// until the first content event and without (the baseline), in the same
// run. Holding costs bytes, not time: the two ttfb-ns figures should
// agree within noise.
func BenchmarkStreamCommitPoint(b *testing.B) {
	upstream := newBenchUpstream()
	saved := upstreamClient.Transport
	upstreamClient.Transport = upstream
	b.Cleanup(func() { upstreamClient.Transport = saved; holdPreamble = true })
	openaiHdr := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + benchGatewayKey}}
	anthropicHdr := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {benchGatewayKey}, "Anthropic-Version": {"2023-06-01"}}
	for _, m := range []struct{ name, client, upstream string }{
		{"passthrough", "openai", "openai"},
		{"anthropic-in-openai-up", "anthropic", "openai"},
		{"openai-in-anthropic-up", "openai", "anthropic"},
	} {
		h := benchHandler(b, 1, m.upstream, zap.NewNop())
		path, hdr, body := "/v1/chat/completions", openaiHdr, benchChatRequest("bench-sse", true)
		if m.client == "anthropic" {
			path, hdr, body = "/v1/messages", anthropicHdr, benchMessagesRequest("bench-sse", true)
		}
		for _, hold := range []bool{false, true} {
			name := m.name + "/hold"
			if !hold {
				name = m.name + "/no-hold"
			}
			b.Run(name, func(b *testing.B) {
				holdPreamble = hold
				benchServe(b, h, path, hdr, body)
				b.ReportAllocs()
				b.ResetTimer()
				var ttfb time.Duration
				for i := 0; i < b.N; i++ {
					ttfb += benchServe(b, h, path, hdr, body)
				}
				b.ReportMetric(float64(ttfb.Nanoseconds())/float64(b.N), "ttfb-ns")
			})
		}
	}
}

// benchGatewayModes runs one sub-benchmark per mode (passthrough,
// passthrough with 1000 keys, Anthropic in -> OpenAI up, OpenAI in ->
// Anthropic up) and workload (json, stream) through benchHandler, with
// upstreamClient's transport as the caller set it: ns/op, B/op,
// allocs/op and ttfb-ns (the client's first byte, held preamble
// included); with setBytes, MB/s of the request body.
func benchGatewayModes(b *testing.B, setBytes bool) {
	openaiHdr := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + benchGatewayKey}}
	anthropicHdr := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {benchGatewayKey}, "Anthropic-Version": {"2023-06-01"}}
	modes := []struct {
		name, client, upstream string
		keys                   int
	}{
		{"passthrough", "openai", "openai", 1},
		{"passthrough-1000keys", "openai", "openai", 1000},
		{"anthropic-in-openai-up", "anthropic", "openai", 1},
		{"openai-in-anthropic-up", "openai", "anthropic", 1},
	}
	for _, m := range modes {
		for _, stream := range []bool{false, true} {
			wl := "json"
			if stream {
				wl = "stream"
			}
			b.Run(m.name+"/"+wl, func(b *testing.B) {
				h := benchHandler(b, m.keys, m.upstream, zap.NewNop())
				model := "bench-json"
				if stream {
					model = "bench-sse"
				}
				path, hdr, body := "/v1/chat/completions", openaiHdr, benchChatRequest(model, stream)
				if m.client == "anthropic" {
					path, hdr, body = "/v1/messages", anthropicHdr, benchMessagesRequest(model, stream)
				}
				benchServe(b, h, path, hdr, body)
				b.ReportAllocs()
				if setBytes {
					b.SetBytes(int64(len(body)))
				}
				b.ResetTimer()
				var ttfb time.Duration
				for i := 0; i < b.N; i++ {
					ttfb += benchServe(b, h, path, hdr, body)
				}
				// time to the client's first byte, held preamble included
				b.ReportMetric(float64(ttfb.Nanoseconds())/float64(b.N), "ttfb-ns")
			})
		}
	}
}
