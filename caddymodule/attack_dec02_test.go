package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// dec02Upstream is a hostile upstream that answers each API key (Bearer
// or x-api-key) with the status, content type and body the test sets for
// it; "{KEY}" in a body is replaced by the key presented (a careless
// relay that echoes it). A stream is written at once and flushed.
type dec02Upstream struct {
	mu   sync.Mutex
	ans  map[string]dec02Answer
	seen map[string]int    // requests per key
	last map[string][]byte // the last request body per key
}

// dec02Answer is what one key answers. With ifIn set, only requests
// whose body or headers contain it get this answer; the others (such as
// the gateway's own probe of the key) a healthy one (d2Whole, d2Good).
type dec02Answer struct {
	status int
	sse    bool
	body   string
	ifIn   string
}

func (u *dec02Upstream) set(key string, a dec02Answer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ans == nil {
		u.ans, u.seen, u.last = map[string]dec02Answer{}, map[string]int{}, map[string][]byte{}
	}
	u.ans[key] = a
}

func (u *dec02Upstream) lastBody(key string) []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last[key]
}

func (u *dec02Upstream) count(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[key]
}

func (u *dec02Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in, _ := io.ReadAll(r.Body)
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if key == "" {
		key = r.Header.Get("X-Api-Key")
	}
	u.mu.Lock()
	a, ok := u.ans[key]
	if u.seen != nil {
		u.seen[key]++
		u.last[key] = in
	}
	u.mu.Unlock()
	if !ok {
		w.WriteHeader(500)
		return
	}
	if a.ifIn != "" && !strings.Contains(string(in), a.ifIn) && !strings.Contains(fmt.Sprint(r.Header), a.ifIn) {
		up := "chat"
		if strings.HasSuffix(r.URL.Path, "/messages") {
			up = "anthropic"
		} else if strings.HasSuffix(r.URL.Path, "/responses") {
			up = "responses"
		}
		a = dec02Answer{body: d2Whole[up]}
		if gjson.GetBytes(in, "stream").Bool() {
			a = dec02Answer{sse: true, body: d2Good[up]}
		}
	}
	writeTestAnswer(w, a.status, a.sse, strings.ReplaceAll(a.body, "{KEY}", key))
}

// dec02Gateway starts a hostile upstream and a gateway with three pools
// of two keys each, by priority: "dc" (model x-chat, OpenAI Chat keys
// dc-key-a-…, dc-key-b-…), "da" (x-anth, Anthropic) and "dr" (x-resp,
// Responses). Key ids are <pool>a and <pool>b.
func dec02Gateway(t *testing.T) (*dec02Upstream, string) {
	t.Helper()
	u := &dec02Upstream{}
	return u, threeDialectGateway(t, u, [3]string{"dc", "da", "dr"}, dec02Key)
}

// dec02Key is the secret of key ab ("a" or "b") of pool.
func dec02Key(pool, ab string) string {
	return pool + "-key-" + ab + "-7f3e9a1c5b2d4e6f8a0b"
}

// dec02Pools maps an upstream dialect to its pool and model.
var dec02Pools = []struct{ up, pool, model string }{
	{"chat", "dc", "x-chat"},
	{"anthropic", "da", "x-anth"},
	{"responses", "dr", "x-resp"},
}

// Upstream streams of each dialect, for model x-<dialect> as the pools name it.
const (
	d2ChatRole  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x-chat","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	d2ChatText  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x-chat","choices":[{"index":0,"delta":{"content":"Paris"},"finish_reason":null}]}` + "\n\n"
	d2ChatStop  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x-chat","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	d2ChatUsage = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x-chat","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + "\n\n"
	d2ChatDone  = "data: [DONE]\n\n"

	d2AnStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x-anth\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	d2AnPing  = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	d2AnText  = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Paris\"}}\n\n"
	d2AnStop = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

	d2RsCreated    = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"model\":\"x-resp\",\"output\":[]}}\n\n"
	d2RsInProgress = "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"model\":\"x-resp\",\"output\":[]}}\n\n"
	d2RsItem       = "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"m1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n" +
		"event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\",\"sequence_number\":3,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}}\n\n"
	d2RsDelta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Paris\"}\n\n"
	d2RsDone  = "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"sequence_number\":5,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"text\":\"Paris\"}\n\n" +
		"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":6,\"output_index\":0,\"item\":{\"id\":\"m1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"Paris\"}]}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":7,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"completed\",\"model\":\"x-resp\",\"output\":[{\"id\":\"m1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"Paris\"}]}],\"usage\":{\"input_tokens\":3,\"output_tokens\":1,\"total_tokens\":4}}}\n\n"
)

// d2Good is a whole, healthy stream of each upstream dialect.
var d2Good = map[string]string{
	"chat":      d2ChatRole + d2ChatText + d2ChatStop + d2ChatUsage + d2ChatDone,
	"anthropic": d2AnStart + d2AnPing + d2AnText + d2AnStop,
	"responses": d2RsCreated + d2RsInProgress + d2RsItem + d2RsDelta + d2RsDone,
}

