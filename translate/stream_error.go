package translate

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ErrNotCommitted is wrapped by the error StreamTranslator.Run returns when,
// with HoldPreamble, the upstream stream failed before its first content
// event: nothing was written to the EventWriter, so the HTTP handler can
// still retry the request on another key or answer with an HTTP error.
// The cause is wrapped too: a *StreamError for an in-band error event, the
// upstream read error, or io.ErrUnexpectedEOF for an empty stream or one
// that held nothing but its preamble.
var ErrNotCommitted = errors.New("translate: stream failed before its first content event")

// MaxStreamErrorMessage bounds StreamError.Message (4 KiB, cut at a UTF-8
// boundary).
const MaxStreamErrorMessage = 4 << 10

// maxStreamErrorType bounds StreamError.Type and the code / param fields
// copied into StreamError.Body.
const maxStreamErrorType = 64

// StreamError is an upstream's in-band error event, seen in a stream whose
// HTTP status was already 200:
//   - Anthropic Messages "event: error" with
//     {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}
//     (Anthropic streaming docs, "Error events");
//   - an OpenAI Chat chunk carrying a top-level "error" object (or string);
//   - an OpenAI Responses "error" event (flat {code, message, param} or
//     nested {error:{type, code, message, param}}) or "response.failed"
//     (response.error {code, message}).
//
// Type is the upstream's error type, sanitised (only [A-Za-z0-9_.:-], at
// most 64 bytes): Anthropic error.type; OpenAI error.code, or error.type
// when there is no code. When the upstream gave neither it is "api_error"
// (Anthropic upstream) or "server_error" (OpenAI upstreams).
//
// Message is the upstream's message with secrets scrubbed (ScrubSecrets),
// at most MaxStreamErrorMessage bytes.
//
// Status is the HTTP status the same error would have had as a response
// (see StreamErrorStatus), e.g. 529 for overloaded_error, 429 for
// rate_limit_exceeded; 500 when the type is unknown.
//
// Body is the error as the upstream's HTTP error body would have been, for
// an HTTP-status classifier: Anthropic
// {"type":"error","error":{"type":…,"message":…}}; OpenAI
// {"error":{"message":…,"type":…|null,"param":…|null,"code":…|null}}, with
// the upstream's own type and code (sanitised) and the bounded message. It
// is at most about 5 KiB.
type StreamError struct {
	Type    string
	Message string
	Status  int
	Body    []byte
}

// Error returns "upstream stream error <Type> (<Status>): <Message>".
func (e *StreamError) Error() string {
	return "upstream stream error " + e.Type + " (" + strconv.Itoa(e.Status) + "): " + e.Message
}

// StreamErrorStatus returns the HTTP status for an in-band error's type and
// code (either may be ""). The code is looked up first, then the type.
// Anthropic types follow Anthropic's errors page: invalid_request_error
// 400, authentication_error 401, billing_error 402, permission_error 403,
// not_found_error 404, conflict_error 409, request_too_large 413,
// rate_limit_error 429, api_error 500, timeout_error 504, overloaded_error
// 529. OpenAI types and codes follow OpenAI's error-code guide:
// invalid_request_error and invalid_* / unsupported_* / context_length_exceeded
// 400, invalid_api_key / authentication_error 401, permission_error /
// permission_denied / request_forbidden / unsupported_country_region_territory
// 403, model_not_found / not_found 404, rate_limit_exceeded /
// rate_limit_error / insufficient_quota / slow_down 429, server_error 500,
// service_unavailable_error / server_is_overloaded 503, timeouts 504. A
// code that is a number from 400 to 599 is the HTTP status itself
// (OpenRouter's error.code; the in-band errors of vLLM, SGLang and
// llama.cpp, {"type":"BadRequestError","code":400} for a prompt over the
// context window). Anything else is 500.
func StreamErrorStatus(typ, code string) int {
	if s := errorNameStatus(code); s != 0 {
		return s
	}
	if s := errorNameStatus(typ); s != 0 {
		return s
	}
	return 500
}

