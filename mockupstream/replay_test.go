package mockupstream

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream/testskip"
)

// TestMain runs the tests, then says in one line what was skipped and why
// (mockupstream/testskip): the replays of ../shared/fixtures when the folder is
// absent.
func TestMain(m *testing.M) {
	code := m.Run()
	testskip.Report()
	os.Exit(code)
}

// replayCorpus names the files the replay tests serve from one fixture
// corpus: the repository's testdata/ (always there) or the recorded vendor
// traffic in ../shared/fixtures (when present). Paths are relative to dir.
type replayCorpus struct {
	name    string
	dir     string // absolute; "" when the corpus is absent
	sse     string // an OpenAI Chat stream with tool calls, as SSE bytes
	okJSON  string // a whole Anthropic Messages response
	errJSON string // an OpenAI error body
	chunks  string // a recorder file of an Anthropic stream, one JSON event per line ("" = build one from chunksOf)
	// chunksOf is an Anthropic SSE stream from which the test writes a
	// recorder file when the corpus has none
	chunksOf string
}

// path returns the absolute path of the corpus file rel.
func (c replayCorpus) path(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(c.dir, filepath.FromSlash(rel))
}

// moduleRoot returns the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// forEachCorpus runs f as a subtest per fixture corpus. The
// ../shared/fixtures subtest is skipped when the folder is absent, and
// fails then under CI=true.
func forEachCorpus(t *testing.T, f func(t *testing.T, c replayCorpus)) {
	root := moduleRoot(t)
	shared := filepath.Join(root, "..", "shared", "fixtures")
	if st, err := os.Stat(shared); err != nil || !st.IsDir() {
		shared = ""
	}
	for _, c := range []replayCorpus{
		{name: "testdata", dir: filepath.Join(root, "testdata"),
			sse: "openai-chat/parallel-tool-calls.sse", okJSON: "anthropic-messages/response-text.json",
			errJSON: "openai-chat/error-400-context-length-exceeded.json", chunksOf: "anthropic-messages/text.sse"},
		{name: "shared", dir: shared,
			sse: "openai-chat/openai-python__parallel-tool-calls.stream.sse", okJSON: "anthropic-messages/vercel__anthropic-text.json",
			errJSON: "openai-chat/vercel__reasoning-model-legacy-parameter-error.json", chunks: "anthropic-messages/vercel__anthropic-text.chunks.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.dir == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("fixtures directory ../shared/fixtures (beside the module root) is missing; it is required when CI=true")
				}
				testskip.Skipf(t, "tests replaying ../shared/fixtures", "folder absent",
					"fixtures directory ../shared/fixtures (beside the module root) not found; replayed testdata/ only")
			}
			f(t, c)
		})
	}
}

// recorderFile writes the Anthropic SSE stream sse as a recorder file (one
// event's JSON per line, event: lines and blank lines dropped) and returns
// its path.
func recorderFile(t *testing.T, sse []byte) string {
	t.Helper()
	var out []byte
	for rest := sse; len(rest) > 0; {
		var ev []byte
		ev, rest = nextEvent(rest)
		for _, line := range strings.Split(string(ev), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				out = append(out, data...)
				out = append(out, '\n')
			}
		}
	}
	p := filepath.Join(t.TempDir(), "stream.chunks.txt")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// flushRecorder records the bytes written between flushes.
type flushRecorder struct {
	*httptest.ResponseRecorder
	pending  bytes.Buffer
	segments []string
}

func (f *flushRecorder) Write(b []byte) (int, error) {
	f.pending.Write(b)
	return f.ResponseRecorder.Write(b)
}

func (f *flushRecorder) Flush() {
	f.segments = append(f.segments, f.pending.String())
	f.pending.Reset()
	f.ResponseRecorder.Flush()
}

func TestReplaySSEVerbatim(t *testing.T) { forEachCorpus(t, testReplaySSEVerbatim) }

func testReplaySSEVerbatim(t *testing.T, c replayCorpus) {
	file := c.path(c.sse)
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, ts := start(t, Config{})

	// Over real HTTP, selected by header.
	st, h, got := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "rk", chatBody("ignored", `"stream":true`), HeaderReplay, file)
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || !bytes.Equal(got, want) {
		t.Fatalf("replay: status %d type %q, %d bytes (want %d, equal=%v)", st, h.Get("Content-Type"), len(got), len(want), bytes.Equal(got, want))
	}
	if ks := s.Stats("rk"); ks.OK != 1 || ks.FirstEventSentAt.IsZero() {
		t.Errorf("stats %+v", ks)
	}

	// Flushed at each event boundary.
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	req := httptest.NewRequest("POST", "/v1/replay", strings.NewReader(`{"path":`+quote(file)+`}`))
	req.Header.Set("Authorization", "Bearer rk")
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("/v1/replay: %d, equal=%v", rec.Code, bytes.Equal(rec.Body.Bytes(), want))
	}
	events := strings.Count(string(want), "\n\n")
	if len(rec.segments) != events {
		t.Errorf("%d flushes for %d events", len(rec.segments), events)
	}
	for i, seg := range rec.segments {
		if !strings.HasSuffix(seg, "\n\n") || strings.Count(seg, "\n\n") != 1 {
			t.Errorf("segment %d is not one event: %q", i, seg)
		}
	}
}

func TestReplayJSONAndStatus(t *testing.T) { forEachCorpus(t, testReplayJSONAndStatus) }

