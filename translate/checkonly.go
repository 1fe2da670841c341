package translate

// The decoders' checkOnly mode (checker.checkOnly) for ParseRequestFor's
// passthrough pass: every check that rejects a request runs as in a full
// decode, the cross-message pairing check of canonRequest.validate
// included (checker.pair), and nothing of the canonical form is kept.
// The helpers here are where the decoders of OpenAI Chat and Responses
// requests hand a message's parts over: kept in the canonical form in a
// full decode, checked and given back in checkOnly mode.

// addMessage is r.addMessage(role, parts...) in a full decode; in
// checkOnly mode it runs the pairing check on parts (numbering the
// messages as addMessage merges them) and gives parts back to c.parts
// (parts is then a slice from c.parts.take, or nil).
func (c *checker) addMessage(r *canonRequest, role string, parts []canonPart) {
	if c.checkOnly {
		c.pair(role, parts)
		c.parts.give(parts)
		return
	}
	r.addMessage(role, parts...)
}

// addSystem adds the parts of a system or developer message: to the
// system prompt while no other message came before it (leading), else as
// a message of its own, never merged; in checkOnly mode a leading one is
// only given back (it is not one of the messages canonRequest.validate
// numbers) and a later one is numbered and checked as addMessage does.
func (c *checker) addSystem(r *canonRequest, leading bool, parts []canonPart) {
	switch {
	case c.checkOnly:
		if !leading {
			c.pair("system", parts)
		}
		c.parts.give(parts)
	case leading && r.system == nil:
		r.system = parts // kept parts (cut to their length: an append copies)
	case leading:
		r.system = append(r.system, parts...)
	default:
		r.messages = append(r.messages, canonMessage{role: "system", parts: parts})
	}
}

// newCanon returns the canonical request a decoder fills: a new one (or
// c.canonMem, which the caller allocated with its Request), or in
// checkOnly mode the checker's own (sink), which nothing keeps: the
// decoder still writes the scalars it reads there, and a pass that only
// checks costs no allocation for it.
func (c *checker) newCanon() *canonRequest {
	if c.checkOnly {
		c.sink = canonRequest{}
		return &c.sink
	}
	if c.canonMem != nil {
		// parseRequest's, allocated with the Request
		*c.canonMem = canonRequest{}
		return c.canonMem
	}
	return &canonRequest{}
}
