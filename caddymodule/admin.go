package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/keypool"
)

func init() {
	caddy.RegisterModule(adminAPI{})
}

// adminAPI is the admin API module `admin.api.llm_gateway`. It adds these
// routes to Caddy's admin endpoint (default localhost:2019):
//
//	GET  /llm_gateway/                  status page (HTML)
//	GET  /llm_gateway/pools[?pool=]     every pool and key, live
//	POST /llm_gateway/cooldowns/clear[?pool=&key=]
//	POST /llm_gateway/keys/disable?pool=&key=
//	POST /llm_gateway/keys/enable?pool=&key=
//	POST /llm_gateway/diagnose[?pool=&key=&clear=1]
//	GET  /llm_gateway/events            server-sent events of key state changes
//	GET  /llm_gateway/requests[?status=&pool=&key=&gateway_key=&q=&id=&before=&limit=]
//	GET  /llm_gateway/sessions[?pool=&limit=]
//	POST /llm_gateway/sessions/unpin?pool=&session=
//	POST /llm_gateway/playground        {model, dialect, stream, prompt}: one request through the gateway
//	GET  /llm_gateway/usage?by=gateway_key|key|model|pool[&from=&to=&granularity=&format=csv]
//	GET  /llm_gateway/spend             cost totals by key, gateway key, model; unpriced models
//	GET  /llm_gateway/prices            the built-in price table and the pools' configured prices
//	GET  /llm_gateway/models            the model names the gateway serves (for the playground)
//
// Keys appear by id (configured label or masked secret), never by secret.
// The module has no configuration: admin modules are built before the
// HTTP handlers, so it reads the process-wide pool registry lazily.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.llm_gateway",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

// Routes returns the routes of the llm_gateway admin API.
func (a adminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/llm_gateway/", Handler: caddy.AdminHandlerFunc(a.handleStatusPage)},
		{Pattern: "/llm_gateway/pools", Handler: gzipAdmin(a.handlePools)},
		{Pattern: "/llm_gateway/cooldowns/clear", Handler: caddy.AdminHandlerFunc(a.handleClear)},
		{Pattern: "/llm_gateway/keys/disable", Handler: caddy.AdminHandlerFunc(a.handleDisable)},
		{Pattern: "/llm_gateway/keys/enable", Handler: caddy.AdminHandlerFunc(a.handleEnable)},
		{Pattern: "/llm_gateway/diagnose", Handler: caddy.AdminHandlerFunc(a.handleDiagnose)},
		{Pattern: "/llm_gateway/events", Handler: caddy.AdminHandlerFunc(a.handleEvents)},
		{Pattern: "/llm_gateway/budgets", Handler: gzipAdmin(a.handleBudgets)},
		{Pattern: "/llm_gateway/egress", Handler: gzipAdmin(a.handleEgress)},
		{Pattern: "/llm_gateway/requests", Handler: gzipAdmin(a.handleRequests)},
		{Pattern: "/llm_gateway/sessions", Handler: gzipAdmin(a.handleSessions)},
		{Pattern: "/llm_gateway/sessions/unpin", Handler: caddy.AdminHandlerFunc(a.handleUnpin)},
		{Pattern: "/llm_gateway/playground", Handler: caddy.AdminHandlerFunc(a.handlePlayground)},
		{Pattern: "/llm_gateway/usage", Handler: gzipAdmin(a.handleUsage)},
		{Pattern: "/llm_gateway/spend", Handler: caddy.AdminHandlerFunc(a.handleSpend)},
		{Pattern: "/llm_gateway/prices", Handler: caddy.AdminHandlerFunc(a.handlePrices)},
		{Pattern: "/llm_gateway/models", Handler: caddy.AdminHandlerFunc(a.handleModels)},
	}
}

// published maps a pool name to the provisioned pools of that name, most
// recent last: the admin API reads key endpoints (and, for diagnose,
// secrets) from them. A handler publishes its pools at Provision and they
// are withdrawn when its config context ends, so during a reload the new
// config's pools are already there when the old ones go.
var published = struct {
	sync.Mutex
	byName map[string][]*pool
}{byName: map[string][]*pool{}}

