package translate

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxAnthropicUserID is the longest metadata.user_id Anthropic accepts,
// in bytes (per Anthropic Messages API reference, metadata.user_id:
// maxLength 256).
const maxAnthropicUserID = 256

// anthropicUserID returns the metadata.user_id to send Anthropic for an
// end-user id u read from another dialect (OpenAI user or
// safety_identifier). Anthropic asks for "a uuid, hash value, or other
// opaque identifier" with no name, email address or phone number, and
// refuses one that looks like an email (400 "user_id appears to contain
// an email address"). An id of 1 to 256 ASCII letters, digits, '-' and
// '_' (a uuid, a hash, an internal number) is sent as it is; any other
// ("me@example.com", "John Smith", "+1 555 0100", one too long) as the
// 64 hex digits of its SHA-256, so one end user still maps to one
// opaque id and the id itself never leaves the gateway.
func anthropicUserID(u string) string {
	if len(u) <= maxAnthropicUserID && opaqueID(u) {
		return u
	}
	sum := sha256.Sum256([]byte(u))
	return hex.EncodeToString(sum[:])
}

// opaqueID reports whether s is non-empty and only ASCII letters, digits,
// '-' and '_'.
func opaqueID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
