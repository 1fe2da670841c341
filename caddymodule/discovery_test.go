package caddymodule

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// discoveryOffByDefault: the package's older tests count every request
// their upstreams see, so pools discover only when they say so (refresh,
// models auto). A variable initialiser, so that it also holds in the
// cluster tests' child processes, which start Caddy from an init function.
var discoveryOffByDefault = func() bool { discoveryByDefault = false; return true }()

// listModels answers GET <gw><path> with the gateway key: the ids listed
// and the body. anthropic sends anthropic-version (the Anthropic shape).
func listModels(t *testing.T, gw, path string, anthropic bool) ([]string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, gw+path, nil)
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	if anthropic {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	ids := []string{}
	for _, v := range gjson.GetBytes(b, "data.#.id").Array() {
		ids = append(ids, v.String())
	}
	return ids, b
}

// discKey is a key line with an id.
func discKey(secret, base, id string) string {
	return fmt.Sprintf("\t\t\tkey %s %s {\n\t\t\t\tid %s\n\t\t\t}\n", secret, base, id)
}

var routedSeq atomic.Int64

// routedVia sends a chat for model and returns the status, X-Routed-Via
// and the body.
func routedVia(t *testing.T, gw, model string) (int, string, []byte) {
	t.Helper()
	// a new conversation each time: affinity would keep one key
	resp, body := post(t, gw+"/v1/chat/completions", chatBody(model, fmt.Sprintf("hi %d", routedSeq.Add(1)), false))
	return resp.StatusCode, resp.Header.Get("X-Routed-Via"), body
}

