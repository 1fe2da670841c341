package caddymodule

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Cost totals in cluster mode (state redis): every instance adds each
// priced request to one Redis hash, "<prefix>cost", whose fields are
// "<total>\x00<figure>": total as in the usage file ("key <pool>\x00<key
// id>", "gateway_key <id>", "model <name>") and figure one of usd (a float,
// HINCRBYFLOAT), priced, estimated, unknown (integers, HINCRBY). Additions
// are batched per backend and written off the request path; a batch Redis
// refuses is kept and retried with the next. GET /llm_gateway/spend then
// shows the cluster's totals beside this instance's. The hash holds ids
// and model names, never a secret, and does not expire.

// costShares holds, per Redis backend, what is still to be written.
var costShares sync.Map // *redisBackend -> *costShare

type costShare struct {
	mu       sync.Mutex
	pending  map[costKey]costFigures
	flushing bool
}

// costHash is the name of the cluster's cost hash.
func (b *redisBackend) costHash() string { return b.prefix + "cost" }

// shareCost queues one request's cost under keys for the cluster totals
// and starts a writer when none runs.
func shareCost(b *redisBackend, keys []costKey, c requestCost) {
	if b == nil {
		return
	}
	v, _ := costShares.LoadOrStore(b, &costShare{pending: map[costKey]costFigures{}})
	s := v.(*costShare)
	var d costFigures
	switch {
	case !c.known:
		d.Unknown = 1
	default:
		d.USD, d.Priced = c.usd, 1
		if c.estimated {
			d.Estimated = 1
		}
	}
	s.mu.Lock()
	for _, k := range keys {
		s.pending[k] = addFigures(s.pending[k], d)
	}
	start := !s.flushing
	s.flushing = true
	s.mu.Unlock()
	if start {
		go s.flush(b)
	}
}

func addFigures(a, b costFigures) costFigures {
	a.USD += b.USD
	a.Priced += b.Priced
	a.Estimated += b.Estimated
	a.Unknown += b.Unknown
	return a
}

// flush writes the pending additions until none are left; a failed batch
// goes back to pending and waits for the next request's addition.
func (s *costShare) flush(b *redisBackend) {
	for {
		s.mu.Lock()
		batch := s.pending
		if len(batch) == 0 {
			s.flushing = false
			s.mu.Unlock()
			return
		}
		s.pending = map[costKey]costFigures{}
		s.mu.Unlock()
		err := b.call(context.Background(), "cost", func(ctx context.Context) error {
			pipe := b.client.Pipeline()
			h := b.costHash()
			for k, f := range batch {
				name := k.String() + "\x00"
				if f.Priced > 0 {
					pipe.HIncrByFloat(ctx, h, name+"usd", f.USD)
					pipe.HIncrBy(ctx, h, name+"priced", f.Priced)
				}
				if f.Estimated > 0 {
					pipe.HIncrBy(ctx, h, name+"estimated", f.Estimated)
				}
				if f.Unknown > 0 {
					pipe.HIncrBy(ctx, h, name+"unknown", f.Unknown)
				}
			}
			_, err := pipe.Exec(ctx)
			return err
		})
		if err != nil {
			s.mu.Lock()
			for k, f := range batch {
				s.pending[k] = addFigures(s.pending[k], f)
			}
			s.flushing = false
			s.mu.Unlock()
			return
		}
	}
}

// clusterCosts reads the cluster's totals from b.
func clusterCosts(ctx context.Context, b *redisBackend) (map[costKey]costFigures, error) {
	var all *redis.MapStringStringCmd
	err := b.call(ctx, "cost", func(ctx context.Context) error {
		all = b.client.HGetAll(ctx, b.costHash())
		return all.Err()
	})
	if err != nil {
		return nil, err
	}
	out := map[costKey]costFigures{}
	for field, v := range all.Val() {
		i := strings.LastIndexByte(field, 0)
		if i < 0 {
			continue
		}
		k, ok := parseCostKey(field[:i])
		if !ok {
			continue
		}
		f := out[k]
		switch field[i+1:] {
		case "usd":
			f.USD, _ = strconv.ParseFloat(v, 64)
		case "priced":
			f.Priced, _ = strconv.ParseInt(v, 10, 64)
		case "estimated":
			f.Estimated, _ = strconv.ParseInt(v, 10, 64)
		case "unknown":
			f.Unknown, _ = strconv.ParseInt(v, 10, 64)
		}
		out[k] = f
	}
	return out, nil
}

// poolBackend returns the Redis backend of pool p, nil in memory mode or
// when p is nil.
func poolBackend(p *pool) *redisBackend {
	if p == nil || p.kp == nil {
		return nil
	}
	b, _ := p.kp.Backend().(*redisBackend)
	return b
}

// liveRedisBackend returns the Redis backend of some live pool, nil when
// every pool keeps its state in memory.
func liveRedisBackend() *redisBackend {
	for _, p := range livePools() {
		if b, ok := p.Backend().(*redisBackend); ok {
			return b
		}
	}
	return nil
}
