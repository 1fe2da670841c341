package caddymodule

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// adminGateway loads a Caddyfile with a real admin endpoint on a free
// loopback port: the gateway site with siteBody, and further whole site
// blocks; ADMINPORT in adminBlock (the admin option's block) is replaced
// by the admin port. It returns the gateway's and the admin endpoint's base URLs.
func adminGateway(t testing.TB, siteBody string, adminBlock string, sites ...string) (gw, admin string) {
	t.Helper()
	port, aport := freePort(t), freePort(t)
	adminOpt := fmt.Sprintf("admin 127.0.0.1:%d", aport)
	if adminBlock != "" {
		adminOpt += " {\n" + strings.ReplaceAll(adminBlock, "ADMINPORT", strconv.Itoa(aport)) + "\n}"
	}
	cf := fmt.Sprintf("{\n\t%s\n\tpersist_config off\n\tgrace_period 1ns\n}\nhttp://127.0.0.1:%d {\n%s\n}\n%s",
		adminOpt, port, siteBody, strings.Join(sites, "\n"))
	loadCaddyfile(t, cf)
	t.Cleanup(func() { _ = caddy.Stop() })
	return fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", aport)
}

// adminDo sends a request to the admin endpoint and returns the status and
// body.
func adminDo(t testing.TB, method, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// adminPools returns GET /llm_gateway/pools decoded.
func adminPools(t testing.TB, admin string) []poolView {
	t.Helper()
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/pools")
	if code != 200 {
		t.Fatalf("GET pools: %d %s", code, b)
	}
	var out []poolView
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("GET pools: %v\n%s", err, b)
	}
	return out
}

func findKeyView(t testing.TB, pools []poolView, pool, id string) keyView {
	t.Helper()
	for _, p := range pools {
		if p.Name != pool {
			continue
		}
		for _, k := range p.Keys {
			if k.ID == id {
				return k
			}
		}
	}
	t.Fatalf("key %s/%s not in the admin answer", pool, id)
	return keyView{}
}

// scriptedRun sends four chat requests to a pool of k1 (healthy) and k2
// (401) and returns the summed usage of the answers.
func scriptedRun(t *testing.T, gw string) (in, out int64) {
	t.Helper()
	for i := range 4 {
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprintf("hello number %d", i), false))
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		if via := resp.Header.Get("X-Routed-Via"); !strings.HasSuffix(via, "/k1") {
			t.Fatalf("request %d routed via %q", i, via)
		}
		in += gjson.GetBytes(body, "usage.prompt_tokens").Int()
		out += gjson.GetBytes(body, "usage.completion_tokens").Int()
	}
	if in == 0 || out == 0 {
		t.Fatalf("mock reported no usage")
	}
	return in, out
}