// TestDiscoveryUnionAndRouting: /v1/models shows the union of the keys'
// learned lists next to the configured names (both list shapes); in a
// "models auto" pool a learned model goes only to the keys that list it,
// a key without a list (404) gets none, and a model nobody lists is not
// served, with the pools and the nearest name in the message; a "models
// *" pool keeps serving every name and lists its learned ones.
func TestDiscoveryUnionAndRouting(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"da-1": {Models: []string{"m-alpha", "m-shared"}},
		"da-2": {Models: []string{"m-beta", "m-shared"}},
		"da-3": {ModelsStatus: 404},
		"dw-1": {Models: []string{"w-one"}},
	}})
	gw := gateway(t, gatewayBlock(
		"\t\tpool learned {\n\t\t\tmodels auto\n\t\t\tmodel_map alias-beta m-beta\n"+
			discKey("da-1", base, "a1")+discKey("da-2", base, "a2")+discKey("da-3", base, "a3")+"\t\t}\n",
		"\t\tpool wild {\n\t\t\tmodels fixed-name *\n\t\t\trefresh 1h\n\t\t\tpriority 5\n"+discKey("dw-1", base, "w1")+"\t\t}\n"))

	want := []string{"alias-beta", "m-alpha", "m-beta", "m-shared", "fixed-name", "w-one"}
	eventually(t, 5*time.Second, "learned models listed", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return len(ids) == len(want)
	})
	ids, body := listModels(t, gw, "/v1/models", false)
	if !slices.Equal(ids, want) || gjson.GetBytes(body, "object").String() != "list" {
		t.Fatalf("/v1/models %v, want %v: %s", ids, want, body)
	}
	aids, abody := listModels(t, gw, "/v1/models", true)
	if !slices.Equal(aids, want) || gjson.GetBytes(abody, "data.0.type").String() != "model" {
		t.Fatalf("anthropic /v1/models %v: %s", aids, abody)
	}

	for i := range 4 {
		if st, via, b := routedVia(t, gw, "m-alpha"); st != 200 || via != "learned/a1" {
			t.Fatalf("m-alpha %d: %d via %q %s", i, st, via, b)
		}
		if st, via, b := routedVia(t, gw, "m-beta"); st != 200 || via != "learned/a2" {
			t.Fatalf("m-beta %d: %d via %q %s", i, st, via, b)
		}
		if st, via, b := routedVia(t, gw, "alias-beta"); st != 200 || via != "learned/a2" {
			t.Fatalf("alias-beta %d: %d via %q %s", i, st, via, b)
		}
	}
	seen := map[string]int{}
	for range 8 {
		st, via, b := routedVia(t, gw, "m-shared")
		if st != 200 {
			t.Fatalf("m-shared: %d %s", st, b)
		}
		seen[via]++
	}
	if seen["learned/a1"] == 0 || seen["learned/a2"] == 0 || len(seen) != 2 {
		t.Fatalf("m-shared went to %v, want a1 and a2 only", seen)
	}
	if st := m.Stats("da-3"); st.OK != 0 || st.Failed != 1 {
		t.Fatalf("the key without a models list was sent requests (or not asked for its list): %+v", st)
	}
	if got := m.Stats("da-2").LastModel; got != "m-beta" && got != "m-shared" {
		t.Fatalf("da-2 last model %q", got)
	}

	// the wildcard pool: a learned name and any other name
	for _, model := range []string{"w-one", "anything-else", "fixed-name"} {
		if st, via, b := routedVia(t, gw, model); st != 200 || via != "wild/w1" {
			t.Fatalf("%s: %d via %q %s", model, st, via, b)
		}
	}

	// nothing serves it in the auto pool and the key is scoped away from
	// the wildcard pool: the message names the pools and the nearest name
	gw2 := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+" {\n\t\t\tpools learned2\n\t\t}\n"+
		"\t\tpool learned2 {\n\t\t\tmodels auto\n"+discKey("da-1", base, "a1")+"\t\t}\n"+
		"\t\tpool wild2 {\n\t\t\tmodels w-*\n"+discKey("dw-1", base, "w1")+"\t\t}\n\t}\n")
	eventually(t, 5*time.Second, "learned2 lists", func() bool {
		ids, _ := listModels(t, gw2, "/v1/models", false)
		return len(ids) == 2
	})
	st, _, b := routedVia(t, gw2, "m-aplha")
	msg := gjson.GetBytes(b, "error.message").String()
	if st != 404 || !strings.Contains(msg, `did you mean "m-alpha"?`) || !strings.Contains(msg, "learned2 (auto: 2 learned)") ||
		strings.Contains(msg, "wild2") {
		t.Fatalf("not served: %d %q", st, msg)
	}
	// OpenAI's code and param for an unknown model
	if gjson.GetBytes(b, "error.code").Str != "model_not_found" || gjson.GetBytes(b, "error.param").Str != "model" ||
		gjson.GetBytes(b, "error.type").Str != "invalid_request_error" {
		t.Fatalf("not served, OpenAI error fields: %s", b)
	}
	// no near name: the sentence ends before the pools
	st, _, b = routedVia(t, gw2, "zzzzzzzzzzzz")
	if msg := gjson.GetBytes(b, "error.message").Str; st != 404 || !strings.HasPrefix(msg, `model "zzzzzzzzzzzz" is not served by this gateway. Pools: learned2 (auto: 2 learned)`) {
		t.Fatalf("not served, no near name: %d %q", st, msg)
	}
	// an Anthropic client: Anthropic's shape, not_found_error
	resp, b := post(t, gw2+"/v1/messages", []byte(`{"model":"zzzzzzzzzzzz","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	if resp.StatusCode != 404 || gjson.GetBytes(b, "type").Str != "error" || gjson.GetBytes(b, "error.type").Str != "not_found_error" ||
		gjson.GetBytes(b, "error.code").Exists() {
		t.Fatalf("not served, Anthropic client: %d %s", resp.StatusCode, b)
	}
}

// TestDiscoveryRefresh: a refresh after the upstream's list changed
// serves the new model and stops serving the one that went; POST
// /llm_gateway/diagnose fetches the lists again at once.
func TestDiscoveryRefresh(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"dr-1": {Models: []string{"old-model"}},
		"dd-1": {Models: []string{"first"}},
	}})
	gw, admin := adminGateway(t, gatewayBlock(
		"\t\tpool fresh {\n\t\t\tmodels auto\n\t\t\trefresh 100ms\n"+discKey("dr-1", base, "r1")+"\t\t}\n",
		"\t\tpool slowref {\n\t\t\tmodels auto\n\t\t\trefresh 1h\n"+discKey("dd-1", base, "d1")+"\t\t}\n"), "")
	eventually(t, 5*time.Second, "old-model served", func() bool {
		st, _, _ := routedVia(t, gw, "old-model")
		return st == 200
	})
	m.SetKey("dr-1", mockupstream.KeyBehavior{Models: []string{"new-model"}})
	eventually(t, 5*time.Second, "new-model served after a refresh", func() bool {
		st, _, _ := routedVia(t, gw, "new-model")
		return st == 200
	})
	if st, _, b := routedVia(t, gw, "old-model"); st != 404 {
		t.Fatalf("old-model still served: %d %s", st, b)
	}

	eventually(t, 5*time.Second, "first listed", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return slices.Contains(ids, "first")
	})
	m.SetKey("dd-1", mockupstream.KeyBehavior{Models: []string{"second"}})
	before := m.Stats("dd-1").Requests
	time.Sleep(50 * time.Millisecond)
	if ids, _ := listModels(t, gw, "/v1/models", false); !slices.Contains(ids, "first") || m.Stats("dd-1").Requests != before {
		t.Fatalf("a 1h refresh fetched again on its own: %v", ids)
	}
	if code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/diagnose?pool=slowref"); code != 200 {
		t.Fatalf("diagnose: %d %s", code, b)
	}
	eventually(t, 5*time.Second, "second listed after diagnose", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return slices.Contains(ids, "second") && !slices.Contains(ids, "first")
	})
}

// TestDiscoveryWithoutModelsList: an upstream that answers 404 (or 405)
// to GET /models leaves the pool as configured: its configured names are
// listed and served, and any name still goes to its keys.
func TestDiscoveryWithoutModelsList(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"dn-1": {ModelsStatus: 404},
		"dn-2": {ModelsStatus: 405},
	}})
	gw := gateway(t, gatewayBlock(
		"\t\tpool plain {\n\t\t\tmodels conf-a conf-b*\n\t\t\trefresh 100ms\n"+discKey("dn-1", base, "n1")+discKey("dn-2", base, "n2")+"\t\t}\n"))
	eventually(t, 5*time.Second, "both lists asked for twice", func() bool {
		return m.Stats("dn-1").Failed >= 2 && m.Stats("dn-2").Failed >= 2
	})
	if ids, b := listModels(t, gw, "/v1/models", false); !slices.Equal(ids, []string{"conf-a"}) {
		t.Fatalf("/v1/models %v: %s", ids, b)
	}
	seen := map[string]bool{}
	for _, model := range []string{"conf-a", "conf-b-1", "conf-b-2", "conf-a"} {
		st, via, b := routedVia(t, gw, model)
		if st != 200 {
			t.Fatalf("%s: %d %s", model, st, b)
		}
		seen[via] = true
	}
	if !seen["plain/n1"] || !seen["plain/n2"] {
		t.Fatalf("keys used: %v", seen)
	}
	if st, _, _ := routedVia(t, gw, "other"); st != 404 {
		t.Fatalf("other: %d", st)
	}
	for _, k := range []string{"n1", "n2"} {
		if s := keyStatus(t, "plain", k); s.State != "ready" || s.Failures != 0 {
			t.Fatalf("the missing models list touched key %s: %+v", k, s)
		}
	}
}

// TestDiscoveryDoesNotDelayStartup: while one key's models list is still
// pending (the mock's latency on that key), the gateway is up, serves
// requests and lists what the other keys said.
func TestDiscoveryDoesNotDelayStartup(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"ds-slow": {Models: []string{"m-slow"}, Latency: 3 * time.Second},
		"ds-fast": {Models: []string{"m-fast"}},
	}})
	gw := gateway(t, gatewayBlock(
		"\t\tpool startup {\n\t\t\trefresh 1h\n\t\t\tstrategy priority\n"+
			"\t\t\tkey ds-slow "+base+" {\n\t\t\t\tid slow\n\t\t\t\tpriority 2\n\t\t\t}\n"+
			"\t\t\tkey ds-fast "+base+" {\n\t\t\t\tid fast\n\t\t\t\tpriority 1\n\t\t\t}\n\t\t}\n"))
	eventually(t, 5*time.Second, "m-fast listed", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return slices.Equal(ids, []string{"m-fast"})
	})
	st, via, b := routedVia(t, gw, "m-fast")
	if st != 200 || via != "startup/fast" {
		t.Fatalf("m-fast: %d via %q %s", st, via, b)
	}
	if s := m.Stats("ds-slow"); s.Requests != 1 || s.OK != 0 || s.Canceled != 0 {
		t.Fatalf("the slow models list is not pending while the gateway serves: %+v", s)
	}
	if ids, _ := listModels(t, gw, "/v1/models", false); slices.Contains(ids, "m-slow") {
		t.Fatalf("m-slow listed before its list came: %v", ids)
	}
	eventually(t, 6*time.Second, "m-slow listed once its list comes", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return slices.Equal(ids, []string{"m-fast", "m-slow"})
	})
}

// TestDiscoveryAutoPoolWhileLearning: a "models auto" pool whose first
// lists have not come yet answers 503 with Retry-After (clients retry),
// then serves the learned names; once its lists came, an unknown model is
// a 404.
func TestDiscoveryAutoPoolWhileLearning(t *testing.T) {
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"dl-1": {Models: []string{"late-model"}, Latency: 2 * time.Second},
	}})
	gw := gateway(t, gatewayBlock("\t\tpool late {\n\t\t\tmodels auto\n"+discKey("dl-1", base, "l1")+"\t\t}\n"))
	resp, b := post(t, gw+"/v1/chat/completions", chatBody("late-model", "hi", false))
	if msg := gjson.GetBytes(b, "error.message").String(); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(msg, `pool "late" is still learning its models`) {
		t.Fatalf("while learning: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	eventually(t, 5*time.Second, "late-model served", func() bool {
		st, _, _ := routedVia(t, gw, "late-model")
		return st == 200
	})
	if st, _, b := routedVia(t, gw, "late-modl"); st != 404 || !strings.Contains(string(b), `did you mean \"late-model\"?`) {
		t.Fatalf("unknown model after learning: %d %s", st, b)
	}
}

