package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// envNodeModules names a directory whose node_modules holds the Node SDKs
// TestNodeSDKs runs: openai, @anthropic-ai/sdk, and (optional) Vercel's ai
// with @ai-sdk/openai and @ai-sdk/anthropic. .ci/node-sdk.sh installs them
// into a temporary directory and runs the test with it.
const envNodeModules = "LLMGW_NODE_MODULES"

// nodeWant is what one Node SDK call must see: the answer (text, tool
// calls, the stop reason in the client's dialect, usage) or a failure
// (an API error with its status, or an in-stream error).
type nodeWant struct {
	Text     string     `json:"text"`
	Refusal  string     `json:"refusal,omitempty"`
	Thinking *string    `json:"thinking,omitempty"` // nil: not checked
	Calls    []nodeCall `json:"calls"`
	Stop     string     `json:"stop"`
	Reason   string     `json:"reason,omitempty"` // Responses incomplete_details.reason
	StopSeq  string     `json:"stopSeq,omitempty"`
	Usage    bool       `json:"usage"`
	Input    int64      `json:"input"`
	Output   int64      `json:"output"`
	// a failure: Status > 0 for an HTTP error, Fail for an in-stream one
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Fail    bool   `json:"fail,omitempty"`
}

type nodeCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// nodeCase is one call of the harness: client is chat, responses or
// anthropic (the official SDKs) or ai-chat, ai-responses, ai-anthropic
// (Vercel's ai SDK with its OpenAI and Anthropic providers).
type nodeCase struct {
	Name   string   `json:"name"`
	Client string   `json:"client"`
	Model  string   `json:"model"`
	Stream bool     `json:"stream"`
	Tools  []string `json:"tools"`
	Want   nodeWant `json:"want"`
}

// clientWant renders a fixture's truth in client dialect cd (chat,
// anthropic, responses) for an upstream of dialect up (openai, anthropic,
// responses), per MAPPING.md §3.3.
func clientWant(up, cd string, tr wireTruth) nodeWant {
	w := nodeWant{Text: tr.text, Usage: tr.hasUsage, Input: tr.input, Output: tr.output}
	for _, c := range tr.calls {
		args := c.args
		if args == "" {
			args = "{}"
		}
		w.Calls = append(w.Calls, nodeCall{c.id, c.name, args})
	}
	stop, fromResponses := tr.stop, up == "responses" // (a Responses truth has no reasoning text)
	if up == "openai" && tr.refusal != "" && tr.stop == "stop" && cd != "chat" {
		// an Anthropic client's answer stops for a refusal; a Responses
		// client's is completed with its refusal part, as OpenAI ends one
		w.Text = tr.text + tr.refusal
		if cd == "anthropic" {
			stop = "content_filter"
		}
	}
	if up == "responses" {
		// tr.stop holds status/reason
		st, reason, _ := strings.Cut(stop, "/")
		switch {
		case st == "incomplete" && reason == "max_output_tokens":
			stop = "length"
		case len(tr.calls) > 0:
			stop = "tool_calls"
		default:
			stop = "stop"
		}
		up = "openai"
	}
	switch cd {
	case "chat":
		w.Stop = chatStopFor(up, stop)
		if up == "openai" {
			w.Refusal = tr.refusal
		}
		if !fromResponses {
			w.Thinking = &tr.thinking
		}
	case "anthropic":
		w.Stop, w.StopSeq = anthropicStopFor(up, stop), tr.stopSeq
		if !fromResponses {
			w.Thinking = &tr.thinking
		}
	case "responses":
		w.Stop, w.Reason = responsesStatusFor(up, stop)
	}
	if up == "openai" && cd == "anthropic" {
		w.StopSeq = ""
	}
	return w
}

