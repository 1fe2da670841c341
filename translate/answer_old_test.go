package translate

// The whole-answer read as it was before ReadAnswer (issue 15), kept
// verbatim as the reference the one-walk read is compared with
// (TestReadAnswerMatchesSteps) and measured against
// (BenchmarkTranslateAnswer): AnswerError, then TranslateResponseWith,
// whose decoders validated the body again and looked each member up with
// a separate gjson Get from the object's start.

import (
	"strings"

	"github.com/tidwall/gjson"
)

// answerByOldSteps is the sequence relayJSON ran on a non-streamed answer
// before ReadAnswer: AnswerError, then TranslateResponseWith (for a
// translated answer, with the decoders below).
func answerByOldSteps(from, to Dialect, body []byte, clientModel string, o ResponseOptions) ([]byte, Usage, *StreamError, error) {
	if se := AnswerError(from, body); se != nil {
		return nil, Usage{}, se, nil
	}
	if from == to {
		out, u, err := TranslateResponseWith(from, to, body, clientModel, o)
		return out, u, nil, err
	}
	resp, e := oldDecodeResponse(from, body)
	if e != nil {
		return nil, Usage{}, nil, e
	}
	out, u, err := encodeAnswer(resp, to, clientModel, o)
	return out, u, nil, err
}

func oldDecodeResponse(from Dialect, body []byte) (*canonResponse, *Error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, &Error{Class: ErrAPI, Message: "upstream returned a response that is not valid JSON"}
	}
	switch from {
	case OpenAIChat:
		return oldDecodeChatResponse(body)
	case AnthropicMessages:
		return oldDecodeAnthropicResponse(body)
	case OpenAIResponses:
		return oldDecodeResponsesResponse(body)
	}
	return nil, &Error{Class: ErrAPI, Message: sprintf("translation of %s responses is not supported", from)}
}

func oldDecodeChatResponse(body []byte) (*canonResponse, *Error) {
	root := gjson.Parse(view(body))
	choices := root.Get("choices")
	if !choices.IsArray() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response has no choices"}
	}
	resp := &canonResponse{id: root.Get("id").String(), model: root.Get("model").String(), created: root.Get("created").Int()}
	c := choices.Get("0")
	if !c.Exists() {
		// an answer without a choice (Gemini's, for a prompt its safety
		// filter blocks: see chatPassthroughError): no content, stopped
		// for the filter, as a stream of such chunks ends (content_filter
		// maps to refusal, MAPPING.md 3.3). Amended since with the rule of
		// chatPassthroughError: without a block reason or usage the
		// upstream answered nothing
		if !answerSaysWhy(root.Get("usage"), root.Get("promptFeedback"), root.Get("prompt_feedback")) {
			return nil, &Error{Class: ErrAPI, Message: msgNoChoiceAnswer}
		}
		resp.stop = stopRefusal
		if u := root.Get("usage"); u.IsObject() {
			resp.usage = oldChatUsage(u)
		}
		return resp, nil
	}
	if !c.IsObject() {
		return nil, &Error{Class: ErrAPI, Message: msgMalformedChoice} // amended likewise
	}
	if fr := c.Get("finish_reason"); fr.Type == gjson.String && fr.Str == "error" {
		// OpenRouter's failed generation: an upstream failure, as in a
		// stream (chatPassthroughError)
		return nil, &Error{Class: ErrAPI, Message: msgFinishError}
	}
	m := c.Get("message")
	if rc := chatReasoningText(m); rc != "" {
		resp.parts = append(resp.parts, canonPart{kind: partThinking, text: rc})
	}
	if t := m.Get("content"); t.Type == gjson.String && t.Str != "" {
		resp.parts = append(resp.parts, canonPart{kind: partText, text: t.Str})
	} else if t.IsArray() {
		t.ForEach(func(_, p gjson.Result) bool {
			if s := p.Get("text").String(); s != "" {
				resp.parts = append(resp.parts, canonPart{kind: partText, text: s})
			}
			return true
		})
	}
	refused := false
	if rf := m.Get("refusal"); rf.Type == gjson.String && rf.Str != "" {
		resp.parts = append(resp.parts, canonPart{kind: partText, text: rf.Str, refusal: true})
		refused = true
	}
	m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: tc.Get("id").String(),
			name: tc.Get("function.name").String(), args: tc.Get("function.arguments").String()})
		return true
	})
	resp.stop = stopFromChat(c.Get("finish_reason").String())
	if refused && resp.stop == stopEndTurn {
		resp.stop = stopRefusal
	}
	if u := root.Get("usage"); u.IsObject() {
		resp.usage = oldChatUsage(u)
	}
	return resp, nil
}

func oldDecodeAnthropicResponse(body []byte) (*canonResponse, *Error) {
	root := gjson.Parse(view(body))
	if root.Get("type").String() != "message" && !root.Get("content").IsArray() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response is not an Anthropic message"}
	}
	if e := anthropicAnsweredNothing(root.Get("content"), root.Get("stop_reason")); e != nil {
		return nil, e // amended since: a message that answered nothing
	}
	resp := &canonResponse{id: root.Get("id").String(), model: root.Get("model").String()}
	root.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "text":
			resp.parts = append(resp.parts, canonPart{kind: partText, text: b.Get("text").String()})
		case "thinking":
			resp.parts = append(resp.parts, canonPart{kind: partThinking, text: b.Get("thinking").String(), signature: b.Get("signature").String(), raw: b.Raw})
		case "redacted_thinking":
			resp.parts = append(resp.parts, canonPart{kind: partRedactedThinking, data: b.Get("data").String(), raw: b.Raw})
		case "tool_use":
			args := b.Get("input").Raw
			if args == "" {
				args = "{}"
			}
			resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: b.Get("id").String(), name: b.Get("name").String(), args: args})
		}
		return true
	})
	resp.stop = root.Get("stop_reason").String()
	if resp.stop == "" {
		resp.stop = stopEndTurn
	}
	resp.stopSeq = root.Get("stop_sequence").String()
	var au anthropicUsage
	au.oldAdd(root.Get("usage"))
	resp.usage = au.usage()
	return resp, nil
}

