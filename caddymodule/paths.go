package caddymodule

import "strings"

// unversionedPath reports whether path is one of the API paths that many
// SDKs and apps send when their base URL lacks "/v1" (/chat/completions,
// /messages, /messages/count_tokens, /responses, /models, a trailing
// slash tolerated): the gateway serves them as their /v1 forms.
func unversionedPath(path string) bool {
	switch strings.TrimSuffix(path, "/") {
	case "/chat/completions", "/messages", "/messages/count_tokens", "/responses", "/models":
		return true
	}
	return false
}