// TestDiscoverySurvivesReload: a reload that keeps the pool keeps the
// learned lists while the new configuration fetches them again.
func TestDiscoverySurvivesReload(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"dk-1": {Models: []string{"kept-model"}},
	}})
	port := freePort(t)
	cfg := func(extra string) string {
		return fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n\tgrace_period 1ns\n}\nhttp://127.0.0.1:%d {\n%s\n}\n", port,
			gatewayBlock("\t\tpool keep {\n\t\t\tmodels auto\n"+extra+discKey("dk-1", base, "k1")+"\t\t}\n"))
	}
	loadCaddyfile(t, cfg(""))
	t.Cleanup(func() { _ = caddy.Stop() })
	gw := fmt.Sprintf("http://127.0.0.1:%d", port)
	eventually(t, 5*time.Second, "kept-model served", func() bool {
		st, _, _ := routedVia(t, gw, "kept-model")
		return st == 200
	})
	m.SetKey("dk-1", mockupstream.KeyBehavior{Models: []string{"kept-model"}, Latency: 2 * time.Second})
	loadCaddyfile(t, cfg("\t\t\tmax_concurrency_per_key 2\n"))
	http.DefaultClient.CloseIdleConnections() // the old server closes its idle connections
	if st, via, b := routedVia(t, gw, "kept-model"); st != 200 || via != "keep/k1" {
		t.Fatalf("after reload, before the new fetch: %d via %q %s", st, via, b)
	}
}

