package caddymodule

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEgressClusterSharesExitCooldown: in cluster mode an exit one
// instance found unreachable is cooling on the other instances too, which
// then leave it alone without trying it first.
func TestEgressClusterSharesExitCooldown(t *testing.T) {
	addr := testRedis(t)
	prefix := testPrefix(t, addr)
	live := startTinyproxy(t, "", "")
	// nothing listens at the dead exit once the instances run; its port
	// is held while they start, so that none of them is given it (an
	// instance there answered the proxied request with its own 401)
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + hold.Addr().String()
	_, base := mockPerRequest(t)
	pool := egressPool(base, 1, egressBlock("failover", "1m", dead, live.url("http", "")))
	insts := startInstances(t, 2, clusterBlock(addr, prefix, "", pool))
	_ = hold.Close()
	exitOn := func(in *instance, name string) egressView {
		code, b := adminDo(t, http.MethodGet, in.Admin+"/llm_gateway/egress")
		var out struct{ Exits []egressView }
		if code != 200 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("egress view: %d %s", code, b)
		}
		for _, v := range out.Exits {
			if v.Exit == name {
				return v
			}
		}
		t.Fatalf("exit %s not listed: %s", name, b)
		return egressView{}
	}
	if v := exitOn(insts[1], dead); v.State != "healthy" {
		t.Fatalf("before any request: %+v", v)
	}
	resp, body := post(t, insts[0].URL("/v1/chat/completions"), chatBody("mock-gpt", "hi", false))
	if resp.StatusCode != 200 || !strings.HasSuffix(resp.Header.Get("X-Routed-Via"), " via "+live.url("http", "")) {
		t.Fatalf("instance 1: %d %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), body)
	}
	if v := exitOn(insts[0], dead); v.State != "cooling" || v.Failures != 1 {
		t.Fatalf("instance 1's view of the dead exit: %+v", v)
	}
	eventually(t, 5*time.Second, "instance 2 sees the dead exit cooling", func() bool {
		return exitOn(insts[1], dead).State == "cooling"
	})
	resp, body = post(t, insts[1].URL("/v1/chat/completions"), chatBody("mock-gpt", "hi", false))
	if resp.StatusCode != 200 || !strings.HasSuffix(resp.Header.Get("X-Routed-Via"), " via "+live.url("http", "")) {
		t.Fatalf("instance 2: %d %q %s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), body)
	}
	if v := exitOn(insts[1], dead); v.Failures != 0 || v.CooldownSeconds < 50 {
		t.Fatalf("instance 2 tried the dead exit itself, or lost the cooldown: %+v", v)
	}
	if live.count() != 2 {
		t.Fatalf("the live proxy logged %d requests, want 2", live.count())
	}
	// an instance started later finds the cooldown in Redis
	late := startInstance(t, clusterBlock(addr, prefix, "", pool))
	if v := exitOn(late, dead); v.State != "cooling" || v.Failures != 0 {
		t.Fatalf("a later instance's view: %+v", v)
	}
}