// publishPools makes pools visible to the admin API until ctx is done.
func publishPools(ctx caddy.Context, pools []*pool) {
	if len(pools) == 0 {
		return
	}
	published.Lock()
	for _, p := range pools {
		published.byName[p.name] = append(published.byName[p.name], p)
	}
	published.Unlock()
	if ctx.Context == nil {
		return
	}
	context.AfterFunc(ctx, func() {
		published.Lock()
		defer published.Unlock()
		for _, p := range pools {
			list := published.byName[p.name]
			for i, q := range list {
				if q == p {
					list = append(list[:i:i], list[i+1:]...)
					break
				}
			}
			if len(list) == 0 {
				delete(published.byName, p.name)
			} else {
				published.byName[p.name] = list
			}
		}
	})
}

// publishedPool returns the most recently provisioned pool named name,
// nil when none is published.
func publishedPool(name string) *pool {
	published.Lock()
	defer published.Unlock()
	list := published.byName[name]
	if len(list) == 0 {
		return nil
	}
	return list[len(list)-1]
}

// keyByID returns the provisioned key with the given id, nil when none.
func (p *pool) keyByID(id string) *upstreamKey {
	if p == nil {
		return nil
	}
	for _, k := range p.keys {
		if k.id == id {
			return k
		}
	}
	return nil
}

// onePool reads an admin request's "pool" and the query parameter param
// (both required: 400 otherwise) and returns the live pool of that name
// (404 when none), its name and param's value.
func onePool(r *http.Request, param string) (*keypool.Pool, string, string, error) {
	q := r.URL.Query()
	name, v := q.Get("pool"), q.Get(param)
	if name == "" || v == "" {
		return nil, name, v, caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("pool and %s are required", param)}
	}
	pools, err := findPools(name)
	if err != nil {
		return nil, name, v, err
	}
	return pools[0], name, v, nil
}

// findPools returns the live pools selected by name ("" = all), or a 404
// APIError when a named pool does not exist.
func findPools(name string) ([]*keypool.Pool, error) {
	all := livePools()
	if name == "" {
		return all, nil
	}
	for _, p := range all {
		if p.Name() == name {
			return []*keypool.Pool{p}, nil
		}
	}
	return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("unknown pool %q", clipClient(name))}
}

// poolView is one pool in GET /llm_gateway/pools.
type poolView struct {
	// Name is the pool's name.
	Name string `json:"name"`
	// Ready is true when some key can take a request now; otherwise
	// Reason summarises why none can.
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
	// Waiting counts the requests waiting for a key of the pool now.
	Waiting int `json:"waiting"`
	// Pacing is true when no key is ready only because the pool rests
	// by design (cooldown_after_success, pace, rpm/tpm/quota, every slot
	// busy), not because of failures; Summary reads the pool's state in
	// one line: "serving: 3 of 5 keys ready", "pacing: next key in 2s
	// (all 5 resting after a success)", "no key: all 5 rate limited".
	Pacing  bool   `json:"pacing,omitempty"`
	Summary string `json:"summary"`
	// State says where the pool's runtime state lives; with Redis, each
	// key also carries its cluster-wide state (keyView.Cluster).
	State stateView `json:"state"`
	// Keys are the pool's keys in configured order.
	Keys []keyView `json:"keys"`
}

// stateView is a pool's state backend in GET /llm_gateway/pools.
type stateView struct {
	// Backend is "memory" or "redis".
	Backend string `json:"backend"`
	// Redis is the server's host:port/db (never the password).
	Redis string `json:"redis,omitempty"`
	// Up is false while Redis is unreachable: limits are then per
	// instance and the keys' cluster views are missing.
	Up bool `json:"up"`
	// Error says why the cluster view could not be read.
	Error string `json:"error,omitempty"`
}

