package caddymodule

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// StateConfig chooses where the pools' runtime state (in-flight slots,
// cooldowns, breakers, rpm/tpm/quota counters, round-robin cursor,
// latency averages, session affinity) lives. Configuration stays in each
// instance's Caddyfile; only runtime state is shared.
//
// Caddyfile:
//
//	state memory
//	state redis {
//	    address <host:port>          # default 127.0.0.1:6379
//	    url redis://[user:password@]host:port[/db]   # or rediss:// for TLS
//	    username <user>
//	    password <password>          # placeholders such as {env.REDIS_PASSWORD}
//	    db <n>
//	    tls
//	    prefix <string>              # default "llmgw:"
//	    salt <string>                # same on every instance; default: derived from prefix
//	    lease <duration>             # default 2m
//	    poll <duration>              # default 1s
//	    timeout <duration>           # default 1s
//	}
type StateConfig struct {
	// Backend is "memory" (the default: each instance keeps its own
	// state, limits are per instance) or "redis" (every instance using
	// the same Redis server and Prefix shares one state per pool name and
	// key, so a key's limits hold across the cluster).
	Backend StateBackend `json:"backend,omitempty"`

	// Address is the Redis server's host:port. Default 127.0.0.1:6379
	// unless URL is set.
	Address string `json:"address,omitempty"`

	// URL is a redis:// or rediss:// (TLS) URL with optional user,
	// password and database number, instead of Address.
	URL string `json:"url,omitempty"`

	// Username and Password authenticate to Redis (ACL user or
	// requirepass). Placeholders are resolved at provision; the password
	// is never logged.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`

	// DB is the Redis database number. Default 0.
	DB int `json:"db,omitempty"`

	// TLS connects with TLS (implied by a rediss:// URL).
	TLS bool `json:"tls,omitempty"`

	// Prefix starts every Redis key and the events channel; instances
	// share state exactly when they share the server and the prefix.
	// Default "llmgw:".
	Prefix string `json:"prefix,omitempty"`

	// Salt, when set (the same on every instance, e.g.
	// {env.LLMGW_STATE_SALT}), keys the HMAC that names upstream keys in
	// Redis, so a reader of Redis cannot test guesses of a weak secret.
	// Default: derived from Prefix. Secrets never reach Redis either way.
	Salt string `json:"salt,omitempty"`

	// Lease is how long a slot taken by a request lives in Redis unless
	// renewed; it is renewed every Lease/3 while the request runs, so
	// only a crashed or cut-off instance's slots wait this long to come
	// back. Default 2m.
	Lease caddy.Duration `json:"lease,omitempty"`

	// Poll bounds how long a key another instance holds busy is skipped
	// when no release event arrives (events from other instances
	// normally end it at once). Default 1s.
	Poll caddy.Duration `json:"poll,omitempty"`

	// Timeout bounds each Redis round trip; a slower or failed one puts
	// the instance on local state until Redis answers again. Default 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// Defaults of StateConfig.
const (
	DefaultStatePrefix  = "llmgw:"
	DefaultStateAddress = "127.0.0.1:6379"
	DefaultStateTimeout = time.Second
)

// instanceID identifies this process in the cluster: in lease ids and
// events, so that a pool ignores the events it caused. Random, so it
// says nothing about the host.
var instanceID = func() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// redisLog sends go-redis's own messages (dial retries and the like) to
// the gateway's logger at debug level, instead of plain text on stderr
// every second of an outage; the backend logs the outage itself once.
type redisLog struct{ logger *zap.Logger }

// Printf implements go-redis's internal.Logging.
func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	l.logger.Debug(fmt.Sprintf(format, v...))
}

var redisLogOnce sync.Once

// stateRegistry holds one redisBackend per distinct Redis configuration,
// shared by the config loads that use it (a reload keeps the connection,
// subscription and lease renewals).
var stateRegistry = caddy.NewUsagePool()

