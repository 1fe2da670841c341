package caddymodule

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// The directive is ordered before respond (and so before reverse_proxy and
// file_server): the gateway answers its own paths and passes the others
// on, so a "respond 404" in the same site answers only the paths that are
// not the gateway's, with no route block.
func init() {
	httpcaddyfile.RegisterHandlerDirective("llm_gateway", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("llm_gateway", httpcaddyfile.Before, "respond")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	g := new(Handler)
	err := g.UnmarshalCaddyfile(h.Dispenser)
	return g, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	llm_gateway {
//	    api_key <token>|sha256:<hex> [{   # repeatable
//	        id <label>
//	        pools <names...>
//	        models <patterns...>
//	        rpm <n>
//	        max_concurrency <n>
//	        budget <amount> usd per <period> [{ ... }]   # see BudgetSpec
//	    }]
//	    auth off
//	    max_request_body <size>          # e.g. 8MiB
//	    max_in_flight <n>                # requests served at once; default 1024 x GOMAXPROCS
//	    max_buffered_bytes <size>        # request bodies in memory at once, e.g. 1GiB
//	    client_write_timeout <duration>  # cut a stream the client stops reading; default 30s
//	    learn_limits on|off              # every pool's default; default on
//	    usage_file <path>|off
//	    log_payloads
//	    recent_requests <n>              # requests the admin API's request log keeps; default 1000
//	    state memory|redis [{ ... }]     # see StateConfig
//	    egress direct|<url>...|{         # the global exits; see EgressConfig
//	        proxy <url>|direct           # repeatable: http, https, socks5, socks5h
//	        strategy rotate|sticky|random|failover
//	        cooldown <duration>
//	        connect_timeout <duration>
//	    }
//	    price <model-pattern> input <usd> output <usd> [cache_read <usd>] [cache_write <usd>] [reasoning <usd>]   # per 1M tokens; repeatable
//	    pool <name> {
//	        price <model-pattern> input <usd> output <usd> ...   # this pool's prices; repeatable
//	        models <pattern...>|auto          # auto: the names learned from the keys' models lists
//	        refresh <duration>|off            # how often the models lists are fetched; default 1h
//	        egress direct|<url>...|{ ... }    # the pool's exits, replacing the global ones
//	        model_map <pattern> <upstream-model>
//	        default_model <upstream-model>
//	        key <secret> [<base_url>|<provider>] {   # provider: see PresetNames
//	            id <label>
//	            base_url <url>                    # wins over the provider's
//	            provider <name>
//	            dialect openai|anthropic|responses
//	            anthropic_base_url <url>
//	            responses_base_url <url>          # e.g. https://api.openai.com/v1
//	            prefer auto|openai|anthropic|responses
//	            priority <n>
//	            rpm <n>
//	            tpm <n>
//	            quota <n> requests|tokens per <duration>
//	            attempt_timeout <duration>
//	            max_concurrency <n>
//	            weight <n>                        # 0: a standby under weighted
//	            budget <amount> usd per <24h|30d|daily|monthly> [{ warn <n>%; timezone <zone> }]
//	            egress <url>|direct           # the key's exclusive exit
//	        }
//	        budget <amount> usd per <period> [{ ... }]   # across the pool's keys
//	        priority <n>
//	        strategy round_robin|priority|weighted|least_used|lowest_latency|pace|random|smart
//	        least_used_by requests|tokens
//	        learn_limits on|off               # read the upstreams' rate-limit headers; default on
//	        affinity <ttl>|off
//	        affinity_max_entries <n>
//	        max_concurrency_per_key <n>
//	        cooldown_after_success <duration>
//	        rate_limit_cooldown <duration>
//	        error_cooldown <duration>
//	        max_cooldown <duration>
//	        failure_threshold <n>
//	        breaker_open <duration>
//	        max_hint_cooldown <duration>
//	        invalid_key_cooldown <duration>
//	        no_credit_cooldown <duration>
//	        forbidden_cooldown <duration>
//	        provisional_cooldown <duration>
//	        probe_timeout <duration>
//	        max_retries <n>
//	        acquire_timeout <duration>
//	        request_timeout <duration>
//	        stream_idle_timeout <duration>
//	        attempt_timeout <duration>
//	        connect_timeout <duration>
//	        total_timeout <duration>
//	    }
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "api_key":
			if !d.NextArg() {
				return d.Errf("api_key needs a token: api_key <token>|sha256:<hex>|{env.NAME} (the token is empty: %s)", emptySecretHint(d))
			}
			tok := d.Val()
			if d.NextArg() {
				return d.ArgErr()
			}
			gc, err := unmarshalGatewayKey(d, tok)
			if err != nil {
				return err
			}
			if gc == nil {
				h.APIKeys = append(h.APIKeys, tok)
			} else {
				h.GatewayKeys = append(h.GatewayKeys, gc)
			}
		case "egress":
			ec, err := unmarshalEgress(d)
			if err != nil {
				return err
			}
			h.Egress = ec
		case "state":
			sc, err := unmarshalState(d)
			if err != nil {
				return err
			}
			h.State = sc
		case "recent_requests":
			if _, err := setOption(d, h); err != nil {
				return err
			}
			if err := checkRecentRequests(h.RecentRequests); err != nil {
				return d.Err(err.Error()) // at the directive's line
			}
		case "pool":
			pc, err := unmarshalPool(d)
			if err != nil {
				return err
			}
			for _, other := range h.Pools {
				if other.Name == pc.Name {
					return d.Errf("pool '%s' is defined twice", pc.Name)
				}
			}
			h.Pools = append(h.Pools, pc)
		case "price":
			pr, err := unmarshalPrice(d)
			if err != nil {
				return err
			}
			if err := priceGivenTwice(d, h.Prices, pr); err != nil {
				return err
			}
			h.Prices = append(h.Prices, pr)
		default:
			if ok, err := setOption(d, h); ok {
				if err != nil {
					return err
				}
				continue
			}
			return unknownSubdirective(d, "llm_gateway", d.Val(), handlerSubdirectives)
		}
	}
	return nil
}

