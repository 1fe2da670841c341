package caddymodule

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmgateway/llm_gateway/translate"
)

func f64(v float64) *float64 { return &v }
func i64p(v int64) *int64    { return &v }

// TestBuiltinPriceTable: the embedded table parses, every entry has a
// date and a source, and named models cost what the table says (through
// the same lookup requests use, dated snapshots and most specific
// patterns included).
func TestBuiltinPriceTable(t *testing.T) {
	entries, err := BuiltinPrices()
	if err != nil {
		t.Fatalf("prices.json: %v", err)
	}
	if len(entries) < 30 {
		t.Fatalf("%d entries, want the table", len(entries))
	}
	for _, e := range entries {
		if e.AsOf == "" || !strings.HasPrefix(e.Source, "https://") {
			t.Errorf("%s: as_of %q source %q", e.Model, e.AsOf, e.Source)
		}
	}
	tab := loadBuiltinPrices()
	for _, c := range []struct {
		model, pattern            string
		in, out, cacheRead, write float64 // cacheRead/write -1: unset
	}{
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4*", 3, 15, 0.3, 3.75},
		{"claude-opus-4-6", "claude-opus-4-6*", 5, 25, 0.5, 6.25},
		{"claude-opus-4-1-20250805", "claude-opus-4-1*", 15, 75, 1.5, 18.75},
		{"claude-opus-4-20250514", "claude-opus-4-2025*", 15, 75, 1.5, 18.75},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5*", 1, 5, 0.1, 1.25},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku*", 0.8, 4, 0.08, 1},
		{"gpt-5.4", "gpt-5.4", 2.5, 15, 0.25, -1},
		{"gpt-5.4-mini", "gpt-5.4-mini*", 0.75, 4.5, 0.075, -1},
		{"gpt-4o-2024-08-06", "gpt-4o-2*", 2.5, 10, 1.25, -1},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini*", 0.15, 0.6, 0.075, -1},
		{"gpt-4.1", "gpt-4.1", 2, 8, -1, -1},
		{"o4-mini", "o4-mini*", 1.1, 4.4, 0.275, -1},
		{"gemini-2.5-pro", "gemini-2.5-pro*", 1.25, 10, -1, -1},
		{"kimi-k3", "kimi-k3*", 3, 15, 0.3, -1},
		{"deepseek-flash", "deepseek-flash*", 0.15, 0.6, 0.003, -1},
		{"deepseek-v4-flash", "deepseek-v4-flash*", 0.15, 0.6, 0.003, -1},
		{"deepseek-v4-pro", "deepseek-v4-pro*", 0.66, 1.98, 0.022, -1},
		{"mistral-medium-latest", "mistral-medium-latest", 1.5, 7.5, -1, -1},
		{"mistral-medium-2604", "mistral-medium-2604*", 1.5, 7.5, -1, -1},
		{"mistral-large-2512", "mistral-large-2512*", 0.5, 1.5, -1, -1},
		{"mistral-small-latest", "mistral-small-latest", 0.1, 0.3, -1, -1},
		{"ministral-8b-latest", "ministral-8b-latest", 0.15, 0.15, -1, -1},
		{"qwen3.8-max", "qwen3.8-max*", 2, 6, -1, -1},
		{"qwen3.8-max-0902", "qwen3.8-max*", 2, 6, -1, -1},
		{"qwen3.8-flash", "qwen3.8-flash*", 0.15, 0.47, -1, -1},
		{"qwen3.7-max", "qwen3.7-max*", 2.5, 7.5, -1, -1},
	} {
		p, pat, ok := tab.lookup(c.model)
		if !ok || pat != c.pattern || p.Input != c.in || p.Output != c.out {
			t.Errorf("%s: %+v via %q (%v), want %v/%v via %q", c.model, p, pat, ok, c.in, c.out, c.pattern)
			continue
		}
		if (c.cacheRead < 0) != (p.CacheRead == nil) || p.CacheRead != nil && *p.CacheRead != c.cacheRead {
			t.Errorf("%s: cache_read %v, want %v", c.model, p.CacheRead, c.cacheRead)
		}
		if (c.write < 0) != (p.CacheWrite == nil) || p.CacheWrite != nil && *p.CacheWrite != c.write {
			t.Errorf("%s: cache_write %v, want %v", c.model, p.CacheWrite, c.write)
		}
	}
	for _, m := range []string{"mock-gpt", "deepseek-chat", "claude-opus-4", "gpt-4.1x", "mistral-medium", "qwen-max"} {
		if p, pat, ok := tab.lookup(m); ok {
			t.Errorf("%s: priced %+v via %q, want unknown", m, p, pat)
		}
	}
}

