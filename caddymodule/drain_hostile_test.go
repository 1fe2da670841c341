package caddymodule

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDrainAfterErrorHostileUpstream: an upstream that, after its
// in-band error chunk, keeps the stream open and sends events without
// end (one event far larger than translate.MaxDrainAfterError; or a
// keep-alive comment at a time, which adds nothing to the bound) neither
// holds the client's error back nor outlives the client: the error chunk
// reaches the client at once, nothing read after it does, once the client
// leaves the gateway stops reading (the upstream sees its request
// canceled), and the goroutines return to what they were.
func TestDrainAfterErrorHostileUpstream(t *testing.T) {
	var gone [3]atomic.Int32 // per key: its upstream request ended by the gateway
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		k := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer oa-")
		g := &gone[k[0]-'1']
		w.Write([]byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"},\"finish_reason\":null}]}\n\n" +
			"data: {\"error\":{\"message\":\"overloaded mid-stream\",\"type\":\"server_error\",\"code\":\"server_error\"}}\n\n"))
		fl.Flush()
		if r.Header.Get("Authorization") == "Bearer oa-1" {
			// one event far past translate.MaxDrainAfterError
			w.Write([]byte("data: {\"big\":\"" + strings.Repeat("x", 1<<20) + "\"}\n\n"))
			fl.Flush()
		}
		for {
			select {
			case <-r.Context().Done():
				g.Add(1)
				return
			case <-release:
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
					g.Add(1)
					return
				}
				fl.Flush()
			}
		}
	}))
	defer up.Close()
	defer close(release)
	gw := gateway(t, gatewayBlock("\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n\t\t\trequest_timeout 60s\n"+
		"\t\t\tkey oa-1 "+up.URL+"/v1 {\n\t\t\t\tid o1\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey oa-2 "+up.URL+"/v1 {\n\t\t\t\tid o2\n\t\t\t\tpriority 2\n\t\t\t}\n"+
		"\t\t\tkey oa-3 "+up.URL+"/v1 {\n\t\t\t\tid o3\n\t\t\t\tpriority 3\n\t\t\t}\n\t\t}\n"))
	// warm the client and gateway connections' goroutines
	base := runtime.NumGoroutine()
	for round := 0; round < 3; round++ {
		req, _ := http.NewRequest("POST", gw+"/v1/chat/completions", strings.NewReader(string(chatBody("gpt-x", "hi", true))))
		req.Header.Set("Authorization", "Bearer "+gatewayKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		var got string
		for !strings.Contains(got, "overloaded mid-stream") {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("round %d: stream ended before the error (%v): %q", round, err, got)
			}
			got += line
		}
		if !strings.Contains(got, "partial") || strings.Contains(got, "keep-alive") || strings.Contains(got, "xxxx") {
			t.Fatalf("round %d: %q", round, got)
		}
		if via := resp.Header.Get("X-Routed-Via"); via != "oa/o"+string(rune('1'+round)) {
			t.Fatalf("round %d via %q", round, via) // each key cools after its error: the next one answers
		}
		if round > 0 && gone[round].Load() != 0 {
			t.Fatalf("round %d: the gateway left the upstream before the client left", round)
		}
		resp.Body.Close() // the client leaves (while the gateway drains, keys 2 and 3)
		eventually(t, 10*time.Second, "the upstream request ended", func() bool { return gone[round].Load() == 1 })
	}
	http.DefaultClient.CloseIdleConnections()
	eventually(t, 10*time.Second, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= base+4 })
}
