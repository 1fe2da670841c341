package caddymodule

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Prices: what a model's tokens cost, in US dollars per million tokens.
//
// The built-in table is prices.json (embedded): one entry per model
// pattern, each with the date of the reading (as_of) and the vendor page
// it was taken from (source). Users add or override prices with `price`
// in the llm_gateway block (global) or in a pool block; a price is looked
// up by the upstream model name (after model_map), first in the pool's
// own prices, then in the global ones, then in the built-in table, and in
// each the most specific pattern wins (an exact name beats any wildcard,
// a longer prefix beats a shorter one, as for a pool's models). A model
// found nowhere has no price: its cost is unknown, never 0, and it is
// listed by GET /llm_gateway/spend (unknown_models).

// pricesJSON is the built-in price table.
//
//go:embed prices.json
var pricesJSON []byte

// PriceConfig is one price override (Caddyfile: `price <model-pattern>
// input <usd> output <usd> [cache_read <usd>] [cache_write <usd>]
// [reasoning <usd>]`). Figures are US dollars per million tokens.
type PriceConfig struct {
	// Model is an exact upstream model name or a prefix ending in '*'
	// ("*" alone matches every model). Required.
	Model string `json:"model"`
	// Price holds the figures (input and output required; 0 is a valid
	// price: a free model).
	Price
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	// Input is the price of input tokens that are neither cache reads nor
	// cache writes.
	Input float64 `json:"input"`
	// Output is the price of output tokens (reasoning included unless
	// Reasoning is set).
	Output float64 `json:"output"`
	// CacheRead is the price of input tokens read from the prompt cache
	// (OpenAI cached_tokens, Anthropic cache_read_input_tokens). Nil: the
	// Input price.
	CacheRead *float64 `json:"cache_read,omitempty"`
	// CacheWrite is the price of input tokens written to the prompt cache
	// (Anthropic cache_creation_input_tokens). Nil: the Input price.
	CacheWrite *float64 `json:"cache_write,omitempty"`
	// Reasoning is the price of reasoning (thinking) tokens where a
	// vendor bills them apart from other output. Nil: the Output price.
	Reasoning *float64 `json:"reasoning,omitempty"`
	// Peak and OffPeak are time-of-day prices (see PriceWindow): a
	// request that started inside one is priced at its figures instead.
	// Nil: no such window.
	Peak    *PriceWindow `json:"peak,omitempty"`
	OffPeak *PriceWindow `json:"off_peak,omitempty"`
}

// PriceEntry is one entry of the built-in price table (prices.json): a
// model pattern, its Price, the date of the reading (AsOf, YYYY-MM-DD)
// and the vendor page it was taken from (Source); Via names a dated
// transcription of that page when the figures were read through it.
type PriceEntry struct {
	Model string `json:"model"`
	Price
	AsOf   string `json:"as_of"`
	Source string `json:"source"`
	Via    string `json:"via,omitempty"`
	Note   string `json:"note,omitempty"`
}

// priceFile is the format of prices.json.
type priceFile struct {
	Version int          `json:"version"`
	Entries []PriceEntry `json:"entries"`
}

// parsePriceTable decodes and checks a price table: version 1, every
// entry with a model pattern, non-negative finite prices, an as_of date
// (YYYY-MM-DD) and an https source, and no pattern twice.
func parsePriceTable(b []byte) ([]PriceEntry, error) {
	var f priceFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("version %d, want 1", f.Version)
	}
	seen := map[string]bool{}
	for i, e := range f.Entries {
		if e.Model == "" {
			return nil, fmt.Errorf("entry %d: no model", i)
		}
		if seen[e.Model] {
			return nil, fmt.Errorf("entry %d: model %q twice", i, e.Model)
		}
		seen[e.Model] = true
		if err := e.Price.check(); err != nil {
			return nil, fmt.Errorf("entry %q: %v", e.Model, err)
		}
		if _, err := time.Parse(time.DateOnly, e.AsOf); err != nil {
			return nil, fmt.Errorf("entry %q: as_of %q is not a date (YYYY-MM-DD)", e.Model, e.AsOf)
		}
		if !strings.HasPrefix(e.Source, "https://") {
			return nil, fmt.Errorf("entry %q: source %q is not an https URL", e.Model, e.Source)
		}
	}
	return f.Entries, nil
}

