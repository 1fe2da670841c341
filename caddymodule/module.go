// Package caddymodule is the Caddy glue of llm_gateway: module
// registration, JSON and Caddyfile configuration, Provision/Validate/
// Cleanup, the HTTP handler with its attempt loop, and the mock upstream
// module used by tests and the demo.
package caddymodule

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/translate"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler is the llm_gateway HTTP handler: one address, one gateway key,
// many upstream LLM API keys behind it.
//
// It serves, under /v1: POST /v1/chat/completions (OpenAI Chat
// Completions, streaming and not) and GET /v1/models; and GET /healthz
// (process up, always 200) and GET /readyz (200 when some key of some pool
// can take a request now, else 503 with the reason). Other paths go to the
// next handler. Query strings are ignored for routing.
//
// Each request is routed by its model to a pool, which picks a key (fewest
// requests in flight, ties round robin; keys that are busy, cooling down or
// whose circuit breaker is open are skipped), forwards the request to the
// key's upstream, and on 429, 5xx, connection errors or 401/402/403 moves to
// another key while nothing has been written to the client.
//
// Responses carry `X-Request-Id` (the client's, else a generated one) and
// `X-Routed-Via: <pool>/<key id>`.
type Handler struct {
	// APIKeys are the gateway keys clients may present, as
	// `Authorization: Bearer <key>` or `x-api-key: <key>`. Placeholders
	// such as {env.GATEWAY_KEY} are resolved at provision. Without any key,
	// /v1 answers 401 unless Auth is "off".
	APIKeys []string `json:"api_keys,omitempty" caddyfile:"-"`

	// GatewayKeys are gateway keys with their own scope (pools, models)
	// and limits (rpm, max_concurrency). They are accepted alongside
	// APIKeys.
	GatewayKeys []*GatewayKeyConfig `json:"gateway_keys,omitempty"`

	// Auth set to "off" lets /v1 be used without a gateway key. It must be
	// said explicitly; the default is to require a key.
	Auth AuthMode `json:"auth,omitempty"`

	// Pools are the key pools. A request goes to the first pool whose
	// Models patterns match its model. At least one is required.
	Pools []*PoolConfig `json:"pools,omitempty"`

	// UsageFile is where key usage (lifetime counters, quota windows,
	// token counts) is saved so that it survives a restart; "off" keeps it
	// in memory only. The first handler provisioned in a process decides.
	// Default: "<Caddy data dir>/llm_gateway/usage.json".
	UsageFile string `json:"usage_file,omitempty"`

	// LogPayloads adds the request body and the non-streamed response body
	// (each cut at 16 KiB) to the per-request log entry. Prompts and
	// answers are often confidential: a warning is logged when it is on.
	// Default: false.
	LogPayloads bool `json:"log_payloads,omitempty"`

	// RecentRequests is how many finished requests the admin API's
	// request log (GET /llm_gateway/requests, the status page's Requests
	// tab) keeps in memory; default 1000. Nothing is persisted; bodies are
	// kept (clipped to 16 KiB) only with LogPayloads.
	RecentRequests int `json:"recent_requests,omitempty"`

	// MaxRequestBody is the largest request body accepted, in bytes.
	// Larger bodies get 413 and never go upstream. Default: 8 MiB.
	MaxRequestBody int64 `json:"max_request_body,omitempty" caddyfile:"size"`

	// MaxInFlight bounds the completion and count_tokens requests served
	// at once, across all pools and every llm_gateway handler of the
	// process (the old and the new configuration during a reload
	// included). Beyond it a request gets 503 with Retry-After (1-3 s) in
	// its dialect and its body is not read. Default: 1024 x GOMAXPROCS
	// (DefaultInFlightPerCPU).
	MaxInFlight int `json:"max_in_flight,omitempty"`

	// MaxBufferedBytes bounds the bytes of request bodies held in memory
	// at once, across every llm_gateway handler of the process. A body is
	// booked by its Content-Length before a byte is read (a chunked body
	// as it grows) and released when its request ends; a request that
	// does not fit gets 503 with Retry-After in its dialect, and its body
	// is not read. A translated request peaks at up to 4x its body, so
	// the default keeps the bodies' peak within the memory limit. Default:
	// a quarter of the Go memory limit (GOMEMLIMIT), else of the cgroup's
	// memory limit, else of the machine's RAM; 1 GiB when none can be
	// read; never less than 2 x MaxRequestBody.
	MaxBufferedBytes int64 `json:"max_buffered_bytes,omitempty" caddyfile:"size"`

	// ClientWriteTimeout cuts a stream whose client accepts no bytes for
	// this long (a write or flush to the client that does not complete):
	// the upstream request is cancelled, the key's slot is freed at once,
	// and the request is logged with status 499 and stream_error
	// "client_write_timeout" (the client's fault, never the key's). It is
	// one value for the handler because it is about the client's
	// connection, not about any pool. Default: 30s.
	ClientWriteTimeout caddy.Duration `json:"client_write_timeout,omitempty"`

	// Egress is the global list of egress exits (proxies) that upstream
	// requests leave through, unless a pool has its own list or a key its
	// own exit. See EgressConfig. Default: none (direct).
	Egress *EgressConfig `json:"egress,omitempty"`

	// LearnLimits is the default of every pool's LearnLimits (reading the
	// upstreams' rate-limit headers to keep keys short of a 429): "on" or
	// "off". A pool's own setting wins. Default: "on".
	LearnLimits LearnSwitch `json:"learn_limits,omitempty"`

	// State chooses where pool runtime state lives: in this instance's
	// memory (default) or in Redis, shared by several instances. See
	// StateConfig.
	State *StateConfig `json:"state,omitempty"`

	// Prices add to or override the built-in price table for every pool
	// (Caddyfile: `price <model-pattern> input <usd> output <usd> ...`);
	// a pool's own Prices come first. See PriceConfig and prices.go.
	Prices []*PriceConfig `json:"prices,omitempty" caddyfile:"-"`

	gatewayKeys []*gwKey
	pools       []*pool
	sortedPools []*pool  // by priority, then configuration order
	stored      []string // registry keys this instance holds a reference to
	loadID      any      // the config load that provisioned this instance
	stateKey    string   // stateRegistry key held, "" for memory
	logger      *zap.Logger
	metrics     *metrics    // nil until metrics are provisioned
	budgets     *budgetBook // spend against budgets; nil books nothing
	egress      *egressSet  // the exits this instance holds (egress.go)
	priceTab    *priceTable // the global price overrides, nil for none
	// parseFor is, by client dialect, the upstream dialect that every key
	// of every pool serves that client in (0 when they differ): the
	// request is parsed for it (translate.ParseRequestFor)
	parseFor [4]translate.Dialect
}

