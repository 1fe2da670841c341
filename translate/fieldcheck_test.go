package translate

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// fieldCase is one bad request: extra is spliced into a valid base body of
// the client dialect. translated is the message TranslateRequest must give
// (to every other upstream dialect); passthrough is the message
// ValidateRequest must give, "" when a same-dialect upstream judges it.
type fieldCase struct {
	extra       string
	param, code string // OpenAI param and code (Param only for Anthropic)
	translated  string
	passthrough string
}

// same marks a case whose passthrough message equals the translated one.
const same = "="

var fieldBases = map[Dialect]string{
	OpenAIChat:        `{"model":"m","messages":[{"role":"user","content":"hi"}]`,
	AnthropicMessages: `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]`,
	OpenAIResponses:   `{"model":"m","input":"hi"`,
}

// withField builds base + extra, replacing a field of the base of the same
// name (messages, input, max_tokens) when extra sets it.
func withField(d Dialect, extra string) string {
	base := fieldBases[d]
	for _, f := range []string{"messages", "input", "max_tokens"} {
		if r := gjson.Get(base+"}", f); r.Exists() && strings.HasPrefix(extra, `"`+f+`":`) {
			base = base[:r.Index-len(`,"`+f+`":`)] + base[r.Index+len(r.Raw):]
		}
	}
	return base + "," + extra + "}"
}

