package caddymodule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// adminRequests returns GET /llm_gateway/requests?query decoded.
func adminRequests(t *testing.T, admin, query string) requestsPage {
	t.Helper()
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/requests?"+query)
	if code != 200 {
		t.Fatalf("GET requests?%s: %d %s", query, code, b)
	}
	var page requestsPage
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("GET requests: %v\n%s", err, b)
	}
	return page
}

// TestRecentRing keeps the newest entries in order through wrap-around
// and resizing, with stable sequence numbers.
func TestRecentRing(t *testing.T) {
	rr := &recentRing{size: 3}
	for i := 1; i <= 5; i++ {
		rr.add(recentRequest{ID: fmt.Sprint("r", i)})
	}
	all := func() (ids []string) {
		for _, e := range rr.listLocked(func(*recentRequest) bool { return true }, 0, 100) {
			ids = append(ids, fmt.Sprint(e.ID, "#", e.Seq))
		}
		return ids
	}
	if got := strings.Join(all(), " "); got != "r5#5 r4#4 r3#3" {
		t.Fatalf("after 5 adds into 3: %s", got)
	}
	if got := rr.listLocked(func(*recentRequest) bool { return true }, 5, 1); len(got) != 1 || got[0].ID != "r4" {
		t.Fatalf("before=5 limit=1: %+v", got)
	}
	rr.resize(2)
	if got := strings.Join(all(), " "); got != "r5#5 r4#4" {
		t.Fatalf("after resize to 2: %s", got)
	}
	rr.resize(4)
	rr.add(recentRequest{ID: "r6"})
	rr.add(recentRequest{ID: "r7"})
	rr.add(recentRequest{ID: "r8"})
	if got := strings.Join(all(), " "); got != "r8#8 r7#7 r6#6 r5#5" {
		t.Fatalf("after resize to 4 and 3 adds: %s", got)
	}
}

// TestConsoleRequestLog: finished requests are listed newest first with
// their attempt log, found by id, filtered by status class, pool and key,
// and paged back.
func TestConsoleRequestLog(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": {Status: 500}}})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("con-log", base, 2, "\t\t\tstrategy priority\n")), "")
	var ids []string
	for i := range 3 {
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprint("hello ", i), false))
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		ids = append(ids, resp.Header.Get("X-Request-Id"))
	}
	resp, _ := post(t, gw+"/v1/chat/completions", []byte(`{"model":"mock-gpt","messages":"nope"}`))
	if resp.StatusCode != 400 {
		t.Fatalf("bad request: %d", resp.StatusCode)
	}
	bad := resp.Header.Get("X-Request-Id")

	page := adminRequests(t, admin, "pool=con-log")
	if len(page.Requests) != 3 || page.Capacity != defaultRecentRequests {
		t.Fatalf("pool=con-log: %d requests (capacity %d), want the 3 served", len(page.Requests), page.Capacity)
	}
	for i, e := range page.Requests {
		if e.ID != ids[2-i] || e.Status != 200 || e.Pool != "con-log" || e.Model != "mock-gpt" || e.Dialect != "openai_chat" ||
			e.GatewayKey == "" || e.Tokens.Input == 0 || e.Tokens.Output == 0 || e.DurationMillis <= 0 {
			t.Errorf("request %d: %+v", i, e)
		}
		if i > 0 && e.Seq >= page.Requests[i-1].Seq {
			t.Errorf("not newest first: seq %d after %d", e.Seq, page.Requests[i-1].Seq)
		}
	}
	one := adminRequests(t, admin, "id="+url.QueryEscape(ids[0]))
	if len(one.Requests) != 1 {
		t.Fatalf("id=%s: %+v", ids[0], one.Requests)
	}
	at := one.Requests[0].Attempts
	if len(at) != 2 || at[0].Key != "k1" || at[0].Status != 500 || at[0].Outcome == "success" ||
		at[1].Key != "k2" || at[1].Status != 200 || at[1].Outcome != "success" || one.Requests[0].Key != "k2" {
		t.Fatalf("attempt log of %s: %+v", ids[0], at)
	}
	if e := adminRequests(t, admin, "status=4xx").Requests; len(e) == 0 || e[0].ID != bad || e[0].Status != 400 || e[0].Error == "" {
		t.Fatalf("status=4xx: %+v", e)
	}
	if e := adminRequests(t, admin, "status=error&pool=con-log").Requests; len(e) != 0 {
		t.Fatalf("status=error in con-log: %+v", e)
	}
	if e := adminRequests(t, admin, "q=MOCK-G&key=k2&limit=2").Requests; len(e) != 2 || e[0].ID != ids[2] {
		t.Fatalf("q=MOCK-G&key=k2&limit=2: %+v", e)
	}
	older := adminRequests(t, admin, fmt.Sprint("pool=con-log&before=", page.Requests[0].Seq))
	if len(older.Requests) != 2 || older.Requests[0].ID != ids[1] {
		t.Fatalf("paged back: %+v", older.Requests)
	}
	for _, q := range []string{"status=6xx", "limit=0", "before=x"} {
		if code, _ := adminDo(t, http.MethodGet, admin+"/llm_gateway/requests?"+q); code != 400 {
			t.Errorf("requests?%s: %d, want 400", q, code)
		}
	}
}

