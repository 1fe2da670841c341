package caddymodule

import (
	"fmt"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/keypool"
)

// registry holds every pool's live state for the whole process, keyed by
// "pool:<name>", so a config reload that keeps a pool keeps its keys'
// in-flight counts, cooldowns and breakers (keys are matched by
// fingerprint; removed keys are dropped).
var registry = caddy.NewUsagePool()

// poolState is the registry value of one pool.
type poolState struct {
	pool *keypool.Pool

	mu        sync.Mutex
	loadID    any    // identifies the config load that last attached it
	signature string // settings and key fingerprints of that attachment
	settings  keypool.Settings
	keys      []keypool.KeyConfig
	backend   keypool.Backend // state backend set by that load (nil: memory)
	sopts     keypool.SharedOptions
	learned   *learnedStore // model discovery's lists, by key fingerprint (nil until used)
	// prev is the attachment that loadID's reconcile replaced, kept until
	// that load is either committed (a newer load attaches) or rejected
	// (its Cleanup runs while it is still the last one attached).
	prev *attachment
}

type attachment struct {
	loadID    any
	signature string
	settings  keypool.Settings
	keys      []keypool.KeyConfig
	backend   keypool.Backend
	sopts     keypool.SharedOptions
}

// Destruct implements caddy.Destructor. Nothing to free: outstanding leases
// reference the pool directly and release into it.
func (*poolState) Destruct() error { return nil }

// attachPool returns the live pool named name, created on first use or
// reconciled with the new settings and keys, and the registry key that the
// caller must Delete at Cleanup.
//
// loadID identifies the config load being provisioned. Two handlers of the
// same load (e.g. two sites) may share a pool name only when they define
// it identically; otherwise the second would silently replace the first's
// keys, so that is an error.
func attachPool(name string, s keypool.Settings, keys []keypool.KeyConfig, loadID any) (*keypool.Pool, string, error) {
	regKey := "pool:" + name
	val, loaded, err := registry.LoadOrNew(regKey, func() (caddy.Destructor, error) {
		p, err := keypool.New(name, s, keys, nil)
		if err != nil {
			return nil, err
		}
		restoreUsage(name, p) // counters saved by an earlier process
		return &poolState{pool: p}, nil
	})
	if err != nil {
		return nil, "", err
	}
	ps := val.(*poolState)
	sig := poolSignature(s, keys)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if loaded && loadID != nil && ps.loadID == loadID && ps.signature != sig {
		_, _ = registry.Delete(regKey)
		return nil, "", fmt.Errorf("pool name %q is defined twice with different settings or keys; pool names must be unique in the process (their live state is shared by name)", name)
	}
	if loaded {
		if ps.loadID != loadID {
			ps.prev = &attachment{loadID: ps.loadID, signature: ps.signature, settings: ps.settings, keys: ps.keys,
				backend: ps.backend, sopts: ps.sopts}
		}
		if err := ps.pool.Reconcile(s, keys); err != nil {
			_, _ = registry.Delete(regKey)
			return nil, "", err
		}
	}
	ps.loadID, ps.signature, ps.settings, ps.keys = loadID, sig, s, keys
	return ps.pool, regKey, nil
}

// detachPool drops one reference of the config load loadID to the pool.
// When that load is still the last one attached while another load holds
// the pool too, Caddy rejected it (Provision, Validate or Start failed
// after the pool was reconciled): the previous attachment is restored so
// the running config keeps its keys and settings.
func detachPool(regKey string, loadID any) {
	if v, ok := registryValue(regKey); ok {
		ps := v.(*poolState)
		ps.mu.Lock()
		if refs, _ := registry.References(regKey); refs > 1 && ps.loadID == loadID && ps.prev != nil {
			p := ps.prev
			if err := ps.pool.Reconcile(p.settings, p.keys); err == nil {
				ps.loadID, ps.signature, ps.settings, ps.keys = p.loadID, p.signature, p.settings, p.keys
			}
			ps.pool.SetBackend(p.backend, p.sopts) // the running config's state backend
			ps.backend, ps.sopts = p.backend, p.sopts
			ps.prev = nil
		}
		ps.mu.Unlock()
	}
	_, _ = registry.Delete(regKey)
}

// registryValue returns the registry value at key without taking a
// reference (Range holds the pool's read lock: collect, then use).
func registryValue(key string) (any, bool) {
	var val any
	registry.Range(func(k, v any) bool {
		if k == key {
			val = v
			return false
		}
		return true
	})
	return val, val != nil
}

// poolSignature summarises a pool definition for conflict detection.
func poolSignature(s keypool.Settings, keys []keypool.KeyConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+v", s)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s/%s/%d/%d", k.Fingerprint, k.ID, k.MaxConcurrency, k.Weight)
	}
	return b.String()
}

// setPoolBackend sets the state backend of the pool named p.Name() and
// records it with the attachment, so that a rejected config load gives the
// running one its backend back (see detachPool).
func setPoolBackend(p *keypool.Pool, b keypool.Backend, o keypool.SharedOptions) {
	p.SetBackend(b, o)
	if v, ok := registryValue("pool:" + p.Name()); ok {
		ps := v.(*poolState)
		ps.mu.Lock()
		ps.backend, ps.sopts = b, o
		ps.mu.Unlock()
	}
}