// DefaultMaxRequestBody is the default of Handler.MaxRequestBody.
const DefaultMaxRequestBody = 8 << 20

// Defaults of PoolConfig fields that keypool does not own.
const (
	DefaultMaxRetries     = 3
	DefaultAcquireTimeout = 30 * time.Second
	DefaultRequestTimeout = 120 * time.Second
	// DefaultStreamIdleTimeout is the default of
	// PoolConfig.StreamIdleTimeout.
	DefaultStreamIdleTimeout = 5 * time.Minute
	DefaultAttemptTimeout    = 15 * time.Second
	DefaultConnectTimeout    = 10 * time.Second
	DefaultTotalTimeout      = 45 * time.Second
)

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.llm_gateway",
		New: func() caddy.Module { return new(Handler) },
	}
}

// pool is a provisioned PoolConfig.
type pool struct {
	name           string
	models         []string
	modelMap       []ModelMapping // most specific first
	defaultModel   string
	kp             *keypool.Pool
	keys           map[string]*upstreamKey // by fingerprint
	order          []string                // key fingerprints in configured order
	maxRetries     int
	acquireTimeout time.Duration
	requestTimeout time.Duration
	streamIdle     time.Duration // stream_idle_timeout
	attemptTimeout time.Duration
	connectTimeout time.Duration
	totalTimeout   time.Duration
	respOpts       translate.ResponseOptions // reasoning_content
	priority       int
	rawModelNames  []string   // non-wildcard names for /v1/models
	disc           *discovery // model discovery, nil when off

	// egress is the pool's exit list (its own or the global); nil: direct
	egress *egressPlan
	prices *priceTable // the pool's price overrides, nil for none
	// globalPrices are the llm_gateway block's price overrides (shown by
	// GET /llm_gateway/prices beside the pool's own), nil for none
	globalPrices *priceTable
}