func TestAdminPoolsAfterScriptedRun(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-2": {Status: 401}}})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("adm-pools", base, 2, "")), "")
	in, out := scriptedRun(t, gw)
	// the client's request, then the gateway's own probe confirming the 401
	eventually(t, 5*time.Second, "mk-2 probed", func() bool { return m.Stats("mk-2").Requests == 2 })
	eventually(t, 5*time.Second, "verdict confirmed", func() bool { return !keyStatus(t, "adm-pools", "k2").Provisional })

	pools := adminPools(t, admin)
	var pv *poolView
	for i := range pools {
		if pools[i].Name == "adm-pools" {
			pv = &pools[i]
		}
	}
	if pv == nil || len(pv.Keys) != 2 || !pv.Ready {
		t.Fatalf("pool view: %+v", pv)
	}
	k1 := findKeyView(t, pools, "adm-pools", "k1")
	host := strings.TrimPrefix(strings.TrimSuffix(base, "/v1"), "http://")
	if k1.Host != host || k1.Dialect != "openai" || k1.State != "ready" || k1.Cap != 1 || k1.InFlight != 0 {
		t.Errorf("k1: %+v", k1)
	}
	if k1.Requests != 4 || k1.Successes != 4 || k1.Errors != 0 || k1.LastStatus != 200 || k1.LastUsed == nil {
		t.Errorf("k1 counters: %+v", k1)
	}
	if k1.Tokens.Input != in || k1.Tokens.Output != out {
		t.Errorf("k1 tokens %+v, want input %d output %d", k1.Tokens, in, out)
	}
	if k1.Latency.Samples != 4 || k1.Latency.P50 <= 0 || k1.Latency.P95 < k1.Latency.P50 || k1.Latency.EMA <= 0 {
		t.Errorf("k1 latency: %+v", k1.Latency)
	}
	k2 := findKeyView(t, pools, "adm-pools", "k2")
	if k2.State != "cooling" || k2.Reason != "invalid_key" || k2.CooldownUntil == nil || k2.SecondsLeft <= 0 {
		t.Errorf("k2 state: %+v", k2)
	}
	if k2.Requests != 1 || k2.Errors != 1 || k2.Successes != 0 || k2.LastStatus != 401 || k2.CooldownStatus != 401 || k2.LastMessage == "" {
		t.Errorf("k2 counters: %+v", k2)
	}
	if k2.Tokens != (tokenCounts{}) || k2.Latency.Samples != 0 {
		t.Errorf("k2 figures: %+v %+v", k2.Tokens, k2.Latency)
	}

	// ?pool= filters; an unknown pool is 404; a wrong method 405
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/pools?pool=adm-pools")
	if code != 200 || gjson.GetBytes(b, "#").Int() != 1 {
		t.Errorf("filtered: %d %s", code, b)
	}
	if code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/pools?pool=nope"); code != 404 || !strings.Contains(string(b), "unknown pool") {
		t.Errorf("unknown pool: %d %s", code, b)
	}
	if code, _ := adminDo(t, http.MethodPost, admin+"/llm_gateway/pools"); code != 405 {
		t.Errorf("POST pools: %d", code)
	}
}

func TestAdminClearDisableEnable(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("adm-ops", base, 2, "")), "")
	send := func(n int) {
		t.Helper()
		for i := range n {
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprintf("hi %d", i), false))
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
			}
		}
	}

	// disable k1: everything goes to k2
	code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/keys/disable?pool=adm-ops&key=k1")
	if code != 200 || gjson.GetBytes(b, "state").String() != "disabled" {
		t.Fatalf("disable: %d %s", code, b)
	}
	send(4)
	if a, b := m.Stats("mk-1").OK, m.Stats("mk-2").OK; a != 0 || b != 4 {
		t.Fatalf("with k1 disabled: mk-1 %d, mk-2 %d", a, b)
	}
	// enable k1 and disable k2: everything goes to k1
	code, b = adminDo(t, http.MethodPost, admin+"/llm_gateway/keys/enable?pool=adm-ops&key=k1")
	if code != 200 || gjson.GetBytes(b, "state").String() != "ready" {
		t.Fatalf("enable: %d %s", code, b)
	}
	if code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/keys/disable?pool=adm-ops&key=k2"); code != 200 {
		t.Fatalf("disable k2: %d %s", code, b)
	}
	send(3)
	if a, b := m.Stats("mk-1").OK, m.Stats("mk-2").OK; a != 3 || b != 4 {
		t.Fatalf("with k2 disabled: mk-1 %d, mk-2 %d", a, b)
	}
	if code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/keys/enable?pool=adm-ops&key=k2"); code != 200 {
		t.Fatalf("enable k2: %d %s", code, b)
	}

	// a long upstream cooldown, cleared by the admin API
	m.SetKey("mk-1", mockupstream.KeyBehavior{Status: 429, RetryAfter: "600"})
	m.SetKey("mk-2", mockupstream.KeyBehavior{Status: 429, RetryAfter: "600"})
	resp, _ := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "cool", false))
	if resp.StatusCode == 200 {
		t.Fatalf("all keys 429: client got %d", resp.StatusCode)
	}
	for _, id := range []string{"k1", "k2"} {
		if st := keyStatus(t, "adm-ops", id); st.State != "cooling" || st.Reason != "rate_limited" {
			t.Fatalf("%s: %+v", id, st)
		}
	}
	m.SetKey("mk-1", mockupstream.KeyBehavior{})
	m.SetKey("mk-2", mockupstream.KeyBehavior{})
	code, b = adminDo(t, http.MethodPost, admin+"/llm_gateway/cooldowns/clear?pool=adm-ops&key=k1")
	if code != 200 || gjson.GetBytes(b, "cleared").Int() != 1 {
		t.Fatalf("clear k1: %d %s", code, b)
	}
	if st := keyStatus(t, "adm-ops", "k1"); st.State != "ready" {
		t.Fatalf("k1 after clear: %+v", st)
	}
	if st := keyStatus(t, "adm-ops", "k2"); st.State != "cooling" {
		t.Fatalf("k2 after clearing k1 only: %+v", st)
	}
	code, b = adminDo(t, http.MethodPost, admin+"/llm_gateway/cooldowns/clear?pool=adm-ops")
	if code != 200 || gjson.GetBytes(b, "cleared").Int() != 2 {
		t.Fatalf("clear pool: %d %s", code, b)
	}
	if st := keyStatus(t, "adm-ops", "k2"); st.State != "ready" {
		t.Fatalf("k2 after clear: %+v", st)
	}
	send(2)

	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/llm_gateway/cooldowns/clear", 405},
		{http.MethodPost, "/llm_gateway/cooldowns/clear?pool=nope", 404},
		{http.MethodPost, "/llm_gateway/cooldowns/clear?pool=adm-ops&key=nope", 404},
		{http.MethodPost, "/llm_gateway/keys/disable?pool=adm-ops", 400},
		{http.MethodPost, "/llm_gateway/keys/disable?key=k1", 400},
		{http.MethodPost, "/llm_gateway/keys/disable?pool=adm-ops&key=nope", 404},
		{http.MethodGet, "/llm_gateway/keys/enable?pool=adm-ops&key=k1", 405},
		{http.MethodGet, "/llm_gateway/nope", 404},
	} {
		if code, b := adminDo(t, c.method, admin+c.path); code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, code, b, c.code)
		}
	}
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String() + "/v1"
}

