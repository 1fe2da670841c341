package caddymodule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/mockupstream"
)

func TestLearnedEncoding(t *testing.T) {
	l := &keypool.SharedLearned{Model: "gpt|4o;x", Limits: keypool.RateLimits{
		Requests:    keypool.RateLimit{Limit: 500, Remaining: 12, Reset: 3 * time.Second, Set: true},
		InputTokens: keypool.RateLimit{Limit: 4000, Remaining: 0, Reset: 1500 * time.Millisecond, Set: true},
	}}
	enc := encodeLearned(l)
	if enc != "500,12,3000;-;4000,0,1500;-;gpt|4o;x" {
		t.Fatalf("encoded %q", enc)
	}
	got, ok := decodeLearned(enc, time.Second)
	if !ok || got.Model != "gpt|4o;x" || got.Limits.Requests != (keypool.RateLimit{Limit: 500, Remaining: 12, Reset: 2 * time.Second, Set: true}) ||
		got.Limits.InputTokens.Reset != 500*time.Millisecond || got.Limits.Tokens.Set {
		t.Fatalf("decoded %+v %v", got, ok)
	}
	if _, ok := decodeLearned(enc, 5*time.Second); ok {
		t.Fatal("windows past their reset decoded")
	}
	for _, bad := range []string{"", "1,2;-;-;-;m", "a,b,c;-;-;-;m", "-1,0,5;-;-;-;m", "-;-;-;-;m"} {
		if _, ok := decodeLearned(bad, 0); ok {
			t.Errorf("%q decoded", bad)
		}
	}
	pool, ev, ok := parseLearnedEvent("L|main|inst|fp1|" + enc)
	if !ok || pool != "main" || ev.Instance != "inst" || ev.Fingerprint != "fp1" || ev.Learned.Limits.Requests.Remaining != 12 {
		t.Fatalf("event %v %+v", ok, ev)
	}
	if _, _, ok := parseStateEvent("L|main|inst|fp1|" + enc); ok {
		t.Fatal("the learned event parses as a state event")
	}
}

