package caddymodule

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"golang.org/x/time/rate"
)

// gwKey is a provisioned gateway key. The token is a secret: never
// log it.
type gwKey struct {
	id       string
	token    []byte
	pools    map[string]bool // nil: all pools
	models   []string        // nil: all models
	limiter  *rate.Limiter   // nil: no rpm limit
	maxConc  int64
	inFlight atomic.Int64
}

// provisionGatewayKeys resolves the plain APIKeys and the scoped
// GatewayKeys into one list.
func (h *Handler) provisionGatewayKeys(repl *caddy.Replacer) error {
	for i, k := range h.APIKeys {
		v, err := repl.ReplaceOrErr(k, true, true)
		if err == nil && strings.TrimSpace(v) == "" {
			err = errors.New("blank")
		}
		if err != nil {
			return fmt.Errorf("api_key %d: resolving placeholder: value is empty or unknown", i+1)
		}
		v = strings.TrimSpace(v)
		h.gatewayKeys = append(h.gatewayKeys, &gwKey{id: maskSecret(v), token: []byte(v)})
	}
	for i, gc := range h.GatewayKeys {
		if gc == nil || gc.Key == "" {
			return fmt.Errorf("gateway key %d: key is required", i+1)
		}
		v, err := repl.ReplaceOrErr(gc.Key, true, true)
		if err == nil && strings.TrimSpace(v) == "" {
			err = errors.New("blank")
		}
		v = strings.TrimSpace(v)
		if err != nil {
			return fmt.Errorf("gateway key %d: resolving placeholder: value is empty or unknown", i+1)
		}
		gk := &gwKey{id: gc.ID, token: []byte(v), models: gc.Models, maxConc: int64(gc.MaxConcurrency)}
		if gk.id == "" {
			gk.id = maskSecret(v)
		}
		if len(gc.Pools) > 0 {
			gk.pools = map[string]bool{}
			for _, p := range gc.Pools {
				gk.pools[p] = true
			}
		}
		if gc.RPM < 0 || gc.MaxConcurrency < 0 {
			return fmt.Errorf("gateway key %s: rpm and max_concurrency must not be negative", gk.id)
		}
		if gc.RPM > 0 {
			gk.limiter = rate.NewLimiter(rate.Limit(float64(gc.RPM)/60), gc.RPM)
		}
		h.gatewayKeys = append(h.gatewayKeys, gk)
	}
	seen := map[string]bool{}
	for _, gk := range h.gatewayKeys {
		if seen[string(gk.token)] {
			return fmt.Errorf("gateway key %s: configured twice", gk.id)
		}
		seen[string(gk.token)] = true
	}
	return nil
}

// validateGatewayKeyScopes checks that scoped pools exist.
func (h *Handler) validateGatewayKeyScopes() error {
	names := map[string]bool{}
	for _, p := range h.pools {
		names[p.name] = true
	}
	for _, gk := range h.gatewayKeys {
		for p := range gk.pools {
			if !names[p] {
				return fmt.Errorf("gateway key %s: unknown pool %q", gk.id, p)
			}
		}
	}
	return nil
}

// lookupGatewayKey returns the gateway key matching token, comparing
// against every configured key in constant time, or nil.
func (h *Handler) lookupGatewayKey(token string) *gwKey {
	if token == "" {
		return nil
	}
	var found *gwKey
	for _, gk := range h.gatewayKeys {
		if subtle.ConstantTimeCompare([]byte(token), gk.token) == 1 {
			found = gk
		}
	}
	return found
}

// allowsPool reports whether the key may use the pool.
func (gk *gwKey) allowsPool(name string) bool {
	return gk == nil || gk.pools == nil || gk.pools[name]
}

// allowsModel reports whether the key may ask for the client model.
func (gk *gwKey) allowsModel(model string) bool {
	if gk == nil || gk.models == nil {
		return true
	}
	for _, p := range gk.models {
		if matchPattern(p, model) {
			return true
		}
	}
	return false
}

// errOverLimit is returned by admit when a gateway key is over a limit.
var errOverLimit = errors.New("over limit")

// admit applies the key's rpm and concurrency limits. On success the
// caller must call the returned release when the request ends. On
// failure it returns how long to wait and errOverLimit.
func (gk *gwKey) admit(now time.Time) (release func(), retryAfter time.Duration, err error) {
	if gk == nil {
		return func() {}, 0, nil
	}
	if gk.maxConc > 0 {
		if gk.inFlight.Add(1) > gk.maxConc {
			gk.inFlight.Add(-1)
			return nil, time.Second, errOverLimit
		}
	} else {
		gk.inFlight.Add(1)
	}
	if gk.limiter != nil {
		res := gk.limiter.ReserveN(now, 1)
		if d := res.DelayFrom(now); d > 0 {
			res.CancelAt(now)
			gk.inFlight.Add(-1)
			return nil, d, errOverLimit
		}
	}
	return func() { gk.inFlight.Add(-1) }, 0, nil
}

// label is the key's id for logs, "" when there is no key (auth off).
func (gk *gwKey) label() string {
	if gk == nil {
		return ""
	}
	return gk.id
}
