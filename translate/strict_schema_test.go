package translate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A strict schema of each client dialect's output, written from the
// vendors' API references and the required fields of their SDK types
// (openai-go, anthropic-sdk-go) and strict clients (the Vercel AI SDK's
// providers): every key in req must be present, no key outside req, opt
// and ext may appear. ext holds the named extensions of
// docs/translation-dropped-fields.md. Values under sub are checked with
// their own schema (array elements one by one); by picks the schema from
// the value's "type".
type sk struct {
	req, opt, ext string
	sub           map[string]*sk
	by            map[string]*sk
	any           bool // any content (tool input, metadata)
}

var skAny = &sk{any: true}

func (s *sk) check(v gjson.Result, path string, errs *[]string) {
	if s == nil || s.any || v.Type == gjson.Null {
		return
	}
	if v.IsArray() {
		i := 0
		v.ForEach(func(_, e gjson.Result) bool {
			s.check(e, path+"["+sprintf("%d", i)+"]", errs)
			i++
			return true
		})
		return
	}
	if !v.IsObject() {
		return
	}
	if s.by != nil {
		t := v.Get("type").Str
		ts, ok := s.by[t]
		if !ok {
			*errs = append(*errs, sprintf("%s: type %q outside the schema", path, t))
			return
		}
		ts.check(v, path, errs)
		return
	}
	allowed := map[string]bool{}
	for _, k := range strings.Fields(s.req + " " + s.opt + " " + s.ext) {
		allowed[k] = true
	}
	for _, k := range strings.Fields(s.req) {
		if !v.Get(gjson.Escape(k)).Exists() {
			*errs = append(*errs, sprintf("%s: required field %q missing", path, k))
		}
	}
	v.ForEach(func(k, e gjson.Result) bool {
		if !allowed[k.Str] {
			*errs = append(*errs, sprintf("%s: field %q outside the schema", path, k.Str))
		} else if sub := s.sub[k.Str]; sub != nil {
			sub.check(e, path+"."+k.Str, errs)
		}
		return true
	})
}

func typed(m map[string]*sk) *sk { return &sk{by: m} }

// Anthropic Messages (API reference "Messages", "Streaming messages").
var (
	amUsage = &sk{req: "input_tokens output_tokens",
		opt: "cache_creation_input_tokens cache_read_input_tokens cache_creation server_tool_use service_tier inference_geo",
		sub: map[string]*sk{"cache_creation": {opt: "ephemeral_5m_input_tokens ephemeral_1h_input_tokens"}, "server_tool_use": skAny}}
	amDeltaUsage = &sk{req: "output_tokens",
		opt: "input_tokens cache_creation_input_tokens cache_read_input_tokens server_tool_use",
		sub: map[string]*sk{"server_tool_use": skAny}}
	amBlock = typed(map[string]*sk{
		"text":              {req: "type text", opt: "citations", sub: map[string]*sk{"citations": skAny}},
		"thinking":          {req: "type thinking signature"},
		"redacted_thinking": {req: "type data"},
		"tool_use":          {req: "type id name input", opt: "caller", sub: map[string]*sk{"input": skAny}},
	})
	amMessage = &sk{req: "id type role model content stop_reason stop_sequence usage", opt: "container stop_details",
		sub: map[string]*sk{"content": amBlock, "usage": amUsage}}
	amEvent = typed(map[string]*sk{
		"message_start":       {req: "type message", sub: map[string]*sk{"message": amMessage}},
		"content_block_start": {req: "type index content_block", sub: map[string]*sk{"content_block": amBlock}},
		"content_block_delta": {req: "type index delta", sub: map[string]*sk{"delta": typed(map[string]*sk{
			"text_delta":       {req: "type text"},
			"thinking_delta":   {req: "type thinking"},
			"signature_delta":  {req: "type signature"},
			"input_json_delta": {req: "type partial_json"},
		})}},
		"content_block_stop": {req: "type index"},
		"message_delta": {req: "type delta usage", sub: map[string]*sk{
			"delta": {req: "stop_reason stop_sequence", opt: "stop_details container"}, "usage": amDeltaUsage}},
		"message_stop": {req: "type"},
		"ping":         {req: "type"},
	})
)

