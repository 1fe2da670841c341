package caddymodule

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"
)

// balanceView is a key's balance or credit as its vendor's own endpoint
// reports it, shown by diagnose (POST /llm_gateway/diagnose) for keys
// whose base URL is on a host with such an endpoint. The gateway's own
// budgets (BudgetSpec) stay the guard; this is for information.
type balanceView struct {
	// Vendor is "openrouter" or "deepseek"; Endpoint what was asked, e.g.
	// "GET /api/v1/key".
	Vendor   string `json:"vendor"`
	Endpoint string `json:"endpoint"`
	// Available is DeepSeek's is_available: whether the balance can pay
	// for API calls.
	Available *bool `json:"available,omitempty"`
	// LimitUSD, UsageUSD and RemainingUSD are OpenRouter's limit, usage
	// and limit_remaining (credits, in US dollars); LimitUSD and
	// RemainingUSD are absent for a key without a credit limit.
	// LimitReset is OpenRouter's limit_reset ("daily", "monthly", ...).
	LimitUSD     *float64 `json:"limit_usd,omitempty"`
	UsageUSD     *float64 `json:"usage_usd,omitempty"`
	RemainingUSD *float64 `json:"remaining_usd,omitempty"`
	LimitReset   string   `json:"limit_reset,omitempty"`
	// Balances are DeepSeek's balance_infos, one per currency.
	Balances []currencyBalance `json:"balances,omitempty"`
	// Error says why the balance could not be read: "http_<status>",
	// "network" or "unexpected_body"; the fields above are then absent.
	Error string `json:"error,omitempty"`
}

// currencyBalance is one of DeepSeek's balance_infos: total, granted and
// topped-up balance in Currency ("CNY", "USD").
type currencyBalance struct {
	Currency string  `json:"currency"`
	Total    float64 `json:"total"`
	Granted  float64 `json:"granted"`
	ToppedUp float64 `json:"topped_up"`
}

// balanceAPI is a vendor's balance endpoint: path on the key's host, and
// how its answer reads.
type balanceAPI struct {
	vendor string
	path   string
	parse  func(body []byte, v *balanceView) bool
}

// balanceAPIs maps an upstream host (host, or host:port) to its vendor's
// balance endpoint. Only keys on these hosts are asked; a relay or proxy
// in front of a vendor is not (its answer would not be the vendor's).
var balanceAPIs = struct {
	sync.RWMutex
	m map[string]balanceAPI
}{m: map[string]balanceAPI{
	"openrouter.ai":    openRouterBalance,
	"api.deepseek.com": deepSeekBalance,
}}

// openRouterBalance reads GET /api/v1/key, per OpenRouter's "Get current
// API key": {"data":{"limit":100|null,"usage":25.5,
// "limit_remaining":74.5|null,"limit_reset":"monthly"|null,...}}.
var openRouterBalance = balanceAPI{vendor: "openrouter", path: "/api/v1/key", parse: func(body []byte, v *balanceView) bool {
	d := gjson.GetBytes(body, "data")
	if !d.IsObject() || !d.Get("usage").Exists() {
		return false
	}
	num := func(r gjson.Result) *float64 {
		if r.Type != gjson.Number {
			return nil
		}
		f := r.Float()
		return &f
	}
	v.LimitUSD, v.UsageUSD, v.RemainingUSD = num(d.Get("limit")), num(d.Get("usage")), num(d.Get("limit_remaining"))
	v.LimitReset = d.Get("limit_reset").Str
	return true
}}

// deepSeekBalance reads GET /user/balance, per DeepSeek's "Get User
// Balance": {"is_available":true,"balance_infos":[{"currency":"CNY",
// "total_balance":"110.00","granted_balance":"10.00",
// "topped_up_balance":"100.00"}]} (amounts are strings).
var deepSeekBalance = balanceAPI{vendor: "deepseek", path: "/user/balance", parse: func(body []byte, v *balanceView) bool {
	infos := gjson.GetBytes(body, "balance_infos")
	avail := gjson.GetBytes(body, "is_available")
	if !infos.IsArray() || !avail.IsBool() {
		return false
	}
	a := avail.Bool()
	v.Available = &a
	amount := func(r gjson.Result) float64 {
		f, _ := strconv.ParseFloat(r.String(), 64)
		return f
	}
	for _, bi := range infos.Array() {
		v.Balances = append(v.Balances, currencyBalance{Currency: bi.Get("currency").Str, Total: amount(bi.Get("total_balance")),
			Granted: amount(bi.Get("granted_balance")), ToppedUp: amount(bi.Get("topped_up_balance"))})
	}
	return true
}}

// balanceFor returns the balance endpoint of the key's host and its URL,
// ok false when the host has none.
func balanceFor(uk *upstreamKey) (balanceAPI, string, bool) {
	base := uk.chatURL
	if base == "" {
		base = uk.messageURL
	}
	if base == "" {
		base = uk.responsesURL
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return balanceAPI{}, "", false
	}
	balanceAPIs.RLock()
	api, ok := balanceAPIs.m[u.Host]
	if !ok {
		api, ok = balanceAPIs.m[u.Hostname()]
	}
	balanceAPIs.RUnlock()
	if !ok {
		return balanceAPI{}, "", false
	}
	return api, u.Scheme + "://" + u.Host + api.path, true
}

// probeBalance asks the key's vendor for its balance; nil when the key's
// host has no balance endpoint. Failures are reported in the view, never
// with the upstream's text.
func probeBalance(ctx context.Context, uk *upstreamKey) *balanceView {
	api, target, ok := balanceFor(uk)
	if !ok {
		return nil
	}
	v := &balanceView{Vendor: api.vendor, Endpoint: "GET " + api.path}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := newUpstreamRequest(ctx, http.MethodGet, target, nil)
	if err != nil {
		v.Error = "network"
		return v
	}
	req.Header.Set("Accept", "application/json")
	uk.authorize(req.Header, false) // both vendors take Authorization: Bearer
	resp, err := upstreamClient.Do(req)
	if err != nil {
		v.Error = "network"
		return v
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		v.Error = "http_" + strconv.Itoa(resp.StatusCode)
		return v
	}
	if !api.parse(body, v) {
		*v = balanceView{Vendor: api.vendor, Endpoint: v.Endpoint, Error: "unexpected_body"}
	}
	return v
}
