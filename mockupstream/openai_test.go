package mockupstream

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestChatNonStream(t *testing.T) {
	s, ts := start(t, Config{})
	st, h, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k1", chatBody("hello  big\nworld", ""), "X-Trace", "abc")
	if st != 200 {
		t.Fatalf("status %d: %s", st, b)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content-type %q", ct)
	}
	m := decode(t, b)
	if id, _ := m["id"].(string); !strings.HasPrefix(id, "chatcmpl-") {
		t.Errorf("id %q", id)
	}
	if m["object"] != "chat.completion" || m["model"] != "gpt-test" {
		t.Errorf("object/model: %v %v", m["object"], m["model"])
	}
	if _, ok := m["created"].(float64); !ok {
		t.Errorf("created missing")
	}
	want := "Mock answer to: hello big world"
	if Text("hello  big\nworld") != want {
		t.Fatalf("Text = %q", Text("hello  big\nworld"))
	}
	if got := path(m, "choices", 0, "message", "content"); got != want {
		t.Errorf("content %q", got)
	}
	if path(m, "choices", 0, "message", "role") != "assistant" || path(m, "choices", 0, "finish_reason") != "stop" {
		t.Errorf("role/finish: %s", b)
	}
	// prompt: "be brief" + "hello big world" = 5 words; completion = 6 chunks.
	if path(m, "usage", "prompt_tokens") != 5.0 || path(m, "usage", "completion_tokens") != 6.0 || path(m, "usage", "total_tokens") != 11.0 {
		t.Errorf("usage %v", m["usage"])
	}
	ks := s.Stats("k1")
	if ks.Requests != 1 || ks.OK != 1 || ks.InFlight != 0 || ks.MaxInFlight != 1 {
		t.Errorf("stats %+v", ks)
	}
	if ks.LastModel != "gpt-test" || string(ks.LastBody) != chatBody("hello  big\nworld", "") || ks.LastHeaders.Get("X-Trace") != "abc" {
		t.Errorf("last request not recorded: %q %q %v", ks.LastModel, ks.LastBody, ks.LastHeaders)
	}
	// Path without /v1 and with a query string; x-api-key identifies the key.
	st, _, b = mustDo(t, "POST", ts.URL+"/chat/completions?x=1", "", chatBody("", ""), "x-api-key", "k2")
	if st != 200 || path(decode(t, b), "choices", 0, "message", "content") != "Mock answer." {
		t.Errorf("no-prefix path: %d %s", st, b)
	}
	if s.Stats("k2").OK != 1 {
		t.Errorf("x-api-key not used")
	}
}

func TestTextAndWords(t *testing.T) {
	long := strings.Repeat("word ", 30)
	got := Text(long)
	if !strings.HasSuffix(got, "...") || len(Words(got)) != 3+24 {
		t.Errorf("long text %q (%d words)", got, len(Words(got)))
	}
	w := Words("Mock answer to: hi")
	if strings.Join(w, "|") != "Mock |answer |to: |hi" {
		t.Errorf("words %q", w)
	}
	if ToolText("42") != "Tool said: 42" {
		t.Errorf("ToolText %q", ToolText("42"))
	}
	if Text(strings.Repeat("x", 500)) != "Mock answer to: "+strings.Repeat("x", 160)+"..." {
		t.Errorf("rune cap")
	}
}