// OpenAI Chat Completions (API reference "Chat", "Streaming"); the named
// extensions are reasoning_content and thinking_blocks on a message or
// delta, and prompt_tokens_details.cache_write_tokens.
var (
	skCCUsage = &sk{req: "prompt_tokens completion_tokens total_tokens", opt: "prompt_tokens_details completion_tokens_details",
		sub: map[string]*sk{
			"prompt_tokens_details":     {opt: "cached_tokens audio_tokens", ext: "cache_write_tokens"},
			"completion_tokens_details": {opt: "reasoning_tokens audio_tokens accepted_prediction_tokens rejected_prediction_tokens"},
		}}
	ccThinkingBlocks = typed(map[string]*sk{
		"thinking":          {req: "type thinking signature"},
		"redacted_thinking": {req: "type data"},
	})
	skCCChunk = &sk{req: "id object created model choices", opt: "usage system_fingerprint service_tier obfuscation",
		sub: map[string]*sk{"usage": skCCUsage, "choices": {req: "index delta finish_reason", opt: "logprobs",
			sub: map[string]*sk{"delta": {opt: "role content refusal tool_calls", ext: "reasoning_content thinking_blocks",
				sub: map[string]*sk{"thinking_blocks": ccThinkingBlocks,
					"tool_calls": {req: "index", opt: "id type function", sub: map[string]*sk{"function": {opt: "name arguments"}}}}}}}}}
	ccCompletion = &sk{req: "id object created model choices", opt: "usage system_fingerprint service_tier",
		sub: map[string]*sk{"usage": skCCUsage, "choices": {req: "index message finish_reason logprobs",
			sub: map[string]*sk{"message": {req: "role content refusal", opt: "tool_calls annotations audio function_call",
				ext: "reasoning_content thinking_blocks",
				sub: map[string]*sk{"thinking_blocks": ccThinkingBlocks,
					"tool_calls": {req: "id type function", sub: map[string]*sk{"function": {req: "name arguments"}}}}}}}}}
)

// OpenAI Responses (API reference "Responses", "Streaming events").
var (
	rsUsage = &sk{req: "input_tokens input_tokens_details output_tokens output_tokens_details total_tokens",
		sub: map[string]*sk{"input_tokens_details": {req: "cached_tokens"}, "output_tokens_details": {req: "reasoning_tokens"}}}
	rsPart = typed(map[string]*sk{
		"output_text": {req: "type text annotations", opt: "logprobs", sub: map[string]*sk{"annotations": skAny, "logprobs": skAny}},
		"refusal":     {req: "type refusal"},
	})
	rsSummary = &sk{req: "type text"}
	rsItem    = typed(map[string]*sk{
		"message":       {req: "id type role content status", sub: map[string]*sk{"content": rsPart}},
		"reasoning":     {req: "id type summary", opt: "encrypted_content status content", sub: map[string]*sk{"summary": rsSummary}},
		"function_call": {req: "type call_id name arguments", opt: "id status"},
	})
	rsResponse = &sk{req: "id object created_at status error incomplete_details instructions metadata model output parallel_tool_calls temperature tool_choice tools top_p usage",
		opt: "max_output_tokens previous_response_id reasoning text truncation user store background service_tier max_tool_calls prompt_cache_key safety_identifier top_logprobs",
		sub: map[string]*sk{"output": rsItem, "usage": rsUsage, "metadata": skAny, "error": {req: "code message"},
			"incomplete_details": {req: "reason"}}}
	rsEvent = typed(map[string]*sk{
		"response.created":                       {req: "type sequence_number response", sub: map[string]*sk{"response": rsResponse}},
		"response.in_progress":                   {req: "type sequence_number response", sub: map[string]*sk{"response": rsResponse}},
		"response.completed":                     {req: "type sequence_number response", sub: map[string]*sk{"response": rsResponse}},
		"response.incomplete":                    {req: "type sequence_number response", sub: map[string]*sk{"response": rsResponse}},
		"response.output_item.added":             {req: "type sequence_number output_index item", sub: map[string]*sk{"item": rsItem}},
		"response.output_item.done":              {req: "type sequence_number output_index item", sub: map[string]*sk{"item": rsItem}},
		"response.content_part.added":            {req: "type sequence_number item_id output_index content_index part", sub: map[string]*sk{"part": rsPart}},
		"response.content_part.done":             {req: "type sequence_number item_id output_index content_index part", sub: map[string]*sk{"part": rsPart}},
		"response.output_text.delta":             {req: "type sequence_number item_id output_index content_index delta logprobs", sub: map[string]*sk{"logprobs": skAny}},
		"response.output_text.done":              {req: "type sequence_number item_id output_index content_index text logprobs", sub: map[string]*sk{"logprobs": skAny}},
		"response.refusal.delta":                 {req: "type sequence_number item_id output_index content_index delta"},
		"response.refusal.done":                  {req: "type sequence_number item_id output_index content_index refusal"},
		"response.reasoning_summary_part.added":  {req: "type sequence_number item_id output_index summary_index part", sub: map[string]*sk{"part": rsSummary}},
		"response.reasoning_summary_part.done":   {req: "type sequence_number item_id output_index summary_index part", sub: map[string]*sk{"part": rsSummary}},
		"response.reasoning_summary_text.delta":  {req: "type sequence_number item_id output_index summary_index delta"},
		"response.reasoning_summary_text.done":   {req: "type sequence_number item_id output_index summary_index text"},
		"response.function_call_arguments.delta": {req: "type sequence_number item_id output_index delta"},
		"response.function_call_arguments.done":  {req: "type sequence_number item_id output_index arguments"},
	})
)