func testReplayJSONAndStatus(t *testing.T, c replayCorpus) {
	okFile := c.path(c.okJSON)
	errFile := c.path(c.errJSON)
	okWant, _ := os.ReadFile(okFile)
	errWant, _ := os.ReadFile(errFile)
	if len(okWant) == 0 || len(errWant) == 0 {
		t.Fatalf("fixtures %s, %s missing or empty", okFile, errFile)
	}
	s, ts := start(t, Config{ReplayDir: c.dir, Keys: map[string]KeyBehavior{
		"a": {Replay: okFile},
		"e": {Replay: c.errJSON, ReplayStatus: 400},
		"x": {Replay: "/etc/hostname"},
	}})
	st, h, b := mustDo(t, "POST", ts.URL+"/v1/messages", "", msgBody("", userMsg("x")), "x-api-key", "a")
	if st != 200 || h.Get("Content-Type") != "application/json" || !bytes.Equal(b, okWant) {
		t.Errorf("json replay: %d %q equal=%v", st, h.Get("Content-Type"), bytes.Equal(b, okWant))
	}
	st, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "e", chatBody("x", ""))
	if st != 400 || !bytes.Equal(b, errWant) {
		t.Errorf("error replay: %d %s", st, b)
	}
	if ks := s.Stats("e"); ks.Failed != 1 || ks.OK != 0 {
		t.Errorf("error replay stats %+v", ks)
	}
	// The status header overrides.
	st, _, _ = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "e", chatBody("x", ""), HeaderReplayStatus, "429")
	if st != 429 || s.Stats("e").RateLimited != 1 {
		t.Errorf("status header: %d", st)
	}
	// Outside ReplayDir is refused.
	st, _, b = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "x", chatBody("x", ""))
	if st != 500 || !strings.Contains(string(b), "outside") {
		t.Errorf("outside replay dir: %d %s", st, b)
	}
	st, _, _ = mustDo(t, "POST", ts.URL+"/v1/chat/completions", "k", chatBody("x", ""), HeaderReplay, "../../etc/passwd")
	if st != 500 {
		t.Errorf("relative escape: %d", st)
	}
	// Gates still apply before replay.
	s.SetKey("a", KeyBehavior{Replay: okFile, Status: 503})
	if st, _, _ := mustDo(t, "POST", ts.URL+"/v1/messages", "", msgBody("", userMsg("x")), "x-api-key", "a"); st != 503 {
		t.Errorf("status before replay: %d", st)
	}
}

func TestReplayChunksAndBody(t *testing.T) { forEachCorpus(t, testReplayChunksAndBody) }

func testReplayChunksAndBody(t *testing.T, c replayCorpus) {
	file := c.path(c.chunks)
	if c.chunks == "" {
		sse, err := os.ReadFile(c.path(c.chunksOf))
		if err != nil {
			t.Fatal(err)
		}
		file = recorderFile(t, sse)
	}
	raw, _ := os.ReadFile(file)
	_, ts := start(t, Config{Keys: map[string]KeyBehavior{
		"c": {Replay: file},
		"b": {ReplayBody: []byte("data: {\"x\":1}\n\ndata: [DONE]\n\n")},
	}})
	resp, err := do(t, nil, "POST", ts.URL+"/v1/messages", "c", msgBody(`"stream":true`, userMsg("x")))
	if err != nil {
		t.Fatal(err)
	}
	evs := readSSE(t, resp.Body)
	resp.Body.Close()
	lines := strings.Count(strings.TrimSpace(string(raw)), "\n") + 1
	if len(evs) != lines || evs[0].Event != "message_start" || evs[len(evs)-1].Event != "message_stop" {
		t.Errorf("%d events for %d lines: first %q last %q", len(evs), lines, evs[0].Event, evs[len(evs)-1].Event)
	}
	for _, ev := range evs {
		if typ, _ := decode(t, []byte(ev.Data))["type"].(string); typ != ev.Event {
			t.Errorf("event %q data type %q", ev.Event, typ)
		}
	}
	st, h, b := mustDo(t, "POST", ts.URL+"/v1/chat/completions", "b", chatBody("x", ""))
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || string(b) != "data: {\"x\":1}\n\ndata: [DONE]\n\n" {
		t.Errorf("ReplayBody: %d %q %q", st, h.Get("Content-Type"), b)
	}
	// Chat chunk files get [DONE] appended.
	out := chunksToSSE([]byte("{\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\n"))
	if string(out) != "data: {\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\ndata: [DONE]\n\n" {
		t.Errorf("chunksToSSE %q", out)
	}
	// /v1/replay without any source is a 400.
	if st, _, _ := mustDo(t, "POST", ts.URL+"/v1/replay", "k", `{}`); st != http.StatusBadRequest {
		t.Errorf("replay without source: %d", st)
	}
}

func TestNextEvent(t *testing.T) {
	in := "event: a\r\ndata: 1\r\n\r\ndata: 2\n\ntrailing"
	var got []string
	for rest := []byte(in); len(rest) > 0; {
		var ev []byte
		ev, rest = nextEvent(rest)
		got = append(got, string(ev))
	}
	if strings.Join(got, "|") != "event: a\r\ndata: 1\r\n\r\n|data: 2\n\n|trailing" {
		t.Errorf("%q", got)
	}
}

func quote(s string) string {
	return string(appendString(nil, s))
}
