package translate

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream/testskip"
	"github.com/tidwall/gjson"
)

// The fixture-driven tests replay two corpora of upstream traffic, laid out
// alike by the dialect the upstream spoke (openai-chat/,
// anthropic-messages/, openai-responses/):
//
//   - testdata/ in the repository: this project's own fixtures, written to
//     the vendors' documented wire formats (testdata/README.md says what
//     each file shows and which reference it follows). Always there: every
//     fixture-driven test runs on it.
//   - ../shared/fixtures beside the clone: recorded vendor traffic (its
//     README.md and SOURCES.tsv), an additional check where present.
//     TestSharedFixtures runs every fixture-driven test again on it; when
//     the folder is absent those runs are skipped, and fail under CI=true.
//
// A test reads one corpus: ../shared/fixtures when it runs under
// TestSharedFixtures, testdata/ otherwise (fixtureDirs). Benchmarks pick
// recorded streams by name, so they read ../shared/fixtures and skip
// without it; fuzz targets seed from both corpora.

// sharedFixturesRel is where the recorded fixtures are, relative to the
// repository root.
const sharedFixturesRel = "../shared/fixtures"

// namedTest is a test function and its name.
type namedTest struct {
	name string
	f    func(*testing.T)
}

// sharedFixtureTests lists the fixture-driven tests: TestSharedFixtures runs
// each again on ../shared/fixtures. A test that reads fixtures without
// being listed here fails (fixtureDirs), so none is forgotten.
func sharedFixtureTests() []namedTest {
	return []namedTest{
		{"TestStreamFixturesAllDirections", TestStreamFixturesAllDirections},
		{"TestRequestFixturesAllDirections", TestRequestFixturesAllDirections},
		{"TestResponseFixturesAllDirections", TestResponseFixturesAllDirections},
		{"TestErrorFixturesAllDirections", TestErrorFixturesAllDirections},
		{"TestSSEReaderSplits", TestSSEReaderSplits},
		{"TestPassthroughStreams", TestPassthroughStreams},
		{"TestPassthroughChatUsage", TestPassthroughChatUsage},
		{"TestAddStreamUsageAndHide", TestAddStreamUsageAndHide},
		{"TestChatChunkMembersAsHasMember", TestChatChunkMembersAsHasMember},
		{"TestChunkLeadFixtures", TestChunkLeadFixtures},
		{"TestMemberSetSameAsFields", TestMemberSetSameAsFields},
		{"TestHoldPreambleHealthyStreamsUnchanged", TestHoldPreambleHealthyStreamsUnchanged},
		{"TestHoldPreambleFirstContentNotDelayed", TestHoldPreambleFirstContentNotDelayed},
		{"TestMultiTurnChatClientAnthropicUpstream", TestMultiTurnChatClientAnthropicUpstream},
		{"TestResponsesCarriesAnthropicSignature", TestResponsesCarriesAnthropicSignature},
		{"TestStrictSchemaTranslatedStreams", TestStrictSchemaTranslatedStreams},
		{"TestStrictSchemaTranslatedBodies", TestStrictSchemaTranslatedBodies},
		{"TestStrictSchemaMatchesVendors", TestStrictSchemaMatchesVendors},
		{"TestResponsesUpstreamStreams", TestResponsesUpstreamStreams},
		{"TestResponsesUpstreamWhole", TestResponsesUpstreamWhole},
		{"TestRequestFixturesToResponses", TestRequestFixturesToResponses},
		{"TestStreamEventViewsNotKept", TestStreamEventViewsNotKept},
		{"TestHideUsageChunkByteIdentical", TestHideUsageChunkByteIdentical},
		{"TestResponseAsStreamFixtures", TestResponseAsStreamFixtures},
		{"TestPassthroughAnswerMatchesSteps", TestPassthroughAnswerMatchesSteps},
		{"TestReadAnswerMatchesSteps", TestReadAnswerMatchesSteps},
		{"TestRequestStreamUsageSameAsBody", TestRequestStreamUsageSameAsBody},
	}
}

