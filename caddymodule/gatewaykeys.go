package caddymodule

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// gwKey is a provisioned gateway key. Only the SHA-256 of its token is
// kept, whether the token was configured in plain or as a hash.
type gwKey struct {
	id       string
	digest   [sha256.Size]byte // SHA-256 of the token
	pools    map[string]bool   // nil: all pools
	models   []string          // nil: all models
	limiter  *rate.Limiter     // nil: no rpm limit
	maxConc  int64
	inFlight atomic.Int64
}

// provisionGatewayKeys resolves the plain APIKeys and the scoped
// GatewayKeys into one list. A key is written as its token, a placeholder
// ({env.NAME}, {file.PATH}) or "sha256:<64 hex digits>", the SHA-256 of
// the token (see parseGatewayKey). Keys written literally are warned
// about: GET /config/ and autosave.json show them.
func (h *Handler) provisionGatewayKeys(repl *caddy.Replacer) error {
	var literal []string
	for i, k := range h.APIKeys {
		gk, isLiteral, err := parseGatewayKey(repl, k)
		if err != nil {
			return fmt.Errorf("api_key %d: %v", i+1, err)
		}
		if isLiteral {
			literal = append(literal, gk.id)
		}
		h.gatewayKeys = append(h.gatewayKeys, gk)
	}
	for i, gc := range h.GatewayKeys {
		if gc == nil || gc.Key == "" {
			return fmt.Errorf("gateway key %d: key is required", i+1)
		}
		gk, isLiteral, err := parseGatewayKey(repl, gc.Key)
		if err != nil {
			return fmt.Errorf("gateway key %d: %v", i+1, err)
		}
		gk.models, gk.maxConc = gc.Models, int64(gc.MaxConcurrency)
		if gc.ID != "" {
			gk.id = gc.ID
		}
		if isLiteral {
			literal = append(literal, gk.id)
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
	seen := map[[sha256.Size]byte]bool{}
	for _, gk := range h.gatewayKeys {
		if seen[gk.digest] {
			return fmt.Errorf("gateway key %s: configured twice", gk.id)
		}
		seen[gk.digest] = true
	}
	if len(literal) > 0 && h.logger != nil {
		h.logger.Warn("gateway keys written literally in the config are shown by the admin API (GET /config/) and saved in autosave.json; "+
			"write them as sha256:<hex> (caddy llm-gateway-hash-key) or {env.NAME}", zap.Strings("gateway_keys", literal))
	}
	return nil
}

// gatewayKeyHashPrefix marks a gateway key written as the SHA-256 of its
// token: "sha256:" followed by 64 hex digits.
const gatewayKeyHashPrefix = "sha256:"

// parseGatewayKey resolves one configured gateway key: placeholders
// first, then either "sha256:<64 hex digits>" (the token's SHA-256, hex in
// either case) or the token itself (surrounding white space trimmed, as
// clients' tokens are). literal reports a token written in the config as
// is (neither a placeholder nor a hash). Errors never show the value.
func parseGatewayKey(repl *caddy.Replacer, raw string) (gk *gwKey, literal bool, err error) {
	v, err := resolveSecretValue(repl, raw) // errors name the placeholder, never the value
	if err != nil {
		return nil, false, err
	}
	if rest, ok := strings.CutPrefix(v, gatewayKeyHashPrefix); ok {
		b, err := hex.DecodeString(rest)
		if err != nil || len(b) != sha256.Size {
			return nil, false, errors.New("a hashed key is sha256: followed by 64 hex digits (the SHA-256 of the token)")
		}
		gk = &gwKey{id: gatewayKeyHashPrefix + strings.ToLower(rest[:8])}
		copy(gk.digest[:], b)
		return gk, false, nil
	}
	return &gwKey{id: maskSecret(v), digest: sha256.Sum256([]byte(v))}, v == strings.TrimSpace(raw), nil
}

// hashGatewayKey returns the configuration form of a gateway token,
// "sha256:<64 lower-case hex digits>". The token is trimmed of surrounding
// white space first, as tokens are when presented.
func hashGatewayKey(token string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return gatewayKeyHashPrefix + hex.EncodeToString(sum[:])
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

// lookupGatewayKey returns the gateway key matching token, or nil. The
// token is hashed once (SHA-256) and the digest is compared with every
// configured key's, hashed or plain, in constant time: the time taken
// depends on neither the token nor which key matched.
func (h *Handler) lookupGatewayKey(token string) *gwKey {
	if token == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	var found *gwKey
	for _, gk := range h.gatewayKeys {
		if subtle.ConstantTimeCompare(sum[:], gk.digest[:]) == 1 {
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