func TestChatStream(t *testing.T) {
	s, ts := start(t, Config{})
	for _, include := range []bool{true, false} {
		extra := `"stream":true`
		if include {
			extra += `,"stream_options":{"include_usage":true}`
		}
		resp, err := do(t, nil, "POST", ts.URL+"/v1/chat/completions", "k", chatBody("one two three", extra))
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("content-type %q", ct)
		}
		evs := readSSE(t, resp.Body)
		resp.Body.Close()
		if evs[len(evs)-1].Data != "[DONE]" {
			t.Fatalf("last event %q", evs[len(evs)-1].Data)
		}
		evs = evs[:len(evs)-1]
		first := decode(t, []byte(evs[0].Data))
		if first["object"] != "chat.completion.chunk" || path(first, "choices", 0, "delta", "role") != "assistant" || path(first, "choices", 0, "delta", "content") != "" {
			t.Errorf("first chunk %s", evs[0].Data)
		}
		id := first["id"]
		var text strings.Builder
		words := Words(Text("one two three"))
		for i, w := range words {
			m := decode(t, []byte(evs[1+i].Data))
			if m["id"] != id || m["model"] != "gpt-test" {
				t.Errorf("chunk id/model %s", evs[1+i].Data)
			}
			c, _ := path(m, "choices", 0, "delta", "content").(string)
			if c != w {
				t.Errorf("chunk %d = %q want %q", i, c, w)
			}
			text.WriteString(c)
		}
		if text.String() != Text("one two three") {
			t.Errorf("text %q", text.String())
		}
		fin := decode(t, []byte(evs[1+len(words)].Data))
		if path(fin, "choices", 0, "finish_reason") != "stop" || len(path(fin, "choices", 0, "delta").(map[string]any)) != 0 {
			t.Errorf("finish chunk %s", evs[1+len(words)].Data)
		}
		n := 2 + len(words)
		if include {
			n++
			u := decode(t, []byte(evs[len(evs)-1].Data))
			if cs, ok := u["choices"].([]any); !ok || len(cs) != 0 {
				t.Errorf("usage chunk choices %v", u["choices"])
			}
			if path(u, "usage", "completion_tokens") != float64(len(words)) || path(u, "usage", "prompt_tokens") != 5.0 {
				t.Errorf("usage chunk %s", evs[len(evs)-1].Data)
			}
		}
		if len(evs) != n {
			t.Errorf("include_usage=%v: %d events, want %d", include, len(evs), n)
		}
	}
	ks := s.Stats("k")
	if ks.OK != 2 || ks.FirstEventSentAt.IsZero() || ks.LastEventSentAt.Before(ks.FirstEventSentAt) {
		t.Errorf("stats %+v", ks)
	}
}

func TestConcurrencyCap(t *testing.T) {
	s, ts := start(t, Config{Keys: map[string]KeyBehavior{"capped": {MaxConcurrency: 2, Latency: 300 * time.Millisecond}}})
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			st, _, _ := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "capped", chatBody("hi", ""))
			codes[i] = st
		})
	}
	eventually(t, "two in flight", func() bool { return s.Stats("capped").InFlight == 2 })
	st, h, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "capped", chatBody("hi", ""))
	if st != 429 || h.Get("Retry-After") != "1" || h.Get("Retry-After-Ms") != "100" {
		t.Fatalf("over cap: %d %v %s", st, h, b)
	}
	m := decode(t, b)
	if path(m, "error", "code") != "rate_limit_exceeded" {
		t.Errorf("body %s", b)
	}
	if got := s.Stats("capped").InFlight; got != 2 {
		t.Errorf("rejected request counted in flight: %d", got)
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Errorf("admitted requests: %v", codes)
	}
	ks := s.Stats("capped")
	if ks.Requests != 3 || ks.OK != 2 || ks.RateLimited != 1 || ks.MaxInFlight != 2 || ks.InFlight != 0 {
		t.Errorf("stats %+v", ks)
	}
}