func diagnoseRows(t testing.TB, admin, query string) map[string]probeResult {
	t.Helper()
	code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/diagnose"+query)
	if code != 200 {
		t.Fatalf("diagnose: %d %s", code, b)
	}
	var rows []probeResult
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("diagnose: %v\n%s", err, b)
	}
	out := map[string]probeResult{}
	for _, r := range rows {
		out[r.Key] = r
	}
	return out
}

func TestAdminDiagnose(t *testing.T) {
	old := probeTimeout
	probeTimeout = 300 * time.Millisecond
	t.Cleanup(func() { probeTimeout = old })

	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"mk-401": {Status: 401},
		"mk-403": {Status: 403},
	}})
	root := strings.TrimSuffix(base, "/v1")
	refused := fmt.Sprintf("http://127.0.0.1:%d/v1", freePort(t))
	silent := silentServer(t)
	// an upstream without a models list: the probe falls back to a
	// one-token completion
	type seen struct{ path, auth, body string }
	got := make(chan seen, 4)
	nomodels := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.URL.Path, r.Header.Get("Authorization"), string(b)}
		if r.URL.Path == "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[]}`)
	}))
	t.Cleanup(nomodels.Close)

	key := func(secret, url, id, extra string) string {
		return fmt.Sprintf("\t\t\tkey %s %s {\n\t\t\t\tid %s\n%s\t\t\t}\n", secret, url, id, extra)
	}
	pool := "\t\tpool adm-diag {\n" +
		key("mk-ok", base, "ok", "") +
		key("mk-anthropic", root, "anthropic", "\t\t\t\tdialect anthropic\n") +
		key("mk-401", base, "unauthorized", "") +
		key("mk-403", base, "forbidden", "") +
		key("mk-refused", refused, "refused", "") +
		key("mk-silent", silent, "silent", "") +
		key("mk-nomodels", nomodels.URL+"/v1", "nomodels", "") +
		key("mk-tls", strings.Replace(base, "http://", "https://", 1), "tls", "") +
		"\t\t\tdefault_model probe-model\n\t\t}\n"
	_, admin := adminGateway(t, gatewayBlock(pool), "")

	start := time.Now()
	rows := diagnoseRows(t, admin, "?pool=adm-diag")
	elapsed := time.Since(start)
	if len(rows) != 8 {
		t.Fatalf("got %d rows: %+v", len(rows), rows)
	}
	check := func(id string, ok bool, status int, class, hint string) {
		t.Helper()
		r := rows[id]
		if r.OK != ok || r.Status != status || r.Error != class || !strings.Contains(r.Hint, hint) || r.Pool != "adm-diag" {
			t.Errorf("%s: %+v; want ok=%v status=%d error=%q hint~%q", id, r, ok, status, class, hint)
		}
	}
	check("ok", true, 200, "", "")
	check("anthropic", true, 200, "", "")
	check("unauthorized", false, 401, "http_401", "rejected the key")
	check("forbidden", false, 403, "http_403", "not allowed")
	check("refused", false, 0, "connection_refused", "connection refused")
	check("silent", false, 0, "timeout", "no answer")
	check("nomodels", true, 200, "", "")
	check("tls", false, 0, "tls", "http:// instead of https://")
	if p := rows["ok"].Probe; p != "GET /models" {
		t.Errorf("ok probe %q", p)
	}
	if p := rows["anthropic"].Probe; p != "GET /v1/models" {
		t.Errorf("anthropic probe %q", p)
	}
	if p := rows["nomodels"].Probe; !strings.Contains(p, "/chat/completions") {
		t.Errorf("nomodels probe %q", p)
	}
	if r := rows["silent"]; r.LatencyMS < 250 || r.LatencyMS > 2000 {
		t.Errorf("silent latency %vms", r.LatencyMS)
	}
	if elapsed > 3*time.Second {
		t.Errorf("diagnose took %v", elapsed)
	}
	first, second := <-got, <-got
	if first.path != "/v1/models" || second.path != "/v1/chat/completions" || second.auth != "Bearer mk-nomodels" ||
		gjson.Get(second.body, "max_tokens").Int() != 1 || gjson.Get(second.body, "model").String() != "probe-model" {
		t.Errorf("fallback probe: %+v then %+v", first, second)
	}
	// probing alone changes no key state
	for _, id := range []string{"unauthorized", "refused", "silent"} {
		if st := keyStatus(t, "adm-diag", id); st.State != "ready" || st.Requests != 0 {
			t.Errorf("%s after a plain diagnose: %+v", id, st)
		}
	}
	// ?key= selects one key
	if one := diagnoseRows(t, admin, "?pool=adm-diag&key=forbidden"); len(one) != 1 || one["forbidden"].Status != 403 {
		t.Errorf("one key: %+v", one)
	}
	if code, _ := adminDo(t, http.MethodGet, admin+"/llm_gateway/diagnose"); code != 405 {
		t.Errorf("GET diagnose: %d", code)
	}
}

