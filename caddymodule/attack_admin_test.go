package caddymodule

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/tidwall/gjson"
)

// TestAttackAdminQueries: hostile query strings on the admin API's read
// routes get a 4xx with a JSON error or a meaningful 200, never a 500,
// and no answer shows a gateway key or an upstream secret.
func TestAttackAdminQueries(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	gw, admin := adminGateway(t, gatewayBlock(poolBlock("atk", base, 2, "\t\t\tmodels mock-gpt\n")), "")
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "hi", false)); resp.StatusCode != 200 {
		t.Fatalf("warm-up: %d %s", resp.StatusCode, b)
	}
	long := strings.Repeat("A", 60000)
	routes := []string{"requests", "sessions", "usage", "spend", "prices", "budgets", "egress", "models", "pools"}
	queries := []string{
		"limit=99999999999999999999", "limit=-1", "limit=0", "limit=abc", "limit=1e9", "limit=2147483648",
		"before=-1", "before=18446744073709551615", "before=x",
		"from=9999999999999", "to=-9999999999999", "from=-62135596801", "to=253402300800",
		"from=9999-12-31T23:59:59Z&to=0001-01-01T00:00:00Z", "from=2030-01-01T00:00:00Z&to=2020-01-01T00:00:00Z",
		"from=-9223372036854775808&to=9223372036854775807",
		"by=nope", "by=key&by=model", "granularity=week", "format=xml", "format=csv&from=-9223372036854775808",
		"status=6xx", "status=2", "pool=nope", "pool=" + long, "q=" + long, "id=" + long, "by=" + long,
		"limit=1&limit=-5", "%zz=1", "limit=" + long, "before=" + long, "granularity=" + long, "format=" + long,
	}
	for _, route := range routes {
		for _, q := range queries {
			code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/"+route+"?"+q)
			label := route + "?" + q[:min(len(q), 60)]
			if code >= 500 {
				t.Errorf("%s: %d %s", label, code, b[:min(len(b), 300)])
			}
			if code >= 400 && !gjson.ValidBytes(b) {
				t.Errorf("%s: %d, body not JSON: %s", label, code, b[:min(len(b), 300)])
			}
			if len(b) > 2000 && code >= 400 {
				t.Errorf("%s: %d, the error echoes %d bytes", label, code, len(b))
			}
			for _, s := range []string{gatewayKey, "mk-1", "mk-2"} {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("%s: answer shows secret %q", label, s)
				}
			}
		}
	}
	// the usage range is echoed in the answer: far-out dates are refused
	// with a 400 naming the parameter, not a 500 from the JSON encoder
	for _, q := range []string{"from=-62135596801", "to=253402300800", "from=9999999999999", "to=9999-12-31T23:59:59-23:59"} {
		code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/usage?"+q)
		if code != 400 || !strings.Contains(gjson.GetBytes(b, "error").Str, strings.SplitN(q, "=", 2)[0]+":") {
			t.Errorf("usage?%s: %d %s", q, code, b)
		}
	}
	// a sane but reversed range is an empty answer
	if code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/usage?from=2030-01-01T00:00:00Z&to=2020-01-01T00:00:00Z"); code != 200 || gjson.GetBytes(b, "points.#").Int() != 0 {
		t.Errorf("reversed range: %d %s", code, b)
	}
}

