package caddymodule

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// redisBackend is the keypool.Backend of `state redis`: pool runtime state
// shared by every gateway instance that uses the same Redis and prefix.
// One lives per distinct Redis configuration in the process and is shared
// across config reloads (see stateRegistry). See state_lua.go for the
// data layout.
//
// While Redis is unreachable every call fails at once (no round trip), the
// pools serve on their local state, llm_gateway_state_backend_up reads 0,
// and a probe pings Redis every second; when it answers, each pool's
// local state is pushed back (keypool.Pool.Resync) and sharing resumes.
type redisBackend struct {
	client   *redis.Client
	prefix   string
	channel  string
	lease    time.Duration
	timeout  time.Duration
	instance string
	desc     string // address for logs (never the password)
	logger   *zap.Logger

	up        atomic.Bool
	lastErr   atomic.Value // string: why Redis was last unusable, for the admin API
	probing   atomic.Bool
	resyncing atomic.Bool // the probe is pushing local state: sync calls pass

	// Across an outage (guarded by mu): releases that could not reach
	// Redis, replayed on recovery; and leases released or abandoned
	// while down or re-syncing, kept out of any re-registration and
	// removed from Redis on recovery.
	pending []*keypool.SharedRelease
	gone    map[string]goneLease
	drift   map[string]time.Time // pool/fingerprint -> last config drift warning
	// rejected: pool/fingerprint/error -> when a release Redis rejected
	// was last logged (dropRejected)
	rejected map[string]time.Time

	mu    sync.Mutex
	pools map[string]*keypool.Pool
	live  map[string]liveLease // by lease id, renewed every lease/3

	// Key identities in Redis. A pool's fingerprints are salted per
	// installation, so two instances name the same key differently; in
	// Redis a key is named by an HMAC of its base URL and secret under a
	// key every instance derives alike (see sharedIDKey).
	idMu       sync.RWMutex
	idKey      []byte
	toShared   map[string]string // local fingerprint -> shared id
	fromShared map[string]string // shared id -> local fingerprint

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// liveLease is a lease the backend renews until it is released.
type liveLease struct{ pool, fp string }

// goneLease is a lease id that must not live in Redis: released, or
// granted to an acquisition whose answer was lost (on any of fps).
type goneLease struct {
	pool string
	fps  []string
	exp  time.Time
}

// Bounds of the outage bookkeeping; beyond them the oldest is dropped
// (its lease then expires by its TTL).
const (
	maxPendingReleases = 10000
	maxGoneLeases      = 100000
)

// errStateDown is returned without a round trip while Redis is known to be
// unreachable.
var errStateDown = errors.New("shared state (redis) unreachable: serving on local state")

func newRedisBackend(opts *redis.Options, prefix, salt, desc string, lease, timeout time.Duration, logger *zap.Logger) *redisBackend {
	ctx, cancel := context.WithCancel(context.Background())
	b := &redisBackend{
		client: redis.NewClient(opts), prefix: prefix, channel: prefix + "events",
		lease: lease, timeout: timeout, instance: instanceID, desc: desc, logger: logger,
		pools: map[string]*keypool.Pool{}, live: map[string]liveLease{}, gone: map[string]goneLease{},
		idKey: sharedIDKey(prefix, salt), toShared: map[string]string{}, fromShared: map[string]string{},
		ctx: ctx, cancel: cancel,
	}
	b.up.Store(true)
	stateMetrics().up.Set(1)
	if err := b.ping(ctx); err != nil {
		b.down(err)
	}
	b.wg.Add(2)
	go b.subscribe()
	go b.renew()
	return b
}

// Destruct implements caddy.Destructor: the last config using this Redis
// configuration is gone.
func (b *redisBackend) Destruct() error {
	b.cancel()
	err := b.client.Close()
	b.wg.Wait()
	return err
}

// attach makes p share its state here and receive events. When p was on
// another Redis backend (a reload changed a Redis setting), the leases
// that one renews are taken over, so requests outliving the reload keep
// their slots.
func (b *redisBackend) attach(p *keypool.Pool, poll time.Duration) {
	if old, ok := p.Backend().(*redisBackend); ok && old != b {
		old.mu.Lock()
		taken := make(map[string]liveLease, len(old.live))
		for id, l := range old.live {
			if l.pool == p.Name() {
				taken[id] = l
				delete(old.live, id)
			}
		}
		old.mu.Unlock()
		b.mu.Lock()
		for id, l := range taken {
			b.live[id] = l
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.pools[p.Name()] = p
	b.mu.Unlock()
	setPoolBackend(p, b, keypool.SharedOptions{Instance: b.instance, LeaseTTL: b.lease, Poll: poll})
}

// ping reports whether Redis answers within the timeout.
func (b *redisBackend) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.client.Ping(ctx).Err()
}

// sharedIDKey is the HMAC key of shared key ids: derived from the prefix
// and the optional configured salt, so every instance of a cluster
// derives the same one without asking Redis (and it survives a Redis
// restart).
func sharedIDKey(prefix, salt string) []byte {
	sum := sha256.Sum256([]byte("llm_gateway state ids\x00" + prefix + "\x00" + salt))
	return sum[:]
}

// register names the key with local fingerprint fp in Redis by its
// material (a hash of its base URL and secret, see upstreamKey.material).
func (b *redisBackend) register(fp string, material []byte) {
	m := hmac.New(sha256.New, b.idKey)
	m.Write(material)
	id := hex.EncodeToString(m.Sum(nil)[:12])
	b.idMu.Lock()
	defer b.idMu.Unlock()
	b.toShared[fp], b.fromShared[id] = id, fp
}

// sid returns the Redis id of a local fingerprint (the fingerprint itself
// for a key never registered).
func (b *redisBackend) sid(fp string) string {
	b.idMu.RLock()
	defer b.idMu.RUnlock()
	if id, ok := b.toShared[fp]; ok {
		return id
	}
	return fp
}

// lfp returns the local fingerprint of a Redis id.
func (b *redisBackend) lfp(id string) string {
	b.idMu.RLock()
	defer b.idMu.RUnlock()
	if fp, ok := b.fromShared[id]; ok {
		return fp
	}
	return id
}

// keyNames returns the hash, lease set and rpm log of the key with local
// fingerprint fp.
func (b *redisBackend) keyNames(pool, fp string) (h, l, r string) {
	base := b.prefix + "{" + pool + "}:"
	id := b.sid(fp)
	return base + "k:" + id, base + "l:" + id, base + "r:" + id
}

// call runs one round trip, metering it and noticing an outage. While
// Redis is known to be down nothing is sent (result "skipped"), except
// the probe's re-sync and the releases that happen meanwhile. A failure
// of the connection or of the server (network, timeout, or an error reply
// such as NOPERM, READONLY after a failover, OOM, LOADING) puts the
// instance on local state until the probe succeeds. A script error
// (scriptRejected: a WRONGTYPE, a script's runtime error) is the call's
// own: it would fail again whenever sent, so the instance stays on shared
// state (result "rejected") and the caller drops what it sent.
func (b *redisBackend) call(ctx context.Context, op string, f func(ctx context.Context) error) error {
	if b.ctx.Err() != nil || !b.up.Load() && !(b.resyncing.Load() && (op == "sync" || op == "release")) {
		stateMetrics().requests.WithLabelValues(op, "skipped").Inc()
		return errStateDown
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	err := f(cctx)
	cancel()
	m := stateMetrics()
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, redis.Nil) {
		if scriptRejected(err) {
			m.requests.WithLabelValues(op, "rejected").Inc()
			return err
		}
		m.requests.WithLabelValues(op, "error").Inc()
		if ctx.Err() == nil {
			b.down(err)
		}
		return err
	}
	m.requests.WithLabelValues(op, "ok").Inc()
	return nil
}

// serverConditions are the error replies that tell of the server's or
// the connection's state, not of the command sent: the same command may
// succeed later (a failover's READONLY, OOM, LOADING, BUSY with a slow
// script, NOPERM or an auth error until an operator fixes the ACL, the
// cluster's redirections). Redis 6 wraps a script's failed redis.call in
// "ERR Error running script ...: <reply>", so they are looked for
// anywhere in the message.
var serverConditions = []string{"LOADING ", "READONLY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "NOREPLICAS ",
	"OOM ", "NOPERM ", "NOAUTH ", "WRONGPASS ", "MISCONF ", "BUSY ", "MOVED ", "ASK ", "NOSCRIPT ", "EXECABORT ",
	"max number of clients", "unknown command"}

// scriptRejected reports whether err is an error reply of Redis that the
// call's own keys or arguments caused, so that sending the call again
// fails again: a WRONGTYPE (a key of another type under the prefix) or a
// script's runtime error (Redis 7: "... on @user_script:N."; Redis 6 and
// earlier: "ERR Error running script (call to f_…): @user_script:N: …").
// Not a network error, a timeout, a server condition (serverConditions),
// nor any other error reply: one the gateway cannot place (a failed
// legacy AUTH's "ERR invalid password", a hosted Redis's "ERR max
// requests limit exceeded") is the server's, and puts the instance on
// local state as before, rather than having every release dropped while
// the instance counts as sharing.
func scriptRejected(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, c := range serverConditions {
		if strings.Contains(msg, c) {
			return false
		}
	}
	return strings.Contains(msg, "WRONGTYPE") || strings.Contains(msg, "user_script") || strings.Contains(msg, "Error running script")
}

// dropRejected logs, at most once a minute per pool, key and error, that
// Redis rejected a release of the key (scriptRejected) and that it is
// dropped rather than replayed: the shared state misses that release's
// effects (the lease expires by its TTL). Secret-free: the key's
// fingerprint and Redis's error reply, which names no argument.
func (b *redisBackend) dropRejected(rel *keypool.SharedRelease, err error) {
	b.mu.Lock()
	if b.rejected == nil {
		b.rejected = map[string]time.Time{}
	}
	k := rel.Pool + "/" + rel.Fingerprint + "/" + err.Error()
	if last, ok := b.rejected[k]; ok && time.Since(last) < time.Minute {
		b.mu.Unlock()
		return
	}
	if len(b.rejected) >= 1000 {
		clear(b.rejected)
	}
	b.rejected[k] = time.Now()
	b.mu.Unlock()
	b.logger.Warn("shared state: Redis rejected a key's release; it is dropped, not replayed (its lease expires by its TTL): check that nothing else writes under the state prefix",
		zap.String("redis", b.desc), zap.String("pool", rel.Pool), zap.String("key_fingerprint", rel.Fingerprint), zap.Error(err))
}

// down switches to local state and starts probing Redis.
func (b *redisBackend) down(err error) {
	if b.ctx.Err() != nil {
		return // closed
	}
	b.lastErr.Store(err.Error())
	if b.up.Swap(false) {
		stateMetrics().up.Set(0)
		b.logger.Warn("shared state unavailable: serving on local state, limits are per instance until it returns",
			zap.String("redis", b.desc), zap.Error(err))
	}
	if b.probing.Swap(true) {
		return
	}
	b.wg.Add(1)
	go b.probe()
}

// probe pings Redis every second until it answers and the re-sync
// succeeds, then lets the instance share again. probing is cleared before
// up is set, so a failure right after starts a new probe.
func (b *redisBackend) probe() {
	defer b.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			b.probing.Store(false)
			return
		case <-t.C:
		}
		if err := b.ping(b.ctx); err != nil {
			b.lastErr.Store(err.Error())
			continue
		}
		if err := b.resync(); err != nil {
			b.logger.Warn("shared state: re-sync failed; retrying", zap.String("redis", b.desc), zap.Error(err))
			continue
		}
		b.probing.Store(false)
		b.up.Store(true)
		stateMetrics().up.Set(1)
		b.logger.Info("shared state reachable again: limits are cluster-wide again", zap.String("redis", b.desc))
		// releases that missed the re-sync by a hair
		b.mu.Lock()
		late := b.pending
		b.pending = nil
		b.mu.Unlock()
		for i, rel := range late {
			if err := b.call(b.ctx, "release", func(ctx context.Context) error { return b.replayRelease(ctx, rel) }); err != nil {
				if scriptRejected(err) {
					b.dropRejected(rel, err)
					continue
				}
				b.requeue(late[i:]) // down again: the next probe replays the rest
				break
			}
		}
		return
	}
}

