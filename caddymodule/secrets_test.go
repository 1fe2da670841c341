package caddymodule

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// echoSecret is an upstream key whose standard and URL-safe base64 differ
// ('~' and '?' give '+' and '/'), with characters that percent-encoding
// changes ('?') and keeps ('~').
const echoSecret = "sk-test-AbCd~~~EfGh???IjKl0123456789xyzQ"

// echoForms are the spellings of echoSecret an upstream might echo, by name.
func echoForms() [][2]string {
	s := echoSecret
	var all strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&all, "%%%02x", s[i])
	}
	var jsonEsc strings.Builder
	for _, r := range s {
		fmt.Fprintf(&jsonEsc, `\u%04x`, r)
	}
	b64 := func(enc *base64.Encoding, v string) string { return enc.EncodeToString([]byte(v)) }
	return [][2]string{
		{"literal", s},
		{"query-escaped", url.QueryEscape(s)},
		{"every-byte-percent-lower", all.String()},
		{"base64-std", b64(base64.StdEncoding, s)},
		{"base64-std-raw", b64(base64.RawStdEncoding, s)},
		{"base64-url", b64(base64.URLEncoding, s)},
		{"base64-url-raw", b64(base64.RawURLEncoding, s)},
		{"basic-user-key", "Basic " + b64(base64.StdEncoding, "user:"+s)},
		{"basic-us-key-url", "Basic " + b64(base64.URLEncoding, "us:"+s)},
		{"basic-u-key", "Basic " + b64(base64.StdEncoding, "u:"+s)},
		{"basic-key-colon", "Basic " + b64(base64.StdEncoding, s+":")},
		{"json-escaped", jsonEsc.String()},
		{"hex", hex.EncodeToString([]byte(s))},
		{"hex-upper", strings.ToUpper(hex.EncodeToString([]byte(s)))},
	}
}

// redactedForm is what a form becomes: [redacted], after the scheme of
// Basic credentials.
func redactedForm(form string) string {
	if strings.HasPrefix(form, "Basic ") {
		return "Basic [redacted]"
	}
	return "[redacted]"
}

// leak returns the first 16-byte window of any echoed form of echoSecret
// (or of the raw forms in the JSON-escaped case) found in b, "" when none:
// not even a part of the key may get through.
func leak(b []byte) string {
	for _, f := range echoForms() {
		v := f[1]
		if f[0] == "json-escaped" {
			continue // its windows are \u sequences, also produced by harmless text
		}
		for i := 0; i+16 <= len(v); i++ {
			if bytes.Contains(b, []byte(v[i:i+16])) {
				return f[0] + ": " + v[i:i+16]
			}
		}
	}
	return ""
}

