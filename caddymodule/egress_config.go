package caddymodule

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// EgressConfig is a list of egress exits (proxies) that upstream requests
// leave through, with the strategy that picks one per request. It is set
// for the whole handler (Handler.Egress, the global list) or for one pool
// (PoolConfig.Egress, which replaces the global list for that pool); a key
// may name its own exclusive exit instead (KeyConfig.Egress). The chain is:
// the key's exclusive exit, else the pool's list, else the global list,
// else direct.
//
// A request leaves through one exit at a time. When the connection to an
// exit, or its proxy handshake, fails or times out (ConnectTimeout), the
// exit cools down for Cooldown and the same key is tried again through the
// next exit of the list, serially; the key is not charged for it. An
// answer of the upstream (any HTTP status) is the key's outcome. When
// every exit is cooling, the one whose cooldown ends first is tried once;
// when that fails too, the client gets 503 saying the exits are
// unreachable.
type EgressConfig struct {
	// Proxies are the exits, in order: proxy URLs
	// "http://host:port", "https://host:port", "socks5://host:port" (the
	// gateway resolves the upstream's name) or "socks5h://host:port" (the
	// proxy resolves it), with optional "user:pass@" credentials, written
	// with placeholders ({env.PROXY_PASS}, {file./run/secrets/p}) so that
	// they stay out of the JSON config; the port is required. The word
	// "direct" is an exit too: the gateway host itself. HTTP and HTTPS
	// proxies carry https upstreams through HTTP/1.1 CONNECT (TLS to the
	// upstream end to end) and plain-http upstreams as forwarded requests.
	Proxies []string `json:"proxies,omitempty"`

	// Direct, set alone, sends this pool's (or, on the handler, every
	// pool's) requests directly, ignoring a wider list. Caddyfile:
	// "egress direct". Default: false.
	Direct bool `json:"direct,omitempty"`

	// Strategy picks the exit of each request: "rotate" (each request the
	// next exit in turn), "sticky" (a session, the same session id that
	// affinity uses, keeps its exit while that exit is healthy; requests
	// without one rotate), "random", or "failover" (always the first
	// healthy exit in order). Cooling exits are skipped. Default: "rotate".
	Strategy string `json:"strategy,omitempty"`

	// Cooldown is how long an exit stays out of use after a connect or
	// handshake failure or timeout. Default: 60s.
	Cooldown caddy.Duration `json:"cooldown,omitempty"`

	// ConnectTimeout bounds connecting through an exit: reaching the proxy,
	// its handshake (CONNECT or SOCKS5, authentication included) and the
	// TLS handshake with the upstream. Default: 5s.
	ConnectTimeout caddy.Duration `json:"connect_timeout,omitempty"`
}

// Defaults of EgressConfig.
const (
	DefaultEgressCooldown       = 60 * time.Second
	DefaultEgressConnectTimeout = 5 * time.Second
)

// egressStrategies are the valid EgressConfig.Strategy values.
var egressStrategies = []string{"rotate", "sticky", "random", "failover"}

// EgressExit is a key's exclusive exit (KeyConfig.Egress): "direct", or
// one proxy URL (see EgressConfig.Proxies). Its text form is checked when
// it is read (UnmarshalText), so a Caddyfile mistake names its line.
type EgressExit string

// UnmarshalText implements encoding.TextUnmarshaler: "direct" or one
// proxy URL; "direct" together with a URL, or two URLs, is an error.
func (e *EgressExit) UnmarshalText(b []byte) error {
	words := strings.Fields(string(b))
	switch {
	case len(words) == 0:
		return errors.New("egress needs a proxy URL or direct")
	case len(words) > 1 && containsWord(words, "direct"):
		return errors.New("egress: give either direct or a proxy URL, not both")
	case len(words) > 1:
		return errors.New("egress: a key has one exclusive exit; list several exits in the pool's egress block")
	}
	if words[0] != "direct" {
		if err := checkProxySpec(words[0], true); err != nil {
			return err
		}
	}
	*e = EgressExit(words[0])
	return nil
}

func containsWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// checkProxySpec checks a configured proxy URL, placeholders and all;
// with resolve, the {env.*} and {file.*} placeholders are resolved to
// check that they are set (errors name the placeholder, never a value).
// Errors never show credentials.
func checkProxySpec(raw string, resolve bool) error {
	if raw == "direct" {
		return nil
	}
	v := raw
	if resolve && strings.Contains(raw, "{") {
		var err error
		if v, err = resolveSecretValue(caddy.NewReplacer(), raw); err != nil {
			return fmt.Errorf("egress proxy %s: %v", maskProxyURL(raw), err)
		}
	}
	_, err := parseProxyURL(v)
	if err != nil {
		return fmt.Errorf("egress proxy %s: %v", maskProxyURL(raw), err)
	}
	return nil
}

// parseProxyURL parses a resolved proxy URL: scheme http, https, socks5 or
// socks5h, a host and a port, nothing after them. Errors never show the
// URL (it may hold credentials).
func parseProxyURL(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return nil, errors.New("want scheme://[user:pass@]host:port (scheme http, https, socks5 or socks5h)")
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return nil, fmt.Errorf("unsupported scheme %q: want http, https, socks5 or socks5h", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("the host is missing (scheme://host:port)")
	}
	if u.Port() == "" {
		return nil, errors.New("the port is missing (scheme://host:port)")
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return nil, errors.New("bad port")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("a proxy URL has no path, query or fragment")
	}
	return u, nil
}

// maskProxyURL shows a configured proxy URL without its credentials:
// "socks5://***@10.0.0.2:1080". A URL that does not parse is shown by
// its scheme only.
func maskProxyURL(raw string) string {
	if raw == "direct" {
		return raw
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "(unparsable proxy URL)"
	}
	cred := ""
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		cred, rest = "***@", rest[i+1:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return scheme + "://" + cred + rest
}

// unmarshalEgress reads a handler's or a pool's egress:
//
//	egress direct
//	egress <url>...
//	egress {
//	    proxy <url>|direct          # repeatable
//	    strategy rotate|sticky|random|failover
//	    cooldown <duration>
//	    connect_timeout <duration>
//	}
//
// Proxy URLs are checked at once (scheme, port, placeholders set), so
// mistakes name the file and line.
func unmarshalEgress(d *caddyfile.Dispenser) (*EgressConfig, error) {
	ec := &EgressConfig{}
	// a dispenser over the directive's token alone, so that an empty
	// block is reported at the egress line, not at its closing brace
	at := caddyfile.NewDispenser([]caddyfile.Token{d.Token()})
	at.Next()
	args := d.RemainingArgs()
	if containsWord(args, "direct") {
		if len(args) > 1 {
			return nil, d.Err("egress: give either direct or proxy URLs, not both")
		}
		ec.Direct = true
	} else {
		for _, a := range args {
			if err := checkProxySpec(a, true); err != nil {
				return nil, d.Err(err.Error())
			}
			ec.Proxies = append(ec.Proxies, a)
		}
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if ec.Direct {
			return nil, d.Err("egress direct takes no block")
		}
		switch d.Val() {
		case "proxy":
			urls := d.RemainingArgs()
			if len(urls) == 0 {
				return nil, d.Err("proxy needs a URL: proxy scheme://[user:pass@]host:port, or direct")
			}
			for _, a := range urls {
				if err := checkProxySpec(a, true); err != nil {
					return nil, d.Err(err.Error())
				}
				ec.Proxies = append(ec.Proxies, a)
			}
		case "strategy":
			if !d.AllArgs(&ec.Strategy) {
				return nil, d.ArgErr()
			}
			if !containsWord(egressStrategies, ec.Strategy) {
				return nil, d.Errf("egress strategy %q: want %s", ec.Strategy, strings.Join(egressStrategies, ", "))
			}
		case "cooldown":
			if err := durationArg(d, &ec.Cooldown); err != nil {
				return nil, err
			}
		case "connect_timeout":
			if err := durationArg(d, &ec.ConnectTimeout); err != nil {
				return nil, err
			}
		default:
			return nil, unknownSubdirective(d, "egress", d.Val(), []string{"proxy", "strategy", "cooldown", "connect_timeout"})
		}
	}
	if !ec.Direct && len(ec.Proxies) == 0 {
		return nil, at.Err("egress needs at least one proxy (proxy <url>), or direct")
	}
	return ec, nil
}