// resync pushes what happened during the outage, before the instance
// shares again: its live leases (Redis may have restarted empty), the
// releases that could not be sent, the leases that must not live, and
// each pool's local state (keypool.Pool.Resync).
func (b *redisBackend) resync() error {
	b.resyncing.Store(true)
	defer b.resyncing.Store(false)
	b.mu.Lock()
	pools := make([]*keypool.Pool, 0, len(b.pools))
	for _, p := range b.pools {
		pools = append(pools, p)
	}
	byPool := map[string]map[string][]string{}
	for id, l := range b.live {
		if byPool[l.pool] == nil {
			byPool[l.pool] = map[string][]string{}
		}
		byPool[l.pool][l.fp] = append(byPool[l.pool][l.fp], id)
	}
	pending := b.pending
	b.pending = nil
	b.mu.Unlock()
	for pool, fps := range byPool {
		keys := make([]keypool.SharedSync, 0, len(fps))
		for fp, ids := range fps {
			keys = append(keys, keypool.SharedSync{Fingerprint: fp, Leases: ids, LeaseTTL: b.lease})
		}
		if err := b.Sync(b.ctx, pool, keys); err != nil {
			b.requeue(pending)
			return err
		}
	}
	for i, rel := range pending {
		if err := b.call(b.ctx, "sync", func(ctx context.Context) error { return b.replayRelease(ctx, rel) }); err != nil {
			if scriptRejected(err) {
				b.dropRejected(rel, err) // replayed, it would fail every re-sync
				continue
			}
			b.requeue(pending[i:])
			return err
		}
	}
	for _, p := range pools {
		if err := p.Resync(b.ctx); err != nil {
			return err
		}
	}
	return b.dropGone()
}

