package translate

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
)

// defaultAnthropicMaxTokens is sent when a request translated to Anthropic
// carries no output limit (Anthropic requires max_tokens).
const defaultAnthropicMaxTokens = 8192

// thinkingBudgets maps a reasoning effort to an Anthropic budget_tokens for
// models that take {type:"enabled", budget_tokens}.
func thinkingBudget(effort string) int64 {
	switch effort {
	case "low":
		return 2048
	case "medium":
		return 8192
	case "high":
		return 16384
	}
	return 32768 // xhigh, max
}

// anthropicAdaptive reports whether an Anthropic model name is Claude 4.6 or
// later, which takes thinking {type:"adaptive"} plus output_config.effort
// and rejects budget_tokens (Anthropic "Extended thinking" and "Effort"
// docs). Names it cannot parse get the older form.
func anthropicAdaptive(model string) bool {
	major, minor := claudeVersion(model)
	return major > 4 || (major == 4 && minor >= 6)
}

// anthropicOneSampler reports whether an Anthropic model name is Claude 4.1
// or later, which refuses temperature and top_p in one request
// ("temperature and top_p cannot both be specified for this model");
// earlier Claude models and other vendors' models on an Anthropic-dialect
// endpoint take both.
func anthropicOneSampler(model string) bool {
	major, minor := claudeVersion(model)
	return major > 4 || (major == 4 && minor >= 1)
}

// claudeVersion reads the version of a Claude model name ("claude-opus-4-1",
// "claude-sonnet-4-5-20250929", "claude-3-5-haiku"): major -1 when the name
// is not a Claude model's; a date or word after the major number is not a
// minor one (minor 0).
func claudeVersion(model string) (major, minor int) {
	m := strings.ToLower(model)
	i := strings.Index(m, "claude-")
	if i < 0 {
		return -1, 0
	}
	major = -1
	for _, tok := range strings.Split(m[i+len("claude-"):], "-") {
		n, err := strconv.Atoi(tok)
		if err != nil || len(tok) > 2 {
			if major >= 0 {
				break
			}
			continue
		}
		if major < 0 {
			major = n
			continue
		}
		minor = n
		break
	}
	return major, minor
}

// jsonObjectInstruction is the system text an Anthropic request gets for
// an OpenAI client's JSON mode (Chat response_format, Responses
// text.format {"type":"json_object"}). Anthropic's structured outputs
// (output_config.format) take only a JSON schema whose objects are
// closed, so a schema-less "any JSON object" has no parameter there; a
// json_schema format goes to output_config.format instead. OpenAI's JSON
// mode itself requires the word JSON in the conversation, so the client
// already asks for JSON; the instruction keeps Claude from wrapping it
// in prose or a Markdown fence, which a client that parses the content
// as JSON cannot read.
const jsonObjectInstruction = "Respond with a single valid JSON object and nothing else: no text and no Markdown code fence before or after it."

