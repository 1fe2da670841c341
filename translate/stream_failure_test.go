package translate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	assestream "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/openai/openai-go/v3"
	ossestream "github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

var allDialects = []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses}

// collectHold is collect with HoldPreamble.
func collectHold(t testing.TB, from, to Dialect, model string, r io.Reader) ([]byte, [][]byte, *StreamTranslator, error) {
	t.Helper()
	return collectWith(from, to, model, r, true)
}

// sdkOutcome parses a client stream with the dialect's official SDK
// (openai-go, anthropic-sdk-go) and returns the SDK's stream error and
// whether the SDK saw a normal finish (a Chat finish_reason, an Anthropic
// message_delta or message_stop, a Responses response.completed or
// response.incomplete).
func sdkOutcome(d Dialect, b []byte) (sdkErr error, finished bool) {
	switch d {
	case OpenAIChat:
		st := ossestream.NewStream[openai.ChatCompletionChunk](ossestream.NewDecoder(sseResponse(b)), nil)
		for st.Next() {
			for _, c := range st.Current().Choices {
				if c.FinishReason != "" {
					finished = true
				}
			}
		}
		return st.Err(), finished
	case AnthropicMessages:
		st := assestream.NewStream[anthropic.MessageStreamEventUnion](assestream.NewDecoder(sseResponse(b)), nil)
		for st.Next() {
			switch st.Current().Type {
			case "message_delta", "message_stop":
				finished = true
			}
		}
		return st.Err(), finished
	}
	st := ossestream.NewStream[responses.ResponseStreamEventUnion](ossestream.NewDecoder(sseResponse(b)), nil)
	for st.Next() {
		switch st.Current().Type {
		case "response.completed", "response.incomplete":
			finished = true
		}
	}
	return st.Err(), finished
}

// lastEvent returns the last SSE block of out.
func lastEvent(t testing.TB, out []byte) SSEEvent {
	t.Helper()
	evs := readAllEvents(t, bytes.NewReader(out))
	if len(evs) == 0 {
		t.Fatalf("no events in %q", out)
	}
	return evs[len(evs)-1]
}

// assertErrorForm checks that a client stream ends with the dialect's error
// form and has no finish and no terminator.
func assertErrorForm(t *testing.T, label string, to Dialect, out []byte, wantType string) {
	t.Helper()
	s := string(out)
	last := lastEvent(t, out)
	switch to {
	case OpenAIChat:
		if e := gjson.GetBytes(last.Data, "error"); last.Event != "" || !e.IsObject() && (e.Type != gjson.String || e.Str == "") {
			t.Errorf("%s: last chunk is not an error chunk: %q", label, last.Raw)
		}
		if strings.Contains(s, "[DONE]") || gjson.GetBytes(last.Data, "choices").Exists() {
			t.Errorf("%s: terminator or choices after the failure:\n%s", label, s)
		}
		for _, ev := range readAllEvents(t, bytes.NewReader(out)) {
			if fr := gjson.GetBytes(ev.Data, "choices.0.finish_reason"); fr.Type == gjson.String && fr.Str != "" {
				t.Errorf("%s: finish_reason %q relayed", label, fr.Str)
			}
		}
		if wantType != "" && gjson.GetBytes(last.Data, "error.code").Str != wantType && gjson.GetBytes(last.Data, "error.type").Str != wantType {
			t.Errorf("%s: error %s, want %s", label, last.Data, wantType)
		}
	case AnthropicMessages:
		if last.Event != "error" || gjson.GetBytes(last.Data, "type").Str != "error" {
			t.Errorf("%s: last event is not event: error: %q", label, last.Raw)
		}
		if strings.Contains(s, "message_stop") || strings.Contains(s, "event: message_delta") {
			t.Errorf("%s: finish relayed:\n%s", label, s)
		}
		if wantType != "" && gjson.GetBytes(last.Data, "error.type").Str != wantType {
			t.Errorf("%s: error type %s, want %s", label, last.Data, wantType)
		}
	case OpenAIResponses:
		if last.Event != "response.failed" || gjson.GetBytes(last.Data, "response.status").Str != "failed" {
			t.Errorf("%s: last event is not response.failed: %q", label, last.Raw)
		}
		if strings.Contains(s, "response.completed") || strings.Contains(s, "response.incomplete") {
			t.Errorf("%s: finish relayed:\n%s", label, s)
		}
	}
	sdkErr, finished := sdkOutcome(to, out)
	if sdkErr == nil || finished {
		t.Errorf("%s: SDK error %v, finished %v; want an error and no finish\n%s", label, sdkErr, finished, s)
	}
	if wantType != "" && sdkErr != nil && !strings.Contains(sdkErr.Error(), wantType) {
		t.Errorf("%s: SDK error %q does not name %s", label, sdkErr, wantType)
	}
}

const amStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
const amPing = "event: ping\ndata: {\"type\": \"ping\"}\n\n"

func amText(s string) string {
	return amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+s+`"}}`)
}

func rsEv(typ string, seq int, rest string) string {
	return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\"sequence_number\":" + itoa(seq) + rest + "}\n\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

const rsResp = `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"up","output":[],"usage":null}`

// rsPreamble and rsContent are the start of a Responses stream.
var rsPreamble = rsEv("response.created", 0, rsResp) + rsEv("response.in_progress", 1, rsResp)
var rsContent = rsEv("response.output_item.added", 2, `,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
	rsEv("response.output_text.delta", 3, `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"partial"`)

// TestTruncatedStreams: an upstream that ends without a finish reason is
// relayed in every client dialect (passthrough and translated) as that
// dialect's error form, with no finish and no terminator, and the official
// SDKs report a stream error.
func TestTruncatedStreams(t *testing.T) {
	role := ccChunk(`{"role":"assistant","content":""}`, "", "")
	text := ccChunk(`{"content":"partial"}`, "", "")
	tool := ccChunk(`{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}`, "", "")
	inputs := map[Dialect]map[string]string{
		OpenAIChat: {
			"eof after content":           role + text,
			"no final blank line":         role + strings.TrimRight(text, "\n"),
			"[DONE] without finish":       role + text + "data: [DONE]\n\n",
			"mid tool call":               role + tool,
			"usage chunk without finish":  role + text + ccUsage + "data: [DONE]\n\n",
			"keep-alive then eof":         role + text + ": keep-alive\n\n",
			"finish_reason empty string":  role + ccChunk(`{"content":"x"}`, "", "") + strings.Replace(ccChunk(`{}`, "", ""), `"finish_reason":null`, `"finish_reason":""`, 1),
			"only the role chunk and eof": role,
		},
		AnthropicMessages: {
			"eof after content":            amStart + amPing + amText("partial"),
			"message_stop without a delta": amStart + amText("partial") + amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) + amEv("message_stop", `{"type":"message_stop"}`),
			"mid tool call": amStart + amEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
				amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`),
			"message_start only": amStart + amPing,
		},
	}
	for from, cases := range inputs {
		for name, in := range cases {
			for _, to := range allDialects {
				label := from.String() + "→" + to.String() + " " + name
				out, _, tr, err := collect(t, from, to, "client-model", strings.NewReader(in))
				if err != nil {
					t.Fatalf("%s: Run: %v", label, err)
				}
				if !tr.Truncated() || tr.UpstreamError() != nil || !tr.Committed() {
					t.Errorf("%s: truncated %v, upstream error %v, committed %v", label, tr.Truncated(), tr.UpstreamError(), tr.Committed())
				}
				wantType := "api_error"
				if to != AnthropicMessages {
					wantType = "upstream_unavailable"
				}
				assertErrorForm(t, label, to, out, wantType)
				if !strings.Contains(string(out), "without a finish reason") && !strings.Contains(string(out), "without sending any event") {
					t.Errorf("%s: message does not say what happened:\n%s", label, out)
				}
			}
		}
	}
	// Responses passthrough
	for name, in := range map[string]string{
		"eof after content": rsPreamble + rsContent,
		"preamble only":     rsPreamble,
	} {
		out, _, tr, err := collect(t, OpenAIResponses, OpenAIResponses, "client-model", strings.NewReader(in))
		if err != nil || !tr.Truncated() {
			t.Fatalf("responses %s: %v %v", name, err, tr.Truncated())
		}
		assertErrorForm(t, "responses "+name, OpenAIResponses, out, "")
		evs := readAllEvents(t, bytes.NewReader(out))
		errEv := evs[len(evs)-2]
		if errEv.Event != "error" || gjson.GetBytes(errEv.Data, "code").Str != "upstream_unavailable" ||
			gjson.GetBytes(errEv.Data, "sequence_number").Int() != gjson.GetBytes(evs[len(evs)-3].Data, "sequence_number").Int()+1 ||
			gjson.GetBytes(evs[len(evs)-1].Data, "response.model").Str != "client-model" || gjson.GetBytes(evs[len(evs)-1].Data, "response.id").Str != "resp_1" {
			t.Errorf("responses %s: %s", name, out)
		}
	}
}