// TestConsolePoolSummary tells pacing (every key resting after a success)
// from trouble (every key rate limited) and counts the requests waiting
// for a key.
func TestConsolePoolSummary(t *testing.T) {
	_, base := mock(t, mockupstream.Config{
		Default: mockupstream.KeyBehavior{Latency: 400 * time.Millisecond},
		Keys: map[string]mockupstream.KeyBehavior{
			"mk-1": {Status: 429, RetryAfter: "120"}, "mk-2": {Status: 429, RetryAfter: "120"},
		},
	})
	_, fast := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, gatewayBlock(
		poolBlock("con-pace", fast, 2, "\t\t\tcooldown_after_success 30s\n\t\t\tmodels pace-model\n"),
		poolBlock("con-429", base, 2, "\t\t\tmodels trouble-model\n\t\t\tacquire_timeout 200ms\n")), "")
	for range 2 {
		if resp, b := post(t, gw+"/v1/chat/completions", chatBody("pace-model", "hi", false)); resp.StatusCode != 200 {
			t.Fatalf("pace: %d %s", resp.StatusCode, b)
		}
	}
	resp, _ := post(t, gw+"/v1/chat/completions", chatBody("trouble-model", "hi", false))
	if resp.StatusCode != 429 && resp.StatusCode != 503 {
		t.Fatalf("trouble: %d", resp.StatusCode)
	}
	views := map[string]poolView{}
	for _, pv := range adminPools(t, admin) {
		views[pv.Name] = pv
	}
	if pv := views["con-pace"]; pv.Ready || !pv.Pacing || !strings.HasPrefix(pv.Summary, "pacing: next key in ") || !strings.Contains(pv.Summary, "all 2 resting after a success") {
		t.Errorf("con-pace: ready %v pacing %v summary %q", pv.Ready, pv.Pacing, pv.Summary)
	}
	if pv := views["con-429"]; pv.Ready || pv.Pacing || !strings.HasPrefix(pv.Summary, "no key: all 2 rate limited") {
		t.Errorf("con-429: ready %v pacing %v summary %q", pv.Ready, pv.Pacing, pv.Summary)
	}
}

// TestConsoleWaiting counts the requests queued for a key while 12 wait.
func TestConsoleWaiting(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Latency: 300 * time.Millisecond}})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("con-wait", base, 1, "\t\t\tmax_concurrency_per_key 1\n\t\t\tacquire_timeout 30s\n")), "")
	var wg sync.WaitGroup
	for i := range 13 {
		wg.Go(func() {
			if resp, b := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprint("q", i), false)); resp.StatusCode != 200 {
				t.Errorf("request %d: %d %s", i, resp.StatusCode, b)
			}
		})
	}
	seen := 0
	eventually(t, 3*time.Second, "12 waiting", func() bool {
		for _, pv := range adminPools(t, admin) {
			if pv.Name == "con-wait" {
				seen = max(seen, pv.Waiting)
				if pv.Waiting == 12 && !strings.Contains(pv.Summary, "12 waiting") {
					t.Errorf("summary %q does not count the waiting requests", pv.Summary)
				}
			}
		}
		return seen == 12
	})
	wg.Wait()
	for _, pv := range adminPools(t, admin) {
		if pv.Name == "con-wait" && pv.Waiting != 0 {
			t.Errorf("waiting %d after all served", pv.Waiting)
		}
	}
}

// TestConsoleSessions lists the affinity pins per pool and unpins one.
func TestConsoleSessions(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("con-sess", base, 3, "\t\t\taffinity 10m\n")), "")
	var via string
	for range 3 {
		resp, b := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false), "X-Session-Id", "sess-abc")
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		via = strings.TrimPrefix(resp.Header.Get("X-Routed-Via"), "con-sess/")
	}
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/sessions?pool=con-sess")
	if code != 200 {
		t.Fatalf("sessions: %d %s", code, b)
	}
	s := gjson.GetBytes(b, `0.sessions.#(session=="h:sess-abc")`)
	if !s.Exists() || s.Get("key").Str != via || s.Get("hits").Int() != 3 || s.Get("expires_in_seconds").Int() < 590 {
		t.Fatalf("sessions: %s (served by %s)", b, via)
	}
	if code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/sessions/unpin?pool=con-sess&session=h:sess-abc"); code != 200 {
		t.Fatalf("unpin: %d %s", code, b)
	}
	if code, _ := adminDo(t, http.MethodPost, admin+"/llm_gateway/sessions/unpin?pool=con-sess&session=h:sess-abc"); code != 404 {
		t.Fatalf("second unpin: %d, want 404", code)
	}
	if code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/sessions/unpin?pool=con-sess"); code != 400 || !strings.Contains(string(b), "pool and session are required") {
		t.Fatalf("unpin without a session: %d %s, want 400", code, b)
	}
	if code, _ := adminDo(t, http.MethodPost, admin+"/llm_gateway/sessions/unpin?pool=nope&session=h:x"); code != 404 {
		t.Fatalf("unpin in an unknown pool: %d, want 404", code)
	}
	if _, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/sessions?pool=con-sess"); gjson.GetBytes(b, `0.sessions.#(session=="h:sess-abc")`).Exists() {
		t.Fatalf("still pinned: %s", b)
	}
}