// maxPriceUSD bounds a price (US dollars per million tokens): far above
// any vendor's, and low enough that a request's cost and the totals stay
// finite (an infinite cost cannot be written as JSON or added in Redis).
const maxPriceUSD = 1e6

// checkPricePattern reports a model pattern with a '*' anywhere but at
// its end (such a pattern would be an exact name that matches nothing).
func checkPricePattern(pattern string) error {
	if i := strings.IndexByte(pattern, '*'); i >= 0 && i != len(pattern)-1 {
		return fmt.Errorf("price pattern '%s': a '*' may only end a pattern (a prefix such as gpt-4o*)", pattern)
	}
	return nil
}

// check reports a negative, NaN, infinite or absurdly large price
// (> maxPriceUSD), and a malformed or overlapping time-of-day window.
func (p Price) check() error {
	for _, v := range []struct {
		name string
		v    *float64
	}{{"input", &p.Input}, {"output", &p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}, {"reasoning", p.Reasoning}} {
		if v.v != nil && (*v.v < 0 || math.IsNaN(*v.v) || math.IsInf(*v.v, 0)) {
			return fmt.Errorf("%s price %v is not a non-negative number", v.name, *v.v)
		}
		if v.v != nil && *v.v > maxPriceUSD {
			return fmt.Errorf("%s price %v is above %v US dollars per million tokens", v.name, *v.v, maxPriceUSD)
		}
	}
	return p.checkWindows()
}

var builtinPriceTable struct {
	once    sync.Once
	entries []PriceEntry
	table   *priceTable
	err     error
}

// BuiltinPrices returns the built-in price table (prices.json), in file
// order. The slice is shared: do not modify it. An error means the
// embedded file is broken (a test guards it); the table is then empty.
func BuiltinPrices() ([]PriceEntry, error) {
	loadBuiltinPrices()
	return builtinPriceTable.entries, builtinPriceTable.err
}

func loadBuiltinPrices() *priceTable {
	builtinPriceTable.once.Do(func() {
		e, err := parsePriceTable(pricesJSON)
		builtinPriceTable.entries, builtinPriceTable.err = e, err
		pats := make([]pricePattern, 0, len(e))
		for _, x := range e {
			pats = append(pats, pricePattern{x.Model, x.Price})
		}
		builtinPriceTable.table = newPriceTable(pats)
	})
	return builtinPriceTable.table
}

// pricePattern is a model pattern with its price.
type pricePattern struct {
	pattern string
	price   Price
}

// priceTable finds a model's price: the most specific matching pattern.
type priceTable struct {
	exact    map[string]Price
	wildcard []pricePattern // longest prefix first
	cfg      []*PriceConfig // the configured overrides it was built from (priceTableOf), for the admin API
}

func newPriceTable(ps []pricePattern) *priceTable {
	t := &priceTable{exact: map[string]Price{}}
	for _, p := range ps {
		if strings.HasSuffix(p.pattern, "*") {
			t.wildcard = append(t.wildcard, p)
		} else {
			t.exact[p.pattern] = p.price
		}
	}
	sort.SliceStable(t.wildcard, func(i, j int) bool {
		return specificity(t.wildcard[i].pattern) > specificity(t.wildcard[j].pattern)
	})
	return t
}

// lookup returns the price of model and the pattern that gave it.
func (t *priceTable) lookup(model string) (Price, string, bool) {
	if t == nil {
		return Price{}, "", false
	}
	if p, ok := t.exact[model]; ok {
		return p, model, true
	}
	for _, w := range t.wildcard {
		if matchPattern(w.pattern, model) {
			return w.price, w.pattern, true
		}
	}
	return Price{}, "", false
}

// priceTableOf builds the table of configured overrides, nil for none.
func priceTableOf(cfgs []*PriceConfig) *priceTable {
	if len(cfgs) == 0 {
		return nil
	}
	ps := make([]pricePattern, 0, len(cfgs))
	for _, c := range cfgs {
		if c == nil {
			continue
		}
		ps = append(ps, pricePattern{c.Model, c.Price})
	}
	t := newPriceTable(ps)
	t.cfg = cfgs
	return t
}

