package caddymodule

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
)

// gatewayPoolFields are the PoolConfig fields the gateway itself consumes
// (provisionPool); every other PoolConfig field must reach
// keypool.Settings by name (TestPoolSettingsOneDefinition).
var gatewayPoolFields = map[string]bool{
	"Priority": true, "Name": true, "Models": true, "Refresh": true, "ModelMap": true, "DefaultModel": true,
	"Keys": true, "MaxRetries": true, "AcquireTimeout": true, "RequestTimeout": true, "AttemptTimeout": true,
	"ConnectTimeout": true, "ReasoningContent": true, "TotalTimeout": true, "Budget": true, "Egress": true,
	"StreamIdleTimeout": true,
	"Prices":            true,
	"Affinity":          true, // as AffinityTTL, through Affinity.TTL
	"LearnLimits":       true, // as LearnLimitsOff
}

// keypoolOnlySettings are keypool.Settings fields the gateway does not
// expose (tuning left at keypool's defaults).
var keypoolOnlySettings = map[string]bool{
	"RateLimitWindow": true, "ModelNotFoundThreshold": true, "ModelNotFoundWindow": true, "ModelNotFoundCooldown": true,
	"ProbeBackoff": true, "MaxProbeBackoff": true, "AffinityTTL": true, "UsageWindow": true,
	"LatencyAlpha": true, "LatencyExplore": true, "PaceLead": true,
	"LearnLimitsOff": true, // from PoolConfig.LearnLimits (and Handler.LearnLimits)
}

// TestPoolSettingsOneDefinition: a pool setting is one PoolConfig field;
// it reaches keypool.Settings by its name, or is one the gateway consumes
// itself. A new field that is neither fails here rather than being
// silently ignored.
func TestPoolSettingsOneDefinition(t *testing.T) {
	pt, st := reflect.TypeOf(PoolConfig{}), reflect.TypeOf(keypool.Settings{})
	mapped := map[string]bool{}
	for i, j := range poolSettingFields {
		if j >= 0 {
			mapped[pt.Field(j).Name] = true
			if pt.Field(j).Name != st.Field(i).Name {
				t.Errorf("Settings.%s mapped from PoolConfig.%s", st.Field(i).Name, pt.Field(j).Name)
			}
		} else if !keypoolOnlySettings[st.Field(i).Name] {
			t.Errorf("keypool.Settings.%s has no PoolConfig field of that name: add one (json tag and doc) or list it in keypoolOnlySettings", st.Field(i).Name)
		}
	}
	for i := 0; i < pt.NumField(); i++ {
		name := pt.Field(i).Name
		if mapped[name] == gatewayPoolFields[name] {
			t.Errorf("PoolConfig.%s: mapped to keypool %v, consumed by the gateway %v; want exactly one", name, mapped[name], gatewayPoolFields[name])
		}
	}
	if len(mapped) != 16 {
		t.Errorf("%d PoolConfig fields reach keypool.Settings, want 16", len(mapped))
	}
}