func TestAdminClearAndVerify(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"mk-1": {Status: 429, RetryAfter: "600"},
		"mk-2": {Status: 401},
	}})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("adm-verify", base, 3, "")), "")
	// k1 and k2 fail and cool; k3 serves
	for i := range 3 {
		resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", fmt.Sprintf("v %d", i), false))
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	for id, reason := range map[string]string{"k1": "rate_limited", "k2": "invalid_key"} {
		if st := keyStatus(t, "adm-verify", id); st.State != "cooling" || string(st.Reason) != reason {
			t.Fatalf("%s before: %+v", id, st)
		}
	}
	// k1's upstream recovers; k2's key stays invalid (and the gateway's
	// own probe has confirmed it)
	m.SetKey("mk-1", mockupstream.KeyBehavior{})
	eventually(t, 5*time.Second, "k2's verdict confirmed", func() bool { return !keyStatus(t, "adm-verify", "k2").Provisional })
	before := keyStatus(t, "adm-verify", "k2")
	rows := diagnoseRows(t, admin, "?pool=adm-verify&clear=1")
	if r := rows["k1"]; !r.OK || r.State != "cooling" || r.Action != "cleared" {
		t.Errorf("k1: %+v", r)
	}
	if r := rows["k2"]; r.OK || r.Status != 401 || r.Action != "recooled" {
		t.Errorf("k2: %+v", r)
	}
	if r := rows["k3"]; !r.OK || r.State != "ready" || r.Action != "" {
		t.Errorf("k3: %+v", r)
	}
	if st := keyStatus(t, "adm-verify", "k1"); st.State != "ready" {
		t.Errorf("k1 after verify: %+v", st)
	}
	eventually(t, 5*time.Second, "k2's new verdict confirmed", func() bool { return !keyStatus(t, "adm-verify", "k2").Provisional })
	after := keyStatus(t, "adm-verify", "k2")
	if after.State != "cooling" || after.Reason != "invalid_key" || after.Until.Before(before.Until) {
		t.Errorf("k2 after verify: %+v (before: until %v)", after, before.Until)
	}
}

