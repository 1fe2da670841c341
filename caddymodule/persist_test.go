package caddymodule

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// forgetProcessState drops what a process keeps in memory (as a restart
// would): live pools are already gone after caddy.Stop; the token figures
// and the persistence state are reset.
func forgetProcessState() {
	keyStatsMap.Range(func(k, _ any) bool {
		keyStatsMap.Delete(k)
		return true
	})
	usageState.mu.Lock()
	usageState.path, usageState.loaded, usageState.restored, usageState.last = "", nil, nil, nil
	usageState.mu.Unlock()
}

// TestUsageSurvivesRestart: counters, quota windows and token counts are
// saved at Cleanup and restored by the next process; a corrupt file
// starts fresh without crashing.
func TestUsageSurvivesRestart(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	file := filepath.Join(t.TempDir(), "usage.json")
	block := "\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n\t\tusage_file " + file + "\n" +
		"\t\tpool persist {\n\t\t\tkey p-1 " + base + " {\n\t\t\t\tid p1\n\t\t\t\tquota 5 requests per 24h\n\t\t\t}\n\t\t}\n\t}\n"
	forgetProcessState()
	t.Cleanup(forgetProcessState)
	gw := gateway(t, block)
	for range 3 {
		if resp, b := post(t, gw+"/v1/chat/completions", chatBody("m", "count me", false)); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	before := keyStatus(t, "persist", "p1")
	tokBefore := peekKeyStats("persist", "p1").tokens
	if before.Requests != 3 || before.QuotaRequests != 3 || tokBefore[0] == 0 {
		t.Fatalf("before: %+v tokens %v", before, tokBefore)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(saved), `"requests": 3`) {
		t.Fatalf("saved file: %v %s", err, saved)
	}
	if strings.Contains(string(saved), "p-1") {
		t.Fatal("the usage file holds a secret")
	}

	// "restart": new process state, same file
	forgetProcessState()
	gw = gateway(t, block)
	after := keyStatus(t, "persist", "p1")
	if after.Requests != 3 || after.Successes != 3 || after.QuotaRequests != 3 || peekKeyStats("persist", "p1").tokens != tokBefore {
		t.Fatalf("after restart: %+v tokens %v, want the counts from before", after, peekKeyStats("persist", "p1").tokens)
	}
	// the quota keeps counting from there: 2 left, then a 429 (the
	// quota is a rate limit to wait out)
	for i := range 3 {
		resp, _ := post(t, gw+"/v1/chat/completions", chatBody("m", "count me", false))
		if want := map[bool]int{true: 200, false: 429}[i < 2]; resp.StatusCode != want {
			t.Fatalf("request %d after restart: %d, want %d", i, resp.StatusCode, want)
		}
	}

	// a corrupt file: a warning, a fresh start, the file kept aside
	_ = caddy.Stop()
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	forgetProcessState()
	gateway(t, block)
	if s := keyStatus(t, "persist", "p1"); s.Requests != 0 {
		t.Fatalf("corrupt file restored something: %+v", s)
	}
	if _, err := os.Stat(file + ".corrupt"); err != nil {
		t.Fatal("corrupt file not kept aside")
	}
	var f usageFile
	_ = caddy.Stop()
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 {
		t.Fatalf("file after the fresh start: %v %s", err, b)
	}
}