// provisionState resolves the state setting and attaches the handler's
// pools to it. It records the registry key to release at Cleanup.
func (h *Handler) provisionState(repl *caddy.Replacer) error {
	sc := h.State
	if sc == nil || sc.Backend == "" || sc.Backend == StateMemory {
		stateMetrics().up.Set(1)
		for _, p := range h.pools {
			setPoolBackend(p.kp, nil, keypool.SharedOptions{})
		}
		return nil
	}
	if sc.Backend != StateRedis {
		return fmt.Errorf("state: unknown backend %q (want memory or redis)", string(sc.Backend))
	}
	opts, desc, err := sc.redisOptions(repl)
	if err != nil {
		return err
	}
	prefix := sc.Prefix
	if prefix == "" {
		prefix = DefaultStatePrefix
	}
	lease := time.Duration(sc.Lease)
	if lease <= 0 {
		lease = keypool.DefaultLeaseTTL
	}
	timeout := time.Duration(sc.Timeout)
	if timeout <= 0 {
		timeout = DefaultStateTimeout
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = timeout, timeout, timeout, timeout
	opts.MaxRetries = -1 // a failed round trip means local state at once, not a slower request
	opts.ContextTimeoutEnabled = true
	salt := ""
	if sc.Salt != "" {
		if salt, err = repl.ReplaceOrErr(sc.Salt, true, true); err != nil || salt == "" {
			return errors.New("state: salt: placeholder is empty or unknown")
		}
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d|%s|%s|%s|%t|%s|%v|%v", opts.Addr, opts.Username, opts.DB, opts.Password, prefix, salt, opts.TLSConfig != nil, desc, lease, timeout)))
	regKey := "state:redis:" + hex.EncodeToString(sum[:12])
	redisLogOnce.Do(func() { redis.SetLogger(redisLog{h.logger.Named("state.redis")}) })
	val, _, err := stateRegistry.LoadOrNew(regKey, func() (caddy.Destructor, error) {
		return newRedisBackend(opts, prefix, salt, desc, lease, timeout, h.logger.Named("state")), nil
	})
	if err != nil {
		return fmt.Errorf("state: %v", err)
	}
	h.stateKey = regKey
	b := val.(*redisBackend)
	for _, p := range h.pools {
		for _, k := range p.keys {
			b.register(k.fp, k.material[:])
		}
		b.attach(p.kp, time.Duration(sc.Poll))
	}
	return nil
}

// redisOptions builds the client options, and a description for logs
// (the address, never the password). Placeholders that are set must
// resolve to something: an unset {env.REDIS_PASSWORD} is an error here,
// not a NOAUTH at the first request.
func (sc *StateConfig) redisOptions(repl *caddy.Replacer) (*redis.Options, string, error) {
	resolve := func(field, v string) (string, error) {
		if v == "" {
			return "", nil
		}
		out, err := repl.ReplaceOrErr(v, true, true)
		if err != nil || strings.TrimSpace(out) == "" {
			// never echo the value: it may be the secret itself
			return "", fmt.Errorf("state: %s: placeholder is empty or unknown", field)
		}
		return out, nil
	}
	if sc.URL != "" && sc.Address != "" {
		return nil, "", errors.New("state: set either url or address, not both")
	}
	var opts *redis.Options
	if sc.URL != "" {
		u, err := resolve("url", sc.URL)
		if err != nil {
			return nil, "", err
		}
		o, err := redis.ParseURL(u)
		if err != nil {
			return nil, "", errors.New("state: url: not a valid redis:// or rediss:// URL")
		}
		opts = o
	} else {
		addr, err := resolve("address", sc.Address)
		if err != nil {
			return nil, "", err
		}
		if addr == "" {
			addr = DefaultStateAddress
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, "", fmt.Errorf("state: address %q: want host:port", addr)
		}
		opts = &redis.Options{Addr: addr, DB: sc.DB}
	}
	var err error
	if sc.Username != "" {
		if opts.Username, err = resolve("username", sc.Username); err != nil {
			return nil, "", err
		}
	}
	if sc.Password != "" {
		if opts.Password, err = resolve("password", sc.Password); err != nil {
			return nil, "", err
		}
	}
	if sc.DB != 0 {
		opts.DB = sc.DB
	}
	if sc.TLS && opts.TLSConfig == nil {
		host := opts.Addr
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	}
	return opts, opts.Addr + "/" + strconv.Itoa(opts.DB), nil
}

// cleanupState releases the handler's reference to its Redis backend; the
// last reference closes it.
func (h *Handler) cleanupState() {
	if h.stateKey != "" {
		_, _ = stateRegistry.Delete(h.stateKey)
		h.stateKey = ""
	}
}

// unmarshalState parses `state memory` or `state redis { ... }`.
func unmarshalState(d *caddyfile.Dispenser) (*StateConfig, error) {
	sc := &StateConfig{}
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	if err := sc.Backend.UnmarshalText([]byte(d.Val())); err != nil || sc.Backend == "" {
		return nil, d.Errf("state: want 'memory' or 'redis', got '%s'", d.Val())
	}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if sc.Backend == StateMemory {
			return nil, d.Errf("state memory takes no options")
		}
		switch d.Val() {
		case "address":
			if !d.AllArgs(&sc.Address) {
				return nil, d.ArgErr()
			}
		case "url":
			if !d.AllArgs(&sc.URL) {
				return nil, d.ArgErr()
			}
		case "username":
			if !d.AllArgs(&sc.Username) {
				return nil, d.ArgErr()
			}
		case "password":
			if !d.AllArgs(&sc.Password) {
				return nil, d.ArgErr()
			}
		case "db":
			var v string
			if !d.AllArgs(&v) {
				return nil, d.ArgErr()
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, d.Errf("db: want a database number, got '%s'", v)
			}
			sc.DB = n
		case "tls":
			if d.NextArg() {
				return nil, d.ArgErr()
			}
			sc.TLS = true
		case "prefix":
			if !d.AllArgs(&sc.Prefix) {
				return nil, d.ArgErr()
			}
		case "salt":
			if !d.AllArgs(&sc.Salt) {
				return nil, d.ArgErr()
			}
		case "lease":
			if err := durationArg(d, &sc.Lease); err != nil {
				return nil, err
			}
		case "poll":
			if err := durationArg(d, &sc.Poll); err != nil {
				return nil, err
			}
		case "timeout":
			if err := durationArg(d, &sc.Timeout); err != nil {
				return nil, err
			}
		default:
			return nil, d.Errf("state redis: unknown option '%s'", d.Val())
		}
	}
	return sc, nil
}

// The state backend's metrics:
//
//	llm_gateway_state_backend_up                               gauge: 1 while the state backend is usable (always 1 for memory), 0 while the gateway serves on local state
//	llm_gateway_state_backend_requests_total{op,result}        counter: round trips (op acquire, release, renew, sync, clear, snapshot, spend, cost; result ok, error, skipped)
//	llm_gateway_state_backend_duration_seconds{op}             histogram: round-trip time
var stateMetricsOnce = struct {
	sync.Once
	m *stateCollectors
}{}

type stateCollectors struct {
	up       prometheus.Gauge
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func stateMetrics() *stateCollectors {
	stateMetricsOnce.Do(func() {
		stateMetricsOnce.m = &stateCollectors{
			up: prometheus.NewGauge(prometheus.GaugeOpts{
				Namespace: metricsNamespace, Name: "state_backend_up",
				Help: "1 while the state backend is usable (always for memory); 0 while Redis is unreachable and limits are per instance.",
			}),
			requests: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: metricsNamespace, Name: "state_backend_requests_total",
				Help: "Round trips to the shared state backend by operation and result (skipped: not attempted while unreachable; rejected: an error reply the call itself caused, such as WRONGTYPE, logged and not retried).",
			}, []string{"op", "result"}),
			duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Namespace: metricsNamespace, Name: "state_backend_duration_seconds",
				Help:    "Round-trip time to the shared state backend.",
				Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
			}, []string{"op"}),
		}
	})
	return stateMetricsOnce.m
}

// Interface guard.
var _ caddy.Destructor = (*redisBackend)(nil)
