package caddymodule

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// rawUpstream serves a fixed status, content type and body.
func rawUpstream(t *testing.T, status int, ctype, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestBrokenUpstreamAnswers: redirects, non-JSON 200s and truncated
// streams count against the key and never pass for an answer.
func TestBrokenUpstreamAnswers(t *testing.T) {
	_, good := mock(t, mockupstream.Config{})
	cases := []struct {
		name, base string
		stream     bool
		reason     string
	}{
		{"redirect", rawUpstream(t, 301, "text/html", "<html>moved</html>"), false, "server_error"},
		{"html 200", rawUpstream(t, 200, "text/html", "<html>Welcome to nginx</html>"), false, "server_error"},
		{"truncated stream", rawUpstream(t, 200, "text/event-stream",
			"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The answer is\"},\"finish_reason\":null}]}\n\n"), true, "network_error"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool := fmt.Sprintf("broken%d", i)
			gw := gateway(t, gatewayBlock("\t\tpool "+pool+" {\n\t\t\tkey bad-key-000000 "+c.base+" {\n\t\t\t\tid bad\n\t\t\t}\n\t\t\tkey good-key-00000 "+good+" {\n\t\t\t\tid good\n\t\t\t}\n\t\t}\n"))
			resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", c.stream))
			if c.stream {
				// the client is told the answer was cut short (an error
				// chunk, no [DONE], no finish_reason); the key is blamed
				if resp.StatusCode != 200 || strings.Contains(string(body), "[DONE]") || !strings.Contains(string(body), `data: {"error":`) ||
					strings.Contains(string(body), `"finish_reason":"stop"`) {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
			} else if resp.StatusCode != 200 || resp.Header.Get("X-Routed-Via") != pool+"/good" {
				t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
			}
			if s := keyStatus(t, pool, "bad"); string(s.Reason) != c.reason {
				t.Fatalf("bad key %+v, want reason %s", s, c.reason)
			}
		})
	}
}

// TestEscapedSecretNeverRelayed: an upstream 400 that echoes the key, even
// JSON-escaped, is relayed with the key redacted.
func TestEscapedSecretNeverRelayed(t *testing.T) {
	const secret = "AKIAabc/DEF+ghiJKLmnoPQRstu/vwxyz"
	escaped := strings.ReplaceAll(secret, "/", `\/`)
	base := rawUpstream(t, 400, "application/json", `{"error":{"message":"bad key `+escaped+`","type":"invalid_request_error"}}`)
	t.Setenv("LLMGW_ESCAPED_SECRET", secret)
	gw := gateway(t, gatewayBlock("\t\tpool esc {\n\t\t\tkey {env.LLMGW_ESCAPED_SECRET} "+base+"\n\t\t}\n"))
	resp, body := post(t, gw+"/v1/chat/completions", chatBody("m", "hi", false))
	msg := gjson.GetBytes(body, "error.message").String()
	if resp.StatusCode != 400 || strings.Contains(msg, secret) || strings.Contains(string(body), escaped) || msg != "bad key [redacted]" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// TestDuplicateModelFieldRejected: a body with two "model" fields cannot
// route by one and run the other.
func TestDuplicateModelFieldRejected(t *testing.T) {
	m, base := mock(t, mockupstream.Config{})
	gw := gateway(t, gatewayBlock("\t\tpool dup {\n\t\t\tmodels cheap-*\n\t\t\tkey dup-key "+base+"\n\t\t}\n"))
	for _, b := range []string{
		`{"model":"cheap-1","model":"expensive","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"cheap-1","\u006dodel":"expensive","messages":[{"role":"user","content":"hi"}]}`,
	} {
		resp, body := post(t, gw+"/v1/chat/completions", []byte(b))
		if resp.StatusCode != 400 || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "more than once") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if m.Stats("dup-key").Requests != 0 {
		t.Fatal("went upstream")
	}
}

// TestPoolNameConflict: two sites defining the same pool name with
// different keys is a config error, not a silent outage.
func TestPoolNameConflict(t *testing.T) {
	_, base := mock(t, mockupstream.Config{})
	site := func(port int, key string) string {
		return fmt.Sprintf("http://127.0.0.1:%d {\n%s}\n", port, gatewayBlock("\t\tpool shared {\n\t\t\tkey "+key+" "+base+"\n\t\t}\n"))
	}
	head := "{\n\tadmin off\n\tpersist_config off\n}\n"
	err := loadCaddyfileErr(head + site(freePort(t), "team-a-key") + site(freePort(t), "team-b-key"))
	if err == nil || !strings.Contains(err.Error(), `pool name "shared" is defined twice`) {
		t.Fatalf("err = %v", err)
	}
	// identical definitions may be shared by two sites
	p1, p2 := freePort(t), freePort(t)
	if err := loadCaddyfileErr(head + site(p1, "same-key") + site(p2, "same-key")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = loadCaddyfileErr("{\n\tadmin off\n}\n") })
	for _, p := range []int{p1, p2} {
		if resp, body := post(t, fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", p), chatBody("m", "hi", false)); resp.StatusCode != 200 {
			t.Fatalf("port %d: %d %s", p, resp.StatusCode, body)
		}
	}
}
