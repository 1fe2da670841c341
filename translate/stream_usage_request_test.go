package translate

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/sjson"
)

// checkRequestStreamUsage fails t unless Request.AddStreamUsage and
// Request.StreamUsageAsked of body, a Chat request, give what the
// package's AddStreamUsage and StreamUsageAsked give, on the body the
// gateway sends (Encode for the client's dialect, the model kept and
// rewritten). Bodies the parse refuses are skipped.
func checkRequestStreamUsage(t *testing.T, body []byte) {
	t.Helper()
	r, err := ParseRequest(OpenAIChat, body)
	if err != nil {
		return
	}
	if got, want := r.StreamUsageAsked(), StreamUsageAsked(body); got != want {
		t.Fatalf("%s: StreamUsageAsked %v, the body's %v", body, got, want)
	}
	for _, model := range []string{"", "other-model"} {
		enc, err := r.Encode(OpenAIChat, model)
		if err != nil {
			t.Fatalf("%s: Encode: %v", body, err)
		}
		in := bytes.Clone(enc)
		got, gotAsked := r.AddStreamUsage(enc)
		want, wantAsked := AddStreamUsage(in)
		if !bytes.Equal(got, want) || gotAsked != wantAsked {
			t.Fatalf("%s (model %q): Request.AddStreamUsage = %s, %v; AddStreamUsage = %s, %v", body, model, got, gotAsked, want, wantAsked)
		}
		if !bytes.Equal(enc, in) {
			t.Fatalf("%s: the encoded body was modified", body)
		}
	}
}

// TestRequestStreamUsageSameAsBody: the Request's stream-usage answers,
// which skip the walk of the top level when the parse saw no
// stream_options, are the body's (AddStreamUsage, StreamUsageAsked) on
// requests with and without stream and stream_options, with the model
// rewritten, with white space after the object, an assistant's
// "reasoning" that the hygiene renames, a name written with \u escapes,
// and on every recorded Chat request.
func TestRequestStreamUsageSameAsBody(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"} stream_options {"}]`
	bodies := []string{
		`{"model":"m",` + msgs + `,"stream":true}`,
		`{"model":"m",` + msgs + `,"stream":false}`,
		`{"model":"m",` + msgs + `}`,
		"{\"model\":\"m\"," + msgs + ",\"stream\":true} \n\t",
		`{"stream":true,"model":"m",` + msgs + `,"stream_options":null}`,
		`{"stream":true,"model":"m",` + msgs + `,"stream_options":{}}`,
		`{"stream":true,"model":"m",` + msgs + `,"stream_options":{"include_usage":false}}`,
		`{"stream":true,"model":"m",` + msgs + `,"stream_options":{"include_usage":true}}`,
		`{"stream":false,"model":"m",` + msgs + `,"stream_options":{"include_usage":true}}`,
		`{"stream":true,"model":"m",` + msgs + `,"str\u0065am_options":{"include_usage":true}}`,
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a","reasoning":"r"},{"role":"user","content":"go"}]}`,
	}
	for _, b := range bodies {
		checkRequestStreamUsage(t, []byte(b))
	}
	n := 0
	for _, b := range requestFixtures(t, OpenAIChat) {
		checkRequestStreamUsage(t, b)
		if s, err := sjson.SetBytes(bytes.Clone(b), "stream", true); err == nil {
			checkRequestStreamUsage(t, s)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no recorded Chat requests")
	}
}

// FuzzRequestStreamUsage: the Request's answers are the body's on any
// request the parse accepts.
func FuzzRequestStreamUsage(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":null} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkRequestStreamUsage(t, b) })
}

// BenchmarkAddStreamUsage: what adding stream_options.include_usage
// costs a streamed Chat request without stream_options, 2 KB (the bench
// harness's request) and 100 KB (a coding agent's), read from the body
// (AddStreamUsage: a walk of its top level) and from the parse
// (Request.AddStreamUsage), in one run. Both allocate the new body once.
func BenchmarkAddStreamUsage(b *testing.B) {
	for _, words := range []int{44, 2300} {
		body := []byte(`{"max_tokens":1024,"messages":[{"content":"You are a terse assistant.","role":"system"},{"content":"Summarise: ` +
			strings.Repeat("the quick brown fox jumps over the lazy dog ", words) + `","role":"user"}],"model":"m","stream":true,"temperature":0.2}`)
		r, err := ParseRequest(OpenAIChat, body)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			add  func([]byte) ([]byte, bool)
		}{{"body", AddStreamUsage}, {"request", r.AddStreamUsage}} {
			b.Run(c.name+"/"+strconv.Itoa(len(body)>>10)+"KiB", func(b *testing.B) {
				b.ReportAllocs()
				m := startCPU()
				for b.Loop() {
					if out, _ := c.add(body); len(out) == len(body) {
						b.Fatal("not added")
					}
				}
				m.report(b)
			})
		}
	}
}
