package translate

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ErrorClass is one of the gateway's error classes. Each class has an HTTP
// status and a type string in every dialect (see Status, ErrorBody).
type ErrorClass uint8

const (
	// ErrInvalidRequest is a malformed or untranslatable request: HTTP 400,
	// OpenAI type "invalid_request_error", Anthropic "invalid_request_error".
	ErrInvalidRequest ErrorClass = iota + 1
	// ErrAuthentication is a missing or wrong API key: HTTP 401, OpenAI code
	// "invalid_api_key", Anthropic "authentication_error".
	ErrAuthentication
	// ErrPermission is a key that may not do this: HTTP 403, Anthropic
	// "permission_error".
	ErrPermission
	// ErrNotFound is an unknown model or path: HTTP 404, Anthropic
	// "not_found_error".
	ErrNotFound
	// ErrRequestTooLarge is a body over the size limit: HTTP 413, Anthropic
	// "request_too_large".
	ErrRequestTooLarge
	// ErrRateLimited is a rate limit: HTTP 429, OpenAI code
	// "rate_limit_exceeded", Anthropic "rate_limit_error".
	ErrRateLimited
	// ErrQuotaExhausted is a spent quota or credit balance. HTTP 429 (clients
	// retry 429 with backoff, which suits a pool whose keys recover), OpenAI
	// type and code "insufficient_quota", Anthropic "rate_limit_error".
	ErrQuotaExhausted
	// ErrUpstreamUnavailable is an upstream that cannot be reached or
	// answered 502/503/504: HTTP 502, OpenAI type "server_error", Anthropic
	// "api_error".
	ErrUpstreamUnavailable
	// ErrOverloaded is an overloaded upstream (Anthropic 529
	// "overloaded_error"; OpenAI 503 "server_is_overloaded"). HTTP 529 for
	// Anthropic clients, 503 for OpenAI clients.
	ErrOverloaded
	// ErrAPI is any other server-side failure: HTTP 500, OpenAI
	// "server_error", Anthropic "api_error".
	ErrAPI
)

// String returns the gateway's name for the class, e.g. "invalid_request",
// "rate_limited", "upstream_unavailable".
func (c ErrorClass) String() string {
	switch c {
	case ErrInvalidRequest:
		return "invalid_request"
	case ErrAuthentication:
		return "authentication"
	case ErrPermission:
		return "permission"
	case ErrNotFound:
		return "not_found"
	case ErrRequestTooLarge:
		return "request_too_large"
	case ErrRateLimited:
		return "rate_limited"
	case ErrQuotaExhausted:
		return "quota_exhausted"
	case ErrUpstreamUnavailable:
		return "upstream_unavailable"
	case ErrOverloaded:
		return "overloaded"
	}
	return "api_error"
}

// Status returns the HTTP status a client of dialect d should see for the
// class. Only ErrOverloaded differs between dialects (529 for Anthropic
// clients, per Anthropic's errors page; 503 for OpenAI clients).
func (c ErrorClass) Status(d Dialect) int {
	switch c {
	case ErrInvalidRequest:
		return 400
	case ErrAuthentication:
		return 401
	case ErrPermission:
		return 403
	case ErrNotFound:
		return 404
	case ErrRequestTooLarge:
		return 413
	case ErrRateLimited, ErrQuotaExhausted:
		return 429
	case ErrUpstreamUnavailable:
		return 502
	case ErrOverloaded:
		if d == AnthropicMessages {
			return 529
		}
		return 503
	}
	return 500
}

