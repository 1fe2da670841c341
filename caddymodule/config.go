package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
)

// PoolConfig configures one pool of upstream keys that serve a set of
// client model names.
type PoolConfig struct {
	// Priority orders pools that serve the same model: the lowest number
	// is tried first and the others are fallbacks, tried in order when no
	// key of the earlier pools can serve the request (the response then
	// carries X-Fallback-From). Pools with equal priority keep their
	// configuration order. Default: 0.
	Priority int `json:"priority,omitempty" caddyfile:"anyint"`

	// Name identifies the pool in logs, metrics, the admin API and the
	// X-Routed-Via header. It also keys the pool's live state across config
	// reloads, so it must be unique within the process. Required.
	Name string `json:"name" caddyfile:"-"`

	// Budget is the pool's spend limit in USD per period across its keys
	// (see BudgetSpec): at the limit its requests get 429 with
	// Retry-After until the period resets (or go to a fallback pool).
	// Default: none.
	Budget *BudgetSpec `json:"budget,omitempty" caddyfile:"-"`

	// Models lists the client model names this pool serves. An entry is an
	// exact name or a prefix ending in '*' ("gpt-4o*"); "*" matches any
	// model. The entry "auto" serves the names learned from the keys'
	// models lists (see Refresh): a learned model goes only to the keys
	// that list it, and a client name that ModelMap sends to a learned
	// name is served too. Default: ["*"].
	Models []string `json:"models,omitempty"`

	// Refresh is how often each key's models list is fetched again (GET
	// <base_url>/models with Bearer; Anthropic keys GET /v1/models with
	// x-api-key). The lists are fetched at provision, in the background
	// (a request never waits for them), every Refresh after that, and
	// when POST /llm_gateway/diagnose runs. GET /v1/models lists the
	// learned names the pool serves next to the configured ones, and a
	// learned model goes only to the keys that list it. An upstream
	// without a models list (404, 405) leaves its key as configured; a
	// failed fetch keeps what was learned before. A negative value
	// (Caddyfile: "refresh off") turns discovery off, which "models auto"
	// does not allow. Default: 1h.
	Refresh caddy.Duration `json:"refresh,omitempty" caddyfile:"-"`

	// ModelMap rewrites client model names to upstream model names. The
	// most specific matching pattern wins (an exact name beats any
	// wildcard; a longer prefix beats a shorter one). When nothing matches
	// DefaultModel is used, and when that is empty the name passes through
	// unchanged.
	ModelMap []ModelMapping `json:"model_map,omitempty"`

	// DefaultModel is the upstream model used when no ModelMap entry
	// matches. Default: empty (pass the client's model through).
	DefaultModel string `json:"default_model,omitempty"`

	// Prices add to or override the global and built-in prices for this
	// pool's upstream models (Caddyfile: `price <model-pattern> input
	// <usd> output <usd> ...`). See PriceConfig.
	Prices []*PriceConfig `json:"prices,omitempty" caddyfile:"-"`

	// Keys are the upstream API keys of the pool. At least one is
	// required.
	Keys []*KeyConfig `json:"keys,omitempty"`

	// MaxConcurrencyPerKey is the number of requests a key may have in
	// flight at once, unless the key sets its own. Default: 1.
	MaxConcurrencyPerKey int `json:"max_concurrency_per_key,omitempty"`

	// CooldownAfterSuccess is how long a key rests after each successful
	// request, for upstreams that answer 429 to a key used again too
	// soon. Default: 0.
	CooldownAfterSuccess caddy.Duration `json:"cooldown_after_success,omitempty"`

	// RateLimitCooldown is the backoff base after a 429 that carries no
	// Retry-After; it doubles with each consecutive 429 of the key.
	// Default: 3s.
	RateLimitCooldown caddy.Duration `json:"rate_limit_cooldown,omitempty"`

	// ErrorCooldown is the backoff base after a transient failure (5xx,
	// connection reset, timeout); it doubles with each consecutive
	// failure of the key. Default: 5s.
	ErrorCooldown caddy.Duration `json:"error_cooldown,omitempty"`

	// MaxCooldown caps every computed backoff. A Retry-After sent by the
	// upstream is authoritative and may exceed it. Default: 10m.
	MaxCooldown caddy.Duration `json:"max_cooldown,omitempty"`

	// FailureThreshold is the number of consecutive transient failures
	// that opens a key's circuit breaker. Default: 3.
	FailureThreshold int `json:"failure_threshold,omitempty"`

	// BreakerOpen is how long an open circuit breaker keeps the key out of
	// rotation before one half-open probe request is let through.
	// Default: 30s.
	BreakerOpen caddy.Duration `json:"breaker_open,omitempty"`

	// MaxRetries is the number of extra attempts on other keys after a
	// transient failure (5xx, connection reset, timeout). Skipping keys
	// that answered 401/402/403 or 429 does not spend it. Default: 3; set
	// 0 explicitly for no retries.
	MaxRetries *int `json:"max_retries,omitempty" caddyfile:"min=0"`

	// AcquireTimeout is how long a request waits for a key to become
	// free when every key is busy or cooling. Default: 30s.
	AcquireTimeout caddy.Duration `json:"acquire_timeout,omitempty"`

	// RequestTimeout bounds every wait for the next bytes of a response
	// body once its headers have arrived, streamed or not (the idle
	// timeout: a long stream that keeps producing is never cut).
	// Default: 120s.
	RequestTimeout caddy.Duration `json:"request_timeout,omitempty"`

	// StreamIdleTimeout bounds how long a stream that has begun may go
	// without a data line: SSE comments (": ping", OpenRouter's
	// ": OPENROUTER PROCESSING") and blank lines re-arm RequestTimeout
	// but not this one, so an upstream that sends only keep-alives after
	// its content cannot hold the client's stream and the key's slot for
	// ever. When it passes, the client's stream ends with an error in its
	// dialect (never as a success); the key is not blamed (the upstream
	// may be a model thinking for that long). Default: 5m; it should be
	// longer than the longest pause between data a healthy stream makes.
	StreamIdleTimeout caddy.Duration `json:"stream_idle_timeout,omitempty"`

	// AttemptTimeout bounds each attempt's wait for the upstream's
	// response headers, streamed or not, and a stream's wait for its first
	// content event (time to first byte); when it passes, the next key is
	// tried, so a hung key costs at most this much. A non-streamed answer
	// whose upstream sends headers only when the whole answer is generated
	// must arrive within it: raise it (and TotalTimeout) for long
	// non-streamed generations. A timeout after the upstream took the
	// whole request does not cool the key by itself: the gateway probes
	// the key (ProbeTimeout) and books the timeout only when the probe
	// gets no answer either (docs/operations.md). Keys may override it.
	// Default: 15s.
	AttemptTimeout caddy.Duration `json:"attempt_timeout,omitempty"`

	// ConnectTimeout bounds opening a TCP connection to an upstream (its
	// name resolution included; behind an egress proxy, the connection
	// the proxy opens for it). The TLS handshake that follows has its own
	// bound of 10s. Default: 10s.
	ConnectTimeout caddy.Duration `json:"connect_timeout,omitempty"`

	// Strategy chooses among eligible keys: "round_robin" (fewest in
	// flight, ties in turn), "priority" (lowest key priority first, the
	// next only while better ones are not eligible), "weighted" (shares by
	// key weight, smooth), "least_used" (fewest requests or tokens in the
	// current window), "lowest_latency" (fastest time to first byte, with
	// exploration), "pace" (spread each key's quota over its period),
	// "random" or "smart" (the most budget left relative to its limit, as
	// the upstreams' rate-limit headers report it, recent failures
	// penalised). Default: "round_robin".
	Strategy string `json:"strategy,omitempty"`

	// LeastUsedBy is what least_used counts: "requests" or "tokens".
	// Default: "requests".
	LeastUsedBy string `json:"least_used_by,omitempty"`

	// LearnLimits says whether the pool reads the upstreams' rate-limit
	// headers on every answer (OpenAI's x-ratelimit-*, Anthropic's
	// anthropic-ratelimit-*, and the relays that copy them) and keeps a
	// key out of rotation, for the model, while they say it has no
	// requests or too few tokens left, until their reset, instead of
	// letting the upstream answer 429 (KeyStatus reason "learned"; not a
	// failure). Configured rpm and tpm still apply. "on" or "off".
	// Default: the handler's LearnLimits, else "on".
	LearnLimits LearnSwitch `json:"learn_limits,omitempty"`

	// Affinity keeps a conversation on the key that served it last, for
	// this long after its last request, while that key is eligible (prompt
	// caches live per key, so this saves money and latency). A session is
	// the x-session-id header, else Claude Code's x-claude-code-session-id
	// or Codex's session-id, else a hash of the first system text and the
	// first user message. "off" disables it. Default: "30m".
	Affinity Affinity `json:"affinity,omitempty"`

	// AffinityMaxEntries bounds the affinity table (least recently used
	// sessions are dropped). Default: 100000.
	AffinityMaxEntries int `json:"affinity_max_entries,omitempty"`

	// MaxHintCooldown caps a cooldown taken from an upstream hint
	// (Retry-After, a reset header, "try again in ..." in the body), so a
	// bogus hint cannot freeze a key for a week. Default: 24h.
	MaxHintCooldown caddy.Duration `json:"max_hint_cooldown,omitempty"`

	// InvalidKeyCooldown is how long a key that got 401 stays out of
	// rotation before one probe request. Default: 5m.
	InvalidKeyCooldown caddy.Duration `json:"invalid_key_cooldown,omitempty"`

	// NoCreditCooldown is how long a key that got 402 (out of credit)
	// stays out of rotation. Default: 24h.
	NoCreditCooldown caddy.Duration `json:"no_credit_cooldown,omitempty"`

	// ForbiddenCooldown is how long a key that got 403 stays out of
	// rotation. Default: 24h.
	ForbiddenCooldown caddy.Duration `json:"forbidden_cooldown,omitempty"`

	// ProvisionalCooldown is the longest one client request can bench a
	// key for. A long key-level verdict reached from a client's request
	// (401, 402, a 403 about the key, no credit, a quota until a reset
	// further away than this) first cools the key for this long only; the
	// gateway then probes the key itself (as POST /llm_gateway/diagnose
	// does, never with the client's body) and applies
	// InvalidKeyCooldown, NoCreditCooldown, ForbiddenCooldown or the quota
	// reset only when the probe confirms the verdict. A probe that
	// succeeds puts the key back at once. Default: 60s.
	ProvisionalCooldown caddy.Duration `json:"provisional_cooldown,omitempty"`

	// ReasoningContent says whether Chat Completions clients served by a
	// thinking upstream (Anthropic thinking, translated) get the
	// reasoning as `reasoning_content` and signed blocks as
	// `thinking_blocks` (the extensions DeepSeek, vLLM and LiteLLM use;
	// the official SDKs ignore them): "on" (default) or "off".
	ReasoningContent ReasoningSwitch `json:"reasoning_content,omitempty"`

	// ProbeTimeout bounds a half-open probe attempt, and the gateway's
	// own probe of a key whose upstream took a request and did not answer
	// within AttemptTimeout. Default: 5s.
	ProbeTimeout caddy.Duration `json:"probe_timeout,omitempty"`

	// Egress is the pool's own list of egress exits (proxies), which
	// replaces the handler's global list for this pool; "egress direct"
	// sends the pool's requests directly. See EgressConfig. Default: the
	// global list.
	Egress *EgressConfig `json:"egress,omitempty"`

	// TotalTimeout bounds the whole search for an answer: waiting for keys
	// and every attempt until one starts answering, across retries and
	// fallback pools. It does not cut an answer that is already streaming.
	// Default: 45s.
	TotalTimeout caddy.Duration `json:"total_timeout,omitempty"`
}

