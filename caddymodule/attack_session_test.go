package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// sessionHostile is an upstream whose every answer is the body (and, for
// a stream, the events; then it holds the stream open for hold) the test
// sets, whatever the path: an upstream or a relay that disguises its
// failure as a success.
type sessionHostile struct {
	mu   sync.Mutex
	body string
	sse  bool
	hold time.Duration
}

func (h *sessionHostile) set(body string, sse bool, hold time.Duration) {
	h.mu.Lock()
	h.body, h.sse, h.hold = body, sse, hold
	h.mu.Unlock()
}

func (h *sessionHostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	body, sse, hold := h.body, h.sse, h.hold
	h.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(200)
	_, _ = io.WriteString(w, body)
	w.(http.Flusher).Flush()
	if hold > 0 {
		select {
		case <-r.Context().Done():
		case <-time.After(hold):
		}
	}
}

// sessionHostileGateway serves model x-chat from one OpenAI Chat key,
// x-anth from one Anthropic key and x-resp from one Responses key, all of
// the hostile upstream; request_timeout 10s.
func sessionHostileGateway(t *testing.T) (*sessionHostile, string) {
	t.Helper()
	h := &sessionHostile{}
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	pool := func(name, model, dialect string) string {
		return "\t\tpool " + name + " {\n\t\t\tmodels " + model + "\n\t\t\taffinity off\n\t\t\trequest_timeout 10s\n" +
			"\t\t\tkey " + name + "-key " + up.URL + "/v1 {\n\t\t\t\tid " + name + "1\n\t\t\t\tdialect " + dialect + "\n\t\t\t}\n\t\t}\n"
	}
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n\t\tusage_file off\n"+
		pool("hc", "x-chat", "openai")+pool("ha", "x-anth", "anthropic")+pool("hr", "x-resp", "responses")+"\t}\n")
	return h, gw
}

