package caddymodule

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// verifierLimit bounds the verifier's probe of a long key-level verdict
// (a one-token completion; a Timeout's probe has the pool's shorter
// probe_timeout): keypool tells a client turned away meanwhile to come
// back when it is due (keypool.Pool.SetVerifier).
func verifierLimit() time.Duration { return 2 * probeTimeout }

// verifier returns the function the pool calls when a client request led
// to a long key-level verdict (401, 402, 403 at key level, no credit, a
// quota until a distant reset): the key is only provisionally cooled
// (provisional_cooldown) until this independent probe, the same request
// POST /llm_gateway/diagnose sends and never the client's body, confirms
// the verdict, with a one-token completion: a models list may answer 200
// for a key that is refused completions, out of credit or out of quota.
//
// A client attempt that timed out while the upstream had taken the
// request and not answered (keypool.Outcome.AwaitingAnswer: maybe a long
// generation the client asked for) leaves the key untouched; the same
// one-token probe, bounded by the pool's probe_timeout, decides: a probe
// that times out or fails too books the failure (cooldown, breaker), one
// that answers leaves the key in rotation.
func (h *Handler) verifier(p *pool) func(k *keypool.Key, o keypool.Outcome) {
	logger := h.logger
	return func(k *keypool.Key, o keypool.Outcome) {
		uk := p.keys[k.Fingerprint()]
		if uk == nil {
			return // a key of a newer config: its own handler verifies it
		}
		limit := verifierLimit()
		if o.Kind == keypool.Timeout {
			limit = min(p.kp.Settings().ProbeTimeout, probeTimeout)
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		var res probeResult
		probeKey(ctx, p, uk, &res, true)
		probe := res.outcome
		if res.OK {
			probe = keypool.Outcome{Kind: keypool.Success, Status: res.Status}
		}
		if o.Kind == keypool.Timeout && probe.Kind == keypool.Timeout {
			probe.Message = "upstream timeout: no answer to the client's request within attempt_timeout nor to the gateway's probe within probe_timeout"
		}
		p.kp.Confirm(k.Fingerprint(), probe)
		if logger != nil {
			verdict := "not confirmed: the key stays in rotation after its provisional cooldown"
			switch {
			case o.Kind == keypool.Timeout && probe.Kind.Dead():
				verdict = "timeout: the probe found the key dead"
			case o.Kind == keypool.Timeout && probe.Kind.Transient():
				verdict = "timeout confirmed: the probe got no answer either; the key is cooled"
			case o.Kind == keypool.Timeout:
				verdict = "timeout not confirmed: the probe was answered; the key stays in rotation"
			case probe.Kind.Dead():
				verdict = "confirmed"
			case probe.Kind == keypool.Success:
				verdict = "refuted: the client's request caused it; the key is back in rotation"
			}
			logger.Info("key verdict "+verdict,
				zap.String("pool", p.name), zap.String("key", uk.id),
				zap.String("verdict", o.Kind.String()), zap.String("probe", res.Probe),
				zap.String("probe_outcome", probe.Kind.String()), zap.Int("probe_status", res.Status))
		}
	}
}
