package caddymodule

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestConsoleModels: GET /llm_gateway/models lists the exact model names
// each pool serves, once each and in config order; a wildcard pool adds
// none; a POST is refused.
func TestConsoleModels(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	_, admin := adminGateway(t, gatewayBlock(
		poolBlock("con-models-a", base, 1, "\t\t\tmodels mock-gpt mock-fast\n"),
		poolBlock("con-models-b", base, 1, "\t\t\tmodels mock-fast mock-big\n"),
		poolBlock("con-models-c", base, 1, "\t\t\tmodels *\n")), "")
	code, b := adminDo(t, http.MethodGet, admin+"/llm_gateway/models")
	if code != 200 {
		t.Fatalf("GET models: %d %s", code, b)
	}
	var got consoleModels
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("GET models: %v\n%s", err, b)
	}
	if s := strings.Join(got.Models, ","); s != "mock-gpt,mock-fast,mock-big" {
		t.Fatalf("models = %s, want mock-gpt,mock-fast,mock-big (%s)", s, b)
	}
	var pools []string
	for _, p := range got.Pools {
		pools = append(pools, p.Name+"="+strings.Join(p.Models, "+"))
	}
	if s := strings.Join(pools, " "); s != "con-models-a=mock-gpt+mock-fast con-models-b=mock-fast+mock-big con-models-c=" {
		t.Fatalf("pools = %s", s)
	}
	if code, b := adminDo(t, http.MethodPost, admin+"/llm_gateway/models"); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST models: %d %s, want 405", code, b)
	}
}

// TestConsoleRequestCost: the request log carries each request's cost
// (USD, from the price table: here 4 and 8 USD per million input and
// output tokens), and none for a model without a price.
func TestConsoleRequestCost(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	forgetCostState()
	t.Cleanup(forgetCostState)
	gw, admin := adminGateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n\t\tprice mock-gpt input 4 output 8\n"+
		"\t\tpool con-cost {\n\t\t\tkey mk-cost "+base+" {\n\t\t\t\tid cost\n\t\t\t}\n\t\t}\n\t}\n", "")
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("mock-gpt", "what does this cost", false))
	if resp.StatusCode != 200 {
		t.Fatalf("priced request: %d %s", resp.StatusCode, body)
	}
	priced := resp.Header.Get("X-Request-Id")
	resp, body = post(t, gw+"/v1/chat/completions", chatBody("unpriced-model-x", "and this", false))
	if resp.StatusCode != 200 {
		t.Fatalf("unpriced request: %d %s", resp.StatusCode, body)
	}
	unpriced := resp.Header.Get("X-Request-Id")
	var e recentRequest
	eventually(t, 5*time.Second, "the priced request in the log", func() bool {
		p := adminRequests(t, admin, "id="+priced)
		if len(p.Requests) == 1 {
			e = p.Requests[0]
		}
		return len(p.Requests) == 1
	})
	want := float64(e.Tokens.Input*4+e.Tokens.Output*8) / 1e6
	if e.Tokens.Input == 0 || e.Tokens.Output == 0 || e.CostUSD == nil || math.Abs(*e.CostUSD-want) > 1e-12 {
		t.Fatalf("priced request: tokens %+v cost %v, want %v", e.Tokens, e.CostUSD, want)
	}
	eventually(t, 5*time.Second, "the unpriced request in the log", func() bool {
		return len(adminRequests(t, admin, "id="+unpriced).Requests) == 1
	})
	if u := adminRequests(t, admin, "id="+unpriced).Requests[0]; u.CostUSD != nil {
		t.Fatalf("unpriced request has cost %v", *u.CostUSD)
	}
}

// TestConsoleGzip: a large admin answer (the pools view of 60 keys) is
// sent gzip-compressed to a client that accepts gzip, decompresses to the
// same JSON, and is plain for one that does not; an error and a small
// answer stay plain.
func TestConsoleGzip(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	_, admin := adminGateway(t, gatewayBlock(poolBlock("con-gzip", base, 60, "")), "")
	get := func(path, accept string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, admin+path, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept) // set by hand: the transport leaves the body compressed
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	plainResp, plain := get("/llm_gateway/pools", "")
	if plainResp.StatusCode != 200 || plainResp.Header.Get("Content-Encoding") != "" || !json.Valid(plain) {
		t.Fatalf("plain pools: %d %q %.100s", plainResp.StatusCode, plainResp.Header.Get("Content-Encoding"), plain)
	}
	zResp, z := get("/llm_gateway/pools", "br, gzip;q=0.8")
	if zResp.StatusCode != 200 || zResp.Header.Get("Content-Encoding") != "gzip" || zResp.Header.Get("Content-Length") != strconv.Itoa(len(z)) {
		t.Fatalf("gzip pools: %d %v, %d bytes", zResp.StatusCode, zResp.Header, len(z))
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	unz, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var a, b []poolView
	if json.Unmarshal(plain, &a) != nil || json.Unmarshal(unz, &b) != nil || len(a) != 1 || len(b) != 1 ||
		len(a[0].Keys) != 60 || len(b[0].Keys) != 60 || b[0].Keys[59].ID != "k60" {
		t.Fatalf("decompressed pools differ: %d pools plain, %d gzip", len(a), len(b))
	}
	if len(z)*4 > len(plain) {
		t.Fatalf("gzip answer %d bytes for %d plain: less than 4x smaller", len(z), len(plain))
	}
	if r, _ := get("/llm_gateway/pools", "gzip;q=0"); r.Header.Get("Content-Encoding") != "" {
		t.Fatalf("gzip;q=0 got Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
	if r, body := get("/llm_gateway/pools?pool=no-such-pool", "gzip"); r.StatusCode != 404 || r.Header.Get("Content-Encoding") != "" ||
		!strings.Contains(string(body), "unknown pool") {
		t.Fatalf("error answer: %d %q %s", r.StatusCode, r.Header.Get("Content-Encoding"), body)
	}
	if r, body := get("/llm_gateway/sessions", "gzip"); r.StatusCode != 200 || r.Header.Get("Content-Encoding") != "" || !json.Valid(body) {
		t.Fatalf("small answer: %d %q %s", r.StatusCode, r.Header.Get("Content-Encoding"), body)
	}
}