// sessionClientBody is a request of the client dialect for model.
func sessionClientBody(client, model string, stream bool) (string, string, []string) {
	switch client {
	case "chat":
		return "/v1/chat/completions", string(chatBody(model, "hello", stream)), nil
	case "messages":
		return "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":50,"stream":%v,"messages":[{"role":"user","content":"hello"}]}`, model, stream),
			[]string{"Anthropic-Version", "2023-06-01"}
	}
	return "/v1/responses", fmt.Sprintf(`{"model":%q,"stream":%v,"input":"hello"}`, model, stream), nil
}

// sessionClientFailed reports whether b (status code) is a failure in the
// client's dialect: an error status with the dialect's error object, or a
// stream (200) whose last event is the dialect's error and that has no
// clean terminator.
func sessionClientFailed(client string, code int, b []byte, stream bool) string {
	if code >= 400 {
		switch client {
		case "messages":
			if gjson.GetBytes(b, "type").Str != "error" || gjson.GetBytes(b, "error.type").Str == "" {
				return "not an Anthropic error object"
			}
		default:
			if gjson.GetBytes(b, "error.message").Str == "" {
				return "not an OpenAI error object"
			}
		}
		return ""
	}
	if code != 200 || !stream {
		return fmt.Sprintf("status %d for a failure", code)
	}
	evs := sseEvents(b)
	if len(evs) == 0 {
		return "an empty 200 stream"
	}
	last := evs[len(evs)-1]
	switch client {
	case "chat":
		if strings.Contains(string(b), "data: [DONE]") {
			return "a clean [DONE]"
		}
		if !gjson.GetBytes(last.Data, "error").Exists() {
			return "last chunk is not an error"
		}
	case "messages":
		if strings.Contains(string(b), "message_stop") {
			return "a clean message_stop"
		}
		if last.Event != "error" {
			return "last event is not error"
		}
	default:
		if strings.Contains(string(b), "response.completed") {
			return "a response.completed"
		}
		if last.Event != "response.failed" && last.Event != "error" {
			return "last event is " + last.Event
		}
	}
	return ""
}

// TestAttackSessionDisguisedFailures: an upstream of each dialect (Chat,
// Anthropic, Responses) that answers 2xx with what is a failure (error
// objects, empty or object choices, truncated JSON, streams of bare
// "choices": [] then [DONE], an error event and then nothing for seconds,
// a Responses stream whose response.failed never comes, an oversized usage
// chunk after an error): every client dialect sees a failure in its
// dialect, the request log records one, and the client is not held for
// request_timeout (10s; 4s allowed on a loaded machine).
func TestAttackSessionDisguisedFailures(t *testing.T) {
	h, gw := sessionHostileGateway(t)
	bigUsage := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6,"pad":"` + strings.Repeat("p", 9000) + `"}}` + "\n\n"
	chatText := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"Par"},"finish_reason":null}]}` + "\n\n"
	chatErr := `data: {"error":{"message":"boom","type":"server_error","code":"server_error"}}` + "\n\n"
	anStart := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	anText := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Par\"}}\n\n"
	anErr := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	rsCreated := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"x\",\"output\":[]}}\n\n"
	rsDelta := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Par\"}\n\n"
	rsErr := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n"
	cases := []hostileCase{
		{"chat 200 error object", "x-chat", `{"error":{"message":"boom","type":"server_error"}}`, false, 0},
		{"chat choices object", "x-chat", `{"id":"c","object":"chat.completion","created":1,"model":"x","choices":{"0":{"message":{"role":"assistant","content":"hi"}}}}`, false, 0},
		{"chat truncated JSON", "x-chat", `{"id":"c","object":"chat.completion","created":1,"model":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Par`, false, 0},
		{"chat bare choices then DONE", "x-chat", "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"x\",\"choices\":[]}\n\ndata: [DONE]\n\n", true, 0},
		{"chat error then silence", "x-chat", chatText + chatErr, true, 6 * time.Second},
		{"chat error then 9 KB usage", "x-chat", chatText + chatErr + bigUsage + "data: [DONE]\n\n", true, 0},
		{"chat choices object chunk", "x-chat", chatText + `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":{}}` + "\n\ndata: [DONE]\n\n", true, 0},
		{"anthropic 200 error object", "x-anth", `{"type":"error","error":{"type":"api_error","message":"boom"}}`, false, 0},
		{"anthropic truncated JSON", "x-anth", `{"id":"msg_1","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"Par`, false, 0},
		{"anthropic error then silence", "x-anth", anStart + anText + anErr, true, 6 * time.Second},
		{"anthropic start then EOF", "x-anth", anStart + anText, true, 0},
		{"responses 200 failed object", "x-resp", `{"id":"resp_1","object":"response","status":"failed","model":"x","output":[],"error":{"code":"server_error","message":"boom"}}`, false, 0},
		{"responses 200 error object", "x-resp", `{"error":{"message":"boom","type":"server_error"}}`, false, 0},
		{"responses truncated JSON", "x-resp", `{"id":"resp_1","object":"response","status":"completed","model":"x","output":[{"type":"message"`, false, 0},
		{"responses error, failed never comes", "x-resp", rsCreated + rsDelta + rsErr, true, 6 * time.Second},
		{"responses created then EOF", "x-resp", rsCreated + rsDelta, true, 0},
	}
	sessionRunHostile(t, h, gw, cases)
}

// hostileCase is an upstream's disguised failure for model.
type hostileCase struct {
	name, model, body string
	sse               bool
	hold              time.Duration
}

// sessionRunHostile sends each case's request from every client dialect
// (the one key of the model's pool cleared of its cooldown before each)
// and checks the client saw a failure in its dialect, within 4s, and the
// request log recorded one.
func sessionRunHostile(t *testing.T, h *sessionHostile, gw string, cases []hostileCase) {
	t.Helper()
	for _, c := range cases {
		stream := c.sse
		h.set(c.body, c.sse, c.hold)
		for _, client := range []string{"chat", "messages", "responses"} {
			for _, p := range []string{"hc", "ha", "hr"} {
				poolFor(t, p).ClearCooldown("")
			}
			path, body, hdr := sessionClientBody(client, c.model, stream)
			seq := recentSeq()
			t0 := time.Now()
			resp, b := post(t, gw+path, []byte(body), hdr...)
			took := time.Since(t0)
			if why := sessionClientFailed(client, resp.StatusCode, b, stream); why != "" {
				t.Errorf("%s, %s client: %s: %d\n%.600s", c.name, client, why, resp.StatusCode, b)
			}
			if took > 4*time.Second {
				t.Errorf("%s, %s client: held %v", c.name, client, took)
			}
			rr := recentAfter(t, seq)
			if rr.Status < 400 && (rr.StreamOutcome == streamComplete || rr.StreamOutcome == "") {
				t.Errorf("%s, %s client: logged as a success: %d %q %q", c.name, client, rr.Status, rr.StreamOutcome, attemptOutcomes(rr))
			}
		}
	}
}

