package keypool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After": {"1"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	}
	for i, c := range cases {
		got, ok := RetryAfter(c.h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("case %d %v: got %v %v, want %v %v", i, c.h, got, ok, c.want, c.ok)
		}
	}
}

func TestClassify(t *testing.T) {
	now := time.Now()
	ra := http.Header{"Retry-After": {"7"}}
	cases := []struct {
		status int
		h      http.Header
		err    error
		ctxErr error
		kind   OutcomeKind
	}{
		{200, nil, nil, nil, Success},
		{429, ra, nil, nil, RateLimited},
		{401, nil, nil, nil, InvalidKey},
		{402, nil, nil, nil, NoCredit},
		{403, nil, nil, nil, Forbidden},
		{500, nil, nil, nil, ServerError},
		{503, nil, nil, nil, ServerError},
		{529, nil, nil, nil, ServerError},
		{400, nil, nil, nil, ClientError},
		{404, nil, nil, nil, ClientError},
		{413, nil, nil, nil, ClientError},
		{422, nil, nil, nil, ClientError},
		{0, nil, &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, nil, NetworkError},
		{0, nil, &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, nil, NetworkError},
		{0, nil, fmt.Errorf("attempt: %w", context.DeadlineExceeded), nil, Timeout},
		{0, nil, &net.DNSError{Err: "no such host", Name: "x.invalid"}, nil, NetworkError},
		{0, nil, context.Canceled, context.Canceled, Canceled},
		{0, nil, errors.New("unexpected EOF"), nil, NetworkError},
	}
	for i, c := range cases {
		o := Classify(c.status, c.h, c.err, c.ctxErr, now)
		if o.Kind != c.kind {
			t.Errorf("case %d (%d %v): kind %s, want %s", i, c.status, c.err, o.Kind, c.kind)
		}
	}
	o := Classify(429, ra, nil, nil, now)
	if !o.HasRetryAfter || o.RetryAfter != 7*time.Second || o.Status != 429 {
		t.Fatalf("429 outcome = %+v", o)
	}
	if o := Classify(0, nil, &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, nil, now); o.Message != "connection refused" {
		t.Fatalf("message = %q", o.Message)
	}
}

func TestRetryAfterBogusValues(t *testing.T) {
	now := time.Now()
	cases := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"99999999999999999999"}}, maxHint, true},
		{http.Header{"Retry-After": {"1e400"}}, maxHint, true},
		{http.Header{"Retry-After": {"-5"}}, 0, false},
		{http.Header{"Retry-After": {"NaN"}}, 0, false},
		{http.Header{"Retry-After": {"+Inf"}}, maxHint, true},
		{http.Header{"Retry-After-Ms": {"-1"}, "Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After-Ms": {"1e30"}}, maxHint, true},
	}
	for i, c := range cases {
		if got, ok := RetryAfter(c.h, now); got != c.want || ok != c.ok {
			t.Errorf("case %d %v: got %v %v, want %v %v", i, c.h, got, ok, c.want, c.ok)
		}
	}
}
