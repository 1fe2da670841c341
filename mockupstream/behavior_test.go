package mockupstream

import (
	"encoding/json"
	"testing"
	"time"
)

func TestConfigJSON(t *testing.T) {
	var cfg Config
	err := json.Unmarshal([]byte(`{
		"default":{"latency":"15ms","tokens_per_second":40},
		"keys":{"k1":{"max_concurrency":1,"cooldown":"1.5s","status":0,"fail_rate":0.25,"fail_status":503,"reset_rate":0.1,"retry_after":"3"},
		        "k2":{"cooldown":250000000,"latency":null}},
		"seed":9,"model":"mock-gpt","models":["mock-2"],"replay_dir":"/tmp"}`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	k1 := cfg.Keys["k1"]
	if cfg.Default.Latency != 15*time.Millisecond || cfg.Default.TokensPerSecond != 40 ||
		k1.MaxConcurrency != 1 || k1.Cooldown != 1500*time.Millisecond || k1.FailRate != 0.25 || k1.FailStatus != 503 ||
		k1.ResetRate != 0.1 || k1.RetryAfter != "3" || cfg.Keys["k2"].Cooldown != 250*time.Millisecond ||
		cfg.Seed != 9 || cfg.Model != "mock-gpt" || cfg.Models[0] != "mock-2" || cfg.ReplayDir != "/tmp" {
		t.Errorf("decoded %+v", cfg)
	}
	// Round trip through the default encoding (nanoseconds).
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Keys["k1"].Cooldown != k1.Cooldown || back.Default.Latency != cfg.Default.Latency {
		t.Errorf("round trip %s", b)
	}
	var bad KeyBehavior
	if err := json.Unmarshal([]byte(`{"cooldown":"soon"}`), &bad); err == nil {
		t.Errorf("bad duration accepted")
	}
}

func TestSetKeyAndDefault(t *testing.T) {
	s, ts := start(t, Config{Default: KeyBehavior{Status: 500}})
	url := ts.URL + "/v1/chat/completions"
	if st, _, _ := mustDo(t, "POST", url, "a", chatBody("x", "")); st != 500 {
		t.Errorf("default: %d", st)
	}
	s.SetKey("a", KeyBehavior{})
	if st, _, _ := mustDo(t, "POST", url, "a", chatBody("x", "")); st != 200 {
		t.Errorf("SetKey: %d", st)
	}
	s.SetDefault(KeyBehavior{Status: 402})
	if st, _, _ := mustDo(t, "POST", url, "b", chatBody("x", "")); st != 402 {
		t.Errorf("SetDefault: %d", st)
	}
	s.RemoveKey("a")
	if st, _, _ := mustDo(t, "POST", url, "a", chatBody("x", "")); st != 402 {
		t.Errorf("RemoveKey: %d", st)
	}
	if s.Behavior("a").Status != 402 {
		t.Errorf("Behavior")
	}
}
