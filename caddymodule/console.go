package caddymodule

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/keypool"
)

// pacingReasons are the reasons a key rests by design (the pool's own
// pacing: cooldown_after_success, pace, the configured or learned rpm,
// tpm and quota, every slot in use), as opposed to trouble (a cooldown
// after a failure, an open breaker, an operator's disable, a budget).
var pacingReasons = map[keypool.Reason]bool{
	keypool.ReasonCooldownAfterSuccess: true,
	keypool.ReasonPace:                 true,
	keypool.ReasonRPM:                  true,
	keypool.ReasonTPM:                  true,
	keypool.ReasonQuota:                true,
	keypool.ReasonLearned:              true,
	keypool.ReasonBusy:                 true,
	keypool.ReasonProbeInFlight:        true,
}

// reasonWords are the human forms of key reasons in a pool summary
// ("all 5 rate limited"); a reason not listed reads as its name with
// underscores as spaces.
var reasonWords = map[string]string{
	"rate_limited":           "rate limited",
	"invalid_key":            "with an invalid key",
	"no_credit":              "out of credit",
	"forbidden":              "forbidden",
	"breaker_open":           "with an open circuit breaker",
	"disabled":               "disabled",
	"busy":                   "busy",
	"cooldown_after_success": "resting after a success",
	"rpm":                    "at their rpm",
	"tpm":                    "at their tpm",
	"quota":                  "at their quota",
	"learned":                "at the vendor's reported limit",
	"budget":                 "over budget",
	"pace":                   "pacing",
}

// summarize sets pv.Pacing and pv.Summary from the pool's keys: a
// one-line reading of whether requests are served now, and if not,
// whether the pool is resting by design ("pacing: next key in 2s") or in
// trouble ("no key: all 5 rate limited").
func summarize(pv *poolView) {
	n := len(pv.Keys)
	if n == 0 {
		pv.Summary = "no key: none configured"
		return
	}
	ready := 0
	counts := map[string]int{}
	pacing := true
	next := -1 // seconds until the first resting key returns
	for _, k := range pv.Keys {
		if k.State == keypool.StateReady {
			ready++
			continue
		}
		r := k.Reason
		if r == "" {
			r = string(k.State)
		}
		counts[r]++
		if !pacingReasons[keypool.Reason(r)] {
			pacing = false
		}
		if k.SecondsLeft > 0 && (next < 0 || k.SecondsLeft < next) {
			next = k.SecondsLeft
		}
	}
	if pv.Ready && ready > 0 {
		pv.Summary = fmt.Sprintf("serving: %d of %d keys ready", ready, n)
		if pv.Waiting > 0 {
			pv.Summary += fmt.Sprintf(", %d waiting", pv.Waiting)
		}
		return
	}
	if pv.Ready {
		pv.Summary = "serving"
		return
	}
	parts := make([]string, 0, len(counts))
	for r, c := range counts {
		w := reasonWords[r]
		if w == "" {
			w = strings.ReplaceAll(r, "_", " ")
		}
		if c == n {
			parts = append(parts, fmt.Sprintf("all %d %s", c, w))
		} else {
			parts = append(parts, fmt.Sprintf("%d %s", c, w))
		}
	}
	sort.Strings(parts)
	why := strings.Join(parts, ", ")
	if pacing {
		pv.Pacing = true
		switch {
		case next > 0:
			pv.Summary = fmt.Sprintf("pacing: next key in %ds (%s)", next, why)
		default:
			pv.Summary = "pacing: " + why
		}
	} else {
		pv.Summary = "no key: " + why
		if next > 0 {
			pv.Summary += fmt.Sprintf("; next in %ds", next)
		}
	}
	if pv.Waiting > 0 {
		pv.Summary += fmt.Sprintf("; %d waiting", pv.Waiting)
	}
}

// sessionsView is one pool's affinity table in GET /llm_gateway/sessions.
type sessionsView struct {
	// Pool is the pool's name.
	Pool string `json:"pool"`
	// Sessions are its live pins, most recently used first.
	Sessions []keypool.SessionPin `json:"sessions"`
}

// handleSessions serves GET /llm_gateway/sessions[?pool=&limit=]: each
// pool's session affinity table (session, key, last used, hits), most
// recently used first, at most limit per pool (default 200).
func (adminAPI) handleSessions(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := queryLimit(q, 200, math.MaxInt)
	if err != nil {
		return err
	}
	pools, err := findPools(q.Get("pool"))
	if err != nil {
		return err
	}
	out := make([]sessionsView, 0, len(pools))
	for _, p := range pools {
		pins := p.Sessions(limit)
		for i := range pins {
			pins[i].Session = clipClient(pins[i].Session)
		}
		out = append(out, sessionsView{Pool: p.Name(), Sessions: pins})
	}
	return writeAdminJSON(w, out)
}

// queryLimit reads the positive integer query parameter limit: def when
// absent, at most max; a 400 caddy.APIError when it is not a positive
// integer.
func queryLimit(q url.Values, def, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("limit: want a positive number, got %q", clipClient(v))}
	}
	return min(n, max), nil
}

// handleUnpin serves POST /llm_gateway/sessions/unpin?pool=&session=: the
// session's next request is placed by the strategy (and pinned again).
// 404 when the pool has no such pin.
func (adminAPI) handleUnpin(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodPost); err != nil {
		return err
	}
	p, name, session, err := onePool(r, "session")
	if err != nil {
		return err
	}
	if !p.Unpin(session) {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("pool %q has no pin for that session", name)}
	}
	return writeAdminJSON(w, map[string]any{"unpinned": true, "pool": name})
}
