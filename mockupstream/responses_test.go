// OpenAI Responses and embeddings endpoints, read through the official
// openai-go client (test dependency only).
package mockupstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// sdkClient returns an openai-go client for the mock behind ts with key.
func sdkClient(ts *httptest.Server, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func weatherTool() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, true)
}

// streamed is what a Responses stream carried, as the SDK decoded it.
type streamed struct {
	types     []string
	text      string // output_text deltas
	args      string // function_call_arguments deltas
	summary   string // reasoning_summary_text deltas
	argsDone  string
	final     responses.Response // response.completed / .incomplete
	finalType string
}

func readStream(t *testing.T, c openai.Client, p responses.ResponseNewParams) streamed {
	t.Helper()
	st := c.Responses.NewStreaming(context.Background(), p)
	var s streamed
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber != int64(len(s.types)) {
			t.Fatalf("event %d (%s) has sequence_number %d", len(s.types), ev.Type, ev.SequenceNumber)
		}
		s.types = append(s.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			if ev.ItemID == "" || ev.OutputIndex < 0 || ev.ContentIndex != 0 {
				t.Errorf("delta without item_id/output_index/content_index: %s", ev.RawJSON())
			}
			s.text += ev.Delta
		case "response.function_call_arguments.delta":
			s.args += ev.Delta
		case "response.function_call_arguments.done":
			s.argsDone = ev.Arguments
		case "response.reasoning_summary_text.delta":
			s.summary += ev.Delta
		case "response.completed", "response.incomplete":
			s.final = ev.Response
			s.finalType = ev.Type
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return s
}

func TestResponsesText(t *testing.T) {
	srv := mockupstream.New(mockupstream.Config{})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := sdkClient(ts, "rk")
	p := responses.ResponseNewParams{
		Model:        shared.ResponsesModel("gpt-5"),
		Instructions: openai.String("be brief"),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello sdk")},
	}
	want := mockupstream.Text("hello sdk") // "Mock answer to: hello sdk": 5 chunks
	r, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Status != "completed" || r.Model != "gpt-5" || r.CreatedAt == 0 {
		t.Errorf("response head: %s", r.RawJSON())
	}
	if r.OutputText() != want || len(r.Output) != 1 || r.Output[0].Type != "message" || !strings.HasPrefix(r.Output[0].ID, "msg_") {
		t.Errorf("output %q: %s", r.OutputText(), r.RawJSON())
	}
	// input: "be brief" + "hello sdk" = 4 words
	u := r.Usage
	if u.InputTokens != 4 || u.OutputTokens != 5 || u.TotalTokens != 9 || u.OutputTokensDetails.ReasoningTokens != 0 || u.InputTokensDetails.CachedTokens != 0 || !u.JSON.InputTokensDetails.Valid() {
		t.Errorf("usage %s", u.RawJSON())
	}

	s := readStream(t, c, p)
	wantTypes := "response.created response.in_progress response.output_item.added response.content_part.added " +
		strings.Repeat("response.output_text.delta ", 5) +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(s.types, " "); got != wantTypes {
		t.Errorf("events\n got %s\nwant %s", got, wantTypes)
	}
	if s.text != want || s.final.OutputText() != want || s.final.Status != "completed" || s.final.Usage.OutputTokens != 5 || s.final.Usage.InputTokens != 4 {
		t.Errorf("stream text %q final %s", s.text, s.final.RawJSON())
	}
	if st := srv.Stats("rk"); st.Requests != 2 || st.OK != 2 || st.Endpoints["responses"] != 2 || st.LastModel != "gpt-5" {
		t.Errorf("stats %+v", st)
	}

	// max_output_tokens cuts the text: status incomplete
	p.MaxOutputTokens = openai.Int(2)
	r, err = c.Responses.New(context.Background(), p)
	if err != nil || r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.OutputText() != "Mock answer " || r.Usage.OutputTokens != 2 {
		t.Errorf("limited: %v %s", err, r.RawJSON())
	}
	s = readStream(t, c, p)
	if s.finalType != "response.incomplete" || s.text != "Mock answer " || s.final.Status != "incomplete" {
		t.Errorf("limited stream %s %q", s.finalType, s.text)
	}
}

func TestResponsesFunctionCallRoundTrip(t *testing.T) {
	ts := httptest.NewServer(mockupstream.New(mockupstream.Config{}))
	defer ts.Close()
	c := sdkClient(ts, "rk")
	ctx := context.Background()
	user := responses.ResponseInputItemParamOfMessage("what is the weather? use the tool", responses.EasyInputMessageRoleUser)
	p := responses.ResponseNewParams{
		Model: shared.ResponsesModel("gpt-5"),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{user}},
		Tools: []responses.ToolUnionParam{weatherTool()},
	}
	r, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 1 || r.Output[0].Type != "function_call" {
		t.Fatalf("output %s", r.RawJSON())
	}
	fc := r.Output[0].AsFunctionCall()
	if fc.Name != "get_weather" || fc.Arguments != `{"city":"mock"}` || !strings.HasPrefix(fc.CallID, "call_") || !strings.HasPrefix(fc.ID, "fc_") || fc.Status != "completed" {
		t.Errorf("function call %s", r.Output[0].RawJSON())
	}
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Name != "get_weather" {
		t.Errorf("tools not echoed: %s", r.RawJSON())
	}
	if r.Status != "completed" || r.Usage.OutputTokens != 3 { // {"city":"mock"} in 6-byte fragments
		t.Errorf("status %s usage %s", r.Status, r.Usage.RawJSON())
	}

	s := readStream(t, c, p)
	if s.args != `{"city":"mock"}` || s.argsDone != s.args || len(s.final.Output) != 1 || s.final.Output[0].AsFunctionCall().Name != "get_weather" {
		t.Errorf("streamed call %q %q %s", s.args, s.argsDone, s.final.RawJSON())
	}
	if got := strings.Join(s.types, " "); !strings.Contains(got, "response.output_item.added response.function_call_arguments.delta") || !strings.HasSuffix(got, "response.function_call_arguments.done response.output_item.done response.completed") {
		t.Errorf("events %s", got)
	}

	// the tool's result goes back: the answer quotes it
	p.Input.OfInputItemList = responses.ResponseInputParam{
		user,
		responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name),
		responses.ResponseInputItemParamOfFunctionCallOutput("sunny, 21 C"),
	}
	p.Input.OfInputItemList[2].OfFunctionCallOutput.CallID = openai.String(fc.CallID)
	r, err = c.Responses.New(ctx, p)
	if err != nil || r.OutputText() != mockupstream.ToolText("sunny, 21 C") {
		t.Errorf("after tool: %v %s", err, r.RawJSON())
	}
	// tool_choice none: no call even when asked
	p.Input.OfInputItemList = responses.ResponseInputParam{user}
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsNone)}
	r, err = c.Responses.New(ctx, p)
	if err != nil || r.Output[0].Type != "message" {
		t.Errorf("tool_choice none: %v %s", err, r.RawJSON())
	}
}

