package keypool

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// OutcomeKind says what one upstream attempt on a key amounted to, as far
// as the key's health is concerned.
type OutcomeKind uint8

const (
	// Success: the upstream answered 2xx (or a stream completed). It
	// clears transient cooldowns, failure counters and closes the breaker.
	Success OutcomeKind = iota
	// RateLimited: 429. The key cools for Retry-After when given, else for
	// an exponential backoff from Settings.RateLimitCooldown.
	RateLimited
	// ServerError: 5xx (including 529 overloaded). Transient: short
	// cooldown, counts towards the circuit breaker.
	ServerError
	// NetworkError: connection refused or reset, DNS or TLS failure, an
	// empty or truncated response. Transient, like ServerError. When the
	// host itself is unreachable (refused, DNS, TLS) Outcome.HostDown is
	// set as well.
	NetworkError
	// Timeout: the attempt exceeded its deadline. Transient. With
	// Outcome.AwaitingAnswer set (the upstream took the request and had
	// not answered yet) it is only a suspicion: see Lease.Release.
	Timeout
	// InvalidKey: 401. The key is taken out of rotation for
	// Settings.InvalidKeyCooldown once a probe confirms it (until then
	// for Settings.ProvisionalCooldown; see Pool.Confirm).
	InvalidKey
	// NoCredit: 402 Payment Required, or Anthropic's 400 "Your credit
	// balance is too low ...". Out of rotation for
	// Settings.NoCreditCooldown once a probe confirms it (until then for
	// Settings.ProvisionalCooldown).
	NoCredit
	// Forbidden: a key-level 403 (tier, region or permission; not one
	// about the requested model, which is ModelNotFound), or Anthropic's
	// 400 "This organization has been disabled.". Out of rotation for
	// Settings.ForbiddenCooldown once a probe confirms it (until then for
	// Settings.ProvisionalCooldown).
	Forbidden
	// ClientError: the request itself is wrong (400, 413, 422, a 404 for
	// a path that does not exist ...). The key is not penalised and the
	// request is not retried.
	ClientError
	// Canceled: the client went away. The key is not penalised.
	Canceled
	// QuotaExhausted: 429 whose structured fields say a daily, monthly or
	// billing quota is spent (OpenAI insufficient_quota, a Google
	// QuotaFailure per day, an OpenAI/Groq limit "per day", a Codex
	// usage_limit_reached; see ClassifyResponseFor). The key cools until
	// the reset time the upstream gave (Outcome.RetryAfter), else until
	// the next UTC midnight, capped by Settings.MaxHintCooldown; a reset
	// further away than Settings.ProvisionalCooldown needs a probe's
	// confirmation first.
	QuotaExhausted
	// ModelNotFound: a 404 or 403 about the requested model (OpenAI
	// model_not_found, Anthropic not_found_error "model: ...", a message
	// naming the model). The key is not cooled: the failure is counted
	// per key and model, and Settings.ModelNotFoundThreshold of them
	// within Settings.ModelNotFoundWindow bench that key for that model
	// only (Settings.ModelNotFoundCooldown).
	ModelNotFound
)

var outcomeNames = [...]string{
	Success:        "success",
	RateLimited:    "rate_limited",
	ServerError:    "server_error",
	NetworkError:   "network_error",
	Timeout:        "timeout",
	InvalidKey:     "invalid_key",
	NoCredit:       "no_credit",
	Forbidden:      "forbidden",
	ClientError:    "client_error",
	Canceled:       "canceled",
	QuotaExhausted: "quota_exhausted",
	ModelNotFound:  "model_not_found",
}

// String returns the snake_case name used in logs, metrics and the admin
// API, e.g. "rate_limited".
func (k OutcomeKind) String() string {
	if int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return "unknown"
}

// Retryable reports whether a request may move on to another key after
// this outcome. ModelNotFound is retryable: another key (another account
// or base_url) may serve the model.
func (k OutcomeKind) Retryable() bool {
	switch k {
	case RateLimited, ServerError, NetworkError, Timeout, InvalidKey, NoCredit, Forbidden, QuotaExhausted, ModelNotFound:
		return true
	}
	return false
}

// Transient reports whether the outcome is a transient failure (5xx,
// network, timeout): the kind of failure that spends a request's retry
// budget and counts towards the circuit breaker.
func (k OutcomeKind) Transient() bool {
	return k == ServerError || k == NetworkError || k == Timeout
}

// SpendsRetry reports whether moving on to another key after this
// outcome spends the request's max_retries budget. Only real transient
// failures do (the same set as Transient); moving past a dead key
// (InvalidKey, NoCredit, Forbidden, QuotaExhausted), a rate-limited key or
// a key that lacks the model is free, and so is never trying a key that
// Acquire did not hand out because it was cooling.
func (k OutcomeKind) SpendsRetry() bool { return k.Transient() }

// Dead reports whether the outcome takes the key out of rotation for a
// long, fixed time (InvalidKey, NoCredit, Forbidden, QuotaExhausted):
// provisionally at first (Settings.ProvisionalCooldown), for the long
// time once a probe confirms it (Pool.Confirm). A success of an earlier
// request does not clear such a cooldown; after it, one request is let
// through as a probe (Lease.Probe).
func (k OutcomeKind) Dead() bool {
	switch k {
	case InvalidKey, NoCredit, Forbidden, QuotaExhausted:
		return true
	}
	return false
}

