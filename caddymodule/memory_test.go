//go:build !race

package caddymodule

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The memory tests are left out under the race detector, which multiplies
// every allocation several times over; `go test ./...` runs them.

// procStatusKB returns a field of /proc/self/status in KiB (VmRSS, VmHWM),
// or -1 when it cannot be read (not Linux).
func procStatusKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// discardUpstream is an OpenAI-dialect upstream that reads and discards
// the request body and answers a fixed chat.completion, so that only the
// gateway's memory is measured. It counts the bytes it was sent.
func discardUpstream(t testing.TB) (string, *atomic.Int64) {
	var got atomic.Int64
	answer := []byte(`{"id":"chatcmpl-mem","object":"chat.completion","created":1700000000,"model":"up-mem",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Add(n)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &got
}

// TestConcurrentLargeTranslatedRequestsRSS: 16 concurrent 6 MB Anthropic
// Messages requests translated for an OpenAI-dialect key grow the
// process's resident memory by at most 4x the bodies (96 MB).
func TestConcurrentLargeTranslatedRequestsRSS(t *testing.T) {
	if procStatusKB("VmRSS") < 0 {
		t.Skip("no /proc/self/status")
	}
	const (
		clients = 16
		size    = 6 << 20
	)
	base, upstreamBytes := discardUpstream(t)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tpool mem {\n\t\t\tmodels gpt-mem\n"+
		"\t\t\tmax_concurrency_per_key "+strconv.Itoa(clients)+"\n\t\t\tkey mem-key "+base+"\n\t\t}\n\t}\n")
	// warm up: connections, code paths, a first translation
	small, smallLen := newLargeMessagesBody(64 << 10)
	if st, body := sendMessages(t, gw, small, smallLen); st != 200 {
		t.Fatalf("warm-up: %d %s", st, body)
	}

	runtime.GC()
	debug.FreeOSMemory()
	before := procStatusKB("VmRSS")
	// reset VmHWM to the current RSS (Linux >= 4.0); the sampler below
	// covers kernels that refuse
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	var peak atomic.Int64
	peak.Store(before)
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if v := procStatusKB("VmRSS"); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()

	var wg sync.WaitGroup
	statuses := make([]int, clients)
	start := make(chan struct{})
	for i := 0; i < clients; i++ {
		body, n := newLargeMessagesBody(size)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i], _ = sendMessages(t, gw, body, n)
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	sampler.Wait()
	hwm := procStatusKB("VmHWM")
	growth := max(peak.Load(), hwm) - before
	for i, st := range statuses {
		if st != 200 {
			t.Fatalf("request %d: status %d", i, st)
		}
	}
	if sent := upstreamBytes.Load(); sent < clients*size*9/10 {
		t.Fatalf("upstream received %d bytes, want about %d", sent, clients*size)
	}
	bodies := int64(clients * size >> 10)
	t.Logf("RSS before %d MiB, peak %d MiB (VmHWM %d MiB), growth %d MiB = %.2fx the %d MiB of bodies",
		before>>10, max(peak.Load(), hwm)>>10, hwm>>10, growth>>10, float64(growth)/float64(bodies), bodies>>10)
	if growth > 4*bodies {
		t.Fatalf("RSS grew by %d MiB, more than 4x the %d MiB of request bodies", growth>>10, bodies>>10)
	}
}

// sendMessages posts an Anthropic Messages body of length n and returns
// the status and the answer.
func sendMessages(t testing.TB, gw string, body io.Reader, n int64) (int, []byte) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, gw+"/v1/messages", body)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", gatewayKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && gjson.GetBytes(out, "content.0.text").String() != "done" {
		t.Errorf("answer %s", out)
	}
	return resp.StatusCode, out
}
