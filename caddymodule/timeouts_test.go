package caddymodule

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTimeoutWarnings: a pool whose attempt_timeout (its own or a key's)
// exceeds total_timeout gets one warning naming the pool and the values;
// a pool on the defaults gets none, nor does a request_timeout (the idle
// timeout once an answer has begun, which total_timeout does not cut)
// longer than total_timeout; a gateway key written literally is warned
// about.
func TestTimeoutWarnings(t *testing.T) {
	appLog := filepath.Join(t.TempDir(), "app.log")
	gateway(t, gatewayBlock(
		"\t\tpool late {\n\t\t\ttotal_timeout 10s\n\t\t\tattempt_timeout 20s\n\t\t\trequest_timeout 30s\n"+
			"\t\t\tkey k-late-0123456789 http://127.0.0.1:9/v1 {\n\t\t\t\tid slow-key\n\t\t\t\tattempt_timeout 40s\n\t\t\t}\n"+
			"\t\t\tkey k-late-9876543210 http://127.0.0.1:9/v1 {\n\t\t\t\tid ok-key\n\t\t\t\tattempt_timeout 5s\n\t\t\t}\n\t\t}\n",
		"\t\tpool defaults {\n\t\t\tkey k-def-0123456789 http://127.0.0.1:9/v1\n\t\t}\n",
		"\t\tpool keyonly {\n\t\t\ttotal_timeout 30s\n\t\t\tkey k-ko-0123456789 http://127.0.0.1:9/v1 {\n\t\t\t\tid ko\n\t\t\t\tattempt_timeout 31s\n\t\t\t}\n\t\t}\n"),
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel WARN\n\t}")

	byPool := map[string][]map[string]any{}
	var literal []map[string]any
	for _, e := range readJSONLines(t, appLog) {
		msg, _ := e["msg"].(string)
		if strings.Contains(msg, "attempt_timeout longer than total_timeout") {
			p, _ := e["pool"].(string)
			byPool[p] = append(byPool[p], e)
		}
		if strings.Contains(msg, "written literally") {
			literal = append(literal, e)
		}
	}
	if len(byPool) != 2 || len(byPool["late"]) != 1 || len(byPool["keyonly"]) != 1 {
		t.Fatalf("warnings by pool: %v", byPool)
	}
	late := byPool["late"][0]
	want := map[string]any{"level": "warn", "logger": "http.handlers.llm_gateway", "pool": "late",
		"total_timeout": 10.0, "attempt_timeout": 20.0}
	for k, v := range want {
		if late[k] != v {
			t.Errorf("late warning %s = %v, want %v (%v)", k, late[k], v, late)
		}
	}
	if _, has := late["request_timeout"]; has {
		t.Errorf("request_timeout warned about: %v", late)
	}
	if ks, _ := late["key_attempt_timeouts"].([]any); len(ks) != 1 || ks[0] != "slow-key (40s)" {
		t.Errorf("late warning key_attempt_timeouts = %v", late["key_attempt_timeouts"])
	}
	if msg := late["msg"].(string); !strings.HasPrefix(msg, "pool late: attempt_timeout longer than total_timeout (10s) never takes effect") {
		t.Errorf("message %q", msg)
	}
	ko := byPool["keyonly"][0]
	if _, has := ko["attempt_timeout"]; has || ko["total_timeout"] != 30.0 {
		t.Errorf("keyonly warning %v", ko)
	}
	if ks, _ := ko["key_attempt_timeouts"].([]any); len(ks) != 1 || ks[0] != "ko (31s)" {
		t.Errorf("keyonly warning key_attempt_timeouts = %v", ko["key_attempt_timeouts"])
	}
	if len(literal) != 1 {
		t.Fatalf("%d literal-key warnings, want 1", len(literal))
	}
	if ids, _ := literal[0]["gateway_keys"].([]any); len(ids) != 1 || ids[0] != maskSecret(gatewayKey) {
		t.Errorf("literal-key warning names %v", literal[0]["gateway_keys"])
	}
}
