package caddymodule

// observe is called once per finished /v1 request with its complete
// record (status, pool, key id, dialects, attempts with their outcomes,
// durations, usage). It prices the request (cost.go), records it in the
// usage series (usage_series.go) and feeds metrics; it must not block or
// log.
func (h *Handler) observe(rl *requestLog) {
	h.costRequest(rl)
	recordUsage(rl)
	h.recordRecent(rl)
	if h.metrics != nil {
		h.metrics.observe(rl)
	}
}