// ClassForStatus maps an upstream HTTP status to a class: 400 (and other
// unlisted 4xx) invalid request, 401 authentication, 402 quota exhausted,
// 403 permission, 404 not found, 413 request too large, 429 rate limited,
// 502/503/504 upstream unavailable, 529 overloaded, anything else ErrAPI.
func ClassForStatus(status int) ErrorClass {
	switch status {
	case 401:
		return ErrAuthentication
	case 402:
		return ErrQuotaExhausted
	case 403:
		return ErrPermission
	case 404:
		return ErrNotFound
	case 413:
		return ErrRequestTooLarge
	case 429:
		return ErrRateLimited
	case 502, 503, 504:
		return ErrUpstreamUnavailable
	case 529:
		return ErrOverloaded
	}
	if status >= 400 && status < 500 {
		return ErrInvalidRequest
	}
	return ErrAPI
}

// anthropicType is the Anthropic error.type for a class (Anthropic errors
// page: invalid_request_error, authentication_error, permission_error,
// not_found_error, request_too_large, rate_limit_error, api_error,
// overloaded_error).
func (c ErrorClass) anthropicType() string {
	switch c {
	case ErrInvalidRequest:
		return "invalid_request_error"
	case ErrAuthentication:
		return "authentication_error"
	case ErrPermission:
		return "permission_error"
	case ErrNotFound:
		return "not_found_error"
	case ErrRequestTooLarge:
		return "request_too_large"
	case ErrRateLimited, ErrQuotaExhausted:
		return "rate_limit_error"
	case ErrOverloaded:
		return "overloaded_error"
	}
	return "api_error"
}

// openAIType returns the OpenAI error.type and error.code (code "" = null)
// for a class, following OpenAI's error-code guide.
func (c ErrorClass) openAIType() (typ, code string) {
	switch c {
	case ErrInvalidRequest:
		return "invalid_request_error", ""
	case ErrAuthentication:
		return "invalid_request_error", "invalid_api_key"
	case ErrPermission:
		return "permission_error", "permission_denied"
	case ErrNotFound:
		return "invalid_request_error", "not_found"
	case ErrRequestTooLarge:
		return "invalid_request_error", "request_too_large"
	case ErrRateLimited:
		return "rate_limit_error", "rate_limit_exceeded"
	case ErrQuotaExhausted:
		return "insufficient_quota", "insufficient_quota"
	case ErrUpstreamUnavailable:
		return "server_error", "upstream_unavailable"
	case ErrOverloaded:
		return "service_unavailable_error", "server_is_overloaded"
	}
	return "server_error", ""
}

// Error is the error type returned by the request and response functions of
// this package. Message is client-facing and never contains secrets or Go
// internals; Param names the offending request field (OpenAI "param") when
// known, e.g. "messages[2].content[0].source.data".
type Error struct {
	Class   ErrorClass
	Param   string
	Message string
	// Code is the OpenAI error.code for a request the gateway rejects
	// itself ("invalid_type", "invalid_value", "missing_required_parameter",
	// "integer_below_min_value", ...; per OpenAI's error bodies), "" for
	// the class's default. Anthropic error bodies have no code.
	Code string

	// untranslatable marks a request feature that is valid in its own
	// dialect but has no counterpart in the others; ValidateRequest
	// accepts it, TranslateRequest rejects it.
	untranslatable bool
}

// Error returns the client-facing message.
func (e *Error) Error() string { return e.Message }

// Body renders the error in dialect d (see ErrorBody), with param and
// code (when set) filled in for OpenAI dialects.
func (e *Error) Body(d Dialect) []byte {
	if e.Code != "" && d != AnthropicMessages {
		return errorBodyCode(d, e.Class, e.Message, e.Param, e.Code)
	}
	return errorBody(d, e.Class, e.Message, e.Param)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// unsupported builds an ErrInvalidRequest error for a feature that is valid
// in the client's dialect but cannot be translated (see Error).
func unsupported(param, format string, args ...any) *Error {
	e := invalid(param, format, args...)
	e.untranslatable = true
	return e
}

// invalid builds an ErrInvalidRequest error for the request field param.
func invalid(param, format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = sprintf(format, args...)
	}
	return &Error{Class: ErrInvalidRequest, Param: param, Message: msg}
}

