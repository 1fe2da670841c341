package caddymodule

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/translate"
)

// Model discovery: each key's models are learned from its upstream's
// models list (OpenAI-compatible: GET <base_url>/models with Bearer, per
// the OpenAI "List models" API; Anthropic: GET <root>/v1/models?limit=1000
// with x-api-key and anthropic-version, per the Anthropic "List Models"
// API, following has_more/last_id), at provision and every refresh
// interval, in the background. Learned names are listed by GET /v1/models;
// a pool whose models are "auto" serves exactly them.

// DefaultRefresh is the default of PoolConfig.Refresh: how often each
// key's models list is fetched again.
const DefaultRefresh = time.Hour

// Bounds of what one key's models list may add.
const (
	// maxLearnedPerKey is the most model names kept per key; the rest of
	// a longer list is dropped (with a warning).
	maxLearnedPerKey = 2000
	// maxLearnedName is the longest model name kept, in bytes; longer
	// names are dropped (a cut name would route nowhere).
	maxLearnedName = 256
	// maxModelsBody bounds the bytes read of one models list answer.
	maxModelsBody = 16 << 20
	// maxModelsPages bounds the pages followed of a paginated (Anthropic)
	// list.
	maxModelsPages = 10
	// discoveryParallelism is how many keys of a pool are asked at once.
	discoveryParallelism = 8
	// minRefresh is the shortest refresh interval honoured.
	minRefresh = 50 * time.Millisecond
)

// discoveryTimeout bounds one key's models list fetch (all its pages).
var discoveryTimeout = 15 * time.Second

// discoveryRetry is the wait before fetching again after a round in which
// some key's fetch failed (not a 404/405); it doubles with each failed
// round, up to the refresh interval. An upstream served by the same Caddy
// is not listening yet at provision, so the first round often fails there.
var discoveryRetry = 2 * time.Second

// discoveryByDefault makes pools without a refresh setting discover their
// models. The package's older tests set it to false (their upstreams count
// every request); a pool with "models auto" or an explicit refresh always
// discovers.
var discoveryByDefault = true

// discovery is the model discovery of one provisioned pool.
type discovery struct {
	auto    bool          // the pool serves exactly the learned names
	refresh time.Duration // between fetches
	store   *learnedStore // shared with every instance of the pool (registry)
	wake    chan struct{} // a fetch now (diagnose); buffered 1
	// fetched is set once this instance's first round of fetches ended
	fetched atomic.Bool
}

// learnedStore holds the learned model names of one pool's keys, by key
// fingerprint. It lives in the pool's registry entry, so a config reload
// that keeps a key keeps its list.
type learnedStore struct {
	mu   sync.Mutex // serialises writers
	snap atomic.Pointer[learnedSnap]
}

// learnedSnap is an immutable view of a learnedStore.
type learnedSnap struct {
	keys  map[string]map[string]struct{} // key fingerprint -> names
	union map[string]struct{}
	names []string // union, sorted
}

func (s *learnedStore) load() *learnedSnap {
	if s == nil {
		return nil
	}
	return s.snap.Load()
}

// learnedFor returns the learned store of the pool named name, created on
// first use, nil when the pool is not in the registry.
func learnedFor(name string) *learnedStore {
	v, ok := registryValue("pool:" + name)
	if !ok {
		return nil
	}
	ps := v.(*poolState)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.learned == nil {
		ps.learned = &learnedStore{}
	}
	return ps.learned
}

// provisionDiscovery sets up the pool's model discovery from its config:
// models "auto" and refresh.
func (p *pool) provisionDiscovery(pc *PoolConfig) error {
	auto := false
	for _, m := range pc.Models {
		if m == "auto" {
			auto = true
		}
	}
	refresh := time.Duration(pc.Refresh)
	switch {
	case refresh < 0:
		if auto {
			return errors.New("models auto needs model discovery: remove 'refresh off'")
		}
		return nil
	case refresh == 0 && !auto && !discoveryByDefault:
		return nil
	case refresh == 0:
		refresh = DefaultRefresh
	case refresh < minRefresh:
		refresh = minRefresh
	}
	if auto {
		names := p.rawModelNames[:0:0]
		for _, n := range p.rawModelNames {
			if n != "auto" {
				names = append(names, n)
			}
		}
		p.rawModelNames = names
	}
	p.disc = &discovery{auto: auto, refresh: refresh, store: learnedFor(p.name), wake: make(chan struct{}, 1)}
	return nil
}