// sseReader reads named events from an SSE stream.
type sseReader struct {
	sc *bufio.Scanner
}

func (s *sseReader) next() (event, data string, err error) {
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if event != "" || data != "" {
				return event, data, nil
			}
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
	if err := s.sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", io.EOF
}

// openEvents opens the admin API's events stream (GET
// /llm_gateway/events) for the rest of the test (closed at its end, and
// bounded to 10 seconds), checks that it is an event stream and that its
// first event is hello, and returns its reader.
func openEvents(t *testing.T, admin string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound on the test, not a measurement
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/llm_gateway/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sr := &sseReader{sc: bufio.NewScanner(resp.Body)}
	if ev, _, err := sr.next(); err != nil || ev != "hello" {
		t.Fatalf("first event %q, %v", ev, err)
	}
	return sr
}

// await skips events until one named want and returns its data; the
// test fails when the stream ends or errs first.
func (s *sseReader) await(t *testing.T, want string) string {
	t.Helper()
	for {
		ev, data, err := s.next()
		if err != nil {
			t.Fatalf("waiting for a %s event: %v", want, err)
		}
		if ev == want {
			return data
		}
	}
}

func TestAdminEvents(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("adm-events", base, 1, "")), "")

	sr := openEvents(t, admin)
	waitFor := func(typ string) keyEvent {
		t.Helper()
		for {
			data := sr.await(t, "key")
			var ke keyEvent
			if err := json.Unmarshal([]byte(data), &ke); err != nil {
				t.Fatalf("%v: %s", err, data)
			}
			if ke.Pool == "adm-events" && ke.Type == typ {
				return ke
			}
		}
	}

	m.SetKey("mk-1", mockupstream.KeyBehavior{Status: 429, RetryAfter: "600"})
	post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "cool", false))
	ev := waitFor("cooldown_start")
	if ev.Key != "k1" || ev.State != "cooling" || ev.Prev != "ready" || ev.Reason != "rate_limited" || ev.Status != 429 || ev.Until.IsZero() {
		t.Errorf("cooldown_start: %+v", ev)
	}
	adminDo(t, http.MethodPost, admin+"/llm_gateway/keys/disable?pool=adm-events&key=k1")
	if ev := waitFor("disabled"); ev.Key != "k1" || ev.Prev != "cooling" {
		t.Errorf("disabled: %+v", ev)
	}
	adminDo(t, http.MethodPost, admin+"/llm_gateway/keys/enable?pool=adm-events&key=k1")
	waitFor("enabled")
	adminDo(t, http.MethodPost, admin+"/llm_gateway/cooldowns/clear?pool=adm-events&key=k1")
	if ev := waitFor("cooldown_end"); ev.Key != "k1" || ev.State != "ready" {
		t.Errorf("cooldown_end: %+v", ev)
	}
}

