package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// canonDigest renders a canonical request's content as lines, normalised
// for what a Responses round trip is allowed to change: the system prompt
// joined into one text, an image's detail "auto" when unset, an error tool
// result's "Error: " prefix, cache marks (OpenAI caches by itself),
// thinking that cannot reach OpenAI (anything not carrying
// sigPrefixOpenAI) and tool arguments compared as JSON.
func canonDigest(r *canonRequest) []string {
	var out []string
	var sys []string
	for _, p := range r.system {
		sys = append(sys, p.text)
	}
	out = append(out, "system: "+strings.Join(sys, "\n"))
	var part func(prefix string, p *canonPart)
	part = func(prefix string, p *canonPart) {
		switch p.kind {
		case partText:
			out = append(out, prefix+"text "+p.text)
		case partImage:
			out = append(out, prefix+"image "+p.url+p.mediaType+":"+p.data+" detail="+firstNonEmpty(p.detail, "auto"))
		case partDocument:
			out = append(out, prefix+"document "+p.url+p.mediaType+":"+p.data+" "+p.text)
		case partThinking:
			if strings.HasPrefix(p.signature, sigPrefixOpenAI) {
				out = append(out, prefix+"thinking "+p.text+" sig="+p.signature)
			}
		case partRedactedThinking:
			if strings.HasPrefix(p.data, sigPrefixOpenAI) {
				out = append(out, prefix+"redacted "+p.data)
			}
		case partToolCall:
			var v any
			_ = json.Unmarshal([]byte(compactArgs(p.args)), &v)
			a, _ := json.Marshal(v)
			out = append(out, prefix+"call "+p.id+" "+p.name+" "+string(a))
		case partToolResult:
			// Responses has no error flag: an error result's text starts
			// with "Error: "
			isErr := p.isError || len(p.content) > 0 && p.content[0].kind == partText && strings.HasPrefix(p.content[0].text, "Error: ")
			out = append(out, prefix+"result "+p.id+" error="+strconv.FormatBool(isErr))
			for j := range p.content {
				c := p.content[j]
				if j == 0 && c.kind == partText {
					c.text = strings.TrimPrefix(c.text, "Error: ")
				}
				part(prefix+"  ", &c)
			}
		}
	}
	for _, m := range r.messages {
		out = append(out, "["+m.role+"]")
		for i := range m.parts {
			part("  ", &m.parts[i])
		}
	}
	for _, t := range r.tools {
		out = append(out, "tool "+t.name+" "+t.description+" "+normSchema(t.schema)+" strict="+firstNonEmpty(t.strict, "false"))
	}
	out = append(out, "choice "+r.toolChoice+" "+r.toolChoiceName, "max "+itoa(int(max(r.maxTokens, rsMinOutputTokens*min(r.maxTokens, 1)))),
		"temperature "+r.temperature, "top_p "+r.topP, "format "+r.formatType+" "+r.formatName+" "+r.formatSchema)
	return out
}

