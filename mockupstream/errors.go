package mockupstream

import (
	"net/http"
	"strconv"
	"time"
)

// errorInfo is the dialect-specific description of an error status.
type errorInfo struct {
	typ  string // OpenAI error.type / Anthropic error.type
	code string // OpenAI error.code ("" = null)
	msg  string
}

// openAIError returns the realistic OpenAI error for status.
func openAIError(status int, model, key string) errorInfo {
	switch status {
	case http.StatusBadRequest:
		return errorInfo{"invalid_request_error", "", "Invalid request."}
	case http.StatusUnauthorized:
		if key == "" {
			return errorInfo{"invalid_request_error", "", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."}
		}
		return errorInfo{"invalid_request_error", "invalid_api_key", "Incorrect API key provided: " + maskKey(key) + ". You can find your API key at https://platform.openai.com/account/api-keys."}
	case http.StatusPaymentRequired:
		return errorInfo{"insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."}
	case http.StatusForbidden:
		return errorInfo{"request_forbidden", "unsupported_country_region_territory", "Country, region, or territory not supported"}
	case http.StatusNotFound:
		return errorInfo{"invalid_request_error", "model_not_found", "The model `" + model + "` does not exist or you do not have access to it."}
	case http.StatusMethodNotAllowed:
		return errorInfo{"invalid_request_error", "", "Method not allowed."}
	case http.StatusRequestTimeout:
		return errorInfo{"invalid_request_error", "", "Request timed out."}
	case http.StatusConflict:
		return errorInfo{"invalid_request_error", "", "Conflict."}
	case http.StatusRequestEntityTooLarge:
		return errorInfo{"invalid_request_error", "", "Request body too large."}
	case http.StatusTooManyRequests:
		return errorInfo{"requests", "rate_limit_exceeded", "Rate limit reached for requests on " + model + ". Please try again in 1s."}
	case http.StatusInternalServerError:
		return errorInfo{"server_error", "", "The server had an error while processing your request. Sorry about that!"}
	case http.StatusBadGateway:
		return errorInfo{"server_error", "", "Bad gateway."}
	case http.StatusServiceUnavailable:
		return errorInfo{"service_unavailable_error", "server_is_overloaded", "The engine is currently overloaded, please try again later."}
	case http.StatusGatewayTimeout:
		return errorInfo{"server_error", "timeout", "Request timed out."}
	case 529:
		return errorInfo{"server_error", "server_is_overloaded", "The server is overloaded, please try again later."}
	}
	if status >= 500 {
		return errorInfo{"server_error", "", "The server had an error while processing your request."}
	}
	return errorInfo{"invalid_request_error", "", http.StatusText(status)}
}

// anthropicError returns the realistic Anthropic error for status.
func anthropicError(status int, model, key string) errorInfo {
	switch status {
	case http.StatusBadRequest:
		return errorInfo{"invalid_request_error", "", "Invalid request."}
	case http.StatusUnauthorized:
		if key == "" {
			return errorInfo{"authentication_error", "", "x-api-key header is required"}
		}
		return errorInfo{"authentication_error", "", "invalid x-api-key"}
	case http.StatusPaymentRequired:
		return errorInfo{"billing_error", "", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}
	case http.StatusForbidden:
		return errorInfo{"permission_error", "", "Your API key does not have permission to use the specified resource."}
	case http.StatusNotFound:
		return errorInfo{"not_found_error", "", "model: " + model}
	case http.StatusConflict:
		return errorInfo{"conflict_error", "", "Conflict."}
	case http.StatusRequestEntityTooLarge:
		return errorInfo{"request_too_large", "", "Request exceeds the maximum allowed number of bytes."}
	case http.StatusTooManyRequests:
		return errorInfo{"rate_limit_error", "", "This request would exceed your organization's rate limit. Please try again later."}
	case http.StatusInternalServerError:
		return errorInfo{"api_error", "", "Internal server error"}
	case http.StatusServiceUnavailable, 529:
		return errorInfo{"overloaded_error", "", "Overloaded"}
	case http.StatusGatewayTimeout:
		return errorInfo{"timeout_error", "", "Request timed out"}
	}
	if status >= 500 {
		return errorInfo{"api_error", "", "Internal server error"}
	}
	return errorInfo{"invalid_request_error", "", http.StatusText(status)}
}

// maskKey shows a key the way OpenAI does in its 401 message.
func maskKey(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:3] + "*****" + k[len(k)-4:]
}

// writeStatusError writes the realistic error body for status.
func (c *call) writeStatusError(status int, model string) {
	c.writeError(status, "", model)
}

// writeError writes an error in the call's dialect; msg overrides the
// default message for status when not empty.
func (c *call) writeError(status int, msg, model string) {
	if model == "" {
		model = c.s.model
	}
	var info errorInfo
	if c.d == dialectAnthropic {
		info = anthropicError(status, model, c.key)
	} else {
		info = openAIError(status, model, c.key)
	}
	if msg != "" {
		info.msg = msg
	}
	c.writeInfo(status, info)
}

// writeInfo writes the error info as the body of a status response.
func (c *call) writeInfo(status int, info errorInfo) {
	buf := make([]byte, 0, 256)
	if c.d == dialectAnthropic {
		buf = append(buf, `{"type":"error","error":{"type":`...)
		buf = appendString(buf, info.typ)
		buf = append(buf, `,"message":`...)
		buf = appendString(buf, info.msg)
		buf = append(buf, `},"request_id":`...)
		buf = appendString(buf, c.requestID())
		buf = append(buf, '}')
	} else {
		buf = append(buf, `{"error":{"message":`...)
		buf = appendString(buf, info.msg)
		buf = append(buf, `,"type":`...)
		buf = appendString(buf, info.typ)
		buf = append(buf, `,"param":null,"code":`...)
		if info.code == "" {
			buf = append(buf, "null"...)
		} else {
			buf = appendString(buf, info.code)
		}
		buf = append(buf, "}}"...)
	}
	c.writeJSON(status, buf)
}

// capMessage is the 429 message for a concurrency cap.
func capMessage(d dialect, limit int) string {
	if d == dialectAnthropic {
		return "This request would exceed the concurrent request limit of " + strconv.Itoa(limit) + " for this API key. Please try again later."
	}
	return "Rate limit reached for concurrent requests: limit " + strconv.Itoa(limit) + ". Please try again in 100ms."
}

// cooldownMessage is the 429 message for a key cooling down.
func cooldownMessage(d dialect, wait time.Duration) string {
	ms := strconv.FormatInt(int64((wait+time.Millisecond-1)/time.Millisecond), 10)
	if d == dialectAnthropic {
		return "This request would exceed your organization's rate limit. Please try again in " + ms + "ms."
	}
	return "Rate limit reached for requests. Please try again in " + ms + "ms."
}
