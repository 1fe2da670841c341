package caddymodule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/logging"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/mockupstream/testskip"
)

// gatewayKey is the gateway key the test configs accept.
const gatewayKey = "sk-test-gateway-0123456789"

func TestMain(m *testing.M) {
	// keep Caddy's autosave and storage out of the user's home
	dir, err := os.MkdirTemp("", "llmgw-test-*")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Setenv("XDG_DATA_HOME", dir)
	code := m.Run()
	_ = caddy.Stop()
	os.RemoveAll(dir)
	testskip.Report() // one line naming what was skipped, e.g. the cluster tests without redis-server
	os.Exit(code)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// mock starts a mock upstream on 127.0.0.1 and returns it with its base URL
// (ending in /v1).
func mock(t testing.TB, cfg mockupstream.Config) (*mockupstream.Server, string) {
	t.Helper()
	m := mockupstream.New(cfg)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv.URL + "/v1"
}

// gateway loads a Caddyfile site body (the llm_gateway block and anything
// else) into the in-process Caddy on a fresh port and returns the gateway's
// base URL (without /v1). globals are extra global options.
func gateway(t testing.TB, siteBody string, globals ...string) string {
	t.Helper()
	port := freePort(t)
	cf := fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n\tgrace_period 1ns\n%s\n}\nhttp://127.0.0.1:%d {\n%s\n}\n",
		strings.Join(globals, "\n"), port, siteBody)
	loadCaddyfile(t, cf)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	t.Cleanup(func() { _ = caddy.Stop() })
	return base
}

// loadCaddyfile adapts and loads a whole Caddyfile, failing the test on
// any error.
func loadCaddyfile(t testing.TB, cf string) {
	t.Helper()
	cfgJSON, warn, err := caddyconfig.GetAdapter("caddyfile").Adapt(caddyfile.Format([]byte(cf)), nil)
	if err != nil {
		t.Fatalf("adapting Caddyfile: %v\n%s", err, cf)
	}
	for _, w := range warn {
		t.Logf("adapt warning: %s", w.String())
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		t.Fatalf("loading config: %v", err)
	}
}

// poolFor returns the live keypool of the named pool.
func poolFor(t testing.TB, name string) *keypool.Pool {
	t.Helper()
	var p *keypool.Pool
	registry.Range(func(k, v any) bool {
		if k == "pool:"+name {
			p = v.(*poolState).pool
			return false
		}
		return true
	})
	if p == nil {
		t.Fatalf("pool %q not in the registry", name)
	}
	return p
}

func keyStatus(t testing.TB, pool, id string) keypool.KeyStatus {
	t.Helper()
	for _, s := range poolFor(t, pool).Snapshot() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("key %q not in pool %q", id, pool)
	return keypool.KeyStatus{}
}

// chatBody returns a Chat Completions request body.
func chatBody(model, msg string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":    model,
		"messages": []map[string]any{{"role": "user", "content": msg}},
		"stream":   stream,
	})
	return b
}

// post sends a request with the gateway key as Bearer token; hdr holds
// header name and value pairs to set (an empty value deletes the header).
func post(t testing.TB, url string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return postReader(t, url, bytes.NewReader(body), hdr...)
}

// postReader is post with the body read from rd (sent chunked when rd is
// not a *bytes.Reader, *bytes.Buffer or *strings.Reader, whose length
// net/http knows).
func postReader(t testing.TB, url string, rd io.Reader, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// eventually polls cond every 2 ms until it holds or within elapses.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// loadCaddyfileErr adapts and loads a Caddyfile and returns the error.
func loadCaddyfileErr(cf string) error {
	cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	if err != nil {
		return err
	}
	return caddy.Load(cfgJSON, true)
}

// readChatStream reads a Chat Completions stream to its end: when its
// first data line arrived, the text of its content deltas, and whether it
// ended with [DONE].
func readChatStream(body io.Reader) (firstAt time.Time, text string, done bool) {
	sc := bufio.NewScanner(body)
	var b strings.Builder
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if firstAt.IsZero() {
			firstAt = time.Now()
		}
		if d == "[DONE]" {
			done = true
			continue
		}
		b.WriteString(gjson.Get(d, "choices.0.delta.content").String())
	}
	return firstAt, b.String(), done
}