// upstreamKey is a provisioned KeyConfig. It holds the resolved secret and
// must never be logged or serialised.
type upstreamKey struct {
	id     string // configured id, else the masked secret (logs, admin)
	public string // configured id, else "#<position>" (response headers)
	fp     string
	// material identifies the key across instances (SHA-256 of base URL
	// and secret; in memory only, named in Redis through an HMAC, see
	// redisBackend.register)
	material   [32]byte
	chatURL    string // OpenAI Chat Completions endpoint, "" when none
	messageURL string // Anthropic Messages endpoint, "" when none
	// responsesURL is the OpenAI Responses endpoint, "" when none
	responsesURL string
	prefer       PreferEndpoint // never "" once provisioned
	authHeader   string         // "Bearer <secret>"
	secret       string
	forms        *secretForms // the secret's encoded forms, for redaction (built once)
	// attemptTimeout overrides the pool's for streamed first bytes (0: none)
	attemptTimeout time.Duration
	// host is the upstream's host:port, to skip keys of a host that is down
	host string
	// egress is the key's exit list (its exclusive exit, its pool's or the
	// global list); nil: direct
	egress   *egressPlan
	exitSeen atomic.Value // *egressExit of the last diagnose or discovery request
}

// Provision resolves secrets, builds the pools and attaches them to the
// process-wide state registry so that a config reload keeps each key's
// live state.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	protectServerLogs(ctx, h.logger)
	initUsagePersistence(h.UsageFile, h.logger)
	recent.resize(h.RecentRequests)
	if h.LogPayloads {
		h.logger.Warn("log_payloads is on: request and response bodies (prompts and answers) are written to the log")
	}
	repl := caddy.NewReplacer()
	if h.MaxRequestBody <= 0 {
		h.MaxRequestBody = DefaultMaxRequestBody
	}
	if h.MaxInFlight == 0 {
		h.MaxInFlight = defaultMaxInFlight()
	}
	if h.MaxBufferedBytes == 0 {
		h.MaxBufferedBytes = defaultMaxBufferedBytes(h.MaxRequestBody)
	}
	if err := h.provisionGatewayKeys(repl); err != nil {
		return err
	}
	if err := h.provisionEgress(repl); err != nil {
		return err
	}
	for i, pc := range h.Pools {
		if pc == nil {
			return fmt.Errorf("pool %d: empty", i)
		}
		h.loadID = ctx.GetMetricsRegistry()
		p, err := h.provisionPool(pc, repl, h.loadID)
		if err != nil {
			return fmt.Errorf("pool %q: %v", pc.Name, err)
		}
		h.pools = append(h.pools, p)
	}
	h.sortedPools = append([]*pool(nil), h.pools...)
	sort.SliceStable(h.sortedPools, func(i, j int) bool { return h.sortedPools[i].priority < h.sortedPools[j].priority })
	h.parseFor = upstreamDialects(h.pools)
	if err := h.provisionPrices(); err != nil {
		return err
	}
	if err := h.provisionState(repl); err != nil {
		return err
	}
	h.shareEgress() // exit cooldowns through the state backend (cluster mode)
	h.logEgress()
	if err := h.provisionBudgets(ctx); err != nil {
		return err
	}
	h.metrics = h.provisionInstrumentation(ctx)
	h.startDiscovery(ctx) // in the background: startup never waits for a models list
	h.warnTimeouts()
	h.logStartupSummary(ctx)
	return nil
}