var chatFieldCases = []fieldCase{
	{`"max_tokens":"zzz"`, "max_tokens", "invalid_type", "Invalid type for 'max_tokens': expected an integer, but got a string instead.", same},
	{`"max_tokens":1e308`, "max_tokens", "invalid_type", "Invalid type for 'max_tokens': expected an integer, but got a decimal number instead.", same},
	{`"max_tokens":1024.0`, "max_tokens", "invalid_type", "Invalid type for 'max_tokens': expected an integer, but got a decimal number instead.", same},
	{`"max_completion_tokens":4294967296`, "max_completion_tokens", "integer_above_max_value", "Invalid 'max_completion_tokens': integer above maximum value. Expected a value <= 2147483647, but got 4294967296 instead.", same},
	{`"max_completion_tokens":99999999999999999999999`, "max_completion_tokens", "integer_above_max_value", "Invalid 'max_completion_tokens': integer above maximum value. Expected a value <= 2147483647, but got 99999999999999999999999 instead.", same},
	{`"max_tokens":-1`, "max_tokens", "integer_below_min_value", "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got -1 instead.",
		"Invalid 'max_tokens': integer below minimum value. Expected a value >= 0, but got -1 instead."},
	{`"max_tokens":0`, "max_tokens", "integer_below_min_value", "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.", ""},
	{`"temperature":"hot"`, "temperature", "invalid_type", "Invalid type for 'temperature': expected a number, but got a string instead.", same},
	{`"temperature":3`, "temperature", "decimal_above_max_value", "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.", ""},
	{`"temperature":-0.5`, "temperature", "decimal_below_min_value", "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -0.5 instead.", same},
	{`"temperature":1e400`, "temperature", "decimal_above_max_value", "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 1e400 instead.", same},
	{`"top_p":1.5`, "top_p", "decimal_above_max_value", "Invalid 'top_p': decimal above maximum value. Expected a value <= 1, but got 1.5 instead.", same},
	{`"top_k":2.5`, "top_k", "invalid_type", "Invalid type for 'top_k': expected an integer, but got a decimal number instead.", ""},
	{`"n":0`, "n", "integer_below_min_value", "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead.", same},
	{`"n":200`, "n", "integer_above_max_value", "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 200 instead.", ""},
	{`"n":"2"`, "n", "invalid_type", "Invalid type for 'n': expected an integer, but got a string instead.", same},
	{`"stop":5`, "stop", "invalid_type", "Invalid type for 'stop': expected one of a string or array, but got an integer instead.", same},
	{`"stop":["a",1]`, "stop[1]", "invalid_type", "Invalid type for 'stop[1]': expected a string, but got an integer instead.", same},
	{`"stop":["a","b","c","d","e"]`, "stop", "array_above_max_length", "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length 5 instead.", ""},
	{`"stream":"yes"`, "stream", "invalid_type", "Invalid type for 'stream': expected a boolean, but got a string instead.", same},
	{`"tools":"x"`, "tools", "invalid_type", "Invalid type for 'tools': expected an array, but got a string instead.", same},
	{`"tools":[5]`, "tools[0]", "invalid_type", "Invalid type for 'tools[0]': expected an object, but got an integer instead.", same},
	{`"tools":[{"type":"function"}]`, "tools[0].function", "missing_required_parameter", "Missing required parameter: 'tools[0].function'.", same},
	{`"tools":[{"type":"function","function":{"name":5}}]`, "tools[0].function.name", "invalid_type", "Invalid type for 'tools[0].function.name': expected a string, but got an integer instead.", same},
	{`"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]`, "tools[0].function.parameters", "invalid_type", "Invalid type for 'tools[0].function.parameters': expected an object, but got a string instead.", same},
	{`"tools":[{"type":"function","function":{"name":"f","strict":"yes"}}]`, "tools[0].function.strict", "invalid_type", "Invalid type for 'tools[0].function.strict': expected a boolean, but got a string instead.", same},
	{`"tool_choice":"maybe"`, "tool_choice", "invalid_value", "Invalid value: 'maybe'. Supported values are: 'none', 'auto', and 'required'.", ""},
	{`"tool_choice":5`, "tool_choice", "invalid_type", "Invalid type for 'tool_choice': expected one of a string or object, but got an integer instead.", same},
	{`"tool_choice":{"type":"function","function":{"name":7}}`, "tool_choice.function.name", "invalid_type", "Invalid type for 'tool_choice.function.name': expected a string, but got an integer instead.", same},
	{`"parallel_tool_calls":"yes"`, "parallel_tool_calls", "invalid_type", "Invalid type for 'parallel_tool_calls': expected a boolean, but got a string instead.", same},
	{`"messages":[5]`, "messages[0]", "invalid_type", "Invalid type for 'messages[0]': expected an object, but got an integer instead.", same},
	{`"messages":[{"content":"x"}]`, "messages[0].role", "missing_required_parameter", "Missing required parameter: 'messages[0].role'.", same},
	{`"messages":[{"role":5,"content":"x"}]`, "messages[0].role", "invalid_type", "Invalid type for 'messages[0].role': expected a string, but got an integer instead.", same},
	{`"messages":[{"role":"user"}]`, "messages[0].content", "missing_required_parameter", "Missing required parameter: 'messages[0].content'.", ""},
	{`"messages":[{"role":"user","content":5}]`, "messages[0].content", "invalid_type", "Invalid type for 'messages[0].content': expected one of a string or array, but got an integer instead.", same},
	{`"messages":[{"role":"user","content":[{"type":"text","text":5}]}]`, "messages[0].content[0].text", "invalid_type", "Invalid type for 'messages[0].content[0].text': expected a string, but got an integer instead.", same},
	{`"messages":[{"role":"user","content":[{"text":"x"}]}]`, "messages[0].content[0].type", "missing_required_parameter", "Missing required parameter: 'messages[0].content[0].type'.", same},
	{`"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"ultra"}}]}]`, "messages[0].content[0].image_url.detail", "invalid_value", "Invalid value: 'ultra'. Supported values are: 'auto', 'low', and 'high'.", ""},
	{`"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":5}}]}]`, "messages[0].content[0].image_url.url", "invalid_type", "Invalid type for 'messages[0].content[0].image_url.url': expected a string, but got an integer instead.", same},
	{`"messages":[{"role":"system","content":[{"type":"text","text":false}]}]`, "messages[0].content[0].text", "invalid_type", "Invalid type for 'messages[0].content[0].text': expected a string, but got a boolean instead.", same},
	{`"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]`, "messages[1].tool_calls[0].function.arguments", "invalid_type", "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead.", same},
	{`"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":7,"type":"function","function":{"name":"f","arguments":"{}"}}]}]`, "messages[1].tool_calls[0].id", "invalid_type", "Invalid type for 'messages[1].tool_calls[0].id': expected a string, but got an integer instead.", same},
	{`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":5}]`, "messages[1].content", "invalid_type", "Invalid type for 'messages[1].content': expected one of a string or array, but got an integer instead.", same},
	{`"messages":[{"role":"tool","tool_call_id":5,"content":"r"}]`, "messages[0].tool_call_id", "invalid_type", "Invalid type for 'messages[0].tool_call_id': expected a string, but got an integer instead.", same},
	{`"messages":[{"role":"wizard","content":"x"}]`, "messages[0].role", "invalid_value", "Invalid value: 'wizard'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", ""},
	{`"reasoning_effort":"extreme"`, "reasoning_effort", "invalid_value", "Invalid value: 'extreme'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'.", ""},
	{`"reasoning_effort":3`, "reasoning_effort", "invalid_type", "Invalid type for 'reasoning_effort': expected a string, but got an integer instead.", same},
	{`"response_format":{"type":"xml"}`, "response_format.type", "invalid_value", "Invalid value: 'xml'. Supported values are: 'text', 'json_object', and 'json_schema'.", ""},
	{`"response_format":"json"`, "response_format", "invalid_type", "Invalid type for 'response_format': expected an object, but got a string instead.", same},
	{`"response_format":{"type":"json_schema"}`, "response_format.json_schema", "missing_required_parameter", "Missing required parameter: 'response_format.json_schema'.", ""},
	{`"seed":1.5`, "seed", "invalid_type", "Invalid type for 'seed': expected an integer, but got a decimal number instead.", same},
	{`"presence_penalty":3`, "presence_penalty", "decimal_above_max_value", "Invalid 'presence_penalty': decimal above maximum value. Expected a value <= 2, but got 3 instead.", ""},
	{`"frequency_penalty":"x"`, "frequency_penalty", "invalid_type", "Invalid type for 'frequency_penalty': expected a number, but got a string instead.", same},
	{`"top_logprobs":30`, "top_logprobs", "integer_above_max_value", "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 30 instead.", ""},
	{`"metadata":{"a":1}`, "metadata.a", "invalid_type", "Invalid type for 'metadata.a': expected a string, but got an integer instead.", same},
	{`"metadata":[]`, "metadata", "invalid_type", "Invalid type for 'metadata': expected an object, but got an array instead.", same},
	{`"metadata":{"a":"` + strings.Repeat("v", 513) + `"}`, "metadata.a", "string_above_max_length", "Invalid 'metadata.a': string too long. Expected a string with maximum length 512, but got a string with length 513 instead.", ""},
	{`"user":5`, "user", "invalid_type", "Invalid type for 'user': expected a string, but got an integer instead.", same},
	{`"stream_options":{"include_usage":"yes"}`, "stream_options.include_usage", "invalid_type", "Invalid type for 'stream_options.include_usage': expected a boolean, but got a string instead.", same},
}

