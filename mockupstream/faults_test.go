package mockupstream

import (
	"io"
	"strings"
	"testing"
)

func TestStreamErrorAfter(t *testing.T) {
	s, ts := start(t, Config{Keys: map[string]KeyBehavior{
		"e":  {StreamErrorAfter: 2},
		"ea": {StreamErrorAfter: 1, FailStatus: 529},
	}})
	resp, err := do(t, nil, "POST", ts.URL+"/v1/chat/completions", "e", chatBody("one two three", `"stream":true`))
	if err != nil {
		t.Fatal(err)
	}
	evs := readSSE(t, resp.Body)
	resp.Body.Close()
	// role chunk, 2 content chunks, error
	if len(evs) != 4 {
		t.Fatalf("%d events: %v", len(evs), evs)
	}
	last := decode(t, []byte(evs[3].Data))
	if path(last, "error", "type") != "server_error" || path(last, "error", "message") == nil {
		t.Errorf("error event %s", evs[3].Data)
	}
	if ks := s.Stats("e"); ks.Failed != 1 || ks.OK != 0 {
		t.Errorf("stats %+v", ks)
	}

	resp, err = do(t, nil, "POST", ts.URL+"/v1/messages", "ea", msgBody(`"stream":true`, userMsg("one two")))
	if err != nil {
		t.Fatal(err)
	}
	evs = readSSE(t, resp.Body)
	resp.Body.Close()
	if got := eventNames(evs); got != "message_start,content_block_start,ping,content_block_delta,error" {
		t.Fatalf("events %s", got)
	}
	if d := decode(t, []byte(evs[4].Data)); d["type"] != "error" || path(d, "error", "type") != "overloaded_error" {
		t.Errorf("error event %s", evs[4].Data)
	}
}

func TestStreamCutAfter(t *testing.T) {
	s, ts := start(t, Config{Default: KeyBehavior{StreamCutAfter: 3}})
	resp, err := do(t, nil, "POST", ts.URL+"/v1/chat/completions", "c", chatBody("one two three four", `"stream":true`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("cut stream read without error")
	}
	// Everything written before the cut arrives: role + 3 content chunks.
	if n := strings.Count(string(b), "data: "); n != 4 || strings.Contains(string(b), "[DONE]") || strings.Contains(string(b), "finish_reason\":\"stop") {
		t.Errorf("%d events before the cut: %q", n, b)
	}
	eventually(t, "handler done", func() bool { return s.Stats("c").InFlight == 0 })
	if ks := s.Stats("c"); ks.Resets != 1 || ks.OK != 0 {
		t.Errorf("stats %+v", ks)
	}
}