// TestNodeSDKs runs the official Node SDKs (openai, @anthropic-ai/sdk) and
// Vercel's ai SDK through the gateway against replays of every healthy
// fixture (testdata/ and ../shared/fixtures), upstream errors (400, 401,
// 429 with Retry-After, 500) and failing streams: testdata/node-sdk/
// harness.cjs calls each and prints what differs from the fixture. It is
// skipped unless LLMGW_NODE_MODULES is set; .ci/node-sdk.sh sets it.
func TestNodeSDKs(t *testing.T) {
	modules := os.Getenv(envNodeModules)
	if modules == "" {
		t.Skipf("opt-in: set %s to a directory with node_modules (.ci/node-sdk.sh does)", envNodeModules)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not on PATH", envNodeModules)
	}
	harness, err := filepath.Abs(filepath.Join("..", "testdata", "node-sdk", "harness.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	m, base := mock(t, mockupstream.Config{})
	root := strings.TrimSuffix(base, "/v1")
	var cf strings.Builder
	cf.WriteString("\tllm_gateway {\n\t\tapi_key " + gatewayKey + "\n")
	n := 0
	// addPool adds a pool of one key of dialect up answering with b and
	// returns the model that selects it
	addPool := func(up string, b mockupstream.KeyBehavior) string {
		n++
		u := base
		if up == "anthropic" {
			u = root
		}
		fmt.Fprintf(&cf, "\t\tpool p%d {\n\t\t\tmodels m-%d\n\t\t\tkey k-%d %s {\n\t\t\t\tid k\n\t\t\t\tdialect %s\n\t\t\t}\n\t\t}\n", n, n, n, u, up)
		m.SetKey(fmt.Sprintf("k-%d", n), b)
		return fmt.Sprintf("m-%d", n)
	}
	clients := []string{"chat", "anthropic", "responses", "ai-chat", "ai-anthropic", "ai-responses"}
	var cases []nodeCase
	addHealthy := func(name, up string, body []byte, stream bool, tr wireTruth) {
		ct := map[bool]string{true: "text/event-stream; charset=utf-8", false: "application/json"}[stream]
		var tools []string
		for _, c := range tr.calls {
			if !slices.Contains(tools, c.name) {
				tools = append(tools, c.name)
			}
		}
		for _, cl := range clients {
			if strings.HasPrefix(cl, "ai-") && tr.choices > 1 {
				continue // the ai SDK reads one choice: it merges n > 1 streams itself
			}
			// a key per case: a replay is stateless, but a key that
			// failed once would decide the next case
			model := addPool(up, mockupstream.KeyBehavior{ReplayBody: body, ReplayContentType: ct})
			cases = append(cases, nodeCase{name + "/" + cl, cl, model, stream, tools, clientWant(up, strings.TrimPrefix(cl, "ai-"), tr)})
		}
	}
	for _, f := range wireFixtures(t) {
		addHealthy(f.name, f.dialect, f.body, f.stream, wireTruthOf(t, f))
	}
	if dir, err := filepath.Abs(filepath.Join("..", "..", "shared", "fixtures", "openai-responses")); err == nil {
		if _, err := os.Stat(dir); err == nil {
			for _, f := range responsesFixtures(t, dir) {
				if f.status != 200 {
					continue
				}
				rt := truthOf(t, f)
				tr := wireTruth{text: rt.text, stop: rt.status + "/" + rt.reason, input: rt.input, output: rt.output, hasUsage: true}
				for _, c := range rt.calls {
					tr.calls = append(tr.calls, c)
				}
				addHealthy("openai-responses/"+f.name, "responses", f.body, f.stream, tr)
			}
		}
	}
	for _, up := range []string{"openai", "anthropic", "responses"} {
		for _, st := range []int{400, 401, 429, 500} {
			w := map[int]nodeWant{400: {Status: 400, Message: "Invalid request."}, 401: {Status: 503, Message: "no key available"},
				429: {Status: 429, Message: "rate limited"}, 500: {Status: 502, Message: "upstream error"}}[st]
			for _, cl := range clients {
				for _, stream := range []bool{false, true} {
					model := addPool(up, mockupstream.KeyBehavior{Status: st})
					cases = append(cases, nodeCase{fmt.Sprintf("%s-%d/%s/%v", up, st, cl, stream), cl, model, stream, nil, w})
				}
			}
		}
	}
	for _, sub := range []string{"openai-chat", "anthropic-messages", "openai-responses"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", sub, "stream-errors", "*.sse"))
		up := map[string]string{"openai-chat": "openai", "anthropic-messages": "anthropic", "openai-responses": "responses"}[sub]
		for _, p := range files {
			body, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			w := nodeWant{Fail: true}
			if strings.Contains(p, "before-content") {
				w = nodeWant{Status: 429} // a rate limit before content: every attempt a 429
				if up == "anthropic" {
					w.Status = 502 // an overloaded_error: one attempt, then 502
				}
			}
			for _, cl := range clients {
				model := addPool(up, mockupstream.KeyBehavior{ReplayBody: body, ReplayContentType: "text/event-stream"})
				cases = append(cases, nodeCase{sub + "/" + filepath.Base(p) + "/" + cl, cl, model, true, nil, w})
			}
		}
	}
	cf.WriteString("\t}\n")
	gw := gateway(t, cf.String())

	plan, err := json.Marshal(map[string]any{"base": gw, "key": gatewayKey, "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, plan, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, harness, planFile)
	cmd.Env = append(os.Environ(), "NODE_SDK_MODULES="+modules)
	out, err := cmd.CombinedOutput()
	t.Logf("%d cases\n%s", len(cases), out)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
}