// unmarshalGatewayKey reads the optional block of an api_key; it returns
// nil when there is no block (a plain key).
func unmarshalGatewayKey(d *caddyfile.Dispenser, tok string) (*GatewayKeyConfig, error) {
	var gc *GatewayKeyConfig
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if gc == nil {
			gc = &GatewayKeyConfig{Key: tok}
		}
		if d.Val() == "budget" {
			bs, err := unmarshalBudget(d)
			if err != nil {
				return nil, err
			}
			gc.Budget = bs
			continue
		}
		ok, err := setOption(d, gc)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, unknownSubdirective(d, "api_key", d.Val(), apiKeySubdirectives)
		}
	}
	return gc, nil
}

func unmarshalPool(d *caddyfile.Dispenser) (*PoolConfig, error) {
	pc := &PoolConfig{}
	if !d.NextArg() {
		return nil, d.Err("pool needs a name: pool <name> { ... }")
	}
	pc.Name = d.Val()
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		switch sub {
		case "model_map":
			var pat, model string
			if !d.AllArgs(&pat, &model) {
				return nil, d.Err("model_map needs <pattern> <upstream-model>")
			}
			pc.ModelMap = append(pc.ModelMap, ModelMapping{Pattern: pat, Model: model})
		case "refresh":
			var v string
			if !d.AllArgs(&v) {
				return nil, d.ArgErr()
			}
			if v == "off" {
				pc.Refresh = -1
				break
			}
			dur, err := caddy.ParseDuration(v)
			if err != nil || dur <= 0 {
				return nil, d.Errf("refresh: want a duration such as 1h, or off; got '%s'", v)
			}
			pc.Refresh = caddy.Duration(dur)
		case "budget":
			bs, err := unmarshalBudget(d)
			if err != nil {
				return nil, err
			}
			pc.Budget = bs
		case "egress":
			ec, err := unmarshalEgress(d)
			if err != nil {
				return nil, err
			}
			pc.Egress = ec
		case "key":
			kc, err := unmarshalKey(d)
			if err != nil {
				return nil, err
			}
			pc.Keys = append(pc.Keys, kc)
		case "price":
			pr, err := unmarshalPrice(d)
			if err != nil {
				return nil, err
			}
			if err := priceGivenTwice(d, pc.Prices, pr); err != nil {
				return nil, err
			}
			pc.Prices = append(pc.Prices, pr)
		default:
			ok, err := setOption(d, pc)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, unknownSubdirective(d, "pool", sub, poolSubdirectives)
			}
		}
	}
	return pc, nil
}

