package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// liveConfig renders a whole Caddyfile for the reload tests: a real admin
// endpoint on aport (so that it survives every reload), the default grace
// period (old servers finish their requests), and one pool "name" whose
// keys are the mock keys mk-<i> (ids k<i>) for i in keys.
func liveConfig(aport, port int, base, name string, capPerKey int, keys []int, extraPools ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tadmin 127.0.0.1:%d\n\tpersist_config off\n}\nhttp://127.0.0.1:%d {\n", aport, port)
	b.WriteString("\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n")
	fmt.Fprintf(&b, "\t\tpool %s {\n", name)
	for _, i := range keys {
		fmt.Fprintf(&b, "\t\t\tkey mk-%d %s {\n\t\t\t\tid k%d\n\t\t\t}\n", i, base, i)
	}
	fmt.Fprintf(&b, "\t\t\tmax_concurrency_per_key %d\n\t\t}\n", capPerKey)
	for _, p := range extraPools {
		b.WriteString(p)
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// adaptJSON adapts a Caddyfile to Caddy's JSON config.
func adaptJSON(t testing.TB, cf string) []byte {
	t.Helper()
	out, warn, err := caddyconfig.GetAdapter("caddyfile").Adapt(caddyfile.Format([]byte(cf)), nil)
	if err != nil {
		t.Fatalf("adapting Caddyfile: %v\n%s", err, cf)
	}
	for _, w := range warn {
		t.Logf("adapt warning: %s", w.String())
	}
	return out
}

// adminClient talks to the admin endpoint without keep-alive: every config
// load replaces the admin server, and a pooled connection to the old one
// could be closed under the next request.
var adminClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// adminSend sends body to the admin endpoint and returns status and body.
func adminSend(method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := adminClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// adminKeys returns GET /llm_gateway/pools?pool=name as key views by id.
func adminKeys(admin, pool string) (map[string]keyView, error) {
	code, b, err := adminSend(http.MethodGet, admin+"/llm_gateway/pools?pool="+pool, nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET pools: %d %s", code, b)
	}
	var pools []poolView
	if err := json.Unmarshal(b, &pools); err != nil {
		return nil, fmt.Errorf("GET pools: %v: %s", err, b)
	}
	out := map[string]keyView{}
	for _, p := range pools {
		for _, k := range p.Keys {
			out[k.ID] = k
		}
	}
	return out, nil
}

// sdkCounter wraps the SDK's transport and counts what the SDK did on the
// wire: attempts, retries (X-Stainless-Retry-Count above 0), transport
// errors and non-2xx answers.
type sdkCounter struct {
	next http.RoundTripper

	attempts, retries atomic.Int64
	mu                sync.Mutex
	errs              map[string]int // transport error text -> count
	statuses          map[int]int    // non-2xx status -> count
}

func (c *sdkCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.attempts.Add(1)
	if n := r.Header.Get("X-Stainless-Retry-Count"); n != "" && n != "0" {
		c.retries.Add(1)
	}
	resp, err := c.next.RoundTrip(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.errs[err.Error()]++
	case resp.StatusCode/100 != 2:
		c.statuses[resp.StatusCode]++
	}
	return resp, err
}

// holdLastWrite serves next but sends the last write of every answer only
// after next has returned. The mock counts a request in flight until its
// handler returns, which is a moment after the last byte left, so without
// this the gateway may free the key, and a waiting request be admitted on
// it, while the mock still counts the finished one: its MaxInFlight would
// overshoot the cap by one under a saturating load, a measurement artefact.
// With the last write held back, the mock's count is exact.
func holdLastWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hw := &holdBackWriter{ResponseWriter: w}
		next.ServeHTTP(hw, r)
		hw.release()
	})
}

// holdBackWriter delays each write until the next one (or release), so
// the final bytes of an answer leave only after release.
type holdBackWriter struct {
	http.ResponseWriter
	held []byte
}

