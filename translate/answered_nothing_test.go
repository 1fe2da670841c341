package translate

import "testing"

// TestWholeAnswerThatSaysNothing: a whole answer that is no answer is the
// upstream's failure through every client dialect, passthrough and
// translated (ReadAnswer, TranslateResponseWith): an Anthropic message
// whose content is not an array, or is empty without a stop_reason; a
// Responses object whose output is not an array; a Chat answer with no
// choice and no block reason or usage. The same shapes that do say
// something stay answers.
func TestWholeAnswerThatSaysNothing(t *testing.T) {
	cases := []struct {
		from   Dialect
		body   string
		answer bool
	}{
		{AnthropicMessages, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}`, false},
		{AnthropicMessages, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[]}`, false},
		{AnthropicMessages, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":{},"stop_reason":"end_turn"}`, false},
		{AnthropicMessages, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":0}}`, true},
		{AnthropicMessages, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":null}`, true},
		{OpenAIResponses, `{"id":"resp_1","object":"response","status":"completed","model":"x","output":{}}`, false},
		{OpenAIResponses, `{"id":"resp_1","object":"response","status":"completed","model":"x"}`, false},
		{OpenAIResponses, `{"id":"resp_1","object":"response","status":"completed","model":"x","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}]}`, true},
		{OpenAIChat, `{"id":"c","object":"chat.completion","created":1,"model":"x","choices":[]}`, false},
		{OpenAIChat, `{"id":"c","object":"chat.completion","created":1,"model":"x","choices":[],"promptFeedback":{"blockReason":"SAFETY"}}`, true},
	}
	for _, c := range cases {
		for _, to := range allDialects {
			_, _, se, err := ReadAnswer(c.from, to, []byte(c.body), "m", ResponseOptions{})
			if se != nil {
				t.Errorf("%s -> %s %s: an error object %+v", c.from, to, c.body, se)
				continue
			}
			if (err == nil) != c.answer {
				t.Errorf("%s -> %s %s: err %v, want answer %v", c.from, to, c.body, err, c.answer)
			}
			_, _, err2 := TranslateResponseWith(c.from, to, []byte(c.body), "m", ResponseOptions{})
			if (err2 == nil) != c.answer {
				t.Errorf("TranslateResponseWith %s -> %s %s: err %v, want answer %v", c.from, to, c.body, err2, c.answer)
			}
		}
	}
}