// TestPlayground sends requests from the admin API through the gateway's
// own path, in each dialect, streamed and not, without a gateway key.
func TestPlayground(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("con-play", base, 1, "\t\t\tmodels mock-gpt\n")), "")
	// the answer the mock gives this prompt, through the gateway
	_, direct := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "say hello", false))
	want := gjson.GetBytes(direct, "choices.0.message.content").Str
	if want == "" {
		t.Fatalf("no text in %s", direct)
	}
	play := func(body string) (*http.Response, []byte) {
		resp, err := http.Post(admin+"/llm_gateway/playground", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		return resp, buf.Bytes()
	}
	resp, b := play(`{"model":"mock-gpt","dialect":"openai","prompt":"say hello"}`)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "choices.0.message.content").Str != want ||
		resp.Header.Get("X-Routed-Via") != "con-play/k1" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("openai: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	resp, b = play(`{"model":"mock-gpt","dialect":"anthropic","stream":true,"prompt":"say hello"}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("anthropic stream: %d %s", resp.StatusCode, b)
	}
	var text strings.Builder
	deltas := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && gjson.Get(d, "type").Str == "content_block_delta" {
			text.WriteString(gjson.Get(d, "delta.text").Str)
			deltas++
		}
	}
	if text.String() != want || deltas < 2 {
		t.Fatalf("anthropic stream text %q in %d deltas, want %q", text.String(), deltas, want)
	}
	resp, b = play(`{"model":"mock-gpt","dialect":"responses","prompt":"say hello"}`)
	if resp.StatusCode != 200 || gjson.GetBytes(b, "output.#(type==\"message\").content.0.text").Str != want {
		t.Fatalf("responses: %d %s", resp.StatusCode, b)
	}
	// a model no pool serves: the gateway's own 404, in the dialect asked
	if resp, b = play(`{"model":"nope","dialect":"anthropic","prompt":"x"}`); resp.StatusCode != 404 || gjson.GetBytes(b, "type").Str != "error" {
		t.Fatalf("unknown model: %d %s", resp.StatusCode, b)
	}
	for _, bad := range []string{`{"model":"mock-gpt","dialect":"klingon","prompt":"x"}`, `{"prompt":"x"}`, `nope`} {
		if resp, b := play(bad); resp.StatusCode != 400 {
			t.Errorf("%s: %d %s", bad, resp.StatusCode, b)
		}
	}
	page := adminRequests(t, admin, "gateway_key="+playgroundGatewayKey+"&pool=con-play")
	if len(page.Requests) != 3 || page.Requests[1].Stream != true || page.Requests[1].Dialect != "anthropic_messages" {
		t.Fatalf("playground requests in the log: %+v", page.Requests)
	}
	// the network cannot pose as the playground: no gateway key, 401
	if resp, _ := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "x", false), "Authorization", ""); resp.StatusCode != 401 {
		t.Fatalf("without a gateway key: %d", resp.StatusCode)
	}
}

// TestRecentRequestsOption sizes the request log from the Caddyfile and
// refuses a negative size at load.
func TestRecentRequestsOption(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\trecent_requests 2\n"+poolBlock("con-size", base, 1, "")+"\t}\n", "")
	for range 3 {
		if resp, b := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false)); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	if page := adminRequests(t, admin, ""); page.Capacity != 2 || len(page.Requests) != 2 || page.Total < 3 {
		t.Fatalf("capacity %d, %d kept, total %d; want 2, 2, >= 3", page.Capacity, len(page.Requests), page.Total)
	}
	err := loadCaddyfileErr(fmt.Sprintf("{\n\tadmin off\n}\nhttp://127.0.0.1:%d {\n\tllm_gateway {\n\t\tapi_key %s\n\t\trecent_requests -1\n%s\t}\n}\n",
		freePort(t), gatewayKey, poolBlock("con-bad", base, 1, "")))
	if err == nil || !strings.Contains(err.Error(), "recent_requests") {
		t.Fatalf("recent_requests -1: %v", err)
	}
}