// TestRedactSecretForms: every form of a key an upstream may echo is
// replaced by [redacted] and the rest of the message survives, as JSON.
func TestRedactSecretForms(t *testing.T) {
	f := newSecretForms(echoSecret)
	if len(f.b64) != 8 {
		t.Fatalf("%d base64 cores and hex forms, want 8 (2 alphabets x 3 alignments, hex in 2 cases)", len(f.b64))
	}
	for _, form := range echoForms() {
		t.Run(form[0], func(t *testing.T) {
			body := []byte(`{"error":{"message":"Invalid credentials: ` + form[1] + ` (check your key)","type":"invalid_request_error"}}`)
			if !f.contains(body) {
				t.Fatalf("contains: form not found in %s", body)
			}
			out := redactSecret(body, echoSecret)
			if l := leak(out); l != "" || f.contains(out) {
				t.Fatalf("still holds the key (%s): %s", l, out)
			}
			msg := gjson.GetBytes(out, "error.message").String()
			if !gjson.ValidBytes(out) || msg != "Invalid credentials: "+redactedForm(form[1])+" (check your key)" {
				t.Fatalf("message %q in %s", msg, out)
			}
			if typ := gjson.GetBytes(out, "error.type").String(); typ != "invalid_request_error" {
				t.Fatalf("type %q", typ)
			}
		})
	}
	t.Run("several", func(t *testing.T) {
		forms := echoForms()
		body := []byte("a " + forms[0][1] + " b " + forms[3][1] + " c " + forms[1][1] + " d")
		if got := string(redactSecret(body, echoSecret)); got != "a [redacted] b [redacted] c [redacted] d" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("untouched", func(t *testing.T) {
		other := base64.StdEncoding.EncodeToString([]byte("sk-test-another-key-0123456789abcdefgh"))
		body := []byte(`{"error":{"message":"bad key sk-test-AbCd... ` + other + ` 100% sure"}}`)
		out := redactSecret(body, echoSecret)
		if &out[0] != &body[0] || !bytes.Equal(out, body) {
			t.Fatalf("changed a body without the key: %s", out)
		}
	})
	t.Run("short secret: literal only", func(t *testing.T) {
		out := redactSecret([]byte("k1 and "+base64.StdEncoding.EncodeToString([]byte("k1"))), "k1")
		if string(out) != "[redacted] and azE=" {
			t.Fatalf("got %q", out)
		}
	})
}

// TestEchoedKeyNeverReachesClientOrLog: an upstream that echoes its key,
// in any form, in a 400 the gateway relays, in a 500 whose error code the
// gateway reads, or in an in-band stream error event, never gets the key
// (or a part of it) to the client or into the log.
func TestEchoedKeyNeverReachesClientOrLog(t *testing.T) {
	forms := echoForms()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		model := gjson.GetBytes(body, "model").String()
		kind, idx, _ := strings.Cut(model, "-")
		i, _ := strconv.Atoi(idx)
		form := forms[i][1]
		switch kind {
		case "e400":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":"Invalid credentials: %s","type":"invalid_request_error","code":null}}`, form)
		case "e500":
			code := base64.RawURLEncoding.EncodeToString([]byte(echoSecret)) // passes as an error code
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			fmt.Fprintf(w, `{"error":{"message":"upstream saw %s","type":"server_error","code":"%s"}}`, form, code)
		case "stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`+"\n\n")
			w.(http.Flusher).Flush()
			fmt.Fprintf(w, `data: {"error":{"message":"key %s was revoked","type":"invalid_request_error"}}`+"\n\n", form)
		}
	}))
	t.Cleanup(up.Close)

	appLog := filepath.Join(t.TempDir(), "app.log")
	t.Setenv("LLMGW_ECHO_SECRET", echoSecret)
	gw := gateway(t, gatewayBlock("\t\tpool echo {\n\t\t\tmax_retries 0\n\t\t\terror_cooldown 1ms\n\t\t\tmax_cooldown 1ms\n\t\t\tfailure_threshold 1000\n"+
		"\t\t\tkey {env.LLMGW_ECHO_SECRET} "+up.URL+"/v1 {\n\t\t\t\tid echo-key\n\t\t\t}\n\t\t}\n"),
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel DEBUG\n\t}")

	for i, form := range forms {
		t.Run(form[0], func(t *testing.T) {
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("e400-"+strconv.Itoa(i), "hi", false))
			if l := leak(body); resp.StatusCode != 400 || l != "" || mentions(body) {
				t.Fatalf("relayed 400: %d, leak %q: %s", resp.StatusCode, l, body)
			}
			if msg := gjson.GetBytes(body, "error.message").String(); msg != "Invalid credentials: "+redactedForm(form[1]) {
				t.Fatalf("relayed message %q", msg)
			}
			eventually(t, 2e9, "key ready again", func() bool { return keyStatus(t, "echo", "echo-key").State == "ready" })
			resp, body = post(t, gw+"/v1/chat/completions", chatBody("e500-"+strconv.Itoa(i), "hi", false))
			if l := leak(body); resp.StatusCode != 502 || l != "" || mentions(body) {
				t.Fatalf("500: %d, leak %q: %s", resp.StatusCode, l, body)
			}
			eventually(t, 2e9, "key ready again", func() bool { return keyStatus(t, "echo", "echo-key").State == "ready" })
			resp, body = post(t, gw+"/v1/chat/completions", chatBody("stream-"+strconv.Itoa(i), "hi", true))
			if l := leak(body); resp.StatusCode != 200 || l != "" || mentions(body) || !bytes.Contains(body, []byte(`"content":"Hi"`)) {
				t.Fatalf("stream: %d, leak %q: %s", resp.StatusCode, l, body)
			}
			eventually(t, 2e9, "key ready again", func() bool { return keyStatus(t, "echo", "echo-key").State == "ready" })
			// the same error event translated into an Anthropic client's
			// error event
			resp, body = post(t, gw+"/v1/messages", []byte(`{"model":"stream-`+strconv.Itoa(i)+`","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			if l := leak(body); resp.StatusCode != 200 || l != "" || mentions(body) || !bytes.Contains(body, []byte(`"text":"Hi"`)) || !bytes.Contains(body, []byte("event: error")) {
				t.Fatalf("translated stream: %d, leak %q: %s", resp.StatusCode, l, body)
			}
			eventually(t, 2e9, "key ready again", func() bool { return keyStatus(t, "echo", "echo-key").State == "ready" })
		})
	}
	logBytes, err := os.ReadFile(appLog)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(logBytes, []byte(`"msg":"llm request"`)); n != 4*len(forms) {
		t.Fatalf("%d request log entries, want %d", n, 4*len(forms))
	}
	for _, line := range bytes.Split(logBytes, []byte("\n")) {
		if l := leak(line); l != "" || mentions(line) {
			t.Fatalf("log line holds the key (%s): %s", l, line)
		}
	}
}

// mentions reports whether b (a JSON body, an SSE stream or log lines)
// holds echoSecret in any form, JSON escapes included.
func mentions(b []byte) bool {
	f := newSecretForms(echoSecret)
	if f.contains(b) {
		return true
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if f.contains(bytes.TrimPrefix(line, []byte("data:"))) {
			return true
		}
	}
	return false
}

// BenchmarkStreamEventScan: what looking for the key costs
// flushWriter.WriteEvent for an event that holds none: content events are
// let through on the translator's word (not searched); error events are
// scanned for every form (no client_write_timeout here: no deadline).
func BenchmarkStreamEventScan(b *testing.B) {
	fw := newFlushWriter(discardWriter{}, &requestLog{}, 0, newSecretForms(echoSecret))
	for _, c := range []struct{ name, ev string }{
		{"content_chunk", `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" the quick \"error\" fox"},"finish_reason":null}]}` + "\n\n"},
		{"error_event", `event: error` + "\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n"},
		{"escaped_error_event", `data: {"error":{"message":"\u670d\u52a1\u5668\u7e41\u5fd9","type":"server_error"}}` + "\n\n"},
	} {
		ev := []byte(c.ev)
		fw.errs = fixedErrorEvents(c.name != "content_chunk")
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := fw.WriteEvent(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fixedErrorEvents says every event is (true) or none is (false) an error
// event.
type fixedErrorEvents bool

func (e fixedErrorEvents) WritingErrorEvent() bool { return bool(e) }

// discardWriter is an http.ResponseWriter that drops what it is given.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}
