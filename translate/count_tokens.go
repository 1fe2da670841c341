package translate

import (
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// inputTokensFields are the members of an OpenAI Responses request that
// POST /v1/responses/input_tokens accepts, per OpenAI's API reference
// ("Get input token counts"); the rest of a Responses body (store,
// max_output_tokens, include, stream, sampling) is not sent to it.
var inputTokensFields = map[string]bool{
	"model": true, "input": true, "instructions": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "reasoning": true, "text": true, "truncation": true,
}

// CountTokensBody turns an Anthropic count_tokens request (POST
// /v1/messages/count_tokens: model, system, messages, tools, tool_choice,
// thinking; no max_tokens) into the body of the token-counting endpoint of
// an upstream of dialect to, asking for model ("" keeps the client's):
// for AnthropicMessages the body with the model rewritten; for
// OpenAIResponses the request translated as a completion would be and
// reduced to the members /v1/responses/input_tokens accepts. OpenAIChat
// has no counting endpoint. Errors are *Error values with client-facing
// messages (class ErrInvalidRequest).
func CountTokensBody(to Dialect, body []byte, model string) ([]byte, error) {
	switch to {
	case AnthropicMessages:
		if model == "" {
			return body, nil
		}
		return SetModel(body, model)
	case OpenAIResponses:
	default:
		return nil, invalid("", "%s has no token counting endpoint", to)
	}
	if !gjson.GetBytes(body, "max_tokens").Exists() {
		// count_tokens takes no max_tokens; a completion needs one, and
		// it is dropped again below
		b, err := sjson.SetBytes(body, "max_tokens", 1)
		if err != nil {
			return nil, invalid("", "request body must be a JSON object")
		}
		body = b
	}
	req, err := ParseRequest(AnthropicMessages, body)
	if err != nil {
		return nil, err
	}
	full, err := req.Encode(OpenAIResponses, model)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(full))
	out = append(out, '{')
	gjson.ParseBytes(full).ForEach(func(k, v gjson.Result) bool {
		if inputTokensFields[k.Str] {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, k.Raw...)
			out = append(out, ':')
			out = append(out, v.Raw...)
		}
		return true
	})
	return append(out, '}'), nil
}

// CountTokensAnswer renders an upstream's token count in Anthropic's
// count_tokens shape ({"input_tokens":N}, per Anthropic's token counting
// docs): an Anthropic answer as it is, OpenAI's
// {"object":"response.input_tokens","input_tokens":N} reduced to the
// count. ok is false when the answer holds no count.
func CountTokensAnswer(from Dialect, body []byte) (out []byte, ok bool) {
	n := gjson.GetBytes(body, "input_tokens")
	if n.Type != gjson.Number {
		return nil, false
	}
	if from == AnthropicMessages {
		return body, true
	}
	return []byte(`{"input_tokens":` + strconv.FormatInt(n.Int(), 10) + `}`), true
}