func (h *holdBackWriter) Write(b []byte) (int, error) {
	if h.held != nil {
		if _, err := h.ResponseWriter.Write(h.held); err != nil {
			return 0, err
		}
	}
	h.held = append(h.held[:0], b...)
	return len(b), nil
}

func (h *holdBackWriter) Flush() {
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (h *holdBackWriter) release() {
	if h.held != nil {
		_, _ = h.ResponseWriter.Write(h.held)
		h.held = nil
	}
	h.Flush()
}

// TestReloadUnderLoad is the acceptance test of operating the gateway live:
// 8 SDK clients send chat completions (streaming and not) without pause
// for 20 s while the config is reloaded 20 times through the admin API,
// alternating between config A (keys k1..k4, max_concurrency_per_key 2)
// and config B (k3 removed, max_concurrency_per_key 3). k4 is cooling (a
// 429 with Retry-After 300) from the start.
func TestReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test with 20 reloads over 20 s; skipped with -short")
	}
	const (
		clients  = 8
		reloads  = 20
		loadTime = 20 * time.Second
		capA     = 2
		capB     = 3
	)
	m := mockupstream.New(mockupstream.Config{
		Default: mockupstream.KeyBehavior{Latency: 15 * time.Millisecond, TokensPerSecond: 400},
		Keys:    map[string]mockupstream.KeyBehavior{"mk-4": {Status: 429, RetryAfter: "300"}},
	})
	upstream := httptest.NewServer(holdLastWrite(m))
	t.Cleanup(upstream.Close)
	base := upstream.URL + "/v1"
	port, aport := freePort(t), freePort(t)
	gw := fmt.Sprintf("http://127.0.0.1:%d", port)
	admin := fmt.Sprintf("http://127.0.0.1:%d", aport)
	cfgA := liveConfig(aport, port, base, "live", capA, []int{1, 2, 3, 4})
	cfgB := liveConfig(aport, port, base, "live", capB, []int{1, 2, 4})
	jsonA, jsonB := adaptJSON(t, cfgA), adaptJSON(t, cfgB)
	loadCaddyfile(t, cfgA)
	t.Cleanup(func() { _ = caddy.Stop() })

	counter := &sdkCounter{next: http.DefaultTransport.(*http.Transport).Clone(), errs: map[string]int{}, statuses: map[int]int{}}
	client := openai.NewClient(option.WithBaseURL(gw+"/v1"), option.WithAPIKey(gatewayKey),
		option.WithHTTPClient(&http.Client{Transport: counter}))

	// one chat through the SDK; returns an error unless the answer is right
	chat := func(ctx context.Context, prompt string, stream bool) error {
		p := openai.ChatCompletionNewParams{Model: "mock-gpt", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
		want := mockupstream.Text(prompt)
		if !stream {
			res, err := client.Chat.Completions.New(ctx, p)
			if err != nil {
				return err
			}
			if len(res.Choices) != 1 || res.Choices[0].Message.Content != want {
				return fmt.Errorf("answer %+v, want %q", res.Choices, want)
			}
			return nil
		}
		st := client.Chat.Completions.NewStreaming(ctx, p)
		defer st.Close()
		acc := openai.ChatCompletionAccumulator{}
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want {
			return fmt.Errorf("streamed answer %+v, want %q", acc.Choices, want)
		}
		return nil
	}

	// put k4 into a long cooldown before anything else: the gateway meets
	// its 429 (Retry-After 300) and serves the request with another key
	for i := 0; m.Stats("mk-4").Requests == 0; i++ {
		if i == 8 {
			t.Fatal("k4 never picked")
		}
		if err := chat(context.Background(), fmt.Sprintf("warm up %d", i), false); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	if k4 := keyStatus(t, "live", "k4"); k4.State != "cooling" || k4.Reason != "rate_limited" || k4.SecondsLeft < 290 {
		t.Fatalf("k4 after its 429: %+v", k4)
	}

	// the clients
	var (
		stop     atomic.Bool
		served   atomic.Int64
		streamed atomic.Int64
		failMu   sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				prompt := fmt.Sprintf("client %d request %d", c, n)
				stream := (c+n)%2 == 0
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				err := chat(ctx, prompt, stream)
				cancel()
				if err != nil {
					failMu.Lock()
					failures = append(failures, fmt.Sprintf("%s (stream %v): %v", prompt, stream, err))
					failMu.Unlock()
					continue
				}
				served.Add(1)
				if stream {
					streamed.Add(1)
				}
			}
		})
	}
	stopClients := sync.OnceFunc(func() { stop.Store(true); wg.Wait() })
	t.Cleanup(stopClients) // runs before the mock and Caddy go away

	// the reloads, spread over the load period; odd ones load B (which
	// removes k3), even ones A; one of them goes through PATCH /config/apps
	start := time.Now()
	const patchAt = 7
	var (
		k3Base, k3Stragglers int64 // mk-3 requests once a removing reload settled; arrived after it returned
		removing             bool
		reloadMax            time.Duration
	)
	for i := 1; i <= reloads; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * loadTime / (reloads + 1))))
		if removing { // end of a B period: k3 got nothing since it was removed
			if n := m.Stats("mk-3").Requests; n != k3Base {
				t.Errorf("reload %d: the removed key k3 got %d requests during config B", i-1, n-k3Base)
			}
		}
		cfg, wantCap, wantKeys := jsonA, capA, 4
		if i%2 == 1 {
			cfg, wantCap, wantKeys = jsonB, capB, 3
		}
		t0 := time.Now()
		var code int
		var body []byte
		var err error
		if i == patchAt {
			apps := gjson.GetBytes(cfg, "apps").Raw
			code, body, err = adminSend(http.MethodPatch, admin+"/config/apps", []byte(apps))
		} else {
			code, body, err = adminSend(http.MethodPost, admin+"/load", cfg)
		}
		took := time.Since(t0)
		reloadMax = max(reloadMax, took)
		k3AtReturn := m.Stats("mk-3").Requests
		if err != nil || code != http.StatusOK {
			t.Errorf("reload %d: %d %s %v", i, code, body, err)
			break
		}
		// right after the reload: k4 is still cooling, and the pool has
		// the new keys and cap
		keys, err := adminKeys(admin, "live")
		if err != nil {
			t.Errorf("reload %d: %v", i, err)
			break
		}
		k4 := keys["k4"]
		if k4.State != "cooling" || k4.Reason != "rate_limited" || k4.SecondsLeft < 250 {
			t.Errorf("reload %d: k4 no longer cooling: %+v", i, k4)
		}
		if len(keys) != wantKeys || keys["k1"].Cap != wantCap || keys["k2"].Cap != wantCap {
			t.Errorf("reload %d: want %d keys with cap %d, got %+v", i, wantKeys, wantCap, keys)
		}
		if _, ok := keys["k3"]; ok != (wantKeys == 4) {
			t.Errorf("reload %d: k3 present %v in config with %d keys", i, ok, wantKeys)
		}
		removing = i%2 == 1
		if removing {
			// requests leased on k3 before it was removed reach the mock
			// and finish
			deadline := time.Now().Add(5 * time.Second)
			for m.Stats("mk-3").InFlight != 0 && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			k3Base = m.Stats("mk-3").Requests
			k3Stragglers += k3Base - k3AtReturn
		}
		t.Logf("reload %d (%s) took %v, served so far %d", i, map[bool]string{true: "B", false: "A"}[i%2 == 1], took.Round(time.Millisecond), served.Load())
	}
	time.Sleep(time.Until(start.Add(loadTime)))
	if removing {
		if n := m.Stats("mk-3").Requests; n != k3Base {
			t.Errorf("last B period: the removed key k3 got %d requests", n-k3Base)
		}
	}
	stopClients()
	elapsed := time.Since(start)

	// every call of every client got its right answer
	for i, f := range failures {
		if i == 10 {
			t.Errorf("... %d failures in all", len(failures))
			break
		}
		t.Errorf("failed call: %s", f)
	}

	// in-flight counts are back to 0, in the gateway and at the mock
	eventually(t, 2*time.Second, "gateway in-flight back to 0", func() bool {
		for _, s := range poolFor(t, "live").Snapshot() {
			if s.InFlight != 0 {
				return false
			}
		}
		return true
	})
	var mockOK int64
	perKey := map[string]mockupstream.KeyStats{}
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("mk-%d", i)
		st := m.Stats(id)
		perKey[id] = st
		mockOK += st.OK
		if st.InFlight != 0 {
			t.Errorf("%s: %d still in flight at the mock", id, st.InFlight)
		}
	}
	// the mock never saw more in flight per key than the larger configured
	// cap; k3 exists only in config A (cap 2); k4 was never let through
	for _, id := range []string{"mk-1", "mk-2"} {
		if st := perKey[id]; st.MaxInFlight > capB || st.OK == 0 {
			t.Errorf("%s: max in flight %d (cap %d), ok %d", id, st.MaxInFlight, capB, st.OK)
		}
	}
	if st := perKey["mk-3"]; st.MaxInFlight > capA || st.OK == 0 {
		t.Errorf("mk-3: max in flight %d (cap %d), ok %d", st.MaxInFlight, capA, st.OK)
	}
	if st := perKey["mk-4"]; st.Requests != 1 || st.MaxInFlight != 0 {
		t.Errorf("mk-4 (cooling all along): %d requests, max in flight %d", st.Requests, st.MaxInFlight)
	}
	if k4 := keyStatus(t, "live", "k4"); k4.State != "cooling" || k4.SecondsLeft < 250 {
		t.Errorf("k4 at the end: %+v", k4)
	}
	if s := served.Load(); s < 200 {
		t.Errorf("only %d calls served in %v", s, elapsed)
	}

	counter.mu.Lock()
	if len(counter.statuses) > 0 {
		// the SDK retries 5xx and 429 too: none of that may hide here
		t.Errorf("the gateway answered SDK attempts with %v", counter.statuses)
	}
	errs := make([]string, 0, len(counter.errs))
	for e, n := range counter.errs {
		errs = append(errs, fmt.Sprintf("%dx %s", n, e))
	}
	sort.Strings(errs)
	statuses := fmt.Sprint(counter.statuses)
	counter.mu.Unlock()
	t.Logf("%d calls served (%d streamed) by %d clients in %v, %d failed; %d reloads (slowest %v)",
		served.Load(), streamed.Load(), clients, elapsed.Round(time.Millisecond), len(failures), reloads, reloadMax.Round(time.Millisecond))
	t.Logf("SDK: %d attempts, %d retries; transport errors %v; non-2xx %s", counter.attempts.Load(), counter.retries.Load(), errs, statuses)
	t.Logf("mock: ok %d in all; max in flight mk-1 %d, mk-2 %d, mk-3 %d, mk-4 %d; mk-3 requests arriving after a removing reload returned (leased before): %d",
		mockOK, perKey["mk-1"].MaxInFlight, perKey["mk-2"].MaxInFlight, perKey["mk-3"].MaxInFlight, perKey["mk-4"].MaxInFlight, k3Stragglers)
}