// startDiscovery starts, for each pool that discovers its models, a
// goroutine that fetches every key's list now and then every refresh
// interval, until the config context ends. It never blocks.
func (h *Handler) startDiscovery(ctx caddy.Context) {
	if ctx.Context == nil {
		return
	}
	log := h.logger
	if log == nil {
		log = zap.NewNop()
	}
	for _, p := range h.pools {
		if p.disc != nil && p.disc.store != nil {
			go p.disc.run(ctx, p, log)
		}
	}
}

// wakeUp asks the pool's discovery for a fetch now (POST
// /llm_gateway/diagnose); a fetch already asked for is not repeated.
func (d *discovery) wakeUp() {
	if d == nil {
		return
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *discovery) run(ctx context.Context, p *pool, log *zap.Logger) {
	retry := discoveryRetry
	for round := 0; ; round++ {
		failed := d.fetchAll(ctx, p, log, round == 0)
		if !failed || round > 0 {
			d.fetched.Store(true)
		}
		wait := d.refresh
		if failed {
			wait = min(retry, d.refresh)
			retry = min(2*retry, d.refresh)
		} else {
			retry = discoveryRetry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-d.wake:
			t.Stop()
		}
	}
}

// fetchResult is what one key's models list said.
type fetchResult struct {
	names       []string
	ok          bool // names is the key's list
	unsupported bool // the upstream has no models list (404/405)
}

// fetchAll fetches every key's list, storing each as it comes (a slow
// upstream never holds back what the others said): a list replaces the
// key's previous one, an upstream without a list (404, 405) leaves the key
// unlisted, and any other failure keeps what was learned before. Key state
// is never changed: a models list is not a request. It reports whether
// some key's fetch failed; failures of the first round are logged at
// debug level only (see discoveryRetry), later ones as warnings.
func (d *discovery) fetchAll(ctx context.Context, p *pool, log *zap.Logger, first bool) bool {
	sem := make(chan struct{}, discoveryParallelism)
	var wg sync.WaitGroup
	var failed atomic.Bool
	// shared holds this round's name sets by listKey: keys whose lists
	// name the same models (the usual pool: every key of one account)
	// share one set instead of a map each. Used only inside update's
	// change, which runs under the store's lock.
	shared := map[string]map[string]struct{}{}
	for _, uk := range p.keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			r := fetchKeyModels(ctx, p.name, uk, log, first)
			if ctx.Err() != nil {
				return
			}
			if !r.ok && !r.unsupported {
				failed.Store(true)
				return
			}
			d.store.update(p.name, func(m map[string]map[string]struct{}) {
				if r.unsupported {
					delete(m, uk.fp)
					return
				}
				lk := listKey(r.names)
				set, seen := shared[lk]
				if !seen {
					set = make(map[string]struct{}, len(r.names))
					for _, n := range r.names {
						set[n] = struct{}{}
					}
					if old, had := m[uk.fp]; had && sameSet(old, set) {
						set = old // the last round's set, shared by its keys then too
					}
					shared[lk] = set
				}
				if old, had := m[uk.fp]; !had || !sameSet(old, set) {
					log.Info("models learned", zap.String("pool", p.name), zap.String("key", uk.id), zap.Int("models", len(set)))
				}
				m[uk.fp] = set
			})
		}()
	}
	wg.Wait()
	return failed.Load()
}

// update applies change to a copy of the learned lists, drops the keys the
// pool no longer has (its latest configuration, from the registry), and
// publishes the result.
func (s *learnedStore) update(pool string, change func(map[string]map[string]struct{})) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]map[string]struct{}{}
	if old := s.snap.Load(); old != nil {
		for fp, set := range old.keys {
			m[fp] = set
		}
	}
	change(m)
	if v, ok := registryValue("pool:" + pool); ok {
		ps := v.(*poolState)
		ps.mu.Lock()
		live := make(map[string]bool, len(ps.keys))
		for _, k := range ps.keys {
			live[k.Fingerprint] = true
		}
		ps.mu.Unlock()
		for fp := range m {
			if !live[fp] {
				delete(m, fp)
			}
		}
	}
	snap := &learnedSnap{keys: m, union: map[string]struct{}{}}
	done := map[uintptr]bool{} // sets already in the union (keys share them, see fetchAll)
	for _, set := range m {
		id := reflect.ValueOf(set).Pointer()
		if done[id] {
			continue
		}
		done[id] = true
		for n := range set {
			if _, dup := snap.union[n]; !dup {
				snap.union[n] = struct{}{}
				snap.names = append(snap.names, n)
			}
		}
	}
	sort.Strings(snap.names)
	s.snap.Store(snap)
}

