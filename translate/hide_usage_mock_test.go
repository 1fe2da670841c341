package translate_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/llmgateway/llm_gateway/translate"
)

// mockChatStream asks a fresh mock upstream for a streamed Chat answer
// (fresh, so that both calls of a comparison get the same answer id).
func mockChatStream(t *testing.T, body string) []byte {
	t.Helper()
	srv := mockupstream.New(mockupstream.Config{Seed: 1})
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("mock: %d %s", rec.Code, rec.Body.Bytes())
	}
	return rec.Body.Bytes()
}

// TestHideUsageChunkMatchesMockDirectCall: the mock upstream asked with
// stream_options.include_usage (what the gateway sends when the client did
// not ask for usage), relayed through a passthrough translator with
// HideUsageChunk, gives exactly the bytes the mock sends to a direct call
// without include_usage, and the usage is counted; for a text answer, a
// tool call and a reasoning model.
func TestHideUsageChunkMatchesMockDirectCall(t *testing.T) {
	for _, req := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"Say hello to the whole world please"}],"stream":true%s}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"use the tool"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"stream":true%s}`,
		`{"model":"o3-reasoning","reasoning_effort":"low","messages":[{"role":"user","content":"why is the sky blue"}],"stream":true%s}`,
	} {
		var direct, relayed []byte
		var usage translate.Usage
		for try := 0; try < 3; try++ { // the mock's "created" is its start second
			direct = mockChatStream(t, strings.Replace(req, "%s", "", 1))
			withUsage, asked := translate.AddStreamUsage([]byte(strings.Replace(req, "%s", "", 1)))
			if asked {
				t.Fatal("the client did not ask for usage")
			}
			up := mockChatStream(t, string(withUsage))
			if !bytes.Contains(up, []byte(`"usage":null`)) || !bytes.Contains(up, []byte(`"choices":[],"usage":{`)) {
				t.Fatalf("the mock ignored include_usage:\n%s", up)
			}
			relayed = relayed[:0]
			tr := translate.NewStreamTranslator(translate.OpenAIChat, translate.OpenAIChat, "", translate.EventWriterFunc(func(p []byte) error {
				relayed = append(relayed, p...)
				return nil
			}))
			tr.HoldPreamble()
			tr.HideUsageChunk()
			if err := tr.Run(bytes.NewReader(up)); err != nil {
				t.Fatal(err)
			}
			usage = tr.Usage()
			if bytes.Equal(relayed, direct) {
				break
			}
		}
		if !bytes.Equal(relayed, direct) {
			t.Fatalf("relayed stream differs from the direct call:\n%s\nwant\n%s", relayed, direct)
		}
		if usage.InputTokens == nil || *usage.InputTokens <= 0 || usage.OutputTokens == nil || *usage.OutputTokens <= 0 {
			t.Errorf("usage not counted: %+v", usage)
		}
	}
}
