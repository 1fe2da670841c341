package caddymodule

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/mockupstream/testreq"
)

// benchClaudeCodeRequest is testreq.ClaudeCodeRequest: the ~80 KB Claude
// Code-shaped request translate's benchmarks use too.
func benchClaudeCodeRequest(model string, stream bool) []byte {
	return testreq.ClaudeCodeRequest(model, stream)
}

// newLargeMessagesBody streams an Anthropic Messages request (model
// gpt-mem) of exactly size bytes, a long conversation of 8 KB turns with
// newlines and quotes to unescape, without holding it in memory, so that
// the client side of a test adds nothing to the process's heap. It returns
// the body and its length.
func newLargeMessagesBody(size int) (io.Reader, int64) {
	head := `{"model":"gpt-mem","max_tokens":256,"system":"You are a terse assistant.","messages":[`
	const turn = 8 << 10
	text := strings.Repeat("line of \"quoted\" code\n\tfmt.Println(x)\n", turn/40)
	user := `{"role":"user","content":[{"type":"text","text":` + strconv.Quote(text) + `}]}`
	asst := `{"role":"assistant","content":` + strconv.Quote(text) + `}`
	tail := `,{"role":"user","content":"sum up"}]}`
	n := (size - len(head) - len(tail)) / (len(user) + 1 + len(asst) + 1)
	var parts []io.Reader
	parts = append(parts, strings.NewReader(head))
	total := len(head)
	for i := 0; i < n; i++ {
		sep := ","
		if i == 0 {
			sep = ""
		}
		parts = append(parts, strings.NewReader(sep+user+","+asst))
		total += len(sep) + len(user) + 1 + len(asst)
	}
	// pad the last user turn so that the body is exactly size bytes
	open := `,{"role":"user","content":"`
	if n == 0 {
		open = open[1:]
	}
	pad := max(0, size-total-len(tail)-len(open)-2)
	parts = append(parts, strings.NewReader(open+strings.Repeat("x", pad)+`"}`))
	total += len(open) + pad + 2
	parts = append(parts, strings.NewReader(tail))
	total += len(tail)
	return io.MultiReader(parts...), int64(total)
}

// discardTransport is an in-memory OpenAI-dialect upstream that reads and
// discards the request body (in 32 KB reads, allocating nothing per
// request) and answers canned bytes: sse for keys "sse-*", else json. Only
// the gateway's allocations are then counted.
type discardTransport struct{ json, sse []byte }

var discardBuf = make([]byte, 32<<10)

// RoundTrip implements http.RoundTripper.
func (u discardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for {
		if _, err := req.Body.Read(discardBuf); err != nil {
			break
		}
	}
	_ = req.Body.Close()
	body, ctype := u.json, "application/json"
	if strings.HasPrefix(req.Header.Get("Authorization"), "Bearer sse-") {
		body, ctype = u.sse, "text/event-stream"
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ctype}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// BenchmarkGatewayLargeRequest measures the whole handler path (body read,
// validation, translation, upstream request, answer) for large Anthropic
// Messages requests translated for an OpenAI-dialect key: the ~80 KB
// Claude Code-shaped request, non-streamed and streamed, and a 6 MB
// conversation. B/op divided by the body size is the allocation factor the
// memory bound of docs/operations.md ("Limits") is about.
//
//	go test -run '^$' -bench BenchmarkGatewayLargeRequest -benchmem ./caddymodule/
func BenchmarkGatewayLargeRequest(b *testing.B) {
	saved := upstreamClient.Transport
	upstreamClient.Transport = discardTransport{json: benchChatResponse(), sse: benchChatStream(benchEvents)}
	b.Cleanup(func() { upstreamClient.Transport = saved })
	hdr := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {benchGatewayKey}, "Anthropic-Version": {"2023-06-01"}}
	big, _ := newLargeMessagesBody(6 << 20)
	sixMB, _ := io.ReadAll(big)
	sixMB = []byte(strings.Replace(string(sixMB), `"model":"gpt-mem"`, `"model":"bench-json"`, 1))
	cases := []struct {
		name string
		body []byte
	}{
		{"claude-code-80KB/json", benchClaudeCodeRequest("bench-json", false)},
		{"claude-code-80KB/stream", benchClaudeCodeRequest("bench-sse", true)},
		{"conversation-6MB/json", sixMB},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			h := benchHandler(b, 1, "openai", zap.NewNop())
			benchServe(b, h, "/v1/messages", hdr, c.body)
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				benchServe(b, h, "/v1/messages", hdr, c.body)
			}
		})
	}
}
