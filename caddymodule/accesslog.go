package caddymodule

import (
	"net/http"
	"reflect"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// credentialHeaders are request headers that carry a gateway key and that
// Caddy's request log marshaler does not redact by itself (it covers only
// Authorization, Proxy-Authorization, Cookie and Set-Cookie).
var credentialHeaders = []string{"X-Api-Key", "Api-Key"}

// protectServerLogs makes sure the gateway key that Anthropic-style clients
// send as X-Api-Key never reaches the access or error log of the server
// this handler is provisioned in.
//
// Caddy clones each request for its access log before any handler runs, so
// deleting the header in ServeHTTP is not enough. The user-side remedy is
// `log { format filter { request>headers>X-Api-Key delete } }`; to make it
// unnecessary, the server's access and error loggers are wrapped with a core
// that rewrites those headers to "REDACTED" when the request is marshalled.
// Those loggers are unexported fields of caddyhttp.Server; if a future Caddy
// renames them, a warning with the manual remedy is logged instead.
func protectServerLogs(ctx caddy.Context, logger *zap.Logger) {
	srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if !ok || srv == nil || srv.Logs == nil {
		return // no access log on this server
	}
	for _, name := range []string{"accessLogger", "errorLogger"} {
		f := reflect.ValueOf(srv).Elem().FieldByName(name)
		if !f.IsValid() || f.Type() != reflect.TypeFor[*zap.Logger]() {
			logger.Warn("cannot protect the access log from gateway keys sent as X-Api-Key; add `format filter { request>headers>X-Api-Key delete }` to the site's log directive",
				zap.String("field", name))
			return
		}
		p := (**zap.Logger)(unsafe.Pointer(f.UnsafeAddr()))
		if *p == nil {
			continue
		}
		if _, done := (*p).Core().(redactingCore); done {
			continue
		}
		*p = (*p).WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return redactingCore{c} }))
	}
}

// redactingCore replaces caddyhttp.LoggableHTTPRequest fields with a
// marshaler that hides credentialHeaders. Caddy's access log adds the
// request field with WithLazy, which ends in With, so With is the only
// method that needs to act; Check and Write are the wrapped core's own, so
// Caddy's log routing (include/exclude per log) is untouched.
type redactingCore struct{ zapcore.Core }

// With implements zapcore.Core.
func (c redactingCore) With(fields []zapcore.Field) zapcore.Core {
	return redactingCore{c.Core.With(redactFields(fields))}
}

func redactFields(fields []zapcore.Field) []zapcore.Field {
	var out []zapcore.Field
	for i, f := range fields {
		lr, ok := f.Interface.(caddyhttp.LoggableHTTPRequest)
		if !ok || f.Type != zapcore.ObjectMarshalerType {
			continue
		}
		if out == nil {
			out = append([]zapcore.Field(nil), fields...)
		}
		out[i].Interface = redactedRequest{lr}
	}
	if out == nil {
		return fields
	}
	return out
}

// redactedRequest marshals a request like caddyhttp.LoggableHTTPRequest
// does, with credentialHeaders shown as "REDACTED".
type redactedRequest struct{ caddyhttp.LoggableHTTPRequest }

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (r redactedRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	req := r.Request
	if req != nil {
		for _, h := range credentialHeaders {
			if _, present := req.Header[http.CanonicalHeaderKey(h)]; present {
				cp := *req
				cp.Header = req.Header.Clone()
				for _, h := range credentialHeaders {
					if _, ok := cp.Header[http.CanonicalHeaderKey(h)]; ok {
						cp.Header[http.CanonicalHeaderKey(h)] = []string{"REDACTED"}
					}
				}
				req = &cp
				break
			}
		}
	}
	return caddyhttp.LoggableHTTPRequest{Request: req, ShouldLogCredentials: r.ShouldLogCredentials}.MarshalLogObject(enc)
}