// TestReadErrorMidStream: an upstream read error after content is relayed
// as the client's error form (no terminator), and Run returns it.
func TestReadErrorMidStream(t *testing.T) {
	boom := errors.New("connection reset by peer")
	ins := map[Dialect]string{
		OpenAIChat:        ccChunk(`{"role":"assistant","content":"par"}`, "", ""),
		AnthropicMessages: amStart + amText("par"),
		OpenAIResponses:   rsPreamble + rsContent,
	}
	for from, in := range ins {
		for _, to := range allDialects {
			label := from.String() + "→" + to.String()
			out, _, tr, err := collect(t, from, to, "m", io.MultiReader(strings.NewReader(in), iotest.ErrReader(boom)))
			if err != boom || tr.Truncated() || tr.UpstreamError() != nil {
				t.Errorf("%s: err %v truncated %v", label, err, tr.Truncated())
			}
			assertErrorForm(t, label, to, out, "")
			if !strings.Contains(string(out), msgInterrupted) {
				t.Errorf("%s: %s", label, out)
			}
		}
	}
}

// TestStalledMidStream: a read that fails with ErrStreamStalled (the
// caller's stream idle bound: keep-alives and no data) ends the client's
// stream with the stalled message in its error form, not a connection
// error's, in every direction, and Run returns the error.
func TestStalledMidStream(t *testing.T) {
	stalled := fmt.Errorf("reading the upstream: %w", ErrStreamStalled)
	ins := map[Dialect]string{
		OpenAIChat:        ccChunk(`{"role":"assistant","content":"par"}`, "", ""),
		AnthropicMessages: amStart + amText("par"),
		OpenAIResponses:   rsPreamble + rsContent,
	}
	for from, in := range ins {
		for _, to := range allDialects {
			label := from.String() + "→" + to.String()
			out, _, _, err := collect(t, from, to, "m", io.MultiReader(strings.NewReader(in), iotest.ErrReader(stalled)))
			if !errors.Is(err, ErrStreamStalled) {
				t.Errorf("%s: err %v", label, err)
			}
			assertErrorForm(t, label, to, out, "")
			if !strings.Contains(string(out), msgStalled) || strings.Contains(string(out), msgInterrupted) {
				t.Errorf("%s: %s", label, out)
			}
		}
	}
}

// assertInBandError relays upstream stream in (dialect from) to a client
// of dialect to and checks the in-band error it holds: UpstreamError with
// type typ and status, a body carrying its (secret-free) message, nothing
// of after relayed, and the client's error form naming clientType (when
// not ""). It returns the client's bytes.
func assertInBandError(t *testing.T, label string, from, to Dialect, in, typ string, status int, clientType, after string) []byte {
	t.Helper()
	out, _, tr, err := collect(t, from, to, "client-model", strings.NewReader(in))
	if err != nil {
		t.Fatalf("%s: Run: %v", label, err)
	}
	se := tr.UpstreamError()
	if se == nil || se.Type != typ || se.Status != status || tr.Truncated() {
		t.Fatalf("%s: UpstreamError %+v truncated %v", label, se, tr.Truncated())
	}
	if !gjson.ValidBytes(se.Body) || gjson.GetBytes(se.Body, "error.message").Str != se.Message || se.Message == "" {
		t.Errorf("%s: body %s", label, se.Body)
	}
	if strings.Contains(string(out), after) || strings.Contains(string(out), "sk-abcdefghijklmnop") || strings.Contains(se.Message+string(se.Body), "sk-abcdefghijklmnop") {
		t.Errorf("%s: relayed after the error, or leaked a secret:\n%s", label, out)
	}
	assertErrorForm(t, label, to, out, clientType)
	return out
}

