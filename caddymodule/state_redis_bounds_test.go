package caddymodule

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/keypool"
)

// TestRedisHugeUsageKeepsSharedState: a key's token quota counted in
// Redis takes the largest usage figure twice (keypool saturates it at
// math.MaxInt64, which HINCRBY refused as a float and would overflow):
// the release runs, so the instance stays on shared state (a failed
// release took it off and was replayed at every re-sync), the count
// saturates at 9e18, and the other instance finds the quota spent.
func TestRedisHugeUsageKeepsSharedState(t *testing.T) {
	kc := testKeys(1)
	kc[0].Quota = keypool.Quota{Tokens: 1000, Period: time.Hour}
	c := redisCluster(t, 2, keypool.Settings{MaxConcurrencyPerKey: 10}, kc, time.Minute, time.Second)
	ctx := context.Background()
	var leases []*keypool.Lease
	for range 2 {
		l, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	for _, l := range leases {
		l.Release(keypool.Outcome{Kind: keypool.Success, Tokens: math.MaxInt64})
	}
	if !c[0].b.up.Load() {
		t.Fatalf("instance A left shared state: %v", c[0].b.lastErr.Load())
	}
	snap, err := c[1].p.SharedSnapshot(ctx)
	if err != nil || len(snap) != 1 || snap[0].QuotaTokens != 9e18 {
		t.Fatalf("shared snapshot: %+v %v, want the quota's tokens saturated at 9e18", snap, err)
	}
	if l, err := c[1].p.Acquire(ctx, keypool.AcquireOptions{}); err == nil {
		l.Release(keypool.Outcome{Kind: keypool.Success})
		t.Fatal("instance B leased a key whose token quota is spent")
	}
}

// TestRedisEventFieldsForOlderInstances: an event without a time keeps
// the seven fields an instance of the previous version reads (it drops
// an event of any other length); only a clear adds its time as the
// eighth.
func TestRedisEventFieldsForOlderInstances(t *testing.T) {
	c := redisCluster(t, 1, keypool.Settings{MaxConcurrencyPerKey: 10}, testKeys(1), time.Minute, time.Second)
	ctx := context.Background()
	ps := c[0].b.client.Subscribe(ctx, c[0].b.channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for _, o := range []keypool.Outcome{{Kind: keypool.ClientError, Status: 400}, {Kind: keypool.Success}} {
		l, err := c[0].p.Acquire(ctx, keypool.AcquireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		l.Release(o)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		msg, err := ps.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Split(msg.Payload, "|")
		switch o.Kind {
		case keypool.Success:
			at, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
			if len(f) != 8 || f[3] != "c" || at < t0.Add(-time.Second).UnixNano() {
				t.Errorf("clear event %q, want 8 fields ending with its time", msg.Payload)
			}
		default:
			if len(f) != 7 || f[3] != "-" {
				t.Errorf("release event %q, want the 7 fields of the previous version", msg.Payload)
			}
		}
	}
}