// TestUnversionedPaths: a base URL without /v1 works (the openai-go
// client, and the other API paths), and other paths outside /v1 still go
// to the next handler.
func TestUnversionedPaths(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(poolBlock("nov1", base, 1, ""))+"\trespond /other \"next handler\" 200\n")

	client := openai.NewClient(option.WithBaseURL(gw), option.WithAPIKey(gatewayKey), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "mock-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")}})
	if err != nil || cc.Choices[0].Message.Content != mockupstream.Text("hello there") {
		t.Fatalf("openai-go without /v1: %v %+v", err, cc)
	}
	page, err := client.Models.List(ctx)
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("models without /v1: %v %+v", err, page)
	}

	msg := []byte(`{"model":"mock-gpt","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)
	for _, c := range []struct {
		path string
		body []byte
		want string // gjson path that must exist
	}{
		{"/chat/completions", chatBody("mock-gpt", "hi", false), "choices.0.message.content"},
		{"/chat/completions/", chatBody("mock-gpt", "hi", false), "choices.0.message.content"},
		{"/messages", msg, "content.0.text"},
		{"/messages/count_tokens", msg, "input_tokens"},
		{"/responses", []byte(`{"model":"mock-gpt","input":"hi"}`), "output"},
	} {
		resp, b := post(t, gw+c.path, c.body, "Anthropic-Version", "2023-06-01")
		if resp.StatusCode != 200 || !gjson.GetBytes(b, c.want).Exists() {
			t.Errorf("POST %s: %d %s", c.path, resp.StatusCode, b)
		}
	}
	if resp, b := post(t, gw+"/messages", msg, "Authorization", "Bearer sk-wrong-000000000000"); resp.StatusCode != 401 ||
		gjson.GetBytes(b, "type").String() != "error" {
		t.Errorf("wrong key on /messages: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/other", "/chat", "/v2/chat/completions"} {
		resp, b := post(t, gw+p, chatBody("mock-gpt", "hi", false))
		if p == "/other" && (resp.StatusCode != 200 || string(b) != "next handler") {
			t.Errorf("POST %s: %d %q", p, resp.StatusCode, b)
		}
		if p != "/other" && (resp.StatusCode != 200 || len(b) != 0) {
			t.Errorf("POST %s reached the gateway: %d %q", p, resp.StatusCode, b)
		}
	}
}

// TestParseModelIDs: the list shapes read, bounds and bad input.
func TestParseModelIDs(t *testing.T) {
	cases := []struct {
		body string
		want []string
		ok   bool
	}{
		{`{"object":"list","data":[{"id":"gpt-4o","object":"model"},{"id":"o3"}]}`, []string{"gpt-4o", "o3"}, true},
		{`{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5"}],"has_more":false}`, []string{"claude-sonnet-4-5"}, true},
		{`[{"id":"a"},{"id":"b"}]`, []string{"a", "b"}, true},
		{`{"models":[{"name":"llama3.2:latest"},{"id":"qwen"}]}`, []string{"llama3.2:latest", "qwen"}, true},
		{`{"data":["plain-id",{"id":7},{"name":"named"}]}`, []string{"plain-id", "named"}, true},
		{`{"data":[]}`, nil, true},
		{`{"error":{"message":"no"}}`, nil, false},
		{`<html>`, nil, false},
		{``, nil, false},
	}
	for _, c := range cases {
		got, ok := parseModelIDs([]byte(c.body))
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.body, got, ok, c.want, c.ok)
		}
	}
	for name, want := range map[string]bool{"gpt-4o": true, "": false, "a b": false, "x\n": false, strings.Repeat("m", 256): true, strings.Repeat("m", 257): false} {
		if validModelName(name) != want {
			t.Errorf("validModelName(%q) = %v", name, !want)
		}
	}
}