// encodeAnthropicRequest builds an Anthropic Messages request from the
// canonical form.
func encodeAnthropicRequest(r *canonRequest) ([]byte, error) {
	b := make([]byte, 0, outputSize(r))
	b = append(b, `{"model":`...)
	b = appendString(b, r.model)

	thinking := r.effort != "" && r.effort != "none" && r.effort != "minimal" && !r.thinkingOff && thinkingReplayable(r)
	maxTokens := r.maxTokens
	if maxTokens <= 0 {
		maxTokens = defaultAnthropicMaxTokens
	}
	adaptive := anthropicAdaptive(r.model)
	var budget int64
	if thinking && !adaptive {
		budget = r.thinkingBudget
		if budget < 1024 {
			budget = thinkingBudget(r.effort)
		}
		if maxTokens <= budget {
			maxTokens += budget
		}
	}
	b = appendIntField(b, "max_tokens", maxTokens)

	// system: the leading prompt plus every system message from the middle of
	// the conversation, hoisted in order (Anthropic has one system field).
	nsys := 0
	appendSys := func(p *canonPart) {
		if p.kind != partText || isBlank(p.text) {
			return
		}
		if nsys == 0 {
			b = append(b, `,"system":[`...)
		} else {
			b = append(b, ',')
		}
		nsys++
		b = appendAnthropicText(b, p.text, p.cache)
	}
	for i := range r.system {
		appendSys(&r.system[i])
	}
	for i := range r.messages {
		if r.messages[i].role == "system" {
			for j := range r.messages[i].parts {
				appendSys(&r.messages[i].parts[j])
			}
		}
	}
	if r.formatType == "json_object" {
		// JSON mode (see jsonObjectInstruction): the last system block
		appendSys(&canonPart{kind: partText, text: jsonObjectInstruction})
	}
	if nsys > 0 {
		b = append(b, ']')
	}

	b = append(b, `,"messages":[`...)
	var err *Error
	b, err = appendAnthropicMessages(b, trimPrefill(r.messages))
	if err != nil {
		return nil, err
	}
	b = append(b, ']')

	if len(r.tools) == 0 {
		// Anthropic rejects tool_use/tool_result history without tool
		// definitions; declare the tools the history used and forbid new
		// calls, as the client offered none.
		if names := historyToolNames(r.messages); len(names) > 0 {
			b = append(b, `,"tools":[`...)
			for i, n := range names {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"name":`...)
				b = appendString(b, n)
				b = append(b, `,"input_schema":{"type":"object","properties":{}}}`...)
			}
			b = append(b, `],"tool_choice":{"type":"none"}`...)
		}
	}
	if len(r.tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range r.tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, t.name)
			if t.description != "" {
				b = appendStrField(b, "description", t.description)
			}
			b = appendRawField(b, "input_schema", normSchema(t.schema))
			if t.cache != "" {
				b = appendRawField(b, "cache_control", t.cache)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
		choice := r.toolChoice
		if thinking && (choice == "any" || choice == "tool") {
			choice = "auto" // forced tool use is incompatible with thinking
		}
		if choice == "" && r.parallel != nil && !*r.parallel {
			choice = "auto"
		}
		if choice != "" {
			b = append(b, `,"tool_choice":{"type":"`...)
			b = append(b, choice...)
			b = append(b, '"')
			if choice == "tool" {
				b = appendStrField(b, "name", r.toolChoiceName)
			}
			if r.parallel != nil && !*r.parallel && choice != "none" {
				b = append(b, `,"disable_parallel_tool_use":true`...)
			}
			b = append(b, '}')
		}
	}
	if !thinking {
		if r.temperature != "" {
			t := r.temperature
			if f, err := strconv.ParseFloat(t, 64); err == nil && f > 1 {
				t = "1" // Anthropic's range is 0..1
			}
			b = appendRawField(b, "temperature", t)
		}
		if r.topP != "" && (r.temperature == "" || !anthropicOneSampler(r.model)) {
			// Claude 4.1 and later refuse temperature and top_p together,
			// which OpenAI accepts: temperature is kept (anthropicOneSampler)
			b = appendRawField(b, "top_p", r.topP)
		}
		if r.topK != "" {
			b = appendRawField(b, "top_k", r.topK)
		}
	}
	nstop := 0
	for _, s := range r.stop {
		if isBlank(s) {
			continue // Anthropic rejects whitespace-only stop sequences
		}
		if nstop == 0 {
			b = append(b, `,"stop_sequences":[`...)
		} else {
			b = append(b, ',')
		}
		nstop++
		b = appendString(b, s)
	}
	if nstop > 0 {
		b = append(b, ']')
	}
	if r.user != "" {
		b = append(b, `,"metadata":{"user_id":`...)
		b = appendString(b, anthropicUserID(r.user))
		b = append(b, '}')
	}
	effortOut := ""
	if thinking {
		if adaptive {
			b = append(b, `,"thinking":{"type":"adaptive"}`...)
			effortOut = r.effort
			if r.thinkingBudget >= 1024 {
				// an explicit budget (a Chat client's, see chatThinking)
				// wins over the effort it came with
				effortOut = effortForBudget(r.thinkingBudget)
			}
			if effortOut == "xhigh" {
				effortOut = "max"
			}
		} else {
			b = append(b, `,"thinking":{"type":"enabled","budget_tokens":`...)
			b = strconv.AppendInt(b, budget, 10)
			b = append(b, '}')
		}
	}
	if effortOut != "" || (r.formatType == "json_schema" && r.formatSchema != "") {
		b = append(b, `,"output_config":{`...)
		if effortOut != "" {
			b = appendStrField(b, "effort", effortOut)
		}
		if r.formatType == "json_schema" && r.formatSchema != "" {
			b = appendKey(b, "format")
			b = append(b, `{"type":"json_schema","schema":`...)
			b = append(b, closedObjects(r.formatSchema)...)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if r.stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), nil
}

// thinkingReplayable reports whether thinking can be turned on for this
// history: Anthropic requires the assistant turn of an ongoing tool loop to
// start with a signed thinking block once thinking is enabled, so when the
// last assistant turn made tool calls without one, thinking stays off.
func thinkingReplayable(r *canonRequest) bool {
	for i := len(r.messages) - 1; i >= 0; i-- {
		m := &r.messages[i]
		if m.role != "assistant" {
			continue
		}
		hasCall, signed := false, false
		for j := range m.parts {
			switch p := &m.parts[j]; p.kind {
			case partToolCall:
				hasCall = true
			case partThinking, partRedactedThinking:
				signed = signed || anthropicReplayable(p)
			}
		}
		return !hasCall || signed
	}
	return true
}

// appendAnthropicText appends a text block.
func appendAnthropicText(b []byte, text, cache string) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = appendString(b, text)
	if cache != "" {
		b = appendRawField(b, "cache_control", cache)
	}
	return append(b, '}')
}

