package keypool

import (
	"context"
	"errors"
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
	// empty or truncated response. Transient, like ServerError.
	NetworkError
	// Timeout: the attempt exceeded its deadline. Transient.
	Timeout
	// InvalidKey: 401. The key is taken out of rotation for
	// Settings.InvalidKeyCooldown.
	InvalidKey
	// NoCredit: 402 Payment Required. Out of rotation for
	// Settings.NoCreditCooldown.
	NoCredit
	// Forbidden: 403 (tier, region or permission). Out of rotation for
	// Settings.ForbiddenCooldown.
	Forbidden
	// ClientError: the request itself is wrong (400, 404, 413, 422 ...).
	// The key is not penalised and the request is not retried.
	ClientError
	// Canceled: the client went away. The key is not penalised.
	Canceled
)

var outcomeNames = [...]string{
	Success:      "success",
	RateLimited:  "rate_limited",
	ServerError:  "server_error",
	NetworkError: "network_error",
	Timeout:      "timeout",
	InvalidKey:   "invalid_key",
	NoCredit:     "no_credit",
	Forbidden:    "forbidden",
	ClientError:  "client_error",
	Canceled:     "canceled",
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
// this outcome.
func (k OutcomeKind) Retryable() bool {
	switch k {
	case RateLimited, ServerError, NetworkError, Timeout, InvalidKey, NoCredit, Forbidden:
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
	// e.g. "429 from upstream" or "connection refused".
	Message string
}

// Classify turns an upstream answer (status and headers) or a transport
// error into an Outcome. err takes precedence when non-nil; ctxErr is the
// client request's context error, so a cancellation by the client is not
// blamed on the key. now is used to resolve an HTTP-date Retry-After.
func Classify(status int, h http.Header, err error, ctxErr error, now time.Time) Outcome {
	if err != nil {
		return classifyError(err, ctxErr)
	}
	o := Outcome{Status: status}
	switch {
	case status >= 200 && status < 400:
		o.Kind = Success
	case status == http.StatusTooManyRequests:
		o.Kind = RateLimited
		o.RetryAfter, o.HasRetryAfter = RetryAfter(h, now)
		o.Message = "rate limited (429)"
	case status == http.StatusUnauthorized:
		o.Kind, o.Message = InvalidKey, "invalid key (401)"
	case status == http.StatusPaymentRequired:
		o.Kind, o.Message = NoCredit, "out of credit (402)"
	case status == http.StatusForbidden:
		o.Kind, o.Message = Forbidden, "forbidden (403)"
	case status == http.StatusRequestTimeout:
		o.Kind, o.Message = Timeout, "upstream timeout (408)"
	case status >= 500:
		o.Kind = ServerError
		o.RetryAfter, o.HasRetryAfter = RetryAfter(h, now)
		o.Message = "upstream error (" + http.StatusText(status) + ")"
		if status == 529 {
			o.Message = "upstream overloaded (529)"
		}
	default:
		o.Kind = ClientError
	}
	return o
}

func classifyError(err, ctxErr error) Outcome {
	if ctxErr != nil {
		return Outcome{Kind: Canceled, Message: "client went away"}
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Outcome{Kind: Timeout, Message: "upstream timeout"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return Outcome{Kind: NetworkError, Message: "connection refused"}
	case errors.Is(err, syscall.ECONNRESET):
		return Outcome{Kind: NetworkError, Message: "connection reset"}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return Outcome{Kind: NetworkError, Message: "DNS lookup failed"}
	}
	return Outcome{Kind: NetworkError, Message: "upstream connection failed"}
}