// ErrorBody renders an error in the client's dialect, always as valid JSON:
//
//	OpenAIChat, OpenAIResponses: {"error":{"message":…,"type":…,"param":null,"code":…|null}}
//	AnthropicMessages:           {"type":"error","error":{"type":…,"message":…}}
//
// Types follow OpenAI's error-code guide and Anthropic's errors page (see
// ErrorClass). The message is escaped, not interpreted.
func ErrorBody(d Dialect, class ErrorClass, message string) []byte {
	return errorBody(d, class, message, "")
}

func errorBody(d Dialect, class ErrorClass, message, param string) []byte {
	b := make([]byte, 0, 96+len(message))
	if d == AnthropicMessages {
		return appendAnthropicError(b, class.anthropicType(), message)
	}
	typ, code := class.openAIType()
	return appendOpenAIError(b, typ, message, param, code)
}

// appendOpenAIError appends the OpenAI error envelope
// {"error":{"message":…,"type":…,"param":…|null,"code":…|null}} to b; an
// empty type, param or code is written as null.
func appendOpenAIError(b []byte, typ, message, param, code string) []byte {
	b = append(b, `{"error":{"message":`...)
	b = appendString(b, message)
	b = append(b, `,"type":`...)
	b = appendNullableString(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, param)
	b = append(b, `,"code":`...)
	b = appendNullableString(b, code)
	return append(b, "}}"...)
}

// appendAnthropicError appends the Anthropic error envelope
// {"type":"error","error":{"type":…,"message":…}} to b.
func appendAnthropicError(b []byte, typ, message string) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	return append(b, "}}"...)
}

// secretRE matches things that look like credentials: vendor API keys
// (sk-…, sk-ant-…, rk-…, AIza…, gsk_…, xai-…), bearer tokens and
// key=/api_key= query parameters.
var secretRE = regexp.MustCompile(`(?i)(\b(?:sk|rk|pk)-[A-Za-z0-9_\-*]{6,}|\bsk_[A-Za-z0-9_\-]{8,}|\bAIza[0-9A-Za-z_\-]{16,}|\b(?:gsk|ghp|gho|xoxb|xoxp)_[A-Za-z0-9_\-]{8,}|\bxai-[A-Za-z0-9_\-]{8,}|\bbearer\s+[A-Za-z0-9._\-~+/=]{8,}|\b(?:api[_-]?key|key|token|access_token)=[^&\s"']{6,})`)

// ScrubSecrets replaces anything in s that looks like an API key, bearer
// token or key query parameter with "[redacted]". It is applied to every
// upstream error message before a client sees it.
func ScrubSecrets(s string) string {
	if !mayHoldSecret(s) {
		return s
	}
	return secretRE.ReplaceAllString(s, "[redacted]")
}

func mayHoldSecret(s string) bool {
	ls := strings.ToLower(s)
	for _, p := range [...]string{"sk-", "sk_", "rk-", "pk-", "aiza", "gsk_", "ghp_", "gho_", "xox", "xai-", "bearer", "key=", "token="} {
		if strings.Contains(ls, p) {
			return true
		}
	}
	return false
}

// ClientStatus maps an upstream HTTP error status to the status a client of
// dialect `to` should see: Anthropic's 529 becomes 503 for OpenAI clients,
// a 503 "overloaded" stays 503, everything else is kept.
func ClientStatus(to Dialect, upstreamStatus int) int {
	if upstreamStatus == 529 && to != AnthropicMessages {
		return 503
	}
	if upstreamStatus < 400 || upstreamStatus > 599 {
		return 502
	}
	return upstreamStatus
}