// TestInBandErrorAfterContent: an upstream error event after content sets
// UpstreamError (type, status, body), is relayed as the client's error form,
// and nothing after it is relayed; an Anthropic client stream ends at the
// error event.
func TestInBandErrorAfterContent(t *testing.T) {
	after := "after-the-error"
	type tc struct {
		from       Dialect
		in         string
		typ        string
		status     int
		clientType map[Dialect]string // expected error type / code in the client's form
	}
	cases := []tc{
		{AnthropicMessages, amStart + amPing + amText("partial") +
			"event: error\ndata: {\"type\": \"error\", \"error\": {\"details\":null,\"type\": \"overloaded_error\", \"message\": \"Overloaded\"},\"request_id\":\"req_1\"}\n\n" +
			amEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+after+`"}}`) + amEv("message_stop", `{"type":"message_stop"}`),
			"overloaded_error", 529, map[Dialect]string{AnthropicMessages: "overloaded_error", OpenAIChat: "server_is_overloaded"}},
		{AnthropicMessages, amStart + amText("partial") + amEv("error", `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`),
			"rate_limit_error", 429, map[Dialect]string{AnthropicMessages: "rate_limit_error", OpenAIChat: "rate_limit_exceeded"}},
		{AnthropicMessages, amStart + amText("partial") + amEv("error", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`),
			"api_error", 500, map[Dialect]string{AnthropicMessages: "api_error"}},
		{OpenAIChat, ccChunk(`{"role":"assistant","content":"partial"}`, "", "") +
			`data: {"error":{"message":"Rate limit reached for sk-abcdefghijklmnop","type":"requests","param":null,"code":"rate_limit_exceeded"}}` + "\n\n" +
			ccChunk(`{"content":"`+after+`"}`, "", "") + ccChunk(`{}`, "stop", "") + "data: [DONE]\n\n",
			"rate_limit_exceeded", 429, map[Dialect]string{AnthropicMessages: "rate_limit_error", OpenAIChat: "rate_limit_exceeded"}},
		{OpenAIChat, ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}` + "\n\n",
			"server_error", 500, map[Dialect]string{AnthropicMessages: "api_error"}},
		{OpenAIChat, ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + `data: {"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}` + "\n\n",
			"insufficient_quota", 429, map[Dialect]string{AnthropicMessages: "rate_limit_error", OpenAIChat: "insufficient_quota"}},
		{OpenAIChat, ccChunk(`{"role":"assistant","content":"partial"}`, "", "") + `data: {"error":"upstream connect error"}` + "\n\n",
			"server_error", 500, map[Dialect]string{AnthropicMessages: "api_error"}},
	}
	for i, c := range cases {
		for _, to := range allDialects {
			label := c.from.String() + "→" + to.String() + " case " + itoa(i)
			out := assertInBandError(t, label, c.from, to, c.in, c.typ, c.status, c.clientType[to], after)
			if c.from == to {
				// passthrough: the upstream's error event is the last block, verbatim
				// (apart from the scrubbed secret)
				if last := lastEvent(t, out); !strings.Contains(c.in, string(last.Raw)) && !strings.Contains(string(last.Raw), "[redacted]") {
					t.Errorf("%s: error event not verbatim: %q", label, last.Raw)
				}
			}
		}
	}
	// Responses passthrough, with the nested error OpenAI sends on the wire,
	// an event between error and response.failed (dropped) and one after.
	in := rsPreamble + rsContent +
		rsEv("error", 4, `,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota","param":null}`) +
		rsEv("response.output_text.delta", 5, `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"`+after+`"`) +
		rsEv("response.failed", 5, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"failed","model":"up","error":{"code":"insufficient_quota","message":"You exceeded your current quota"},"output":[],"usage":null}`) +
		rsEv("response.completed", 6, rsResp)
	out, _, tr, err := collect(t, OpenAIResponses, OpenAIResponses, "", strings.NewReader(in))
	se := tr.UpstreamError()
	if err != nil || se == nil || se.Type != "insufficient_quota" || se.Status != 429 {
		t.Fatalf("responses: %v %+v", err, se)
	}
	want := rsPreamble + rsContent + rsEv("error", 4, `,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota","param":null}`) +
		rsEv("response.failed", 5, `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"failed","model":"up","error":{"code":"insufficient_quota","message":"You exceeded your current quota"},"output":[],"usage":null}`)
	if string(out) != want {
		t.Errorf("responses passthrough:\n%s\nwant\n%s", out, want)
	}
	assertErrorForm(t, "responses passthrough", OpenAIResponses, out, "insufficient_quota")
	// flat error event (API reference shape) and a lone response.failed
	for name, c := range map[string]struct {
		in, typ string
		status  int
	}{
		"flat":   {rsPreamble + rsContent + rsEv("error", 4, `,"code":"server_error","message":"boom","param":null`), "server_error", 500},
		"failed": {rsPreamble + rsContent + rsEv("response.failed", 4, `,"response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}`), "rate_limit_exceeded", 429},
	} {
		_, _, tr, _ := collect(t, OpenAIResponses, OpenAIResponses, "", strings.NewReader(c.in))
		if se := tr.UpstreamError(); se == nil || se.Type != c.typ || se.Status != c.status {
			t.Errorf("responses %s: %+v", name, se)
		}
	}
}