// requeue puts releases back for the next re-sync.
func (b *redisBackend) requeue(rels []*keypool.SharedRelease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(rels, b.pending...)
	if n := len(b.pending) - maxPendingReleases; n > 0 {
		b.pending = b.pending[n:]
	}
}

// dropGone removes from Redis every lease id that must not live there
// (one pipelined round trip) and forgets those older than a lease.
func (b *redisBackend) dropGone() error {
	now := time.Now()
	type drop struct {
		id   string
		keys []string
	}
	var drops []drop
	b.mu.Lock()
	for id, g := range b.gone {
		if now.After(g.exp) {
			delete(b.gone, id) // expired in Redis by now anyway
			continue
		}
		d := drop{id: id}
		for _, fp := range g.fps {
			h, l, r := b.keyNames(g.pool, fp)
			d.keys = append(d.keys, h, l, r)
		}
		drops = append(drops, d)
	}
	b.mu.Unlock()
	if len(drops) == 0 {
		return nil
	}
	return b.call(b.ctx, "sync", func(ctx context.Context) error {
		_, err := b.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, d := range drops {
				abortScript.Eval(ctx, pipe, d.keys, d.id)
			}
			return nil
		})
		return err
	})
}

// forget records a lease id that must not live in Redis (see gone).
func (b *redisBackend) forget(id, pool string, fps ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.live, id)
	if len(b.gone) >= maxGoneLeases {
		return // its lease expires by its TTL
	}
	b.gone[id] = goneLease{pool: pool, fps: fps, exp: time.Now().Add(b.lease)}
}

