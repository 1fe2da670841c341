package caddymodule

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// egressShared shares exit cooldowns between the gateway instances of a
// cluster (state redis), as key cooldowns are shared: a cooldown one
// instance takes is seen by the others, which then leave the exit alone
// without trying it first.
type egressShared interface {
	// publish tells the cluster that e cools until then; it must not
	// block the request (the write happens in the background).
	publish(e *egressExit, until time.Time)
}

// redisEgressShare shares exit cooldowns through a state backend's Redis:
// a key "<prefix>egress:<id>" holding the cooldown's end (Unix ms, expiring
// with it) for instances that start later, and a message
// "<id>|<end ms>" on the channel "<prefix>egress" for those running. An
// exit is named in Redis by an HMAC of its resolved URL under the
// backend's id key, never by its URL (which may hold credentials).
type redisEgressShare struct {
	b *redisBackend

	mu   sync.Mutex
	byID map[string][]*egressExit
	ids  map[*egressExit]string
}

// egressShares holds one share per Redis backend.
var egressShares sync.Map // *redisBackend -> *redisEgressShare

// shareEgress makes the handler's exits share their cooldowns through its
// state backend when that is Redis; a no-op otherwise.
func (h *Handler) shareEgress() {
	if h.egress == nil || len(h.egress.exits) == 0 {
		return
	}
	var b *redisBackend
	for _, p := range h.pools {
		if rb, ok := p.kp.Backend().(*redisBackend); ok {
			b = rb
			break
		}
	}
	if b == nil {
		return
	}
	v, loaded := egressShares.LoadOrStore(b, &redisEgressShare{b: b, byID: map[string][]*egressExit{}, ids: map[*egressExit]string{}})
	s := v.(*redisEgressShare)
	if !loaded {
		go s.subscribe()
	}
	for _, e := range h.egress.exits {
		if e.direct {
			continue
		}
		s.add(e)
	}
}

// add starts sharing e's cooldowns and loads the cooldown the cluster
// already holds for it (bounded by the backend's timeout).
func (s *redisEgressShare) add(e *egressExit) {
	m := hmac.New(sha256.New, s.b.idKey)
	m.Write(e.material[:])
	id := hex.EncodeToString(m.Sum(nil)[:12])
	s.mu.Lock()
	if _, ok := s.ids[e]; !ok {
		s.ids[e] = id
		s.byID[id] = append(s.byID[id], e)
	}
	s.mu.Unlock()
	e.mu.Lock()
	e.shared = s
	e.mu.Unlock()
	var val string
	_ = s.b.call(s.b.ctx, "egress", func(ctx context.Context) error {
		var err error
		val, err = s.b.client.Get(ctx, s.b.prefix+"egress:"+id).Result()
		return err
	})
	if ms, err := strconv.ParseInt(val, 10, 64); err == nil {
		e.coolTo(time.UnixMilli(ms))
	}
}

// publish implements egressShared.
func (s *redisEgressShare) publish(e *egressExit, until time.Time) {
	s.mu.Lock()
	id, ok := s.ids[e]
	s.mu.Unlock()
	ttl := time.Until(until)
	if !ok || ttl <= 0 {
		return
	}
	ms := strconv.FormatInt(until.UnixMilli(), 10)
	go func() {
		_ = s.b.call(s.b.ctx, "egress", func(ctx context.Context) error {
			_, err := s.b.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, s.b.prefix+"egress:"+id, ms, ttl)
				p.Publish(ctx, s.b.prefix+"egress", id+"|"+ms)
				return nil
			})
			return err
		})
	}()
}

// subscribe applies the cooldowns other instances publish, until the
// backend ends.
func (s *redisEgressShare) subscribe() {
	defer egressShares.Delete(s.b)
	ps := s.b.client.Subscribe(s.b.ctx, s.b.prefix+"egress")
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-s.b.ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			id, v, ok := strings.Cut(msg.Payload, "|")
			ms, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				continue
			}
			s.mu.Lock()
			exits := append([]*egressExit(nil), s.byID[id]...)
			s.mu.Unlock()
			for _, e := range exits {
				e.coolTo(time.UnixMilli(ms))
			}
		}
	}
}

// coolTo extends the exit's cooldown to until (a cooldown learned from
// the cluster: no failure is counted here).
func (e *egressExit) coolTo(until time.Time) {
	e.mu.Lock()
	if until.After(e.coolUntil) {
		e.coolUntil = until
	}
	e.mu.Unlock()
}
