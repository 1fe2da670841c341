package translate

import (
	"bytes"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// MaxRequestSize is the largest request body the translation functions
// accept (32 MiB). The HTTP handler should enforce its own, usually smaller,
// limit while reading; this is a last line of defence.
const MaxRequestSize = 32 << 20

// RequestInfo validates the outline of a request body of dialect d and
// returns its model and stream flag. It checks that the body is a JSON
// object within MaxRequestSize, that "model" is a non-empty string, that
// "stream" (if present) is a boolean, and that the conversation field has
// the right type: "messages" must be an array (OpenAIChat,
// AnthropicMessages), "input" a string or an array (OpenAIResponses).
//
// The error is an *Error whose message is client-facing and free of
// secrets; the handler renders it with (*Error).Body as a 400.
func RequestInfo(d Dialect, body []byte) (model string, stream bool, err error) {
	if e := checkBody(body); e != nil {
		return "", false, e
	}
	res := gjson.GetManyBytes(body, "model", "stream", "messages", "input")
	m, s, msgs, input := res[0], res[1], res[2], res[3]
	if !m.Exists() {
		return "", false, invalid("model", "model: field required")
	}
	if m.Type != gjson.String || m.Str == "" {
		return "", false, invalid("model", "model: must be a non-empty string")
	}
	switch s.Type {
	case gjson.True:
		stream = true
	case gjson.False, gjson.Null:
	default:
		if s.Exists() {
			return "", false, invalid("stream", "stream: must be a boolean")
		}
	}
	switch d {
	case OpenAIChat, AnthropicMessages:
		if !msgs.Exists() {
			return "", false, invalid("messages", "messages: field required")
		}
		if !msgs.IsArray() {
			return "", false, invalid("messages", "messages: must be an array")
		}
	case OpenAIResponses:
		if !input.Exists() {
			return "", false, invalid("input", "input: field required")
		}
		if input.Type != gjson.String && !input.IsArray() {
			return "", false, invalid("input", "input: must be a string or an array of input items")
		}
	default:
		return "", false, invalid("", "unknown dialect")
	}
	return m.Str, stream, nil
}

// checkBody rejects bodies that are too large, not valid JSON or not an
// object.
func checkBody(body []byte) *Error {
	if len(body) > MaxRequestSize {
		return &Error{Class: ErrRequestTooLarge, Message: sprintf("request body too large: %d bytes, limit %d", len(body), MaxRequestSize)}
	}
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 {
		return invalid("", "request body is empty; expected a JSON object")
	}
	if t[0] != '{' {
		return invalid("", "request body must be a JSON object")
	}
	if !gjson.ValidBytes(body) {
		return invalid("", "request body is not valid JSON")
	}
	if k := duplicateTopLevelKey(body); k != "" {
		// decoders disagree on which copy wins (gjson: the first, most
		// others: the last), so a duplicate could route by one model and
		// run another
		return invalid(k, "request body has the field %q more than once", k)
	}
	return nil
}

// duplicateTopLevelKey returns the first top-level key (unescaped) that
// occurs twice in a JSON object, or "".
func duplicateTopLevelKey(body []byte) string {
	var seen [32]string
	keys := seen[:0]
	var dup string
	gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
		name := k.String()
		for _, s := range keys {
			if s == name {
				dup = name
				return false
			}
		}
		keys = append(keys, name)
		return true
	})
	return dup
}

// SetModel rewrites the top-level "model" field of a JSON object body with
// sjson, leaving every other byte as it was (used for passthrough). When the
// field already holds model, body is returned unchanged (no copy).
func SetModel(body []byte, model string) ([]byte, error) {
	cur := gjson.GetBytes(body, "model")
	if cur.Type == gjson.String && cur.Str == model {
		return body, nil
	}
	out, err := sjson.SetBytes(body, "model", model)
	if err != nil {
		return nil, invalid("model", "cannot set model: request body is not a JSON object")
	}
	return out, nil
}

// TranslateRequest converts a request body from the client's dialect `from`
// into the upstream dialect `to` and sets its model to upstreamModel (when
// upstreamModel is "", the client's model is kept).
//
// When from == to the body is passed through byte for byte except for the
// "model" field (SetModel); nothing is re-encoded and unknown fields
// survive. Otherwise the body is decoded into the canonical form and
// encoded for `to`; fields without a counterpart are dropped (see
// docs/translation-dropped-fields.md). When the translated request streams
// and `to` is OpenAIChat, stream_options.include_usage is set to true so the
// final usage chunk arrives.
//
// Supported directions: any dialect to itself, and OpenAIChat,
// AnthropicMessages or OpenAIResponses to OpenAIChat or AnthropicMessages.
// Errors are *Error values with client-facing messages (class
// ErrInvalidRequest, or ErrRequestTooLarge).
func TranslateRequest(from, to Dialect, body []byte, upstreamModel string) ([]byte, error) {
	if e := checkBody(body); e != nil {
		return nil, e
	}
	if from == to {
		if upstreamModel == "" {
			return body, nil
		}
		return SetModel(body, upstreamModel)
	}
	if !from.valid() || (to != OpenAIChat && to != AnthropicMessages) {
		return nil, invalid("", "translation from %s to %s is not supported", from, to)
	}
	req, err := decodeRequest(from, body)
	if err != nil {
		return nil, err
	}
	if upstreamModel != "" {
		req.model = upstreamModel
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	if req.n > 1 {
		return nil, unsupported("n", "n: only n=1 can be translated to another API dialect")
	}
	switch to {
	case OpenAIChat:
		return encodeChatRequest(req)
	default:
		return encodeAnthropicRequest(req)
	}
}

func decodeRequest(from Dialect, body []byte) (*canonRequest, *Error) {
	switch from {
	case OpenAIChat:
		return decodeChatRequest(body)
	case AnthropicMessages:
		return decodeAnthropicRequest(body)
	default:
		return decodeResponsesRequest(body)
	}
}

// AddStreamUsage prepares an OpenAI Chat streaming request for passthrough
// usage accounting: it sets stream_options.include_usage to true (sjson,
// other bytes unchanged) so the upstream sends its final usage-only chunk.
// clientAsked reports whether the client had already asked for it; when it
// had not, call HideUsageChunk on the passthrough StreamTranslator so the
// client's stream stays exactly what it asked for. Non-streaming requests
// and requests that already ask are returned unchanged.
func AddStreamUsage(body []byte) (out []byte, clientAsked bool) {
	res := gjson.GetManyBytes(body, "stream", "stream_options.include_usage")
	if res[0].Type != gjson.True {
		return body, false
	}
	if res[1].Type == gjson.True {
		return body, true
	}
	out, err := sjson.SetBytes(body, "stream_options.include_usage", true)
	if err != nil {
		return body, false
	}
	return out, false
}