// strictCheckStream validates every event of a healthy client stream of
// dialect d and returns the violations.
func strictCheckStream(t testing.TB, d Dialect, out []byte) []string {
	t.Helper()
	var errs []string
	for i, ev := range readAllEvents(t, bytes.NewReader(out)) {
		if d == OpenAIChat && string(ev.Data) == "[DONE]" {
			continue
		}
		v := gjson.ParseBytes(ev.Data)
		path := sprintf("event %d (%s)", i, v.Get("type").Str)
		switch d {
		case OpenAIChat:
			skCCChunk.check(v, path, &errs)
		case AnthropicMessages:
			if ev.Event != v.Get("type").Str {
				errs = append(errs, sprintf("%s: event: %q does not match its type", path, ev.Event))
			}
			amEvent.check(v, path, &errs)
		case OpenAIResponses:
			if ev.Event != v.Get("type").Str {
				errs = append(errs, sprintf("%s: event: %q does not match its type", path, ev.Event))
			}
			rsEvent.check(v, path, &errs)
		}
	}
	return errs
}

// strictCheckBody validates a whole response body of dialect d.
func strictCheckBody(d Dialect, body []byte) []string {
	var errs []string
	v := gjson.ParseBytes(body)
	switch d {
	case OpenAIChat:
		ccCompletion.check(v, "body", &errs)
	case AnthropicMessages:
		amMessage.check(v, "body", &errs)
	case OpenAIResponses:
		rsResponse.check(v, "body", &errs)
	}
	return errs
}

// TestStrictSchemaTranslatedStreams: every healthy upstream stream of the
// fixture replay, translated to every other client dialect, validates
// against the client dialect's strict schema (required fields present, no
// field outside it but the named extensions); so do streams that report
// no usage and reasoning with reasoning_content off.
func TestStrictSchemaTranslatedStreams(t *testing.T) {
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages} {
		for _, fx := range streamFixtures(t, from) {
			for _, to := range allDialects {
				if to == from {
					continue
				}
				out, _, tr, err := collect(t, from, to, "client-model", bytes.NewReader(fx.body))
				if err != nil || tr.Truncated() || tr.UpstreamError() != nil {
					t.Fatalf("%s -> %s: err %v truncated %v", fx.name, to, err, tr.Truncated())
				}
				n++
				for _, e := range strictCheckStream(t, to, out) {
					t.Errorf("%s/%s -> %s: %s", dialectDir(from), fx.name, to, e)
				}
			}
		}
	}
	// an upstream that reports no usage at all, to every client dialect
	noUsage := ccChunk2(`{"role":"assistant","content":"hi"}`, "") + ccChunk2(`{}`, `"stop"`) + "data: [DONE]\n\n"
	noUsageAM := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, c := range []struct {
		from Dialect
		body string
	}{{OpenAIChat, noUsage}, {AnthropicMessages, noUsageAM}} {
		for _, to := range allDialects {
			if to == c.from {
				continue
			}
			out, _, _, err := collect(t, c.from, to, "m", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			n++
			for _, e := range strictCheckStream(t, to, out) {
				t.Errorf("no usage, %s -> %s: %s\n%s", c.from, to, e, out)
			}
			if to == AnthropicMessages && !bytes.Contains(out, []byte(`"usage":{"output_tokens":0}}`)) {
				t.Errorf("message_delta without usage.output_tokens: %s", out)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d translated streams checked", n)
	}
}

// ccChunk2 is one Chat chunk with the given delta and finish_reason JSON.
func ccChunk2(delta, finish string) string {
	if finish == "" {
		finish = "null"
	}
	return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + "}]}\n\n"
}

// TestStrictSchemaTranslatedBodies: the same for whole responses.
func TestStrictSchemaTranslatedBodies(t *testing.T) {
	n := 0
	for _, from := range []Dialect{OpenAIChat, AnthropicMessages} {
		for name, body := range wholeResponseFixtures(t, from) {
			for _, to := range allDialects {
				if to == from {
					continue
				}
				out, _, err := TranslateResponse(from, to, body, "client-model")
				if err != nil {
					t.Fatalf("%s -> %s: %v", name, to, err)
				}
				n++
				for _, e := range strictCheckBody(to, out) {
					t.Errorf("%s/%s -> %s: %s", dialectDir(from), name, to, e)
				}
			}
		}
	}
	noUsage := []byte(`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	for _, to := range []Dialect{AnthropicMessages, OpenAIResponses} {
		out, _, err := TranslateResponse(OpenAIChat, to, noUsage, "m")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range strictCheckBody(to, out) {
			t.Errorf("no usage -> %s: %s\n%s", to, e, out)
		}
	}
	if n < 10 {
		t.Errorf("only %d translated bodies checked", n)
	}
}

// TestStrictSchemaMatchesVendors: the schemas accept the vendors' own
// Anthropic streams and bodies in testdata/, so they are no stricter than
// the vendor.
func TestStrictSchemaMatchesVendors(t *testing.T) {
	for _, fx := range streamFixtures(t, AnthropicMessages) {
		for _, e := range strictCheckStream(t, AnthropicMessages, fx.body) {
			t.Errorf("vendor stream %s: %s", fx.name, e)
		}
	}
}