// unmarshalKey reads `key <secret> [<base_url>|<provider>] [{ ... }]`.
// Errors about the key as a whole (an empty secret, no base URL) point at
// the key's own line, not at the end of its block.
func unmarshalKey(d *caddyfile.Dispenser) (*KeyConfig, error) {
	kc := &KeyConfig{}
	// a dispenser over the key token alone, to report errors at its line
	at := caddyfile.NewDispenser([]caddyfile.Token{d.Token()})
	at.Next()
	if !d.NextArg() {
		return nil, d.Errf("key needs a secret: key <secret> [<base_url>|<provider>] { ... } (the secret is empty: %s)", emptySecretHint(d))
	}
	kc.Secret = d.Val()
	var second string
	if d.NextArg() {
		second = d.Val()
		if _, ok := LookupPreset(second); ok {
			kc.Provider = second
		} else if strings.Contains(second, "://") || strings.HasPrefix(second, "{") {
			kc.BaseURL = second // a URL, or a placeholder resolved at load
		} else {
			hint := ""
			if s := nearest(second, PresetNames()); s != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", s)
			}
			// a long word here may be a secret written in the wrong place:
			// name it only when it is short enough to be a provider's name
			what := "'" + second + "'"
			if len(second) > 20 || strings.HasPrefix(second, "sk-") {
				what = "its second argument"
			}
			return nil, d.Errf("key: %s is neither a base URL (http:// or https://) nor a known provider%s; providers: %s",
				what, hint, strings.Join(PresetNames(), ", "))
		}
	}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	// With an empty {$NAME} before it, the base URL or the provider moves
	// into the secret's place: say so rather than "base_url is required".
	emptySecret := func() error {
		return at.Errf("key: the secret is empty, '%s' stands where the secret goes (key <secret> <base_url>|<provider>): %s",
			kc.Secret, emptySecretHint(at))
	}
	if second == "" && strings.Contains(kc.Secret, "://") {
		return nil, emptySecret()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if d.Val() == "budget" {
			bs, err := unmarshalBudget(d)
			if err != nil {
				return nil, err
			}
			kc.Budget = bs
			continue
		}
		if d.Val() == "weight" && d.CountRemainingArgs() == 1 {
			if d.NextArg(); d.Val() == "0" {
				kc.Standby = true // weight 0: a standby under weighted
				continue
			}
			d.Prev()
		}
		if d.Val() == "provider" {
			if !d.AllArgs(&kc.Provider) {
				return nil, d.ArgErr()
			}
			if _, ok := LookupPreset(kc.Provider); !ok {
				hint := ""
				if s := nearest(kc.Provider, PresetNames()); s != "" {
					hint = fmt.Sprintf(" (did you mean %s?)", s)
				}
				return nil, d.Errf("provider: unknown provider '%s'%s; known: %s", kc.Provider, hint, strings.Join(PresetNames(), ", "))
			}
			continue
		}
		ok, err := setOption(d, kc)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, unknownSubdirective(d, "key", d.Val(), keySubdirectives)
		}
	}
	if _, secretIsPreset := LookupPreset(kc.Secret); secretIsPreset && second == "" && kc.BaseURL == "" && kc.Provider == "" {
		return nil, emptySecret()
	}
	if kc.BaseURL == "" && kc.Provider == "" {
		return nil, at.Errf("key: base_url is required (key <secret> <base_url>|<provider>, or base_url or provider inside its block; providers: %s)",
			strings.Join(PresetNames(), ", "))
	}
	return kc, nil
}

// intArg reads exactly one integer argument >= minimum.
func intArg(d *caddyfile.Dispenser, dst *int, minimum int) error {
	name := d.Val()
	var v string
	if !d.AllArgs(&v) {
		return d.ArgErr()
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minimum {
		return d.Errf("%s: want an integer >= %d, got '%s'", name, minimum, v)
	}
	*dst = n
	return nil
}

// durationArg reads exactly one duration argument (Caddy syntax, e.g. 3s,
// 500ms, 1d).
func durationArg(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	name := d.Val()
	var v string
	if !d.AllArgs(&v) {
		return d.ArgErr()
	}
	dur, err := caddy.ParseDuration(v)
	if err != nil || dur < 0 {
		return d.Errf("%s: bad duration '%s'", name, v)
	}
	*dst = caddy.Duration(dur)
	return nil
}

// Interface guard.
var _ caddyfile.Unmarshaler = (*Handler)(nil)