var anthropicFieldCases = []fieldCase{
	{`"max_tokens":"zzz"`, "max_tokens", "", "max_tokens: Input should be a valid integer", same},
	{`"max_tokens":1e308`, "max_tokens", "", "max_tokens: Input should be a valid integer", same},
	{`"max_tokens":1.5`, "max_tokens", "", "max_tokens: Input should be a valid integer, got a number with a fractional part", same},
	{`"max_tokens":-1`, "max_tokens", "", "max_tokens: Input should be greater than or equal to 0", same},
	{`"max_tokens":3000000000`, "max_tokens", "", "max_tokens: Input should be less than or equal to 2147483647", same},
	{`"max_tokens":0`, "max_tokens", "", "max_tokens: 0 (warming the prompt cache without generating) cannot be translated to another API dialect", ""},
	{`"temperature":1.5`, "temperature", "", "temperature: Input should be less than or equal to 1", ""},
	{`"temperature":"x"`, "temperature", "", "temperature: Input should be a valid number", same},
	{`"temperature":-1`, "temperature", "", "temperature: Input should be greater than or equal to 0", same},
	{`"top_p":2`, "top_p", "", "top_p: Input should be less than or equal to 1", same},
	{`"top_k":1.5`, "top_k", "", "top_k: Input should be a valid integer, got a number with a fractional part", same},
	{`"top_k":-1`, "top_k", "", "top_k: Input should be greater than or equal to 0", same},
	{`"stop_sequences":"END"`, "stop_sequences", "", "stop_sequences: Input should be a valid list", same},
	{`"stop_sequences":[1]`, "stop_sequences[0]", "", "stop_sequences.0: Input should be a valid string", same},
	{`"stream":"yes"`, "stream", "", "stream: Input should be a valid boolean", same},
	{`"system":[{"type":"text","text":5}]`, "system[0].text", "", "system.0.text: Input should be a valid string", same},
	{`"system":[{"type":"text","text":"s","cache_control":"ephemeral"}]`, "system[0].cache_control", "", "system.0.cache_control: Input should be a valid dictionary", same},
	{`"messages":[{"role":"wizard","content":"x"}]`, "messages[0].role", "", "messages.0.role: Input should be 'user' or 'assistant'", ""},
	{`"messages":[{"content":"x"}]`, "messages[0].role", "", "messages.0.role: Field required", same},
	{`"messages":[{"role":"user"}]`, "messages[0].content", "", "messages.0.content: Field required", same},
	{`"messages":[{"role":"user","content":[{"type":"text","text":5}]}]`, "messages[0].content[0].text", "", "messages.0.content.0.text: Input should be a valid string", same},
	{`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"x"}]}]`, "messages[1].content[0].input", "", "messages.1.content.0.input: Input should be a valid dictionary", same},
	{`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f"}]}]`, "messages[1].content[0].input", "", "messages.1.content.0.input: Field required", ""},
	{`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":5,"name":"f","input":{}}]}]`, "messages[1].content[0].id", "", "messages.1.content.0.id: Input should be a valid string", same},
	{`"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}]`, "messages[0].content[0].is_error", "", "messages.0.content.0.is_error: Input should be a valid boolean", same},
	{`"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"Zm9v"}}]}]`, "messages[0].content[0].source.media_type", "", "messages.0.content.0.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", ""},
	{`"messages":[{"role":"user","content":[{"type":"image","source":"x"}]}]`, "messages[0].content[0].source", "", "messages.0.content.0.source: Input should be a valid dictionary", same},
	{`"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t"}]}]`, "messages[0].content[0].signature", "", "messages.0.content.0.signature: Field required", ""},
	{`"tools":[{"name":"f","input_schema":"x"}]`, "tools[0].input_schema", "", "tools.0.input_schema: Input should be a valid dictionary", same},
	{`"tools":[{"name":"f"}]`, "tools[0].input_schema", "", "tools.0.input_schema: Field required", ""},
	{`"tools":[{"name":5,"input_schema":{}}]`, "tools[0].name", "", "tools.0.name: Input should be a valid string", same},
	{`"tool_choice":{"type":"maybe"}`, "tool_choice.type", "", "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", ""},
	{`"tool_choice":"auto"`, "tool_choice", "", "tool_choice: Input should be a valid dictionary", same},
	{`"tool_choice":{"type":"auto","disable_parallel_tool_use":1}`, "tool_choice.disable_parallel_tool_use", "", "tool_choice.disable_parallel_tool_use: Input should be a valid boolean", same},
	{`"thinking":{"type":"enabled","budget_tokens":"lots"}`, "thinking.budget_tokens", "", "thinking.budget_tokens: Input should be a valid integer", same},
	{`"thinking":{"type":"enabled","budget_tokens":500}`, "thinking.budget_tokens", "", "thinking.budget_tokens: Input should be greater than or equal to 1024", ""},
	{`"thinking":{"type":"enabled"}`, "thinking.budget_tokens", "", "thinking.budget_tokens: Field required", ""},
	{`"thinking":{"type":"on"}`, "thinking.type", "", "thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'", ""},
	{`"thinking":true`, "thinking", "", "thinking: Input should be a valid dictionary", same},
	{`"metadata":{"user_id":5}`, "metadata.user_id", "", "metadata.user_id: Input should be a valid string", same},
	{`"metadata":{"x":"y"}`, "metadata.x", "", "metadata.x: Extra inputs are not permitted", ""},
	{`"output_config":{"effort":"extreme"}`, "output_config.effort", "", "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'", ""},
	{`"output_config":{"format":{"type":"json_schema","schema":"x"}}`, "output_config.format.schema", "", "output_config.format.schema: Input should be a valid dictionary", same},
}