// ModelMapping is one model_map entry.
type ModelMapping struct {
	// Pattern is an exact client model name or a prefix ending in '*'.
	Pattern string `json:"pattern"`
	// Model is the upstream model name to send instead.
	Model string `json:"model"`
}

// KeyConfig is one upstream API key.
type KeyConfig struct {
	// Secret is the upstream API key. Write it as a placeholder,
	// {env.NAME} or {file./path}, so the admin API's GET /config/ shows
	// the placeholder and never the key; it is resolved at provision and
	// an empty result is an error. Required.
	Secret string `json:"secret" caddyfile:"-"`

	// ID is the label shown in logs, metrics, the admin API and error
	// summaries. Default: the masked secret (first 6 and last 4
	// characters).
	ID string `json:"id,omitempty"`

	// BaseURL is the upstream's API root. For the openai dialect it is
	// the OpenAI-compatible root as the vendor documents it, e.g.
	// "https://api.openai.com/v1" or "https://open.bigmodel.cn/api/paas/v4",
	// and the gateway appends "/chat/completions". For the anthropic
	// dialect it is e.g. "https://api.anthropic.com" and the gateway
	// appends "/v1/messages" (a trailing "/v1" is accepted and not
	// doubled). Trailing slashes are ignored. Required unless Provider
	// is set.
	BaseURL string `json:"base_url"`

	// Provider names a provider preset ("groq", "anthropic", "ollama"; see
	// PresetNames) that fills BaseURL and Dialect when they are empty; an
	// explicit BaseURL or Dialect always wins. In the Caddyfile it may
	// stand where the base URL goes: key {env.GROQ_KEY} groq. Default:
	// none (BaseURL is then required).
	Provider string `json:"provider,omitempty" caddyfile:"-"`

	// Dialect is the API the upstream speaks: "openai" (Chat Completions
	// at <BaseURL>/chat/completions, Authorization: Bearer), "anthropic"
	// (Messages at <BaseURL>/v1/messages, x-api-key and anthropic-version:
	// 2023-06-01) or "responses" (OpenAI Responses at <BaseURL>/responses,
	// Authorization: Bearer; BaseURL as for openai, e.g.
	// "https://api.openai.com/v1"; "openai_responses" is accepted as the
	// same). Requests in other dialects are translated. Default: the
	// Provider's, else "openai".
	Dialect KeyDialect `json:"dialect,omitempty"`

	// AnthropicBaseURL gives an openai-dialect key a second, native
	// Anthropic Messages endpoint with the same secret (many relays offer
	// both), e.g. "https://relay.example.com/anthropic". See Prefer.
	AnthropicBaseURL string `json:"anthropic_base_url,omitempty"`

	// ResponsesBaseURL gives an openai- or anthropic-dialect key an OpenAI
	// Responses endpoint too, <ResponsesBaseURL>/responses with
	// Authorization: Bearer and the same secret, e.g.
	// "https://api.openai.com/v1". Responses clients (Codex) then pass
	// through natively, encrypted reasoning and built-in tools included.
	// Keys of the "openai" preset get https://api.openai.com/v1 when they
	// take the preset's base URL and dialect. See Prefer. Default: none.
	ResponsesBaseURL string `json:"responses_base_url,omitempty"`

	// Prefer chooses the endpoint of a key that has several (BaseURL plus
	// AnthropicBaseURL or ResponsesBaseURL): "auto" sends each client to
	// the endpoint of its own dialect when the key has it (Responses
	// clients to Responses so encrypted reasoning and built-in tools
	// survive, Anthropic Messages clients to Messages so prompt caching
	// and every Anthropic feature survive, Chat Completions clients to
	// Chat) and otherwise to the first the key has of Chat, Messages,
	// Responses (its own dialect's endpoint); "openai" (Chat),
	// "anthropic" (Messages) and "responses" always use that endpoint,
	// which the key must have (else a configuration error). Default:
	// "auto".
	Prefer PreferEndpoint `json:"prefer,omitempty"`

	// MaxConcurrency overrides the pool's MaxConcurrencyPerKey for this
	// key when > 0.
	MaxConcurrency int `json:"max_concurrency,omitempty"`

	// Weight is the key's share for weighted strategies. Default: 1.
	Weight int `json:"weight,omitempty"`

	// Standby makes the key a standby under the weighted strategy (in
	// the Caddyfile also written "weight 0"): it serves only when no key
	// with a positive weight is eligible. Default: false.
	Standby bool `json:"standby,omitempty"`

	// AttemptTimeout overrides the pool's AttemptTimeout for this key.
	AttemptTimeout caddy.Duration `json:"attempt_timeout,omitempty"`

	// Priority ranks the key for the priority strategy: lower numbers are
	// used first. Default: 0.
	Priority int `json:"priority,omitempty" caddyfile:"anyint"`

	// RPM caps the requests the key is sent per minute (a sliding 60 s
	// window). Default: 0, no cap.
	RPM int `json:"rpm,omitempty"`

	// TPM caps the tokens (input + output, as the upstream reports them)
	// the key spends per minute (a token bucket). Default: 0, no cap.
	TPM int64 `json:"tpm,omitempty"`

	// Egress is the key's exclusive exit: one proxy URL (see
	// EgressConfig.Proxies; credentials as placeholders), through which
	// all of this key's requests leave and which no pool or global list
	// replaces, or "direct" to opt out of any pool or global exit.
	// Default: the pool's list, else the global one, else direct.
	Egress EgressExit `json:"egress,omitempty" caddyfile:"words,example=socks5://127.0.0.1:1080"`

	// Quota is the key's budget per period, e.g. "1000 requests per 24h"
	// or "5000000 tokens per 30d" (both may be given, joined by "and").
	// The key is not used past it until the period ends; the pace strategy
	// spreads use over the period. Default: none.
	Quota QuotaSpec `json:"quota,omitempty" caddyfile:"words,example=1000 requests per 24h"`

	// Budget is the key's spend limit in USD per period (see BudgetSpec):
	// at the limit the key leaves rotation (state "budget") until the
	// period resets. Default: none.
	Budget *BudgetSpec `json:"budget,omitempty" caddyfile:"-"`
}