// TestEncodeResponsesRequestRoundTrip: Chat and Anthropic requests (system,
// multi-turn, images, documents, tool definitions, calls and results,
// reasoning carried from an earlier Responses answer) become Responses
// bodies with the fields OpenAI documents, and decoding that body gives
// the same canonical content back.
func TestEncodeResponsesRequestRoundTrip(t *testing.T) {
	const enc = "gAAAAABenc=="
	chat := `{"model":"gpt-4o","stream":true,"max_completion_tokens":300,"temperature":0.2,"top_p":0.9,"stop":["END"],"user":"u-1",
	 "reasoning_effort":"high","parallel_tool_calls":false,
	 "response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}},
	 "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
	          {"type":"function","function":{"name":"strict_tool","parameters":{"type":"object","properties":{},"additionalProperties":false},"strict":true}}],
	 "tool_choice":{"type":"function","function":{"name":"get_weather"}},
	 "messages":[
	  {"role":"system","content":"Be brief."},
	  {"role":"user","content":[{"type":"text","text":"What is here?"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}},
	    {"type":"image_url","image_url":{"url":"data:image/png;base64,` + tinyPNG + `"}}]},
	  {"role":"assistant","content":"Let me check.","reasoning_content":"think","thinking_blocks":[{"type":"thinking","thinking":"think","signature":"` + sigPrefixOpenAI + enc + `"}],
	   "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
	  {"role":"tool","tool_call_id":"call_1","content":"18C"},
	  {"role":"user","content":"Thanks"}]}`
	anth := `{"model":"claude-x","max_tokens":1024,"stop_sequences":["END"],"top_k":5,"metadata":{"user_id":"u-2"},
	 "system":[{"type":"text","text":"You are helpful.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Second."}],
	 "thinking":{"type":"enabled","budget_tokens":4000},
	 "tools":[{"name":"lookup","description":"Look up","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}],
	 "tool_choice":{"type":"any"},
	 "messages":[
	  {"role":"user","content":[{"type":"text","text":"Find x"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + tinyPNG + `"}},
	    {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}]},
	  {"role":"assistant","content":[{"type":"thinking","thinking":"anthropic plan","signature":"EqQBanthropic"},
	    {"type":"redacted_thinking","data":"` + sigPrefixOpenAI + enc + `"},
	    {"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"q":"x"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"not found"}]},{"type":"text","text":"Try again"}]}]}`
	for _, c := range []struct {
		from   Dialect
		body   string
		fields map[string]string // gjson path -> raw JSON expected in the Responses body
		absent []string
	}{
		{OpenAIChat, chat, map[string]string{
			"model": `"up-model"`, "instructions": `"Be brief."`, "stream": `true`, "store": `false`,
			"max_output_tokens": `300`, "temperature": `0.2`, "top_p": `0.9`, "user": `"u-1"`,
			"reasoning": `{"effort":"high","summary":"auto"}`, "include": `["reasoning.encrypted_content"]`,
			"parallel_tool_calls": `false`, "tool_choice": `{"type":"function","name":"get_weather"}`,
			"tools.0":        `{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}`,
			"tools.1.strict": `true`,
			"text.format":    `{"type":"json_schema","name":"answer","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}`,
			"input.0":        `{"type":"message","role":"user","content":[{"type":"input_text","text":"What is here?"},{"type":"input_image","image_url":"https://example.com/a.png","detail":"low"},{"type":"input_image","image_url":"data:image/png;base64,` + tinyPNG + `","detail":"auto"}]}`,
			"input.1":        `{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"` + enc + `"}`,
			"input.2":        `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me check."}]}`,
			"input.3":        `{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`,
			"input.4":        `{"type":"function_call_output","call_id":"call_1","output":"18C"}`,
			"input.5":        `{"type":"message","role":"user","content":[{"type":"input_text","text":"Thanks"}]}`,
			"input.#":        `6`,
		}, []string{"stop", "messages", "max_tokens", "stream_options"}},
		{AnthropicMessages, anth, map[string]string{
			"instructions": `"You are helpful.\nSecond."`, "store": `false`, "max_output_tokens": `1024`, "user": `"u-2"`,
			"reasoning.summary": `"auto"`, "include": `["reasoning.encrypted_content"]`, "tool_choice": `"required"`,
			"tools.0": `{"type":"function","name":"lookup","description":"Look up","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"strict":false}`,
			"input.0": `{"type":"message","role":"user","content":[{"type":"input_text","text":"Find x"},{"type":"input_image","image_url":"data:image/png;base64,` + tinyPNG + `","detail":"auto"},{"type":"input_file","filename":"document","file_data":"data:application/pdf;base64,JVBERi0="}]}`,
			// the Anthropic-signed thinking cannot reach OpenAI; the OpenAI
			// reasoning carried as redacted_thinking can
			"input.1": `{"type":"reasoning","summary":[],"encrypted_content":"` + enc + `"}`,
			"input.2": `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Looking."}]}`,
			"input.3": `{"type":"function_call","call_id":"toolu_1","name":"lookup","arguments":"{\"q\":\"x\"}"}`,
			"input.4": `{"type":"function_call_output","call_id":"toolu_1","output":"Error: not found"}`,
			"input.5": `{"type":"message","role":"user","content":[{"type":"input_text","text":"Try again"}]}`,
			"input.#": `6`,
		}, []string{"stop", "top_k", "stream", "system", "thinking", "metadata"}},
	} {
		label := c.from.String() + " -> openai_responses"
		out, err := TranslateRequest(c.from, OpenAIResponses, []byte(c.body), "up-model")
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("%s: invalid JSON %s", label, out)
		}
		for path, want := range c.fields {
			if got := gjson.GetBytes(out, path).Raw; !jsonEqual(want, got) {
				t.Errorf("%s: %s = %s, want %s", label, path, got, want)
			}
		}
		for _, path := range c.absent {
			if gjson.GetBytes(out, path).Exists() {
				t.Errorf("%s: %s present: %s", label, path, gjson.GetBytes(out, path).Raw)
			}
		}
		if strings.Contains(string(out), "EqQBanthropic") || strings.Contains(string(out), "cache_control") {
			t.Errorf("%s: Anthropic signature or cache mark sent to OpenAI: %s", label, out)
		}
		// ValidateRequest in its own dialect accepts what we send
		if err := ValidateRequest(OpenAIResponses, out); err != nil {
			t.Errorf("%s: our body fails Responses validation: %v", label, err)
		}
		// the round trip keeps the content
		src, e1 := decodeRequest(c.from, []byte(c.body), true)
		back, e2 := decodeRequest(OpenAIResponses, out, true)
		if e1 != nil || e2 != nil {
			t.Fatalf("%s: decode %v %v", label, e1, e2)
		}
		src.model = "up-model"
		a, b := canonDigest(src), canonDigest(back)
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: round trip changed the content:\n%s\n---- back:\n%s", label, strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
		if src.effort != back.effort && !(src.effort == "max" && back.effort == "xhigh") {
			t.Errorf("%s: effort %q, back %q", label, src.effort, back.effort)
		}
	}
}

// TestEncodeResponsesRequestEdges: fields with no Responses counterpart
// and the values Responses refuses.
func TestEncodeResponsesRequestEdges(t *testing.T) {
	for _, c := range []struct {
		name, from, body string
		want             map[string]string // path -> raw ("" = absent)
	}{
		{"small max_tokens raised to 16", "chat", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"max_output_tokens": "16", "instructions": `""`}},
		{"no reasoning for gpt-4 models", "chat", `{"model":"gpt-4o","reasoning_effort":"low","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"reasoning": "", "include": ""}},
		{"reasoning off", "anthropic", `{"model":"o3","max_tokens":50,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"reasoning": "", "include": ""}},
		{"long user id dropped", "anthropic", `{"model":"m","max_tokens":50,"metadata":{"user_id":"` + strings.Repeat("u", 80) + `"},"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"user": ""}},
		{"json_object", "chat", `{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"json"}]}`, map[string]string{"text": `{"format":{"type":"json_object"}}`}},
		{"mid-conversation system", "chat", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"system","content":"b"},{"role":"user","content":"c"}]}`, map[string]string{"input.1": `{"type":"message","role":"system","content":[{"type":"input_text","text":"b"}]}`}},
		{"tool result with an image", "anthropic", `{"model":"m","max_tokens":50,"tools":[{"name":"shot","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"shot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"url","url":"https://example.com/s.png"}}]}]}]}`,
			map[string]string{"input.2.output": `[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"https://example.com/s.png","detail":"auto"}]`, "input.1.arguments": `"{}"`}},
	} {
		from := OpenAIChat
		if c.from == "anthropic" {
			from = AnthropicMessages
		}
		out, err := TranslateRequest(from, OpenAIResponses, []byte(c.body), "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for path, want := range c.want {
			got := gjson.GetBytes(out, path)
			if want == "" && got.Exists() || want != "" && !jsonEqual(want, got.Raw) {
				t.Errorf("%s: %s = %s, want %q\n%s", c.name, path, got.Raw, want, out)
			}
		}
	}
	// members Chat and Responses share go through as they came
	out, err := TranslateRequest(OpenAIChat, OpenAIResponses, []byte(`{"model":"m","metadata":{"k":"v"},"prompt_cache_key":"pk-1","prompt_cache_retention":"24h","service_tier":"flex","store":true,"messages":[{"role":"user","content":"hi"}]}`), "")
	if err != nil || gjson.GetBytes(out, "metadata").Raw != `{"k":"v"}` || gjson.GetBytes(out, "prompt_cache_key").Str != "pk-1" ||
		gjson.GetBytes(out, "prompt_cache_retention").Str != "24h" || gjson.GetBytes(out, "service_tier").Str != "flex" || gjson.GetBytes(out, "store").Raw != "false" {
		t.Errorf("shared members: %v %s", err, out)
	}
	out, _ = TranslateRequest(OpenAIChat, OpenAIResponses, []byte(`{"model":"m","metadata":null,"service_tier":null,"messages":[{"role":"user","content":"hi"}]}`), "")
	if gjson.GetBytes(out, "metadata").Exists() || gjson.GetBytes(out, "service_tier").Exists() {
		t.Errorf("nulls sent: %s", out)
	}
	// n > 1 cannot be expressed
	if _, err := TranslateRequest(OpenAIChat, OpenAIResponses, []byte(`{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`), ""); err == nil {
		t.Error("n=2 translated")
	}
}

