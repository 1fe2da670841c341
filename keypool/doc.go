// Package keypool pools upstream LLM API keys: gates, selection
// strategies, session affinity, outcome classification and cooldown
// arithmetic. It is pure Go on the standard library; time comes from an
// injected Clock so tests run without sleeping.
//
// One request's life, as the caller drives it:
//
//	lease, err := pool.Acquire(ctx, keypool.AcquireOptions{
//		Skip: skip, Timeout: wait, Model: upstreamModel,
//		Session: sessionID, Tokens: estimate,
//	})
//	// cap the attempt at lease.ProbeTimeout() when lease.Probe()
//	// ... send; on the answer's headers, success or not:
//	//   if rl, ok := keypool.ParseRateLimits(header, now); ok { lease.Learn(rl) }
//	// on an error status read at most MaxClassifyBody bytes ...
//	o := keypool.ClassifyResponseFor(upstreamModel, status, header, bodyPrefix, now) // or ClassifyError
//	o.Tokens, o.TTFB = usage, ttfb
//	lease.Release(o)
//	// move on to another key when o.Kind.Retryable(); only
//	// o.Kind.SpendsRetry() spends max_retries; o.HostDown: skip every key
//	// with the same Key.Host for the rest of the request.
//
// A long key-level verdict (401, 402, key-level 403, a quota until a
// distant reset) is provisional (Settings.ProvisionalCooldown) until the
// caller's own probe confirms it: the function set with Pool.SetVerifier
// runs that probe and reports back with Pool.Confirm (verify.go).
//
// Files: pool.go (Pool, Acquire, the ready index), lease.go (Lease,
// Release: what each outcome does to a key), key.go (per-key state and
// gates), limits.go (rpm window, tpm bucket, quota periods), affinity.go
// (the session table), classify.go and outcome.go (outcome classes),
// verify.go (provisional verdicts and their confirmation),
// retryafter.go (Retry-After), learned.go and learned_shared.go (limits
// learned from the upstreams' rate-limit headers, Lease.Learn, and their
// sharing in cluster mode), settings.go (knobs and defaults),
// status.go (snapshots and errors), index.go (bitset and heap), and one
// strategy_<name>.go per selection strategy.
package keypool
