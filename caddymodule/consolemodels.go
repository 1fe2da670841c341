package caddymodule

import (
	"net/http"
)

// consoleModels is the answer of GET /llm_gateway/models.
type consoleModels struct {
	// Models are the exact model names the gateway serves (as GET
	// /v1/models lists them for a caller allowed every pool and model),
	// once each, in config order. Wildcard patterns ("models *") cannot
	// be listed: such a pool serves any name and adds none here.
	Models []string `json:"models"`
	// Pools are the pools in config order with the names each lists.
	Pools []consolePoolModels `json:"pools"`
}

// consolePoolModels is one pool's model names in GET /llm_gateway/models.
type consolePoolModels struct {
	Name   string   `json:"name"`
	Models []string `json:"models"`
}

// handleModels serves GET /llm_gateway/models: the model names the
// running gateway serves, for the status page's playground (which must
// not call the gateway itself). With no llm_gateway handler running, the
// lists are empty.
func (adminAPI) handleModels(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodGet); err != nil {
		return err
	}
	out := consoleModels{Models: []string{}, Pools: []consolePoolModels{}}
	publishedHandlers.Lock()
	var h *Handler
	if n := len(publishedHandlers.list); n > 0 {
		h = publishedHandlers.list[n-1]
	}
	publishedHandlers.Unlock()
	if h != nil {
		out.Models = append(out.Models, h.modelNames(playgroundKey)...)
		for _, p := range h.pools {
			pm := consolePoolModels{Name: p.name, Models: []string{}}
			for _, n := range p.listNames() {
				if p.serves(n) {
					pm.Models = append(pm.Models, n)
				}
			}
			out.Pools = append(out.Pools, pm)
		}
	}
	return writeAdminJSON(w, out)
}
