package translate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// checkStreamMembersSameAsGet fails t unless streamMembers reads what
// gjson's lookups of the three paths (AddStreamUsage's former reading)
// find in body, a JSON text, Index included, or declines (a repeated
// stream_options).
func checkStreamMembersSameAsGet(t *testing.T, body []byte) {
	t.Helper()
	stream, so, iu, ok := streamMembers(body)
	want := gjson.GetMany(string(body), "stream", "stream_options", "stream_options.include_usage")
	if !ok {
		n := 0
		gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
			if k.Str == "stream_options" {
				n++
			}
			return true
		})
		if n < 2 {
			t.Fatalf("%s: declined with stream_options %d times", body, n)
		}
		return
	}
	for i, got := range []gjson.Result{stream, so, iu} {
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("%s: member %d read %#v, gjson %#v", body, i, got, want[i])
		}
	}
}

// TestStreamMembersSameAsGet: the one walk of AddStreamUsage finds the
// members the three lookups find, with their offsets, on requests with
// stream_options absent, null, empty, with include_usage true, false or
// escaped, in any order, with white space, duplicates of stream and of
// include_usage, and on JSON that is not an object; with stream_options
// twice it declines, and AddStreamUsage then asks gjson.
func TestStreamMembersSameAsGet(t *testing.T) {
	for _, b := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"stream":true,"stream_options":null,"messages":[]}`,
		`{"stream":true,"stream_options":{}}`,
		`{"stream_options":{"include_usage":false},"stream":true}`,
		`{"stream_options":{"x":1, "include_usage" : true ,"include_usage":false},"stream":false}`,
		`{"stream":true,"stream":false,"stream_options":{"\u0069nclude_usage":true}}`,
		`{"str\u0065am":true,"stream_options":[1,2]}`,
		"{ \"stream\" :\ttrue ,\n\"stream_options\" : { \"include_usage\" : null } }",
		`{"stream_options":"x","stream":"true"}`,
		`[{"stream":true}]`, `"stream"`, `1`, `null`, `{}`,
	} {
		if !gjson.Valid(b) {
			t.Fatalf("test input not JSON: %s", b)
		}
		checkStreamMembersSameAsGet(t, []byte(b))
	}
	twice := []byte(`{"stream":true,"stream_options":{"a":1},"stream_options":{"include_usage":true}}`)
	if _, _, _, ok := streamMembers(twice); ok {
		t.Fatal("stream_options twice: not declined")
	}
	// the lookup goes on to the second stream_options and finds the ask
	if _, asked := AddStreamUsage(twice); !asked {
		t.Fatal("stream_options twice: include_usage in the second not found")
	}
}

// FuzzStreamMembers: streamMembers agrees with gjson's lookups on any
// JSON text.
func FuzzStreamMembers(f *testing.F) {
	for _, s := range []string{`{"stream":true,"messages":[]}`, `{"stream_options":{"include_usage":true},"stream":true}`, `{"stream":true,"stream_options":null}`, `[{"stream":true}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !gjson.ValidBytes(b) {
			return
		}
		checkStreamMembersSameAsGet(t, b)
	})
}

// BenchmarkStreamMembers compares AddStreamUsage's reading of a 2 KB
// streamed Chat request without stream_options (the usual one) in one
// walk (streamMembers) with the three gjson lookups it replaced.
func BenchmarkStreamMembers(b *testing.B) {
	body := []byte(`{"max_tokens":1024,"messages":[{"content":"You are a terse assistant.","role":"system"},{"content":"Summarise: ` +
		strings.Repeat("the quick brown fox jumps over the lazy dog ", 44) + `","role":"user"}],"model":"m","stream":true,"temperature":0.2}`)
	b.Run("walk", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if s, _, _, ok := streamMembers(body); !ok || s.Type != gjson.True {
				b.Fatal("stream not read")
			}
		}
	})
	b.Run("lookups", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if r := gjson.GetMany(view(body), "stream", "stream_options", "stream_options.include_usage"); r[0].Type != gjson.True {
				b.Fatal("stream not read")
			}
		}
	})
}