// clusterView is one key's cluster-wide state (state redis): what every
// instance together holds and has learned.
type clusterView struct {
	// InFlight counts the live leases of all instances.
	InFlight int `json:"in_flight"`
	// CooldownReason and CooldownSecondsLeft describe the shared cooldown.
	CooldownReason      string `json:"cooldown_reason,omitempty"`
	CooldownSecondsLeft int    `json:"cooldown_seconds_left,omitempty"`
	// Breaker is "closed", "open" or "half_open"; BreakerSecondsLeft is
	// the open period left.
	Breaker            string `json:"breaker"`
	BreakerSecondsLeft int    `json:"breaker_seconds_left,omitempty"`
	// ProbeInFlight: one instance holds the key's single probe.
	ProbeInFlight bool `json:"probe_in_flight,omitempty"`
	// RPMUsed counts requests in the last 60 s; TPMLevel is the tpm
	// bucket's level in tokens.
	RPMUsed  int   `json:"rpm_used,omitempty"`
	TPMLevel int64 `json:"tpm_level,omitempty"`
	// QuotaRequests and QuotaTokens are spent in the current quota period.
	QuotaRequests int64 `json:"quota_requests,omitempty"`
	QuotaTokens   int64 `json:"quota_tokens,omitempty"`
	// TTFBMillis is the shared time-to-first-byte average.
	TTFBMillis float64 `json:"ttfb_ema_ms,omitempty"`
	// Learned are the latest limits any instance learned from the
	// upstream's rate-limit headers, per model.
	Learned []keypool.LearnedLimit `json:"learned,omitempty"`
}