// TestPoolSettingsConversion: every keypool setting written in a Caddyfile
// arrives in keypool.Settings with its value and unit.
func TestPoolSettingsConversion(t *testing.T) {
	input := `llm_gateway {
		pool p {
			max_concurrency_per_key 4
			cooldown_after_success 250ms
			rate_limit_cooldown 2s
			error_cooldown 7s
			max_cooldown 20m
			failure_threshold 6
			breaker_open 45s
			strategy least_used
			least_used_by tokens
			affinity 2h
			affinity_max_entries 500
			max_hint_cooldown 12h
			invalid_key_cooldown 6m
			no_credit_cooldown 1d
			forbidden_cooldown 3h
			provisional_cooldown 90s
			probe_timeout 4s
			key sk-x http://127.0.0.1:1
		}
	}`
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
		t.Fatal(err)
	}
	got, err := poolSettings(h.Pools[0])
	if err != nil {
		t.Fatal(err)
	}
	want := keypool.Settings{
		MaxConcurrencyPerKey: 4, CooldownAfterSuccess: 250 * time.Millisecond, RateLimitCooldown: 2 * time.Second,
		ErrorCooldown: 7 * time.Second, MaxCooldown: 20 * time.Minute, FailureThreshold: 6, BreakerOpen: 45 * time.Second,
		Strategy: "least_used", LeastUsedBy: "tokens", AffinityTTL: 2 * time.Hour, AffinityMaxEntries: 500,
		MaxHintCooldown: 12 * time.Hour, InvalidKeyCooldown: 6 * time.Minute, NoCreditCooldown: 24 * time.Hour,
		ForbiddenCooldown: 3 * time.Hour, ProvisionalCooldown: 90 * time.Second, ProbeTimeout: 4 * time.Second,
	}
	if got != want {
		t.Errorf("settings\n got %+v\nwant %+v", got, want)
	}
	// zero values stay zero: keypool applies its defaults
	zero, err := poolSettings(&PoolConfig{})
	if err != nil || zero != (keypool.Settings{}) {
		t.Errorf("empty pool: %+v, %v; want the zero Settings", zero, err)
	}
	off, err := poolSettings(&PoolConfig{Affinity: AffinityOff})
	if err != nil || off.AffinityTTL != -1 {
		t.Errorf("affinity off: ttl %v, %v; want -1", off.AffinityTTL, err)
	}
	for _, c := range []struct {
		pc   PoolConfig
		want string
	}{
		{PoolConfig{Affinity: "soon"}, `affinity "soon": want a duration or off`},
		{PoolConfig{Strategy: "fastest"}, `unknown strategy "fastest"`},
		{PoolConfig{LeastUsedBy: "bytes"}, `least_used counts "bytes": want requests or tokens`},
	} {
		if _, err := poolSettings(&c.pc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.pc, err, c.want)
		}
	}
}

// TestPoolDefaultsDocumented: the "Default:" each PoolConfig doc comment
// states for a keypool setting is keypool's default
// (keypool.DefaultSettings), so the defaults are defined once and the
// docs cannot drift from them.
func TestPoolDefaultsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "PoolConfig" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			docs[fld.Names[0].Name] = fld.Doc.Text()
		}
		return false
	})
	def := reflect.ValueOf(keypool.DefaultSettings())
	re := regexp.MustCompile(`Default: "?([A-Za-z0-9_]+)"?`)
	pt := reflect.TypeOf(PoolConfig{})
	checked := 0
	for i, j := range poolSettingFields {
		if j < 0 {
			continue
		}
		name := pt.Field(j).Name
		m := re.FindStringSubmatch(docs[name])
		if m == nil {
			t.Errorf("PoolConfig.%s: no \"Default: ...\" in its doc comment", name)
			continue
		}
		checkDefault(t, name, m[1], def.Field(i))
		checked++
	}
	m := re.FindStringSubmatch(docs["Affinity"])
	if m == nil {
		t.Fatal("PoolConfig.Affinity: no default documented")
	}
	checkDefault(t, "Affinity", m[1], def.FieldByName("AffinityTTL"))
	if checked != 16 {
		t.Errorf("checked %d documented defaults, want 16", checked)
	}
	// the gateway's own pool settings: their defaults are the Default*
	// constants provisionPool and discovery apply
	for field, v := range map[string]any{
		"AcquireTimeout": DefaultAcquireTimeout, "RequestTimeout": DefaultRequestTimeout, "StreamIdleTimeout": DefaultStreamIdleTimeout,
		"AttemptTimeout": DefaultAttemptTimeout, "ConnectTimeout": DefaultConnectTimeout,
		"TotalTimeout": DefaultTotalTimeout, "MaxRetries": DefaultMaxRetries, "Refresh": DefaultRefresh,
	} {
		m := re.FindStringSubmatch(docs[field])
		if m == nil {
			t.Errorf("PoolConfig.%s: no \"Default: ...\" in its doc comment", field)
			continue
		}
		checkDefault(t, field, m[1], reflect.ValueOf(v))
	}
}