// listKey identifies a models list by its names, sorted and each
// prefixed by its length: two lists with one key name the same models
// (a list naming one model twice has a key of its own, which only costs
// the sharing).
func listKey(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, n := range sorted {
		b.WriteString(strconv.Itoa(len(n)))
		b.WriteByte(':')
		b.WriteString(n)
	}
	return b.String()
}

func sameSet(a, b map[string]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for n := range a {
		if _, ok := b[n]; !ok {
			return false
		}
	}
	return true
}

// modelsListURL returns the key's models list URL and whether it is the
// Anthropic one (the same endpoint diagnose probes).
func (k *upstreamKey) modelsListURL() (string, bool) {
	if k.chatURL == "" && k.messageURL == "" { // a responses key: GET <base_url>/models with Bearer
		return strings.TrimSuffix(k.responsesURL, "/responses") + "/models", false
	}
	if k.chatURL == "" || (k.messageURL != "" && k.prefer == PreferAnthropic) {
		return strings.TrimSuffix(k.messageURL, "/v1/messages") + "/v1/models", true
	}
	return strings.TrimSuffix(k.chatURL, "/chat/completions") + "/models", false
}

// fetchKeyModels fetches one key's models list. Failures are logged with
// the pool, the key's id and the status or failure class, never with the
// secret or the upstream's error text.
// In the first round (first) a failure is logged at debug level: the
// round is retried soon (discoveryRetry).
func fetchKeyModels(ctx context.Context, pool string, uk *upstreamKey, log *zap.Logger, first bool) fetchResult {
	warn := log.Warn
	if first {
		warn = log.Debug
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	base, anthropic := uk.modelsListURL()
	var names []string
	seen := map[string]bool{}
	dropped := 0
	after := ""
	for page := 0; page < maxModelsPages; page++ {
		target := base
		if anthropic {
			q := url.Values{"limit": {"1000"}}
			if after != "" {
				q.Set("after_id", after)
			}
			target += "?" + q.Encode()
		}
		status, body, err := getModels(ctx, uk, anthropic, target)
		if err != nil {
			if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				class, _ := networkHint(err, uk.host)
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					class = "timeout"
				}
				warn("model discovery failed; keeping the models learned before", zap.String("pool", pool), zap.String("key", uk.id), zap.String("error", class))
			}
			return fetchResult{}
		}
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			log.Debug("upstream has no models list; the pool serves its configured models", zap.String("pool", pool), zap.String("key", uk.id), zap.Int("status", status))
			return fetchResult{unsupported: page == 0}
		}
		if status < 200 || status > 299 {
			warn("model discovery failed; keeping the models learned before", zap.String("pool", pool), zap.String("key", uk.id), zap.Int("status", status))
			return fetchResult{}
		}
		ids, ok := parseModelIDs(body)
		if !ok {
			warn("model discovery: the models list is not a JSON list of models; keeping the models learned before", zap.String("pool", pool), zap.String("key", uk.id))
			return fetchResult{}
		}
		for _, id := range ids {
			if !validModelName(id) || seen[id] {
				continue
			}
			if len(names) >= maxLearnedPerKey {
				dropped++
				continue
			}
			seen[id] = true
			names = append(names, id)
		}
		if !anthropic || !gjson.GetBytes(body, "has_more").Bool() {
			break
		}
		after = gjson.GetBytes(body, "last_id").String()
		if after == "" {
			break
		}
	}
	if dropped > 0 {
		log.Warn("model discovery: list cut", zap.String("pool", pool), zap.String("key", uk.id), zap.Int("kept", maxLearnedPerKey), zap.Int("dropped", dropped))
	}
	return fetchResult{names: names, ok: true}
}