// d2Client returns the path, body and headers of a request of client
// dialect for model.
func d2Client(client, model string, stream bool) (string, []byte, []string) {
	path, body, hdr := sessionClientBody(client, model, stream)
	return path, []byte(body), hdr
}

// d2Text is the answer's text as the client dialect carries it, streamed
// or whole.
func d2Text(client string, b []byte, stream bool) string {
	if !stream {
		switch client {
		case "chat":
			return gjson.GetBytes(b, "choices.0.message.content").Str
		case "messages":
			return gjson.GetBytes(b, "content.0.text").Str
		}
		return gjson.GetBytes(b, `output.#(type=="message").content.0.text`).Str
	}
	var s strings.Builder
	for _, e := range sseEvents(b) {
		switch client {
		case "chat":
			s.WriteString(gjson.GetBytes(e.Data, "choices.0.delta.content").Str)
		case "messages":
			s.WriteString(gjson.GetBytes(e.Data, "delta.text").Str)
		default:
			if gjson.GetBytes(e.Data, "type").Str == "response.output_text.delta" {
				s.WriteString(gjson.GetBytes(e.Data, "delta").Str)
			}
		}
	}
	return s.String()
}

// TestAttackDec02PassthroughPreambleBytes: the commit point holds a
// passthrough stream's preamble (Chat's role chunk and the comments
// OpenRouter sends while it waits, Anthropic's message_start and ping,
// Responses' response.created and response.in_progress) until the first
// content. What the client gets is still the upstream's stream byte for
// byte: comments, id and retry lines, CRLF line ends and odd spacing
// after "data:" included.
func TestAttackDec02PassthroughPreambleBytes(t *testing.T) {
	u, gw := dec02Gateway(t)
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	cases := []struct{ name, up, body string }{
		{"chat comments before the role", "chat", ": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n" + d2Good["chat"]},
		{"chat comments after the role", "chat", d2ChatRole + ": keep-alive\n\n" + d2ChatText + d2ChatStop + d2ChatDone},
		{"chat CRLF", "chat", crlf(d2Good["chat"])},
		{"chat id and retry lines", "chat", "retry: 3000\n\nid: 1\n" + d2ChatRole + "id: 2\n" + d2ChatText + d2ChatStop + d2ChatDone},
		{"chat no space after data", "chat", strings.ReplaceAll(d2Good["chat"], "data: ", "data:")},
		{"anthropic ping and comment", "anthropic", d2AnStart + ": hi\n\n" + d2AnPing + d2AnPing + d2AnText + d2AnStop},
		{"anthropic CRLF", "anthropic", crlf(d2Good["anthropic"])},
		{"responses preamble", "responses", d2Good["responses"]},
		{"responses CRLF and comment", "responses", crlf(": x\n\n" + d2Good["responses"])},
	}
	client := map[string]string{"chat": "chat", "anthropic": "messages", "responses": "responses"}
	for _, c := range cases {
		var pool, model string
		for _, p := range dec02Pools {
			if p.up == c.up {
				pool, model = p.pool, p.model
			}
		}
		u.set(dec02Key(pool, "a"), dec02Answer{sse: true, body: c.body})
		path, body, hdr := d2Client(client[c.up], model, true)
		resp, b := post(t, gw+path, body, hdr...)
		// the usage chunk the gateway asked for (stream_options) and the
		// client did not is not the client's
		want := c.body
		for _, u := range []string{d2ChatUsage, crlf(d2ChatUsage), strings.ReplaceAll(d2ChatUsage, "data: ", "data:")} {
			want = strings.Replace(want, u, "", 1)
		}
		if resp.StatusCode != 200 || string(b) != want {
			t.Errorf("%s: %d, the client got\n%q\nthe upstream sent\n%q", c.name, resp.StatusCode, b, want)
		}
	}
}

// d2Clients are the client dialects, by the name sessionClientBody takes.
var d2Clients = []string{"chat", "messages", "responses"}

// d2Preambles counts the preambles (Chat's role chunk, message_start,
// response.created) in a client's stream.
func d2Preambles(client string, b []byte) int {
	n := 0
	for _, e := range sseEvents(b) {
		switch client {
		case "chat":
			if gjson.GetBytes(e.Data, "choices.0.delta.role").Exists() {
				n++
			}
		case "messages":
			if gjson.GetBytes(e.Data, "type").Str == "message_start" {
				n++
			}
		default:
			if gjson.GetBytes(e.Data, "type").Str == "response.created" {
				n++
			}
		}
	}
	return n
}