func (h *Handler) provisionPool(pc *PoolConfig, repl *caddy.Replacer, loadID any) (*pool, error) {
	if pc.Name == "" {
		return nil, errors.New("name is required")
	}
	p := &pool{
		name:           pc.Name,
		models:         pc.Models,
		defaultModel:   pc.DefaultModel,
		keys:           map[string]*upstreamKey{},
		maxRetries:     DefaultMaxRetries,
		acquireTimeout: durationOr(pc.AcquireTimeout, DefaultAcquireTimeout),
		requestTimeout: durationOr(pc.RequestTimeout, DefaultRequestTimeout),
		streamIdle:     durationOr(pc.StreamIdleTimeout, DefaultStreamIdleTimeout),
		attemptTimeout: durationOr(pc.AttemptTimeout, DefaultAttemptTimeout),
		connectTimeout: durationOr(pc.ConnectTimeout, DefaultConnectTimeout),
		totalTimeout:   durationOr(pc.TotalTimeout, DefaultTotalTimeout),
		priority:       pc.Priority,
		respOpts:       translate.ResponseOptions{OmitReasoning: pc.ReasoningContent == ReasoningOff},
	}
	if err := new(ReasoningSwitch).UnmarshalText([]byte(pc.ReasoningContent)); err != nil {
		return nil, fmt.Errorf("reasoning_content %q: want on or off", string(pc.ReasoningContent))
	}
	if len(p.models) == 0 {
		p.models = []string{"*"}
	}
	if pc.MaxRetries != nil {
		if *pc.MaxRetries < 0 {
			return nil, errors.New("max_retries must not be negative")
		}
		p.maxRetries = *pc.MaxRetries
	}
	p.modelMap = append([]ModelMapping(nil), pc.ModelMap...)
	for _, m := range p.modelMap {
		if m.Pattern == "" || m.Model == "" {
			return nil, errors.New("model_map entries need a pattern and a model")
		}
	}
	sort.SliceStable(p.modelMap, func(i, j int) bool {
		return specificity(p.modelMap[i].Pattern) > specificity(p.modelMap[j].Pattern)
	})
	seen := map[string]bool{}
	addName := func(n string) {
		if n != "" && !strings.HasSuffix(n, "*") && !seen[n] {
			seen[n] = true
			p.rawModelNames = append(p.rawModelNames, n)
		}
	}
	for _, m := range p.models {
		addName(m)
	}
	for _, m := range p.modelMap {
		addName(m.Pattern)
	}
	if len(pc.Keys) == 0 {
		return nil, errors.New("at least one key is required")
	}
	if err := h.poolEgress(p, pc, repl); err != nil {
		return nil, err
	}
	kcs := make([]keypool.KeyConfig, 0, len(pc.Keys))
	for i, kc := range pc.Keys {
		if kc == nil {
			return nil, fmt.Errorf("key %d: empty", i)
		}
		uk, err := provisionKey(kc, repl, i+1)
		if err != nil {
			label := kc.ID
			if label == "" {
				label = fmt.Sprintf("#%d", i+1)
			}
			return nil, fmt.Errorf("key %s: %v", label, err)
		}
		if _, dup := p.keys[uk.fp]; dup {
			return nil, fmt.Errorf("key %s: the same secret and base_url are configured twice", uk.id)
		}
		if uk.egress, err = h.egress.keyPlan(kc, p.egress, repl); err != nil {
			return nil, fmt.Errorf("key %s: %v", uk.id, err)
		}
		p.keys[uk.fp] = uk
		p.order = append(p.order, uk.fp)
		kcfg := keypool.KeyConfig{Fingerprint: uk.fp, ID: uk.id, MaxConcurrency: kc.MaxConcurrency, Weight: kc.Weight,
			Standby: kc.Standby, Priority: kc.Priority, Host: uk.host, RPM: kc.RPM, TPM: kc.TPM}
		if kc.RPM < 0 || kc.TPM < 0 {
			return nil, fmt.Errorf("key %s: rpm and tpm must not be negative", uk.id)
		}
		q, err := kc.Quota.Quota()
		if err != nil {
			return nil, fmt.Errorf("key %s: quota: %v", uk.id, err)
		}
		kcfg.Quota = q
		kcs = append(kcs, kcfg)
	}
	settings, err := poolSettings(pc)
	if err != nil {
		return nil, err
	}
	if pc.LearnLimits == "" && h.LearnLimits == LearnOff {
		settings.LearnLimitsOff = true // the handler's default
	}
	kp, regKey, err := attachPool(pc.Name, settings, kcs, loadID)
	if err != nil {
		return nil, err
	}
	h.stored = append(h.stored, regKey)
	p.kp = kp
	kp.SetVerifier(h.verifier(p), verifierLimit())
	if err := p.provisionDiscovery(pc); err != nil {
		return nil, err
	}
	return p, nil
}

