package translate

// ValidateRequest checks a client request body of dialect d as thoroughly
// as TranslateRequest does when it translates (JSON shape, field types,
// messages/input present, tool results paired with a preceding tool call,
// base64 image data that decodes), without building any output. The
// gateway calls it for same-dialect passthrough, so a request that would
// be rejected when translated is rejected the same way when it is not, and
// never reaches an upstream.
//
// Errors are *Error values with client-facing messages (class
// ErrInvalidRequest or ErrRequestTooLarge).
func ValidateRequest(d Dialect, body []byte) error {
	if e := checkBody(body); e != nil {
		return e
	}
	if !d.valid() {
		return invalid("", "unknown dialect")
	}
	req, e := decodeRequest(d, body)
	if e != nil {
		if e.untranslatable {
			// valid in its own dialect, only untranslatable: the upstream
			// of the same dialect judges the rest
			return nil
		}
		return e
	}
	if e := req.validate(); e != nil {
		return e
	}
	return nil
}