// TestDiscoveryBounds: a list longer than maxLearnedPerKey keeps the
// first maxLearnedPerKey valid names; names that are too long, empty or
// repeated are dropped; the secret never reaches the log.
func TestDiscoveryBounds(t *testing.T) {
	names := make([]string, 0, maxLearnedPerKey+50)
	names = append(names, strings.Repeat("x", maxLearnedName+1), "dup", "dup")
	for i := len(names); i < maxLearnedPerKey+50; i++ {
		names = append(names, fmt.Sprintf("n-%05d", i))
	}
	const secret, rejected = "db-secret-0123456789abcdef", "db-rejected-0123456789abcdef"
	_, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		secret:   {Models: names},
		rejected: {Status: 401},
	}})
	appLog := t.TempDir() + "/app.log"
	gw := gateway(t, gatewayBlock("\t\tpool bounds {\n\t\t\tmodels auto\n"+discKey(secret, base, "b1")+discKey(rejected, base, "b2")+"\t\t}\n"),
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}") // DEBUG would show Caddy's own config dump, literal secrets included
	logs := func() string { b, _ := os.ReadFile(appLog); return string(b) }
	var ids []string
	eventually(t, 5*time.Second, "list learned", func() bool {
		ids, _ = listModels(t, gw, "/v1/models", false)
		return len(ids) > 0
	})
	if len(ids) != maxLearnedPerKey || !slices.Contains(ids, "dup") || slices.Contains(ids, names[0]) ||
		!slices.Contains(ids, fmt.Sprintf("n-%05d", maxLearnedPerKey+1)) || slices.Contains(ids, fmt.Sprintf("n-%05d", maxLearnedPerKey+2)) {
		t.Fatalf("%d names learned", len(ids))
	}
	eventually(t, 10*time.Second, "cut and 401 logged", func() bool { // the 401 is a warning from the second round on
		l := logs()
		return strings.Contains(l, "list cut") && strings.Contains(l, `"status":401`)
	})
	if l := logs(); strings.Contains(l, secret[3:15]) || strings.Contains(l, rejected[3:15]) {
		t.Fatalf("a secret reached the log:\n%s", l)
	}
}

