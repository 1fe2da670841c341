package caddymodule

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestChaos: a pool of keys that fail in every way an upstream can (429
// storms with and without Retry-After, 500, 503, resets before the
// headers, resets mid-stream, hangs) and one healthy key; 1000 requests,
// half streamed, 16 at a time. No client sees a failure except a stream
// cut after its content began (and then as an error, never as a normal
// finish); afterwards nothing is in flight and no goroutine is left.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run skipped in -short mode")
	}
	m, base := mock(t, mockupstream.Config{Seed: 7, Keys: map[string]mockupstream.KeyBehavior{
		"storm-ra":   {Status: 429, RetryAfter: "1"},
		"storm-none": {Status: 429, RetryAfter: "none"},
		"err-500":    {FailRate: 1, FailStatus: 500},
		"err-503":    {FailRate: 1, FailStatus: 503},
		"flaky":      {FailRate: 0.3, FailStatus: 502, ResetRate: 0.2},
		"reset":      {ResetRate: 1},
		"cut":        {StreamCutAfter: 2},
		"hang":       {Latency: time.Minute},
		"good":       {},
	}})
	var keys strings.Builder
	for _, k := range []string{"storm-ra", "storm-none", "err-500", "err-503", "flaky", "reset", "cut", "hang", "good"} {
		fmt.Fprintf(&keys, "\t\t\tkey %s %s {\n\t\t\t\tid %s\n\t\t\t}\n", k, base, k)
	}
	gw := gateway(t, gatewayBlock("\t\tpool chaos {\n"+keys.String()+
		"\t\t\tmax_concurrency_per_key 16\n\t\t\tmax_retries 12\n\t\t\tattempt_timeout 250ms\n\t\t\terror_cooldown 200ms\n"+
		"\t\t\trate_limit_cooldown 200ms\n\t\t\tbreaker_open 500ms\n\t\t\ttotal_timeout 30s\n\t\t}\n"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	before := runtime.NumGoroutine()

	const total, conc = 1000, 16
	var next, cuts, completeStreams, okJSON atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				msg := fmt.Sprintf("chaos request %d", i)
				stream := i%2 == 1
				req, _ := http.NewRequest(http.MethodPost, gw+"/v1/chat/completions", bytes.NewReader(chatBody("mock-gpt", msg, stream)))
				req.Header.Set("Authorization", "Bearer "+gatewayKey)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					fail("request %d: %v", i, err)
					continue
				}
				if resp.StatusCode != 200 {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					fail("request %d (stream %v): %d %s", i, stream, resp.StatusCode, b)
					continue
				}
				if !stream {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if got := gjson.GetBytes(b, "choices.0.message.content").String(); got != mockupstream.Text(msg) {
						fail("request %d: content %q", i, got)
						continue
					}
					okJSON.Add(1)
					continue
				}
				var text strings.Builder
				done, errored := false, false
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					line := sc.Text()
					data, ok := strings.CutPrefix(line, "data: ")
					if !ok {
						continue
					}
					switch {
					case data == "[DONE]":
						done = true
					case gjson.Get(data, "error").Exists():
						errored = true
					default:
						text.WriteString(gjson.Get(data, "choices.0.delta.content").String())
					}
				}
				resp.Body.Close()
				switch {
				case errored && text.Len() > 0 && !done:
					cuts.Add(1) // cut after content went out, reported as an error
				case done && !errored && text.String() == mockupstream.Text(msg):
					completeStreams.Add(1)
				default:
					fail("stream %d: text %q, [DONE] %v, error %v", i, text.String(), done, errored)
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d JSON answers, %d complete streams, %d streams cut after content (good key served %d)",
		okJSON.Load(), completeStreams.Load(), cuts.Load(), m.Stats("good").OK)
	if okJSON.Load()+completeStreams.Load()+cuts.Load() != total {
		t.Fatalf("only %d of %d requests accounted for", okJSON.Load()+completeStreams.Load()+cuts.Load(), total)
	}
	kp := poolFor(t, "chaos")
	eventually(t, 5*time.Second, "in flight back to 0", func() bool {
		for _, s := range kp.Snapshot() {
			if s.InFlight != 0 {
				return false
			}
		}
		return true
	})
	client.CloseIdleConnections()
	upstreamTransport.CloseIdleConnections()
	eventually(t, 10*time.Second, fmt.Sprintf("goroutines back to the baseline of %d", before), func() bool {
		upstreamTransport.CloseIdleConnections()
		return runtime.NumGoroutine() <= before
	})
}