// appendAnthropicMessages appends the conversation: system messages are
// skipped (hoisted), consecutive turns of the same role are merged, tool
// results go first in their user turn, blank text blocks are dropped and
// turns left empty are skipped. Blocks are written straight into b (no
// per-turn buffer: a turn may be most of a large request). An assistant
// turn's signed thinking goes first (see leadingThinking), also when it
// comes from a later message merged into the turn (a system message
// hoisted from between two assistant messages leaves them adjacent).
func appendAnthropicMessages(b []byte, msgs []canonMessage) ([]byte, *Error) {
	lastRole := ""
	open := false
	// the open turn: where its blocks start, whether its first block is
	// thinking, whether it holds a tool call
	var turnBlocks int
	var turnThinking, turnCalled bool
	var moved []byte // thinking moved to the front of a merged turn
	for i := range msgs {
		m := &msgs[i]
		if m.role == "system" {
			continue
		}
		start := len(b)
		merge := open && lastRole == m.role
		if merge {
			b = b[:len(b)-2] // reopen the previous turn: drop its closing "]}"
		} else {
			b = appendComma(b)
			b = append(b, `{"role":"`...)
			b = append(b, m.role...)
			b = append(b, `","content":[`...)
			turnBlocks, turnThinking, turnCalled = len(b), false, false
		}
		blocks := len(b)
		// tool results first (Anthropic parallel tool use docs); in an
		// assistant turn, signed thinking first (see leadingThinking); in a
		// merged assistant turn that does not start with thinking (and has
		// made no tool call yet), this message's leading thinking moves to
		// the turn's front
		assistant := m.role == "assistant"
		thinking, late := false, false
		if assistant {
			thinking, late = leadingThinking(m.parts)
		}
		front := thinking && merge && !turnThinking && !turnCalled
		hoist := !front && late
		firstCall := len(m.parts) // thinking after it keeps its place
		if hoist || front {
			for j := range m.parts {
				if m.parts[j].kind == partToolCall {
					firstCall = j
					break
				}
			}
		}
		var err *Error
		for pass := 0; pass < 2; pass++ {
			for j := range m.parts {
				p := &m.parts[j]
				first := p.kind == partToolResult
				if hoist || front {
					first = (p.kind == partThinking || p.kind == partRedactedThinking) && j < firstCall
				}
				if first != (pass == 0) {
					continue
				}
				if front && first {
					if moved, err = appendAnthropicBlock(moved, p, i, j); err != nil {
						return nil, err
					}
					continue
				}
				at := len(b)
				if b, err = appendAnthropicBlock(b, p, i, j); err != nil {
					return nil, err
				}
				if len(b) > at && assistant {
					if at == turnBlocks {
						turnThinking = p.kind == partThinking || p.kind == partRedactedThinking
					}
					turnCalled = turnCalled || p.kind == partToolCall
				}
			}
		}
		if len(moved) > 0 {
			// the merged turn starts with text: its blocks follow the
			// thinking (the turn is not empty, so a comma joins them)
			moved = append(moved, ',')
			b = append(b, moved...) // grow b by len(moved), then shift
			copy(b[turnBlocks+len(moved):], b[turnBlocks:len(b)-len(moved)])
			copy(b[turnBlocks:], moved)
			moved, turnThinking = moved[:0], true
		}
		switch {
		case len(b) > blocks:
			b = append(b, "]}"...)
			lastRole = m.role
			open = true
		case merge:
			b = append(b, "]}"...) // nothing to add to the previous turn
		default:
			b = b[:start] // an empty turn is skipped
		}
	}
	return b, nil
}

