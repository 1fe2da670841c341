package caddymock

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestCaddyfileAndJSON: the directive's syntax fills the same Config as the
// JSON form, under the module ID http.handlers.llm_mock_upstream.
func TestCaddyfileAndJSON(t *testing.T) {
	if id := (MockUpstream{}).CaddyModule().ID; id != "http.handlers.llm_mock_upstream" {
		t.Fatalf("module ID %q", id)
	}
	if _, err := caddy.GetModule("http.handlers.llm_mock_upstream"); err != nil {
		t.Fatal(err)
	}
	d := caddyfile.NewTestDispenser(`llm_mock_upstream {
		model mock-x
		models extra-1 extra-2
		seed 7
		default {
			max_concurrency 1
			cooldown 3s
		}
		key k1 {
			status 429
			retry_after none
			tokens_per_second 50
			models a b
			rpm 500
			tpm 30000
		}
	}`)
	var m MockUpstream
	if err := m.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	var fromJSON MockUpstream
	js := `{"model":"mock-x","models":["extra-1","extra-2"],"seed":7,"default":{"max_concurrency":1,"cooldown":"3s"},"keys":{"k1":{"status":429,"retry_after":"none","tokens_per_second":50,"models":["a","b"],"rpm":500,"tpm":30000}}}`
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(m.Config)
	b, _ := json.Marshal(fromJSON.Config)
	if string(a) != string(b) || m.Default.Cooldown != 3*time.Second || m.Keys["k1"].Status != 429 || m.Keys["k1"].RPM != 500 || m.Keys["k1"].TPM != 30000 {
		t.Errorf("Caddyfile %s\n    JSON %s", a, b)
	}
	if err := m.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`llm_mock_upstream {
		default {
			bogus 1
		}
	}`)); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown behavior accepted: %v", err)
	}

	// provisioned, it serves the mock: a Responses answer for the model
	if err := m.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"input":"hi"}`))
	req.Header.Set("Authorization", "Bearer k2")
	if err := m.ServeHTTP(rec, req, nil); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"model":"mock-x"`) || !strings.Contains(rec.Body.String(), `"text":"Mock answer to: hi"`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}
