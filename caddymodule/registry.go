package caddymodule

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/llmgateway/llm_gateway/keypool"
)

// registry holds every pool's live state for the whole process, keyed by
// "pool:<name>", so a config reload that keeps a pool keeps its keys'
// in-flight counts, cooldowns and breakers (keys are matched by
// fingerprint; removed keys are dropped).
var registry = caddy.NewUsagePool()

// poolState is the registry value of one pool.
type poolState struct{ pool *keypool.Pool }

// Destruct implements caddy.Destructor. Nothing to free: outstanding leases
// reference the pool directly and release into it.
func (*poolState) Destruct() error { return nil }

// attachPool returns the live pool named name, created on first use or
// reconciled with the new settings and keys, and the registry key that the
// caller must Delete at Cleanup.
func attachPool(name string, s keypool.Settings, keys []keypool.KeyConfig) (*keypool.Pool, string, error) {
	regKey := "pool:" + name
	val, loaded, err := registry.LoadOrNew(regKey, func() (caddy.Destructor, error) {
		p, err := keypool.New(name, s, keys, nil)
		if err != nil {
			return nil, err
		}
		return &poolState{pool: p}, nil
	})
	if err != nil {
		return nil, "", err
	}
	ps := val.(*poolState)
	if loaded {
		if err := ps.pool.Reconcile(s, keys); err != nil {
			_, _ = registry.Delete(regKey)
			return nil, "", err
		}
	}
	return ps.pool, regKey, nil
}