// leadingThinking reports whether ps holds replayable thinking before its
// first tool call (found), and whether another block (non-blank text, or
// any other kind) comes before that thinking (late). late is when an
// assistant turn's replayable thinking must be moved ahead of what
// precedes it: Anthropic refuses a turn that holds thinking blocks but
// starts with another block ("the first block must be thinking or
// redacted_thinking"), which happens when a client kept a turn's text
// and its tool calls (with the thinking) in two messages. Only thinking
// before the turn's first tool call moves, so thinking interleaved
// between tool calls keeps its place.
func leadingThinking(ps []canonPart) (found, late bool) {
	for i := range ps {
		switch p := &ps[i]; p.kind {
		case partToolCall:
			return false, false
		case partThinking, partRedactedThinking:
			if anthropicReplayable(p) {
				return true, late
			}
		case partText:
			late = late || !isBlank(p.text)
		default:
			late = true
		}
	}
	return false, false
}

// appendAnthropicBlock appends one content block (with a leading comma when
// needed), or nothing for a part Anthropic cannot take.
func appendAnthropicBlock(b []byte, p *canonPart, mi, pi int) ([]byte, *Error) {
	switch p.kind {
	case partText:
		if isBlank(p.text) {
			return b, nil
		}
		return appendAnthropicText(appendComma(b), p.text, p.cache), nil
	case partImage, partDocument:
		return appendAnthropicMedia(appendComma(b), p), nil
	case partThinking, partRedactedThinking:
		if !anthropicReplayable(p) {
			return b, nil // unsigned (or OpenAI) reasoning cannot be replayed to Anthropic
		}
		return append(appendComma(b), p.raw...), nil
	case partToolCall:
		args := p.args
		if isBlank(args) {
			args = "{}"
		} else if !validArgsObject(args) {
			return nil, invalid("messages", "messages[%d]: arguments of tool call %q are not a JSON object", mi, clip(p.id))
		}
		b = appendComma(b)
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendString(b, anthropicToolID(p.id))
		b = appendStrField(b, "name", p.name)
		b = appendRawField(b, "input", args)
		if p.cache != "" {
			b = appendRawField(b, "cache_control", p.cache)
		}
		return append(b, '}'), nil
	case partToolResult:
		b = appendComma(b)
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = appendString(b, anthropicToolID(p.id))
		allText := true
		for k := range p.content {
			if p.content[k].kind != partText {
				allText = false
			}
		}
		if allText {
			// a blank result is sent without content: Anthropic rejects
			// whitespace-only text
			if !blankText(p.content) {
				b = appendTextOf(appendKey(b, "content"), "", p.content, "\n")
			}
		} else {
			b = append(b, `,"content":[`...)
			for k := range p.content {
				c := &p.content[k]
				switch c.kind {
				case partText:
					if !isBlank(c.text) {
						b = appendAnthropicText(appendComma(b), c.text, "")
					}
				case partImage, partDocument:
					b = appendAnthropicMedia(appendComma(b), c)
				}
			}
			b = append(b, ']')
		}
		if p.isError {
			b = append(b, `,"is_error":true`...)
		}
		if p.cache != "" {
			b = appendRawField(b, "cache_control", p.cache)
		}
		return append(b, '}'), nil
	}
	return b, nil
}

// appendAnthropicMedia appends an image or document block.
func appendAnthropicMedia(b []byte, p *canonPart) []byte {
	if p.kind == partImage {
		b = append(b, `{"type":"image","source":`...)
	} else {
		b = append(b, `{"type":"document","source":`...)
	}
	switch {
	case p.data != "":
		b = append(b, `{"type":"base64","media_type":`...)
		mt := p.mediaType
		if p.kind == partImage {
			mt = anthropicImageType(mt, p.data)
		}
		b = appendString(b, mt)
		b = appendStrField(b, "data", p.data)
		b = append(b, '}')
	case p.url != "":
		b = append(b, `{"type":"url","url":`...)
		b = appendString(b, p.url)
		b = append(b, '}')
	default:
		b = append(b, `{"type":"text","media_type":"text/plain","data":`...)
		b = appendString(b, p.text)
		b = append(b, '}')
	}
	if p.kind == partDocument && p.filename != "" {
		b = appendStrField(b, "title", p.filename)
	}
	if p.cache != "" {
		b = appendRawField(b, "cache_control", p.cache)
	}
	return append(b, '}')
}