// Acquire implements keypool.Backend.
func (b *redisBackend) Acquire(ctx context.Context, req *keypool.SharedAcquire) (keypool.SharedGrant, error) {
	g := keypool.SharedGrant{Index: -1}
	base := b.prefix + "{" + req.Pool + "}:"
	keys := make([]string, 2, 2+3*len(req.Candidates))
	keys[0], keys[1] = base+"rr", base+"a:"+req.Session
	args := make([]any, 5, 5+11*len(req.Candidates))
	args[0], args[1] = req.LeaseID, req.LeaseTTL.Milliseconds()
	args[2], args[3], args[4] = boolArg(req.RoundRobin), int64(0), len(req.Candidates)
	if req.Session != "" && req.AffinityTTL > 0 {
		args[3] = req.AffinityTTL.Milliseconds()
	}
	for i := range req.Candidates {
		c := &req.Candidates[i]
		h, l, r := b.keyNames(req.Pool, c.Fingerprint)
		keys = append(keys, h, l, r)
		args = append(args, b.sid(c.Fingerprint), c.MaxConcurrency, c.RPM, c.TPM, c.Tokens, c.QuotaRequests, c.QuotaTokens,
			strconv.FormatInt(c.QuotaPeriod, 10), c.QuotaLeft.Milliseconds(), boolArg(c.Probe), boolArg(c.Early))
	}
	var res []any
	err := b.call(ctx, "acquire", func(ctx context.Context) error {
		var err error
		res, err = acquireScript.Run(ctx, b.client, keys, args...).Slice()
		return err
	})
	if err != nil {
		if !errors.Is(err, errStateDown) {
			// the script may have run and granted a slot nobody will
			// release: take it back now if Redis is up, else at re-sync
			fps := make([]string, len(req.Candidates))
			for i := range req.Candidates {
				fps[i] = req.Candidates[i].Fingerprint
			}
			b.forget(req.LeaseID, req.Pool, fps...)
			if b.up.Load() {
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					if b.dropGone() == nil {
						b.mu.Lock()
						delete(b.gone, req.LeaseID)
						b.mu.Unlock()
					}
				}()
			}
		}
		return g, err
	}
	if len(res) < 6 || (len(res)-6)%3 != 0 {
		return g, errors.New("shared state: malformed acquire reply")
	}
	g.Index = int(toInt(res[0]))
	g.Probe, g.HalfOpen, g.BreakerTrips = toInt(res[1]) == 1, toInt(res[2]) == 1, int(toInt(res[3]))
	if pin, _ := res[4].(string); pin != "" {
		g.Pinned = b.lfp(pin)
	}
	if toInt(res[5]) == 1 && g.Index >= 0 && g.Index < len(req.Candidates) {
		b.warnDrift(req.Pool, req.Candidates[g.Index].Fingerprint)
	}
	for i := 6; i+2 < len(res); i += 3 {
		reason, _ := res[i+1].(string)
		g.Refused = append(g.Refused, keypool.SharedRefusal{Index: int(toInt(res[i])), Reason: reason,
			Wait: time.Duration(toInt(res[i+2])) * time.Millisecond})
	}
	if g.Index >= 0 && g.Index < len(req.Candidates) {
		b.mu.Lock()
		b.live[req.LeaseID] = liveLease{pool: req.Pool, fp: req.Candidates[g.Index].Fingerprint}
		b.mu.Unlock()
	}
	return g, nil
}