// GatewayKeyConfig is a gateway key with a scope and limits of its own.
type GatewayKeyConfig struct {
	// Key is the token clients present (Authorization: Bearer or
	// x-api-key). Placeholders such as {env.TEAM_KEY} are resolved at
	// provision. Required.
	Key string `json:"key" caddyfile:"-"`

	// ID labels the key in logs; default: the masked token.
	ID string `json:"id,omitempty"`

	// Pools limits the key to these pools (by name). Default: all.
	Pools []string `json:"pools,omitempty"`

	// Models limits the key to these client model names (exact or
	// '*'-suffix patterns). Out-of-scope requests get 403. Default: all.
	Models []string `json:"models,omitempty"`

	// RPM limits the key's requests per minute (a token bucket with a
	// burst of RPM). Over the limit: 429 with Retry-After. Default: 0, no
	// limit.
	RPM int `json:"rpm,omitempty"`

	// MaxConcurrency limits the key's requests in flight. Over the limit:
	// 429 with Retry-After: 1. Default: 0, no limit.
	MaxConcurrency int `json:"max_concurrency,omitempty"`

	// Budget is the caller's spend limit in USD per period (see
	// BudgetSpec): at the limit its requests get 429 with Retry-After
	// until the period resets. Default: none.
	Budget *BudgetSpec `json:"budget,omitempty" caddyfile:"-"`
}
