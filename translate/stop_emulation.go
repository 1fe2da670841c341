package translate

import (
	"strings"
	"unicode/utf8"
)

// Stop-sequence emulation. A client's stop strings do not always reach
// the upstream: OpenAI Responses has no stop parameter, OpenAI reasoning
// models refuse stop ("Unsupported parameter: 'stop' is not supported with
// this model."), Anthropic refuses whitespace-only stop sequences, and
// OpenAI Chat takes at most 4. Dropped silently, the model runs on past
// the stop (LiteLLM issue 37118). The gateway then applies them itself
// (ResponseOptions.EmulateStops, Request.UnsentStopSequences): the text is
// cut before the first stop string it holds and the turn ends as a stop
// sequence ends it in the client's dialect. The Request, which encodes the
// upstream body, says which strings the upstream was not sent; stop
// strings the upstream took are left to it (no double work), and a
// passthrough is never touched.

// stopCutter is a stream's stop-sequence emulation state (canonStream.cut).
type stopCutter struct {
	stops  []string // the strings to cut at, none empty; nil: off
	maxLen int      // the longest one's length in bytes
	tail   []byte   // text of the open text block held back: it may begin a stop string
	hit    bool     // a stop string matched: the turn is over
}

// set arms the cutter with stops (ResponseOptions.EmulateStops).
func (c *stopCutter) set(stops []string) {
	c.stops, c.maxLen, c.tail, c.hit = nonEmpty(stops), 0, nil, false
	for _, s := range c.stops {
		c.maxLen = max(c.maxLen, len(s))
	}
}

// nonEmpty returns stops without its empty strings (stops itself when it
// has none; nil when nothing is left).
func nonEmpty(stops []string) []string {
	n := 0
	for _, s := range stops {
		if s != "" {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(stops):
		return stops
	}
	out := make([]string, 0, n)
	for _, s := range stops {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// firstStop returns where in text the turn ends (the start of the stop
// string that is completed first, as a model that checks its stop strings
// after each token stops there; of two that end at the same byte, the
// longer) and that stop string; "" when text holds none.
func firstStop(text string, stops []string) (at int, stop string) {
	end := -1
	for _, s := range stops {
		i := strings.Index(text, s)
		if i < 0 {
			continue
		}
		if e := i + len(s); end < 0 || e < end || e == end && i < at {
			at, stop, end = i, s, e
		}
	}
	return at, stop
}

// holdLen is how many bytes at the end of text may still begin a stop
// string (the longest suffix of text that is a proper prefix of one), at
// most maxLen-1, widened to start on a UTF-8 boundary.
func holdLen(text string, stops []string, maxLen int) int {
	from := max(len(text)-(maxLen-1), 0)
	cut := len(text)
	for j := from; j < len(text) && j < cut; j++ {
		for _, s := range stops {
			if len(s) > len(text)-j && text[j] == s[0] && strings.HasPrefix(s, text[j:]) {
				cut = j
				break
			}
		}
	}
	for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return len(text) - cut
}

// cutText is delta for a text delta s to the open text block b while stop
// strings are emulated: the text up to a stop string, or all but the tail
// that may begin one, is sent at once; a match ends the turn (finish with
// stop_sequence), and the held tail goes out when the block closes.
func (cs *canonStream) cutText(b *streamBlock, s string) {
	c := &cs.cut
	text := s
	if len(c.tail) > 0 {
		c.tail = append(c.tail, s...)
		text = view(c.tail)
	}
	if at, stop := firstStop(text, c.stops); stop != "" {
		if at > 0 {
			cs.send(b, deltaText, text[:at])
		}
		c.tail, c.hit = c.tail[:0], true
		cs.finish(stopSequence, stop)
		return
	}
	h := holdLen(text, c.stops, c.maxLen)
	if n := len(text) - h; n > 0 {
		cs.send(b, deltaText, text[:n])
	}
	if len(c.tail) == 0 {
		c.tail = append(c.tail, text[len(text)-h:]...)
	} else {
		c.tail = c.tail[:copy(c.tail, c.tail[len(c.tail)-h:])]
	}
}

// flushCut sends the text held back from the text block b when it closes
// (what follows is another block, or the end: no stop string begun in it
// can complete).
func (cs *canonStream) flushCut(b *streamBlock) {
	if c := &cs.cut; len(c.tail) > 0 && b.kind == partText {
		cs.send(b, deltaText, view(c.tail))
		c.tail = c.tail[:0]
	}
}

// cutAnswer applies stops to a whole answer (see
// ResponseOptions.EmulateStops): the first text part that holds a stop
// string is cut before it, the parts after it are dropped, and the answer
// stops with stop_sequence and that string.
func cutAnswer(r *canonResponse, stops []string) {
	stops = nonEmpty(stops)
	if stops == nil {
		return
	}
	for i := range r.parts {
		p := &r.parts[i]
		if p.kind != partText {
			continue
		}
		if at, stop := firstStop(p.text, stops); stop != "" {
			p.text = p.text[:at]
			if at == 0 {
				i-- // an empty text part is not kept
			}
			r.parts = r.parts[:i+1]
			r.stop, r.stopSeq = stopSequence, stop
			return
		}
	}
}

// unsentStops returns the stop strings of stops that a request encoded
// for an upstream of dialect to asking for model does not carry (see
// ResponseOptions.EmulateStops), in order; nil when it carries them all.
func unsentStops(stops []string, to Dialect, model string) []string {
	var out []string
	chatStops := true // an OpenAI Chat model that takes stop (its reasoning models do not)
	if to == OpenAIChat {
		f := openAIModelFamily(model)
		chatStops = f == nil || !f.noStop
	}
	for i, s := range stops {
		sent := true
		switch to {
		case OpenAIResponses:
			sent = false // no stop parameter
		case OpenAIChat:
			sent = i < 4 && chatStops // OpenAI accepts at most 4
		case AnthropicMessages:
			sent = !isBlank(s) // Anthropic refuses whitespace-only ones
		}
		if !sent && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// noStops is StopSequences' answer for a request without stop strings:
// empty, not nil (nil means "not known", see ResponseOptions).
var noStops = []string{}

// StopSequences returns the stop strings of the client's request (Chat
// "stop", Anthropic "stop_sequences"; a Responses request has none), for
// ResponseOptions.StopSequences: never nil, empty when there are none (or
// the request cannot be translated). The slice is the Request's: do not
// modify it.
func (r *Request) StopSequences() []string {
	if r.d == OpenAIResponses {
		return noStops
	}
	canon, e := r.canonical()
	if e != nil || len(canon.stop) == 0 {
		return noStops
	}
	return canon.stop
}

// UnsentStopSequences returns the stop strings of the client's request
// that its body encoded for an upstream of dialect to asking for model
// ("" the client's; see Encode) leaves out, for
// ResponseOptions.EmulateStops: all of them for OpenAI Responses (no stop
// parameter) and for an OpenAI reasoning model that refuses stop (see
// reasoningFamilies), those past the fourth for OpenAI Chat, the
// whitespace-only ones for Anthropic Messages. nil when the upstream gets
// them all, and always for the client's own dialect (a passthrough
// carries the client's stop as sent).
func (r *Request) UnsentStopSequences(to Dialect, model string) []string {
	if to == r.d || r.d == OpenAIResponses {
		return nil
	}
	canon, e := r.canonical()
	if e != nil || len(canon.stop) == 0 {
		return nil
	}
	if model == "" {
		model = canon.model
	}
	return unsentStops(canon.stop, to, model)
}