func checkDefault(t *testing.T, field, doc string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		if v.String() != doc {
			t.Errorf("PoolConfig.%s documents default %q, keypool's is %q", field, doc, v.String())
		}
	case reflect.Int:
		n, err := strconv.Atoi(doc)
		if err != nil || int64(n) != v.Int() {
			t.Errorf("PoolConfig.%s documents default %q, keypool's is %d", field, doc, v.Int())
		}
	case reflect.Int64: // time.Duration
		d, err := caddy.ParseDuration(doc)
		if err != nil || int64(d) != v.Int() {
			t.Errorf("PoolConfig.%s documents default %q, keypool's is %v", field, doc, time.Duration(v.Int()))
		}
	default:
		t.Errorf("PoolConfig.%s: unexpected kind %s", field, v.Kind())
	}
}

// TestGenericOptionsRoundTrip: every generic Caddyfile option of every
// block parses from one sample value into the JSON field of the same
// name, and the JSON decodes back into an equal config.
func TestGenericOptionsRoundTrip(t *testing.T) {
	typed := map[reflect.Type][2]string{
		reflect.TypeOf(Affinity("")):        {"2h", `"2h"`},
		reflect.TypeOf(ReasoningSwitch("")): {"off", `"off"`},
		reflect.TypeOf(LearnSwitch("")):     {"off", `"off"`},
		reflect.TypeOf(AuthMode("")):        {"off", `"off"`},
		reflect.TypeOf(KeyDialect("")):      {"responses", `"responses"`},
		reflect.TypeOf(PreferEndpoint("")):  {"anthropic", `"anthropic"`},
		reflect.TypeOf(QuotaSpec("")):       {"10 requests per 1h", `"10 requests per 1h"`},
		reflect.TypeOf(EgressExit("")):      {"socks5://127.0.0.1:1080", `"socks5://127.0.0.1:1080"`},
	}
	sample := func(ft reflect.Type, of optionField) (arg string, want string) {
		if s, ok := typed[ft]; ok {
			return s[0], s[1]
		}
		switch {
		case ft == durationType:
			return "1500ms", "1500000000"
		case of.size:
			return "3MiB", "3145728"
		case ft.Kind() == reflect.Int, ft.Kind() == reflect.Int64, ft.Kind() == reflect.Pointer:
			return "7", "7"
		case ft.Kind() == reflect.String:
			return "http://127.0.0.1:5/x", `"http://127.0.0.1:5/x"`
		case ft.Kind() == reflect.Bool:
			return "", "true"
		case ft.Kind() == reflect.Slice:
			return "a b", `["a","b"]`
		}
		t.Fatalf("no sample for %s", ft)
		return "", ""
	}
	for _, cfg := range []any{&Handler{}, &PoolConfig{}, &KeyConfig{}, &GatewayKeyConfig{}} {
		rt := reflect.TypeOf(cfg).Elem()
		table, names := optionTable(rt)
		if len(names) == 0 {
			t.Fatalf("%s: no generic options", rt.Name())
		}
		for _, name := range names {
			of := table[name]
			arg, want := sample(rt.Field(of.index).Type, of)
			v := reflect.New(rt)
			d := caddyfile.NewTestDispenser(strings.TrimSpace(name + " " + arg))
			d.Next()
			ok, err := setOption(d, v.Interface())
			if !ok || err != nil {
				t.Errorf("%s %s: ok %v err %v", rt.Name(), name, ok, err)
				continue
			}
			b, _ := json.Marshal(v.Interface())
			if got := gjson.GetBytes(b, name).Raw; got != want {
				t.Errorf("%s %s %s: JSON %s, want %s (%s)", rt.Name(), name, arg, got, want, b)
			}
			back := reflect.New(rt)
			if err := json.Unmarshal(b, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), v.Elem().Interface()) {
				t.Errorf("%s %s: JSON round trip %v", rt.Name(), name, err)
			}
		}
	}
}

