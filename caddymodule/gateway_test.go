package caddymodule

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// poolBlock renders a pool with n mock keys "mk-<i>" (ids k<i>).
func poolBlock(name, base string, n int, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\t\tpool %s {\n", name)
	for i := 1; i <= n; i++ { // n may be 0
		fmt.Fprintf(&b, "\t\t\tkey mk-%d %s {\n\t\t\t\tid k%d\n\t\t\t}\n", i, base, i)
	}
	b.WriteString(extra)
	b.WriteString("\t\t}\n")
	return b.String()
}

func gatewayBlock(pools ...string) string {
	return "\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n" + strings.Join(pools, "") + "\t}\n"
}

func TestSeedScenarioFiveKeys(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{MaxConcurrency: 1, Cooldown: 300 * time.Millisecond}})
	gw := gateway(t, gatewayBlock(poolBlock("main", base, 5, "\t\t\tmax_concurrency_per_key 1\n\t\t\tcooldown_after_success 300ms\n")))

	start := time.Now()
	statuses := runConcurrent(t, gw, 12)
	elapsed := time.Since(start)
	for i, s := range statuses {
		if s != 200 {
			t.Fatalf("request %d: status %d", i, s)
		}
	}
	total := int64(0)
	for i := 1; i <= 5; i++ {
		st := m.Stats(fmt.Sprintf("mk-%d", i))
		if st.OK < 2 || st.OK > 3 {
			t.Errorf("key mk-%d served %d, want 2 or 3", i, st.OK)
		}
		if st.MaxInFlight > 1 {
			t.Errorf("key mk-%d had %d in flight at once", i, st.MaxInFlight)
		}
		total += st.OK
	}
	if total != 12 {
		t.Fatalf("mock served %d, want 12", total)
	}
	// 12 requests over 5 keys need 3 rounds, i.e. at least 2 cooldowns
	rounds := float64(elapsed) / float64(300*time.Millisecond)
	t.Logf("5 keys: %v (%.1f cooldown rounds)", elapsed, rounds)
	if rounds < 2 || rounds > 5 {
		t.Errorf("took %.1f cooldown rounds, want about 3", rounds)
	}
}

func TestSeedScenarioOneKey(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{MaxConcurrency: 1, Cooldown: 300 * time.Millisecond}})
	gw := gateway(t, gatewayBlock(poolBlock("solo", base, 1, "\t\t\tcooldown_after_success 300ms\n")))
	start := time.Now()
	statuses := runConcurrent(t, gw, 12)
	elapsed := time.Since(start)
	for i, s := range statuses {
		if s != 200 {
			t.Fatalf("request %d: status %d", i, s)
		}
	}
	st := m.Stats("mk-1")
	if st.OK != 12 || st.MaxInFlight != 1 {
		t.Fatalf("mock stats: ok %d, max in flight %d", st.OK, st.MaxInFlight)
	}
	rounds := float64(elapsed) / float64(300*time.Millisecond)
	t.Logf("1 key: %v (%.1f cooldown rounds), mock 429s: %d", elapsed, rounds, st.RateLimited)
	if rounds < 11 || rounds > 16 {
		t.Errorf("took %.1f cooldown rounds, want about 12 (serialised)", rounds)
	}
	if s := keyStatus(t, "solo", "k1"); s.InFlight != 0 {
		t.Fatalf("in flight after the run: %d", s.InFlight)
	}
}

// runConcurrent fires n non-streaming chats at once and returns their
// statuses.
func runConcurrent(t *testing.T, gw string, n int) []int {
	t.Helper()
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprintf("hello %d", i), false))
			statuses[i] = resp.StatusCode
			if resp.StatusCode != 200 {
				t.Logf("request %d: %d %s", i, resp.StatusCode, body)
				return
			}
			want := mockupstream.Text(fmt.Sprintf("hello %d", i))
			if got := gjson.GetBytes(body, "choices.0.message.content").String(); got != want {
				t.Errorf("request %d: content %q, want %q", i, got, want)
			}
		})
	}
	wg.Wait()
	return statuses
}

func TestStreamingArrivesEventByEvent(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{TokensPerSecond: 40}})
	gw := gateway(t, gatewayBlock(poolBlock("main", base, 1, "")))
	msg := "one two three four five six seven eight"
	req, _ := http.NewRequest(http.MethodPost, gw+"/v1/chat/completions", strings.NewReader(string(chatBody("mock-gpt", msg, true))))
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	if resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("X-Routed-Via") != "main/k1" {
		t.Fatalf("headers: %v", resp.Header)
	}
	firstAt, text, sawDone := readChatStream(resp.Body)
	if !sawDone {
		t.Fatal("no [DONE]")
	}
	if want := mockupstream.Text(msg); text != want {
		t.Fatalf("text %q, want %q", text, want)
	}
	last := m.Stats("mk-1").LastEventSentAt
	if !firstAt.Before(last) {
		t.Fatalf("first event read at %v, not before the mock sent its last at %v: the stream was buffered", firstAt, last)
	}
	t.Logf("first event read %v before the last was sent", last.Sub(firstAt))
}

func TestClientDisconnectFreesKey(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{TokensPerSecond: 10}})
	gw := gateway(t, gatewayBlock(poolBlock("main", base, 1, "")))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/v1/chat/completions",
		strings.NewReader(string(chatBody("mock-gpt", "a long answer with many words to stream slowly", true))))
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	if s := keyStatus(t, "main", "k1"); s.InFlight != 1 {
		t.Fatalf("in flight mid-stream = %d, want 1", s.InFlight)
	}
	cancel()
	resp.Body.Close()
	gone := time.Now()
	eventually(t, 100*time.Millisecond, "key slot released", func() bool { return keyStatus(t, "main", "k1").InFlight == 0 })
	t.Logf("slot released %v after the client left", time.Since(gone))
	eventually(t, time.Second, "mock saw the upstream request cancelled", func() bool { return m.Stats("mk-1").Canceled == 1 })
	if s := keyStatus(t, "main", "k1"); s.State != "ready" || s.Failures != 0 {
		t.Fatalf("a client disconnect penalised the key: %+v", s)
	}
}
