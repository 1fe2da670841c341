package caddymodule

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/tidwall/sjson"
)

// TestCaddyfileExamplePathsOutsideGateway: Caddyfile.example as shipped
// (its ports moved to free ones, its admin endpoint off) serves the
// gateway's paths, and answers 404 on the others: a new user's browser
// at http://127.0.0.1:8787/ got an empty 200, as if the gateway had
// answered.
func TestCaddyfileExamplePathsOutsideGateway(t *testing.T) {
	src, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	gwPort, mockPort := freePort(t), freePort(t)
	cf := strings.NewReplacer("127.0.0.1:8787", fmt.Sprintf("127.0.0.1:%d", gwPort),
		"127.0.0.1:8788", fmt.Sprintf("127.0.0.1:%d", mockPort)).Replace(string(src))
	cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(caddyfile.Format([]byte(cf)), nil)
	if err != nil {
		t.Fatalf("adapting Caddyfile.example: %v", err)
	}
	if cfgJSON, err = sjson.SetRawBytes(cfgJSON, "admin", []byte(`{"disabled":true,"config":{"persist":false}}`)); err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		t.Fatalf("loading Caddyfile.example: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	gw := fmt.Sprintf("http://127.0.0.1:%d", gwPort)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/v1/models", 200},
		{"GET", "/models", 200},
		{"POST", "/v1/chat/completions", 200},
		{"GET", "/v1/nope", 404},
		{"GET", "/", 404},
		{"GET", "/favicon.ico", 404},
		{"POST", "/api/chat", 404},
		{"GET", "/v2/models", 404},
	} {
		req, _ := http.NewRequest(c.method, gw+c.path, strings.NewReader(string(chatBody("mock-gpt", "hi", false))))
		req.Header.Set("Authorization", "Bearer sk-local-proxy") // the demo's key (docs/clients.md)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
	}
}
