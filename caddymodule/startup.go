package caddymodule

import (
	"reflect"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// logStartupSummary writes what the handler loaded, at info level: one
// "pool loaded" line per pool (pool, keys, strategy, models, priority;
// models is ["auto"] for a pool that serves the models it learns, ["*"]
// for one that serves any name) and one line saying where the status page
// is, or that Caddy's admin endpoint is off. Secrets are never part of it.
func (h *Handler) logStartupSummary(ctx caddy.Context) {
	if h.logger == nil {
		return
	}
	for i, p := range h.pools {
		strategy := "round_robin"
		if i < len(h.Pools) && h.Pools[i] != nil && h.Pools[i].Strategy != "" {
			strategy = h.Pools[i].Strategy
		}
		h.logger.Info("pool loaded",
			zap.String("pool", p.name),
			zap.Int("keys", len(p.keys)),
			zap.String("strategy", strategy),
			zap.Strings("models", p.models),
			zap.Int("priority", p.priority))
	}
	addr, off := adminListenAddress(ctx)
	switch {
	case off:
		h.logger.Info("status page unavailable: Caddy's admin endpoint is off (admin off); remove it, or give admin an address, to get /llm_gateway/")
	case strings.HasPrefix(addr, "unix/"):
		sock := strings.TrimPrefix(addr, "unix/")
		h.logger.Info("status page on the admin endpoint's Unix socket",
			zap.String("status_page", "/llm_gateway/"),
			zap.String("socket", sock),
			zap.String("try", "curl --unix-socket "+sock+" http://localhost/llm_gateway/pools"))
	default:
		addr = strings.TrimPrefix(strings.TrimPrefix(addr, "tcp/"), "tcp4/")
		if strings.HasPrefix(addr, ":") {
			addr = "localhost" + addr
		}
		h.logger.Info("status page", zap.String("status_page", "http://"+addr+"/llm_gateway/"))
	}
}

// adminListenAddress returns the admin endpoint of the configuration being
// loaded ("localhost:2019", "127.0.0.1:2999", "unix//run/caddy.sock"), and
// off when the configuration disables it. Caddy gives modules no accessor
// for its admin configuration, so it is read from the context's
// configuration by reflection; when that fails the default
// (caddy.DefaultAdminListen, which CADDY_ADMIN overrides) is returned.
func adminListenAddress(ctx caddy.Context) (addr string, off bool) {
	addr = caddy.DefaultAdminListen
	defer func() {
		if recover() != nil {
			addr, off = caddy.DefaultAdminListen, false
		}
	}()
	cfg := reflect.ValueOf(ctx).FieldByName("cfg")
	if !cfg.IsValid() || cfg.Kind() != reflect.Pointer || cfg.IsNil() {
		return addr, false
	}
	admin := cfg.Elem().FieldByName("Admin")
	if !admin.IsValid() || admin.Kind() != reflect.Pointer || admin.IsNil() {
		return addr, false
	}
	a := admin.Elem()
	if d := a.FieldByName("Disabled"); d.IsValid() && d.Kind() == reflect.Bool && d.Bool() {
		return "", true
	}
	if l := a.FieldByName("Listen"); l.IsValid() && l.Kind() == reflect.String && l.String() != "" {
		addr = l.String()
	}
	return addr, false
}
