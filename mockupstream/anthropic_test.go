package mockupstream

import (
	"encoding/json"
	"strings"
	"testing"
)

func msgBody(extra string, messages string) string {
	s := `{"model":"claude-test","max_tokens":100,"system":[{"type":"text","text":"be brief"}],"messages":` + messages
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func userMsg(text string) string {
	b, _ := json.Marshal(text)
	return `[{"role":"user","content":[{"type":"text","text":` + string(b) + `}]}]`
}

const anthTools = `"tools":[{"name":"get_weather","description":"w","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},{"name":"ping","input_schema":{"type":"object","properties":{}}}]`

func postMessages(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	st, _, b := mustDo(t, "POST", url+"/v1/messages", "", body, "x-api-key", "ak", "anthropic-version", "2023-06-01")
	return st, b
}

func streamMessages(t *testing.T, url, body string) []sseEvent {
	t.Helper()
	resp, err := do(t, nil, "POST", url+"/v1/messages", "", body, "x-api-key", "ak")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content-type %q", ct)
	}
	evs := readSSE(t, resp.Body)
	for _, ev := range evs {
		if typ, _ := decode(t, []byte(ev.Data))["type"].(string); typ != ev.Event {
			t.Errorf("event name %q but data type %q", ev.Event, typ)
		}
	}
	return evs
}

func eventNames(evs []sseEvent) string {
	var names []string
	for _, ev := range evs {
		names = append(names, ev.Event)
	}
	return strings.Join(names, ",")
}

func TestMessagesNonStream(t *testing.T) {
	s, ts := start(t, Config{})
	st, b := postMessages(t, ts.URL, msgBody("", userMsg("hello there")))
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	m := decode(t, b)
	if id, _ := m["id"].(string); !strings.HasPrefix(id, "msg_") || m["type"] != "message" || m["role"] != "assistant" || m["model"] != "claude-test" {
		t.Errorf("envelope %s", b)
	}
	if path(m, "content", 0, "type") != "text" || path(m, "content", 0, "text") != Text("hello there") {
		t.Errorf("content %s", b)
	}
	if m["stop_reason"] != "end_turn" || m["stop_sequence"] != nil {
		t.Errorf("stop %s", b)
	}
	if _, ok := m["stop_sequence"]; !ok {
		t.Errorf("stop_sequence must be present (null)")
	}
	// input: "be brief" + "hello there" = 4; output = 5 word chunks.
	if path(m, "usage", "input_tokens") != 4.0 || path(m, "usage", "output_tokens") != 5.0 {
		t.Errorf("usage %v", m["usage"])
	}
	ks := s.Stats("ak")
	if ks.LastHeaders.Get("Anthropic-Version") != "2023-06-01" || ks.LastModel != "claude-test" || ks.OK != 1 {
		t.Errorf("stats %+v", ks)
	}

	// count_tokens, with and without /v1.
	st, _, b = mustDo(t, "POST", ts.URL+"/messages/count_tokens", "", msgBody("", userMsg("hello there")), "x-api-key", "ak")
	if st != 200 || string(b) != `{"input_tokens":4}` {
		t.Errorf("count_tokens %d %s", st, b)
	}
	// Anthropic dialect for errors on this path.
	st, b = postMessages(t, ts.URL, `{"model":`)
	if m := decode(t, b); st != 400 || m["type"] != "error" || path(m, "error", "type") != "invalid_request_error" {
		t.Errorf("bad json %d %s", st, b)
	}
}

