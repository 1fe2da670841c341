package caddymodule

import "strings"

// matchPattern reports whether model matches pattern: an exact name, or a
// prefix followed by '*' ("*" alone matches everything).
func matchPattern(pattern, model string) bool {
	if strings.HasSuffix(pattern, "*") {
		return strings.HasPrefix(model, pattern[:len(pattern)-1])
	}
	return pattern == model
}

// specificity orders patterns: an exact name beats every wildcard, and a
// longer wildcard prefix beats a shorter one.
func specificity(pattern string) int {
	if strings.HasSuffix(pattern, "*") {
		return len(pattern) - 1
	}
	return 1 << 30
}

// serves reports whether the pool serves the client model name.
func (p *pool) serves(model string) bool {
	for _, m := range p.models {
		if matchPattern(m, model) {
			return true
		}
	}
	return false
}

// upstreamModel maps a client model name to the upstream's: the most
// specific model_map match, else default_model, else unchanged.
func (p *pool) upstreamModel(model string) string {
	for _, m := range p.modelMap { // sorted most specific first
		if matchPattern(m.Pattern, model) {
			return m.Model
		}
	}
	if p.defaultModel != "" {
		return p.defaultModel
	}
	return model
}