// warnDrift logs, at most once a minute per key, that instances enforce
// different limits for one key.
func (b *redisBackend) warnDrift(pool, fp string) {
	b.mu.Lock()
	if b.drift == nil {
		b.drift = map[string]time.Time{}
	}
	k := pool + "/" + fp
	if last, ok := b.drift[k]; ok && time.Since(last) < time.Minute {
		b.mu.Unlock()
		return
	}
	b.drift[k] = time.Now()
	b.mu.Unlock()
	b.logger.Warn("instances sharing this Redis configure different limits (max_concurrency, rpm, tpm or quota) for one key; "+
		"each enforces its own against the shared counts: give every instance the same pool config",
		zap.String("pool", pool), zap.String("key_fingerprint", fp))
}

// Release implements keypool.Backend. A release that cannot reach Redis
// is kept and replayed when it returns; one Redis rejects
// (scriptRejected) is logged and dropped.
func (b *redisBackend) Release(ctx context.Context, rel *keypool.SharedRelease) error {
	if !b.up.Load() {
		b.forget(rel.LeaseID, rel.Pool, rel.Fingerprint) // keep it out of a concurrent re-sync
	} else {
		b.mu.Lock()
		delete(b.live, rel.LeaseID)
		b.mu.Unlock()
	}
	var order int64
	err := b.call(ctx, "release", func(ctx context.Context) error {
		var err error
		order, err = b.runRelease(ctx, rel)
		return err
	})
	if err == nil {
		rel.Order = order
	}
	if err != nil && scriptRejected(err) {
		// replayed, it would fail again at every re-sync: dropped, and
		// its lease taken out of any re-registration (it expires by its TTL)
		b.forget(rel.LeaseID, rel.Pool, rel.Fingerprint)
		b.dropRejected(rel, err)
		return err
	}
	if err != nil && ctx.Err() == nil {
		b.forget(rel.LeaseID, rel.Pool, rel.Fingerprint)
		b.requeue([]*keypool.SharedRelease{rel})
	}
	return err
}