func TestCooldown(t *testing.T) {
	s, ts := start(t, Config{Keys: map[string]KeyBehavior{
		"cool":  {Cooldown: 200 * time.Millisecond},
		"long":  {Cooldown: 2500 * time.Millisecond},
		"tiny":  {Cooldown: time.Millisecond / 2},
		"other": {},
	}})
	url := ts.URL + "/v1/chat/completions"
	if st, _, b := mustDo(t, "POST", url, "cool", chatBody("a", "")); st != 200 {
		t.Fatalf("first: %d %s", st, b)
	}
	finished := time.Now()
	st, h, b := mustDo(t, "POST", url, "cool", chatBody("a", ""))
	if st != 429 {
		t.Fatalf("during cooldown: %d %s", st, b)
	}
	if h.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", h.Get("Retry-After"))
	}
	ms, err := strconv.Atoi(h.Get("Retry-After-Ms"))
	if err != nil || ms < 1 || ms > 200 || ms < 200-int(time.Since(finished)/time.Millisecond)-5 {
		t.Errorf("retry-after-ms %q (elapsed %v)", h.Get("Retry-After-Ms"), time.Since(finished))
	}
	if path(decode(t, b), "error", "code") != "rate_limit_exceeded" {
		t.Errorf("body %s", b)
	}
	// The rejection did not restart the window: right after it ends we pass.
	time.Sleep(time.Until(finished.Add(210 * time.Millisecond)))
	if st, _, b := mustDo(t, "POST", url, "cool", chatBody("a", "")); st != 200 {
		t.Fatalf("after cooldown: %d %s", st, b)
	}
	ks := s.Stats("cool")
	if ks.OK != 2 || ks.RateLimited != 1 || ks.Requests != 3 {
		t.Errorf("stats %+v", ks)
	}

	mustDo(t, "POST", url, "long", chatBody("a", ""))
	_, h, _ = mustDo(t, "POST", url, "long", chatBody("a", ""))
	ms, _ = strconv.Atoi(h.Get("Retry-After-Ms"))
	if h.Get("Retry-After") != "3" || ms <= 2000 || ms > 2500 {
		t.Errorf("long cooldown headers: %q %q", h.Get("Retry-After"), h.Get("Retry-After-Ms"))
	}
	if until := s.Stats("long").CooldownUntil; time.Until(until) < 2*time.Second {
		t.Errorf("CooldownUntil %v", until)
	}
	s.ClearCooldowns()
	if st, _, _ := mustDo(t, "POST", url, "long", chatBody("a", "")); st != 200 {
		t.Errorf("after ClearCooldowns: %d", st)
	}
	// Other keys are unaffected.
	if st, _, _ := mustDo(t, "POST", url, "other", chatBody("a", "")); st != 200 {
		t.Errorf("other key: %d", st)
	}
}

func TestStatusKnobs(t *testing.T) {
	s, ts := start(t, Config{})
	cases := []struct {
		status      int
		oaType      string
		oaCode      any
		anthType    string
		retryAfter  string
		wantRetryAf string
	}{
		{401, "invalid_request_error", "invalid_api_key", "authentication_error", "", ""},
		{402, "insufficient_quota", "insufficient_quota", "billing_error", "", ""},
		{403, "request_forbidden", "unsupported_country_region_territory", "permission_error", "", ""},
		{404, "invalid_request_error", "model_not_found", "not_found_error", "", ""},
		{429, "requests", "rate_limit_exceeded", "rate_limit_error", "", "1"},
		{429, "requests", "rate_limit_exceeded", "rate_limit_error", "17", "17"},
		{500, "server_error", nil, "api_error", "", ""},
		{503, "service_unavailable_error", "server_is_overloaded", "overloaded_error", "", ""},
		{529, "server_error", "server_is_overloaded", "overloaded_error", "", ""},
	}
	for _, c := range cases {
		key := "s" + strconv.Itoa(c.status) + c.retryAfter
		s.SetKey(key, KeyBehavior{Status: c.status, RetryAfter: c.retryAfter})
		st, h, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", key, chatBody("x", ""))
		m := decode(t, b)
		if st != c.status || path(m, "error", "type") != c.oaType || path(m, "error", "code") != c.oaCode || path(m, "error", "message") == "" {
			t.Errorf("openai %d: %d %s", c.status, st, b)
		}
		if h.Get("Retry-After") != c.wantRetryAf {
			t.Errorf("openai %d: Retry-After %q", c.status, h.Get("Retry-After"))
		}
		st, _, b = mustDo(t, "POST", ts.URL+"/v1/messages", "", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, "x-api-key", key)
		m = decode(t, b)
		if st != c.status || m["type"] != "error" || path(m, "error", "type") != c.anthType || !strings.HasPrefix(m["request_id"].(string), "req_") {
			t.Errorf("anthropic %d: %d %s", c.status, st, b)
		}
		ks := s.Stats(key)
		if c.status == 429 {
			if ks.RateLimited != 2 || ks.InFlight != 0 || ks.MaxInFlight != 0 {
				t.Errorf("429 stats %+v", ks)
			}
		} else if ks.Failed != 2 {
			t.Errorf("%d stats %+v", c.status, ks)
		}
	}
	// 404 names the requested model.
	_, _, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "s404", chatBody("x", ""))
	if msg := path(decode(t, b), "error", "message").(string); !strings.Contains(msg, "`gpt-test`") {
		t.Errorf("404 message %q", msg)
	}
	// Models listing honours Status too.
	if st, _, _ := mustDo(t, "GET", ts.URL+"/v1/models", "s401", ""); st != 401 {
		t.Errorf("models with Status 401: %d", st)
	}
}

