package caddymodule

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// TestHashGatewayKeyForm: the sha256: form is the SHA-256 of the trimmed
// token, in lower-case hex (known answer for "abc", FIPS 180-2).
func TestHashGatewayKeyForm(t *testing.T) {
	const abc = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	for _, in := range []string{"abc", " abc\n", "abc\r\n"} {
		if got := hashGatewayKey(in); got != abc {
			t.Fatalf("hashGatewayKey(%q) = %s", in, got)
		}
	}
	var out bytes.Buffer
	if err := hashKeyCommand(strings.NewReader("abc\n"), &out, false); err != nil || out.String() != abc+"\n" {
		t.Fatalf("command: %v %q", err, out.String())
	}
	out.Reset()
	if err := hashKeyCommand(strings.NewReader("\n"), &out, false); err == nil || out.Len() != 0 {
		t.Fatalf("empty input: %v %q", err, out.String())
	}
	out.Reset()
	if err := hashKeyCommand(nil, &out, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "sk-gw-") || len(lines[0]) != 6+43 || lines[1] != hashGatewayKey(lines[0]) {
		t.Fatalf("generate: %q", out.String())
	}
	if c, ok := caddycmd.Commands()["llm-gateway-hash-key"]; !ok || c.Func == nil {
		t.Fatal("caddy llm-gateway-hash-key is not registered")
	}
}

// TestHashedGatewayKey: a gateway key written as sha256:<hex> accepts its
// token (Bearer or x-api-key) and nothing else, keeps its scope, and
// neither GET /config/, autosave.json nor the log holds the token.
func TestHashedGatewayKey(t *testing.T) {
	const token = "sk-gw-hashed-0123456789abcdefXYZ"
	const team = "sk-gw-team-key-abcdefghij0123456"
	hash, teamHash := hashGatewayKey(token), strings.ToUpper(hashGatewayKey(team)[7:])
	_, base := mock(t, mockupstream.Config{})
	port, aport := freePort(t), freePort(t)
	dir := t.TempDir()
	appLog := filepath.Join(dir, "app.log")
	// the autosave path is fixed when caddy initialises: point it here
	saved := caddy.ConfigAutosavePath
	caddy.ConfigAutosavePath = filepath.Join(dir, "autosave.json")
	t.Cleanup(func() { caddy.ConfigAutosavePath = saved })
	cf := fmt.Sprintf("{\n\tadmin 127.0.0.1:%d\n\tgrace_period 1ns\n\tlog {\n\t\toutput file %s\n\t\tformat json\n\t}\n}\n"+
		"http://127.0.0.1:%d {\n\tllm_gateway {\n\t\tapi_key %s\n\t\tapi_key sha256:%s {\n\t\t\tid team\n\t\t\tmodels mock-*\n\t\t}\n"+
		"\t\tpool hk {\n\t\t\tkey up-key-0123456789 %s\n\t\t}\n\t}\n}\n", aport, appLog, port, hash, teamHash, base)
	loadCaddyfile(t, cf)
	t.Cleanup(func() { _ = caddy.Stop() })
	gw := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port)

	for _, c := range []struct {
		name, header, value, model string
		want                       int
	}{
		{"bearer", "Authorization", "Bearer " + token, "mock-gpt", 200},
		{"x-api-key", "X-Api-Key", token, "mock-gpt", 200},
		{"scoped key, in scope", "Authorization", "Bearer " + team, "mock-gpt", 200},
		{"scoped key, out of scope", "Authorization", "Bearer " + team, "gpt-4o", 403},
		{"the hash itself", "Authorization", "Bearer " + hash, "mock-gpt", 401},
		{"the hex alone", "Authorization", "Bearer " + hash[7:], "mock-gpt", 401},
		{"one character more", "Authorization", "Bearer " + token + "x", "mock-gpt", 401},
		{"one character less", "Authorization", "Bearer " + token[:len(token)-1], "mock-gpt", 401},
		{"other case", "X-Api-Key", strings.ToUpper(token), "mock-gpt", 401},
	} {
		resp, body := post(t, gw, chatBody(c.model, "hi", false), "Authorization", "", c.header, c.value)
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.want, body)
		}
	}

	code, cfg := adminDo(t, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/config/", aport))
	if code != 200 || !bytes.Contains(cfg, []byte(hash)) || !bytes.Contains(cfg, []byte("sha256:"+teamHash)) {
		t.Fatalf("GET /config/: %d %s", code, cfg)
	}
	autosave, err := os.ReadFile(caddy.ConfigAutosavePath)
	if err != nil || !bytes.Contains(autosave, []byte(hash)) {
		t.Fatalf("autosave.json: %v %s", err, autosave)
	}
	logged, err := os.ReadFile(appLog)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"/config/": cfg, "autosave.json": autosave, "log": logged} {
		if bytes.Contains(b, []byte(token)) || bytes.Contains(b, []byte(team)) || bytes.Contains(b, []byte(token[:16])) {
			t.Errorf("%s holds a gateway token", name)
		}
	}
	// the request log names the keys by the hash's first 8 digits, or id
	if !bytes.Contains(logged, []byte(`"gateway_key":"`+hash[:15]+`"`)) || !bytes.Contains(logged, []byte(`"gateway_key":"team"`)) {
		t.Errorf("log lacks the gateway key labels %s / team:\n%s", hash[:15], logged)
	}
	if bytes.Contains(logged, []byte("written literally")) {
		t.Errorf("hashed keys were warned about as literal")
	}
}

// TestGatewayKeyHashErrors: a malformed hash and a key given both plain
// and hashed are load errors that do not show the value; a key written
// literally is warned about.
func TestGatewayKeyHashErrors(t *testing.T) {
	const token = "sk-gw-dup-0123456789abcdef"
	site := func(keys string) string {
		return fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n}\nhttp://127.0.0.1:%d {\n\tllm_gateway {\n%s\t\tpool e {\n\t\t\tkey k-0123456789 http://127.0.0.1:9/v1\n\t\t}\n\t}\n}\n",
			freePort(t), keys)
	}
	err := loadCaddyfileErr(site("\t\tapi_key sha256:0123abcd\n"))
	if err == nil || !strings.Contains(err.Error(), "api_key 1: a hashed key is sha256: followed by 64 hex digits") || strings.Contains(err.Error(), "0123abcd") {
		t.Fatalf("short hash: %v", err)
	}
	err = loadCaddyfileErr(site("\t\tapi_key sha256:" + strings.Repeat("zz", 32) + "\n"))
	if err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Fatalf("non-hex hash: %v", err)
	}
	err = loadCaddyfileErr(site("\t\tapi_key " + token + "\n\t\tapi_key " + hashGatewayKey(token) + "\n"))
	if err == nil || !strings.Contains(err.Error(), "configured twice") || strings.Contains(err.Error(), token) {
		t.Fatalf("same key plain and hashed: %v", err)
	}
	_ = caddy.Stop()
}