var responsesFieldCases = []fieldCase{
	{`"max_output_tokens":"zzz"`, "max_output_tokens", "invalid_type", "Invalid type for 'max_output_tokens': expected an integer, but got a string instead.", same},
	{`"max_output_tokens":10`, "max_output_tokens", "integer_below_min_value", "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 10 instead.", ""},
	{`"max_output_tokens":1e308`, "max_output_tokens", "invalid_type", "Invalid type for 'max_output_tokens': expected an integer, but got a decimal number instead.", same},
	{`"max_output_tokens":-5`, "max_output_tokens", "integer_below_min_value", "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got -5 instead.",
		"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 0, but got -5 instead."},
	{`"temperature":2.5`, "temperature", "decimal_above_max_value", "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead.", ""},
	{`"instructions":5`, "instructions", "invalid_type", "Invalid type for 'instructions': expected a string, but got an integer instead.", same},
	{`"input":["x"]`, "input[0]", "invalid_type", "Invalid type for 'input[0]': expected an object, but got a string instead.", same},
	{`"input":[{"role":"user","content":5}]`, "input[0].content", "invalid_type", "Invalid type for 'input[0].content': expected one of a string or array, but got an integer instead.", same},
	{`"input":[{"role":"user","content":[{"type":"input_text","text":5}]}]`, "input[0].content[0].text", "invalid_type", "Invalid type for 'input[0].content[0].text': expected a string, but got an integer instead.", same},
	{`"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/y.png","detail":"ultra"}]}]`, "input[0].content[0].detail", "invalid_value", "Invalid value: 'ultra'. Supported values are: 'auto', 'low', and 'high'.", ""},
	{`"input":[{"role":"wizard","content":"x"}]`, "input[0].role", "invalid_value", "Invalid value: 'wizard'. Supported values are: 'user', 'assistant', 'system', and 'developer'.", ""},
	{`"input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]`, "input[0].arguments", "invalid_type", "Invalid type for 'input[0].arguments': expected a string, but got an object instead.", same},
	{`"input":[{"type":"function_call","call_id":"c","arguments":"{}"}]`, "input[0].name", "missing_required_parameter", "Missing required parameter: 'input[0].name'.", same},
	{`"input":[{"type":"function_call","call_id":5,"name":"f","arguments":"{}"}]`, "input[0].call_id", "invalid_type", "Invalid type for 'input[0].call_id': expected a string, but got an integer instead.", same},
	{`"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":5}]`, "input[1].output", "invalid_type", "Invalid type for 'input[1].output': expected one of a string or array, but got an integer instead.", same},
	{`"input":[{"type":"reasoning","summary":"x"}]`, "input[0].summary", "invalid_type", "Invalid type for 'input[0].summary': expected an array, but got a string instead.", same},
	{`"reasoning":{"effort":"extreme"}`, "reasoning.effort", "invalid_value", "Invalid value: 'extreme'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'.", ""},
	{`"reasoning":"high"`, "reasoning", "invalid_type", "Invalid type for 'reasoning': expected an object, but got a string instead.", same},
	{`"text":{"format":{"type":"xml"}}`, "text.format.type", "invalid_value", "Invalid value: 'xml'. Supported values are: 'text', 'json_schema', and 'json_object'.", ""},
	{`"text":{"format":{"type":"json_schema","name":"o","schema":"x"}}`, "text.format.schema", "invalid_type", "Invalid type for 'text.format.schema': expected an object, but got a string instead.", same},
	{`"tools":[{"type":"function","name":5}]`, "tools[0].name", "invalid_type", "Invalid type for 'tools[0].name': expected a string, but got an integer instead.", same},
	{`"tools":[{"name":"f"}]`, "tools[0].type", "missing_required_parameter", "Missing required parameter: 'tools[0].type'.", same},
	{`"tool_choice":"maybe"`, "tool_choice", "invalid_value", "Invalid value: 'maybe'. Supported values are: 'none', 'auto', and 'required'.", ""},
	{`"tool_choice":{"type":"allowed_tools","mode":"sometimes","tools":[]}`, "tool_choice.mode", "invalid_value", "Invalid value: 'sometimes'. Supported values are: 'auto' and 'required'.", ""},
	{`"store":"no"`, "store", "invalid_type", "Invalid type for 'store': expected a boolean, but got a string instead.", same},
	{`"include":[1]`, "include[0]", "invalid_type", "Invalid type for 'include[0]': expected a string, but got an integer instead.", same},
	{`"top_logprobs":21`, "top_logprobs", "integer_above_max_value", "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 21 instead.", ""},
	{`"metadata":{"k":true}`, "metadata.k", "invalid_type", "Invalid type for 'metadata.k': expected a string, but got a boolean instead.", same},
	{`"previous_response_id":5`, "previous_response_id", "invalid_type", "Invalid type for 'previous_response_id': expected a string, but got an integer instead.", same},
}