// encodeAnthropicResponse builds an Anthropic "message" object.
func encodeAnthropicResponse(r *canonResponse) []byte {
	b := make([]byte, 0, answerSize(r))
	b = append(b, `{"id":`...)
	b = appendString(b, withPrefix("msg_", r.id))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, r.model)
	b = append(b, `,"content":[`...)
	for i := range r.parts {
		p := &r.parts[i]
		switch p.kind {
		case partText:
			if p.text == "" {
				continue
			}
			b = appendAnthropicText(appendComma(b), p.text, "")
		case partThinking:
			b = appendComma(b)
			b = append(b, `{"type":"thinking","thinking":`...)
			b = appendString(b, p.text)
			b = appendStrField(b, "signature", p.signature)
			b = append(b, '}')
		case partRedactedThinking:
			b = appendComma(b)
			b = append(b, `{"type":"redacted_thinking","data":`...)
			b = appendString(b, p.data)
			b = append(b, '}')
		case partToolCall:
			args := p.args
			if !validArgsObject(args) {
				args = "{}" // truncated (max_tokens) or empty arguments
			}
			b = appendComma(b)
			b = append(b, `{"type":"tool_use","id":`...)
			b = appendString(b, anthropicToolID(p.id))
			b = appendStrField(b, "name", p.name)
			b = appendRawField(b, "input", args)
			b = append(b, '}')
		}
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, r.stop...)
	b = append(b, `","stop_sequence":`...)
	if r.stopSeq != "" {
		b = appendString(b, r.stopSeq)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"usage":`...)
	b = appendAnthropicUsage(b, r.usage, true)
	return append(b, '}')
}

// historyToolNames returns the distinct tool names called in msgs, in order.
func historyToolNames(msgs []canonMessage) []string {
	var names []string
	for i := range msgs {
		for j := range msgs[i].parts {
			p := &msgs[i].parts[j]
			if p.kind != partToolCall || p.name == "" {
				continue
			}
			seen := false
			for _, n := range names {
				if n == p.name {
					seen = true
					break
				}
			}
			if !seen {
				names = append(names, p.name)
			}
		}
	}
	return names
}

// anthropicImageType is the media_type to send Anthropic for a base64
// image labelled declared: the type the first bytes of data show (PNG,
// JPEG, GIF or WebP signature), since Anthropic refuses an image whose
// bytes do not match its media_type; else declared, lower-cased, with
// the common image/jpg label written image/jpeg (Anthropic takes only
// image/jpeg, image/png, image/gif and image/webp; Anthropic Messages API
// reference, image source).
func anthropicImageType(declared, data string) string {
	if t := sniffImageType(data); t != "" {
		return t
	}
	mt := strings.ToLower(strings.TrimSpace(declared))
	if mt == "image/jpg" || mt == "image/pjpeg" {
		return "image/jpeg"
	}
	return mt
}

// sniffImageType returns the image type whose signature starts the
// base64 payload data ("" when none does): it decodes only the first 16
// bytes.
func sniffImageType(data string) string {
	var prefix [24]byte // 24 base64 characters = 18 bytes
	n := 0
	for i := 0; i < len(data) && n < len(prefix); i++ {
		if c := data[i]; c != '\r' && c != '\n' {
			prefix[n] = c
			n++
		}
	}
	n -= n % 4
	var head [18]byte
	m, err := base64.StdEncoding.Decode(head[:], prefix[:n])
	if err != nil && m == 0 {
		return ""
	}
	h := head[:m]
	switch {
	case bytes.HasPrefix(h, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(h, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	case bytes.HasPrefix(h, []byte("GIF87a")), bytes.HasPrefix(h, []byte("GIF89a")):
		return "image/gif"
	case len(h) >= 12 && string(h[:4]) == "RIFF" && string(h[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}