// TestReloadRejectsInvalidConfig: an invalid config pushed to POST /load
// gets a 400 that says what is wrong, and the running config keeps serving
// unchanged.
func TestReloadRejectsInvalidConfig(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	port, aport := freePort(t), freePort(t)
	gw := fmt.Sprintf("http://127.0.0.1:%d", port)
	admin := fmt.Sprintf("http://127.0.0.1:%d", aport)
	loadCaddyfile(t, liveConfig(aport, port, base, "keep", 2, []int{1, 2, 3}))
	t.Cleanup(func() { _ = caddy.Stop() })

	_, before, err := adminSend(http.MethodGet, admin+"/config/", nil)
	if err != nil {
		t.Fatal(err)
	}
	poolChanged := func() string {
		keys, err := adminKeys(admin, "keep")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 3 || keys["k1"].Cap != 2 || keys["k2"].Cap != 2 || keys["k3"].Cap != 2 {
			ids := make([]string, 0, len(keys))
			for id, k := range keys {
				ids = append(ids, fmt.Sprintf("%s cap %d", id, k.Cap))
			}
			sort.Strings(ids)
			return fmt.Sprintf("the running pool changed to %v, want k1, k2, k3 with cap 2", ids)
		}
		return ""
	}
	serves := func(what string) {
		t.Helper()
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "still there", false))
		if resp.StatusCode != http.StatusOK || gjson.GetBytes(body, "choices.0.message.content").String() != mockupstream.Text("still there") {
			t.Fatalf("after %s: %d %s", what, resp.StatusCode, body)
		}
		code, now, err := adminSend(http.MethodGet, admin+"/config/", nil)
		if err != nil || code != http.StatusOK || !bytes.Equal(now, before) {
			t.Fatalf("after %s: GET /config/ changed: %d %v\n%s", what, code, err, now)
		}
		if changed := poolChanged(); changed != "" {
			t.Fatalf("after %s: %s", what, changed)
		}
	}
	serves("the first load")

	// the base URL placeholder is swapped after adapting, so that the
	// Caddyfile adapter does not stand in the way
	const placeholder = "http://placeholder.invalid/v1"
	bad := func(keys []int, extra ...string) []byte {
		j := adaptJSON(t, liveConfig(aport, port, placeholder, "keep", 2, keys, extra...))
		return bytes.ReplaceAll(j, []byte(placeholder), []byte("ftp://x"))
	}
	cases := []struct {
		name string
		body []byte
		want []string
	}{
		{"key with base_url ftp://x", bad([]int{1, 2, 3}), []string{`pool "keep"`, "key k1", `base_url "ftp://x"`, "http(s)"}},
		{"malformed JSON", []byte(`{"apps":{"http":`), []string{"unexpected"}},
	}
	for _, c := range cases {
		code, body, err := adminSend(http.MethodPost, admin+"/load", c.body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", c.name, code, body)
		}
		msg := gjson.GetBytes(body, "error").String()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: answer does not mention %q: %s", c.name, w, body)
			}
		}
		t.Logf("%s: %d %s", c.name, code, msg)
		serves(c.name)
	}
	if n := m.Stats("mk-1").OK + m.Stats("mk-2").OK + m.Stats("mk-3").OK; n != 3 {
		t.Fatalf("mock served %d, want 3", n)
	}

	// a rejected config must not leave part of itself in the live pools:
	// here pool "keep" would lose k3 and change its cap, and only a later
	// pool of the same config is invalid
	t.Run("second pool invalid", func(t *testing.T) {
		good := adaptJSON(t, liveConfig(aport, port, base, "keep", 5, []int{1, 2},
			fmt.Sprintf("\t\tpool broken {\n\t\t\tmodels other-*\n\t\t\tkey mk-9 %s\n\t\t}\n", placeholder)))
		partial := bytes.ReplaceAll(good, []byte(placeholder), []byte("ftp://x"))
		code, body, err := adminSend(http.MethodPost, admin+"/load", partial)
		if err != nil || code != http.StatusBadRequest || !strings.Contains(gjson.GetBytes(body, "error").String(), `pool "broken": key #1: base_url "ftp://x"`) {
			t.Fatalf("config with a broken second pool: %d %s %v", code, body, err)
		}
		resp, rb := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "still there", false))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("after a config whose second pool is invalid: %d %s", resp.StatusCode, rb)
		}
		if code, now, err := adminSend(http.MethodGet, admin+"/config/", nil); err != nil || code != http.StatusOK || !bytes.Equal(now, before) {
			t.Fatalf("after a config whose second pool is invalid: GET /config/ changed: %d %v\n%s", code, err, now)
		}
		if changed := poolChanged(); changed != "" {
			// Known issue: Provision reconciles pool "keep" into the live
			// registry (attachPool -> Pool.Reconcile) before the later pool
			// fails, and nothing undoes it when Caddy rejects the config.
			t.Fatalf("a rejected config was partly applied: after a config whose second pool is invalid, %s", changed)
		}
	})
}