// TestHoldPreambleFailureBeforeContent: message_start + ping + error before
// any content (and the Chat and Responses equivalents, read errors, empty
// and preamble-only streams) write nothing with HoldPreamble, and Run's
// error says so and carries the cause.
func TestHoldPreambleFailureBeforeContent(t *testing.T) {
	boom := errors.New("connection reset by peer")
	type tc struct {
		from   Dialect
		in     io.Reader
		cause  error // for errors.Is; nil: a *StreamError
		typ    string
		status int
	}
	mk := func() []tc {
		return []tc{
			{AnthropicMessages, strings.NewReader(amStart + amPing + amEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)), nil, "overloaded_error", 529},
			{AnthropicMessages, strings.NewReader(": keep-alive\n\n" + amStart + amPing + amPing + amEv("error", `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`)), nil, "rate_limit_error", 429},
			{OpenAIChat, strings.NewReader(ccChunk(`{"role":"assistant","content":""}`, "", "") + `data: {"error":{"message":"overloaded","type":"service_unavailable_error","code":"server_is_overloaded"}}` + "\n\n"), nil, "server_is_overloaded", 503},
			{OpenAIChat, strings.NewReader(ccChunk(`{"role":"assistant","content":null,"refusal":null}`, "", "") + `data: {"error":{"message":"boom","type":"server_error"}}` + "\n\n"), nil, "server_error", 500},
			{OpenAIResponses, strings.NewReader(rsPreamble + rsEv("error", 2, `,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"quota","param":null}`) + rsEv("response.failed", 3, rsResp)), nil, "insufficient_quota", 429},
			{OpenAIResponses, strings.NewReader(rsPreamble + rsEv("response.failed", 2, `,"response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"boom"}}`)), nil, "server_error", 500},
			{AnthropicMessages, io.MultiReader(strings.NewReader(amStart+amPing), iotest.ErrReader(boom)), boom, "", 0},
			{OpenAIChat, io.MultiReader(strings.NewReader(ccChunk(`{"role":"assistant","content":""}`, "", "")), iotest.ErrReader(boom)), boom, "", 0},
			{OpenAIResponses, io.MultiReader(strings.NewReader(rsPreamble), iotest.ErrReader(boom)), boom, "", 0},
			{AnthropicMessages, strings.NewReader(amStart + amPing), io.ErrUnexpectedEOF, "", 0},
			{AnthropicMessages, strings.NewReader(amStart + amEv("message_stop", `{"type":"message_stop"}`)), io.ErrUnexpectedEOF, "", 0},
			{OpenAIChat, strings.NewReader(ccChunk(`{"role":"assistant","content":""}`, "", "") + "data: [DONE]\n\n"), io.ErrUnexpectedEOF, "", 0},
			{OpenAIResponses, strings.NewReader(rsPreamble), io.ErrUnexpectedEOF, "", 0},
			{AnthropicMessages, strings.NewReader(""), io.ErrUnexpectedEOF, "", 0},
			{OpenAIChat, strings.NewReader(": keep-alive\n\n"), io.ErrUnexpectedEOF, "", 0},
		}
	}
	for i := range mk() {
		for _, to := range allDialects {
			c := mk()[i]
			label := c.from.String() + "→" + to.String() + " case " + itoa(i)
			writes := 0
			tr := NewStreamTranslator(c.from, to, "m", EventWriterFunc(func(p []byte) error { writes++; return nil }))
			tr.HoldPreamble()
			err := tr.Run(c.in)
			if writes != 0 || tr.EventsWritten() != 0 || tr.Committed() {
				t.Errorf("%s: %d writes, committed %v", label, writes, tr.Committed())
			}
			if !errors.Is(err, ErrNotCommitted) {
				t.Fatalf("%s: err %v, want ErrNotCommitted", label, err)
			}
			if c.cause != nil {
				if !errors.Is(err, c.cause) {
					t.Errorf("%s: err %v does not wrap %v", label, err, c.cause)
				}
				if tr.Truncated() != (c.cause == io.ErrUnexpectedEOF) {
					t.Errorf("%s: truncated %v", label, tr.Truncated())
				}
				continue
			}
			var se *StreamError
			if !errors.As(err, &se) || se.Type != c.typ || se.Status != c.status || se != tr.UpstreamError() {
				t.Errorf("%s: StreamError %+v (err %v)", label, se, err)
			}
		}
	}
	// without HoldPreamble the same failures are relayed (error form, Run nil)
	out, _, tr, err := collect(t, AnthropicMessages, AnthropicMessages, "m", strings.NewReader(amStart+amPing+amEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)))
	if err != nil || !tr.Committed() || tr.UpstreamError() == nil || tr.UpstreamError().Status != 529 {
		t.Fatalf("no hold: %v %v", err, tr.UpstreamError())
	}
	assertErrorForm(t, "no hold", AnthropicMessages, out, "overloaded_error")
}