func TestAdminNoSecrets(t *testing.T) {
	const secret = "sk-admin-secret-0123456789abcdef"
	t.Setenv("LLMGW_ADMIN_TEST_SECRET", secret)
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{secret: {Status: 401}}})
	pool := "\t\tpool adm-secret {\n\t\t\tkey {env.LLMGW_ADMIN_TEST_SECRET} " + base + "\n\t\t}\n"
	gw, admin := adminGateway(t, gatewayBlock(pool), "")
	post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false))

	code, cfg := adminDo(t, http.MethodGet, admin+"/config/")
	if code != 200 || !strings.Contains(string(cfg), "{env.LLMGW_ADMIN_TEST_SECRET}") {
		t.Fatalf("GET /config/: %d %s", code, cfg)
	}
	masked := maskSecret(secret)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/config/"},
		{http.MethodGet, "/llm_gateway/pools"},
		{http.MethodPost, "/llm_gateway/diagnose"},
		{http.MethodPost, "/llm_gateway/diagnose?clear=1"},
		{http.MethodGet, "/metrics"},
		{http.MethodGet, "/llm_gateway/"},
	} {
		code, b := adminDo(t, c.method, admin+c.path)
		if code != 200 {
			t.Errorf("%s %s: %d %s", c.method, c.path, code, b)
		}
		if strings.Contains(string(b), secret) || strings.Contains(string(b), secret[7:]) {
			t.Errorf("%s %s shows the secret", c.method, c.path)
		}
	}
	if k := findKeyView(t, adminPools(t, admin), "adm-secret", masked); k.State != "cooling" {
		t.Errorf("masked key: %+v", k)
	}
}

func TestAdminStatusPageAndOrigins(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	_, admin := adminGateway(t, gatewayBlock(poolBlock("adm-page", base, 1, "")), "")
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/")
	if code != 200 || !strings.Contains(string(b), "<title>llm_gateway status</title>") {
		t.Fatalf("status page: %d %.200s", code, b)
	}
	if code, _ := adminDo(t, http.MethodPost, admin+"/llm_gateway/"); code != 405 {
		t.Errorf("POST status page: %d", code)
	}
	// a browser's top-level navigation carries Sec-Fetch-Mode but neither
	// Origin nor Referer: Caddy's admin endpoint refuses it by default ...
	navigate := func(admin string) int {
		req, _ := http.NewRequest(http.MethodGet, admin+"/llm_gateway/", nil)
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := navigate(admin); code != 403 {
		t.Errorf("navigation with default origins: %d, want 403", code)
	}
	// ... and the page's own fetches (same origin: Referer or Origin set)
	// pass
	req, _ := http.NewRequest(http.MethodPost, admin+"/llm_gateway/cooldowns/clear", nil)
	req.Header.Set("Sec-Fetch-Mode", "cors")
	req.Header.Set("Origin", admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("same-origin POST: %d", resp.StatusCode)
	}
	// with the documented origins list, navigation works; another site's
	// requests are still refused
	_, admin = adminGateway(t, gatewayBlock(poolBlock("adm-page", base, 1, "")),
		"\t\torigins \"\" 127.0.0.1:ADMINPORT localhost:ADMINPORT")
	if code := navigate(admin); code != 200 {
		t.Errorf("navigation with origins \"\": %d, want 200", code)
	}
	req, _ = http.NewRequest(http.MethodPost, admin+"/llm_gateway/cooldowns/clear", nil)
	req.Header.Set("Sec-Fetch-Mode", "cors")
	req.Header.Set("Origin", "http://evil.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("cross-site POST: %d, want 403", resp.StatusCode)
	}
}

func TestNetworkHints(t *testing.T) {
	for _, c := range []struct {
		err   error
		class string
		hint  string
	}{
		{&net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}, "dns", "DNS lookup of api.example.invalid failed"},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection_refused", "connection refused by api.example.invalid:443"},
		{context.DeadlineExceeded, "timeout", "no answer from api.example.invalid:443"},
		{&tls.CertificateVerificationError{Err: errors.New("x509: certificate signed by unknown authority")}, "tls", "certificate"},
		{io.ErrUnexpectedEOF, "network", "closed the connection"},
		{errors.New("something else"), "network", "could not reach"},
	} {
		class, hint := networkHint(c.err, "api.example.invalid:443")
		if class != c.class || !strings.Contains(hint, c.hint) {
			t.Errorf("%v: %s %q, want %s ~%q", c.err, class, hint, c.class, c.hint)
		}
	}
	for status, want := range map[int]string{401: "rejected the key", 403: "not allowed", 404: "check base_url", 429: "rate limited", 502: "trouble", 301: "redirects"} {
		if h := statusHint(status, http.Header{}); !strings.Contains(h, want) {
			t.Errorf("%d: %q", status, h)
		}
	}
}

