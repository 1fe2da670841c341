package caddymodule

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestGatewayKeyHeaderCombinations: every combination of Authorization
// (Bearer, Basic, a bare key, empty, garbage) with x-api-key and api-key.
// A valid gateway key in any of them is accepted, whatever the others
// hold (an HTTP stack's Basic header beside the x-api-key its user set
// was told its key was missing); otherwise a 401 in the route's dialect
// says which headers held a key that is not one, or why none was read,
// and never repeats what was sent.
func TestGatewayKeyHeaderCombinations(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock(poolBlock("main", base, 1, "\t\t\tmodels *\n")))
	const basic = "Basic dXNlcjpwYXNzd29yZA==" // user:password
	const wrong = "sk-not-a-gateway-key-424242"
	chat := chatBody("gpt-x", "hi", false)
	msgs := []byte(`{"model":"claude-x","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)
	cases := []struct {
		name string
		hdr  []string // Authorization is removed unless set here
		msg  string   // "" for a success
	}{
		{"basic beside x-api-key", []string{"Authorization", basic, "X-Api-Key", gatewayKey}, ""},
		{"basic beside api-key", []string{"Authorization", basic, "Api-Key", gatewayKey}, ""},
		{"empty beside x-api-key", []string{"Authorization", " ", "X-Api-Key", gatewayKey}, ""},
		{"bare Bearer beside x-api-key", []string{"Authorization", "Bearer", "X-Api-Key", gatewayKey}, ""},
		{"wrong Bearer beside x-api-key", []string{"Authorization", "Bearer " + wrong, "X-Api-Key", gatewayKey}, ""},
		{"wrong Bearer beside api-key", []string{"Authorization", "Bearer " + wrong, "Api-Key", gatewayKey}, ""},
		{"Bearer beside wrong x-api-key", []string{"Authorization", "Bearer " + gatewayKey, "X-Api-Key", wrong}, ""},
		{"garbage beside x-api-key", []string{"Authorization", "Token a b c", "X-Api-Key", gatewayKey}, ""},
		{"bare key", []string{"Authorization", gatewayKey}, ""},
		{"BEARER scheme", []string{"Authorization", "BEARER " + gatewayKey}, ""},
		{"nothing", nil, "missing gateway API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"},
		{"empty x-api-key", []string{"X-Api-Key", " "}, "missing gateway API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"},
		{"basic alone", []string{"Authorization", basic},
			"missing gateway API key: the Authorization header uses the Basic scheme, which the gateway does not read; send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"},
		{"bare Bearer alone", []string{"Authorization", "Bearer "},
			"missing gateway API key: the Authorization header is 'Bearer' with no key; send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"},
		{"garbage alone", []string{"Authorization", "Token " + wrong},
			"missing gateway API key: the Authorization header is not 'Bearer <key>'; send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"},
		{"wrong Bearer", []string{"Authorization", "Bearer " + wrong}, "invalid gateway API key (in Authorization: Bearer)"},
		{"wrong bare key", []string{"Authorization", wrong}, "invalid gateway API key (in Authorization, without 'Bearer ')"},
		{"wrong x-api-key", []string{"X-Api-Key", wrong}, "invalid gateway API key (in the Anthropic API key header)"},
		{"wrong everywhere", []string{"Authorization", "Bearer " + wrong, "X-Api-Key", wrong + "x", "Api-Key", wrong + "y"},
			"invalid gateway API key (in Authorization: Bearer; the Anthropic API key header; api-key)"},
		{"basic beside wrong x-api-key", []string{"Authorization", basic, "X-Api-Key", wrong},
			"invalid gateway API key (in the Anthropic API key header); the Authorization header uses the Basic scheme, which the gateway does not read"},
	}
	successes := int64(0)
	for _, c := range cases {
		for _, anthropic := range []bool{false, true} {
			path, body := "/v1/chat/completions", chat
			if anthropic {
				path, body = "/v1/messages", msgs
			}
			hdr := []string{"Authorization", ""}
			hdr = append(hdr, c.hdr...)
			if anthropic {
				hdr = append(hdr, "Anthropic-Version", "2023-06-01")
			}
			resp, b := post(t, gw+path, body, hdr...)
			if c.msg == "" {
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s %s: %d %s", c.name, path, resp.StatusCode, b)
				}
				successes++
				continue
			}
			got := gjson.GetBytes(b, "error.message").Str
			if resp.StatusCode != http.StatusUnauthorized || got != c.msg {
				t.Errorf("%s %s: %d %q, want 401 %q", c.name, path, resp.StatusCode, got, c.msg)
			}
			if isAnthropic := gjson.GetBytes(b, "type").Str == "error" && gjson.GetBytes(b, "error.type").Str == "authentication_error"; isAnthropic != anthropic {
				t.Errorf("%s %s: error not in the route's dialect: %s", c.name, path, b)
			}
			if !anthropic && gjson.GetBytes(b, "error.code").Str != "invalid_api_key" {
				t.Errorf("%s %s: OpenAI error without code invalid_api_key: %s", c.name, path, b)
			}
			// Claude Code shows its own "Invalid API key" text in place of
			// any error message that names x-api-key (any letter case)
			if strings.HasPrefix(got, "invalid gateway API key") && strings.Contains(strings.ToLower(got), "x-api-key") {
				t.Errorf("%s %s: Claude Code would hide this message: %q", c.name, path, got)
			}
			if strings.Contains(string(b), wrong) || strings.Contains(string(b), "dXNlcjpwYXNzd29yZA") {
				t.Errorf("%s %s: the answer repeats what was sent: %s", c.name, path, b)
			}
		}
	}
	if n := m.Stats("mk-1").Requests; n != successes {
		t.Fatalf("upstream asked %d times, want %d (the successes only)", n, successes)
	}
}