func TestResponsesReasoning(t *testing.T) {
	ts := httptest.NewServer(mockupstream.New(mockupstream.Config{}))
	defer ts.Close()
	c := sdkClient(ts, "rk")
	p := responses.ResponseNewParams{
		Model:     shared.ResponsesModel("gpt-5"),
		Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("hello sdk")},
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
		Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
	reasoning := mockupstream.ReasoningText("hello sdk") // "Thinking about: hello sdk": 4 chunks
	check := func(what string, r responses.Response) {
		t.Helper()
		if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || r.Output[1].Type != "message" {
			t.Fatalf("%s: output %s", what, r.RawJSON())
		}
		rs := r.Output[0].AsReasoning()
		if !strings.HasPrefix(rs.ID, "rs_") || !strings.HasPrefix(rs.EncryptedContent, "gAAAAAB") || len(rs.Summary) != 1 || rs.Summary[0].Text != reasoning {
			t.Errorf("%s: reasoning item %s", what, r.Output[0].RawJSON())
		}
		u := r.Usage
		if r.OutputText() != mockupstream.Text("hello sdk") || u.OutputTokens != 9 || u.OutputTokensDetails.ReasoningTokens != 4 || u.InputTokens != 2 || u.TotalTokens != 11 {
			t.Errorf("%s: text %q usage %s", what, r.OutputText(), u.RawJSON())
		}
		if r.Reasoning.Effort != shared.ReasoningEffortLow {
			t.Errorf("%s: reasoning %s", what, r.Reasoning.RawJSON())
		}
	}
	r, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	check("json", *r)
	enc := r.Output[0].AsReasoning().EncryptedContent

	s := readStream(t, c, p)
	check("stream", s.final)
	if s.summary != reasoning {
		t.Errorf("summary deltas %q", s.summary)
	}
	if got := strings.Join(s.types[:8], " "); got != "response.created response.in_progress response.output_item.added response.reasoning_summary_part.added"+strings.Repeat(" response.reasoning_summary_text.delta", 4) {
		t.Errorf("events %s", strings.Join(s.types, " "))
	}
	if !strings.Contains(strings.Join(s.types, " "), "response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done response.output_item.added") {
		t.Errorf("reasoning item not closed before the message: %s", strings.Join(s.types, " "))
	}
	// encrypted_content is only sent when included
	p.Include = nil
	r, err = c.Responses.New(context.Background(), p)
	if err != nil || r.Output[0].AsReasoning().EncryptedContent != "" || r.Output[0].AsReasoning().Summary[0].Text != reasoning {
		t.Errorf("without include: %v %s", err, r.RawJSON())
	}
	if enc == "" || strings.Contains(enc, " ") {
		t.Errorf("encrypted_content %q", enc)
	}
}

