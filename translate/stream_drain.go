package translate

import (
	"bytes"
	"errors"
	"io"

	"github.com/tidwall/gjson"
)

// After an in-band error: the upstream's usage often follows its error
// event (OpenAI's usage-only chunk with stream_options.include_usage, an
// Anthropic message_delta with the cumulative usage), and is billed. Once
// the error has reached the client, the upstream is read on, for at most
// MaxDrainAfterError bytes of events (for as short a time as the caller
// allows, see Draining) or up to its own end, so that usage
// is observed (Usage) and booked; the attempt stays a failure
// (UpstreamError), and nothing that would show it whole (content, a
// finish, a terminator) reaches the client. A Chat passthrough relays the
// upstream's usage-only chunk as it came; a translated Responses client
// gets the usage in response.failed, written after the drain; a Chat
// client's stream still ends at its error chunk and an Anthropic client's
// at its error event (their dialects carry nothing after it). A Responses
// passthrough relays the upstream's response.failed that follows its
// error event, when it comes within those bounds.

// MaxDrainAfterError bounds what StreamTranslator.Run reads of an upstream
// stream after an in-band error event has been relayed: 8 KiB, counting
// the bytes already buffered past the error. The upstream is read through
// a reader limited to what is left of it, so an event that crosses the
// bound (however large, up to MaxSSEEventSize) is abandoned unread, not
// buffered, and nothing of it is observed. The reading also ends at the
// stream's end, its terminator, or a read error (which is then not
// reported: the outcome is the error event). The time it takes is the
// caller's to bound (Draining says when it runs; the gateway allows it a
// few hundred milliseconds).
const MaxDrainAfterError = 8 << 10

// errDrainBudget is what the drain's limited reader returns once
// MaxDrainAfterError bytes were read.
var errDrainBudget = errors.New("translate: drain budget spent")

// drainReader reads at most left bytes of r, then returns errDrainBudget
// (hit set).
type drainReader struct {
	r    io.Reader
	left int
	hit  bool
}

func (d *drainReader) Read(p []byte) (int, error) {
	if d.left <= 0 {
		d.hit = true
		return 0, errDrainBudget
	}
	if len(p) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.left -= max(n, 0)
	return n, err
}

// Draining reports whether Run is reading on after an in-band error that
// reached the client, for the usage that may follow it (see
// MaxDrainAfterError): the client's stream holds its error form, and only
// a Responses client's response.failed (with the usage) may still be
// written. A caller bounds the time this takes (a short deadline on the
// upstream's body from the first read while Draining holds); the drain
// ends at the read error that deadline causes, which is not reported.
func (t *StreamTranslator) Draining() bool { return t.committed && t.upErr != nil }

// Live reports whether the stream is committed (see Committed) and still
// relaying the upstream's answer: false before the commit point and once
// an in-band error event was seen, when Run reads on only for the usage
// that may follow (see MaxDrainAfterError). A handler re-arms its idle
// timeout after reads only while Live is true, so that the reading after
// an error never waits longer than the timeout that was running.
func (t *StreamTranslator) Live() bool { return t.committed && t.upErr == nil }

// afterError is called when Run's reading loop ended (early: before the
// upstream's end); after an in-band error relayed to the client it reads
// on (drain, when the upstream has not ended), then writes what the client
// dialect carries of the usage (a translated stream).
func (t *StreamTranslator) afterError(r *SSEReader, early bool) {
	if t.upErr == nil || !t.committed || t.werr != nil || t.failed != nil {
		return
	}
	if early {
		// what is already buffered counts; the upstream is read only for
		// what is left of the budget
		r.r = &drainReader{r: r.r, left: MaxDrainAfterError - (r.e - r.s)}
	}
	for n := 0; early && n < MaxDrainAfterError && t.werr == nil; {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if d := r.r.(*drainReader); d.hit && r.cut {
			break // an event the budget cut short: abandoned
		}
		n += len(ev.Raw)
		t.ev = ev
		var end bool
		if t.from == t.to {
			end = t.passDrained(&t.ev)
		} else {
			end = t.observeDrained(&t.ev)
		}
		if end {
			break
		}
	}
	t.ev = SSEEvent{}
	if t.cs != nil && t.werr == nil {
		t.cs.afterDrain()
	}
}