// runRelease runs the release script for rel. It returns the release's
// number (keypool.SharedRelease.Order; 0 from a reply without one).
func (b *redisBackend) runRelease(ctx context.Context, rel *keypool.SharedRelease) (int64, error) {
	h, l, _ := b.keyNames(rel.Pool, rel.Fingerprint)
	s, err := releaseScript.Run(ctx, b.client, []string{h, l},
		rel.LeaseID, rel.TPM, rel.TokenDelta, rel.QuotaTokens, strconv.FormatInt(rel.QuotaPeriod, 10),
		boolArg(rel.Clear), rel.Cooldown.Milliseconds(), rel.Reason, rel.BreakerOpen.Milliseconds(), rel.BreakerTrips,
		boolArg(rel.ProbePending), int64(rel.TTFB), rel.LatencyAlpha,
		b.channel, rel.Pool, rel.Instance, b.sid(rel.Fingerprint), boolArg(rel.Heuristic), encodeLearned(rel.Learned)).Text()
	if err != nil {
		return 0, err
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n, nil
}

// replayRelease runs the release script for a release kept across an
// outage; its number is no longer anyone's concern.
func (b *redisBackend) replayRelease(ctx context.Context, rel *keypool.SharedRelease) error {
	_, err := b.runRelease(ctx, rel)
	return err
}

// Sync implements keypool.Backend: one pipelined round trip for all keys.
// Lease ids known to be gone are not registered.
func (b *redisBackend) Sync(ctx context.Context, pool string, keys []keypool.SharedSync) error {
	if len(keys) == 0 {
		return nil
	}
	return b.call(ctx, "sync", func(ctx context.Context) error {
		_, err := b.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, k := range keys {
				h, l, _ := b.keyNames(pool, k.Fingerprint)
				args := []any{k.LeaseTTL.Milliseconds(), k.Cooldown.Milliseconds(), k.Reason, k.BreakerOpen.Milliseconds(),
					k.BreakerTrips, boolArg(k.ProbePending), strconv.FormatInt(k.QuotaPeriod, 10), k.QuotaRequests, k.QuotaTokens,
					boolArg(k.Heuristic)}
				b.mu.Lock()
				for _, id := range k.Leases {
					if _, gone := b.gone[id]; gone {
						continue
					}
					args = append(args, id)
					b.live[id] = liveLease{pool: pool, fp: k.Fingerprint}
				}
				b.mu.Unlock()
				syncScript.Eval(ctx, pipe, []string{h, l}, args...)
			}
			return nil
		})
		return err
	})
}

// Clear implements keypool.Backend.
func (b *redisBackend) Clear(ctx context.Context, pool, fp, instance string) error {
	h, _, _ := b.keyNames(pool, fp)
	return b.call(ctx, "clear", func(ctx context.Context) error {
		return clearScript.Run(ctx, b.client, []string{h}, b.channel, pool, instance, b.sid(fp)).Err()
	})
}