// TestAttackAdminPosts: hostile bodies for the playground and the unpin
// route get a 4xx with a JSON error, and the playground's answers for a
// model whose upstream 404s (streamed) and for a pool whose keys all
// cool are failures in the client's dialect that show no secret.
func TestAttackAdminPosts(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	_, base404 := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Status: 404}})
	_, base429 := mock(t, mockupstream.Config{Default: mockupstream.KeyBehavior{Status: 429, RetryAfter: "3600"}})
	_, admin := adminGateway(t, gatewayBlock(
		poolBlock("atk-ok", base, 1, "\t\t\tmodels mock-gpt\n"),
		poolBlock("atk-404", base404, 1, "\t\t\tmodels gone-model\n"),
		poolBlock("atk-429", base429, 2, "\t\t\tmodels hot-model\n")), "")
	postBody := func(path, ctype string, body io.Reader) (int, []byte) {
		resp, err := http.Post(admin+path, ctype, body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	noSecret := func(label string, b []byte) {
		t.Helper()
		for _, s := range []string{gatewayKey, "mk-1", "mk-2"} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s: answer shows secret %q: %s", label, s, b)
			}
		}
	}
	huge := `{"model":"mock-gpt","prompt":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"not JSON", "<xml/>", 400},
		{"empty", "", 400},
		{"JSON array", `[1,2]`, 400},
		{"wrong types", `{"model":7,"prompt":true}`, 400},
		{"unknown dialect", `{"model":"mock-gpt","dialect":"gemini","prompt":"x"}`, 400},
		{"over 1 MiB", huge, 400},
		{"raw NUL bytes", "{\"model\":\"mock-gpt\u0000\",\"prompt\":\"\u0000\"}", 400},
		{"escaped NUL in the model", `{"model":"mock-gpt\\u0000","prompt":"\\u0000"}`, 404},
	} {
		code, b := postBody("/llm_gateway/playground", "application/json", strings.NewReader(c.body))
		if code != c.want || !gjson.ValidBytes(b) {
			t.Errorf("playground %s: %d %s, want %d", c.name, code, b[:min(len(b), 300)], c.want)
		}
		noSecret("playground "+c.name, b)
	}
	// just under 1 MiB is served
	nearly := `{"model":"mock-gpt","prompt":"` + strings.Repeat("y", 1<<20-100) + `"}`
	if code, b := postBody("/llm_gateway/playground", "application/json", strings.NewReader(nearly)); code != 200 {
		t.Errorf("playground near 1 MiB: %d %s", code, b[:min(len(b), 300)])
	}
	// a streamed request whose upstream 404s: a failure in the dialect
	code, b := postBody("/llm_gateway/playground", "application/json",
		strings.NewReader(`{"model":"gone-model","dialect":"anthropic","stream":true,"prompt":"x"}`))
	if code < 400 || code >= 500 && code != 502 && code != 503 || gjson.GetBytes(b, "type").Str != "error" {
		t.Errorf("stream with a 404 upstream: %d %s", code, b)
	}
	noSecret("stream 404", b)
	// every key of the pool cooling: the second request finds none
	for i := 0; i < 3; i++ {
		code, b = postBody("/llm_gateway/playground", "application/json",
			strings.NewReader(`{"model":"hot-model","dialect":"responses","prompt":"x"}`))
		if code != 429 && code != 503 || gjson.GetBytes(b, "error").Type == gjson.Null {
			t.Errorf("all keys cooling, try %d: %d %s", i, code, b)
		}
		noSecret("all cooling", b)
	}
	// unpin with hostile queries
	for q, want := range map[string]int{
		"":                    400,
		"pool=atk-ok":         400,
		"pool=nope&session=s": 404,
		"pool=atk-ok&session=" + url.QueryEscape(strings.Repeat("s", 50000)): 404,
		"pool=atk-ok&session=%00":            404,
		"pool=atk-ok&pool=atk-404&session=x": 404,
	} {
		code, b := postBody("/llm_gateway/sessions/unpin?"+q, "text/plain", strings.NewReader("garbage"))
		if code != want || !gjson.ValidBytes(b) || len(b) > 1000 {
			t.Errorf("unpin ?%s: %d %s, want %d", q[:min(len(q), 60)], code, b[:min(len(b), 300)], want)
		}
	}
	// the request log of these failures shows no secret either
	code, b = adminDo(t, http.MethodGet, admin+"/llm_gateway/requests?gateway_key="+playgroundGatewayKey)
	if code != 200 || gjson.GetBytes(b, "requests.#").Int() < 4 {
		t.Fatalf("request log: %d %s", code, b)
	}
	noSecret("request log", b)
}