// TestAttackSessionDisguisedWholeAnswers: whole 2xx answers that are no
// answer: a Chat answer with "choices": [] and neither usage nor a
// prompt-filter verdict (as a stream of such chunks, a failure, not a
// blocked prompt), an empty Anthropic message whose stop_reason is null,
// a Responses object whose output is an object: a failure for every
// client dialect, never a 200 with an empty answer.
func TestAttackSessionDisguisedWholeAnswers(t *testing.T) {
	h, gw := sessionHostileGateway(t)
	sessionRunHostile(t, h, gw, []hostileCase{
		{"chat empty choices", "x-chat", `{"id":"c","object":"chat.completion","created":1,"model":"x","choices":[]}`, false, 0},
		{"anthropic empty content no stop_reason", "x-anth", `{"id":"msg_1","type":"message","role":"assistant","model":"x","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}`, false, 0},
		{"responses output object", "x-resp", `{"id":"resp_1","object":"response","status":"completed","model":"x","output":{}}`, false, 0},
	})
}

// TestAttackSessionBenchKeysByInput: a client that crafts its request
// around an Anthropic key's input-tokens limit (100; the other key's is
// 100,000) with text the gateway's estimates may misjudge (no spaces,
// runs of spaces, CJK without spaces, the big prompt in a system block
// or a tool result), streamed or not, from an Anthropic or
// a Chat client, never cools a key or counts a failure against it: the
// request is answered (by the larger key when the smaller refuses it), and
// with the smaller key alone it is refused 429 in the client's dialect.
// Requests refused before any key is asked (a Chat custom tool and a
// function tool of one name; custom tools of odd grammars) change no key.
func TestAttackSessionBenchKeysByInput(t *testing.T) {
	_, gw := overLimitGateway(t, false, []ovKey{{"oa-s1", "os1", 0, ""}},
		[]ovKey{{"an-s1", "as1", 100, "org-a"}, {"an-s2", "as2", 100_000, "org-b"}})
	cjk := strings.Repeat("漢字仮名交じり文", 300)
	texts := map[string]string{
		"no spaces":   strings.Repeat("w", 3000),
		"many spaces": "w" + strings.Repeat(" ", 5000) + "w",
		"cjk":         cjk,
		"words":       bigPrompt,
		"cjk words":   strings.Repeat("漢字 ", 400),
	}
	type sent struct{ name, kind, path, body string }
	var all []sent
	for name, text := range texts {
		q, _ := json.Marshal(text)
		bodies := map[string]string{
			"messages":        `{"model":"claude-x","max_tokens":20,"messages":[{"role":"user","content":` + string(q) + `}]}`,
			"messages system": `{"model":"claude-x","max_tokens":20,"system":[{"type":"text","text":` + string(q) + `}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
			"messages tool result": `{"model":"claude-x","max_tokens":20,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + string(q) + `}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`,
			"chat": string(chatBody("claude-x", text, false)),
		}
		for kind, body := range bodies {
			for _, stream := range []bool{false, true} {
				b := body
				if stream {
					b = strings.Replace(b, `{"model":"claude-x",`, `{"model":"claude-x","stream":true,`, 1)
				}
				path := "/v1/messages"
				if kind == "chat" {
					path = "/v1/chat/completions"
				}
				all = append(all, sent{name, kind, path, b})
				resp, rb := post(t, gw+path, []byte(b))
				if resp.StatusCode != 200 {
					t.Errorf("%s, %s, stream %v: %d %.300s", name, kind, stream, resp.StatusCode, rb)
				}
				keysUnblamed(t, "an", "as1", "as2")
			}
		}
	}
	// refused before a key is asked
	for _, body := range []string{
		`{"model":"claude-x","messages":[{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":"f"}},{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`,
		`{"model":"claude-x","messages":[{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":"f"}},{"type":"custom","custom":{"name":"f"}}]}`,
		`{"model":"claude-x","messages":[{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":"g","format":{"type":"grammar","grammar":{"syntax":"regex","definition":"\\"}}}},{"type":"custom","custom":{"name":"g","format":{"type":"text"}}}]}`,
		`{"model":"claude-x","messages":[{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":"h","format":{"type":"grammar","grammar":7}}}]}`,
		`{"model":"claude-x","messages":[{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":"h","format":"lark"}}]}`,
		`{"model":"claude-x","messages":[{"role":"user","content":"x"}],"tools":[{"type":"custom","custom":{"name":7}}]}`,
	} {
		resp, rb := post(t, gw+"/v1/chat/completions", []byte(body))
		if resp.StatusCode != 400 || gjson.GetBytes(rb, "error.message").Str == "" || gjson.GetBytes(rb, "error.type").Str != "invalid_request_error" {
			t.Errorf("%s: %d %s", body, resp.StatusCode, rb)
		}
	}
	keysUnblamed(t, "an", "as1", "as2")
	// the smaller key alone: answered or refused 429 in the client's dialect
	_, gwSmall := overLimitGateway(t, false, []ovKey{{"oa-s2", "os2", 0, ""}}, []ovKey{{"an-s3", "as3", 100, "org-c"}})
	refused := 0
	for _, c := range all {
		resp, rb := post(t, gwSmall+c.path, []byte(c.body))
		if resp.StatusCode != 200 && resp.StatusCode != 429 {
			t.Errorf("small key alone, %s, %s: %d %.300s", c.name, c.kind, resp.StatusCode, rb)
		}
		if resp.StatusCode == 429 {
			refused++
			if (c.kind == "chat") == (gjson.GetBytes(rb, "type").Str == "error") {
				t.Errorf("small key alone, %s, %s: 429 not in the client's dialect: %s", c.name, c.kind, rb)
			}
		}
		keysUnblamed(t, "an", "as3")
	}
	if refused == 0 {
		t.Error("the smaller key refused nothing: the requests are not over its limit")
	}
}

// TestAttackSessionBenchKeysByCachePrefix: a client sends its big prompt
// (400 words) as a prefix it marks with cache_control (a system block,
// then a user turn "hi" that is the last breakpoint; or a top-level
// cache_control). The prefix is not in the cache yet: Anthropic counts a
// cache write toward the input-tokens-per-minute limit (only cache reads
// are free, per its rate limits docs), so the key whose limit is 100
// refuses it. The gateway counts the prefix too (inputTokensFloor's
// total): the refusal is the request's size, not the key's spent window,
// so the key is not cooled and the larger key answers; one such request
// per key must not bench a pool.
func TestAttackSessionBenchKeysByCachePrefix(t *testing.T) {
	_, gw := overLimitGateway(t, false, []ovKey{{"oa-c1", "oc1", 0, ""}},
		[]ovKey{{"an-c1", "ac1", 100, "org-a"}, {"an-c2", "ac2", 100_000, "org-b"}})
	q, _ := json.Marshal(bigPrompt)
	for _, body := range []string{
		`{"model":"claude-x","max_tokens":20,"system":[{"type":"text","text":` + string(q) + `,"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`,
		`{"model":"claude-x","max_tokens":20,"cache_control":{"type":"ephemeral"},"messages":[{"role":"user","content":` + string(q) + `}]}`,
	} {
		resp, rb := post(t, gw+"/v1/messages", []byte(body))
		if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != "an/ac2" {
			t.Errorf("%d via %q %.300s", resp.StatusCode, resp.Header.Get("X-Routed-Via"), rb)
		}
		keysUnblamed(t, "an", "ac1", "ac2")
	}
}

// TestAttackSessionCheckOnlyHostileJSON: hostile JSON to the check-only
// pass of a passthrough request (a Chat client to a Chat key, a Responses
// client to a Responses key, an Anthropic client to an Anthropic key):
// deep nesting, a model, stream or messages given twice (once under an
// escaped name), a NUL where a number belongs, huge numbers, a message
// that is not an object, a body cut short. Each is refused 400 in the
// client's dialect before a key is asked, and the gateway still answers.
func TestAttackSessionCheckOnlyHostileJSON(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	gw := gateway(t, "\tllm_gateway {\n\t\tapi_key "+gatewayKey+"\n"+
		"\t\tpool oa {\n\t\t\tmodels gpt-*\n\t\t\tkey co-1 "+base+" {\n\t\t\t\tid c1\n\t\t\t}\n\t\t}\n"+
		"\t\tpool rs {\n\t\t\tmodels rs-*\n\t\t\tkey cr-1 "+base+" {\n\t\t\t\tid r1\n\t\t\t\tdialect responses\n\t\t\t}\n\t\t}\n"+
		"\t\tpool an {\n\t\t\tmodels claude-*\n\t\t\tkey ca-1 "+root+" {\n\t\t\t\tid a1\n\t\t\t\tdialect anthropic\n\t\t\t}\n\t\t}\n\t}\n")
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	deepObj := strings.Repeat(`{"a":`, 50_000) + "1" + strings.Repeat("}", 50_000)
	type hostile struct{ path, body string }
	var cases []hostile
	for _, d := range []struct{ path, model, msgs string }{
		{"/v1/chat/completions", "gpt-x", `"messages":[{"role":"user","content":"x"}]`},
		{"/v1/responses", "rs-x", `"input":[{"role":"user","content":"x"}]`},
		{"/v1/messages", "claude-x", `"max_tokens":10,"messages":[{"role":"user","content":"x"}]`},
	} {
		mk := func(s string) hostile { return hostile{d.path, s} }
		msgKey := strings.SplitN(d.msgs, `":`, 2)[0][1:]
		if strings.HasPrefix(d.msgs, `"max_tokens"`) {
			msgKey = "messages"
		}
		esc := strings.Replace(msgKey, "s", `\u0073`, 1)
		cases = append(cases,
			mk(`{"model":"`+d.model+`",`+d.msgs+`,"metadata":`+deep+`}`),
			mk(`{"model":"`+d.model+`",`+d.msgs+`,"metadata":`+deepObj+`}`),
			mk(`{"model":"`+d.model+`","mod\u0065l":"gpt-y",`+d.msgs+`}`),
			mk(`{"model":"`+d.model+`",`+d.msgs+`,"stream":false,"str\u0065am":true}`),
			mk(`{"model":"`+d.model+`",`+d.msgs+`,"`+esc+`":[]}`),
			mk(`{"model":"`+d.model+`",`+d.msgs+`,"user":"`+"\xff"+`\u0000","temperature":"\u0000"}`),
			mk(`{"model":"`+d.model+`",`+d.msgs+`,"temperature":1e99999}`),
			mk(`{"model":"`+d.model+`",`+d.msgs+`,"top_p":-99999999999999999999999999999999}`),
			mk(`{"model":"`+d.model+`","`+msgKey+`":[7],"max_tokens":10}`),
			mk(`{"model":"`+d.model+`",`+d.msgs),
		)
	}
	before := m.Stats("co-1").Requests + m.Stats("cr-1").Requests + m.Stats("ca-1").Requests
	for _, c := range cases {
		resp, b := post(t, gw+c.path, []byte(c.body), "Anthropic-Version", "2023-06-01")
		anth := c.path == "/v1/messages"
		if resp.StatusCode != 400 || gjson.GetBytes(b, "error.message").Str == "" || (gjson.GetBytes(b, "type").Str == "error") != anth || !gjson.ValidBytes(b) {
			t.Errorf("%s %.120q: %d %.300s", c.path, c.body, resp.StatusCode, b)
		}
	}
	if after := m.Stats("co-1").Requests + m.Stats("cr-1").Requests + m.Stats("ca-1").Requests; after != before {
		t.Errorf("%d hostile requests reached a key", after-before)
	}
	if resp, b := post(t, gw+"/v1/chat/completions", chatBody("gpt-x", "still there", false)); resp.StatusCode != 200 {
		t.Fatalf("after the hostile requests: %d %s", resp.StatusCode, b)
	}
	keysUnblamed(t, "oa", "c1")
	keysUnblamed(t, "rs", "r1")
	keysUnblamed(t, "an", "a1")
}

// TestAttackSessionSuccessAfterError: an upstream that follows its
// in-band error with what ends a stream cleanly (a Responses
// response.completed, an Anthropic message_delta with its stop_reason
// and message_stop, a Chat chunk with finish_reason "stop" and [DONE]):
// what the drain relays after the error never makes the stream a success
// for any client dialect.
func TestAttackSessionSuccessAfterError(t *testing.T) {
	h, gw := sessionHostileGateway(t)
	chatText := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"Par"},"finish_reason":null}]}` + "\n\n"
	chatErr := `data: {"error":{"message":"boom","type":"server_error","code":"server_error"}}` + "\n\n"
	chatStop := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}` + "\n\ndata: [DONE]\n\n"
	anStart := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	anText := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Par\"}}\n\n"
	anErr := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	anStop := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	rsCreated := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"x\",\"output\":[]}}\n\n"
	rsDelta := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Par\"}\n\n"
	rsErr := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n"
	rsDone := "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"x\",\"output\":[{\"type\":\"message\",\"id\":\"m1\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"Par\",\"annotations\":[]}]}],\"usage\":{\"input_tokens\":2,\"output_tokens\":1,\"total_tokens\":3}}}\n\n"
	sessionRunHostile(t, h, gw, []hostileCase{
		{"chat error then stop and DONE", "x-chat", chatText + chatErr + chatStop, true, 0},
		{"anthropic error then message_stop", "x-anth", anStart + anText + anErr + anStop, true, 0},
		{"responses error then completed", "x-resp", rsCreated + rsDelta + rsErr + rsDone, true, 0},
	})
}