// TestValidateResponsesPassthrough: a Responses client going to a
// Responses upstream is passed through, so ValidateRequest accepts what
// OpenAI accepts (built-in tools and their tool_choice, include, reasoning
// items with encrypted_content, item_reference, previous_response_id,
// hosted-tool items, file ids, prompt templates, every reasoning effort);
// translating the same bodies to Chat or Messages still refuses what has
// no counterpart.
func TestValidateResponsesPassthrough(t *testing.T) {
	for i, c := range []struct {
		body       string
		translated string // "" translates, else the refusal's message contains it
	}{
		{`{"model":"gpt-5","input":"hi","tools":[{"type":"web_search"},{"type":"web_search_preview","search_context_size":"low"},{"type":"file_search","vector_store_ids":["vs_1"]},{"type":"code_interpreter","container":{"type":"auto"}},{"type":"image_generation"},{"type":"mcp","server_label":"x","server_url":"https://x","require_approval":"never"},{"type":"local_shell"},{"type":"computer_use_preview","display_width":1024,"display_height":768,"environment":"browser"},{"type":"custom","name":"apply_patch","description":"d","format":{"type":"grammar","syntax":"lark","definition":"start: x"}}],"tool_choice":{"type":"web_search_preview"}}`, ""},
		{`{"model":"gpt-5","input":"hi","tools":[{"type":"custom","name":"x"}],"tool_choice":{"type":"custom","name":"x"}}`, ""},
		{`{"model":"gpt-5","input":"hi","tools":[{"type":"mcp","server_label":"x","server_url":"https://x"}],"tool_choice":{"type":"mcp","server_label":"x"}}`, ""},
		{`{"model":"gpt-5","input":[{"type":"item_reference","id":"msg_1"}]}`, "item_reference"},
		{`{"model":"gpt-5","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c1","output":"x"}]}`, "previous_response_id"},
		{`{"model":"gpt-5","conversation":"conv_1","input":"hi"}`, "conversation"},
		{`{"model":"gpt-5","include":["reasoning.encrypted_content","file_search_call.results","message.output_text.logprobs"],"store":false,"input":[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"},{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"x","annotations":[]}]}]}`, ""},
		{`{"model":"gpt-5","input":[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}},{"type":"local_shell_call","id":"ls_1","call_id":"c","action":{"type":"exec","command":["ls"]},"status":"completed"},{"type":"local_shell_call_output","id":"lso","output":"x"},{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"x"},{"type":"custom_tool_call_output","call_id":"c2","output":"ok"},{"type":"computer_call_output","call_id":"c3","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,AAAA"}},{"type":"mcp_approval_response","approval_request_id":"a","approve":true}]}`, ""},
		{`{"model":"gpt-5","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "file"},
		{`{"model":"gpt-5","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_2"}]}]}`, "file"},
		{`{"model":"gpt-5","instructions":[{"role":"developer","content":"x"}],"input":"hi"}`, "instructions"},
		{`{"model":"gpt-5","input":"hi","prompt":{"id":"pmpt_1","version":"2","variables":{"a":"b"}},"reasoning":{"effort":"xhigh","summary":"detailed"},"text":{"verbosity":"low","format":{"type":"json_schema","name":"x","schema":{"type":"object"}}},"safety_identifier":"s","prompt_cache_retention":"24h","stream_options":{"include_obfuscation":false},"service_tier":"flex","background":true,"max_tool_calls":3,"top_logprobs":2,"truncation":"auto","metadata":{"a":"b"}}`, ""},
		{`{"model":"gpt-5","reasoning":{"effort":"none"},"input":"hi"}`, ""},
		{`{"model":"gpt-5","reasoning":{"effort":"minimal"},"input":"hi"}`, ""},
	} {
		if err := ValidateRequest(OpenAIResponses, []byte(c.body)); err != nil {
			t.Errorf("%d: passthrough refused: %v", i, err)
		}
		// the parsed request agrees, and encodes for a Responses upstream as
		// the body with the model rewritten
		if pr, err := ParseRequest(OpenAIResponses, []byte(c.body)); err != nil {
			t.Errorf("%d: ParseRequest refused: %v", i, err)
		} else if out, err := pr.Encode(OpenAIResponses, "up-model"); err != nil || string(out) != strings.Replace(c.body, `"gpt-5"`, `"up-model"`, 1) {
			t.Errorf("%d: Encode for a Responses upstream: %v %s", i, err, out)
		}
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			_, err := TranslateRequest(OpenAIResponses, to, []byte(c.body), "")
			switch {
			case c.translated == "" && err != nil:
				t.Errorf("%d -> %s: %v", i, to, err)
			case c.translated != "" && (err == nil || !strings.Contains(err.Error(), c.translated)):
				t.Errorf("%d -> %s: got %v, want a refusal naming %s", i, to, err, c.translated)
			}
		}
	}
}

// TestOpenAIReasoningNeverReachesAnthropic: thinking that carries OpenAI
// encrypted reasoning (as the gateway hands it to Chat and Anthropic
// clients) is left out of requests translated for Anthropic, which would
// refuse the signature, and kept for Responses.
func TestOpenAIReasoningNeverReachesAnthropic(t *testing.T) {
	sig := sigPrefixOpenAI + "gAAAAxyz"
	chat := `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","thinking_blocks":[{"type":"thinking","thinking":"t","signature":"` + sig + `"},{"type":"redacted_thinking","data":"` + sig + `"}]},{"role":"user","content":"again"}]}`
	out, err := TranslateRequest(OpenAIChat, AnthropicMessages, []byte(chat), "")
	if err != nil || strings.Contains(string(out), "gAAAAxyz") || strings.Contains(string(out), `"thinking"`) {
		t.Errorf("Chat -> Anthropic: %v %s", err, out)
	}
	anth := `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"` + sig + `"},{"type":"text","text":"a"}]},{"role":"user","content":"again"}]}`
	rs := `{"model":"m","input":[{"role":"user","content":"q"},{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"gAAAAxyz"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},{"role":"user","content":"again"}]}`
	out, err = TranslateRequest(OpenAIResponses, AnthropicMessages, []byte(rs), "")
	if err != nil || strings.Contains(string(out), "gAAAAxyz") || strings.Contains(string(out), `"thinking"`) {
		t.Errorf("Responses -> Anthropic: %v %s", err, out)
	}
	out, err = TranslateRequest(AnthropicMessages, OpenAIResponses, []byte(anth), "")
	if err != nil || gjson.GetBytes(out, "input.1.encrypted_content").Str != "gAAAAxyz" || gjson.GetBytes(out, "input.1.summary.0.text").Str != "t" {
		t.Errorf("Anthropic -> Responses: %v %s", err, out)
	}
	// a genuine Anthropic signature still goes to Anthropic
	genuine := strings.Replace(anth, sig, "EqQBsig", 1)
	out, err = TranslateRequest(AnthropicMessages, OpenAIChat, []byte(genuine), "")
	if err != nil || strings.Contains(string(out), "EqQBsig") {
		t.Errorf("Anthropic -> Chat: %v %s", err, out)
	}
	c, _ := decodeRequest(AnthropicMessages, []byte(genuine), true)
	if p := &c.messages[1].parts[0]; !anthropicReplayable(p) {
		t.Errorf("Anthropic-signed thinking not replayable: %+v", p)
	}
	c, _ = decodeRequest(AnthropicMessages, []byte(anth), true)
	if p := &c.messages[1].parts[0]; anthropicReplayable(p) {
		t.Errorf("OpenAI reasoning replayable to Anthropic: %+v", p)
	}
}