func oldDecodeResponsesResponse(body []byte) (*canonResponse, *Error) {
	root := fieldsOf(gjson.Parse(view(body)))
	output := root.get("output")
	if root.get("object").Str != "response" && !output.IsArray() {
		return nil, &Error{Class: ErrAPI, Message: "upstream response is not an OpenAI Responses response object"}
	}
	status := root.get("status").Str
	switch status {
	case "failed":
		e := root.get("error")
		code := sanitizeErrorName(errStr(e.Get("code")))
		msg := ScrubSecrets(e.Get("message").String())
		return nil, &Error{Class: classForErrorType("", code), Message: firstNonEmpty(msg, "upstream response failed"), Code: code}
	case "cancelled", "queued", "in_progress":
		return nil, &Error{Class: ErrAPI, Message: sprintf("upstream response has status %q, not an answer", clip(status))}
	}
	if e := responsesNoOutput(output); e != nil {
		return nil, e // amended since: no output array, no answer
	}
	resp := &canonResponse{id: root.get("id").String(), model: root.get("model").String(), created: root.get("created_at").Int()}
	refused, called := false, false
	output.ForEach(func(_, it gjson.Result) bool {
		switch it.Get("type").Str {
		case "message":
			it.Get("content").ForEach(func(_, c gjson.Result) bool {
				switch c.Get("type").Str {
				case "output_text", "text":
					if s := c.Get("text").String(); s != "" {
						resp.parts = append(resp.parts, canonPart{kind: partText, text: s})
					}
				case "refusal":
					if s := c.Get("refusal").String(); s != "" {
						resp.parts = append(resp.parts, canonPart{kind: partText, text: s, refusal: true})
						refused = true
					}
				}
				return true
			})
		case "function_call":
			called = true
			resp.parts = append(resp.parts, canonPart{kind: partToolCall, id: it.Get("call_id").String(),
				name: it.Get("name").String(), args: it.Get("arguments").String()})
		case "reasoning":
			if p, ok := rsReasoningPart(oldReasoningText(it), it.Get("encrypted_content").String()); ok {
				resp.parts = append(resp.parts, p)
			}
		}
		return true
	})
	resp.stop = rsStopReason(status, root.get("incomplete_details").Get("reason").Str, called, refused)
	if u := root.get("usage"); u.IsObject() {
		resp.usage = oldResponsesUsage(u)
	}
	return resp, nil
}

func oldReasoningText(it gjson.Result) string {
	var sb strings.Builder
	n := 0
	it.Get("summary").ForEach(func(_, s gjson.Result) bool {
		if n > 0 {
			sb.WriteString("\n\n")
		}
		n++
		sb.WriteString(s.Get("text").String())
		return true
	})
	if sb.Len() == 0 {
		it.Get("content").ForEach(func(_, s gjson.Result) bool {
			sb.WriteString(s.Get("text").String())
			return true
		})
	}
	return sb.String()
}

// The usage readers as they were before usageLookup: a gjson Get per path.

func oldChatUsage(u gjson.Result) Usage {
	var out Usage
	out.InputTokens = intAt(u.Get("prompt_tokens"))
	out.OutputTokens = intAt(u.Get("completion_tokens"))
	out.CacheReadTokens = intAt(u.Get("prompt_tokens_details.cached_tokens"))
	if out.CacheReadTokens == nil {
		out.CacheReadTokens = intAt(u.Get("prompt_cache_hit_tokens"))
	}
	out.CacheWriteTokens = intAt(u.Get("prompt_tokens_details.cache_write_tokens"))
	out.ReasoningTokens = intAt(u.Get("completion_tokens_details.reasoning_tokens"))
	return out
}

func oldResponsesUsage(u gjson.Result) Usage {
	var out Usage
	out.InputTokens = intAt(u.Get("input_tokens"))
	out.OutputTokens = intAt(u.Get("output_tokens"))
	out.CacheReadTokens = intAt(u.Get("input_tokens_details.cached_tokens"))
	out.CacheWriteTokens = intAt(u.Get("input_tokens_details.cache_write_tokens"))
	out.ReasoningTokens = intAt(u.Get("output_tokens_details.reasoning_tokens"))
	return out
}

var oldAnthropicUsagePaths = [5]string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens_details.thinking_tokens"}

func (a *anthropicUsage) oldAdd(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	for i, p := range oldAnthropicUsagePaths {
		if r := u.Get(p); r.Type == gjson.Number {
			a.v[i], a.set[i] = r.Int(), true
		}
	}
}

// chatReasoningText is how the former decoder read a message's reasoning
// (one gjson Get per field).
func chatReasoningText(m gjson.Result) string {
	return chatReasoning(m.Get("reasoning_content"), m.Get("reasoning"), m.Get("reasoning_details"))
}