// Snapshot implements keypool.Backend: one pipelined round trip.
func (b *redisBackend) Snapshot(ctx context.Context, pool string, fps []string) ([]keypool.SharedKeyState, error) {
	out := make([]keypool.SharedKeyState, len(fps))
	if len(fps) == 0 {
		return out, nil
	}
	cmds := make([]*redis.Cmd, len(fps))
	err := b.call(ctx, "snapshot", func(ctx context.Context) error {
		_, err := b.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, fp := range fps {
				h, l, r := b.keyNames(pool, fp)
				cmds[i] = snapshotScript.Eval(ctx, pipe, []string{h, l, r})
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, c := range cmds {
		v, err := c.Slice()
		if err != nil || len(v) < 12 {
			return nil, errors.New("shared state: malformed snapshot reply")
		}
		st := keypool.SharedKeyState{Fingerprint: fps[i], InFlight: int(toInt(v[0])),
			CooldownLeft: time.Duration(toInt(v[1])) * time.Millisecond,
			BreakerLeft:  time.Duration(toInt(v[4])) * time.Millisecond, ProbeInFlight: toInt(v[5]) == 1,
			RPMUsed: int(toInt(v[6])), TPMLevel: toInt(v[7]), QuotaRequests: toInt(v[9]), QuotaTokens: toInt(v[10]),
			LatencyEMA: time.Duration(toInt(v[11]))}
		st.CooldownReason, _ = v[2].(string)
		st.Breaker = keypool.BreakerState(toInt(v[3])).String()
		if s, _ := v[8].(string); s != "" {
			st.QuotaPeriod, _ = strconv.ParseInt(s, 10, 64)
		}
		if len(v) > 12 {
			now := toInt(v[12])
			for _, x := range v[13:] {
				s, _ := x.(string)
				at, enc, ok := strings.Cut(s, "|")
				ms, err := strconv.ParseInt(at, 10, 64)
				if !ok || err != nil {
					continue
				}
				if l, ok := decodeLearned(enc, time.Duration(now-ms)*time.Millisecond); ok {
					st.Learned = append(st.Learned, l)
				}
			}
		}
		out[i] = st
	}
	return out, nil
}

// subscribe delivers other instances' events to the pools until Destruct.
// go-redis re-subscribes by itself after a reconnect; events missed
// meanwhile are covered by the pools' poll bound and the next refusal.
func (b *redisBackend) subscribe() {
	defer b.wg.Done()
	ps := b.client.Subscribe(b.ctx, b.channel)
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-b.ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			if b.applySpendEvent(msg.Payload) {
				continue
			}
			pool, ev, ok := parseStateEvent(msg.Payload)
			if !ok {
				pool, ev, ok = parseLearnedEvent(msg.Payload)
			}
			if !ok || ev.Instance == b.instance {
				continue // this instance's pools already applied their own releases
			}
			ev.Fingerprint = b.lfp(ev.Fingerprint)
			b.mu.Lock()
			p := b.pools[pool]
			b.mu.Unlock()
			if p != nil {
				p.Notify(ev)
			}
		}
	}
}

// parseStateEvent reads "pool|instance|fp|flags|wait_ms|reason|ema_ns|order_ns"
// (order_ns: a clear's number, SharedEvent.Order, see state_lua.go;
// empty, or left out by an older instance, for none; an instance of the
// previous version sent its clock's time of the success there, read as
// a number too).
func parseStateEvent(s string) (string, keypool.SharedEvent, bool) {
	f := strings.Split(s, "|")
	if len(f) != 7 && len(f) != 8 {
		return "", keypool.SharedEvent{}, false
	}
	wait, _ := strconv.ParseInt(f[4], 10, 64)
	ema, _ := strconv.ParseInt(f[6], 10, 64)
	ev := keypool.SharedEvent{Instance: f[1], Fingerprint: f[2], Clear: f[3] == "c", Reset: f[3] == "r",
		Wait: time.Duration(wait) * time.Millisecond, Reason: f[5], EMA: time.Duration(ema)}
	if len(f) == 8 && ev.Clear {
		if n, err := strconv.ParseInt(f[7], 10, 64); err == nil && n > 0 {
			ev.Order = n
		}
	}
	return f[0], ev, true
}

// renew extends the live leases every lease/3, in one pipelined round trip.
func (b *redisBackend) renew() {
	defer b.wg.Done()
	t := time.NewTicker(max(b.lease/3, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		b.mu.Lock()
		ids := make([]string, 0, len(b.live))
		ls := make([]liveLease, 0, len(b.live))
		for id, l := range b.live {
			ids, ls = append(ids, id), append(ls, l)
		}
		b.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		_ = b.call(b.ctx, "renew", func(ctx context.Context) error {
			_, err := b.client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i, id := range ids {
					h, l, _ := b.keyNames(ls[i].pool, ls[i].fp)
					renewScript.Eval(ctx, pipe, []string{h, l}, id, b.lease.Milliseconds())
				}
				return nil
			})
			return err
		})
	}
}

func boolArg(v bool) int {
	if v {
		return 1
	}
	return 0
}

// toInt reads an integer reply field.
func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// Interface guard.
var _ keypool.Backend = (*redisBackend)(nil)