// TestTypedConfigValues: each typed value accepts its documented values
// in JSON (MarshalText gives the same bytes back) and refuses others with
// a message naming the option.
func TestTypedConfigValues(t *testing.T) {
	cases := []struct {
		v    interface{ MarshalText() ([]byte, error) }
		ok   []string
		bad  string
		want string
	}{
		{new(AuthMode), []string{"", "on", "off"}, "maybe", "auth: want 'off' or 'on', got 'maybe'"},
		{new(Affinity), []string{"", "off", "30m", "1d"}, "0s", `affinity "0s": want a duration or off`},
		{new(ReasoningSwitch), []string{"", "on", "off"}, "yes", "reasoning_content: want on or off, got 'yes'"},
		{new(LearnSwitch), []string{"", "on", "off"}, "auto", "learn_limits: want on or off, got 'auto'"},
		{new(KeyDialect), []string{"", "openai", "anthropic", "responses", "openai_responses"}, "gemini", "dialect: want openai, anthropic or responses, got 'gemini'"},
		{new(PreferEndpoint), []string{"", "auto", "openai", "anthropic", "responses"}, "chat", "prefer: want auto, openai, anthropic or responses, got 'chat'"},
		{new(QuotaSpec), []string{"", "1000 requests per 24h", "5 requests and 900 tokens per 1h"}, "many per day", `quota "many per day"`},
		{new(StateBackend), []string{"", "memory", "redis"}, "etcd", "state: want 'memory' or 'redis', got 'etcd'"},
	}
	for _, c := range cases {
		for _, s := range c.ok {
			in, _ := json.Marshal(s)
			if err := json.Unmarshal(in, c.v); err != nil {
				t.Errorf("%T %q: %v", c.v, s, err)
				continue
			}
			if out, _ := json.Marshal(c.v); string(out) != string(in) {
				t.Errorf("%T %q: marshals to %s", c.v, s, out)
			}
		}
		in, _ := json.Marshal(c.bad)
		if err := json.Unmarshal(in, c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%T %q: err %v, want %q", c.v, c.bad, err, c.want)
		}
	}
	if ttl, _ := Affinity("").TTL(); ttl != 0 {
		t.Errorf("affinity \"\": %v, want 0 (keypool's default)", ttl)
	}
	if q, err := QuotaSpec("1000 requests per 24h").Quota(); err != nil || q.Requests != 1000 || q.Period != 24*time.Hour {
		t.Errorf("quota: %+v %v", q, err)
	}
	if DialectOpenAIResponses.canonical() != DialectResponses || DialectOpenAI.canonical() != DialectOpenAI {
		t.Error("openai_responses is not folded into responses")
	}
}

// TestCaddyfileTypedValueErrors: the Caddyfile refuses a bad typed value
// at its line with the type's message.
func TestCaddyfileTypedValueErrors(t *testing.T) {
	for _, c := range []struct{ input, want string }{
		{"llm_gateway {\n pool p {\n affinity soon\n }\n}", `affinity "soon": want a duration or off, at Testfile:3`},
		{"llm_gateway {\n pool p {\n reasoning_content maybe\n }\n}", "reasoning_content: want on or off, got 'maybe', at Testfile:3"},
		{"llm_gateway {\n pool p {\n key sk-x http://a {\n quota lots\n }\n }\n}", `quota "lots"`},
		{"llm_gateway {\n pool p {\n key sk-x http://a {\n quota\n }\n }\n}", "quota needs a value, e.g. quota 1000 requests per 24h"},
		{"llm_gateway {\n pool p {\n priority high\n }\n}", "priority: want an integer, got 'high'"},
		{"llm_gateway {\n max_buffered_bytes lots\n}", "max_buffered_bytes: bad size 'lots'"},
		{"llm_gateway {\n log_payloads yes\n}", "wrong argument count"},
		{"llm_gateway {\n state etcd\n}", "state: want 'memory' or 'redis', got 'etcd'"},
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.input, err, c.want)
		}
	}
}