// TestNearestName: suggestions by edit distance, case-insensitive,
// bounded.
func TestNearestName(t *testing.T) {
	names := []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4-5", "o3"}
	for model, want := range map[string]string{
		"gpt4o":                  "gpt-4o",
		"GPT-4o-mini":            "gpt-4o-mini",
		"claude-sonet-4-5":       "claude-sonnet-4-5",
		"o4":                     "o3",
		"llama":                  "",
		"":                       "",
		strings.Repeat("a", 200): "",
	} {
		if got := nearestName(model, names); got != want {
			t.Errorf("nearestName(%q) = %q, want %q", model, got, want)
		}
	}
	if d := boundedEditDistance("kitten", "sitting", 10); d != 3 {
		t.Errorf("distance %d", d)
	}
	if d := boundedEditDistance("aaaaaaaa", "bbbbbbbb", 2); d != 3 {
		t.Errorf("bounded distance %d", d)
	}
	// the banded computation agrees with the full table
	full := editDistance // the full Levenshtein table, below
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = "abc-"[rng.IntN(4)]
		}
		return string(b)
	}
	for range 5000 {
		a, b, limit := word(), word(), rng.IntN(10)
		want := min(full(a, b), limit+1)
		if got := boundedEditDistance(a, b, limit); got != want {
			t.Fatalf("boundedEditDistance(%q, %q, %d) = %d, want %d", a, b, limit, got, want)
		}
	}
}

// BenchmarkNearestName: the not-served message with 2000 learned names.
func BenchmarkNearestName(b *testing.B) {
	names := make([]string, 2000)
	for i := range names {
		names[i] = fmt.Sprintf("vendor/model-family-%04d-instruct", i)
	}
	for b.Loop() {
		nearestName("vendor/model-family-0999-instrukt", names)
	}
}

// TestDiscoveryConfig: refresh parses as a duration or off, and "models
// auto" refuses "refresh off" with a message that says why.
func TestDiscoveryConfig(t *testing.T) {
	for _, c := range []struct {
		pool string
		want string // "" for a config that loads
	}{
		{"\t\t\trefresh 30m\n", ""},
		{"\t\t\trefresh off\n", ""},
		{"\t\t\tmodels auto\n\t\t\trefresh 10s\n", ""},
		{"\t\t\trefresh soon\n", "refresh: want a duration such as 1h, or off; got 'soon'"},
		{"\t\t\trefresh 0s\n", "refresh: want a duration"},
		{"\t\t\trefresh\n", "wrong argument count"},
		{"\t\t\tmodels auto\n\t\t\trefresh off\n", "models auto needs model discovery: remove 'refresh off'"},
	} {
		cf := fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:%d {\n%s}\n", freePort(t),
			gatewayBlock("\t\tpool cfg {\n"+c.pool+discKey("dc-1", "http://127.0.0.1:9/v1", "c1")+"\t\t}\n"))
		err := loadCaddyfileErr(cf)
		_ = caddy.Stop()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.pool, err, c.want)
		}
	}
	var pc PoolConfig
	if err := pc.Refresh.UnmarshalJSON([]byte(`"90s"`)); err != nil || time.Duration(pc.Refresh) != 90*time.Second {
		t.Errorf("JSON refresh: %v %v", pc.Refresh, err)
	}
}

