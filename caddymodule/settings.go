package caddymodule

import (
	"fmt"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/keypool"
)

// Typed configuration values. Each is a plain string in the JSON config
// and in the Caddyfile, and parses itself in UnmarshalText, which both
// JSON decoding and the Caddyfile parser (setOption) call: the accepted
// values and the error message (which names the option, since
// encoding/json adds no context) live in one place. The zero value ("")
// always means the documented default. MarshalText gives the text back
// as written.
type (
	// AuthMode is Handler.Auth: "off" lets /v1 be used without a gateway
	// key; "" and "on" require one.
	AuthMode string
	// Affinity is PoolConfig.Affinity: how long a session stays on the
	// key that served it last, as a Caddy duration ("30m", "1d"), or
	// "off".
	Affinity string
	// ReasoningSwitch is PoolConfig.ReasoningContent: "on" (the default)
	// or "off".
	ReasoningSwitch string
	// LearnSwitch is Handler.LearnLimits and PoolConfig.LearnLimits: "on"
	// (the default) or "off".
	LearnSwitch string
	// KeyDialect is KeyConfig.Dialect, the API an upstream key speaks:
	// "openai", "anthropic" or "responses" ("openai_responses" is the
	// same as "responses").
	KeyDialect string
	// PreferEndpoint is KeyConfig.Prefer, which endpoint of a key with
	// several serves a request: "auto", "openai", "anthropic" or
	// "responses".
	PreferEndpoint string
	// QuotaSpec is KeyConfig.Quota as written, e.g. "1000 requests per
	// 24h" or "5000000 tokens per 30d" (both joined by "and"); it must
	// parse with keypool.ParseQuota, whose errors it returns.
	QuotaSpec string
	// StateBackend is StateConfig.Backend, where pool runtime state lives:
	// "memory" or "redis".
	StateBackend string
)

// The values of the typed configuration strings.
const (
	AuthOn  AuthMode = "on"
	AuthOff AuthMode = "off"

	AffinityOff Affinity = "off"

	ReasoningOn  ReasoningSwitch = "on"
	ReasoningOff ReasoningSwitch = "off"

	LearnOn  LearnSwitch = "on"
	LearnOff LearnSwitch = "off"

	DialectOpenAI          KeyDialect = "openai"
	DialectAnthropic       KeyDialect = "anthropic"
	DialectResponses       KeyDialect = "responses"
	DialectOpenAIResponses KeyDialect = "openai_responses"

	PreferAuto      PreferEndpoint = "auto"
	PreferOpenAI    PreferEndpoint = "openai"
	PreferAnthropic PreferEndpoint = "anthropic"
	PreferResponses PreferEndpoint = "responses"

	StateMemory StateBackend = "memory"
	StateRedis  StateBackend = "redis"
)

// oneOf sets *dst to the text when it is "" or one of allowed, and
// otherwise returns the error format (with one %s for the text).
func oneOf[T ~string](dst *T, b []byte, format string, allowed ...T) error {
	if v := T(b); v == "" || slices.Contains(allowed, v) {
		*dst = v
		return nil
	}
	return fmt.Errorf(format, b)
}

// validText sets *dst to the text when parse accepts it, else returns
// parse's error.
func validText[T ~string, V any](dst *T, b []byte, parse func(T) (V, error)) error {
	if _, err := parse(T(b)); err != nil {
		return err
	}
	*dst = T(b)
	return nil
}

// MarshalText returns the mode as written.
func (a AuthMode) MarshalText() ([]byte, error) { return []byte(a), nil }

// UnmarshalText accepts "", "on" or "off".
func (a *AuthMode) UnmarshalText(b []byte) error {
	return oneOf(a, b, "auth: want 'off' or 'on', got '%s'", AuthOn, AuthOff)
}

// MarshalText returns the value as written.
func (r ReasoningSwitch) MarshalText() ([]byte, error) { return []byte(r), nil }

// UnmarshalText accepts "", "on" or "off".
func (r *ReasoningSwitch) UnmarshalText(b []byte) error {
	return oneOf(r, b, "reasoning_content: want on or off, got '%s'", ReasoningOn, ReasoningOff)
}

// MarshalText returns the value as written.
func (l LearnSwitch) MarshalText() ([]byte, error) { return []byte(l), nil }

// UnmarshalText accepts "", "on" or "off".
func (l *LearnSwitch) UnmarshalText(b []byte) error {
	return oneOf(l, b, "learn_limits: want on or off, got '%s'", LearnOn, LearnOff)
}

// MarshalText returns the dialect as written.
func (k KeyDialect) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText accepts "", "openai", "anthropic", "responses" or
// "openai_responses".
func (k *KeyDialect) UnmarshalText(b []byte) error {
	return oneOf(k, b, "dialect: want openai, anthropic or responses, got '%s'",
		DialectOpenAI, DialectAnthropic, DialectResponses, DialectOpenAIResponses)
}

// canonical folds the alias openai_responses into responses.
func (k KeyDialect) canonical() KeyDialect {
	if k == DialectOpenAIResponses {
		return DialectResponses
	}
	return k
}

// MarshalText returns the preference as written.
func (p PreferEndpoint) MarshalText() ([]byte, error) { return []byte(p), nil }

// UnmarshalText accepts "", "auto", "openai", "anthropic" or "responses".
func (p *PreferEndpoint) UnmarshalText(b []byte) error {
	return oneOf(p, b, "prefer: want auto, openai, anthropic or responses, got '%s'",
		PreferAuto, PreferOpenAI, PreferAnthropic, PreferResponses)
}

// MarshalText returns the backend's name.
func (s StateBackend) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText accepts "", "memory" or "redis".
func (s *StateBackend) UnmarshalText(b []byte) error {
	return oneOf(s, b, "state: want 'memory' or 'redis', got '%s'", StateMemory, StateRedis)
}

// MarshalText returns the value as written.
func (a Affinity) MarshalText() ([]byte, error) { return []byte(a), nil }

// UnmarshalText accepts "", "off" or a positive Caddy duration.
func (a *Affinity) UnmarshalText(b []byte) error { return validText(a, b, Affinity.TTL) }

// TTL converts the value to keypool.Settings.AffinityTTL: 0 for "" (the
// keypool default), -1 for "off", else the duration. The error says
// `affinity "<v>": want a duration or off`.
func (a Affinity) TTL() (time.Duration, error) {
	switch a {
	case "":
		return 0, nil
	case AffinityOff:
		return -1, nil
	}
	d, err := caddy.ParseDuration(string(a))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("affinity %q: want a duration or off", string(a))
	}
	return d, nil
}

// MarshalText returns the quota as written.
func (q QuotaSpec) MarshalText() ([]byte, error) { return []byte(q), nil }

// UnmarshalText accepts "" (no quota) or a quota keypool.ParseQuota reads.
func (q *QuotaSpec) UnmarshalText(b []byte) error { return validText(q, b, QuotaSpec.Quota) }

// Quota parses the spec; "" gives the zero Quota (no budget).
func (q QuotaSpec) Quota() (keypool.Quota, error) {
	if q == "" {
		return keypool.Quota{}, nil
	}
	return keypool.ParseQuota(string(q))
}