// d2Clean reports whether a client's stream ended as a whole answer.
func d2Clean(client string, b []byte) bool {
	switch client {
	case "chat":
		return strings.HasSuffix(string(b), "data: [DONE]\n\n") && !strings.Contains(string(b), `"error"`)
	case "messages":
		return strings.Contains(string(b), "event: message_stop") && !strings.Contains(string(b), "event: error")
	}
	return strings.Contains(string(b), "event: response.completed") && !strings.Contains(string(b), "event: error")
}

// TestAttackDec02PreambleThenFailure: the first key of each upstream
// dialect sends its stream's preamble and then fails before any content
// (an in-band server error, the connection closed, comments or pings and
// then the end, a response.failed); the second key answers. Held at the
// commit point, the failed preamble never reaches the client: every
// client dialect, streamed or not, gets the second key's whole answer
// with one preamble, and the request log records a success. (A
// stream commits at an empty content_block_start, or a passthrough at an
// output_item.added, which HoldPreamble counts as content: a stream cut
// right after it is the client's failure in its dialect.)
func TestAttackDec02PreambleThenFailure(t *testing.T) {
	u, gw := dec02Gateway(t)
	fails := map[string][]string{
		"chat": {
			d2ChatRole + `data: {"error":{"message":"boom","type":"server_error","code":"server_error"}}` + "\n\n",
			d2ChatRole,
			d2ChatRole + ": keep-alive\n\n: keep-alive\n\n",
			d2ChatRole + `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"x-chat","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}` + "\n\n",
		},
		"anthropic": {
			d2AnStart + d2AnPing + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			d2AnStart + d2AnPing,
			d2AnStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		},
		"responses": {
			d2RsCreated + d2RsInProgress + "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n",
			d2RsCreated + d2RsInProgress + "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"model\":\"x-resp\",\"output\":[],\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n",
			d2RsCreated + d2RsInProgress + d2RsItem,
		},
	}
	for _, p := range dec02Pools {
		u.set(dec02Key(p.pool, "b"), dec02Answer{sse: true, body: d2Good[p.up]})
		for i, fail := range fails[p.up] {
			u.set(dec02Key(p.pool, "a"), dec02Answer{sse: true, body: fail})
			for _, client := range d2Clients {
				for _, stream := range []bool{true} { // the upstream streams: a streamed request
					poolFor(t, p.pool).ClearCooldown("")
					path, body, hdr := d2Client(client, p.model, stream)
					seq := recentSeq()
					resp, b := post(t, gw+path, body, hdr...)
					name := fmt.Sprintf("%s upstream, failure %d, %s client, stream %v", p.up, i, client, stream)
					if i == 2 && (p.up == "anthropic" && client != "chat" || p.up == "responses" && client == "responses") {
						// a passthrough commits at an empty content_block_start or
						// output_item.added (content, per HoldPreamble): the cut
						// stream is then the client's failure, never a success
						if why := sessionClientFailed(client, resp.StatusCode, b, stream); why != "" {
							t.Errorf("%s: %s: %d %.800s", name, why, resp.StatusCode, b)
						}
						continue
					}
					if resp.StatusCode != 200 || d2Text(client, b, stream) != "Paris" || resp.Header.Get("X-Routed-Via") != p.pool+"/"+p.pool+"b" {
						t.Errorf("%s: %d via %q\n%.800s", name, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
						continue
					}
					if stream && (d2Preambles(client, b) != 1 || !d2Clean(client, b)) {
						t.Errorf("%s: %d preambles, clean %v\n%.1500s", name, d2Preambles(client, b), d2Clean(client, b), b)
					}
					if rr := recentAfter(t, seq); rr.Status != 200 || stream && rr.StreamOutcome != streamComplete {
						t.Errorf("%s: logged %d %q %q", name, rr.Status, rr.StreamOutcome, attemptOutcomes(rr))
					}
				}
			}
		}
	}
}

// TestAttackDec02InBandClientErrorBeforeContent: an upstream that opens
// its stream and then refuses the request in-band, before any content,
// for what the request is (Chat's context_length_exceeded, Anthropic's
// "prompt is too long" invalid_request_error, a Responses error event or
// response.failed with context_length_exceeded): the refusal is the
// client's, not the key's. The client gets it as an error status in its
// dialect (nothing was committed), no key is cooled or counts a failure,
// and the request is not tried on the pool's other key, which would say
// the same.
func TestAttackDec02InBandClientErrorBeforeContent(t *testing.T) {
	u, gw := dec02Gateway(t)
	const ctxMsg = "This model's maximum context length is 128000 tokens. However, your messages resulted in 250000 tokens."
	refusals := map[string][]string{
		"chat": {
			d2ChatRole + `data: {"error":{"message":"` + ctxMsg + `","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}` + "\n\n",
		},
		"anthropic": {
			d2AnStart + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 250000 tokens > 200000 maximum\"}}\n\n",
		},
		"responses": {
			d2RsCreated + "event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"context_length_exceeded\",\"message\":\"" + ctxMsg + "\",\"param\":\"input\"}\n\n",
			d2RsCreated + "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"model\":\"x-resp\",\"output\":[],\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"" + ctxMsg + "\"}}}\n\n",
		},
	}
	for _, p := range dec02Pools {
		u.set(dec02Key(p.pool, "b"), dec02Answer{sse: true, body: d2Good[p.up]})
		for i, refusal := range refusals[p.up] {
			u.set(dec02Key(p.pool, "a"), dec02Answer{sse: true, body: refusal})
			for _, client := range d2Clients {
				for _, stream := range []bool{true} { // the upstream streams: a streamed request
					askedB := u.count(dec02Key(p.pool, "b"))
					path, body, hdr := d2Client(client, p.model, stream)
					resp, b := post(t, gw+path, body, hdr...)
					name := fmt.Sprintf("%s upstream, refusal %d, %s client, stream %v", p.up, i, client, stream)
					if resp.StatusCode < 400 || resp.StatusCode >= 500 || sessionClientFailed(client, resp.StatusCode, b, stream) != "" {
						t.Errorf("%s: %d %.600s", name, resp.StatusCode, b)
					}
					if n := u.count(dec02Key(p.pool, "b")) - askedB; n != 0 {
						t.Errorf("%s: the other key was asked %d times", name, n)
					}
					keysUnblamed(t, p.pool, p.pool+"a", p.pool+"b")
				}
			}
		}
	}
}

// TestAttackDec02KeyEchoedInBand: an upstream (a careless relay) that
// echoes the key it was sent inside what it streams: an in-band error
// after content, an in-band error before content, a 200 error object.
// No client dialect's answer, and not the request log, shows the key.
func TestAttackDec02KeyEchoedInBand(t *testing.T) {
	u, gw := dec02Gateway(t)
	chatErr := `data: {"error":{"message":"Incorrect API key provided: {KEY}","type":"server_error","code":"server_error"}}` + "\n\n"
	anErr := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"key {KEY} failed\"}}\n\n"
	rsErr := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":9,\"code\":\"server_error\",\"message\":\"key {KEY} failed\",\"param\":null}\n\n"
	echoes := map[string][]dec02Answer{
		"chat": {
			{sse: true, body: d2ChatRole + d2ChatText + chatErr},
			{sse: true, body: d2ChatRole + chatErr},
			{body: `{"error":{"message":"Incorrect API key provided: {KEY}","type":"server_error"}}`},
		},
		"anthropic": {
			{sse: true, body: d2AnStart + d2AnText + anErr},
			{sse: true, body: d2AnStart + anErr},
			{body: `{"type":"error","error":{"type":"api_error","message":"key {KEY} failed"}}`},
		},
		"responses": {
			{sse: true, body: d2RsCreated + d2RsItem + d2RsDelta + rsErr},
			{sse: true, body: d2RsCreated + rsErr},
			{body: `{"id":"resp_1","object":"response","status":"failed","model":"x-resp","output":[],"error":{"code":"server_error","message":"key {KEY} failed"}}`},
		},
	}
	for _, p := range dec02Pools {
		for i, a := range echoes[p.up] {
			u.set(dec02Key(p.pool, "a"), a)
			u.set(dec02Key(p.pool, "b"), a)
			for _, client := range d2Clients {
				poolFor(t, p.pool).ClearCooldown("")
				path, body, hdr := d2Client(client, p.model, a.sse)
				seq := recentSeq()
				resp, b := post(t, gw+path, body, hdr...)
				name := fmt.Sprintf("%s upstream, echo %d, %s client", p.up, i, client)
				if why := sessionClientFailed(client, resp.StatusCode, b, a.sse); why != "" {
					t.Errorf("%s: %s: %d %.600s", name, why, resp.StatusCode, b)
				}
				rr := recentAfter(t, seq)
				logged, _ := json.Marshal(rr)
				for _, ab := range []string{"a", "b"} {
					secret := dec02Key(p.pool, ab)
					if strings.Contains(string(b), secret) || strings.Contains(fmt.Sprint(resp.Header), secret) {
						t.Errorf("%s: the client's answer shows key %s: %.600s", name, ab, b)
					}
					if strings.Contains(string(logged), secret) {
						t.Errorf("%s: the request log shows key %s: %s", name, ab, logged)
					}
				}
			}
		}
	}
}

// TestAttackDec02RepeatedMemberWhole: a key whose whole answer repeats a
// member it is read by ({"choices":[<answer>],"choices":[]}, a content
// then an empty one, status completed then failed) would reach a
// passthrough client as a 200 its JSON reader takes as empty or failed.
// It is the key's failure: the next key answers; with both keys so, the
// client gets a failure in its dialect.
func TestAttackDec02RepeatedMemberWhole(t *testing.T) {
	u, gw := dec02Gateway(t)
	good := map[string]string{
		"chat":      `{"id":"c","object":"chat.completion","created":1,"model":"x-chat","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}]}`,
		"anthropic": `{"id":"m","type":"message","role":"assistant","model":"x-anth","content":[{"type":"text","text":"Paris"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
		"responses": `{"id":"r","object":"response","status":"completed","model":"x-resp","output":[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Paris","annotations":[]}]}]}`,
	}
	twice := map[string]string{
		"chat":      strings.TrimSuffix(good["chat"], "}") + `,"choices":[]}`,
		"anthropic": strings.TrimSuffix(good["anthropic"], "}") + `,"content":[]}`,
		"responses": strings.TrimSuffix(good["responses"], "}") + `,"status":"failed"}`,
	}
	client := map[string]string{"chat": "chat", "anthropic": "messages", "responses": "responses"}
	for _, p := range dec02Pools {
		poolFor(t, p.pool).ClearCooldown("")
		u.set(dec02Key(p.pool, "a"), dec02Answer{body: twice[p.up]})
		u.set(dec02Key(p.pool, "b"), dec02Answer{body: good[p.up]})
		path, body, hdr := d2Client(client[p.up], p.model, false)
		resp, b := post(t, gw+path, body, hdr...)
		if resp.StatusCode != 200 || string(b) != good[p.up] || resp.Header.Get("X-Routed-Via") != p.pool+"/"+p.pool+"b" {
			t.Errorf("%s: %d via %q %s", p.up, resp.StatusCode, resp.Header.Get("X-Routed-Via"), b)
		}
		poolFor(t, p.pool).ClearCooldown("")
		u.set(dec02Key(p.pool, "b"), dec02Answer{body: twice[p.up]})
		resp, b = post(t, gw+path, body, hdr...)
		if why := sessionClientFailed(client[p.up], resp.StatusCode, b, false); why != "" || resp.StatusCode < 500 {
			t.Errorf("%s, both keys: %s: %d %s", p.up, why, resp.StatusCode, b)
		}
	}
}

// TestAttackDec02ClientLeavesWhilePreambleHeld: the upstream sends its
// stream's preamble (message_start, Chat's role chunk) and then nothing;
// the gateway holds the preamble (no content yet), so the client has no
// response at all, and it leaves after 300 ms. Its leaving is not the
// key's: no key is cooled or counts a failure, the request is not tried
// on the other key, the upstream's stream is closed, and the request log
// says the client went away (499).
func TestAttackDec02ClientLeavesWhilePreambleHeld(t *testing.T) {
	m, gw := streamPair(t)
	hold := mockupstream.KeyBehavior{StreamHold: true}
	m.SetKey("an-1", hold)
	m.SetKey("oa-1", hold)
	for _, c := range []struct{ model, first, second, pool string }{
		{"claude-x", "an-1", "an-2", "an"},
		{"gpt-x", "oa-1", "oa-2", "oa"},
	} {
		for _, client := range d2Clients {
			path, body, _ := d2Client(client, c.model, true)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+gatewayKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			before1, before2 := m.Stats(c.first), m.Stats(c.second)
			seq := recentSeq()
			resp, err := http.DefaultClient.Do(req)
			cancel()
			if err == nil {
				// the mock's Anthropic stream opens a content block
				// before it holds: content, the stream is committed
				_, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				if c.pool != "an" || client == "chat" {
					t.Errorf("%s, %s client: answered while the upstream sent only its preamble: %d", c.model, client, resp.StatusCode)
				}
			}
			rr := recentAfter(t, seq)
			if rr.Status != 499 {
				t.Errorf("%s, %s client: logged %d %q %q", c.model, client, rr.Status, rr.StreamOutcome, attemptOutcomes(rr))
			}
			eventually(t, 2*time.Second, "the upstream's stream closed", func() bool {
				return m.Stats(c.first).Canceled == before1.Canceled+1
			})
			if n := m.Stats(c.second).Requests - before2.Requests; n != 0 {
				t.Errorf("%s, %s client: the other key was asked %d times after the client left", c.model, client, n)
			}
			keysUnblamed(t, "an", "a1", "a2")
			keysUnblamed(t, "oa", "o1", "o2")
		}
	}
}

// TestAttackDec02UpstreamRefusesRequestShape: upstreams (or the proxies in
// front of them) that refuse what the client sent with a status that says
// so, in forms the gateway did not write: nginx's HTML 413, a
// FastAPI-style 422 {"detail":[...]} (vLLM, TGI), a 400 in plain text.
// Each client dialect, streamed or not, gets the status with an error
// object of its dialect; no key is cooled or counts a failure.
func TestAttackDec02UpstreamRefusesRequestShape(t *testing.T) {
	u, gw := dec02Gateway(t)
	answers := []dec02Answer{
		{status: 413, body: "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"},
		{status: 422, body: `{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":null}]}`},
		{status: 400, body: "Bad Request: prompt too long"},
		{status: 400, body: `{"error":"context length exceeded"}`},
	}
	for _, p := range dec02Pools {
		for i, a := range answers {
			u.set(dec02Key(p.pool, "a"), a)
			u.set(dec02Key(p.pool, "b"), a)
			for _, client := range d2Clients {
				for _, stream := range []bool{false, true} {
					path, body, hdr := d2Client(client, p.model, stream)
					resp, b := post(t, gw+path, body, hdr...)
					name := fmt.Sprintf("%s upstream, answer %d, %s client, stream %v", p.up, i, client, stream)
					if resp.StatusCode != a.status || sessionClientFailed(client, resp.StatusCode, b, stream) != "" || !gjson.ValidBytes(b) {
						t.Errorf("%s: %d %.400s", name, resp.StatusCode, b)
					}
					keysUnblamed(t, p.pool, p.pool+"a", p.pool+"b")
				}
			}
		}
	}
}

// TestAttackDec02ServerStatusForClientError: an upstream that answers a
// request too long for the model with a 5xx whose error object says so
// in its structured code (context_length_exceeded; some OpenAI-compatible
// servers answer 500 for it). The code is the request's: every client
// dialect, streamed or not, gets the failure in its dialect, the pool's
// other key is not asked, and no key is cooled or counts a failure (a
// client must not cool every key of a pool with one long prompt).
func TestAttackDec02ServerStatusForClientError(t *testing.T) {
	u, gw := dec02Gateway(t)
	const msg = "This model's maximum context length is 8192 tokens. However, your messages resulted in 250000 tokens."
	bodies := map[string]string{
		"chat":      `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		"anthropic": `{"type":"error","error":{"type":"context_length_exceeded","message":"` + msg + `"}}`,
		"responses": `{"error":{"message":"` + msg + `","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`,
	}
	for _, p := range dec02Pools {
		for _, status := range []int{500, 503} {
			u.set(dec02Key(p.pool, "a"), dec02Answer{status: status, body: bodies[p.up]})
			u.set(dec02Key(p.pool, "b"), dec02Answer{body: `{}`})
			for _, client := range d2Clients {
				for _, stream := range []bool{false, true} {
					askedB := u.count(dec02Key(p.pool, "b"))
					path, body, hdr := d2Client(client, p.model, stream)
					resp, b := post(t, gw+path, body, hdr...)
					name := fmt.Sprintf("%s upstream, %d, %s client, stream %v", p.up, status, client, stream)
					if resp.StatusCode != status || sessionClientFailed(client, resp.StatusCode, b, stream) != "" || !strings.Contains(string(b), "maximum context length") {
						t.Errorf("%s: %d %.400s", name, resp.StatusCode, b)
					}
					if n := u.count(dec02Key(p.pool, "b")) - askedB; n != 0 {
						t.Errorf("%s: the other key was asked %d times", name, n)
					}
					keysUnblamed(t, p.pool, p.pool+"a", p.pool+"b")
				}
			}
		}
	}
}

// d2Whole is a whole, healthy answer of each upstream dialect.
var d2Whole = map[string]string{
	"chat":      `{"id":"c","object":"chat.completion","created":1,"model":"x-chat","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}]}`,
	"anthropic": `{"id":"m","type":"message","role":"assistant","model":"x-anth","content":[{"type":"text","text":"Paris"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
	"responses": `{"id":"r","object":"response","status":"completed","model":"x-resp","output":[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Paris","annotations":[]}]}]}`,
}

// TestAttackDec02PassthroughRequestBytes: passthrough requests written as
// no SDK writes them (CRLF and tabs between members, members in any
// order, \u and \/ escapes, U+2028, emoji, a float with more digits than
// a float64 holds, an integer past int64, vendor fields the gateway does
// not know, nested nulls) reach the upstream byte for byte: the
// same-dialect check reads them and changes nothing.
func TestAttackDec02PassthroughRequestBytes(t *testing.T) {
	u, gw := dec02Gateway(t)
	bodies := []struct{ up, path, body string }{
		{"chat", "/v1/chat/completions", "{ \"messages\" : [ {\"role\":\"user\",\"content\":\"caf\\u00e9 \\/ \\\"q\\\" \u2028 😀\"} ],\r\n\t\"model\":\"x-chat\", \"temperature\": 1.0000000000000001, \"seed\": 1234567890123, \"vendor_n\": 12345678901234567890, \"logit_bias\":{\"50256\":-100}, \"vendor_x\":{\"deep\":[1,2,{\"a\":null}]}, \"max_tokens\":100 }"},
		{"chat", "/v1/chat/completions", `{"model":"x-chat","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\": 1e400}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"number"}}},"strict":true}}],"parallel_tool_calls":false}`},
		{"anthropic", "/v1/messages", "{\"max_tokens\":10,\n  \"model\":\"x-anth\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\\u2028 line sep \\ud83d\\ude00\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}]}],\"metadata\":{\"user_id\":\"u1\"},\"unknown_beta_field\":true,\"temperature\":0.70}"},
		{"responses", "/v1/responses", "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"hi\\t\\u0000x\"}]}],\"model\":\"x-resp\",\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"extra\":{\"x\":1},\"max_output_tokens\":16}"},
	}
	for i, c := range bodies {
		var pool string
		for _, p := range dec02Pools {
			if p.up == c.up {
				pool = p.pool
			}
		}
		poolFor(t, pool).ClearCooldown("")
		u.set(dec02Key(pool, "a"), dec02Answer{body: d2Whole[c.up]})
		resp, b := post(t, gw+c.path, []byte(c.body), "Anthropic-Version", "2023-06-01")
		if resp.StatusCode != 200 {
			t.Errorf("body %d: %d %s", i, resp.StatusCode, b)
			continue
		}
		if got := u.lastBody(dec02Key(pool, "a")); string(got) != c.body {
			t.Errorf("body %d: the upstream got\n%q\nthe client sent\n%q", i, got, c.body)
		}
	}
}

// TestAttackDec02OverLimitEveryClient: a request larger than every key's
// whole per-minute limit (two keys of one tier: OpenAI's "Request too
// large" 429, Anthropic's input-tokens 429), from every client dialect,
// streamed or not (the Responses client, streamed, too): the client gets
// the 429 as an error status in its dialect (never a 200 stream that
// then fails), told not to retry, and no key is cooled or counts a
// failure.
func TestAttackDec02OverLimitEveryClient(t *testing.T) {
	_, gw := overLimitGateway(t, false,
		[]ovKey{{"oa-e1", "oe1", 100, "org-a"}, {"oa-e2", "oe2", 100, "org-a"}},
		[]ovKey{{"an-e1", "ae1", 100, "org-b"}, {"an-e2", "ae2", 100, "org-b"}})
	for _, model := range []string{"gpt-x", "claude-x"} {
		for _, client := range d2Clients {
			for _, stream := range []bool{false, true} {
				path, body, _ := d2Client(client, model, stream)
				body = []byte(strings.Replace(string(body), `"hello"`, `"`+bigPrompt+`"`, 1))
				resp, b := post(t, gw+path, body, "Anthropic-Version", "2023-06-01")
				name := fmt.Sprintf("%s, %s client, stream %v", model, client, stream)
				if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" || sessionClientFailed(client, 429, b, stream) != "" {
					t.Errorf("%s: %d %v %.400s", name, resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
				}
				keysUnblamed(t, "oa", "oe1", "oe2")
				keysUnblamed(t, "an", "ae1", "ae2")
			}
		}
	}
}

// TestAttackDec02ModerationFlag403: OpenRouter answers a prompt its
// moderation flags with a 403 (per its errors docs: "Your chosen model
// requires moderation and your input was flagged", error.metadata with
// reasons and flagged_input); its message names the model. The prompt is
// the client's: a client that sends flagged prompts, one after another,
// from any dialect, must not take the pool's keys out of rotation, for
// the model or at all, nor count a failure against them, whether the 403
// is the HTTP status or an in-band error before content. Each request
// gets the 403 in its dialect.
func TestAttackDec02ModerationFlag403(t *testing.T) {
	moderationFlagged(t, []dec02Answer{{status: 403, body: moderationBody, ifIn: "hello"}})
}

// TestAttackDec02ModerationFlagInBand: the moderation 403 of
// TestAttackDec02ModerationFlag403 sent in-band, after the role chunk and
// before any content (an OpenRouter stream that answered 200 and then
// failed): the in-band error's body keeps error.metadata (flagged_input,
// reasons), so it is the client's input that was refused, as with the
// HTTP 403: relayed in the client's dialect, no key blamed, the second
// key not asked for it.
func TestAttackDec02ModerationFlagInBand(t *testing.T) {
	moderationFlagged(t, []dec02Answer{{sse: true, body: d2ChatRole + "data: " + moderationBody + "\n\n", ifIn: "hello"}})
}

// moderationBody is OpenRouter's moderation 403 for model x-chat.
const moderationBody = `{"error":{"code":403,"message":"x-chat requires moderation on OpenAI. Your input was flagged for \"harassment\". No credits were charged.","metadata":{"reasons":["harassment"],"flagged_input":"you are a ...","provider_name":"OpenAI","model_slug":"x-chat"}}}`

// moderationFlagged sends flagged prompts (the upstream answers each form
// of forms to requests with "hello", twice) from every client dialect and
// checks each gets the 403 in its dialect, the pool's other key is not
// asked and no key is blamed.
func moderationFlagged(t *testing.T, forms []dec02Answer) {
	t.Helper()
	u, gw := dec02Gateway(t)
	for round := 0; round < 2*len(forms); round++ {
		u.set(dec02Key("dc", "a"), forms[round/2])
		u.set(dec02Key("dc", "b"), forms[round/2])
		for _, client := range d2Clients {
			for _, stream := range []bool{false, true} {
				if forms[round/2].sse && !stream {
					continue // the upstream streams: a streamed request
				}
				askedB := u.count(dec02Key("dc", "b"))
				path, rb, hdr := d2Client(client, "x-chat", stream)
				resp, b := post(t, gw+path, rb, hdr...)
				if resp.StatusCode != 403 || sessionClientFailed(client, 403, b, stream) != "" || !strings.Contains(string(b), "flagged") {
					t.Errorf("round %d, %s client, stream %v: %d %.400s", round, client, stream, resp.StatusCode, b)
				}
				if n := u.count(dec02Key("dc", "b")) - askedB; n != 0 {
					t.Errorf("round %d, %s client, stream %v: the other key was asked %d times for a flagged prompt", round, client, stream, n)
				}
				for _, id := range []string{"dca", "dcb"} {
					if st := keyStatus(t, "dc", id); st.State != "ready" || st.Failures != 0 || len(st.BenchedModels) != 0 {
						t.Fatalf("round %d, %s client, stream %v: key %s blamed for a flagged prompt: %+v", round, client, stream, id, st)
					}
				}
			}
		}
	}
}

// TestAttackDec02Forbidden403ByRequest: a 403 the request itself causes
// (Anthropic's permission_error for a beta the account lacks, which the
// client asks for in anthropic-beta), answered alike by every key: two
// such requests get the 403 in the client's dialect and leave no key out
// of rotation for longer than provisional_cooldown (the gateway's own
// probe of a key blamed for it then succeeds and ends it at once).
func TestAttackDec02Forbidden403ByRequest(t *testing.T) {
	u, gw := dec02Gateway(t)
	body := `{"type":"error","error":{"type":"permission_error","message":"Your organization does not have access to this beta feature."}}`
	u.set(dec02Key("da", "a"), dec02Answer{status: 403, body: body, ifIn: "some-beta-2099-01-01"})
	u.set(dec02Key("da", "b"), dec02Answer{status: 403, body: body, ifIn: "some-beta-2099-01-01"})
	for round := 0; round < 2; round++ {
		path, rb, _ := d2Client("messages", "x-anth", false)
		resp, b := post(t, gw+path, rb, "Anthropic-Version", "2023-06-01", "Anthropic-Beta", "some-beta-2099-01-01")
		if resp.StatusCode != 403 || sessionClientFailed("messages", 403, b, false) != "" {
			t.Errorf("round %d: %d %.400s", round, resp.StatusCode, b)
		}
	}
	// a 403 starts as a provisional cooldown (provisional_cooldown, 60s,
	// never the 24h ForbiddenCooldown) whose probe, a request of the
	// gateway's own without the client's header, succeeds and ends it; a
	// verdict that comes while the key's previous probe is still
	// returning gets no probe of its own and runs its 60s (either state
	// holds the bound, before or after the probe returns: no wait)
	for _, id := range []string{"daa", "dab"} {
		if st := keyStatus(t, "da", id); st.State != "ready" && (!st.Provisional || st.SecondsLeft > 60) {
			t.Errorf("key %s out of rotation for longer than one client request may: %+v", id, st)
		}
	}
}

// TestAttackDec02MappedModelNeverShown: a pool that maps the client's
// model (alias-x) to another upstream model (hidden-upstream-7b) by
// model_map: every client dialect, streamed or not, against an upstream
// of every dialect, sees its own model name in the answer (the one
// difference a passthrough may have from the vendor's bytes), never the
// upstream's, in any event or field.
func TestAttackDec02MappedModelNeverShown(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	pool := func(name, url, dialect string) string {
		return "\t\tpool " + name + " {\n\t\t\tmodels alias-" + name + "\n\t\t\tmodel_map alias-" + name + " hidden-upstream-7b\n" +
			"\t\t\tkey mk-" + name + " " + url + " {\n\t\t\t\tdialect " + dialect + "\n\t\t\t}\n\t\t}\n"
	}
	gw := gateway(t, gatewayBlock(pool("oc", base, "openai"), pool("an", root, "anthropic"), pool("rs", base, "responses")))
	for _, p := range []string{"oc", "an", "rs"} {
		for _, client := range d2Clients {
			for _, stream := range []bool{false, true} {
				path, body, _ := d2Client(client, "alias-"+p, stream)
				resp, b := post(t, gw+path, body, "Anthropic-Version", "2023-06-01")
				name := fmt.Sprintf("%s upstream, %s client, stream %v", p, client, stream)
				if resp.StatusCode != 200 || strings.Contains(string(b), "hidden-upstream") || !strings.Contains(string(b), `"alias-`+p+`"`) {
					t.Errorf("%s: %d %.600s", name, resp.StatusCode, b)
				}
				if up := m.Stats("mk-" + p).LastModel; up != "hidden-upstream-7b" {
					t.Errorf("%s: the upstream was asked for %q", name, up)
				}
			}
		}
	}
}
