package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestEgressConfigMistakes: an unsupported scheme, a missing port, an
// unset placeholder, egress with both a URL and direct, and a bad strategy
// fail at load, naming the file and line, and never show credentials.
func TestEgressConfigMistakes(t *testing.T) {
	os.Unsetenv("LLMGW_UNSET_PROXY_PASS")
	t.Setenv("LLMGW_PROXY_PASS_SET", "pp-secret-0123456789")
	key := "\t\tpool main {\n\t\t\tkey mk-1 http://127.0.0.1:1/v1 {\n\t\t\t\tegress %s\n\t\t\t}\n\t\t}"
	pool := "\t\tpool main {\n\t\t\tkey mk-1 http://127.0.0.1:1/v1\n\t\t\tegress {\n\t\t\t\t%s\n\t\t\t}\n\t\t}"
	cases := []struct {
		name, block, want, line string
	}{
		{"unsupported scheme", fmt.Sprintf(pool, "proxy ftp://127.0.0.1:21"), `unsupported scheme "ftp": want http, https, socks5 or socks5h`, "ftp://"},
		{"missing port", fmt.Sprintf(pool, "proxy socks5://user:{env.LLMGW_PROXY_PASS_SET}@127.0.0.1"), "egress proxy socks5://***@127.0.0.1: the port is missing", "socks5://user"},
		{"unset placeholder", fmt.Sprintf(pool, "proxy http://u:{env.LLMGW_UNSET_PROXY_PASS}@127.0.0.1:3128"), "egress proxy http://***@127.0.0.1:3128: {env.LLMGW_UNSET_PROXY_PASS} is unset or empty", "LLMGW_UNSET_PROXY_PASS"},
		{"key egress with direct and a URL", fmt.Sprintf(key, "direct socks5://127.0.0.1:1080"), "egress: give either direct or a proxy URL, not both", "egress direct"},
		{"pool egress with direct and a URL", "\t\tpool main {\n\t\t\tkey mk-1 http://127.0.0.1:1/v1\n\t\t\tegress direct http://127.0.0.1:3128\n\t\t}", "egress: give either direct or proxy URLs, not both", "egress direct"},
		{"key exit without port", fmt.Sprintf(key, "http://127.0.0.1"), "the port is missing", "egress http"},
		{"bad strategy", fmt.Sprintf(pool, "proxy http://127.0.0.1:3128\n\t\t\t\tstrategy roundrobin"), `egress strategy "roundrobin": want rotate, sticky, random, failover`, "strategy roundrobin"},
		{"unknown subdirective", fmt.Sprintf(pool, "proxy http://127.0.0.1:3128\n\t\t\t\tcooldwn 1s"), "unrecognized egress subdirective 'cooldwn' (did you mean cooldown?)", "cooldwn"},
		{"global list with a path", "\t\tegress {\n\t\t\tproxy http://127.0.0.1:3128/x\n\t\t}\n\t\tpool main {\n\t\t\tkey mk-1 http://127.0.0.1:1/v1\n\t\t}", "a proxy URL has no path, query or fragment", "3128/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf := "{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:1 {\n\tllm_gateway {\n\t\tapi_key k\n" + c.block + "\n\t}\n}\n"
			path, err := loadCaddyfileFileErr(t, cf)
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("error = %q\nwant it to contain %q", msg, c.want)
			}
			if at := fmt.Sprintf("%s:%d", path, lineOf(t, cf, c.line)); !strings.Contains(msg, at) {
				t.Errorf("error = %q\nwant it to point at %q", msg, at)
			}
			if strings.Contains(msg, "pp-secret-0123456789") {
				t.Errorf("error shows a proxy password: %q", msg)
			}
		})
	}
}

// TestEgressJSONConfigMistakes: the same checks hold for a JSON config
// (at provision), and the JSON keeps the placeholders.
func TestEgressJSONConfigMistakes(t *testing.T) {
	os.Unsetenv("LLMGW_UNSET_PROXY_PASS")
	for _, c := range []struct{ egress, want string }{
		{`{"proxies":["socks4://127.0.0.1:1080"]}`, `unsupported scheme "socks4"`},
		{`{"proxies":["http://u:{env.LLMGW_UNSET_PROXY_PASS}@127.0.0.1:3128"]}`, "egress proxy http://***@127.0.0.1:3128: {env.LLMGW_UNSET_PROXY_PASS} is unset or empty"},
		{`{"direct":true,"proxies":["http://127.0.0.1:3128"]}`, "either direct or proxies"},
		{`{"proxies":["http://127.0.0.1:3128","http://127.0.0.1:3128"]}`, "listed twice"},
	} {
		cfg := `{"admin":{"disabled":true},"apps":{"http":{"servers":{"s":{"listen":["127.0.0.1:0"],"routes":[{"handle":[{"handler":"llm_gateway","auth":"off",` +
			`"egress":` + c.egress + `,"pools":[{"name":"main","keys":[{"secret":"mk-1","base_url":"http://127.0.0.1:1/v1"}]}]}]}]}}}}}`
		err := loadJSONErr(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("egress %s: error %v, want %q", c.egress, err, c.want)
		}
	}
}

