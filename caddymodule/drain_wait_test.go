package caddymodule

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestDrainWaitAfterErrorIsBounded: after an in-band error that reached
// the client, an upstream that holds its stream open (keep-alives, no
// usage) is waited for at most drainWaitAfterError, not for the rest of
// request_timeout (10s here): a translated Responses client gets its
// response.failed (without usage) and the end of its stream well before
// it (3s allowed for a loaded machine), a Chat passthrough client the end
// of its stream. A usage chunk that follows the error promptly (30ms) is
// still booked: in response.failed and in the request log.
func TestDrainWaitAfterErrorIsBounded(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		_, _ = io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"error\":{\"message\":\"overloaded mid-stream\",\"type\":\"server_error\",\"code\":\"server_error\"}}\n\n")
		fl.Flush()
		if r.Header.Get("Authorization") == "Bearer oa-2" {
			time.Sleep(30 * time.Millisecond) // the usage, promptly
			_, _ = io.WriteString(w, chatLateUsage)
			fl.Flush()
		}
		for {
			select {
			case <-r.Context().Done():
				return
			case <-release:
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
					return
				}
				fl.Flush()
			}
		}
	}))
	defer up.Close()
	defer close(release)
	appLog := filepath.Join(t.TempDir(), "app.log")
	forgetCostState()
	t.Cleanup(forgetCostState)
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n\t\tprice gpt-x input 1 output 2\n"+
		"\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n\t\t\trequest_timeout 10s\n"+
		"\t\t\tkey oa-1 "+up.URL+"/v1 {\n\t\t\t\tid o1\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey oa-2 "+up.URL+"/v1 {\n\t\t\t\tid o2\n\t\t\t\tpriority 2\n\t\t\t}\n"+
		"\t\t\tkey oa-3 "+up.URL+"/v1 {\n\t\t\t\tid o3\n\t\t\t\tpriority 3\n\t\t\t}\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")

	for round, w := range []struct {
		in, out int64
	}{{0, 0}, {21, 13}} {
		t0 := time.Now()
		resp, b := post(t, gw+"/v1/responses", []byte(`{"model":"gpt-x","stream":true,"input":"hi"}`))
		took := time.Since(t0)
		evs := sseEvents(b)
		if len(evs) < 2 {
			t.Fatalf("round %d: %d %s", round, resp.StatusCode, b)
		}
		last := evs[len(evs)-1]
		u := gjson.GetBytes(last.Data, "response.usage")
		if resp.StatusCode != 200 || last.Event != "response.failed" || evs[len(evs)-2].Event != "error" ||
			u.Get("input_tokens").Int() != w.in || u.Get("output_tokens").Int() != w.out || strings.Contains(string(b), "response.completed") {
			t.Errorf("round %d: %d\n%s", round, resp.StatusCode, b)
		}
		if took > 3*time.Second {
			t.Errorf("round %d: the Responses client waited %v for response.failed (bound %v, request_timeout 10s)", round, took, drainWaitAfterError)
		}
	}
	// a Chat passthrough client: its stream ends at the bound too
	t0 := time.Now()
	resp, b := post(t, gw+"/v1/chat/completions", []byte(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if took := time.Since(t0); resp.StatusCode != 200 || !strings.HasSuffix(string(b), "\"code\":\"server_error\"}}\n\n") || took > 3*time.Second {
		t.Errorf("chat client: %d after %v\n%s", resp.StatusCode, took, b)
	}
	es := requestEntries(t, appLog, 3)
	for i, w := range []struct {
		key     string
		in, out float64
	}{{"o1", 0, 0}, {"o2", 21, 13}, {"o3", 0, 0}} {
		e := es[i]
		if e["key"] != w.key || num(e["input_tokens"]) != w.in || num(e["output_tokens"]) != w.out || e["stream_outcome"] != streamErrorEvent {
			t.Errorf("request %d: key %v tokens %v / %v outcome %v, want %s %v / %v error", i, e["key"], e["input_tokens"], e["output_tokens"], e["stream_outcome"], w.key, w.in, w.out)
		}
	}
}

// TestDrainWaitResponsesPassthrough: a Responses upstream (dialect
// responses) that sends an error event and then holds its stream open
// without its response.failed: the Responses client gets the error event
// as it came and the end of its stream at the drain's bound, not at
// request_timeout (10s); a response.failed that follows promptly is
// relayed as it came, its usage booked.
func TestDrainWaitResponsesPassthrough(t *testing.T) {
	const (
		created = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-x\",\"output\":[]}}\n\n"
		delta   = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"partial\"}\n\n"
		errEv   = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n"
		failed  = "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"model\":\"gpt-x\",\"output\":[],\"error\":{\"code\":\"server_error\",\"message\":\"boom\"},\"usage\":{\"input_tokens\":8,\"output_tokens\":3,\"total_tokens\":11}}}\n\n"
	)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		_, _ = io.WriteString(w, created+delta+errEv)
		fl.Flush()
		if r.Header.Get("Authorization") == "Bearer rs-2" {
			time.Sleep(30 * time.Millisecond)
			_, _ = io.WriteString(w, failed)
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer up.Close()
	defer close(release)
	appLog := filepath.Join(t.TempDir(), "app.log")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n"+
		"\t\tpool rs {\n\t\t\tmodels gpt-*\n\t\t\tstrategy priority\n\t\t\taffinity off\n\t\t\trequest_timeout 10s\n"+
		"\t\t\tkey rs-1 "+up.URL+"/v1 {\n\t\t\t\tid r1\n\t\t\t\tdialect responses\n\t\t\t\tpriority 1\n\t\t\t}\n"+
		"\t\t\tkey rs-2 "+up.URL+"/v1 {\n\t\t\t\tid r2\n\t\t\t\tdialect responses\n\t\t\t\tpriority 2\n\t\t\t}\n\t\t}\n\t}\n",
		"\tlog {\n\t\toutput file "+appLog+"\n\t\tformat json\n\t\tlevel INFO\n\t}")
	for round, want := range []string{created + delta + errEv, created + delta + errEv + failed} {
		t0 := time.Now()
		resp, b := post(t, gw+"/v1/responses", []byte(`{"model":"gpt-x","stream":true,"input":"hi"}`))
		if took := time.Since(t0); resp.StatusCode != 200 || string(b) != want || took > 3*time.Second {
			t.Errorf("round %d: %d after %v\n%s\nwant\n%s", round, resp.StatusCode, took, b, want)
		}
	}
	es := requestEntries(t, appLog, 2)
	for i, w := range []struct {
		key     string
		in, out float64
	}{{"r1", 0, 0}, {"r2", 8, 3}} {
		if e := es[i]; e["key"] != w.key || num(e["input_tokens"]) != w.in || num(e["output_tokens"]) != w.out || e["stream_outcome"] != streamErrorEvent {
			t.Errorf("request %d: key %v tokens %v / %v outcome %v, want %s %v / %v error", i, e["key"], e["input_tokens"], e["output_tokens"], e["stream_outcome"], w.key, w.in, w.out)
		}
	}
}