// viewState fills pv.State and returns the keys' cluster state (nil in
// memory mode or when Redis cannot be read).
func viewState(kp *keypool.Pool, pv *poolView) []keypool.SharedKeyState {
	pv.State = stateView{Backend: "memory", Up: true}
	b, ok := kp.Backend().(*redisBackend)
	if !ok {
		return nil
	}
	pv.State = stateView{Backend: "redis", Redis: b.desc, Up: b.up.Load()}
	if !pv.State.Up {
		why, _ := b.lastErr.Load().(string)
		pv.State.Error = "redis unavailable, limits are per instance: " + why
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	shared, err := kp.SharedSnapshot(ctx)
	if err != nil {
		pv.State.Error = "cluster state unavailable: " + err.Error()
		return nil
	}
	return shared
}

func secondsLeft(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// keyView is one key in GET /llm_gateway/pools (see docs/operations.md).
// It never holds a secret.
type keyView struct {
	// ID is the configured id, or the masked secret.
	ID string `json:"id"`
	// Host is the host:port of the key's upstream; Dialect is "openai",
	// "anthropic" or "openai+anthropic".
	Host    string `json:"host,omitempty"`
	Dialect string `json:"dialect,omitempty"`
	// State and Reason are keypool's (KeyStatus.State, .Reason).
	// Reason gains " (cluster)" when the cluster's state, not this
	// instance's, keeps the key from serving.
	State  keypool.KeyState `json:"state"`
	Reason string           `json:"reason,omitempty"`
	// InFlight and Cap are the current and maximum concurrent requests.
	InFlight int `json:"in_flight"`
	Cap      int `json:"cap"`
	// CooldownUntil is when the current time-bound state ends;
	// CooldownSource and CooldownStatus say where a cooldown's length
	// came from and which upstream status started it.
	CooldownUntil  *time.Time `json:"cooldown_until,omitempty"`
	SecondsLeft    int        `json:"seconds_left,omitempty"`
	CooldownSource string     `json:"cooldown_source,omitempty"`
	CooldownStatus int        `json:"cooldown_status,omitempty"`
	// Provisional is true while the cooldown is a provisional verdict
	// (401, 402, 403, no credit, a distant quota reset) that the gateway's
	// own probe has not confirmed yet; it lasts provisional_cooldown at
	// most.
	Provisional bool `json:"provisional,omitempty"`
	// VerdictDue, while Provisional and the gateway's probe of the key
	// runs, is when the probe's answer is due (its start plus the probe
	// timeout, keypool.KeyStatus.VerdictDue): the key is back in rotation
	// then if the probe refutes the verdict, else cooling for the long
	// cooldown. Requests turned away meanwhile are told to come back then.
	// Absent otherwise.
	VerdictDue *time.Time `json:"verdict_due,omitempty"`
	// BenchedModels maps each model the key is benched for (its upstream
	// answered 404 or a model-level 403 for it several times) to when the
	// bench ends; other models keep using the key.
	BenchedModels map[string]time.Time `json:"benched_models,omitempty"`
	// LastStatus and LastMessage describe the last upstream answer.
	LastStatus          int    `json:"last_status,omitempty"`
	LastMessage         string `json:"last_message,omitempty"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	// Breaker is "closed", "open" or "half_open".
	Breaker string `json:"breaker"`
	// Requests, Successes and Errors count attempts on the key.
	Requests  int64 `json:"requests"`
	Successes int64 `json:"successes"`
	Errors    int64 `json:"errors"`
	// Tokens and Latency are kept by this package from finished requests.
	Tokens  tokenCounts `json:"tokens"`
	Latency latencyView `json:"latency_ms"`
	// TTFBMillis is keypool's time-to-first-byte moving average.
	TTFBMillis int64 `json:"ttfb_ema_ms,omitempty"`
	// LastUsed is when the key was last leased.
	LastUsed *time.Time `json:"last_used,omitempty"`
	// Learned are the limits the upstream reported in its rate-limit
	// headers, per model, most recent first (keypool.KeyStatus.Learned).
	Learned []keypool.LearnedLimit `json:"learned,omitempty"`

	// Cluster is the key's cluster-wide state with `state redis`; the
	// fields above are this instance's view.
	Cluster *clusterView `json:"cluster,omitempty"`

	// Budget is the key's spend budget and its spend in the current
	// period; nil when it has none.
	Budget *budgetView `json:"budget,omitempty"`
	// Spend is the key's cost in US dollars (see GET /llm_gateway/spend).
	Spend costFigures `json:"spend"`

	// Egress lists the key's exits (masked URLs) in order, see GET
	// /llm_gateway/egress; empty when it leaves directly.
	Egress []string `json:"egress,omitempty"`
}

// tokenCounts are a key's upstream-reported tokens since process start,
// by kind.
type tokenCounts struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	Reasoning  int64 `json:"reasoning"`
}

// latencyView is the latency of a key's recent successful attempts, in
// milliseconds: moving average, and p50/p95 over the last latencyWindow,
// with the number of samples.
type latencyView struct {
	EMA     float64 `json:"ema"`
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	Samples int     `json:"samples"`
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// viewPool renders the live state of a pool.
func viewPool(kp *keypool.Pool) poolView {
	pv := poolView{Name: kp.Name(), Keys: []keyView{}}
	pv.Ready, pv.Reason = kp.Ready()
	prov := publishedPool(pv.Name)
	shared := viewState(kp, &pv)
	for i, st := range kp.Snapshot() {
		kv := keyView{
			ID:                  st.ID,
			State:               st.State,
			Reason:              string(st.Reason),
			InFlight:            st.InFlight,
			Cap:                 st.Cap,
			SecondsLeft:         st.SecondsLeft,
			CooldownSource:      st.Source,
			CooldownStatus:      st.CooldownStatus,
			Provisional:         st.Provisional,
			BenchedModels:       st.BenchedModels,
			LastStatus:          st.LastStatus,
			LastMessage:         st.LastMessage,
			ConsecutiveFailures: st.ConsecutiveFailures,
			Breaker:             st.Breaker,
			Requests:            st.Requests,
			Successes:           st.Successes,
			Errors:              st.Failures,
			TTFBMillis:          st.TTFBMillis,
			Learned:             st.Learned,
		}
		if !st.Until.IsZero() {
			u := st.Until.UTC()
			kv.CooldownUntil = &u
		}
		if !st.LastUsed.IsZero() {
			u := st.LastUsed.UTC()
			kv.LastUsed = &u
		}
		if !st.VerdictDue.IsZero() {
			u := st.VerdictDue.UTC()
			kv.VerdictDue = &u
		}
		if uk := prov.keyByID(st.ID); uk != nil {
			kv.Host, kv.Dialect = uk.hostAndDialect()
			kv.Egress = uk.egress.names()
		}
		kv.Budget = keyBudgetView(pv.Name, st.ID, budgetNow())
		f := peekKeyStats(pv.Name, st.ID)
		kv.Tokens = tokenCounts{f.tokens[0], f.tokens[1], f.tokens[2], f.tokens[3], f.tokens[4]}
		kv.Spend = peekCost(costKey{kind: costByKey, a: pv.Name, b: st.ID})
		kv.Latency = latencyView{EMA: millis(f.ema), P50: millis(f.p50), P95: millis(f.p95), Samples: f.n}
		if i < len(shared) {
			c := shared[i]
			if kv.State == keypool.StateReady {
				// this instance could lease it, but the cluster may not
				switch {
				case c.CooldownLeft > 0:
					kv.State, kv.Reason = keypool.StateCooling, c.CooldownReason+" (cluster)"
				case c.BreakerLeft > 0:
					kv.State, kv.Reason = keypool.StateBreakerOpen, string(keypool.ReasonBreakerOpen)+" (cluster)"
				case c.InFlight >= kv.Cap:
					kv.State, kv.Reason = keypool.StateBusy, string(keypool.ReasonBusy)+" (cluster)"
				}
			}
			kv.Cluster = &clusterView{InFlight: c.InFlight, CooldownReason: c.CooldownReason, CooldownSecondsLeft: secondsLeft(c.CooldownLeft),
				Breaker: c.Breaker, BreakerSecondsLeft: secondsLeft(c.BreakerLeft), ProbeInFlight: c.ProbeInFlight,
				RPMUsed: c.RPMUsed, TPMLevel: c.TPMLevel, QuotaRequests: c.QuotaRequests, QuotaTokens: c.QuotaTokens,
				TTFBMillis: millis(c.LatencyEMA), Learned: sharedLearnedView(c.Learned, time.Now())}
		}
		pv.Keys = append(pv.Keys, kv)
	}
	pv.Waiting = kp.Waiting()
	summarize(&pv)
	return pv
}

// hostAndDialect returns the host of the key's upstream and its dialects
// joined by "+" in the order openai, anthropic, responses ("openai",
// "anthropic", "responses", "openai+anthropic", "openai+responses", ...).
func (k *upstreamKey) hostAndDialect() (host, dialect string) {
	var parts []string
	if k.chatURL != "" {
		parts = append(parts, "openai")
	}
	if k.messageURL != "" {
		parts = append(parts, "anthropic")
	}
	if k.responsesURL != "" {
		parts = append(parts, "responses")
	}
	dialect = strings.Join(parts, "+")
	raw := k.chatURL
	if raw == "" {
		raw = k.messageURL
	}
	if raw == "" {
		raw = k.responsesURL
	}
	if u, err := url.Parse(raw); err == nil {
		host = u.Host
	}
	return host, dialect
}

func requireMethod(r *http.Request, method string) error {
	if r.Method != method {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("method not allowed")}
	}
	return nil
}

func writeAdminJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
	}
	return nil
}

// handlePools serves GET /llm_gateway/pools.
func (adminAPI) handlePools(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	pools, err := findPools(r.URL.Query().Get("pool"))
	if err != nil {
		return err
	}
	out := make([]poolView, 0, len(pools))
	for _, p := range pools {
		out = append(out, viewPool(p))
	}
	return writeAdminJSON(w, out)
}

// handleClear serves POST /llm_gateway/cooldowns/clear[?pool=&key=]: it
// ends cooldowns, resets breakers and lifts model benches of the selected
// keys (all keys of all pools by default).
func (adminAPI) handleClear(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodPost); err != nil {
		return err
	}
	q := r.URL.Query()
	pools, err := findPools(q.Get("pool"))
	if err != nil {
		return err
	}
	key := q.Get("key")
	n := 0
	for _, p := range pools {
		n += p.ClearCooldown(key)
	}
	if key != "" && n == 0 {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("unknown key %q", key)}
	}
	return writeAdminJSON(w, map[string]int{"cleared": n})
}

// handleDisable serves POST /llm_gateway/keys/disable?pool=&key=.
func (a adminAPI) handleDisable(w http.ResponseWriter, r *http.Request) error {
	return a.setDisabled(w, r, true)
}

// handleEnable serves POST /llm_gateway/keys/enable?pool=&key=.
func (a adminAPI) handleEnable(w http.ResponseWriter, r *http.Request) error {
	return a.setDisabled(w, r, false)
}

func (adminAPI) setDisabled(w http.ResponseWriter, r *http.Request, disabled bool) error {
	if err := requireMethod(r, http.MethodPost); err != nil {
		return err
	}
	p, name, key, err := onePool(r, "key")
	if err != nil {
		return err
	}
	if !p.SetDisabled(key, disabled) {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("unknown key %q in pool %q", key, name)}
	}
	var state keypool.KeyState
	for _, st := range p.Snapshot() {
		if st.ID == key {
			state = st.State
		}
	}
	return writeAdminJSON(w, map[string]any{"pool": name, "key": key, "disabled": disabled, "state": state})
}

// Interface guards.
var (
	_ caddy.Module      = (*adminAPI)(nil)
	_ caddy.AdminRouter = (*adminAPI)(nil)
)