// TestDiscoveryWithCaddyfileMock: the llm_mock_upstream directive's
// per-key models and models_status, in the same process as the gateway.
func TestDiscoveryWithCaddyfileMock(t *testing.T) {
	mport := freePort(t)
	mockSite := fmt.Sprintf("http://127.0.0.1:%d {\n\tllm_mock_upstream {\n\t\tkey cm-1 {\n\t\t\tmodels cm-a cm-b\n\t\t}\n"+
		"\t\tkey cm-2 {\n\t\t\tmodels_status 404\n\t\t}\n\t\tkey cm-3 {\n\t\t\tmodels cm-b\n\t\t}\n\t}\n}\n", mport)
	mbase := fmt.Sprintf("http://127.0.0.1:%d/v1", mport)
	port := freePort(t)
	cf := fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n\tgrace_period 1ns\n}\nhttp://127.0.0.1:%d {\n%s}\n%s", port,
		gatewayBlock("\t\tpool cmock {\n\t\t\trefresh 1h\n"+discKey("cm-1", mbase, "c1")+discKey("cm-2", mbase, "c2")+discKey("cm-3", mbase, "c3")+"\t\t}\n"),
		mockSite)
	loadCaddyfile(t, cf)
	t.Cleanup(func() { _ = caddy.Stop() })
	gw := fmt.Sprintf("http://127.0.0.1:%d", port)
	eventually(t, 5*time.Second, "cm-a and cm-b listed", func() bool {
		ids, _ := listModels(t, gw, "/models", false)
		return slices.Equal(ids, []string{"cm-a", "cm-b"})
	})
	// the lists arrive key by key: cm-a is listed once c1's is learned,
	// and c3, whose list is not learned yet, may still serve it until its
	// own (cm-b only) is
	eventually(t, 5*time.Second, "c1's and c3's lists learned", func() bool {
		s := learnedFor("cmock").load()
		return s != nil && len(s.keys) == 2
	})
	// cm-a never goes to c3 (its list lacks it), cm-b to every key: c2
	// has no list (404), so in a pool that is not models auto it may
	// serve anything; a model nobody lists goes to every key
	seen := map[string]bool{}
	for range 6 {
		st, via, b := routedVia(t, gw, "cm-a")
		if st != 200 || via == "cmock/c3" {
			t.Fatalf("cm-a: %d via %q %s", st, via, b)
		}
		seen[via] = true
	}
	if len(seen) != 2 {
		t.Fatalf("cm-a went to %v, want c1 and c2", seen)
	}
	seen = map[string]bool{}
	for range 9 {
		st, via, b := routedVia(t, gw, "cm-b")
		if st != 200 {
			t.Fatalf("cm-b: %d via %q %s", st, via, b)
		}
		seen[via] = true
	}
	if len(seen) != 3 {
		t.Fatalf("cm-b went to %v, want all three keys", seen)
	}
	seen = map[string]bool{}
	for range 12 {
		st, via, b := routedVia(t, gw, "unlisted")
		if st != 200 {
			t.Fatalf("unlisted: %d %s", st, b)
		}
		seen[via] = true
	}
	if len(seen) != 3 {
		t.Fatalf("unlisted went to %v, want all three keys", seen)
	}
}

