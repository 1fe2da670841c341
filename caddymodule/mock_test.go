package caddymodule

// The tests run the mock upstream as a Caddy module in some Caddyfiles
// (llm_mock_upstream); it is registered by its own package, which the
// product package does not import.

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	_ "github.com/llmgateway/llm_gateway/mockupstream/caddymock"
)

// TestMockModuleOutsideProductPackage: the gateway's package (without its
// tests) does not depend on the mock upstream, while the tests do have the
// llm_mock_upstream module.
func TestMockModuleOutsideProductPackage(t *testing.T) {
	if _, err := caddy.GetModule("http.handlers.llm_mock_upstream"); err != nil {
		t.Fatalf("mock module not registered for the tests: %v", err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !strings.Contains(string(out), "github.com/caddyserver/caddy/v2\n") {
		t.Fatalf("go list -deps listed %d packages, without Caddy", len(deps))
	}
	for _, d := range deps {
		if strings.Contains(d, "/mockupstream") {
			t.Errorf("caddymodule depends on %s", d)
		}
	}
}
