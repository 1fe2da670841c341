package caddymodule

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

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
		if m == "auto" && p.disc != nil && p.disc.auto {
			continue // the learned names, below
		}
		if matchPattern(m, model) {
			return true
		}
	}
	return p.servesLearned(model)
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

// choosesAuto reports whether the pool names a model of its own for the
// client model "auto": a default_model, a model_map entry matching
// "auto", or models that admit the name "auto" itself.
func (p *pool) choosesAuto() bool {
	if p.defaultModel != "" || p.serves("auto") {
		return true
	}
	for _, m := range p.modelMap {
		if matchPattern(m.Pattern, "auto") {
			return true
		}
	}
	return false
}

// maxClientString bounds how much of a client-supplied string (a model
// name, a field name) is quoted back in error bodies and log fields, in
// bytes.
const maxClientString = 256

// clipClient cuts a client-supplied string to maxClientString bytes (on a
// UTF-8 boundary), marking the cut with "…".
func clipClient(s string) string {
	if len(s) <= maxClientString {
		return s
	}
	i := maxClientString
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// quoteClient is strconv.Quote of clipClient(s), for error messages.
func quoteClient(s string) string { return strconv.Quote(clipClient(s)) }