// TestSanitizeDropsOpenAIReasoning: an Anthropic client on an Anthropic key
// (passthrough) that echoes the thinking a Responses upstream gave it does
// not send OpenAI reasoning to Anthropic: those blocks go (and the
// top-level thinking when the last tool-call turn is left unsigned), an
// Anthropic-signed block stays, and a body without the marker is the same
// slice.
func TestSanitizeDropsOpenAIReasoning(t *testing.T) {
	sig := sigPrefixOpenAI + "gAAAAxyz"
	body := []byte(`{"model":"claude-x","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":2000},"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[` +
		`{"role":"user","content":"q"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"EqQBgenuine"},{"type":"text","text":"one"}]},` +
		`{"role":"user","content":"q2"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"` + sig + `"},{"type":"redacted_thinking","data":"` + sig + `"},{"type":"tool_use","id":"tu1","name":"f","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"ok"}]}]}`)
	out := SanitizeAnthropicRequest(body)
	s := string(out)
	if strings.Contains(s, "gAAAAxyz") || !strings.Contains(s, "EqQBgenuine") || gjson.Get(s, "thinking").Exists() || !gjson.Valid(s) {
		t.Errorf("sanitized: %s", s)
	}
	if got := gjson.Get(s, "messages.3.content.#").Int(); got != 1 || gjson.Get(s, "messages.3.content.0.type").Str != "tool_use" {
		t.Errorf("last assistant turn: %s", gjson.Get(s, "messages.3").Raw)
	}
	if again := SanitizeAnthropicRequest(out); !bytes.Equal(again, out) {
		t.Errorf("not idempotent")
	}
	clean := bytes.ReplaceAll(body, []byte(sig), []byte("EqQBother"))
	if got := SanitizeAnthropicRequest(clean); &got[0] != &clean[0] || !bytes.Equal(got, clean) {
		t.Errorf("a body without OpenAI reasoning changed")
	}
	// the same through TranslateRequest's same-dialect path
	tr, err := TranslateRequest(AnthropicMessages, AnthropicMessages, body, "claude-y")
	if err != nil || strings.Contains(string(tr), "gAAAAxyz") || gjson.GetBytes(tr, "model").Str != "claude-y" {
		t.Errorf("passthrough: %v %s", err, tr)
	}
}