// TestDiscoveryKeyWithoutListStillServes: a key whose models list could
// not be learned (here its list answers 500) may still serve a model
// another key lists: only a key whose list was learned and lacks the
// model is passed over.
func TestDiscoveryKeyWithoutListStillServes(t *testing.T) {
	m, base := mock(t, mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"dk-1": {Models: []string{"m-shared"}},
		"dk-2": {ModelsStatus: 500},
	}})
	gw := gateway(t, gatewayBlock(
		"\t\tpool unknown {\n\t\t\tmodels *\n\t\t\trefresh 1h\n"+discKey("dk-1", base, "k1")+discKey("dk-2", base, "k2")+"\t\t}\n"))
	eventually(t, 5*time.Second, "both lists asked for", func() bool {
		return m.Stats("dk-1").Requests >= 1 && m.Stats("dk-2").Failed >= 1
	})
	eventually(t, 5*time.Second, "k1's list learned", func() bool {
		ids, _ := listModels(t, gw, "/v1/models", false)
		return slices.Contains(ids, "m-shared")
	})
	seen := map[string]bool{}
	for range 6 {
		st, via, b := routedVia(t, gw, "m-shared")
		if st != 200 {
			t.Fatalf("%d %s", st, b)
		}
		seen[via] = true
	}
	if !seen["unknown/k1"] || !seen["unknown/k2"] {
		t.Fatalf("keys used: %v, want both (k2's list is unknown, not empty)", seen)
	}
}

// editDistance is the full Levenshtein table of a and b, in bytes: the
// reference boundedEditDistance is checked against.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestDiscoverySharedLists: keys whose models lists name the same models
// share one learned name set (a 1000-key pool of one account held a map
// and a copy of every name per key), across refresh rounds too; a key
// with another list keeps its own, and routing by the lists is unchanged.
func TestDiscoverySharedLists(t *testing.T) {
	same := []string{"s-one", "s-two", "s-three"}
	_, base := mock(t, mockupstream.Config{
		Default: mockupstream.KeyBehavior{Models: same},
		Keys: map[string]mockupstream.KeyBehavior{
			"dsx-9": {Models: []string{"s-three", "s-other"}},
		},
	})
	var keys strings.Builder
	for i := 1; i <= 8; i++ {
		keys.WriteString(discKey(fmt.Sprintf("dsx-%d", i), base, fmt.Sprintf("x%d", i)))
	}
	keys.WriteString(discKey("dsx-9", base, "x9"))
	gw := gateway(t, gatewayBlock("\t\tpool sharedlists {\n\t\t\tmodels auto\n\t\t\trefresh 100ms\n"+keys.String()+"\t\t}\n"))

	// sets returns the snapshot's distinct sets and how many keys hold each
	sets := func() (map[uintptr]int, *learnedSnap) {
		snap := learnedFor("sharedlists").load()
		if snap == nil {
			return nil, nil
		}
		n := map[uintptr]int{}
		for _, set := range snap.keys {
			n[reflect.ValueOf(set).Pointer()]++
		}
		return n, snap
	}
	var first uintptr
	eventually(t, 5*time.Second, "every key's list learned", func() bool {
		_, snap := sets()
		return snap != nil && len(snap.keys) == 9
	})
	n, snap := sets()
	if len(n) != 2 {
		t.Fatalf("%d distinct sets for 9 keys with 2 distinct lists: %v", len(n), n)
	}
	for id, c := range n {
		if c == 8 {
			first = id
		}
	}
	if first == 0 {
		t.Fatalf("the 8 keys with one list do not share a set: %v", n)
	}
	if want := []string{"s-one", "s-other", "s-three", "s-two"}; !slices.Equal(snap.names, want) {
		t.Fatalf("learned names %v, want %v", snap.names, want)
	}
	// a refresh round keeps the shared set
	before := learnedFor("sharedlists").load()
	eventually(t, 5*time.Second, "a refresh round", func() bool {
		return learnedFor("sharedlists").load() != before
	})
	if n, _ := sets(); len(n) != 2 || n[first] != 8 {
		t.Fatalf("after a refresh: %v, want the 8 keys still on set %x", n, first)
	}
	for i := 0; i < 4; i++ {
		if st, via, b := routedVia(t, gw, "s-other"); st != 200 || via != "sharedlists/x9" {
			t.Fatalf("s-other: %d via %q %s", st, via, b)
		}
		if st, via, b := routedVia(t, gw, "s-one"); st != 200 || via == "sharedlists/x9" {
			t.Fatalf("s-one: %d via %q %s", st, via, b)
		}
	}
}