func TestFieldChecks(t *testing.T) {
	for d, cases := range map[Dialect][]fieldCase{OpenAIChat: chatFieldCases, AnthropicMessages: anthropicFieldCases, OpenAIResponses: responsesFieldCases} {
		for _, c := range cases {
			body := []byte(withField(d, c.extra))
			if !gjson.ValidBytes(body) {
				t.Fatalf("%s: test body is not JSON: %s", d, body)
			}
			for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
				if to == d {
					continue
				}
				_, err := TranslateRequest(d, to, body, "")
				checkFieldError(t, d, d.String()+"→"+to.String()+" "+c.extra, err, c, c.translated)
			}
			err := ValidateRequest(d, body)
			switch c.passthrough {
			case "":
				if err != nil {
					t.Errorf("%s passthrough %s: %v, want accepted (the upstream judges it)", d, c.extra, err)
				}
			case same:
				checkFieldError(t, d, d.String()+" passthrough "+c.extra, err, c, c.translated)
			default:
				checkFieldError(t, d, d.String()+" passthrough "+c.extra, err, c, c.passthrough)
			}
		}
	}
}

func checkFieldError(t *testing.T, d Dialect, label string, err error, c fieldCase, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %v, want %q", label, err, msg)
		return
	}
	if e.Class != ErrInvalidRequest || e.Message != msg || e.Param != c.param {
		t.Errorf("%s:\n got %v %q param %q\nwant %q param %q", label, e.Class, e.Message, e.Param, msg, c.param)
		return
	}
	body := gjson.ParseBytes(e.Body(d))
	if d == AnthropicMessages {
		if body.Get("type").Str != "error" || body.Get("error.type").Str != "invalid_request_error" || body.Get("error.message").Str != msg {
			t.Errorf("%s: body %s", label, body.Raw)
		}
		return
	}
	if e.untranslatable {
		return // the gateway's own "cannot be translated": no vendor code
	}
	if body.Get("error.type").Str != "invalid_request_error" || body.Get("error.message").Str != msg ||
		body.Get("error.param").Str != c.param || body.Get("error.code").Str != c.code {
		t.Errorf("%s: body %s, want param %q code %q", label, body.Raw, c.param, c.code)
	}
}

