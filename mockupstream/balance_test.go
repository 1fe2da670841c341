package mockupstream

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestBalanceEndpoints: the OpenRouter and DeepSeek balance endpoints
// report the key's Credit in the vendors' shapes; a key without one has
// no limit and no balance.
func TestBalanceEndpoints(t *testing.T) {
	_, srv := start(t, Config{Keys: map[string]KeyBehavior{
		"sk-or": {Credit: &Credit{Limit: 10, Used: 2.5}},
		"sk-ds": {Credit: &Credit{Granted: 1, ToppedUp: 4.25}},
	}})
	st, _, b := mustDo(t, "GET", srv.URL+"/api/v1/key", "sk-or", "")
	d := gjson.GetBytes(b, "data")
	if st != 200 || d.Get("limit").Float() != 10 || d.Get("usage").Float() != 2.5 || d.Get("limit_remaining").Float() != 7.5 || d.Get("label").Str == "sk-or" {
		t.Fatalf("openrouter key info: %d %s", st, b)
	}
	st, _, b = mustDo(t, "GET", srv.URL+"/api/v1/key", "sk-none", "")
	if st != 200 || gjson.GetBytes(b, "data.limit").Type != gjson.Null || gjson.GetBytes(b, "data.limit_remaining").Type != gjson.Null {
		t.Fatalf("no credit limit: %d %s", st, b)
	}
	st, _, b = mustDo(t, "GET", srv.URL+"/user/balance", "sk-ds", "")
	bi := gjson.GetBytes(b, "balance_infos.0")
	if st != 200 || !gjson.GetBytes(b, "is_available").Bool() || bi.Get("currency").Str != "USD" || bi.Get("total_balance").Str != "5.25" ||
		bi.Get("granted_balance").Str != "1.00" || bi.Get("topped_up_balance").Str != "4.25" {
		t.Fatalf("deepseek balance: %d %s", st, b)
	}
	if st, _, _ := mustDo(t, "POST", srv.URL+"/user/balance", "sk-ds", "{}"); st != 405 {
		t.Fatalf("POST /user/balance: %d, want 405", st)
	}
}