// TestSharedFixtures runs every fixture-driven test on the recorded vendor
// traffic in ../shared/fixtures, as a subtest named after it. Without the
// folder each subtest is skipped (and counted in the one-line skip report),
// or fails when CI=true.
func TestSharedFixtures(t *testing.T) {
	dir := sharedFixturesDir()
	for _, ft := range sharedFixtureTests() {
		t.Run(ft.name, func(t *testing.T) {
			if dir == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s (relative to the repository root) not found; it is required when CI=true", sharedFixturesRel)
				}
				testskip.Skipf(t, "tests replaying "+sharedFixturesRel, "folder absent",
					"%s (relative to the repository root) not found: %s ran on testdata/ only", sharedFixturesRel, ft.name)
			}
			ft.f(t)
		})
	}
}

// TestMain runs the tests, then says in one line what was skipped and why
// (mockupstream/testskip), e.g. the replays of ../shared/fixtures when the
// folder is absent.
func TestMain(m *testing.M) {
	// a fixed stand-in for a missing answer id, so that two runs of one
	// input give the same bytes (TestPeerChatToolCallIDsWithoutAnswerID
	// puts the random one back)
	idBase = func() string { return "0123456789ab" }
	code := m.Run()
	testskip.Report()
	os.Exit(code)
}

// repoRoot is the directory holding go.mod, "" when none is found above
// the working directory.
var repoRoot = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
})

// testdataDir returns the repository's testdata/ folder.
func testdataDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(repoRoot(), "testdata")
	if st, err := os.Stat(dir); repoRoot() == "" || err != nil || !st.IsDir() {
		t.Fatalf("testdata/ not found at the repository root (%q): %v", repoRoot(), err)
	}
	return dir
}

// sharedFixturesDir returns ../shared/fixtures relative to the repository
// root, or "" when it is absent.
func sharedFixturesDir() string {
	if repoRoot() == "" {
		return ""
	}
	dir := filepath.Join(repoRoot(), filepath.FromSlash(sharedFixturesRel))
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir
	}
	return ""
}

// fixtureDirs returns the corpus roots t reads (see the comment at the top
// of this file).
func fixtureDirs(t testing.TB) []string {
	t.Helper()
	switch t.(type) {
	case *testing.B:
		if dir := sharedFixturesDir(); dir != "" {
			return []string{dir}
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (relative to the repository root) not found; it is required when CI=true", sharedFixturesRel)
		}
		testskip.Skipf(t, "benchmarks replaying "+sharedFixturesRel, "folder absent",
			"%s (relative to the repository root) not found; the benchmarks replay recorded streams from it", sharedFixturesRel)
		return nil
	case *testing.F:
		dirs := []string{testdataDir(t)}
		if dir := sharedFixturesDir(); dir != "" {
			dirs = append(dirs, dir)
		}
		return dirs
	}
	if strings.HasPrefix(t.Name(), "TestSharedFixtures/") {
		return []string{sharedFixturesDir()}
	}
	top, _, _ := strings.Cut(t.Name(), "/")
	listed := false
	for _, ft := range sharedFixtureTests() {
		listed = listed || ft.name == top
	}
	if !listed {
		t.Errorf("%s reads fixtures but is not in sharedFixtureTests (fixtures_test.go), so it never replays %s", top, sharedFixturesRel)
	}
	return []string{testdataDir(t)}
}

