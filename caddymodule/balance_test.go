package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// registerBalanceHost makes host (host:port) answer like a vendor's
// balance endpoint for the test.
func registerBalanceHost(t *testing.T, base string, api balanceAPI) {
	t.Helper()
	u, _ := url.Parse(base)
	balanceAPIs.Lock()
	balanceAPIs.m[u.Host] = api
	balanceAPIs.Unlock()
	t.Cleanup(func() {
		balanceAPIs.Lock()
		delete(balanceAPIs.m, u.Host)
		balanceAPIs.Unlock()
	})
}

// TestDiagnoseBalance: diagnose shows the balance of keys on OpenRouter's
// and DeepSeek's hosts (here the mock standing in for each), read from
// their own endpoints, an error class when that fails, and nothing for
// keys on other hosts. GET /llm_gateway/budgets lists the budgets.
func TestDiagnoseBalance(t *testing.T) {
	credit := map[string]mockupstream.KeyBehavior{
		"sk-or-ok":   {Credit: &mockupstream.Credit{Limit: 20, Used: 7.25}},
		"sk-or-free": {},
		"sk-or-401":  {Status: 401},
		"sk-ds-ok":   {Credit: &mockupstream.Credit{Granted: 1.5, ToppedUp: 10}},
	}
	_, orBase := mock(t, mockupstream.Config{Keys: credit})
	_, dsBase := mock(t, mockupstream.Config{Keys: credit})
	_, plainBase := mock(t, mockupstream.Config{Keys: credit})
	registerBalanceHost(t, orBase, openRouterBalance)
	registerBalanceHost(t, dsBase, deepSeekBalance)
	key := func(secret, base, id string) string {
		return fmt.Sprintf("\t\t\tkey %s %s {\n\t\t\t\tid %s\n\t\t\t\tbudget 3 usd per monthly\n\t\t\t}\n", secret, base, id)
	}
	pool := "\t\tpool bal-diag {\n\t\t\tmodels *\n" + key("sk-or-ok", orBase, "or-ok") + key("sk-or-free", orBase, "or-free") +
		key("sk-or-401", orBase, "or-401") + key("sk-ds-ok", dsBase, "ds-ok") + key("sk-or-ok", plainBase, "plain") + "\t\t}\n"
	_, admin := adminGateway(t, gatewayBlock(pool), "")
	rows := diagnoseRows(t, admin, "?pool=bal-diag")
	b, _ := json.Marshal(rows)
	f := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	or := rows["or-ok"].Balance
	if or == nil || or.Vendor != "openrouter" || or.Endpoint != "GET /api/v1/key" || f(or.LimitUSD) != 20 || f(or.UsageUSD) != 7.25 || f(or.RemainingUSD) != 12.75 || or.Error != "" {
		t.Errorf("openrouter key: %s", b)
	}
	if free := rows["or-free"].Balance; free == nil || free.LimitUSD != nil || free.RemainingUSD != nil || f(free.UsageUSD) != 0 {
		t.Errorf("openrouter key without a limit: %s", b)
	}
	if e := rows["or-401"].Balance; e == nil || e.Error != "http_401" || e.UsageUSD != nil {
		t.Errorf("openrouter key refused: %s", b)
	}
	ds := rows["ds-ok"].Balance
	if ds == nil || ds.Vendor != "deepseek" || ds.Available == nil || !*ds.Available || len(ds.Balances) != 1 ||
		ds.Balances[0] != (currencyBalance{Currency: "USD", Total: 11.5, Granted: 1.5, ToppedUp: 10}) {
		t.Errorf("deepseek key: %s", b)
	}
	if rows["plain"].Balance != nil || !rows["plain"].OK {
		t.Errorf("a key on another host: %s", b)
	}

	code, body := adminDo(t, http.MethodGet, admin+"/llm_gateway/budgets")
	var views []budgetView
	if err := json.Unmarshal(body, &views); code != 200 || err != nil || len(views) != 5 || views[0].Scope != "key" ||
		views[0].Name != "bal-diag/ds-ok" || views[0].LimitUSD != 3 || views[0].Period != "monthly" || views[0].Timezone != "UTC" || views[0].ResetsAt.IsZero() {
		t.Fatalf("GET /llm_gateway/budgets: %d %s", code, body)
	}
}