// validatePrices checks configured overrides: a model pattern each,
// non-negative prices, no pattern twice in one block. where names the
// block for errors ("llm_gateway", "pool 'x'").
func validatePrices(where string, cfgs []*PriceConfig) error {
	seen := map[string]bool{}
	for _, c := range cfgs {
		if c == nil {
			continue
		}
		if c.Model == "" {
			return fmt.Errorf("%s: price needs a model pattern", where)
		}
		if seen[c.Model] {
			return fmt.Errorf("%s: price for '%s' is given twice", where, c.Model)
		}
		seen[c.Model] = true
		if err := checkPricePattern(c.Model); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		if err := c.Price.check(); err != nil {
			return fmt.Errorf("%s: price '%s': %v", where, c.Model, err)
		}
	}
	return nil
}

// unmarshalPrice reads `price <model-pattern> input <usd> output <usd>
// [cache_read <usd>] [cache_write <usd>] [reasoning <usd>]`, with an
// optional block of time-of-day windows (see unmarshalPriceWindows; the
// dispenser is at "price"). A figure may carry a leading '$'.
func unmarshalPrice(d *caddyfile.Dispenser) (*PriceConfig, error) {
	const usage = "price <model-pattern> input <usd> output <usd> [cache_read <usd>] [cache_write <usd>] [reasoning <usd>] [{ peak|off_peak <HH:MM-HH:MM> [<days>] input <usd> output <usd> ... }] (US dollars per million tokens)"
	args := d.RemainingArgs()
	if len(args) < 5 || len(args)%2 == 0 {
		return nil, d.Errf("want %s", usage)
	}
	pc := &PriceConfig{Model: args[0]}
	if err := checkPricePattern(args[0]); err != nil {
		return nil, d.Err(err.Error())
	}
	p, err := parsePriceFigures(d, args[0], args[1:], usage)
	if err != nil {
		return nil, err
	}
	pc.Price = p
	if err := unmarshalPriceWindows(d, pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// parsePriceFigures reads `<figure> <usd>` pairs (input and output
// required); what names the price for errors, usage is the form wanted.
func parsePriceFigures(d *caddyfile.Dispenser, what string, args []string, usage string) (Price, error) {
	var p Price
	if len(args)%2 != 0 {
		return p, d.Errf("price %s: a figure without its price; want %s", what, usage)
	}
	var haveIn, haveOut bool
	given := map[string]bool{}
	for i := 0; i < len(args); i += 2 {
		v, err := strconv.ParseFloat(strings.TrimPrefix(args[i+1], "$"), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return p, d.Errf("price %s: %s '%s' is not a non-negative number of US dollars per million tokens", what, args[i], args[i+1])
		}
		if v > maxPriceUSD {
			return p, d.Errf("price %s: %s '%s' is above %v US dollars per million tokens", what, args[i], args[i+1], maxPriceUSD)
		}
		if given[args[i]] {
			return p, d.Errf("price %s: %s is given twice", what, args[i])
		}
		given[args[i]] = true
		switch args[i] {
		case "input":
			p.Input, haveIn = v, true
		case "output":
			p.Output, haveOut = v, true
		case "cache_read":
			p.CacheRead = &v
		case "cache_write":
			p.CacheWrite = &v
		case "reasoning":
			p.Reasoning = &v
		default:
			return p, d.Errf("price %s: unknown figure '%s'; want %s", what, args[i], usage)
		}
	}
	if !haveIn || !haveOut {
		return p, d.Errf("price %s: input and output are required; want %s", what, usage)
	}
	return p, nil
}

// priceGivenTwice reports, at the dispenser's line, a price whose pattern
// an earlier price of the same block already gave.
func priceGivenTwice(d *caddyfile.Dispenser, earlier []*PriceConfig, pr *PriceConfig) error {
	for _, e := range earlier {
		if e != nil && e.Model == pr.Model {
			return d.Errf("price for '%s' is given twice", pr.Model)
		}
	}
	return nil
}