func errorNameStatus(s string) int {
	if len(s) == 3 && s >= "400" && s <= "599" && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9' {
		// a number: the HTTP status itself (OpenRouter's error.code;
		// vLLM, SGLang and llama.cpp in-band errors, "code":400)
		return int(s[0]-'0')*100 + int(s[1]-'0')*10 + int(s[2]-'0')
	}
	switch s {
	case "":
		return 0
	case "invalid_request_error", "context_length_exceeded", "string_above_max_length", "invalid_prompt":
		return 400
	case "authentication_error", "invalid_api_key", "invalid_authentication":
		return 401
	case "billing_error":
		return 402
	case "permission_error", "permission_denied", "request_forbidden", "unsupported_country_region_territory":
		return 403
	case "not_found_error", "not_found", "model_not_found":
		return 404
	case "conflict_error":
		return 409
	case "request_too_large":
		return 413
	case "rate_limit_error", "rate_limit_exceeded", "insufficient_quota", "slow_down", "credit_balance_exhausted":
		return 429
	case "api_error", "server_error", "internal_error", "internal_server_error":
		return 500
	case "service_unavailable_error", "server_is_overloaded", "service_unavailable":
		return 503
	case "timeout_error", "timeout", "vector_store_timeout":
		return 504
	case "overloaded_error":
		return 529
	}
	if strings.HasPrefix(s, "invalid_") || strings.HasPrefix(s, "unsupported_") {
		return 400
	}
	return 0
}