func TestFailAndResetSeeded(t *testing.T) {
	run := func() []int {
		_, ts := start(t, Config{Seed: 42, Default: KeyBehavior{FailRate: 0.5, FailStatus: 503}})
		var out []int
		for range 30 {
			st, _, _ := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "f", chatBody("x", ""))
			out = append(out, st)
		}
		return out
	}
	a, b := run(), run()
	fails := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("not deterministic at %d: %v vs %v", i, a, b)
		}
		if a[i] == 503 {
			fails++
		} else if a[i] != 200 {
			t.Fatalf("unexpected status %d", a[i])
		}
	}
	if fails < 5 || fails > 25 {
		t.Errorf("fail count %d of 30 for rate 0.5", fails)
	}

	s, ts := start(t, Config{Seed: 7, Keys: map[string]KeyBehavior{"r": {ResetRate: 1}}})
	client := &http.Client{Transport: &http.Transport{}}
	req, _ := http.NewRequest("POST", ts.URL+"/v1/chat/completions", strings.NewReader(chatBody("x", "")))
	req.Header.Set("Authorization", "Bearer r")
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("reset: got status %d, want a transport error", resp.StatusCode)
	}
	eventually(t, "reset handler done", func() bool { return s.Stats("r").InFlight == 0 })
	ks := s.Stats("r")
	if ks.Resets != 1 || ks.Requests != 1 || ks.OK != 0 || ks.InFlight != 0 {
		t.Errorf("reset stats %+v", ks)
	}
}

func TestLatencyAndCancel(t *testing.T) {
	s, ts := start(t, Config{Keys: map[string]KeyBehavior{
		"slow":   {Latency: 60 * time.Millisecond},
		"slower": {Latency: 2 * time.Second},
		"paced":  {TokensPerSecond: 100},
	}})
	t0 := time.Now()
	if st, _, _ := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "slow", chatBody("x", "")); st != 200 {
		t.Fatal(st)
	}
	if d := time.Since(t0); d < 60*time.Millisecond {
		t.Errorf("latency not applied: %v", d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	_, err := do(t, ctx, "POST", ts.URL+"/v1/chat/completions", "slower", chatBody("x", ""))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline error, got %v", err)
	}
	eventually(t, "cancel during latency counted", func() bool { return s.Stats("slower").Canceled == 1 })
	// Canceled is counted before the handler returns and frees the slot
	eventually(t, "slot freed", func() bool { return s.Stats("slower").InFlight == 0 })
	if ks := s.Stats("slower"); ks.OK != 0 || ks.InFlight != 0 {
		t.Errorf("stats %+v", ks)
	}

	// Mid-stream: read two events, then go away.
	ctx2, cancel2 := context.WithCancel(context.Background())
	resp, err := do(t, ctx2, "POST", ts.URL+"/v1/chat/completions", "paced", chatBody(strings.Repeat("w ", 20), `"stream":true`))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	newlines := 0
	for newlines < 4 {
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		if buf[0] == '\n' {
			newlines++
		}
	}
	cancel2()
	resp.Body.Close()
	eventually(t, "mid-stream cancel counted", func() bool { return s.Stats("paced").Canceled == 1 })
	eventually(t, "slot freed", func() bool { return s.Stats("paced").InFlight == 0 })
	if ks := s.Stats("paced"); ks.OK != 0 || ks.InFlight != 0 {
		t.Errorf("stats %+v", ks)
	}
}

func TestPacing(t *testing.T) {
	const tps = 50 // 20 ms per content event
	s, ts := start(t, Config{Default: KeyBehavior{TokensPerSecond: tps}})
	msg := "a b c d e f"
	t0 := time.Now()
	resp, err := do(t, nil, "POST", ts.URL+"/v1/chat/completions", "p", chatBody(msg, `"stream":true`))
	if err != nil {
		t.Fatal(err)
	}
	evs := readSSE(t, resp.Body)
	resp.Body.Close()
	n := len(Words(Text(msg)))
	if len(evs) != n+3 {
		t.Fatalf("%d events", len(evs))
	}
	// Arrival can only be later than sending, so lower bounds are safe even
	// on a loaded machine.
	if d := evs[n].At.Sub(t0); d < time.Duration(n)*20*time.Millisecond || d > time.Duration(n)*200*time.Millisecond {
		t.Errorf("last content event after %v for %d events at %d/s", d, n, tps)
	}
	if d := evs[1].At.Sub(t0); d < 20*time.Millisecond {
		t.Errorf("first content event after %v, want >= 20ms", d)
	}
	ks := s.Stats("p")
	// Server side: role chunk first, then n paced content events.
	if d := ks.LastEventSentAt.Sub(ks.FirstEventSentAt); d < time.Duration(n)*20*time.Millisecond {
		t.Errorf("event timestamps span %v", d)
	}
}

