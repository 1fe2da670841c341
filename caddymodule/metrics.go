package caddymodule

// metrics holds the handler's Prometheus collectors (see observe).
type metrics struct{}

func (m *metrics) observe(*requestLog) {}
