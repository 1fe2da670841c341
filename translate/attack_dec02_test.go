package translate

import (
	"bytes"
	"strings"
	"testing"
)

// TestAttackDec02PassthroughRepeatedMember: a whole passthrough answer
// that repeats a member it is read by (a good "choices" then an empty
// one, a "content" then an empty one, a completed "status" then
// "failed", an "output" then an empty one, the upstream's "model" after
// the one renamed, and the reverse orders). The gateway reads the first
// copy, a client's JSON reader the last: relayed, it would be a 200 the
// client reads as empty, failed, or naming the upstream's model. It is
// the upstream's failure (ErrAPI) in both reads (PassthroughAnswer and
// the steps, ReadAnswer from == to), never relayed; translated, the
// gateway writes the answer anew and one reading holds.
func TestAttackDec02PassthroughRepeatedMember(t *testing.T) {
	chatChoice := `[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}]`
	anContent := `[{"type":"text","text":"Paris"}]`
	rsOutput := `[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Paris","annotations":[]}]}]`
	cases := []struct {
		d    Dialect
		body string
	}{
		{OpenAIChat, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":` + chatChoice + `,"choices":[]}`},
		{OpenAIChat, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"choices":` + chatChoice + `}`},
		{OpenAIChat, `{"id":"c","object":"chat.completion","created":1,"model":"alias","choices":` + chatChoice + `,"model":"secret-upstream-model"}`},
		{OpenAIChat, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":` + chatChoice + `,"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`},
		{AnthropicMessages, `{"id":"m","type":"message","role":"assistant","model":"m","content":` + anContent + `,"stop_reason":"end_turn","content":[]}`},
		{AnthropicMessages, `{"id":"m","type":"message","role":"assistant","model":"m","content":` + anContent + `,"stop_reason":"end_turn","type":"error"}`},
		{OpenAIResponses, `{"id":"r","object":"response","status":"completed","model":"m","output":` + rsOutput + `,"status":"failed"}`},
		{OpenAIResponses, `{"id":"r","object":"response","status":"completed","model":"m","output":` + rsOutput + `,"output":[]}`},
	}
	for _, c := range cases {
		for _, model := range []string{"", "alias"} {
			out, _, se, err := PassthroughAnswer(c.d, []byte(c.body), model)
			e, ok := err.(*Error)
			if se != nil || !ok || e.Class != ErrAPI || out != nil {
				t.Errorf("%s %s, model %q: out %s se %v err %v", c.d, c.body, model, out, se, err)
			}
			out2, _, se2, err2 := ReadAnswer(c.d, c.d, []byte(c.body), model, ResponseOptions{})
			if out2 != nil || se2 != nil || err2 == nil || err2.Error() != err.Error() {
				t.Errorf("%s %s: ReadAnswer %s %v %v", c.d, c.body, out2, se2, err2)
			}
		}
		// translated to another dialect: the gateway writes one answer
		// (the first copy's), so nothing reads two ways
		for _, to := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
			if to == c.d {
				continue
			}
			out, _, _, err := ReadAnswer(c.d, to, []byte(c.body), "alias", ResponseOptions{})
			if err == nil && (bytes.Count(out, []byte(`"model"`)) > 2 || strings.Contains(string(out), "secret-upstream-model")) {
				t.Errorf("%s to %s: %s", c.d, to, out)
			}
		}
	}
	// a repeated member the answer is not read by is relayed as sent
	ok := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":` + chatChoice + `,"system_fingerprint":"a","system_fingerprint":"b"}`
	if out, _, se, err := PassthroughAnswer(OpenAIChat, []byte(ok), ""); se != nil || err != nil || string(out) != ok {
		t.Errorf("unread member repeated: %s %v %v", out, se, err)
	}
}
