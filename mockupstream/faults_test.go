package mockupstream

import (
	"bufio"
	"context"
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

// TestStreamHold: the stream sends its opening event and StreamHoldAfter
// content events, then nothing more until the client goes away; it is
// counted as Canceled.
func TestStreamHold(t *testing.T) {
	s, ts := start(t, Config{Default: KeyBehavior{StreamHold: true, StreamHoldAfter: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := do(t, ctx, "POST", ts.URL+"/v1/chat/completions", "h", chatBody("one two three four", `"stream":true`))
	if err != nil {
		t.Fatal(err)
	}
	// role chunk and one content chunk, then the stream holds
	br := bufio.NewReader(resp.Body)
	var got []string
	for len(got) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		if strings.HasPrefix(line, "data: ") {
			got = append(got, line)
		}
	}
	if !strings.Contains(got[1], `"content":"Mock `) {
		t.Fatalf("events %q", got)
	}
	if ks := s.Stats("h"); ks.InFlight != 1 || ks.OK+ks.Canceled != 0 {
		t.Fatalf("held stream: stats %+v", ks)
	}
	cancel()
	resp.Body.Close()
	eventually(t, "handler done", func() bool { return s.Stats("h").InFlight == 0 })
	if ks := s.Stats("h"); ks.Canceled != 1 || ks.OK != 0 {
		t.Errorf("stats %+v", ks)
	}
}
