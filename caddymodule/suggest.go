package caddymodule

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The subdirectives each Caddyfile block accepts, for "did you mean"
// suggestions: the block's generic options (the JSON names of its config
// struct's fields, see setOption), then the ones with a syntax of their
// own (TestSubdirectiveListsAreAccepted checks that every name listed is
// accepted).
var (
	handlerSubdirectives = optionNames(Handler{}, "api_key", "state", "pool", "egress", "price")
	apiKeySubdirectives  = optionNames(GatewayKeyConfig{}, "budget")
	poolSubdirectives    = optionNames(PoolConfig{}, "refresh", "model_map", "key", "budget", "egress", "price")
	keySubdirectives     = optionNames(KeyConfig{}, "provider", "budget")
)

// unknownSubdirective is the error for a subdirective the block does not
// know, with the nearest valid name when one is close enough:
// "unrecognized pool subdirective 'max_concurency_per_key' (did you mean
// max_concurrency_per_key?)". block names the block ("pool", "key", ...).
func unknownSubdirective(d *caddyfile.Dispenser, block, name string, valid []string) error {
	if s := nearest(name, valid); s != "" {
		return d.Errf("unrecognized %s subdirective '%s' (did you mean %s?)", block, name, s)
	}
	return d.Errf("unrecognized %s subdirective '%s'", block, name)
}

// nearest returns the candidate closest to name by edit distance
// (Levenshtein, case-insensitive; boundedEditDistance), or "" when none is close: at most 1 edit
// for names of up to 4 characters, else at most a third of the name's
// length (3 at most). A candidate that contains name or is contained in it
// (a missing or extra word part, "concurrency" for "max_concurrency") also
// counts when name has at least 4 characters and only one candidate
// matches so. Ties of distance go to the earlier candidate.
func nearest(name string, candidates []string) string {
	name = strings.ToLower(name)
	limit := len(name) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if len(c) > maxSuggestLen {
			continue
		}
		if dist := boundedEditDistance(name, c, bestDist-1); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	if best != "" {
		return best
	}
	if len(name) >= 4 {
		for _, c := range candidates {
			if strings.Contains(c, name) || strings.Contains(name, c) && len(c) >= 4 {
				if best != "" {
					return "" // ambiguous: "cooldown" is part of several names
				}
				best = c
			}
		}
	}
	return best
}

// envVarRef matches a Caddyfile environment variable reference, {$NAME}
// or {$NAME:default}.
var envVarRef = regexp.MustCompile(`\{\$([A-Za-z_][A-Za-z0-9_]*)(:[^}]*)?\}`)

// emptyEnvVarsOnLine names the {$NAME} references on the given line of a
// Caddyfile that expand to nothing now (unset or empty, without a
// default), e.g. ["{$OPENAI_KEY}"]. Caddy substitutes {$NAME} before
// tokenising, so the tokens no longer show it; the file is read again to
// name it. It returns nil when the file cannot be read (a Caddyfile given
// on stdin or in a test).
func emptyEnvVarsOnLine(file string, line int) []string {
	b, err := os.ReadFile(file)
	if err != nil || line < 1 {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	if line > len(lines) {
		return nil
	}
	var out []string
	for _, m := range envVarRef.FindAllStringSubmatch(lines[line-1], -1) {
		if m[2] == "" && os.Getenv(m[1]) == "" {
			out = append(out, m[0])
		}
	}
	return out
}

// emptySecretHint explains an empty secret found at the dispenser's line:
// it names the {$NAME} references of that line that expanded to nothing,
// else says that one may have.
func emptySecretHint(d *caddyfile.Dispenser) string {
	if names := emptyEnvVarsOnLine(d.File(), d.Line()); len(names) > 0 {
		return fmt.Sprintf("%s is unset or empty (Caddyfile variables are substituted when the Caddyfile is read; "+
			"{env.NAME} is resolved at load and keeps the secret out of the JSON config)", strings.Join(names, ", "))
	}
	return "did a {$NAME} Caddyfile variable expand to nothing? Prefer {env.NAME}, resolved at load"
}