func TestRoutingAndErrors(t *testing.T) {
	s, ts := start(t, Config{Model: "mock-a", Models: []string{"mock-b"}})
	st, _, b := mustDo(t, "GET", ts.URL+"/v1/models", "k", "")
	m := decode(t, b)
	if st != 200 || m["object"] != "list" || path(m, "data", 0, "id") != "mock-a" || path(m, "data", 1, "id") != "mock-b" ||
		path(m, "data", 0, "object") != "model" || path(m, "data", 0, "owned_by") != "mock" || path(m, "data", 0, "created") == nil {
		t.Errorf("models: %d %s", st, b)
	}
	st, _, b = mustDo(t, "GET", ts.URL+"/models/whatever", "k", "")
	if st != 200 || decode(t, b)["id"] != "whatever" {
		t.Errorf("model: %d %s", st, b)
	}
	st, _, _ = mustDo(t, "POST", ts.URL+"/upstream-a/v1/chat/completions", "p", chatBody("x", ""))
	if st != 200 {
		t.Errorf("prefixed path: %d", st)
	}
	st, _, b = mustDo(t, "POST", ts.URL+"/v1/nope", "k", "{}")
	if m := decode(t, b); st != 404 || path(m, "error", "message") != "Invalid URL (POST /v1/nope)" || path(m, "error", "code") != nil {
		t.Errorf("unknown path: %d %s", st, b)
	}
	st, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", "{not json")
	if st != 400 || path(decode(t, b), "error", "type") != "invalid_request_error" {
		t.Errorf("bad json: %d %s", st, b)
	}
	st, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "", chatBody("x", ""))
	if st != 401 || path(decode(t, b), "error", "type") != "invalid_request_error" {
		t.Errorf("no key: %d %s", st, b)
	}
	st, _, b = mustDo(t, "POST", ts.URL+"/v1/messages", "", `{}`)
	if st != 401 || path(decode(t, b), "error", "type") != "authentication_error" {
		t.Errorf("no key anthropic: %d %s", st, b)
	}
	st, _, _ = mustDo(t, "GET", ts.URL+"/v1/chat/completions", "k", "")
	if st != 405 {
		t.Errorf("GET chat: %d", st)
	}
	// A request without model answers with the configured one.
	_, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", `{"messages":[{"role":"user","content":[{"type":"text","text":"parts"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"here"}]}]}`)
	m = decode(t, b)
	if m["model"] != "mock-a" || path(m, "choices", 0, "message", "content") != Text("parts here") {
		t.Errorf("array content / default model: %s", b)
	}
	all := s.AllStats()
	if all["k"].Requests != 4 || all["k"].Failed != 1 || all[""].Failed != 2 {
		t.Errorf("all stats %+v", all)
	}
	s.ResetStats()
	if ks := s.Stats("k"); ks.Requests != 0 || ks.LastBody != nil || ks.MaxInFlight != 0 {
		t.Errorf("after reset %+v", ks)
	}
}

func TestResetHTTP2(t *testing.T) {
	s := New(Config{Default: KeyBehavior{ResetRate: 1}})
	ts := httptest.NewUnstartedServer(s)
	ts.EnableHTTP2 = true
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/v1/chat/completions", strings.NewReader(chatBody("x", "")))
	req.Header.Set("Authorization", "Bearer h2")
	resp, err := ts.Client().Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("HTTP/2 reset: got %s %d and a full body", resp.Proto, resp.StatusCode)
		}
	}
	eventually(t, "reset handler done", func() bool { return s.Stats("h2").InFlight == 0 })
	if ks := s.Stats("h2"); ks.Resets != 1 || ks.OK != 0 {
		t.Errorf("stats %+v", ks)
	}
}