// getModels sends one models list request and returns the status and, for
// a 2xx answer, the body (at most maxModelsBody bytes).
func getModels(ctx context.Context, uk *upstreamKey, anthropic bool, target string) (int, []byte, error) {
	req, err := newUpstreamRequest(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	uk.authorize(req.Header, anthropic)
	resp, err := uk.do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// parseModelIDs reads the model ids of a models list: {"data":[{"id"}]}
// (OpenAI and Anthropic), a bare array of such objects, or {"models":
// [{"id"|"name"}]} (Ollama-style). ok is false when the body is none of
// these.
func parseModelIDs(body []byte) ([]string, bool) {
	if !translate.ValidJSON(body) { // depth first: gjson's validator recurses per level
		return nil, false
	}
	root := gjson.ParseBytes(body)
	list := root.Get("data")
	if root.IsArray() {
		list = root
	} else if !list.IsArray() {
		list = root.Get("models")
	}
	if !list.IsArray() {
		return nil, false
	}
	var ids []string
	list.ForEach(func(_, v gjson.Result) bool {
		id := v.Get("id")
		if id.Type != gjson.String {
			id = v.Get("name")
		}
		if v.Type == gjson.String {
			id = v
		}
		if id.Type == gjson.String {
			ids = append(ids, id.Str)
		}
		return true
	})
	return ids, true
}

// validModelName accepts names of 1 to maxLearnedName bytes without white
// space or control characters.
func validModelName(s string) bool {
	if s == "" || len(s) > maxLearnedName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// servesLearned reports whether an "auto" pool serves model: a learned
// name, or a client name that the pool's model_map sends to a learned
// name.
func (p *pool) servesLearned(model string) bool {
	if p.disc == nil || !p.disc.auto {
		return false
	}
	snap := p.disc.store.load()
	if snap == nil {
		return false
	}
	if _, ok := snap.union[model]; ok {
		return true
	}
	for _, m := range p.modelMap {
		if matchPattern(m.Pattern, model) {
			_, ok := snap.union[m.Model]
			return ok
		}
	}
	return false
}

// keyLacksModel reports whether key uk must not be sent the upstream
// model: some key of the pool lists it, and uk's own list (or uk, when it
// has none) does not. A model no key lists goes to every key.
func (p *pool) keyLacksModel(uk *upstreamKey, model string) bool {
	if p.disc == nil {
		return false
	}
	snap := p.disc.store.load()
	if snap == nil {
		return false
	}
	if _, learned := snap.union[model]; !learned {
		return false
	}
	list, known := snap.keys[uk.fp]
	if !known {
		// no list learned for this key (it offers none, or its fetch
		// failed): in a models auto pool it serves only what it listed;
		// elsewhere it may serve the model, as before discovery
		return p.disc.auto
	}
	_, has := list[model]
	return !has
}

// listNames returns the names GET /v1/models may list for the pool: the
// configured exact names, then the learned ones (sorted).
func (p *pool) listNames() []string {
	if p.disc == nil {
		return p.rawModelNames
	}
	snap := p.disc.store.load()
	if snap == nil || len(snap.names) == 0 {
		return p.rawModelNames
	}
	out := make([]string, 0, len(p.rawModelNames)+len(snap.names))
	out = append(out, p.rawModelNames...)
	for _, n := range snap.names {
		if !p.isRawName(n) {
			out = append(out, n)
		}
	}
	return out
}

func (p *pool) isRawName(n string) bool {
	for _, r := range p.rawModelNames {
		if r == n {
			return true
		}
	}
	return false
}

// learning reports whether the pool serves the learned names and has
// none yet while its first fetches are still running.
func (d *discovery) learning() bool {
	if d == nil || !d.auto || d.fetched.Load() {
		return false
	}
	s := d.store.load()
	return s == nil || len(s.names) == 0
}

// notServed is the answer for a model no pool serves: 404 with
// notServedMessage; or, while a "models auto" pool the gateway key may use
// is still fetching its first lists with nothing learned, 503 with
// Retry-After: 1, so that clients retry in a moment rather than give up.
func (h *Handler) notServed(model string, gk *gwKey) *loopFailure {
	for _, p := range h.pools {
		if gk.allowsPool(p.name) && p.disc.learning() {
			return &loopFailure{status: http.StatusServiceUnavailable, class: translate.ErrUpstreamUnavailable, retryAfter: time.Second,
				msg: "model " + quoteClient(model) + " is not served yet: pool " + strconv.Quote(p.name) +
					" is still learning its models from its keys' models lists; retry in a moment"}
		}
	}
	return &loopFailure{status: http.StatusNotFound, class: translate.ErrNotFound, msg: h.notServedMessage(model, gk),
		param: "model", code: "model_not_found"} // as OpenAI answers an unknown model
}

// notServedMessage is the error message for a model no pool serves: each
// pool the gateway key may use with its patterns ("auto" with the number
// of names learned), and the nearest model name the key may use.
func (h *Handler) notServedMessage(model string, gk *gwKey) string {
	var b strings.Builder
	b.WriteString("model ")
	b.WriteString(quoteClient(model))
	b.WriteString(" is not served by this gateway")
	if near := nearestName(model, h.modelNames(gk)); near != "" {
		b.WriteString("; did you mean ")
		b.WriteString(strconv.Quote(near))
		b.WriteString("?")
	} else {
		b.WriteString(".")
	}
	n := 0
	for _, p := range h.pools {
		if !gk.allowsPool(p.name) {
			continue
		}
		if n == 0 {
			b.WriteString(" Pools:")
		} else {
			b.WriteString(";")
		}
		n++
		b.WriteString(" ")
		b.WriteString(p.name)
		b.WriteString(" (")
		for i, m := range p.models {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(m)
			if m == "auto" && p.disc != nil && p.disc.auto {
				learned := 0
				if s := p.disc.store.load(); s != nil {
					learned = len(s.names)
				}
				if learned == 0 {
					b.WriteString(": no models learned yet")
				} else {
					b.WriteString(": " + strconv.Itoa(learned) + " learned")
				}
			}
		}
		b.WriteString(")")
	}
	b.WriteString(" (see GET /v1/models)")
	return b.String()
}

// suggestion bounds: names compared, and their length in bytes.
const (
	maxSuggestNames = 5000
	maxSuggestLen   = 128
)

// nearestName returns the name closest to model by edit distance
// (ASCII case-insensitive), when it is within a third of the model's
// length (at least 1, at most 8 edits); "" when none is. At most
// maxSuggestNames names of up to maxSuggestLen bytes are compared, each in
// a band of the current best distance, without allocating.
func nearestName(model string, names []string) string {
	if len(model) == 0 || len(model) > maxSuggestLen {
		return ""
	}
	limit := min(max(len(model)/3, 1), 8)
	best, bestD := "", limit+1
	for i, n := range names {
		if i >= maxSuggestNames {
			break
		}
		if len(n) > maxSuggestLen || absDiff(len(n)-len(model)) >= bestD {
			continue
		}
		if d := boundedEditDistance(model, n, bestD-1); d < bestD {
			best, bestD = n, d
			if d == 0 {
				break
			}
		}
	}
	return best
}

func absDiff(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// boundedEditDistance is the Levenshtein distance of a and b in bytes
// (ASCII case-insensitive), or limit+1 as soon as it must exceed limit.
// Only the cells within limit of the diagonal are computed; both strings
// must be at most maxSuggestLen bytes.
func boundedEditDistance(a, b string, limit int) int {
	if absDiff(len(a)-len(b)) > limit {
		return limit + 1
	}
	const inf = 1 << 20
	var rows [2][maxSuggestLen + 1]int
	prev, cur := &rows[0], &rows[1]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-limit), min(len(b), i+limit)
		if lo > 1 {
			cur[lo-1] = inf
		} else {
			cur[0] = i
		}
		rowMin := inf
		if lo == 1 {
			rowMin = cur[0]
		}
		ca := lowerASCII(a[i-1])
		for j := lo; j <= hi; j++ {
			cost := 1
			if ca == lowerASCII(b[j-1]) {
				cost = 0
			}
			up := inf
			if j <= i-1+limit { // prev[j] is inside the previous row's band
				up = prev[j]
			}
			cur[j] = min(up+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if hi < len(b) {
			cur[hi+1] = inf
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	if prev[len(b)] > limit {
		return limit + 1
	}
	return prev[len(b)]
}
