package caddymodule

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// bigChatStream is a Chat Completions stream of n content chunks of about
// 200 bytes each, with its finish chunk and [DONE].
func bigChatStream(n int) []byte {
	var b strings.Builder
	word := strings.Repeat("x", 100)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"mock-gpt","choices":[{"index":0,"delta":{"content":"%s %d"},"finish_reason":null}]}`+"\n\n", word, i)
	}
	b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"mock-gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// TestSlowReaderCut: a client that sends a streaming request and then
// reads nothing is cut after client_write_timeout: the key's slot is
// freed, the upstream request is cancelled, and the request is logged as
// the client's (499, stream_error client_write_timeout), not the key's.
// A client that reads the same stream gets all of it.
func TestSlowReaderCut(t *testing.T) {
	stream := bigChatStream(60000) // ~12 MB: more than the sockets buffer
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"slow-up-0123456789": {ReplayBody: stream, ReplayContentType: "text/event-stream"},
	}})
	appLog := filepath.Join(t.TempDir(), "app.log")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tclient_write_timeout 300ms\n"+
		"\t\tpool slow {\n\t\t\tkey slow-up-0123456789 "+base+" {\n\t\t\t\tid slow-key\n\t\t\t}\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t}")
	body := `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"go"}]}`

	// a reader that keeps up gets every byte
	resp, got := post(t, gw+"/v1/chat/completions", []byte(body), "X-Request-Id", "fast-reader")
	if resp.StatusCode != 200 || len(got) != len(stream) || !strings.HasSuffix(string(got), "data: [DONE]\n\n") {
		t.Fatalf("reading client: %d, %d of %d bytes", resp.StatusCode, len(got), len(stream))
	}
	slow := poolFor(t, "slow")
	inFlight := func() int { return slow.Snapshot()[0].InFlight }
	// the mock counts the stream and the gateway frees its slot after the
	// client has read the last byte
	eventually(t, 5*time.Second, "the reading client's stream finished", func() bool {
		st := m.Stats("slow-up-0123456789")
		return inFlight() == 0 && st.OK == 1 && st.InFlight == 0
	})

	// a client with a tiny receive buffer that never reads
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	conn, err := d.DialContext(context.Background(), "tcp", strings.TrimPrefix(gw, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nX-Request-Id: stalled-reader\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", strings.TrimPrefix(gw, "http://"), gatewayKey, len(body), body)

	eventually(t, 5*time.Second, "stream started", func() bool { return inFlight() == 1 })
	started := time.Now()
	eventually(t, 10*time.Second, "slot freed while the client still holds the connection", func() bool { return inFlight() == 0 })
	t.Logf("slot freed %v after the stream started (client_write_timeout 300ms)", time.Since(started).Round(time.Millisecond))
	// the mock counts the cancel before its handler returns (InFlight)
	eventually(t, 5*time.Second, "upstream request cancelled", func() bool {
		st := m.Stats("slow-up-0123456789")
		return st.Canceled == 1 && st.InFlight == 0
	})
	if st := m.Stats("slow-up-0123456789"); st.OK != 1 || st.Canceled != 1 || st.InFlight != 0 {
		t.Fatalf("upstream stats %+v", st)
	}
	if s := keyStatus(t, "slow", "slow-key"); s.State != "ready" || s.ConsecutiveFailures != 0 {
		t.Fatalf("key blamed for the client: %+v", s)
	}

	// the gateway closed the connection: reading now ends (EOF or reset)
	// well before the whole stream
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := io.Copy(io.Discard, bufio.NewReader(conn))
	if n >= int64(len(stream)) {
		t.Fatalf("stalled client received %d bytes, the whole stream is %d", n, len(stream))
	}

	var entry map[string]any
	eventually(t, 5*time.Second, "request log entry", func() bool {
		for _, e := range readJSONLines(t, appLog) {
			if e["msg"] == "llm request" && e["request_id"] == "stalled-reader" {
				entry = e
			}
		}
		return entry != nil
	})
	if entry["status"] != 499.0 || entry["stream_error"] != "client_write_timeout" || entry["key"] != "slow-key" ||
		!strings.Contains(fmt.Sprint(entry["error"]), "client_write_timeout") {
		t.Fatalf("log entry %v", entry)
	}
	if al, _ := entry["attempt_log"].([]any); len(al) != 1 || al[0].(map[string]any)["outcome"] != "canceled" {
		t.Fatalf("attempt_log %v", entry["attempt_log"])
	}
}