// Outcome is the result of one attempt, reported to Lease.Release.
type Outcome struct {
	// Kind classifies the attempt.
	Kind OutcomeKind
	// Status is the upstream HTTP status, 0 when none was received.
	Status int
	// RetryAfter is the wait the upstream asked for; meaningful only when
	// HasRetryAfter is true.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Message is a short, secret-free description kept with a cooldown,
	// e.g. "429 from upstream" or "connection refused". Never a copy of
	// the upstream body.
	Message string
	// Source says where RetryAfter came from: "retry-after" (the
	// Retry-After or retry-after-ms header), "body" (a hint in the error
	// body such as RetryInfo.retryDelay, resets_in_seconds or "try again
	// in 20s"), "reset-header" (x-ratelimit-reset-* or
	// anthropic-ratelimit-*-reset of an exhausted limit) or "utc-midnight"
	// (a quota with no reset time given). Empty when there is no hint.
	Source string
	// Code is the upstream's error code or type when it gave one, e.g.
	// "insufficient_quota" or "rate_limit_error"; at most 48 characters
	// of [A-Za-z0-9_.-]. Informational.
	Code string
	// HostDown is set for failures that mean the upstream host itself is
	// unreachable (connection refused, DNS failure, TLS failure, host or
	// network unreachable). The key is cooled like any NetworkError; the
	// caller should also skip, for the rest of this request, every other
	// key with the same Key.Host.
	HostDown bool
	// Tokens is the upstream-reported token usage of the attempt (input +
	// output), 0 when unknown. Set by the caller before Release; it feeds
	// the tpm gate, token quotas, and the least_used and pace strategies.
	Tokens int64
	// TTFB is the attempt's time to first byte, 0 when unknown. Set by the
	// caller before Release (or reported earlier with Lease.ReportTTFB);
	// it feeds the lowest_latency strategy.
	TTFB time.Duration
	// AwaitingAnswer, with Kind Timeout, says the attempt's deadline
	// passed after the upstream had accepted the connection and the
	// whole request, while the caller waited for its answer (a
	// non-streamed answer's headers or first bytes, a stream's first
	// content). A long generation (the client's max_tokens or reasoning
	// effort) looks the same as a hung key there, so Release does not
	// take the key's state from it: the key is neither cooled nor
	// counted towards the breaker, and the verifier (SetVerifier) probes
	// it; only a probe that fails too applies the timeout (Confirm).
	// Leave it false for connection-level timeouts (dial, TLS, writing
	// the request) and for an idle answer once it has begun: those are
	// the key's.
	AwaitingAnswer bool
	// OverLimit, with Kind ClientError and Status 429, is the key's
	// per-minute token limit that the request by itself exceeds, as the
	// upstream stated it (OpenAI/Groq "Request too large for <model> in
	// organization <org> on tokens per min (TPM): Limit L, Requested R",
	// R > L: OverLimit is L); 0 otherwise. Waiting cannot help on this key
	// and the key is not to blame: Release leaves it as it was, and the
	// caller may try a key with a larger limit.
	OverLimit int64
	// OverLimitOrg is the organization the upstream named with OverLimit
	// ("org-abc"; Groq's backquotes removed), "" when none. Keys of one
	// organization share its limits.
	OverLimitOrg string
}

// Classify turns an upstream answer (status and headers) or a transport
// error into an Outcome. err takes precedence when non-nil; ctxErr is the
// client request's context error, so a cancellation by the client is not
// blamed on the key. now is used to resolve an HTTP-date Retry-After.
// It is ClassifyResponse without a body; prefer ClassifyResponse when the
// error body is at hand.
func Classify(status int, h http.Header, err error, ctxErr error, now time.Time) Outcome {
	if err != nil {
		return classifyError(err, ctxErr)
	}
	return ClassifyResponse(status, h, nil, now)
}

// ClassifyError turns a transport error into an Outcome: Canceled when
// ctxErr (the client's context error) is set, Timeout for deadlines,
// NetworkError otherwise. Connection refused, DNS, TLS and unreachable
// host or network errors set HostDown.
func ClassifyError(err, ctxErr error) Outcome { return classifyError(err, ctxErr) }

func classifyError(err, ctxErr error) Outcome {
	if ctxErr != nil {
		return Outcome{Kind: Canceled, Message: "client went away"}
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Outcome{Kind: Timeout, Message: "upstream timeout"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return Outcome{Kind: NetworkError, HostDown: true, Message: "connection refused"}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return Outcome{Kind: NetworkError, HostDown: true, Message: "host unreachable"}
	case errors.Is(err, syscall.ECONNRESET):
		return Outcome{Kind: NetworkError, Message: "connection reset"}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Outcome{Kind: NetworkError, Message: "empty or truncated response"}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return Outcome{Kind: NetworkError, HostDown: true, Message: "DNS lookup failed"}
	}
	if isTLSError(err) {
		return Outcome{Kind: NetworkError, HostDown: true, Message: "TLS handshake failed"}
	}
	return Outcome{Kind: NetworkError, Message: "upstream connection failed"}
}

// isTLSError reports whether err is a TLS handshake or certificate
// failure.
func isTLSError(err error) bool {
	var rh tls.RecordHeaderError
	var ae tls.AlertError
	var ce *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &rh) || errors.As(err, &ae) || errors.As(err, &ce) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}
