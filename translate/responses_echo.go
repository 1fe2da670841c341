package translate

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The Responses API's response object restates the request's settings
// (OpenAI Responses API reference, "The response object"): temperature,
// top_p, instructions, max_output_tokens, metadata, reasoning, text,
// truncation… A translated answer echoes what the client's request sent,
// and for a setting it left out (or set to null) the default the API
// reference documents for the create request (temperature and top_p 1,
// parallel_tool_calls true, truncation "disabled",
// service_tier "auto", background false, text {"format":{"type":"text"}},
// metadata {}, the rest null). store is false whatever the API's default
// (true): the gateway keeps no response (a request with "store": true or
// a previous_response_id is refused before it is translated), and an
// answer must not claim it was stored.

// rsEchoFields are the settings a response object restates, in the order
// they are written, with the value written when the request has none.
var rsEchoFields = [...]struct{ key, def string }{
	{"background", "false"},
	{"instructions", "null"},
	{"max_output_tokens", "null"},
	{"max_tool_calls", "null"},
	{"metadata", "{}"},
	{"parallel_tool_calls", "true"},
	{"previous_response_id", "null"},
	{"prompt_cache_key", "null"},
	{"reasoning", `{"effort":null,"summary":null}`},
	{"safety_identifier", "null"},
	{"service_tier", `"auto"`},
	{"store", "false"}, // never stored: see above
	{"temperature", "1"},
	{"text", `{"format":{"type":"text"}}`},
	{"top_logprobs", "0"},
	{"top_p", "1"},
	{"truncation", `"disabled"`},
	{"user", "null"},
}

// rsEchoDefault is the echo of a request that sets none of the settings
// (and what a response object states without ResponseOptions.Echo).
var rsEchoDefault = appendRSEcho(nil, nil)

// appendRSEcho appends the members a response object restates (each
// ,"key":value), from body, a Responses request (nil: the defaults).
func appendRSEcho(b, body []byte) []byte {
	// one walk of the top level (not a gjson Get per setting, each from
	// the body's start past the whole input); the first member of each
	// name, as gjson's Get finds it
	var vals [len(rsEchoFields)]gjson.Result
	if body != nil {
		gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
			for i := range rsEchoFields {
				if rsEchoFields[i].key == k.Str {
					if !vals[i].Exists() {
						vals[i] = v
					}
					break
				}
			}
			return true
		})
	}
	for i := range rsEchoFields {
		f := &rsEchoFields[i]
		v := f.def
		if vals[i].Exists() && vals[i].Type != gjson.Null {
			v = echoRaw(vals[i].Raw)
		}
		b = append(b, ',')
		b = strconv.AppendQuote(b, f.key) // keys are plain ASCII
		b = append(b, ':')
		b = appendRawUTF8(b, v)
	}
	return b
}

// appendRawUTF8 appends v, raw JSON, with each byte that is not part of
// valid UTF-8 (only inside a string of valid JSON) written as \ufffd, as
// appendEscaped writes the strings of a translated answer: a request's
// invalid bytes are not echoed to its client (RFC 8259 section 8.1).
func appendRawUTF8(b []byte, v string) []byte {
	if utf8.ValidString(v) {
		return append(b, v...)
	}
	start := 0
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, v[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(b, v[start:]...)
}

// echoRaw returns raw, a request's JSON value a response object restates,
// without the line breaks its whitespace may hold (a pretty-printed
// request): in a stream the object is one SSE data: line, which a CR or LF
// would end, cutting the JSON. Valid JSON has none inside its strings, so
// only a value that holds one is rewritten (gjson's @ugly); "" stays "".
func echoRaw(raw string) string {
	if strings.ContainsAny(raw, "\r\n") {
		return gjson.Get(raw, "@ugly").Raw
	}
	return raw
}

// ResponsesEchoMembers returns what a translated answer's response object
// restates of an OpenAI Responses request (nil for other dialects): its
// background, instructions, max_output_tokens, max_tool_calls, metadata,
// parallel_tool_calls, previous_response_id, prompt_cache_key, reasoning,
// safety_identifier, service_tier, store, temperature, text,
// top_logprobs, top_p, truncation and user, each as the request sent it
// (raw JSON, without line breaks: see echoRaw) or, when absent or null, the API's documented default (store:
// false, see rsEchoFields), as a
// run of JSON object members each preceded by a comma
// (,"background":false,"instructions":"…",…). Set it as
// ResponseOptions.Echo. Built once per request and kept; do not modify
// it.
func (r *Request) ResponsesEchoMembers() []byte {
	if r.d != OpenAIResponses {
		return nil
	}
	if r.echoMembers == nil {
		r.echoMembers = appendRSEcho(make([]byte, 0, 512), r.body)
	}
	return r.echoMembers
}

// appendRSResponseEcho is appendRSResponse with the settings the response
// object restates (echo, see ResponsesEchoMembers; nil: the defaults).
func appendRSResponseEcho(b []byte, id string, created int64, status, reason, model string, output []byte, u Usage, errCode, errMsg string, tools, toolChoice, echo []byte) []byte {
	if echo == nil {
		echo = rsEchoDefault
	}
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","error":`...)
	if errCode != "" {
		b = append(b, `{"code":`...)
		b = appendString(b, errCode)
		b = appendStrField(b, "message", errMsg)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if reason != "" {
		b = append(b, `{"reason":`...)
		b = appendString(b, reason)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = appendString(b, model)
	b = append(b, `,"output":`...)
	if len(output) == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, output...)
	}
	b = append(b, `,"tool_choice":`...)
	if len(toolChoice) > 0 {
		b = append(b, toolChoice...)
	} else {
		b = append(b, `"auto"`...)
	}
	b = append(b, `,"tools":`...)
	if len(tools) > 0 {
		b = append(b, tools...)
	} else {
		b = append(b, "[]"...)
	}
	b = append(b, echo...)
	b = append(b, `,"usage":`...)
	if u.IsZero() {
		b = append(b, "null"...)
	} else {
		b = appendResponsesUsage(b, u)
	}
	return append(b, '}')
}
