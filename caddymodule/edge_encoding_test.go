package caddymodule

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// encodeBody compresses b with a content coding ("gzip", "deflate" for
// zlib, "raw-deflate", "zstd").
func encodeBody(t testing.TB, coding string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "raw-deflate":
		w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
	case "zstd":
		w, _ = zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedDefault))
	default:
		t.Fatalf("no coding %q", coding)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zeroBomb returns n zero bytes compressed with coding, written in 1 MiB
// pieces so that the n bytes never exist at once.
func zeroBomb(t testing.TB, coding string, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	case "zstd":
		w, _ = zstd.NewWriter(&buf)
	}
	zero := make([]byte, 1<<20)
	for i := 0; i < n; i += len(zero) {
		if _, err := w.Write(zero); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sendEncoded posts body with a Content-Encoding (none when ""), sized
// or chunked.
func sendEncoded(t testing.TB, url, coding string, body []byte, chunked bool, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // no length: sent chunked
	}
	return postReader(t, url, rd, append([]string{"Content-Encoding", coding}, hdr...)...)
}

// TestCompressedRequestBodies: request bodies with Content-Encoding gzip,
// deflate (zlib, and the raw deflate some clients send) and zstd (Codex
// compresses its Responses requests with zstd when signed in with
// ChatGPT; ding113/claude-code-hub#1193, james-6-23/codex2api#388) were
// answered 400 (invalid JSON). They are decoded, sized or chunked, on
// every route; a passthrough upstream gets the decoded body byte for byte
// and no Content-Encoding; an unknown coding is a 415 and corrupt data a
// 400, in the client's dialect, and neither reaches the upstream.
func TestCompressedRequestBodies(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tmax_request_body 1MiB\n"+
		poolBlock("main", base, 1, "\t\t\tmodels *\n")+"\t}\n")
	chat := chatBody("gpt-x", "hello compressed world", false)
	msgs := []byte(`{"model":"gpt-x","max_tokens":16,"messages":[{"role":"user","content":"hello"}]}`)
	resp := []byte(`{"model":"gpt-x","input":"hello","store":false}`)
	emb := []byte(`{"model":"text-embedding-3-small","input":"  keep   these bytes  ","encoding_format":"float"}`)
	asked := m.Stats("mk-1").Requests
	for _, coding := range []string{"gzip", "deflate", "raw-deflate", "zstd"} {
		header := coding
		if coding == "raw-deflate" {
			header = "deflate"
		}
		for _, chunked := range []bool{false, true} {
			name := coding
			if chunked {
				name += " chunked"
			}
			r, b := sendEncoded(t, gw+"/v1/chat/completions", header, encodeBody(t, coding, chat), chunked)
			if r.StatusCode != 200 || gjson.GetBytes(b, "object").Str != "chat.completion" {
				t.Errorf("%s chat: %d %s", name, r.StatusCode, b)
			}
			r, b = sendEncoded(t, gw+"/v1/messages", header, encodeBody(t, coding, msgs), chunked, "Anthropic-Version", "2023-06-01")
			if r.StatusCode != 200 || gjson.GetBytes(b, "type").Str != "message" {
				t.Errorf("%s messages: %d %s", name, r.StatusCode, b)
			}
			r, b = sendEncoded(t, gw+"/v1/responses", header, encodeBody(t, coding, resp), chunked)
			if r.StatusCode != 200 || gjson.GetBytes(b, "object").Str != "response" {
				t.Errorf("%s responses: %d %s", name, r.StatusCode, b)
			}
			r, b = sendEncoded(t, gw+"/v1/embeddings", header, encodeBody(t, coding, emb), chunked)
			st := m.Stats("mk-1")
			if r.StatusCode != 200 || !bytes.Equal(st.LastBody, emb) || st.LastHeaders.Get("Content-Encoding") != "" {
				t.Errorf("%s embeddings: %d %.200s; upstream got %q with Content-Encoding %q", name, r.StatusCode, b, st.LastBody, st.LastHeaders.Get("Content-Encoding"))
			}
			asked += 4
		}
	}
	// a list of codings is undone in reverse order; identity is no coding
	r, b := sendEncoded(t, gw+"/v1/chat/completions", "deflate, gzip", encodeBody(t, "gzip", encodeBody(t, "deflate", chat)), false)
	if r.StatusCode != 200 {
		t.Errorf("deflate, gzip: %d %s", r.StatusCode, b)
	}
	r, b = sendEncoded(t, gw+"/v1/chat/completions", "identity", chat, false)
	if r.StatusCode != 200 {
		t.Errorf("identity: %d %s", r.StatusCode, b)
	}
	asked += 2
	if n := m.Stats("mk-1").Requests; n != asked {
		t.Fatalf("upstream asked %d times, want %d", n, asked)
	}

	refused := []struct {
		name, path, coding string
		body               []byte
		status             int
		msg                string
	}{
		{"br", "/v1/chat/completions", "br", chat, 415,
			`request Content-Encoding "br" is not supported: send the body as is, or as gzip, deflate or zstd`},
		{"br anthropic", "/v1/messages", "gzip, br", msgs, 415,
			`request Content-Encoding "br" is not supported: send the body as is, or as gzip, deflate or zstd`},
		{"three codings", "/v1/chat/completions", "gzip, gzip, gzip", chat, 415,
			`request Content-Encoding "gzip, gzip, gzip" is not supported: send the body as is, or as gzip, deflate or zstd`},
		{"plain JSON called gzip", "/v1/chat/completions", "gzip", chat, 400,
			"could not decode the request body as its Content-Encoding says"},
		{"truncated zstd", "/v1/messages", "zstd", encodeBody(t, "zstd", msgs)[:20], 400,
			"could not decode the request body as its Content-Encoding says"},
		{"corrupt gzip", "/v1/responses", "gzip", append(encodeBody(t, "gzip", resp)[:12], bytes.Repeat([]byte{0xff}, 40)...), 400,
			"could not decode the request body as its Content-Encoding says"},
	}
	for _, c := range refused {
		r, b := sendEncoded(t, gw+c.path, c.coding, c.body, false, "Anthropic-Version", "2023-06-01")
		anthropic := c.path == "/v1/messages"
		if r.StatusCode != c.status || gjson.GetBytes(b, "error.message").Str != c.msg || (gjson.GetBytes(b, "type").Str == "error") != anthropic {
			t.Errorf("%s: %d %s, want %d %q", c.name, r.StatusCode, b, c.status, c.msg)
		}
	}
	if n := m.Stats("mk-1").Requests; n != asked {
		t.Fatalf("upstream asked %d times after the refusals, want %d", n, asked)
	}
}