// TestPriceTableRejectsBadEntries: no date, no source, a negative price
// or a pattern twice make the table invalid.
func TestPriceTableRejectsBadEntries(t *testing.T) {
	for name, body := range map[string]string{
		"no date":   `{"version":1,"entries":[{"model":"a","input":1,"output":2,"source":"https://x"}]}`,
		"no source": `{"version":1,"entries":[{"model":"a","input":1,"output":2,"as_of":"2026-01-01"}]}`,
		"negative":  `{"version":1,"entries":[{"model":"a","input":-1,"output":2,"as_of":"2026-01-01","source":"https://x"}]}`,
		"twice":     `{"version":1,"entries":[{"model":"a","input":1,"output":2,"as_of":"2026-01-01","source":"https://x"},{"model":"a","input":1,"output":2,"as_of":"2026-01-01","source":"https://x"}]}`,
		"version":   `{"version":2,"entries":[]}`,
	} {
		if _, err := parsePriceTable([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCostOf: the cost formula over normalised usage (input includes
// cache reads and writes, output includes reasoning), for an OpenAI-style
// and an Anthropic-style usage, and the estimate when no input was
// reported.
func TestCostOf(t *testing.T) {
	p := Price{Input: 2, Output: 8, CacheRead: f64(0.5), Reasoning: f64(10)}
	// OpenAI: prompt_tokens 1000 of which 200 cached; 500 completion of which 100 reasoning
	u := translate.Usage{InputTokens: i64p(1000), OutputTokens: i64p(500), CacheReadTokens: i64p(200), ReasoningTokens: i64p(100)}
	if got, est := costOf(p, u, 0); math.Abs(got-0.0059) > 1e-15 || est {
		t.Fatalf("openai usage: %v (estimated %v), want 0.0059", got, est)
	}
	// Anthropic via translate: input_tokens 100 + cache read 300 + cache write 50 = 450
	an := translate.ResponseUsage(translate.AnthropicMessages, []byte(`{"usage":{"input_tokens":100,"cache_read_input_tokens":300,"cache_creation_input_tokens":50,"output_tokens":40}}`))
	sonnet := Price{Input: 3, Output: 15, CacheRead: f64(0.3), CacheWrite: f64(3.75)}
	if got, _ := costOf(sonnet, an, 0); math.Abs(got-0.0011775) > 1e-15 {
		t.Fatalf("anthropic usage %s: %v, want 0.0011775", an, got)
	}
	// no cache prices: cache tokens cost the input price
	if got, _ := costOf(Price{Input: 1, Output: 2}, u, 0); math.Abs(got-0.002) > 1e-15 {
		t.Fatalf("no cache prices: %v, want 0.002", got)
	}
	// no input reported: the estimate, marked
	if got, est := costOf(Price{Input: 1, Output: 2}, translate.Usage{OutputTokens: i64p(10)}, 400); math.Abs(got-0.00042) > 1e-15 || !est {
		t.Fatalf("estimated: %v %v, want 0.00042 estimated", got, est)
	}
	// 0.1 + 0.2 USD per million tokens: the float sum's noise is rounded off
	if got, _ := costOf(Price{Input: 0.1, Output: 0.2}, translate.Usage{InputTokens: i64p(1), OutputTokens: i64p(1)}, 0); strconv.FormatFloat(got, 'g', -1, 64) != "3e-07" {
		t.Fatalf("0.1 + 0.2 per million: %s, want 3e-07", strconv.FormatFloat(got, 'g', -1, 64))
	}
}

// TestPriceCaddyfile: `price` parses in the handler and pool blocks;
// wrong figures are errors naming the problem.
func TestPriceCaddyfile(t *testing.T) {
	var h Handler
	d := caddyfile.NewTestDispenser(`llm_gateway {
		price gpt-* input 1.5 output $6 cache_read 0.15
		pool p {
			price my-model input 0 output 0
			key k http://127.0.0.1:1/v1
		}
	}`)
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	if len(h.Prices) != 1 || *h.Prices[0] != (PriceConfig{Model: "gpt-*", Price: Price{Input: 1.5, Output: 6, CacheRead: h.Prices[0].CacheRead}}) || *h.Prices[0].CacheRead != 0.15 {
		t.Fatalf("global: %+v", h.Prices)
	}
	if pp := h.Pools[0].Prices; len(pp) != 1 || pp[0].Model != "my-model" || pp[0].Input != 0 || pp[0].Output != 0 {
		t.Fatalf("pool: %+v", pp)
	}
	for in, want := range map[string]string{
		"price m input 1":                    "want price <model-pattern>",
		"price m input x output 2":           "not a non-negative number",
		"price m input -1 output 2":          "not a non-negative number",
		"price m input 1 cache_read 2":       "input and output are required",
		"price m input 1 output 2 fancy 3":   "unknown figure 'fancy'",
		"price m input 1 output 2 reasoning": "want price <model-pattern>",
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("llm_gateway {\n" + in + "\n}"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
