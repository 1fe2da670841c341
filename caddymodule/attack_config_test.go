package caddymodule

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/translate"
)

// TestAttackConfigHostile: hostile Caddyfile values for egress, budget,
// price, learn_limits, weight and recent_requests either fail at load
// with the file:line of the offending directive (a budget's warn: the
// warn line), or load; no panic, and no error shows a proxy password or
// a key.
func TestAttackConfigHostile(t *testing.T) {
	const pass = "pp-s3cr3t:with@chars-0123"
	const upKey = "sk-upstream-secret-0123456789"
	os.Unsetenv("LLMGW_ATK_UNSET")
	t.Setenv("LLMGW_ATK_PASS", pass)
	pool := func(inner string) string {
		return "\t\tpool main {\n\t\t\tkey " + upKey + " http://127.0.0.1:1/v1 {\n\t\t\t\tid k1\n\t\t\t}\n" + inner + "\n\t\t}"
	}
	keyIn := func(inner string) string {
		return "\t\tpool main {\n\t\t\tkey " + upKey + " http://127.0.0.1:1/v1 {\n\t\t\t\tid k1\n\t\t\t\t" + inner + "\n\t\t\t}\n\t\t}"
	}
	cases := []struct {
		name, block, want, line string // want "": must load
	}{
		{"egress no scheme", pool("\t\t\tegress 127.0.0.1:3128"), "egress proxy (unparsable proxy URL): want scheme://", "egress 127"},
		{"egress userinfo with : and @ in password", pool("\t\t\tegress http://user:pp-s3cr3t:with@chars-0123@127.0.0.1:3128"), "", "egress http"},
		{"egress placeholder password", pool("\t\t\tegress http://user:{env.LLMGW_ATK_PASS}@127.0.0.1:3128"), "", "egress http"},
		{"egress ipv6", pool("\t\t\tegress socks5://[::1]:1080"), "", "egress socks5"},
		{"egress ipv6 no port", pool("\t\t\tegress socks5://[::1]"), "egress proxy socks5://[::1]: the port is missing", "egress socks5"},
		{"egress ipv6 no brackets", pool("\t\t\tegress socks5://::1:1080"), "", "egress socks5"},
		{"egress port 0", pool("\t\t\tegress http://127.0.0.1:0"), "bad port", "egress http"},
		{"egress port 99999", pool("\t\t\tegress http://127.0.0.1:99999"), "bad port", "egress http"},
		{"egress empty host", pool("\t\t\tegress http://:3128"), "egress proxy http://:3128: the host is missing", "egress http"},
		{"egress bad percent escape in password", pool("\t\t\tegress http://u:p%zz" + pass + "@127.0.0.1:3128"), "egress proxy http://***@127.0.0.1:3128: want scheme://", "egress http"},
		{"egress empty block", pool("\t\t\tegress {\n\t\t\t}"), "egress needs at least one proxy", "egress {"},
		{"egress bare", pool("\t\t\tegress"), "egress needs at least one proxy", "egress"},
		{"egress direct twice", pool("\t\t\tegress direct direct"), "either direct or proxy URLs, not both", "egress direct"},
		{"egress unset user", pool("\t\t\tegress http://{env.LLMGW_ATK_UNSET}:x@127.0.0.1:3128"), "{env.LLMGW_ATK_UNSET} is unset or empty", "egress http"},
		{"budget negative", keyIn("budget -5 usd per daily"), "the amount must be a number of US dollars > 0, got -5", "budget"},
		{"budget zero", keyIn("budget 0 usd per daily"), "the amount must be a number of US dollars > 0, got 0", "budget"},
		{"budget NaN", keyIn("budget NaN usd per daily"), "got NaN", "budget"},
		{"budget inf", keyIn("budget inf usd per daily"), "got +Inf", "budget"},
		{"budget 1e309", keyIn("budget 1e309 usd per daily"), "the amount '1e309' is not a number", "budget"},
		{"budget 1e308", keyIn("budget 1e308 usd per daily"), "", "budget"},
		{"budget unknown period", keyIn("budget 5 usd per fortnight"), "period 'fortnight' is neither", "budget"},
		{"budget huge period", keyIn("budget 5 usd per 99999999999d"), "period '99999999999d' is neither", "budget"},
		{"budget 1m period", keyIn("budget 5 usd per 1m"), "", "budget"},
		{"budget 366d period", keyIn("budget 5 usd per 366d"), "", "budget"},
		{"budget period past int64 buckets", keyIn("budget 5 usd per 106751d"), "budget: a rolling window of at most 366d, got '106751d'", "budget"},
		{"budget bad tz", keyIn("budget 5 usd per daily {\n\t\t\t\t\ttimezone Mars/Olympus\n\t\t\t\t}"), "unknown time zone 'Mars/Olympus'", "timezone"},
		{"budget tz path", keyIn("budget 5 usd per daily {\n\t\t\t\t\ttimezone ../../../etc/passwd\n\t\t\t\t}"), "unknown time zone '../../../etc/passwd'", "timezone"},
		{"budget warn 0", keyIn("budget 5 usd per daily {\n\t\t\t\t\twarn 0%\n\t\t\t\t}"), "got '0%'", "warn"},
		{"budget warn 150", keyIn("budget 5 usd per daily {\n\t\t\t\t\twarn 150%\n\t\t\t\t}"), "got '150%'", "warn"},
		{"budget warn NaN", keyIn("budget 5 usd per daily {\n\t\t\t\t\twarn NaN%\n\t\t\t\t}"), "warn wants a percentage between 0 and 100 such as 80%, got 'NaN%'", "warn NaN%"},
		{"budget eur", keyIn("budget 5 eur per daily"), "budget: want budget <amount> usd per", "budget"},
		{"price negative", pool("\t\t\tprice gpt-4o input -1 output 2"), "input '-1' is not a non-negative number", "price"},
		{"price missing output", pool("\t\t\tprice gpt-4o input 1"), "want price <model-pattern> input <usd> output <usd>", "price"},
		{"price missing numbers", pool("\t\t\tprice gpt-4o input output"), "want price <model-pattern>", "price"},
		{"price huge", pool("\t\t\tprice gpt-4o input 1e308 output 1e308"), "input '1e308' is above 1e+06 US dollars per million tokens", "price"},
		{"price 1e309", pool("\t\t\tprice gpt-4o input 1e309 output 1"), "input '1e309' is not a non-negative number", "price"},
		{"price star in middle", pool("\t\t\tprice gpt*4o input 1 output 2"), "price pattern 'gpt*4o': a '*' may only end a pattern", "price"},
		{"price double star", pool("\t\t\tprice ** input 1 output 2"), "price pattern '**': a '*' may only end a pattern", "price"},
		{"price twice", pool("\t\t\tprice gpt-4o input 1 output 2\n\t\t\tprice gpt-4o input 1 output 3"), "price for 'gpt-4o' is given twice", "input 1 output 3"},
		{"price repeated figure", pool("\t\t\tprice gpt-4o input 1 output 2 input 5"), "price gpt-4o: input is given twice", "price"},
		{"learn_limits bad", pool("\t\t\tlearn_limits maybe"), "learn_limits: want on or off, got 'maybe'", "learn_limits"},
		{"learn_limits none", pool("\t\t\tlearn_limits"), "wrong argument count", "learn_limits"},
		{"weight -1", keyIn("weight -1"), "weight: want an integer >= 1, got '-1'", "weight"},
		{"weight huge", keyIn("weight 99999999999999999999"), "weight: want an integer >= 1", "weight"},
		{"weight float", keyIn("weight 1.5"), "weight: want an integer >= 1, got '1.5'", "weight"},
		{"recent_requests huge", "\t\trecent_requests 99999999999\n" + pool(""), "recent_requests must be between 0 (the default, 1000) and 1000000, got 99999999999", "recent_requests"},
		{"recent_requests 1e6+1", "\t\trecent_requests 1000001\n" + pool(""), "got 1000001", "recent_requests"},
		{"recent_requests text", "\t\trecent_requests lots\n" + pool(""), "recent_requests: want an integer >= 1, got 'lots'", "recent_requests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf := "{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:1 {\n\tllm_gateway {\n\t\tapi_key k\n" + c.block + "\n\t}\n}\n"
			path, err := loadCaddyfileFileErr(t, cf)
			if c.want == "" {
				if err != nil {
					t.Fatalf("want it loaded, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded; want an error containing %q", c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("error = %q\nwant it to contain %q", msg, c.want)
			}
			if c.line != "" {
				if at := fmt.Sprintf("%s:%d", path, lineOf(t, cf, c.line)); !strings.Contains(msg, at) {
					t.Errorf("error = %q\nwant it to point at %q", msg, at)
				}
			}
			for _, s := range []string{pass, "pp-s3cr3t", upKey} {
				if strings.Contains(msg, s) {
					t.Errorf("error shows a secret %q: %q", s, msg)
				}
			}
		})
	}
}

// TestAttackJSONPrices: a JSON config's prices get the same checks as the
// Caddyfile's at provision: a price so large that one request's cost
// would be infinite (1e308 x 2 tokens), or a '*' inside a pattern, is
// refused; a high but sane price keeps a huge usage's cost finite.
func TestAttackJSONPrices(t *testing.T) {
	for _, c := range []struct{ prices, want string }{
		{`[{"model":"gpt-4o","input":1e308,"output":1}]`, "input price 1e+308 is above 1e+06 US dollars per million tokens"},
		{`[{"model":"gpt-*-mini","input":1,"output":1}]`, "price pattern 'gpt-*-mini': a '*' may only end a pattern"},
		{`[{"model":"gpt-4o","input":1,"output":1,"reasoning":-2}]`, "reasoning price -2 is not a non-negative number"},
	} {
		cfg := `{"admin":{"disabled":true},"apps":{"http":{"servers":{"s":{"listen":["127.0.0.1:0"],"routes":[{"handle":[{"handler":"llm_gateway","auth":"off",` +
			`"prices":` + c.prices + `,"pools":[{"name":"main","keys":[{"secret":"mk-1","base_url":"http://127.0.0.1:1/v1"}]}]}]}]}}}}}`
		err := loadJSONErr(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("prices %s: error %v, want %q", c.prices, err, c.want)
		}
	}
	big := int64(math.MaxInt64)
	usd, _ := costOf(Price{Input: maxPriceUSD, Output: maxPriceUSD}, translate.Usage{InputTokens: &big, OutputTokens: &big}, 0)
	if math.IsInf(usd, 0) || math.IsNaN(usd) || usd <= 0 {
		t.Fatalf("cost of the largest usage at the largest price = %v", usd)
	}
}

// TestAttackJSONConfig: hostile JSON values outside the Caddyfile's reach
// fail at provision with a message naming the field (never the key's
// secret), or load meaningfully.
func TestAttackJSONConfig(t *testing.T) {
	for _, c := range []struct{ handler, key, want string }{
		{`"learn_limits":"maybe",`, ``, "learn_limits: want"},
		{``, `"weight":-1,`, `pool "main": key #1: max_concurrency and weight must not be negative`},
		{``, `"budget":{"amount_usd":5,"period":"1ns"},`, "budget: period '1ns' is neither daily, monthly nor a duration of at least 1m"},
		{``, `"budget":{"amount_usd":5,"period":"2562047h"},`, "budget: a rolling window of at most 366d, got '2562047h'"},
		{``, `"budget":{"amount_usd":-1,"period":"daily"},`, "budget: the amount must be a number of US dollars > 0, got -1"},
		{``, `"budget":{"amount_usd":5,"period":"daily","warn_percent":150},`, "warn must be a percentage between 0 and 100"},
		{``, `"budget":{"amount_usd":5,"period":"24h","timezone":"Europe/Berlin"},`, "timezone applies to daily and monthly budgets"},
		{``, `"budget":{"amount_usd":5,"period":"monthly","timezone":"Local"},`, "unknown time zone 'Local'"},
		{`"recent_requests":-5,`, ``, "recent_requests must be between 0"},
		{`"egress":{"proxies":["http://user:p@ss:w@rd@127.0.0.1:3128"]},`, ``, ""},
		{`"egress":{"proxies":["http://:3128"]},`, ``, "egress proxy http://:3128: the host is missing"},
		{`"egress":{},`, ``, "egress: at least one proxy is required (or direct)"},
		{`"egress":{"proxies":["http://127.0.0.1:3128"],"strategy":"x"},`, ``, `egress strategy "x": want rotate`},
		{`"egress":{"proxies":["http://127.0.0.1:3128"],"cooldown":-1},`, ``, "egress: cooldown and connect_timeout must not be negative"},
		{`"egress":{"proxies":["http://127.0.0.1:3128"],"connect_timeout":-1},`, ``, "egress: cooldown and connect_timeout must not be negative"},
	} {
		cfg := `{"admin":{"disabled":true},"apps":{"http":{"servers":{"s":{"listen":["127.0.0.1:0"],"routes":[{"handle":[{"handler":"llm_gateway","auth":"off",` +
			c.handler + `"pools":[{"name":"main","keys":[{` + c.key + `"secret":"mk-secret-0123456789","base_url":"http://127.0.0.1:1/v1"}]}]}]}]}}}}}`
		err := loadJSONErr(cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s%s: %v, want it loaded", c.handler, c.key, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s%s: error %v, want %q", c.handler, c.key, err, c.want)
		case err != nil && (strings.Contains(err.Error(), "mk-secret-0123456789") || strings.Contains(err.Error(), "p@ss")):
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

// TestAttackCostModelsBounded: model names come from clients, so the
// spend totals keep at most maxCostModels models apart; further new
// names are counted under otherCostModel, while models that already have
// spend keep their own line.
func TestAttackCostModelsBounded(t *testing.T) {
	forgetCostState()
	t.Cleanup(forgetCostState)
	costModels.Store(maxCostModels - 1)
	costFor(costKey{kind: costByModel, a: boundedCostModel("model-a")}).add(requestCost{known: true, usd: 1})
	if n := costModels.Load(); n != maxCostModels {
		t.Fatalf("model entries %d, want %d", n, maxCostModels)
	}
	for model, want := range map[string]string{"model-a": "model-a", "model-b": otherCostModel, strings.Repeat("z", 5000): otherCostModel} {
		if got := boundedCostModel(model); got != want {
			t.Errorf("boundedCostModel(%.20q) = %q, want %q", model, got, want)
		}
	}
	costFor(costKey{kind: costByModel, a: boundedCostModel("model-c")}).add(requestCost{known: true, usd: 2})
	if f := peekCost(costKey{kind: costByModel, a: otherCostModel}); f.USD != 2 || f.Priced != 1 {
		t.Fatalf("other models: %+v", f)
	}
	if f := peekCost(costKey{kind: costByModel, a: "model-c"}); f.Priced != 0 {
		t.Fatalf("model-c kept apart past the bound: %+v", f)
	}
}