func provisionKey(kc *KeyConfig, repl *caddy.Replacer, position int) (*upstreamKey, error) {
	if kc.Secret == "" {
		return nil, errors.New("secret is required")
	}
	// errors name the placeholder, never the value
	secret, err := resolveSecretValue(repl, kc.Secret)
	if err != nil {
		return nil, err
	}
	rawBase, dialect := kc.BaseURL, kc.Dialect.canonical()
	// presetResponses is the preset's Responses root, given to a key that
	// takes the preset's base URL and dialect (api.openai.com serves both)
	var presetResponses string
	if kc.Provider != "" {
		pr, ok := LookupPreset(kc.Provider)
		if !ok {
			hint := ""
			if s := nearest(kc.Provider, PresetNames()); s != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", s)
			}
			return nil, fmt.Errorf("provider %q: unknown%s; known: %s", kc.Provider, hint, strings.Join(PresetNames(), ", "))
		}
		if rawBase == "" { // an explicit base_url always wins
			rawBase = pr.BaseURL
		}
		if dialect == "" {
			dialect = KeyDialect(pr.Dialect)
		}
		if strings.TrimRight(rawBase, "/") == pr.BaseURL && dialect == KeyDialect(pr.Dialect) {
			presetResponses = pr.ResponsesBaseURL
		}
	}
	if rawBase == "" && dialect == DialectResponses {
		return nil, errors.New("base_url is required: dialect responses calls <base_url>/responses, e.g. base_url https://api.openai.com/v1")
	}
	base, err := normaliseBaseURL(rawBase)
	if err != nil {
		return nil, err
	}
	var host string
	if u, err := url.Parse(base); err == nil {
		host = u.Host
	}
	sum := sha256.Sum256([]byte(fingerprintSalt() + base + "\n" + secret))
	uk := &upstreamKey{
		material:       sha256.Sum256([]byte(base + "\n" + secret)),
		id:             kc.ID,
		fp:             hex.EncodeToString(sum[:8]),
		prefer:         kc.Prefer,
		authHeader:     "Bearer " + secret,
		secret:         secret,
		forms:          newSecretForms(secret),
		attemptTimeout: time.Duration(kc.AttemptTimeout),
		host:           host,
	}
	if uk.prefer == "" {
		uk.prefer = PreferAuto
	}
	switch dialect {
	case "", DialectOpenAI:
		uk.chatURL = base + "/chat/completions"
		if kc.AnthropicBaseURL != "" {
			ab, err := normaliseBaseURL(kc.AnthropicBaseURL)
			if err != nil {
				return nil, fmt.Errorf("anthropic_%v", err)
			}
			uk.messageURL = anthropicRoot(ab) + "/v1/messages"
		}
	case DialectAnthropic:
		if kc.AnthropicBaseURL != "" {
			return nil, errors.New("anthropic_base_url is for openai-dialect keys; an anthropic key uses base_url")
		}
		uk.messageURL = anthropicRoot(base) + "/v1/messages"
	case DialectResponses:
		if kc.AnthropicBaseURL != "" {
			return nil, errors.New("anthropic_base_url is for openai-dialect keys; a responses key speaks only OpenAI Responses")
		}
		if kc.ResponsesBaseURL != "" {
			return nil, errors.New("responses_base_url is for openai- and anthropic-dialect keys; a responses key uses base_url")
		}
		uk.responsesURL = base + "/responses"
	default:
		return nil, fmt.Errorf("dialect %q: want openai, anthropic or responses", string(kc.Dialect))
	}
	if kc.ResponsesBaseURL != "" {
		rb, err := normaliseBaseURL(kc.ResponsesBaseURL)
		if err != nil {
			return nil, fmt.Errorf("responses_%v", err)
		}
		uk.responsesURL = rb + "/responses"
	} else if presetResponses != "" && uk.responsesURL == "" {
		uk.responsesURL = presetResponses + "/responses"
	}
	switch uk.prefer {
	case PreferAuto:
	case PreferOpenAI, PreferAnthropic, PreferResponses:
		// a preferred endpoint the key lacks would silently fall back to
		// another: say which option gives it
		want := map[PreferEndpoint]struct{ url, msg string }{
			PreferOpenAI:    {uk.chatURL, "the key has no Chat Completions endpoint (only openai-dialect keys do); remove prefer or use prefer auto"},
			PreferAnthropic: {uk.messageURL, "the key has no Anthropic Messages endpoint; set anthropic_base_url"},
			PreferResponses: {uk.responsesURL, "the key has no OpenAI Responses endpoint; set responses_base_url (for OpenAI itself, the same URL as base_url)"},
		}[uk.prefer]
		if want.url == "" {
			return nil, fmt.Errorf("prefer %s: %s", string(uk.prefer), want.msg)
		}
	default:
		return nil, fmt.Errorf("prefer %q: want auto, openai, anthropic or responses", string(kc.Prefer))
	}
	uk.public = uk.id
	if uk.id == "" {
		uk.id = maskSecret(secret)
		uk.public = "#" + strconv.Itoa(position)
	}
	if kc.MaxConcurrency < 0 || kc.Weight < 0 {
		return nil, errors.New("max_concurrency and weight must not be negative")
	}
	return uk, nil
}