func TestMessagesStream(t *testing.T) {
	_, ts := start(t, Config{})
	evs := streamMessages(t, ts.URL, msgBody(`"stream":true`, userMsg("one two")))
	words := Words(Text("one two"))
	want := "message_start,content_block_start,ping" + strings.Repeat(",content_block_delta", len(words)) + ",content_block_stop,message_delta,message_stop"
	if got := eventNames(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	start := decode(t, []byte(evs[0].Data))
	if path(start, "message", "role") != "assistant" || path(start, "message", "model") != "claude-test" ||
		path(start, "message", "usage", "input_tokens") != 4.0 || path(start, "message", "usage", "output_tokens") != 1.0 ||
		len(path(start, "message", "content").([]any)) != 0 {
		t.Errorf("message_start %s", evs[0].Data)
	}
	cbs := decode(t, []byte(evs[1].Data))
	if path(cbs, "index") != 0.0 || path(cbs, "content_block", "type") != "text" || path(cbs, "content_block", "text") != "" {
		t.Errorf("content_block_start %s", evs[1].Data)
	}
	if evs[2].Data != `{"type": "ping"}` {
		t.Errorf("ping %s", evs[2].Data)
	}
	var text strings.Builder
	for _, ev := range evs[3 : 3+len(words)] {
		d := decode(t, []byte(ev.Data))
		if path(d, "index") != 0.0 || path(d, "delta", "type") != "text_delta" {
			t.Errorf("delta %s", ev.Data)
		}
		text.WriteString(path(d, "delta", "text").(string))
	}
	if text.String() != Text("one two") {
		t.Errorf("text %q", text.String())
	}
	md := decode(t, []byte(evs[len(evs)-2].Data))
	if path(md, "delta", "stop_reason") != "end_turn" || path(md, "usage", "output_tokens") != float64(len(words)) {
		t.Errorf("message_delta %s", evs[len(evs)-2].Data)
	}
}

func TestMessagesToolUse(t *testing.T) {
	_, ts := start(t, Config{})
	// Non-stream.
	_, b := postMessages(t, ts.URL, msgBody(anthTools, userMsg("what tool would you use")))
	m := decode(t, b)
	if m["stop_reason"] != "tool_use" || path(m, "content", 0, "type") != "tool_use" || path(m, "content", 0, "name") != "get_weather" ||
		path(m, "content", 0, "input", "city") != "mock" {
		t.Errorf("tool_use %s", b)
	}
	if id, _ := path(m, "content", 0, "id").(string); !strings.HasPrefix(id, "toolu_") {
		t.Errorf("tool id %v", path(m, "content", 0, "id"))
	}
	// tool_choice {type:tool,name} forces a named tool; {type:none} forbids.
	_, b = postMessages(t, ts.URL, msgBody(anthTools+`,"tool_choice":{"type":"tool","name":"ping"}`, userMsg("hi")))
	if m := decode(t, b); path(m, "content", 0, "name") != "ping" || len(path(m, "content", 0, "input").(map[string]any)) != 0 {
		t.Errorf("forced tool %s", b)
	}
	_, b = postMessages(t, ts.URL, msgBody(anthTools+`,"tool_choice":{"type":"none"}`, userMsg("tool")))
	if decode(t, b)["stop_reason"] != "end_turn" {
		t.Errorf("tool_choice none %s", b)
	}
	// Tool result round trip.
	round := `[{"role":"user","content":"use a tool"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"rain"}]}]}]`
	_, b = postMessages(t, ts.URL, msgBody(anthTools, round))
	if got := path(decode(t, b), "content", 0, "text"); got != "Tool said: rain" {
		t.Errorf("tool result answer %q", got)
	}

	// Stream.
	evs := streamMessages(t, ts.URL, msgBody(anthTools+`,"stream":true`, userMsg("use the tool")))
	names := eventNames(evs)
	if !strings.HasPrefix(names, "message_start,content_block_start,ping,content_block_delta,") || !strings.HasSuffix(names, ",content_block_delta,content_block_stop,message_delta,message_stop") {
		t.Errorf("events %s", names)
	}
	cbs := decode(t, []byte(evs[1].Data))
	if path(cbs, "content_block", "type") != "tool_use" || path(cbs, "content_block", "name") != "get_weather" ||
		len(path(cbs, "content_block", "input").(map[string]any)) != 0 {
		t.Errorf("tool block start %s", evs[1].Data)
	}
	var args strings.Builder
	n := 0
	for i, ev := range evs {
		if ev.Event != "content_block_delta" {
			continue
		}
		d := decode(t, []byte(ev.Data))
		if path(d, "delta", "type") != "input_json_delta" {
			t.Errorf("delta %s", ev.Data)
		}
		pj := path(d, "delta", "partial_json").(string)
		if i == 3 && pj != "" {
			t.Errorf("first partial_json %q, want empty", pj)
		}
		args.WriteString(pj)
		n++
	}
	if args.String() != `{"city":"mock"}` || n < 3 {
		t.Errorf("partial_json %q in %d deltas", args.String(), n)
	}
	if md := decode(t, []byte(evs[len(evs)-2].Data)); path(md, "delta", "stop_reason") != "tool_use" {
		t.Errorf("message_delta %s", evs[len(evs)-2].Data)
	}
}

func TestMessagesThinking(t *testing.T) {
	_, ts := start(t, Config{})
	think := `"thinking":{"type":"enabled","budget_tokens":1024}`
	_, b := postMessages(t, ts.URL, msgBody(think, userMsg("why")))
	m := decode(t, b)
	if path(m, "content", 0, "type") != "thinking" || path(m, "content", 0, "thinking") != ReasoningText("why") ||
		path(m, "content", 0, "signature") == "" || path(m, "content", 1, "text") != Text("why") {
		t.Errorf("thinking non-stream %s", b)
	}

	evs := streamMessages(t, ts.URL, msgBody(think+`,"stream":true`, userMsg("why")))
	tw, aw := len(Words(ReasoningText("why"))), len(Words(Text("why")))
	want := "message_start,content_block_start,ping" + strings.Repeat(",content_block_delta", tw+1) + ",content_block_stop,content_block_start" +
		strings.Repeat(",content_block_delta", aw) + ",content_block_stop,message_delta,message_stop"
	if got := eventNames(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if cb := decode(t, []byte(evs[1].Data)); path(cb, "content_block", "type") != "thinking" || path(cb, "content_block", "signature") != "" {
		t.Errorf("thinking start %s", evs[1].Data)
	}
	var thinking strings.Builder
	for _, ev := range evs[3 : 3+tw] {
		d := decode(t, []byte(ev.Data))
		if path(d, "delta", "type") != "thinking_delta" || path(d, "index") != 0.0 {
			t.Errorf("thinking delta %s", ev.Data)
		}
		thinking.WriteString(path(d, "delta", "thinking").(string))
	}
	if thinking.String() != ReasoningText("why") {
		t.Errorf("thinking %q", thinking.String())
	}
	sig := decode(t, []byte(evs[3+tw].Data))
	if path(sig, "delta", "type") != "signature_delta" || path(sig, "delta", "signature") == "" {
		t.Errorf("signature %s", evs[3+tw].Data)
	}
	if cb := decode(t, []byte(evs[5+tw].Data)); path(cb, "index") != 1.0 || path(cb, "content_block", "type") != "text" {
		t.Errorf("text block start %s", evs[5+tw].Data)
	}
	if md := decode(t, []byte(evs[len(evs)-2].Data)); path(md, "usage", "output_tokens") != float64(tw+aw) {
		t.Errorf("message_delta %s", evs[len(evs)-2].Data)
	}
}