func TestAdminDiagnoseParallelism(t *testing.T) {
	old := probeTimeout
	probeTimeout = 200 * time.Millisecond
	t.Cleanup(func() { probeTimeout = old })
	silent := silentServer(t)
	var b strings.Builder
	b.WriteString("\t\tpool adm-par {\n")
	for i := range 2*probeParallelism + 1 {
		fmt.Fprintf(&b, "\t\t\tkey mk-par-%d %s {\n\t\t\t\tid p%d\n\t\t\t}\n", i, silent, i)
	}
	b.WriteString("\t\t}\n")
	_, admin := adminGateway(t, gatewayBlock(b.String()), "")
	start := time.Now()
	rows := diagnoseRows(t, admin, "?pool=adm-par")
	elapsed := time.Since(start)
	if len(rows) != 2*probeParallelism+1 {
		t.Fatalf("%d rows", len(rows))
	}
	for id, r := range rows {
		if r.Error != "timeout" {
			t.Errorf("%s: %+v", id, r)
		}
	}
	// 9 probes, 4 at a time: three rounds of one timeout each
	if elapsed < 3*probeTimeout || elapsed > 3*probeTimeout+time.Second {
		t.Errorf("took %v, want about %v", elapsed, 3*probeTimeout)
	}
}

// TestAdminPoolsVerdictDue: while the gateway's probe of a key's
// provisional verdict (a 401 a client's request met) runs, GET
// /llm_gateway/pools shows when its answer is due (verdict_due: the
// probe's start plus probe_timeout, before the provisional cooldown
// ends); once the probe has confirmed the verdict the field is gone.
func TestAdminPoolsVerdictDue(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"mk-1": {Status: 401, Latency: 2 * time.Second}}})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("adm-due", base, 1, "\t\t\tprobe_timeout 10s\n")), "")
	sent := time.Now()
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false)); resp.StatusCode < 400 {
		t.Fatalf("client request: %d %s", resp.StatusCode, b)
	}
	var k1 keyView
	eventually(t, 5*time.Second, "the probe running", func() bool {
		k1 = findKeyView(t, adminPools(t, admin), "adm-due", "k1")
		return k1.VerdictDue != nil || m.Stats("mk-1").Requests == 2 && m.Stats("mk-1").InFlight == 0
	})
	if !k1.Provisional || k1.VerdictDue == nil || k1.CooldownUntil == nil {
		t.Fatalf("k1 while probed: %+v", k1)
	}
	if due := *k1.VerdictDue; due.Before(sent) || due.After(time.Now().Add(10*time.Second)) || !due.Before(*k1.CooldownUntil) || due.Location() != time.UTC {
		t.Errorf("verdict_due %v (cooldown until %v), want the probe's start plus 10s, before the cooldown ends", due, *k1.CooldownUntil)
	}
	if _, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/pools?pool=adm-due"); !gjson.GetBytes(b, "0.keys.0.verdict_due").Exists() {
		t.Errorf("no verdict_due member: %s", b)
	}
	eventually(t, 10*time.Second, "verdict confirmed", func() bool { return !keyStatus(t, "adm-due", "k1").Provisional })
	if k1 = findKeyView(t, adminPools(t, admin), "adm-due", "k1"); k1.VerdictDue != nil || k1.Reason != "invalid_key" {
		t.Errorf("k1 after the probe: %+v", k1)
	}
}
