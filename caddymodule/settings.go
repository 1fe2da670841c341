package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/keypool"
)

// Typed configuration values. Each is a plain string in the JSON config
// and in the Caddyfile, and parses itself in UnmarshalText, which both
// JSON decoding and the Caddyfile parser (settingsfile.go) call: the
// accepted values and the error message (which names the option, since
// encoding/json adds no context) live in one place. The zero value ("")
// always means the documented default.

// AuthMode is Handler.Auth: "off" lets /v1 be used without a gateway
// key; "" and "on" require one.
type AuthMode string

// Auth modes.
const (
	AuthOn  AuthMode = "on"
	AuthOff AuthMode = "off"
)

// MarshalText returns the mode as written.
func (a AuthMode) MarshalText() ([]byte, error) { return []byte(a), nil }

// UnmarshalText accepts "", "on" or "off".
func (a *AuthMode) UnmarshalText(b []byte) error {
	switch v := AuthMode(b); v {
	case "", AuthOn, AuthOff:
		*a = v
		return nil
	}
	return fmt.Errorf("auth: want 'off' or 'on', got '%s'", b)
}

// Affinity is PoolConfig.Affinity: how long a session stays on the key
// that served it last, as a Caddy duration ("30m", "2h", "1d"), or "off".
type Affinity string

// AffinityOff turns session affinity off.
const AffinityOff Affinity = "off"

// MarshalText returns the value as written.
func (a Affinity) MarshalText() ([]byte, error) { return []byte(a), nil }

// UnmarshalText accepts "", "off" or a positive Caddy duration.
func (a *Affinity) UnmarshalText(b []byte) error {
	v := Affinity(b)
	if _, err := v.TTL(); err != nil {
		return err
	}
	*a = v
	return nil
}

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

// ReasoningSwitch is PoolConfig.ReasoningContent: "on" or "off"; ""
// is the default (on).
type ReasoningSwitch string

// ReasoningContent values.
const (
	ReasoningOn  ReasoningSwitch = "on"
	ReasoningOff ReasoningSwitch = "off"
)

// MarshalText returns the value as written.
func (r ReasoningSwitch) MarshalText() ([]byte, error) { return []byte(r), nil }

// UnmarshalText accepts "", "on" or "off".
func (r *ReasoningSwitch) UnmarshalText(b []byte) error {
	switch v := ReasoningSwitch(b); v {
	case "", ReasoningOn, ReasoningOff:
		*r = v
		return nil
	}
	return fmt.Errorf("reasoning_content: want on or off, got '%s'", b)
}

// KeyDialect is KeyConfig.Dialect, the API an upstream key speaks.
type KeyDialect string

// Key dialects. DialectOpenAIResponses is accepted as the same as
// DialectResponses.
const (
	DialectOpenAI          KeyDialect = "openai"
	DialectAnthropic       KeyDialect = "anthropic"
	DialectResponses       KeyDialect = "responses"
	DialectOpenAIResponses KeyDialect = "openai_responses"
)

// MarshalText returns the dialect as written.
func (k KeyDialect) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText accepts "", "openai", "anthropic", "responses" or
// "openai_responses".
func (k *KeyDialect) UnmarshalText(b []byte) error {
	switch v := KeyDialect(b); v {
	case "", DialectOpenAI, DialectAnthropic, DialectResponses, DialectOpenAIResponses:
		*k = v
		return nil
	}
	return fmt.Errorf("dialect: want openai, anthropic or responses, got '%s'", b)
}

// canonical folds the alias openai_responses into responses.
func (k KeyDialect) canonical() KeyDialect {
	if k == DialectOpenAIResponses {
		return DialectResponses
	}
	return k
}

// PreferEndpoint is KeyConfig.Prefer: which endpoint of a key with
// several serves a request.
type PreferEndpoint string

// Endpoint preferences.
const (
	PreferAuto      PreferEndpoint = "auto"
	PreferOpenAI    PreferEndpoint = "openai"
	PreferAnthropic PreferEndpoint = "anthropic"
	PreferResponses PreferEndpoint = "responses"
)

// MarshalText returns the preference as written.
func (p PreferEndpoint) MarshalText() ([]byte, error) { return []byte(p), nil }

// UnmarshalText accepts "", "auto", "openai", "anthropic" or "responses".
func (p *PreferEndpoint) UnmarshalText(b []byte) error {
	switch v := PreferEndpoint(b); v {
	case "", PreferAuto, PreferOpenAI, PreferAnthropic, PreferResponses:
		*p = v
		return nil
	}
	return fmt.Errorf("prefer: want auto, openai, anthropic or responses, got '%s'", b)
}

// QuotaSpec is KeyConfig.Quota as written, e.g. "1000 requests per 24h"
// or "5000000 tokens per 30d" (both joined by "and"); it must parse with
// keypool.ParseQuota, whose errors it returns.
type QuotaSpec string

// MarshalText returns the quota as written.
func (q QuotaSpec) MarshalText() ([]byte, error) { return []byte(q), nil }

// UnmarshalText accepts "" (no quota) or a quota keypool.ParseQuota reads.
func (q *QuotaSpec) UnmarshalText(b []byte) error {
	v := QuotaSpec(b)
	if _, err := v.Quota(); err != nil {
		return err
	}
	*q = v
	return nil
}

// Quota parses the spec; "" gives the zero Quota (no budget).
func (q QuotaSpec) Quota() (keypool.Quota, error) {
	if q == "" {
		return keypool.Quota{}, nil
	}
	return keypool.ParseQuota(string(q))
}

// StateBackend is StateConfig.Backend: where pool runtime state lives.
type StateBackend string

// State backends.
const (
	StateMemory StateBackend = "memory"
	StateRedis  StateBackend = "redis"
)

// MarshalText returns the backend's name.
func (s StateBackend) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText accepts "", "memory" or "redis".
func (s *StateBackend) UnmarshalText(b []byte) error {
	switch v := StateBackend(b); v {
	case "", StateMemory, StateRedis:
		*s = v
		return nil
	}
	return fmt.Errorf("state: want 'memory' or 'redis', got '%s'", b)
}