// TestFieldValuesTranslated: values that pass the checks reach the
// upstream as sent, never coerced.
func TestFieldValuesTranslated(t *testing.T) {
	r := mustTranslate(t, OpenAIResponses, AnthropicMessages, `{"model":"m","input":"hi","max_output_tokens":2147483647,"temperature":0.7,"top_p":1}`, "claude-x")
	wantGet(t, r, "max_tokens", "2147483647")
	wantGet(t, r, "temperature", "0.7")
	wantGet(t, r, "top_p", "1") // with temperature: kept for a model that takes both (TestTemperatureAndTopPToAnthropic)
	r = mustTranslate(t, AnthropicMessages, OpenAIChat, `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"stop_sequences":["a","b"],"top_k":5,"metadata":{"user_id":"u"}}`, "gpt-x")
	wantGet(t, r, "max_completion_tokens", "16")
	wantGet(t, r, "stop", `["a","b"]`)
	wantGet(t, r, "user", `"u"`)
	// top_k from an OpenAI-compatible client: -1 and 0 mean "off"
	r = mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_k":-1}`, "claude-x")
	wantGet(t, r, "top_k", "")
	r = mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_k":40}`, "claude-x")
	wantGet(t, r, "top_k", "40")
	// null is absent, for every optional field
	r = mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":null,"temperature":null,"stop":null,"tools":null,"tool_choice":null,"n":null,"seed":null,"metadata":null,"response_format":null,"reasoning_effort":null}`, "claude-x")
	wantGet(t, r, "max_tokens", "8192")
	wantGet(t, r, "temperature", "")
	r = mustTranslate(t, OpenAIChat, AnthropicMessages, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a","tool_calls":null,"refusal":null}]}`, "claude-x")
	wantGet(t, r, "messages.1.content", `[{"type":"text","text":"a"}]`)
	r = mustTranslate(t, AnthropicMessages, OpenAIChat, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"tools":null,"system":null,"thinking":null,"stop_sequences":null}`, "gpt-x")
	wantGet(t, r, "tools", "")
	r = mustTranslate(t, OpenAIResponses, OpenAIChat, `{"model":"m","input":"hi","tools":null,"reasoning":{"effort":"low","summary":null},"previous_response_id":null,"instructions":""}`, "gpt-x")
	wantGet(t, r, "reasoning_effort", `"low"`)
}

// TestClientStringsClipped: a client string quoted in an error message is
// cut to 256 bytes.
func TestClientStringsClipped(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	for _, c := range []struct {
		d    Dialect
		body string
	}{
		{OpenAIChat, `{"model":"m","messages":[{"role":"` + long + `","content":"x"}]}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"` + long + `"}`},
		{AnthropicMessages, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"` + long + `"}]}]}`},
		{OpenAIResponses, `{"model":"m","input":"x","reasoning":{"effort":"` + long + `"}}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":` + strings.Repeat("9", 1000) + `}`},
		{OpenAIChat, `{"model":"m","messages":[{"role":"tool","tool_call_id":"` + long + `","content":"r"}]}`},
	} {
		to := OpenAIChat
		if c.d == OpenAIChat {
			to = AnthropicMessages
		}
		_, err := TranslateRequest(c.d, to, []byte(c.body), "")
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v", c.body[:60], err)
		}
		if len(e.Message) > 256+200 || !strings.Contains(e.Message, "...") {
			t.Errorf("message of %d bytes: %.120s", len(e.Message), e.Message)
		}
		if !utf8Valid(e.Message) {
			t.Errorf("message cut inside a character")
		}
	}
	body := `{"model":"m","messages":[],"` + long + `":1,"` + long + `":2}`
	_, _, err := RequestInfo(OpenAIChat, []byte(body))
	var e *Error
	if !errors.As(err, &e) || len(e.Message) > 400 || len(e.Param) > 300 {
		t.Errorf("duplicate key: %v", err)
	}
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// TestRealClientsAccepted: requests of the shapes real clients send, with
// every optional field they use (nulls included), pass the checks in both
// modes: the gateway never rejects what the vendor accepts.
func TestRealClientsAccepted(t *testing.T) {
	cases := []struct {
		d    Dialect
		body string
	}{
		// Claude Code: cached system blocks, thinking with a budget just under
		// max_tokens (interleaved thinking), metadata.user_id, tools with
		// cache_control, signed thinking replayed, tool_result arrays
		{AnthropicMessages, `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,
			"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
			"thinking":{"type":"enabled","budget_tokens":31999},"temperature":1,
			"metadata":{"user_id":"user_0123456789abcdef_account__session_0f1e2d3c"},
			"tools":[{"name":"Read","description":"Reads a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"},"cache_control":{"type":"ephemeral"}},
			         {"type":"web_search_20250305","name":"web_search","max_uses":5}],
			"tool_choice":{"type":"auto"},
			"messages":[{"role":"user","content":[{"type":"text","text":"fix it","cache_control":{"type":"ephemeral"}}]},
			  {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"EqQBCkYIBxgC"},{"type":"tool_use","id":"toolu_01","name":"Read","input":{"file_path":"/a"}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"x"}],"is_error":false}]}]}`},
		{AnthropicMessages, `{"model":"claude-opus-4-6","max_tokens":64000,"thinking":{"type":"adaptive"},"output_config":{"effort":"max"},"messages":[{"role":"user","content":"q"}],"stop_sequences":[],"top_k":0,"top_p":0.99,"service_tier":"auto","system":"s"}`},
		// Codex: Responses with reasoning items, hosted and custom tools,
		// store false, include, prompt_cache_key, verbosity
		{OpenAIResponses, `{"model":"gpt-5-codex","instructions":"You are Codex.","stream":true,"store":false,
			"include":["reasoning.encrypted_content"],"prompt_cache_key":"0f1e","parallel_tool_calls":false,
			"reasoning":{"effort":"high","summary":"auto"},"text":{"verbosity":"medium"},"tool_choice":"auto",
			"tools":[{"type":"function","name":"shell","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}},
			         {"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"web_search"}],
			"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"env"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]},
			  {"type":"reasoning","summary":[],"content":null,"encrypted_content":"gAAAA"},
			  {"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"},
			  {"type":"function_call_output","call_id":"call_1","output":"a.go"},
			  {"type":"custom_tool_call","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch"}]}`},
		{OpenAIResponses, `{"model":"gpt-5","input":[{"role":"user","content":"q"}],"max_output_tokens":16,"temperature":2,"top_p":0,"metadata":{"k":"v"},"truncation":"auto","background":false,"previous_response_id":null,"text":{"format":{"type":"json_schema","name":"o","schema":{"type":"object"},"strict":true}}}`},
		// OpenAI SDKs and OpenAI-compatible clients on Chat Completions
		{OpenAIChat, `{"model":"gpt-4o","messages":[{"role":"developer","content":"d"},{"role":"user","name":"u","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"high"}}]},
			{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"r"}],
			"max_completion_tokens":1,"max_tokens":null,"temperature":0,"top_p":1,"n":1,"stop":"END","seed":-42,
			"presence_penalty":-2,"frequency_penalty":2,"logprobs":false,"top_logprobs":0,"logit_bias":{"50256":-100},
			"user":"u1","stream":true,"stream_options":{"include_usage":true},"parallel_tool_calls":true,"store":false,
			"metadata":{"a":"b"},"service_tier":"default","reasoning_effort":"minimal",
			"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":null}}],
			"tool_choice":{"type":"function","function":{"name":"f"}},"response_format":{"type":"json_object"}}`},
		{OpenAIChat, `{"model":"deepseek-reasoner","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"r"},{"role":"user","content":"q2"}],"top_k":-1,"temperature":1.3}`},
	}
	for _, c := range cases {
		body := []byte(c.body)
		if err := ValidateRequest(c.d, body); err != nil {
			t.Errorf("%s passthrough: %v", c.d, err)
		}
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages} {
			if to == c.d {
				continue
			}
			if out, err := TranslateRequest(c.d, to, body, "m2"); err != nil || !gjson.ValidBytes(out) {
				t.Errorf("%s→%s: %v", c.d, to, err)
			}
		}
	}
}