// TestHoldPreambleHealthyStreamsUnchanged: with HoldPreamble every recorded
// stream, in every direction, gives the same bytes and the same WriteEvent
// calls as without it.
func TestHoldPreambleHealthyStreamsUnchanged(t *testing.T) {
	for _, from := range allDialects {
		for _, fx := range streamFixtures(t, from) {
			for _, to := range allDialects {
				label := fx.name + " → " + to.String()
				want, wantEvs, tr0, err0 := collect(t, from, to, "client-model", bytes.NewReader(fx.body))
				got, gotEvs, tr, err := collectHold(t, from, to, "client-model", iotest.OneByteReader(bytes.NewReader(fx.body)))
				if err != nil || err0 != nil || !tr.Committed() {
					t.Fatalf("%s: %v %v committed %v", label, err, err0, tr.Committed())
				}
				if !bytes.Equal(got, want) || len(gotEvs) != len(wantEvs) || tr.EventsWritten() != tr0.EventsWritten() {
					t.Errorf("%s: HoldPreamble changed the output (%d vs %d events)", label, len(gotEvs), len(wantEvs))
				}
				if tr.Truncated() || tr.UpstreamError() != nil {
					t.Errorf("%s: healthy stream reported truncated %v error %v", label, tr.Truncated(), tr.UpstreamError())
				}
			}
		}
	}
	// and the synthetic streams of these tests
	for _, c := range []struct {
		from Dialect
		in   string
	}{
		{AnthropicMessages, ": hi\n\n" + amStart + amPing + amText("x") + amEv("content_block_stop", `{"type":"content_block_stop","index":0}`) + amEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`) + amEv("message_stop", `{"type":"message_stop"}`)},
		{OpenAIChat, ccChunk(`{"role":"assistant","content":""}`, "", "") + ccChunk(`{"content":"x"}`, "", "") + ccChunk(`{}`, "stop", "") + ccUsage + "data: [DONE]\n\n"},
		{OpenAIChat, ccChunk(`{"role":"assistant","content":""}`, "", "") + ccChunk(`{}`, "stop", "") + "data: [DONE]\n\n"},
	} {
		for _, to := range allDialects {
			want, _, _, _ := collect(t, c.from, to, "m", strings.NewReader(c.in))
			got, _, _, err := collectHold(t, c.from, to, "m", strings.NewReader(c.in))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s→%s: %v\n%s\nwant\n%s", c.from, to, err, got, want)
			}
		}
	}
}

// eventReader returns one SSE block per Read and counts the reads. evs is
// not modified, so several readers may share it.
type eventReader struct {
	evs   [][]byte
	i, at int // next event, offset in it
	reads int
}

func newEventReader(body []byte) *eventReader {
	r := &eventReader{}
	for _, ev := range bytes.SplitAfter(body, []byte("\n\n")) {
		if len(ev) > 0 {
			r.evs = append(r.evs, ev)
		}
	}
	return r
}

func (r *eventReader) Read(p []byte) (int, error) {
	if r.i >= len(r.evs) {
		return 0, io.EOF
	}
	r.reads++
	n := copy(p, r.evs[r.i][r.at:])
	r.at += n
	if r.at == len(r.evs[r.i]) {
		r.i, r.at = r.i+1, 0
	}
	return n, nil
}

// isContentEvent reports whether a client event carries content (is not
// the preamble).
func isContentEvent(d Dialect, p []byte) bool {
	ev, err := NewSSEReader(bytes.NewReader(p)).Next()
	if err != nil || len(ev.Data) == 0 {
		return false
	}
	switch d {
	case AnthropicMessages:
		typ := gjson.GetBytes(ev.Data, "type").Str
		return typ != "message_start" && typ != "ping"
	case OpenAIResponses:
		typ := gjson.GetBytes(ev.Data, "type").Str
		return typ != "response.created" && typ != "response.in_progress"
	}
	if bytes.Equal(ev.Data, doneMarker) || gjson.GetBytes(ev.Data, "usage").IsObject() || gjson.GetBytes(ev.Data, "error").Exists() {
		return true
	}
	pre := true
	gjson.GetBytes(ev.Data, "choices").ForEach(func(_, c gjson.Result) bool {
		pre = pre && c.Get("finish_reason").Type == gjson.Null && chatDeltaIsPreamble(c.Get("delta"))
		return pre
	})
	return !pre
}

// firstContentAt runs a stream whose upstream delivers one event per read
// and returns how many upstream reads had happened when the first content
// event reached the EventWriter.
func firstContentAt(t testing.TB, from, to Dialect, body []byte, hold bool) int {
	r := newEventReader(body)
	at := -1
	tr := NewStreamTranslator(from, to, "m", EventWriterFunc(func(p []byte) error {
		if at < 0 && isContentEvent(to, p) {
			at = r.reads
		}
		return nil
	}))
	if hold {
		tr.HoldPreamble()
	}
	if err := tr.Run(r); err != nil {
		t.Fatal(err)
	}
	return at
}

// TestHoldPreambleFirstContentNotDelayed: the first content event is
// written after the same upstream read with and without HoldPreamble (the
// preamble is held in bytes, never waiting for more input).
func TestHoldPreambleFirstContentNotDelayed(t *testing.T) {
	for _, from := range allDialects {
		for _, fx := range streamFixtures(t, from) {
			for _, to := range allDialects {
				a, b := firstContentAt(t, from, to, fx.body, false), firstContentAt(t, from, to, fx.body, true)
				if a != b || a <= 0 {
					t.Errorf("%s → %s: first content after read %d without HoldPreamble, %d with", fx.name, to, a, b)
				}
			}
		}
	}
}

// TestStreamErrorFields: Type sanitised and short, Message scrubbed and
// bounded at a rune boundary, Body valid JSON in the upstream's shape.
func TestStreamErrorFields(t *testing.T) {
	long := strings.Repeat("é", 5000) // 10000 bytes
	e := newStreamError(AnthropicMessages, "weird type\"with\nstuff"+strings.Repeat("x", 200), "", "key sk-ant-abcdefghijklmnop "+long, "")
	if len(e.Type) > 64 || strings.ContainsAny(e.Type, " \"\n") || !strings.HasPrefix(e.Type, "weirdtypewithstuff") {
		t.Errorf("type %q", e.Type)
	}
	if len(e.Message) > MaxStreamErrorMessage || len(e.Message) < MaxStreamErrorMessage-3 || !utf8.ValidString(e.Message) || strings.Contains(e.Message, "sk-ant-abcdefghijklmnop") {
		t.Errorf("message %d bytes, valid %v", len(e.Message), utf8.ValidString(e.Message))
	}
	if !gjson.ValidBytes(e.Body) || gjson.GetBytes(e.Body, "type").Str != "error" || gjson.GetBytes(e.Body, "error.type").Str != e.Type || gjson.GetBytes(e.Body, "error.message").Str != e.Message || len(e.Body) > 5<<10 {
		t.Errorf("body %d bytes: %.200s", len(e.Body), e.Body)
	}
	if e.Status != 500 {
		t.Errorf("unknown type status %d", e.Status)
	}
	o := newStreamError(OpenAIChat, "invalid_request_error", "invalid_api_key", "Incorrect API key provided", "")
	if o.Type != "invalid_api_key" || o.Status != 401 || gjson.GetBytes(o.Body, "error.type").Str != "invalid_request_error" ||
		gjson.GetBytes(o.Body, "error.code").Str != "invalid_api_key" || gjson.GetBytes(o.Body, "error.param").Type != gjson.Null {
		t.Errorf("%+v %s", o, o.Body)
	}
	if n := newStreamError(OpenAIChat, "", "", "", ""); n.Type != "server_error" || n.Status != 500 || !gjson.ValidBytes(n.Body) {
		t.Errorf("%+v", n)
	}
	if !strings.Contains(o.Error(), "invalid_api_key") || !strings.Contains(o.Error(), "401") {
		t.Errorf("Error() = %q", o.Error())
	}
	for _, c := range []struct {
		typ, code string
		want      int
	}{
		{"invalid_request_error", "", 400}, {"authentication_error", "", 401}, {"billing_error", "", 402},
		{"permission_error", "", 403}, {"not_found_error", "", 404}, {"request_too_large", "", 413},
		{"rate_limit_error", "", 429}, {"api_error", "", 500}, {"timeout_error", "", 504}, {"overloaded_error", "", 529},
		{"server_error", "", 500}, {"requests", "rate_limit_exceeded", 429}, {"insufficient_quota", "insufficient_quota", 429},
		{"invalid_request_error", "context_length_exceeded", 400}, {"invalid_request_error", "model_not_found", 404},
		{"service_unavailable_error", "server_is_overloaded", 503}, {"invalid_request_error", "unsupported_parameter", 400},
		{"mystery", "", 500}, {"", "", 500}, {"server_error", "unknown_code", 500},
		// a numeric code is the HTTP status (vLLM, SGLang, llama.cpp, OpenRouter)
		{"BadRequestError", "400", 400}, {"exceed_context_size_error", "400", 400}, {"", "429", 429}, {"", "502", 502},
		{"invalid_request_error", "200", 400}, {"", "600", 500}, {"", "4000", 500}, {"", "4x0", 500}, {"", "-400", 500},
	} {
		if got := StreamErrorStatus(c.typ, c.code); got != c.want {
			t.Errorf("StreamErrorStatus(%q, %q) = %d, want %d", c.typ, c.code, got, c.want)
		}
	}
}

// TestHoldPreambleWriterErrorAtCommit: a client that fails while the held
// preamble is written stops the stream with the writer's error.
func TestHoldPreambleWriterErrorAtCommit(t *testing.T) {
	gone := errors.New("client gone")
	calls := 0
	tr := NewStreamTranslator(AnthropicMessages, AnthropicMessages, "", EventWriterFunc(func(p []byte) error {
		calls++
		return gone
	}))
	tr.HoldPreamble()
	err := tr.Run(strings.NewReader(amStart + amPing + amText("x")))
	if err != gone || calls != 1 || !tr.Committed() || tr.EventsWritten() != 0 {
		t.Errorf("err %v calls %d committed %v", err, calls, tr.Committed())
	}
}

// FuzzStreamHoldPreamble feeds arbitrary upstream bytes to every direction
// (passthrough included) with and without HoldPreamble: either the held run
// wrote nothing and says ErrNotCommitted (and the run without it ended in an
// error form or a failure, or, in a Chat passthrough, relayed a chunk with
// a malformed "choices" it does not parse after its commit point), or both
// runs wrote the same events and returned the same error.
func FuzzStreamHoldPreamble(f *testing.F) {
	seedStreams(f, OpenAIChat, AnthropicMessages, OpenAIResponses)
	f.Add([]byte(amStart + amPing + amEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)))
	f.Add([]byte(ccChunk(`{"role":"assistant","content":""}`, "", "") + "data: [DONE]\n\n"))
	f.Add([]byte(rsPreamble + rsContent))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, from := range allDialects {
			for _, to := range allDialects {
				want, wantEvs, tr0, err0 := collect(t, from, to, "m", bytes.NewReader(in))
				got, gotEvs, tr, err := collectHold(t, from, to, "m", bytes.NewReader(in))
				if errors.Is(err, ErrNotCommitted) {
					if len(got) != 0 || tr.Committed() {
						t.Fatalf("%s→%s: not committed but wrote %q", from, to, got)
					}
					// a Chat passthrough parses a chunk before its commit
					// point (to tell preamble from content) and after it
					// only when the chunk can carry usage, a finish or an
					// error: a malformed "choices" in a plain content
					// chunk fails the held run and is relayed by the
					// plain one (the stricter side is the held run)
					malformed := from == OpenAIChat && to == OpenAIChat && tr.UpstreamError() != nil &&
						tr.UpstreamError().Message == msgMalformedChoices
					if tr0.UpstreamError() == nil && !tr0.Truncated() && err0 == nil && !malformed {
						t.Fatalf("%s→%s: held run failed (%v), plain run succeeded:\n%s", from, to, err, want)
					}
					continue
				}
				if !bytes.Equal(got, want) || len(gotEvs) != len(wantEvs) || err != err0 || tr.Truncated() != tr0.Truncated() {
					t.Fatalf("%s→%s: HoldPreamble changed the stream (err %v vs %v)\n%q\nvs\n%q", from, to, err, err0, got, want)
				}
			}
		}
	})
}

// TestChatObjectErrorChunk: vLLM streams an error as a chunk whose fields
// are at the top level ({"object":"error","message":...,"code":400}), with
// no "error" member. Held before the commit point, it is the upstream's
// error with its status (the numeric code) in every direction, and nothing
// reaches the client; passed through after the commit point, the chunk is
// relayed (its secret scrubbed) and the stream ends there.
func TestChatObjectErrorChunk(t *testing.T) {
	const errChunk = `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`
	for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for _, chunk := range []string{errChunk, ` { "object" : "error", "message": "m", "type": "BadRequestError", "code": 400 }`} {
			var out []byte
			tr := NewStreamTranslator(OpenAIChat, to, "", EventWriterFunc(func(p []byte) error { out = append(out, p...); return nil }))
			tr.HoldPreamble()
			err := tr.Run(strings.NewReader("data: " + chunk + "\n\n"))
			if !errors.Is(err, ErrNotCommitted) || len(out) != 0 || tr.UpstreamError() == nil || tr.UpstreamError().Status != 400 {
				t.Errorf("→ %s %s: err %v, out %q, upstream error %+v", to, chunk, err, out, tr.UpstreamError())
			}
		}
	}
	// after content: relayed as sent, the stream stops there
	in := ccChunk(`{"role":"assistant","content":"hi"}`, "", "") + "data: " + errChunk + "\n\n"
	out, _, tr, _ := collect(t, OpenAIChat, OpenAIChat, "", strings.NewReader(in))
	if string(out) != in || tr.UpstreamError() == nil || tr.UpstreamError().Status != 400 || tr.Truncated() {
		t.Errorf("after content: %q, upstream error %+v", out, tr.UpstreamError())
	}
	// a chunk whose "object" is not the first member, or not "error", is a chunk
	for _, d := range []string{`{"id":"x","object":"error"}`, `{"object":"chat.completion.chunk"}`, `{"object":"errors"}`, `"object":"error"`} {
		if objectError([]byte(d)) != false {
			t.Errorf("objectError(%s) = true", d)
		}
	}
}