// normaliseBaseURL checks an upstream base URL and strips trailing slashes.
func normaliseBaseURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("base_url is required")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base_url %q: want an absolute http(s) URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base_url %q: must not carry credentials, a query or a fragment", u.Redacted())
	}
	return strings.TrimRight(raw, "/"), nil
}

// anthropicRoot strips a trailing "/v1" from an Anthropic base URL, so that
// both "https://api.anthropic.com" and "https://api.anthropic.com/v1" give
// ".../v1/messages" and never ".../v1/v1/messages".
func anthropicRoot(base string) string {
	return strings.TrimSuffix(base, "/v1")
}

// maskSecret shows the first 6 and last 4 characters of a secret (per
// DESIGN: secrets), fewer for shorter secrets so that at most a quarter
// of it shows, and only asterisks below 16 characters.
func maskSecret(s string) string {
	switch {
	case len(s) < 16:
		return "****"
	case len(s) < 40:
		return s[:3] + "..." + s[len(s)-2:]
	}
	return s[:6] + "..." + s[len(s)-4:]
}

// Validate checks the provisioned configuration.
func (h *Handler) Validate() error {
	switch h.Auth {
	case "", AuthOn:
	case AuthOff:
		if len(h.gatewayKeys) > 0 {
			return errors.New("auth off together with api_key: choose one")
		}
	default:
		return fmt.Errorf("auth: unknown value %q (want off)", string(h.Auth))
	}
	if len(h.pools) == 0 {
		return errors.New("at least one pool is required")
	}
	if h.MaxInFlight < 0 {
		return errors.New("max_in_flight must not be negative")
	}
	if h.MaxBufferedBytes < h.MaxRequestBody {
		return fmt.Errorf("max_buffered_bytes (%d) must be at least max_request_body (%d), or no largest body could be read", h.MaxBufferedBytes, h.MaxRequestBody)
	}
	if h.ClientWriteTimeout < 0 {
		return errors.New("client_write_timeout must not be negative")
	}
	if err := checkRecentRequests(h.RecentRequests); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, p := range h.pools {
		if names[p.name] {
			return fmt.Errorf("pool %q: defined twice", p.name)
		}
		names[p.name] = true
	}
	return h.validateGatewayKeyScopes()
}

// Cleanup releases this instance's references to pool state. In-flight
// requests keep their leases and release them normally.
func (h *Handler) Cleanup() error {
	saveUsage() // before letting go of the pools: at exit they disappear
	for _, k := range h.stored {
		detachPool(k, h.loadID)
	}
	h.stored = nil
	h.egress.release()
	h.cleanupState()
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