func TestResponsesKnobs(t *testing.T) {
	srv := mockupstream.New(mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{
		"cool":  {Cooldown: time.Minute},
		"down":  {Status: 503},
		"break": {StreamErrorAfter: 2, FailStatus: 500},
	}})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx := context.Background()
	p := responses.ResponseNewParams{Model: shared.ResponsesModel("gpt-5"), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}

	cool := sdkClient(ts, "cool")
	if _, err := cool.Responses.New(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err := cool.Responses.New(ctx, p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" || apiErr.Type != "requests" {
		t.Fatalf("cooldown: %v", err)
	}
	if ra := apiErr.Response.Header.Get("Retry-After"); ra != "60" {
		t.Errorf("Retry-After %q", ra)
	}
	if st := srv.Stats("cool"); st.OK != 1 || st.RateLimited != 1 || st.Endpoints["responses"] != 2 {
		t.Errorf("stats %+v", st)
	}

	down := sdkClient(ts, "down")
	_, err = down.Responses.New(ctx, p)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "server_is_overloaded" {
		t.Errorf("status: %v", err)
	}

	// an in-band error after two content events: error, then response.failed
	resp, err := http.Post(ts.URL+"/v1/responses?x=1", "application/json", strings.NewReader(`{"model":"gpt-5","input":"one two three four","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	// no key: 401 in OpenAI's shape
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), `"error":{"message":"You didn't provide an API key`) {
		t.Errorf("no key: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest("POST", ts.URL+"/base/v1/responses", strings.NewReader(`{"model":"gpt-5","input":"one two three four","stream":true}`))
	req.Header.Set("Authorization", "Bearer break")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	n := len(events)
	if n < 3 || !strings.HasPrefix(events[n-2], "event: error\ndata: ") || !strings.HasPrefix(events[n-1], "event: response.failed\ndata: ") || strings.Contains(string(b), "response.completed") {
		t.Fatalf("in-band error stream:\n%s", b)
	}
	var errEv, failed struct {
		Type     string `json:"type"`
		Code     string `json:"code"`
		Message  string `json:"message"`
		Seq      int    `json:"sequence_number"`
		Response struct {
			Status string `json:"status"`
			Error  struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"response"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(strings.SplitN(events[n-2], "data: ", 2)[1]), &errEv) != nil || json.Unmarshal([]byte(strings.SplitN(events[n-1], "data: ", 2)[1]), &failed) != nil {
		t.Fatalf("bad JSON in %s", b)
	}
	// created, in_progress, item added, part added, 2 deltas, then the error
	if errEv.Type != "error" || errEv.Code != "server_error" || errEv.Error.Type != "server_error" || errEv.Seq != 6 || failed.Seq != 7 || failed.Response.Status != "failed" || failed.Response.Error.Code != "server_error" {
		t.Errorf("error %+v failed %+v", errEv, failed)
	}
	if st := srv.Stats("break"); st.Failed != 1 || st.OK != 0 {
		t.Errorf("break stats %+v", st)
	}
	// the SDK raises the in-band error
	brk := sdkClient(ts, "break")
	st := brk.Responses.NewStreaming(ctx, p)
	for st.Next() {
	}
	if st.Err() == nil {
		t.Errorf("SDK stream ended without error")
	}
}

func TestResponsesInputTokens(t *testing.T) {
	ts := httptest.NewServer(mockupstream.New(mockupstream.Config{}))
	defer ts.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/v1/responses/input_tokens", strings.NewReader(`{"model":"gpt-5","instructions":"Follow the system instructions.","input":[{"role":"user","content":[{"type":"input_text","text":"two words"}]}]}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"object":"response.input_tokens","input_tokens":6}` {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

func TestEmbeddings(t *testing.T) {
	srv := mockupstream.New(mockupstream.Config{Keys: map[string]mockupstream.KeyBehavior{"hot": {Status: 429}}})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx := context.Background()
	c := sdkClient(ts, "ek")
	p := openai.EmbeddingNewParams{
		Model: openai.EmbeddingModelTextEmbedding3Small,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello world", "second input here", "hello world"}},
	}
	r, err := c.Embeddings.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Data) != 3 || r.Model != "text-embedding-3-small" || r.Usage.PromptTokens != 7 || r.Usage.TotalTokens != 7 {
		t.Fatalf("answer: model %s usage %+v, %d vectors", r.Model, r.Usage, len(r.Data))
	}
	norm := func(v []float64) float64 {
		var s float64
		for _, f := range v {
			s += f * f
		}
		return math.Sqrt(s)
	}
	for i, d := range r.Data {
		if d.Index != int64(i) || len(d.Embedding) != 1536 || math.Abs(norm(d.Embedding)-1) > 1e-4 {
			t.Errorf("vector %d: index %d, %d values, norm %v", i, d.Index, len(d.Embedding), norm(d.Embedding))
		}
	}
	same := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if !same(r.Data[0].Embedding, r.Data[2].Embedding) || same(r.Data[0].Embedding, r.Data[1].Embedding) {
		t.Errorf("vectors are not a function of the input")
	}
	// deterministic across requests, keys and servers; equal to Embedding
	ts2 := httptest.NewServer(mockupstream.New(mockupstream.Config{}))
	defer ts2.Close()
	other := sdkClient(ts2, "other")
	r2, err := other.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: p.Model, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello world")}})
	if err != nil || !same(r2.Data[0].Embedding, r.Data[0].Embedding) || r2.Usage.PromptTokens != 2 {
		t.Errorf("not deterministic: %v", err)
	}
	want := mockupstream.Embedding("text-embedding-3-small", "hello world", 1536)
	for i := range want {
		if want[i] != float32(r.Data[0].Embedding[i]) {
			t.Fatalf("value %d: %v vs Embedding %v", i, r.Data[0].Embedding[i], want[i])
		}
	}

	// dimensions shortens; base64 carries the same float32 values; token
	// arrays count their ids
	p.Dimensions = openai.Int(256)
	p.EncodingFormat = openai.EmbeddingNewParamsEncodingFormatBase64
	p.Input = openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2, 3}, {4, 5}}}
	r, err = c.Embeddings.New(ctx, p)
	if err != nil || len(r.Data) != 2 || r.Usage.PromptTokens != 5 {
		t.Fatalf("tokens: %v %+v", err, r)
	}
	var raw struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(r.RawJSON()), &raw); err != nil || len(raw.Data) != 2 || len(raw.Data[0].Embedding) != (256*4+2)/3*4 {
		t.Errorf("base64 answer %v %d", err, len(raw.Data[0].Embedding))
	}
	if w := mockupstream.Embedding("text-embedding-3-small", "1 2 3", 256); len(r.Data[0].Embedding) != 256 || float32(r.Data[0].Embedding[7]) != w[7] {
		t.Errorf("decoded base64 vector: %d values", len(r.Data[0].Embedding))
	}

	// bad input: OpenAI's 400
	p.Dimensions = openai.Int(4096)
	_, err = c.Embeddings.New(ctx, p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "dimensions") {
		t.Errorf("dimensions 4096: %v", err)
	}

	// the 429 knob
	hot := sdkClient(ts, "hot")
	_, err = hot.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: p.Model, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Response.Header.Get("Retry-After") != "1" || apiErr.Code != "rate_limit_exceeded" {
		t.Errorf("429 knob: %v", err)
	}
	if st := srv.Stats("ek"); st.Endpoints["embeddings"] != 3 || st.OK != 2 || st.Failed != 1 {
		t.Errorf("ek stats %+v", st)
	}
	if st := srv.Stats("hot"); st.Endpoints["embeddings"] != 1 || st.RateLimited != 1 {
		t.Errorf("hot stats %+v", st)
	}
}