// TestAttackSessionClientGoesAway: a client of each dialect that drops
// its stream after the first content (to an Anthropic key and to a Chat
// key, each answering slowly) or before the answer's first byte: the key
// is not blamed (ready, no failure), and the request log says the stream
// was canceled.
func TestAttackSessionClientGoesAway(t *testing.T) {
	m, gw := streamPair(t)
	slow := mockupstream.KeyBehavior{TokensPerSecond: 4}
	m.SetKey("an-1", slow)
	m.SetKey("oa-1", slow)
	for _, model := range []string{"claude-x", "gpt-x"} {
		for _, client := range []string{"chat", "messages", "responses"} {
			for _, early := range []bool{false, true} {
				path, body, _ := sessionClientBody(client, model, true)
				body = strings.Replace(body, `"hello"`, `"one two three four five six seven eight nine ten"`, 1)
				ctx, cancel := context.WithCancel(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+gatewayKey)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Anthropic-Version", "2023-06-01")
				seq := recentSeq()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if !early {
					buf := make([]byte, 4096)
					var got strings.Builder
					for !strings.Contains(got.String(), "delta") {
						n, err := resp.Body.Read(buf)
						got.Write(buf[:n])
						if err != nil {
							t.Fatalf("%s, %s: %v %s", model, client, err, got.String())
						}
					}
				}
				cancel()
				resp.Body.Close()
				rr := recentAfter(t, seq)
				if rr.StreamOutcome != streamCanceled {
					t.Errorf("%s, %s client, early %v: logged %d %q %q", model, client, early, rr.Status, rr.StreamOutcome, attemptOutcomes(rr))
				}
				keysUnblamed(t, "an", "a1", "a2")
				keysUnblamed(t, "oa", "o1", "o2")
			}
		}
	}
}

// TestAttackSessionHugeEventAfterError: after an in-band error, an
// upstream that sends a 2 MB event with no end (no blank line) and holds
// its stream open: the drain reads at most its budget, every client gets
// its failure within 4s (request_timeout 10s), logged as one.
func TestAttackSessionHugeEventAfterError(t *testing.T) {
	h, gw := sessionHostileGateway(t)
	huge := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[],"usage":{"prompt_tokens":5,"pad":"` + strings.Repeat("p", 2<<20)
	sessionRunHostile(t, h, gw, []hostileCase{
		{"chat error then a 2 MB unended event", "x-chat",
			`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"Par"},"finish_reason":null}]}` + "\n\n" +
				`data: {"error":{"message":"boom","type":"server_error","code":"server_error"}}` + "\n\n" + huge, true, 6 * time.Second},
		{"responses error then a 2 MB unended event", "x-resp",
			"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"x\",\"output\":[]}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Par\"}\n\n" +
				"event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n" +
				"event: response.failed\n" + huge, true, 6 * time.Second},
	})
}