// streamFixture is one upstream stream, as SSE bytes.
type streamFixture struct {
	name    string // path relative to the dialect's folder
	dialect Dialect
	body    []byte
	// noUsage: the stream reports no usage by design (an OpenAI Chat
	// stream without stream_options.include_usage); its file name
	// contains "no-usage".
	noUsage bool
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

// Subfolders of a dialect's folder that hold no healthy stream or whole
// response: streamErrorsDir holds streams that end in an in-band error or
// are cut off (streamFailureFixtures), requestsDir request bodies
// (requestFixtures).
const (
	streamErrorsDir = "stream-errors"
	requestsDir     = "requests"
)

// walkDialect calls fn for every file of dialect d in the corpora dirs,
// with its path relative to the dialect's folder, skipping the folders in
// skip.
func walkDialect(t testing.TB, dirs []string, d Dialect, skip []string, fn func(rel string, b []byte)) {
	t.Helper()
	for _, dir := range dirs {
		root := filepath.Join(dir, dialectDir(d))
		if _, err := os.Stat(root); err != nil {
			continue
		}
		err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.IsDir() {
				for _, s := range skip {
					if de.Name() == s {
						return filepath.SkipDir
					}
				}
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fn(filepath.ToSlash(rel), b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// streamFixtures returns every healthy stream of dialect d: *.sse files,
// extracted/*/NN.response.sse, and *.chunks.txt rebuilt into SSE framing
// (one stream per file; a chunks file holding several consecutive streams
// is split at each terminal event). Streams in stream-errors/ are not
// included (streamFailureFixtures).
func streamFixtures(t testing.TB, d Dialect) []streamFixture {
	t.Helper()
	return streamsIn(t, fixtureDirs(t), d)
}

// streamsIn is streamFixtures for the corpora dirs.
func streamsIn(t testing.TB, dirs []string, d Dialect) []streamFixture {
	t.Helper()
	var out []streamFixture
	walkDialect(t, dirs, d, []string{streamErrorsDir, requestsDir}, func(rel string, b []byte) {
		switch {
		case strings.HasSuffix(rel, ".sse"):
			out = append(out, streamFixture{rel, d, b, strings.Contains(rel, "no-usage")})
		case strings.HasSuffix(rel, ".chunks.txt"):
			for i, s := range rebuildChunks(d, b) {
				name := rel
				if i > 0 {
					name += "#" + string(rune('0'+i))
				}
				out = append(out, streamFixture{name, d, s, false})
			}
		}
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// streamFailureFixtures returns the streams of dialect d in
// testdata/<dialect>/stream-errors/: an in-band error event, or a stream
// cut off before its finish. Names are relative to the dialect's folder.
func streamFailureFixtures(t testing.TB, d Dialect) []streamFixture {
	t.Helper()
	dir := filepath.Join(testdataDir(t), dialectDir(d), streamErrorsDir)
	matches, err := filepath.Glob(filepath.Join(dir, "*.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var out []streamFixture
	for _, p := range matches {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, streamFixture{streamErrorsDir + "/" + filepath.Base(p), d, b, false})
	}
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

// jsonFixtures returns the non-streamed JSON bodies of dialect d (whole
// responses and error bodies, request bodies excluded) whose top-level
// shape satisfies keep, by path relative to the dialect's folder.
func jsonFixtures(t testing.TB, d Dialect, keep func([]byte) bool) map[string][]byte {
	t.Helper()
	return jsonIn(t, fixtureDirs(t), d, keep)
}

// wholeResponseFixtures returns the recorded whole (non-streamed) responses
// of upstream dialect from, by name: chat.completion objects for
// OpenAIChat, message objects for AnthropicMessages.
func wholeResponseFixtures(t testing.TB, from Dialect) map[string][]byte {
	t.Helper()
	keep := func(b []byte) bool { return gjson.GetBytes(b, "object").Str == "chat.completion" }
	if from == AnthropicMessages {
		keep = func(b []byte) bool { return gjson.GetBytes(b, "type").Str == "message" }
	}
	return jsonFixtures(t, from, keep)
}

// jsonIn is jsonFixtures for the corpora dirs.
func jsonIn(t testing.TB, dirs []string, d Dialect, keep func([]byte) bool) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	walkDialect(t, dirs, d, []string{streamErrorsDir}, func(rel string, b []byte) {
		if !strings.HasSuffix(rel, ".json") || strings.HasSuffix(rel, "interactions.json") || strings.HasSuffix(rel, ".request.json") {
			return
		}
		if keep(b) {
			out[rel] = b
		}
	})
	return out
}
