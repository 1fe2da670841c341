package translate

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// fixturesDir finds ../shared/fixtures relative to the repository root (the
// directory holding go.mod). When it is absent the test is skipped, or
// fails when CI=true.
func fixturesDir(t testing.TB) string {
	t.Helper()
	if fx := findFixtures(); fx != "" {
		return fx
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("fixtures folder ../shared/fixtures (relative to the repository root) not found; it is required when CI=true")
	}
	t.Skip("fixtures folder ../shared/fixtures (relative to the repository root) not found; skipping fixture tests")
	return ""
}

// findFixtures returns the fixtures folder, or "" when it is absent.
func findFixtures() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			dir = ""
			break
		}
		dir = parent
	}
	if dir != "" {
		fx := filepath.Join(dir, "..", "shared", "fixtures")
		if st, err := os.Stat(fx); err == nil && st.IsDir() {
			return fx
		}
	}
	return ""
}

// streamFixture is one recorded upstream stream, rebuilt as SSE bytes.
type streamFixture struct {
	name    string
	dialect Dialect
	body    []byte
}

func dialectDir(d Dialect) string {
	switch d {
	case OpenAIChat:
		return "openai-chat"
	case AnthropicMessages:
		return "anthropic-messages"
	}
	return "openai-responses"
}

// streamFixtures returns every recorded stream of dialect d: *.sse files,
// extracted/*/NN.response.sse, and *.chunks.txt rebuilt into SSE framing
// (one stream per file; a chunks file holding several consecutive streams
// is split at each terminal event).
func streamFixtures(t testing.TB, d Dialect) []streamFixture {
	t.Helper()
	root := filepath.Join(fixturesDir(t), dialectDir(d))
	var out []streamFixture
	err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".sse"):
			out = append(out, streamFixture{rel, d, b})
		case strings.HasSuffix(p, ".chunks.txt"):
			for i, s := range rebuildChunks(d, b) {
				name := rel
				if i > 0 {
					name += "#" + string(rune('0'+i))
				}
				out = append(out, streamFixture{name, d, s})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// rebuildChunks wraps vercel recorder lines as SSE events.
func rebuildChunks(d Dialect, b []byte) [][]byte {
	var streams [][]byte
	var cur []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		typ := gjson.GetBytes(line, "type").Str
		if d != OpenAIChat && typ != "" {
			cur = append(cur, "event: "+typ+"\n"...)
		}
		cur = append(cur, "data: "...)
		cur = append(cur, line...)
		cur = append(cur, "\n\n"...)
		terminal := false
		switch d {
		case AnthropicMessages:
			terminal = typ == "message_stop"
		case OpenAIResponses:
			terminal = typ == "response.completed" || typ == "response.incomplete" || typ == "response.failed"
		case OpenAIChat:
			terminal = gjson.GetBytes(line, "usage").IsObject()
		}
		if terminal {
			if d == OpenAIChat {
				cur = append(cur, "data: [DONE]\n\n"...)
			}
			streams = append(streams, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		streams = append(streams, cur)
	}
	return streams
}

// jsonFixtures returns the non-streamed JSON bodies of dialect d whose
// top-level shape satisfies keep.
func jsonFixtures(t testing.TB, d Dialect, keep func([]byte) bool) map[string][]byte {
	t.Helper()
	root := filepath.Join(fixturesDir(t), dialectDir(d))
	out := map[string][]byte{}
	_ = filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasSuffix(p, "interactions.json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && keep(b) {
			rel, _ := filepath.Rel(root, p)
			out[rel] = b
		}
		return nil
	})
	return out
}
