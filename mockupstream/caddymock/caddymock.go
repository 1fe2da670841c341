// Package caddymock registers the mock upstream (package mockupstream) as
// the Caddy HTTP handler module http.handlers.llm_mock_upstream with the
// Caddyfile directive llm_mock_upstream, ordered before reverse_proxy.
// It lives apart from the gateway's module (package caddymodule) so that a
// Caddy built with only the gateway carries no test double: import it (for
// its side effect) where the mock is wanted, as the repository root's
// imports.go does for the demo build (xcaddy.sh).
package caddymock

import (
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

func init() {
	caddy.RegisterModule(MockUpstream{})
	httpcaddyfile.RegisterHandlerDirective("llm_mock_upstream", parseMockCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("llm_mock_upstream", httpcaddyfile.Before, "reverse_proxy")
}

// MockUpstream serves a programmable fake LLM API (package mockupstream:
// OpenAI Chat Completions, OpenAI Responses, embeddings and Anthropic
// Messages), for demos, tests and benchmarks without real keys. It answers every request itself (it never
// calls the next handler).
//
// Keys are told apart by `Authorization: Bearer <key>` or `x-api-key`.
// Each key can be capped in concurrency, cooled down after each request
// (429 with Retry-After during the cooldown), made to fail, reset the
// connection, add latency or pace its streams.
type MockUpstream struct {
	mockupstream.Config

	srv *mockupstream.Server
}

// CaddyModule returns the Caddy module information.
func (MockUpstream) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.llm_mock_upstream",
		New: func() caddy.Module { return new(MockUpstream) },
	}
}

// Provision builds the mock server.
func (m *MockUpstream) Provision(caddy.Context) error {
	m.srv = mockupstream.New(m.Config)
	return nil
}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (m *MockUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	m.srv.ServeHTTP(w, r)
	return nil
}

func parseMockCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(MockUpstream)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the mock from Caddyfile tokens. Syntax:
//
//	llm_mock_upstream {
//	    model <name>
//	    models <name...>
//	    replay_dir <dir>
//	    seed <n>
//	    default { <behavior> }
//	    key <api-key> { <behavior> }     # repeatable
//	}
//
// where <behavior> lines are: max_concurrency <n>, rpm <n>, tpm <n>
// (vendor-style limits per 60 s, reported in both vendors' rate-limit
// headers), cooldown <duration>,
// status <code>, fail_rate <0..1>, fail_status <code>, reset_rate <0..1>,
// latency <duration>, tokens_per_second <n>, retry_after <value>,
// replay <file>, replay_status <code>, stream_error_after <n>,
// stream_cut_after <n>, tool_trigger <text>, tool_name <name>,
// tool_arguments <json>, models <name...> (the key's own GET /v1/models
// list), models_status <code> (e.g. 404: no models list) (see
// mockupstream.KeyBehavior).
func (m *MockUpstream) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "model":
			if !d.AllArgs(&m.Model) {
				return d.ArgErr()
			}
		case "models":
			m.Models = append(m.Models, d.RemainingArgs()...)
		case "replay_dir":
			if !d.AllArgs(&m.ReplayDir) {
				return d.ArgErr()
			}
		case "seed":
			var v string
			if !d.AllArgs(&v) {
				return d.ArgErr()
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return d.Errf("seed: bad integer '%s'", v)
			}
			m.Seed = n
		case "default":
			if d.NextArg() {
				return d.ArgErr()
			}
			if err := unmarshalBehavior(d, &m.Default); err != nil {
				return err
			}
		case "key":
			var key string
			if !d.NextArg() {
				return d.ArgErr()
			}
			key = d.Val()
			if d.NextArg() {
				return d.ArgErr()
			}
			var b mockupstream.KeyBehavior
			if err := unmarshalBehavior(d, &b); err != nil {
				return err
			}
			if m.Keys == nil {
				m.Keys = map[string]mockupstream.KeyBehavior{}
			}
			m.Keys[key] = b
		default:
			return d.Errf("unrecognized llm_mock_upstream subdirective '%s'", d.Val())
		}
	}
	return nil
}

func unmarshalBehavior(d *caddyfile.Dispenser, b *mockupstream.KeyBehavior) error {
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if name == "models" {
			// the key's own GET /v1/models list
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			b.Models = append(b.Models, args...)
			continue
		}
		var v string
		if !d.AllArgs(&v) {
			return d.ArgErr()
		}
		var err error
		switch name {
		case "max_concurrency":
			b.MaxConcurrency, err = strconv.Atoi(v)
		case "rpm":
			b.RPM, err = strconv.Atoi(v)
		case "tpm":
			b.TPM, err = strconv.ParseInt(v, 10, 64)
		case "status":
			b.Status, err = strconv.Atoi(v)
		case "models_status":
			b.ModelsStatus, err = strconv.Atoi(v)
		case "fail_status":
			b.FailStatus, err = strconv.Atoi(v)
		case "fail_rate":
			b.FailRate, err = strconv.ParseFloat(v, 64)
		case "reset_rate":
			b.ResetRate, err = strconv.ParseFloat(v, 64)
		case "tokens_per_second":
			b.TokensPerSecond, err = strconv.ParseFloat(v, 64)
		case "cooldown":
			b.Cooldown, err = caddy.ParseDuration(v)
		case "latency":
			b.Latency, err = caddy.ParseDuration(v)
		case "retry_after":
			b.RetryAfter = v
		case "tool_trigger":
			b.ToolTrigger = v
		case "tool_name":
			b.ToolName = v
		case "tool_arguments":
			b.ToolArguments = v
		case "stream_error_after":
			b.StreamErrorAfter, err = strconv.Atoi(v)
		case "stream_cut_after":
			b.StreamCutAfter, err = strconv.Atoi(v)
		case "replay_status":
			b.ReplayStatus, err = strconv.Atoi(v)
		case "replay":
			b.Replay = v
		default:
			return d.Errf("unrecognized mock behavior '%s'", name)
		}
		if err != nil {
			return d.Errf("%s: bad value '%s'", name, v)
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*MockUpstream)(nil)
	_ caddyhttp.MiddlewareHandler = (*MockUpstream)(nil)
	_ caddyfile.Unmarshaler       = (*MockUpstream)(nil)
)
