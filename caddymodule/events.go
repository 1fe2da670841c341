package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/llmgateway/llm_gateway/keypool"
)

// eventInterval is how often an events subscriber's view of the pools is
// compared with the live state.
var eventInterval = 200 * time.Millisecond

// eventKeepAlive is how often an idle events stream gets a comment line,
// so that proxies keep it open and a client that left is noticed.
var eventKeepAlive = 15 * time.Second

// keyEvent is the data of an SSE `key` event: one key changed state.
type keyEvent struct {
	// Type is "cooldown_start", "cooldown_end", "breaker_open",
	// "breaker_close", "disabled", "enabled", "budget_exceeded" (the
	// key's spend budget is used up), or "state" for other
	// changes (busy, ready, limited, a cooldown extended).
	Type string `json:"type"`
	// Pool and Key name the key (by id, never by secret).
	Pool string `json:"pool"`
	Key  string `json:"key"`
	// State is the key's new state, Prev the one before.
	State keypool.KeyState `json:"state"`
	Prev  keypool.KeyState `json:"prev"`
	// Reason, Source and Status are the new state's reason, where a
	// cooldown's length came from, and the upstream status that started
	// it; Message is the key's last failure note.
	Reason  keypool.Reason `json:"reason,omitempty"`
	Source  string         `json:"source,omitempty"`
	Status  int            `json:"status,omitempty"`
	Message string         `json:"message,omitempty"`
	// Until is when a time-bound state ends (SecondsLeft from Time).
	Until       time.Time `json:"until,omitzero"`
	SecondsLeft int       `json:"seconds_left,omitempty"`
	// InFlight is the key's requests in flight.
	InFlight int `json:"in_flight"`
	// Time is when the change was seen.
	Time time.Time `json:"time"`
}

// keyMark is what the event diff compares per key.
type keyMark struct {
	state  keypool.KeyState
	reason keypool.Reason
	until  time.Time
}

// eventType names the change of a key's state from prev to cur.
func eventType(prev, cur keypool.KeyState) string {
	switch {
	case cur == keypool.StateBudget && prev != keypool.StateBudget:
		return "budget_exceeded"
	case cur == keypool.StateDisabled:
		return "disabled"
	case prev == keypool.StateDisabled:
		return "enabled"
	case cur == keypool.StateCooling && prev != keypool.StateCooling:
		return "cooldown_start"
	case cur == keypool.StateBreakerOpen && prev != keypool.StateBreakerOpen:
		return "breaker_open"
	case prev == keypool.StateCooling && cur != keypool.StateCooling:
		return "cooldown_end"
	case prev == keypool.StateBreakerOpen && cur != keypool.StateBreakerOpen:
		return "breaker_close"
	}
	return "state"
}

// handleEvents serves GET /llm_gateway/events: a server-sent events
// stream. It opens with a `hello` event, then sends a `key` event (JSON
// keyEvent) whenever a key's state, reason or cooldown end changes, a
// `budget` event (JSON budgetEvent) when a budget reaches its warning
// level or its limit, and a `pools` event when pools or keys appear or
// go (after a reload). It ends
// when the client leaves.
func (adminAPI) handleEvents(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	// the admin server's read timeout would otherwise end the stream
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		return rc.Flush()
	}

	marks := snapshotMarks()
	_, budgetSeq := budgetEventsSince(^uint64(0)) // before hello: what follows it is sent
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return nil
	}
	if err := send("hello", map[string]any{"pools": len(marks)}); err != nil {
		return nil
	}
	tick := time.NewTicker(eventInterval)
	defer tick.Stop()
	lastWrite := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case now := <-tick.C:
			events, changedSet, next := diffMarks(marks, now)
			marks = next
			for _, ev := range events {
				if err := send("key", ev); err != nil {
					return nil
				}
				lastWrite = now
			}
			var bevs []budgetEvent
			bevs, budgetSeq = budgetEventsSince(budgetSeq)
			for _, ev := range bevs {
				if err := send("budget", ev); err != nil {
					return nil
				}
				lastWrite = now
			}
			if changedSet {
				if err := send("pools", map[string]any{"pools": len(marks)}); err != nil {
					return nil
				}
				lastWrite = now
			}
			if now.Sub(lastWrite) >= eventKeepAlive {
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					return nil
				}
				if rc.Flush() != nil {
					return nil
				}
				lastWrite = now
			}
		}
	}
}

// poolMarks maps pool name, then key id, to the key's mark.
type poolMarks map[string]map[string]keyMark

func snapshotMarks() poolMarks {
	out := poolMarks{}
	for _, p := range livePools() {
		m := map[string]keyMark{}
		for _, st := range p.Snapshot() {
			m[st.ID] = keyMark{state: st.State, reason: st.Reason, until: st.Until}
		}
		out[p.Name()] = m
	}
	return out
}

// diffMarks compares the live pools with prev and returns the key events,
// whether the set of pools or keys changed, and the new marks.
func diffMarks(prev poolMarks, now time.Time) ([]keyEvent, bool, poolMarks) {
	var events []keyEvent
	next := poolMarks{}
	changedSet := false
	for _, p := range livePools() {
		name := p.Name()
		old, had := prev[name]
		if !had {
			changedSet = true
		}
		m := map[string]keyMark{}
		for _, st := range p.Snapshot() {
			cur := keyMark{state: st.State, reason: st.Reason, until: st.Until}
			m[st.ID] = cur
			o, ok := old[st.ID]
			if !ok {
				if had {
					changedSet = true
				}
				continue
			}
			if o == cur {
				continue
			}
			events = append(events, keyEvent{
				Type:        eventType(o.state, cur.state),
				Pool:        name,
				Key:         st.ID,
				State:       st.State,
				Prev:        o.state,
				Reason:      st.Reason,
				Source:      st.Source,
				Status:      st.CooldownStatus,
				Message:     st.LastMessage,
				Until:       st.Until,
				SecondsLeft: st.SecondsLeft,
				InFlight:    st.InFlight,
				Time:        now.UTC(),
			})
		}
		if had && len(old) != len(m) {
			changedSet = true
		}
		next[name] = m
	}
	if len(prev) != len(next) {
		changedSet = true
	}
	return events, changedSet, next
}
