package mockupstream

import (
	"strconv"
)

// Credit is a key's prepaid credit as the mock's balance endpoints report
// it, in US dollars.
type Credit struct {
	// Limit is the key's credit limit (OpenRouter's limit; 0: none, null).
	Limit float64 `json:"limit,omitempty"`
	// Used is what the key has spent (OpenRouter's usage).
	Used float64 `json:"used,omitempty"`
	// Granted and ToppedUp are DeepSeek's granted and paid balances;
	// total_balance is their sum, is_available whether it is > 0.
	Granted  float64 `json:"granted,omitempty"`
	ToppedUp float64 `json:"topped_up,omitempty"`
}

// balance answers the vendors' balance endpoints for the key:
//
//	GET /api/v1/key (per OpenRouter's "Get current API key"):
//	  {"data":{"label":"<masked key>","limit":L|null,"usage":U,
//	   "limit_remaining":L-U|null,"limit_reset":null,"is_free_tier":false,
//	   "is_provisioning_key":false}}
//	GET /user/balance (per DeepSeek's "Get User Balance"):
//	  {"is_available":true|false,"balance_infos":[{"currency":"USD",
//	   "total_balance":"<2 decimals>","granted_balance":"...",
//	   "topped_up_balance":"..."}]}
//
// A key whose Status is an error gets that error instead.
func (c *call) balance(ep endpoint) {
	c.ks.record("", nil, c.r.Header)
	if c.b.statusError() {
		c.countError(c.b.Status)
		c.writeStatusError(c.b.Status, "")
		return
	}
	cr := Credit{}
	if c.b.Credit != nil {
		cr = *c.b.Credit
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	dec := func(v float64) string { return strconv.Quote(strconv.FormatFloat(v, 'f', 2, 64)) }
	var b []byte
	if ep == epKeyInfo {
		limit, remaining := "null", "null"
		if cr.Limit > 0 {
			limit, remaining = num(cr.Limit), num(cr.Limit-cr.Used)
		}
		b = []byte(`{"data":{"label":` + strconv.Quote(maskKey(c.key)) + `,"limit":` + limit + `,"usage":` + num(cr.Used) +
			`,"limit_remaining":` + remaining + `,"limit_reset":null,"is_free_tier":false,"is_provisioning_key":false}}`)
	} else {
		total := cr.Granted + cr.ToppedUp
		b = []byte(`{"is_available":` + strconv.FormatBool(total > 0) + `,"balance_infos":[{"currency":"USD","total_balance":` + dec(total) +
			`,"granted_balance":` + dec(cr.Granted) + `,"topped_up_balance":` + dec(cr.ToppedUp) + `}]}`)
	}
	c.writeJSON(200, b)
	c.ks.ok.Add(1)
}
