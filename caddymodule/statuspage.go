package caddymodule

import (
	_ "embed"
	"net/http"

	"github.com/caddyserver/caddy/v2"
)

// statusPage is the status page served at GET /llm_gateway/: one
// self-contained HTML file (no external assets) that reads the pools,
// follows the events stream and calls the admin routes next to it.
//
//go:embed statuspage.html
var statusPage []byte

// handleStatusPage serves the status page at /llm_gateway/ and 404 for
// any other path under /llm_gateway/ that has no route of its own.
func (adminAPI) handleStatusPage(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Path != "/llm_gateway/" {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Message: "not found"}
	}
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// everything the page needs is inline or on this origin
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	_, err := w.Write(statusPage)
	return err
}
