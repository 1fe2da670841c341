package translate

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackDec02cCaseFoldedKeys: a top-level member whose name differs
// from another's, or from a member the gateway routes on ("model",
// "stream", "stream_options"), only in letter case is refused like a
// duplicate. Go's encoding/json (the decoder of many OpenAI-compatible
// relays and local servers) matches member names case-insensitively,
// with Unicode folding (U+017F, the long s, folds to s), and the last
// match wins: {"model":"cheap-1","MODEL":"expensive"} was routed and
// scope-checked as cheap-1 and ran as expensive there, and a lone
// "Stream": true streamed an answer the gateway read as a whole one.
func TestAttackDec02cCaseFoldedKeys(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		d          Dialect
		body, name string
	}{
		{OpenAIChat, `{"model":"cheap-1","MODEL":"expensive",` + msgs + `}`, "MODEL"},
		{OpenAIChat, `{"Model":"expensive","model":"cheap-1",` + msgs + `}`, "Model"},
		{OpenAIChat, `{"model":"cheap-1","Stream":true,` + msgs + `}`, "Stream"},
		{OpenAIChat, `{"model":"cheap-1","stream":false,"ſtream":true,` + msgs + `}`, "ſtream"},
		{OpenAIChat, `{"model":"cheap-1","\u017ftream":true,` + msgs + `}`, "ſtream"},
		{OpenAIChat, `{"model":"cheap-1","stream":true,"Stream_Options":{"include_usage":false},` + msgs + `}`, "Stream_Options"},
		{OpenAIChat, `{"model":"cheap-1","tools":[],"TOOLS":[{"type":"function"}],` + msgs + `}`, "TOOLS"},
		{AnthropicMessages, `{"model":"cheap-1","max_tokens":5,"MODEL":"expensive",` + msgs + `}`, "MODEL"},
		{OpenAIResponses, `{"model":"cheap-1","input":"hi","mOdEl":"expensive"}`, "mOdEl"},
	} {
		// the mismatch this closes: what a Go upstream would read
		var up struct{ Model string }
		if json.Unmarshal([]byte(c.body), &up) == nil && up.Model == "expensive" {
			t.Logf("%s: encoding/json reads model %q", c.body, up.Model)
		}
		want := `request body has the field "` + c.name + `"`
		check := func(what string, err error) {
			t.Helper()
			e, ok := err.(*Error)
			if !ok || e == nil || e.Class != ErrInvalidRequest || !strings.HasPrefix(e.Message, want) || !strings.Contains(e.Message, "letter case") {
				t.Errorf("%s %s: %v, want %s ... letter case", what, c.body, err, want)
			}
		}
		_, err := ParseRequest(c.d, []byte(c.body))
		check("ParseRequest", err)
		_, err = ParseRequestFor(c.d, []byte(c.body), OpenAIChat)
		check("ParseRequestFor", err)
		check("ValidateRequest", ValidateRequest(c.d, []byte(c.body)))
		if e := CheckObject([]byte(c.body)); e != nil {
			check("CheckObject", e)
		} else {
			t.Errorf("CheckObject %s: accepted", c.body)
		}
	}
	// exact names, and members nested below the top level, stay as they were
	for _, c := range []struct {
		d    Dialect
		body string
	}{
		{OpenAIChat, `{"model":"a","stream":true,"stream_options":{"include_usage":true},` + msgs + `}`},
		{OpenAIChat, `{"model":"a",` + msgs + `,"metadata":{"Model":"x","model":"y"}}`},
		{OpenAIChat, `{"model":"a",` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"Model":{},"model":{}}}}}]}`},
	} {
		if _, err := ParseRequest(c.d, []byte(c.body)); err != nil {
			t.Errorf("ParseRequest refused %s: %v", c.body, err)
		}
		if err := ValidateRequest(c.d, []byte(c.body)); err != nil {
			t.Errorf("ValidateRequest refused %s: %v", c.body, err)
		}
	}
}

// TestAttackDec02cCaseFoldedKeysMany: past 32 top-level members (where the
// duplicate checks switch to a set) a case-folded duplicate is still found.
func TestAttackDec02cCaseFoldedKeysMany(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"model":"cheap-1","messages":[{"role":"user","content":"hi"}]`)
	for i := 0; i < 40; i++ {
		b.WriteString(`,"x_` + strings.Repeat("a", i+1) + `":1`)
	}
	b.WriteString(`,"X_AAAAA":2}`)
	body := []byte(b.String())
	if _, err := ParseRequest(OpenAIChat, body); err == nil || !strings.Contains(err.Error(), `"X_AAAAA"`) {
		t.Errorf("ParseRequest: %v", err)
	}
	if err := ValidateRequest(OpenAIChat, body); err == nil || !strings.Contains(err.Error(), `"X_AAAAA"`) {
		t.Errorf("ValidateRequest: %v", err)
	}
}

// TestStreamOptionsUsageRepeated: in an OpenAI Chat request's
// stream_options, an "include_usage" repeated, or a member that differs
// from it only in letter case, is refused. The gateway reads the first
// exact include_usage and sets it for its usage accounting
// (AddStreamUsage), an upstream decoding with Go's encoding/json the last
// match up to letter case: the streamed tokens of such a request went
// unbooked there. A stream_options with include_usage once, and other
// members, stays accepted.
func TestStreamOptionsUsageRepeated(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ body, want string }{
		{`{"model":"a","stream":true,"stream_options":{"include_usage":true,"Include_Usage":false},` + msgs + `}`, `"Include_Usage" in stream_options, which differs from "include_usage" only in letter case`},
		{`{"model":"a","stream":true,"stream_options":{"INCLUDE_USAGE":false},` + msgs + `}`, `"INCLUDE_USAGE" in stream_options, which differs`},
		{`{"model":"a","stream":true,"stream_options":{"include_usage":false,"include_usage":true},` + msgs + `}`, `"include_usage" in stream_options more than once`},
		{`{"model":"a","stream":true,"stream_options":{"include_usage":true,"include_\u0075sage":false},` + msgs + `}`, `"include_usage" in stream_options more than once`},
	} {
		// what the gateway would have sent, and what a Go upstream reads
		var up struct {
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		if sent, _ := AddStreamUsage([]byte(c.body)); json.Unmarshal(sent, &up) == nil && !up.StreamOptions.IncludeUsage {
			t.Logf("%s: a Go upstream reads include_usage false in %s", c.body, sent)
		}
		for what, err := range map[string]error{"ParseRequest": parseErr(ParseRequest(OpenAIChat, []byte(c.body))), "ValidateRequest": ValidateRequest(OpenAIChat, []byte(c.body))} {
			e, ok := err.(*Error)
			if !ok || e == nil || e.Class != ErrInvalidRequest || !strings.Contains(e.Message, c.want) {
				t.Errorf("%s %s: %v, want %s", what, c.body, err, c.want)
			}
		}
	}
	body := `{"model":"a","stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false},` + msgs + `}`
	if _, err := ParseRequest(OpenAIChat, []byte(body)); err != nil {
		t.Errorf("ParseRequest refused %s: %v", body, err)
	}
	if err := ValidateRequest(OpenAIChat, []byte(body)); err != nil {
		t.Errorf("ValidateRequest refused %s: %v", body, err)
	}
}

// parseErr is ParseRequest's error alone.
func parseErr(_ *Request, err error) error { return err }