// TestCompressedRequestBodyBomb: a body that decodes to far more than
// max_request_body (128 MiB of zeros in 130 KB of gzip, or a few KB of
// zstd) is refused with 413 once the limit is passed, having cost memory
// of the order of the limit (1 MiB), never of what it decodes to; a
// compressed body itself over the limit is a 413 too, sized (refused
// unread) or chunked.
func TestCompressedRequestBodyBomb(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tmax_request_body 1MiB\n"+
		poolBlock("main", base, 1, "\t\t\tmodels *\n")+"\t}\n")
	const decoded = 128 << 20
	const want = "request body is larger than the gateway's limit of 1048576 bytes (max_request_body)"
	random := make([]byte, 2<<20)
	_, _ = rand.Read(random)
	bodies := []struct {
		name, coding string
		body         []byte
		chunked      bool
	}{
		{"gzip bomb", "gzip", zeroBomb(t, "gzip", decoded), false},
		{"gzip bomb chunked", "gzip", zeroBomb(t, "gzip", decoded), true},
		{"zstd bomb", "zstd", zeroBomb(t, "zstd", decoded), false},
		{"zstd bomb chunked", "zstd", zeroBomb(t, "zstd", decoded), true},
		{"wire too large", "gzip", encodeBody(t, "gzip", random), false},
		{"wire too large chunked", "gzip", encodeBody(t, "gzip", random), true},
	}
	for _, c := range bodies {
		if !strings.Contains(c.name, "wire") && len(c.body) > 1<<20 {
			t.Fatalf("%s: %d bytes compressed, not under the limit", c.name, len(c.body))
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, b := sendEncoded(t, gw+"/v1/chat/completions", c.coding, c.body, c.chunked)
		runtime.ReadMemStats(&after)
		if r.StatusCode != 413 || gjson.GetBytes(b, "error.message").Str != want {
			t.Errorf("%s: %d %s", c.name, r.StatusCode, b)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
			t.Errorf("%s: %d MiB allocated while refusing it; the limit is 1 MiB", c.name, grew>>20)
		}
	}
	if n := m.Stats("mk-1").Requests; n != 0 {
		t.Fatalf("upstream asked %d times, want 0", n)
	}
}

// zstdFrameHeader returns a zstd frame of one raw block holding b whose
// header asks for a window of 1<<windowLog bytes, with no content size:
// what an encoder at a high level writes for a small body, or a hostile
// client for a large allocation (RFC 8878, section 3.1.1).
func zstdFrameHeader(windowLog int, b []byte) []byte {
	f := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3}
	h := uint32(1 | len(b)<<3) // last block, raw
	return append(append(f, byte(h), byte(h>>8), byte(h>>16)), b...)
}

// TestZstdWindowBooked: a zstd decoder allocates the window its frame's
// header asks for (up to the larger of 8 MiB and max_request_body) as
// soon as the first block comes, so a few bytes of body can cost 9 MiB:
// that memory is booked against max_buffered_bytes like a body buffer.
// A frame whose window does not fit in what is left is a 503 with
// Retry-After (as a body that does not fit), never read, and the
// booking is given back: a frame with a small window is then served.
func TestZstdWindowBooked(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tmax_request_body 1MiB\n\t\tmax_buffered_bytes 4MiB\n"+
		poolBlock("main", base, 1, "\t\t\tmodels *\n")+"\t}\n")
	body := chatBody("gpt-4o-mini", "hi", false)
	for i := range 3 {
		r, b := sendEncoded(t, gw+"/v1/chat/completions", "zstd", zstdFrameHeader(23, body), i == 1)
		if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" ||
			!strings.Contains(gjson.GetBytes(b, "error.message").Str, "max_buffered_bytes") {
			t.Fatalf("8 MiB window %d: %d Retry-After %q %s; want 503 naming max_buffered_bytes", i, r.StatusCode, r.Header.Get("Retry-After"), b)
		}
	}
	if n := m.Stats("mk-1").Requests; n != 0 {
		t.Fatalf("upstream asked %d times, want 0", n)
	}
	for i := range 3 {
		r, b := sendEncoded(t, gw+"/v1/chat/completions", "zstd", zstdFrameHeader(20, body), i == 1)
		if r.StatusCode != http.StatusOK || gjson.GetBytes(b, "object").Str != "chat.completion" {
			t.Fatalf("1 MiB window %d: %d %s; want 200", i, r.StatusCode, b)
		}
	}
	if n := m.Stats("mk-1").Requests; n != 3 {
		t.Errorf("upstream asked %d times, want 3", n)
	}
}