// TranslateError converts an upstream error response (HTTP status and body
// of any shape: OpenAI error object, Anthropic error object, FastAPI
// {"detail":…}, plain text, HTML or empty) into an error body in dialect to.
//
// The upstream message is kept, with secrets scrubbed (ScrubSecrets). The
// class comes from the HTTP status (ClassForStatus) refined by the body:
// Anthropic "overloaded_error" gives ErrOverloaded, OpenAI
// "insufficient_quota" gives ErrQuotaExhausted. When from == to and the body
// already has that dialect's error shape, it is returned unchanged except for
// the scrubbed message (so fields such as Anthropic's request_id survive).
// Use ClientStatus for the status code to send with it.
func TranslateError(from, to Dialect, status int, body []byte) []byte {
	class := ClassForStatus(status)
	body = bytes.TrimSpace(body)
	var msg, param string
	if len(body) > 0 && body[0] == '{' && gjson.ValidBytes(body) {
		root := gjson.ParseBytes(body)
		e := root.Get("error")
		switch {
		case e.IsObject():
			msg = e.Get("message").String()
			param = e.Get("param").String()
			typ := e.Get("type").String()
			code := e.Get("code").String()
			switch {
			case typ == "overloaded_error" || code == "server_is_overloaded":
				class = ErrOverloaded
			case typ == "insufficient_quota" || code == "insufficient_quota" || typ == "billing_error":
				class = ErrQuotaExhausted
			case typ == "request_too_large":
				class = ErrRequestTooLarge
			}
			if msg == "" {
				msg = firstNonEmpty(typ, code)
			}
			sameShape := (to == AnthropicMessages && root.Get("type").String() == "error") ||
				(to != AnthropicMessages && !root.Get("type").Exists())
			if from == to && sameShape {
				clean := ScrubSecrets(msg)
				if clean == msg {
					return body
				}
				path := "error.message"
				if out, err := sjson.SetBytes(body, path, clean); err == nil {
					return out
				}
			}
		case e.Type == gjson.String:
			msg = e.String()
		case root.Get("detail").Exists():
			d := root.Get("detail")
			if d.Type == gjson.String {
				msg = d.String()
			} else if d.IsArray() {
				msg = d.Get("0.msg").String()
			}
		case root.Get("message").Type == gjson.String:
			msg = root.Get("message").String()
		}
	} else if len(body) > 0 && !looksLikeHTML(body) && utf8.Valid(body) {
		msg = string(body)
		if len(msg) > 300 {
			msg = msg[:300]
			for !utf8.ValidString(msg) {
				msg = msg[:len(msg)-1]
			}
		}
	}
	if msg == "" {
		msg = "upstream error: HTTP " + strconv.Itoa(status)
	}
	return errorBody(to, class, ScrubSecrets(msg), param)
}

func looksLikeHTML(b []byte) bool {
	if len(b) > 64 {
		b = b[:64]
	}
	l := bytes.ToLower(b)
	return bytes.HasPrefix(l, []byte("<!doctype")) || bytes.HasPrefix(l, []byte("<html")) || bytes.Contains(l, []byte("<head")) || bytes.Contains(l, []byte("<body"))
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// classForErrorType maps an error type string seen in a stream error event
// (Anthropic error.type or OpenAI error.type/code) to a class.
func classForErrorType(typ, code string) ErrorClass {
	switch typ {
	case "invalid_request_error":
		if code == "invalid_api_key" {
			return ErrAuthentication
		}
		return ErrInvalidRequest
	case "authentication_error":
		return ErrAuthentication
	case "permission_error":
		return ErrPermission
	case "not_found_error":
		return ErrNotFound
	case "request_too_large":
		return ErrRequestTooLarge
	case "rate_limit_error":
		return ErrRateLimited
	case "billing_error", "insufficient_quota":
		return ErrQuotaExhausted
	case "overloaded_error", "service_unavailable_error":
		return ErrOverloaded
	case "timeout_error":
		return ErrUpstreamUnavailable
	}
	switch code {
	case "rate_limit_exceeded":
		return ErrRateLimited
	case "insufficient_quota":
		return ErrQuotaExhausted
	case "server_is_overloaded":
		return ErrOverloaded
	}
	return ErrAPI
}