// newStreamError builds the StreamError of an upstream in dialect up from
// the raw type, code, message and param of its error event.
func newStreamError(up Dialect, typ, code, msg, param string) *StreamError {
	typ, code, param = sanitizeErrorName(typ), sanitizeErrorName(code), boundString(param, 256)
	msg = boundString(ScrubSecrets(msg), MaxStreamErrorMessage)
	// the strings may be views of an upstream event (valid only until the
	// next one): the error outlives it
	typ, code, msg = strings.Clone(typ), strings.Clone(code), strings.Clone(msg)
	e := &StreamError{Status: StreamErrorStatus(typ, code), Message: msg}
	if up == AnthropicMessages {
		e.Type = firstNonEmpty(typ, code, "api_error")
		b := make([]byte, 0, 64+len(e.Type)+len(msg))
		e.Body = appendAnthropicError(b, e.Type, msg)
		return e
	}
	e.Type = firstNonEmpty(code, typ, "server_error")
	bodyType := typ
	if bodyType == "" {
		// an event with a code and no type (OpenAI Responses' error and
		// response.failed): the body's type is OpenAI's for the status,
		// never the code
		bodyType, _ = ClassForStatus(e.Status).openAIType()
	}
	b := make([]byte, 0, 96+len(bodyType)+len(code)+len(param)+len(msg))
	e.Body = appendOpenAIError(b, bodyType, msg, param, code)
	return e
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// sanitizeErrorName keeps an error type or code to [A-Za-z0-9_.:-], at most
// 64 bytes.
func sanitizeErrorName(s string) string {
	ok := len(s) <= maxStreamErrorType
	for i := 0; ok && i < len(s); i++ {
		ok = errorNameByte(s[i])
	}
	if ok {
		return s
	}
	b := make([]byte, 0, maxStreamErrorType)
	for i := 0; i < len(s) && len(b) < maxStreamErrorType; i++ {
		if errorNameByte(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

func errorNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':'
}

// boundString cuts s to at most n bytes at a UTF-8 boundary.
func boundString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// openAIErrorFields reads an OpenAI error value (object or string).
func openAIErrorFields(e gjson.Result) (typ, code, msg, param string) {
	if e.Type == gjson.String {
		return "", "", e.Str, ""
	}
	return errStr(e.Get("type")), errStr(e.Get("code")), e.Get("message").String(), errStr(e.Get("param"))
}

// openAIStreamError is the StreamError of an OpenAI-shaped error object e
// (a Chat chunk's "error", vLLM's top-level error chunk, a 200 answer
// that is an error object) from an upstream of dialect up, with e's
// "metadata" object kept in the body (keepErrorMetadata).
func openAIStreamError(up Dialect, e gjson.Result) *StreamError {
	typ, code, msg, param := openAIErrorFields(e)
	return keepErrorMetadata(newStreamError(up, typ, code, msg, param), e)
}

// maxErrorMetadata bounds the "metadata" object an error body carries on.
const maxErrorMetadata = 4 << 10

// keepErrorMetadata adds the "metadata" object of the upstream's error
// object e to se's OpenAI-shaped body, as error.metadata: OpenRouter puts
// the provider's name and raw error there, and for a moderation refusal
// the reasons and flagged_input (per OpenRouter's errors docs), which
// tell that the client's input, not the key, was refused. The body then
// says what the same error with its HTTP status says: to the key's
// verdict (keypool reads error.metadata) and to the client. A metadata
// that is not an object, is over maxErrorMetadata bytes or is not valid
// JSON is left out; credentials in it are redacted (ScrubSecrets). An
// Anthropic-shaped body is returned unchanged.
func keepErrorMetadata(se *StreamError, e gjson.Result) *StreamError {
	if !e.IsObject() || !bytes.HasPrefix(se.Body, []byte(`{"error":{`)) || !bytes.HasSuffix(se.Body, []byte("}}")) {
		return se
	}
	m := e.Get("metadata")
	if !m.IsObject() || len(m.Raw) > maxErrorMetadata {
		return se
	}
	raw := ScrubSecrets(m.Raw)
	if !gjson.Valid(raw) {
		return se
	}
	b := make([]byte, 0, len(se.Body)+len(raw)+12)
	b = append(b, se.Body[:len(se.Body)-2]...)
	b = append(b, `,"metadata":`...)
	b = append(b, raw...)
	se.Body = append(b, "}}"...)
	return se
}

// errStr returns a string or number field as a string, "" otherwise.
func errStr(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return r.Str
	case gjson.Number:
		return r.Raw
	}
	return ""
}

// ErrStreamStalled is the error the upstream reader given to
// StreamTranslator.Run returns when the caller ended a stream that has
// sent no data for too long, only keep-alives (SSE comments, blank
// lines): the client's stream then ends with an error event saying it
// stalled, instead of a connection error's.
var ErrStreamStalled = errors.New("translate: upstream stream stalled: no data, only keep-alives, for too long")

// interruptedMsg is the message of the error event that ends a stream
// whose upstream read failed with readErr.
func interruptedMsg(readErr error) string {
	if errors.Is(readErr, ErrStreamStalled) {
		return msgStalled
	}
	return msgInterrupted
}

// Messages of the error forms the gateway writes itself.
const (
	msgTruncated   = "upstream stream ended without a finish reason; the answer is incomplete"
	msgFinishError = "upstream ended the answer with finish_reason error: the generation failed"
	msgInterrupted = "upstream stream interrupted: connection error"
	msgStalled     = "upstream stream stalled: it sent no data, only keep-alives, for too long; the answer is incomplete"
	msgEmpty       = "upstream closed the stream without sending any event"
	// a Chat chunk whose "choices" is not an array (malformedChoices)
	msgMalformedChoices = "upstream sent a malformed chunk: its choices is not an array"
	// a Chat stream of "choices": [] chunks alone, none with a block
	// reason or the usage (chatChoices)
	msgNoChoices = "upstream stream ended without any choice or block reason: it answered nothing"
	// msgNoChoiceAnswer: a whole Chat answer with "choices": [] and
	// neither a block reason nor usage (answeredNothing)
	msgNoChoiceAnswer = "upstream answer has no choice and no block reason: it answered nothing"
	// msgMalformedChoice: a whole Chat answer whose first choice is not an
	// object
	msgMalformedChoice = "upstream answer is malformed: its first choice is not an object"
)

// appendRSErrorFields appends the data of a Responses "error" event after
// its type and sequence_number: the flat fields of the API reference's
// ResponseErrorEvent (code, message, param) and the nested "error" object
// OpenAI sends on the wire, which makes the official SDKs (openai-go,
// openai-python) raise the error.
func appendRSErrorFields(b []byte, typ, code, msg string) []byte {
	b = appendStrField(b, "code", code)
	b = appendStrField(b, "message", msg)
	b = append(b, `,"param":null,"error":{"type":`...)
	b = appendString(b, typ)
	b = appendStrField(b, "code", code)
	b = appendStrField(b, "message", msg)
	return append(b, `,"param":null}`...)
}
