package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestBadInputPerDialect: malformed requests get a 4xx in the client's own
// error shape, for either upstream dialect, and nothing goes upstream.
func TestBadInputPerDialect(t *testing.T) {
	m, gw := dialectGateway(t)
	big := strings.Repeat("x", 10<<20)
	type tc struct{ name, body string }
	cases := map[string][]tc{
		"/v1/chat/completions": {
			{"wrong type", `{"model":"MODEL","messages":{"role":"user"}}`},
			{"missing messages", `{"model":"MODEL"}`},
			{"tool result without call", `{"model":"MODEL","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_x","content":"r"}]}`},
			{"invalid base64 image", `{"model":"MODEL","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,%%%not-base64%%%"}}]}]}`},
			{"10 MB", `{"model":"MODEL","messages":[{"role":"user","content":"` + big + `"}]}`},
		},
		"/v1/messages": {
			{"wrong type", `{"model":"MODEL","max_tokens":10,"messages":"hi"}`},
			{"missing messages", `{"model":"MODEL","max_tokens":10}`},
			{"tool result without call", `{"model":"MODEL","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"r"}]}]}`},
			{"invalid base64 image", `{"model":"MODEL","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%%%not-base64%%%"}}]}]}`},
			{"10 MB", `{"model":"MODEL","max_tokens":10,"messages":[{"role":"user","content":"` + big + `"}]}`},
		},
		"/v1/responses": {
			{"wrong type", `{"model":"MODEL","input":42}`},
			{"missing input", `{"model":"MODEL"}`},
			{"output without call", `{"model":"MODEL","input":[{"type":"function_call_output","call_id":"call_x","output":"r"}]}`},
			{"invalid base64 image", `{"model":"MODEL","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,%%%not-base64%%%"}]}]}`},
			{"10 MB", `{"model":"MODEL","input":"` + big + `"}`},
		},
	}
	for path, list := range cases {
		for _, up := range upstreams {
			for _, c := range list {
				body := strings.ReplaceAll(c.body, "MODEL", up.model)
				hdr := []string{}
				if path == "/v1/messages" {
					hdr = []string{"Authorization", "", "X-Api-Key", gatewayKey, "Anthropic-Version", "2023-06-01"}
				}
				resp, b := post(t, gw+path, []byte(body), hdr...)
				name := path + " " + up.name + " " + c.name
				if resp.StatusCode < 400 || resp.StatusCode >= 500 {
					t.Errorf("%s: status %d: %.200s", name, resp.StatusCode, b)
					continue
				}
				if !json.Valid(b) {
					t.Errorf("%s: body is not JSON: %.200s", name, b)
					continue
				}
				if path == "/v1/messages" {
					if gjson.GetBytes(b, "type").String() != "error" || gjson.GetBytes(b, "error.message").String() == "" {
						t.Errorf("%s: not an Anthropic error: %.200s", name, b)
					}
				} else if gjson.GetBytes(b, "error.message").String() == "" || gjson.GetBytes(b, "type").Exists() {
					t.Errorf("%s: not an OpenAI error: %.200s", name, b)
				}
			}
		}
	}
	if n := m.Stats("oa-key").Requests + m.Stats("an-key").Requests; n != 0 {
		t.Fatalf("%d bad requests went upstream", n)
	}
}