// TestRedisStateLearnedShared: limits one instance learned from an
// answer's headers reach the other instances (event) and the snapshot.
func TestRedisStateLearnedShared(t *testing.T) {
	c := redisCluster(t, 2, keypool.Settings{MaxConcurrencyPerKey: 4}, testKeys(1), time.Minute, 30*time.Second)
	ctx := context.Background()
	l, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	l.Learn(keypool.RateLimits{Requests: keypool.RateLimit{Limit: 60, Remaining: 0, Reset: 30 * time.Second, Set: true}})
	l.Release(keypool.Outcome{Kind: keypool.Success, Status: 200})
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := c[1].p.Snapshot()[0]
		if st.Reason == keypool.ReasonLearned {
			if st.Learned[0].Requests.Limit != 60 || st.Learned[0].Model != "m" {
				t.Fatalf("B learned %+v", st.Learned)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance B never heard: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c[1].p.Acquire(ctx, keypool.AcquireOptions{Model: "m"}); err == nil {
		t.Fatal("instance B leased a key A learned is used up")
	}
	snap, err := c[1].p.SharedSnapshot(ctx)
	if err != nil || len(snap) != 1 || len(snap[0].Learned) != 1 {
		t.Fatalf("snapshot %+v %v", snap, err)
	}
	if r := snap[0].Learned[0].Limits.Requests; r.Limit != 60 || r.Reset <= 25*time.Second || r.Reset > 30*time.Second {
		t.Fatalf("snapshot requests window %+v", r)
	}
}

// TestLearnedLimitsThroughCaddy: mock keys that enforce 2, 4 and 6
// requests a minute and report it in both header families, none of it
// configured on the gateway, take a load of 12 requests (3x the middle
// key's rpm, the keys' combined limit), plain and streamed: every one is
// served with no upstream 429, the 13th is refused by the gateway itself (429 with Retry-After, naming the learned limits)
// without reaching an upstream, and the admin API shows what each key
// learned. With learn_limits off the same load drives the keys into the
// upstream's 429s.
func TestLearnedLimitsThroughCaddy(t *testing.T) {
	limits := map[string]int{"mk-1": 2, "mk-2": 4, "mk-3": 6}
	run := func(global string) (*mockupstream.Server, string, string) {
		cfg := mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{}}
		for k, rpm := range limits {
			cfg.Keys[k] = mockupstream.KeyBehavior{RPM: rpm, TPM: 100_000}
		}
		m, base := mock(t, cfg)
		block := "\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n" + global +
			poolBlock("learn", base, 3, "\t\t\tmax_concurrency_per_key 4\n\t\t\tacquire_timeout 1s\n") + "\t}\n"
		gw, admin := adminGateway(t, block, "")
		for i := 0; i < 12; i++ {
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprintf("hello %d", i), i%2 == 1))
			if resp.StatusCode != 200 {
				t.Fatalf("%srequest %d: %d %s", global, i, resp.StatusCode, body)
			}
		}
		return m, gw, admin
	}

	m, gw, admin := run("")
	// the mock counts a stream as served after its last write, which the
	// client may have read a moment before
	eventually(t, 5*time.Second, "the mock counted every answer", func() bool {
		return m.Stats("mk-1").OK+m.Stats("mk-2").OK+m.Stats("mk-3").OK == 12
	})
	for k, rpm := range limits {
		if st := m.Stats(k); st.RateLimited != 0 || st.OK != int64(rpm) {
			t.Errorf("learning on: %s served %d (rpm %d), answered %d 429s", k, st.OK, rpm, st.RateLimited)
		}
	}
	before := m.Stats("mk-1").Requests + m.Stats("mk-2").Requests + m.Stats("mk-3").Requests
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "one too many", false))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "learned") {
		t.Fatalf("13th request: %d %s", resp.StatusCode, body)
	}
	if after := m.Stats("mk-1").Requests + m.Stats("mk-2").Requests + m.Stats("mk-3").Requests; after != before {
		t.Fatalf("the 13th request reached an upstream (%d requests, was %d)", after, before)
	}
	pools := adminPools(t, admin)
	for i, rpm := range []int{2, 4, 6} {
		kv := findKeyView(t, pools, "learn", fmt.Sprintf("k%d", i+1))
		if len(kv.Learned) != 1 || kv.Learned[0].Requests == nil || kv.Learned[0].Tokens == nil {
			t.Fatalf("k%d learned %+v", i+1, kv.Learned)
		}
		r := kv.Learned[0].Requests
		if kv.State != keypool.StateLimited || kv.Reason != string(keypool.ReasonLearned) || r.Limit != int64(rpm) || r.Remaining != 0 ||
			r.ResetSeconds < 55 || r.ResetSeconds > 61 || kv.Learned[0].Tokens.Limit != 100_000 || kv.Errors != 0 {
			t.Errorf("k%d: state %s reason %s learned %+v errors %d", i+1, kv.State, kv.Reason, *r, kv.Errors)
		}
	}

	m, _, _ = run("\t\tlearn_limits off\n")
	limited := int64(0)
	for k := range limits {
		limited += m.Stats(k).RateLimited
	}
	t.Logf("learn_limits off: the same 12 requests met %d upstream 429s (learning on: 0)", limited)
	if limited == 0 {
		t.Fatal("learn_limits off: no upstream 429, the switch did nothing")
	}
}

// TestLearnLimitsAndStandbyCaddyfile: learn_limits on|off per pool and for
// the handler, and weight 0 as a standby key.
func TestLearnLimitsAndStandbyCaddyfile(t *testing.T) {
	var h Handler
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`llm_gateway {
		learn_limits off
		pool a {
			learn_limits on
			strategy weighted
			key sk-1 https://example.invalid/v1 {
				weight 0
			}
			key sk-2 https://example.invalid/v1 {
				weight 3
			}
		}
		pool b {
			strategy smart
			key sk-3 https://example.invalid/v1
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if h.LearnLimits != LearnOff || h.Pools[0].LearnLimits != LearnOn || h.Pools[1].LearnLimits != "" {
		t.Fatalf("learn_limits: handler %q, pools %q %q", h.LearnLimits, h.Pools[0].LearnLimits, h.Pools[1].LearnLimits)
	}
	if k := h.Pools[0].Keys; !k[0].Standby || k[0].Weight != 0 || k[1].Standby || k[1].Weight != 3 {
		t.Fatalf("weights: %+v %+v", *k[0], *k[1])
	}
	if s, err := poolSettings(h.Pools[0]); err != nil || s.LearnLimitsOff {
		t.Fatalf("pool a: %+v %v", s, err)
	}
	off := &PoolConfig{LearnLimits: LearnOff}
	if s, err := poolSettings(off); err != nil || !s.LearnLimitsOff {
		t.Fatalf("off: %+v %v", s, err)
	}
	if s, err := poolSettings(h.Pools[1]); err != nil || s.Strategy != "smart" {
		t.Fatalf("pool b: %+v %v", s, err)
	}
	err = new(Handler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(`llm_gateway {
		pool a {
			learn_limits maybe
			key sk-1 https://example.invalid/v1
		}
	}`))
	if err == nil || !strings.Contains(err.Error(), "learn_limits: want on or off") {
		t.Fatalf("bad value: %v", err)
	}
}