// passDrained observes the usage of one event read after the error in a
// passthrough and reports the stream's end. Of what follows an error only
// OpenAI Chat's usage-only chunk (choices: [], as include_usage adds it)
// and the Responses response.failed that ends the stream are relayed, as it came (the model rewritten; dropped with
// HideUsageChunk, as the gateway asked for it): content, a finish or a
// terminator after an error would show a failed stream as whole.
func (t *StreamTranslator) passDrained(ev *SSEEvent) (end bool) {
	if t.from == OpenAIResponses && len(ev.Data) > 0 && anthropicType(ev, view(ev.Data)) == "response.failed" {
		// the upstream's own response.failed after its error event: the
		// end of its stream, relayed as it came (passEvent)
		t.passEvent(ev)
		return true
	}
	if t.from != OpenAIChat {
		return t.observeDrained(ev)
	}
	data := ev.Data
	if len(data) == 0 {
		return false
	}
	if bytes.Equal(bytes.TrimSpace(data), doneMarker) {
		return true
	}
	sd := view(data)
	u := gjson.Get(sd, "usage")
	if !u.IsObject() {
		return false
	}
	choices := gjson.Get(sd, "choices")
	if malformedChoices(choices) {
		return false // not a chat.completion.chunk: neither booked nor relayed
	}
	t.usage.merge(chatUsage(u))
	if hasElements(choices) || t.hideUsage {
		return false
	}
	raw := ev.Raw
	if m := gjson.Get(sd, "model"); t.model != "" && m.Type == gjson.String && m.Str != t.model {
		raw = t.edit(ev, []dataEdit{modelEdit(data, m)}, "model")
	}
	// what follows an error is scanned as an error event would be
	t.errEvent = true
	t.write(raw)
	t.errEvent = false
	return false
}

// observeDrained observes the usage of one upstream event read after the
// error in a translated stream; it reports the stream's end.
func (t *StreamTranslator) observeDrained(ev *SSEEvent) (end bool) {
	data := ev.Data
	if len(data) == 0 {
		return false
	}
	sd := view(data)
	switch t.from {
	case OpenAIChat:
		if bytes.Equal(bytes.TrimSpace(data), doneMarker) {
			return true
		}
		if u := gjson.Get(sd, "usage"); u.IsObject() && !malformedChoices(gjson.Get(sd, "choices")) {
			t.usage.merge(chatUsage(u))
		}
	case AnthropicMessages:
		switch anthropicType(ev, sd) {
		case "message_delta":
			if u := gjson.Get(sd, "usage"); u.IsObject() {
				t.au.add(u)
			}
		case "message_stop":
			return true
		}
	case OpenAIResponses:
		if u := gjson.Get(sd, "response.usage"); u.IsObject() {
			t.usage.merge(responsesUsage(u))
		}
		switch anthropicType(ev, sd) {
		case "response.completed", "response.incomplete", "response.failed":
			return true
		}
	}
	return false
}

// anthropicType is an event's data.type, else its event: name (Anthropic
// and Responses events carry both).
func anthropicType(ev *SSEEvent, sd string) string {
	if typ := gjson.Get(sd, "type").Str; typ != "" {
		return typ
	}
	return ev.Event
}

// afterDrain writes, after the drain, the usage the client's dialect can
// carry after its error form: the Responses response.failed that fail
// held back. (A Chat client's stream ends at its error chunk and an
// Anthropic client's at its error event: the usage is booked, not shown.)
func (cs *canonStream) afterDrain() {
	if e, ok := cs.enc.(*responsesStreamEncoder); ok {
		e.failed(cs)
	}
}