// TestEgressCaddyfileJSON: the Caddyfile grammar at its three levels
// adapts to the documented JSON, placeholders kept as written.
func TestEgressCaddyfileJSON(t *testing.T) {
	t.Setenv("LLMGW_PX_USER", "pxuser")
	t.Setenv("LLMGW_PX_PASS", "pxpass-0123456789")
	cf := `http://127.0.0.1:1 {
	llm_gateway {
		api_key k
		egress {
			proxy http://127.0.0.1:7890
			proxy socks5://{env.LLMGW_PX_USER}:{env.LLMGW_PX_PASS}@127.0.0.1:1080
			strategy sticky
			cooldown 120s
			connect_timeout 3s
		}
		pool main {
			egress socks5h://127.0.0.1:1081 direct_placeholder
			key mk-1 http://127.0.0.1:1/v1
		}
	}
}`
	cf = strings.Replace(cf, " direct_placeholder", "", 1)
	cf += "\nhttp://127.0.0.1:2 {\n\tllm_gateway {\n\t\tapi_key k\n\t\tpool other {\n\t\t\tegress direct\n" +
		"\t\t\tkey mk-1 http://127.0.0.1:1/v1 {\n\t\t\t\tegress https://127.0.0.1:8443\n\t\t\t}\n\t\t\tkey mk-2 http://127.0.0.1:1/v1 {\n\t\t\t\tegress direct\n\t\t\t}\n\t\t}\n\t}\n}\n"
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		`"egress":{"connect_timeout":3000000000,"cooldown":120000000000,"proxies":["http://127.0.0.1:7890","socks5://{env.LLMGW_PX_USER}:{env.LLMGW_PX_PASS}@127.0.0.1:1080"],"strategy":"sticky"}`,
		`"egress":{"proxies":["socks5h://127.0.0.1:1081"]}`,
		`"egress":{"direct":true}`,
		`"egress":"https://127.0.0.1:8443"`,
		`"egress":"direct"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("adapted JSON lacks %s\n%s", want, s)
		}
	}
	if strings.Contains(s, "pxpass-0123456789") || strings.Contains(s, "pxuser") {
		t.Fatalf("the adapted JSON holds resolved credentials: %s", s)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
}

// TestEgressPlanOrder: the strategies rank healthy exits; cooling exits
// are skipped; with all cooling, the soonest-recovering one alone; exits
// that failed in the request are left out.
func TestEgressPlanOrder(t *testing.T) {
	a, b, c := &egressExit{name: "a"}, &egressExit{name: "b"}, &egressExit{name: "c"}
	names := func(es []*egressExit) string {
		var s []string
		for _, e := range es {
			s = append(s, e.name)
		}
		return strings.Join(s, ",")
	}
	pl := &egressPlan{exits: []*egressExit{a, b, c}, strategy: "rotate"}
	var got []string
	for i := 0; i < 4; i++ {
		got = append(got, names(pl.orderInto(nil, "", nil)))
	}
	if want := "a,b,c b,c,a c,a,b a,b,c"; strings.Join(got, " ") != want {
		t.Fatalf("rotate: %q, want %q", got, want)
	}
	pl.strategy = "random"
	starts := map[string]bool{}
	for i := 0; i < 200; i++ {
		o := pl.orderInto(nil, "", nil)
		if len(o) != 3 {
			t.Fatalf("random: %q", names(o))
		}
		starts[o[0].name] = true
	}
	if len(starts) != 3 {
		t.Fatalf("random: 200 requests started on %v only", starts)
	}
	pl.strategy = "failover"
	b.coolUntil = time.Now().Add(time.Minute)
	if got := names(pl.orderInto(nil, "", nil)); got != "a,c" {
		t.Fatalf("failover with b cooling: %q", got)
	}
	if got := names(pl.orderInto(nil, "", []*egressExit{a})); got != "c" {
		t.Fatalf("failover with a failed in the request: %q", got)
	}
	pl.strategy = "sticky"
	first := names(pl.orderInto(nil, "session-1", nil))
	for i := 0; i < 10; i++ {
		if got := names(pl.orderInto(nil, "session-1", nil)); got != first {
			t.Fatalf("sticky: %q then %q", first, got)
		}
	}
	a.coolUntil = time.Now().Add(3 * time.Minute)
	c.coolUntil = time.Now().Add(2 * time.Minute)
	if got := names(pl.orderInto(nil, "", nil)); got != "b" {
		t.Fatalf("all cooling: %q, want the soonest-recovering b", got)
	}
	if got := names(pl.orderInto(nil, "", []*egressExit{b})); got != "" {
		t.Fatalf("all cooling, b failed already: %q, want none", got)
	}
	if !pl.exhausted([]*egressExit{a, b, c}) || pl.exhausted([]*egressExit{a, c}) {
		t.Fatal("exhausted")
	}
}

// TestMaskProxyURL: credentials never show.
func TestMaskProxyURL(t *testing.T) {
	for in, want := range map[string]string{
		"socks5://{env.U}:{env.P}@10.0.0.2:1080": "socks5://***@10.0.0.2:1080",
		"http://user:p@ss@127.0.0.1:3128/":       "http://***@127.0.0.1:3128",
		"https://127.0.0.1:8443":                 "https://127.0.0.1:8443",
		"direct":                                 "direct",
		"garbage":                                "(unparsable proxy URL)",
	} {
		if got := maskProxyURL(in); got != want {
			t.Errorf("maskProxyURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// loadJSONErr loads a JSON config and returns the error (stopping Caddy
// when it loaded).
func loadJSONErr(cfg string) error {
	err := caddy.Load([]byte(cfg), true)
	_ = caddy.Stop()
	return err
}
