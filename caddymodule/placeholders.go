package caddymodule

import (
	"errors"
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// resolveSecretValue resolves the placeholders of a configured secret
// ({env.NAME}, {file./path}) and trims the result. Its errors name what
// went wrong without ever showing a value: "{env.OPENAI_KEY_3} is unset or
// empty", "{file./run/secrets/k} is empty or cannot be read", "the secret
// is empty". A placeholder of another kind is named only by its kind
// ("a {vars.*} placeholder"), in case a literal secret holds braces.
func resolveSecretValue(repl *caddy.Replacer, raw string) (string, error) {
	v, err := repl.ReplaceOrErr(raw, true, true)
	if err == nil && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), nil
	}
	for _, ph := range placeholdersIn(raw) {
		pv, perr := repl.ReplaceOrErr(ph, true, true)
		if perr == nil && strings.TrimSpace(pv) != "" {
			continue
		}
		switch {
		case strings.HasPrefix(ph, "{env."):
			return "", fmt.Errorf("%s is unset or empty", ph)
		case strings.HasPrefix(ph, "{file."):
			return "", fmt.Errorf("%s is empty or cannot be read", ph)
		}
		kind := ph
		if i := strings.IndexByte(ph, '.'); i > 0 {
			kind = ph[:i] + ".*}"
		} else {
			kind = "{...}"
		}
		return "", fmt.Errorf("a %s placeholder in it is unknown or empty", kind)
	}
	if err != nil {
		return "", errors.New("a placeholder in it is unknown or empty")
	}
	return "", errors.New("the secret is empty")
}

// placeholdersIn returns the {...} placeholders of s in order, without
// escaped braces (\{).
func placeholdersIn(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '{' || (i > 0 && s[i-1] == '\\') {
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		out = append(out, s[i:i+j+1])
		i += j
	}
	return out
}
