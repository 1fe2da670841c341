package caddymodule

import (
	"sort"
	"time"

	"go.uber.org/zap"
)

// DefaultClientWriteTimeout is the default of Handler.ClientWriteTimeout.
const DefaultClientWriteTimeout = 30 * time.Second

// clientWriteTimeout is the configured client_write_timeout, else its
// default.
func (h *Handler) clientWriteTimeout() time.Duration {
	if h.ClientWriteTimeout > 0 {
		return time.Duration(h.ClientWriteTimeout)
	}
	return DefaultClientWriteTimeout
}

// warnTimeouts logs one warning per pool whose attempt_timeout (the
// pool's, or a key's override) exceeds its total_timeout. total_timeout
// ends the whole search for an answer, so it cuts such a wait for
// response headers first: the longer setting never takes effect, and a
// key that hangs uses up the whole search instead of handing over to the
// next key. request_timeout is not compared: it is the idle timeout
// between reads once an answer has begun, which total_timeout does not
// cut.
func (h *Handler) warnTimeouts() {
	for _, p := range h.pools {
		var fields []zap.Field
		if p.attemptTimeout > p.totalTimeout {
			fields = append(fields, zap.Duration("attempt_timeout", p.attemptTimeout))
		}
		var keys []string
		for _, uk := range p.keys {
			if uk.attemptTimeout > p.totalTimeout {
				keys = append(keys, uk.id+" ("+uk.attemptTimeout.String()+")")
			}
		}
		if len(keys) > 0 {
			sort.Strings(keys)
			fields = append(fields, zap.Strings("key_attempt_timeouts", keys))
		}
		if len(fields) == 0 {
			continue
		}
		fields = append([]zap.Field{zap.String("pool", p.name), zap.Duration("total_timeout", p.totalTimeout)}, fields...)
		h.logger.Warn("pool "+p.name+": attempt_timeout longer than total_timeout ("+p.totalTimeout.String()+
			") never takes effect: total_timeout ends the search first, so a key that hangs before answering uses up the whole search instead of handing over to the next key",
			fields...)
	}
}
