package translate

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"
)

// memberSetsOfDecoders are the sets the stream decoders read, each with
// the members the tests feed it.
var memberSetsOfDecoders = []*memberSet{chatChunkSet, chatChoiceSet, chatDeltaSet}

// checkMemberSetSameAsFields fails t unless s.read(r) gives, for every
// name of s, what fieldsInto's collection gives for it (its former form):
// the same first member, or none.
func checkMemberSetSameAsFields(t *testing.T, s *memberSet, r gjson.Result) {
	t.Helper()
	got := make([]gjson.Result, len(s.names))
	for i := range got {
		got[i] = gjson.Parse(`"stale"`) // read clears what it does not find
	}
	s.read(r, got)
	f := fieldsInto(nil, r)
	for i, n := range s.names {
		want := f.get(n)
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("%s in %q: read %#v, fieldsInto %#v", n, r.Raw, got[i], want)
		}
	}
}

// TestMemberSetSameAsFields: memberSet.read finds the members that
// fieldsInto's collection and its get find, on the chunks of every
// fixture Chat stream (the chunk, its choices, their deltas) and on
// objects with duplicate, escaped, absent and near-miss names, white
// space, and values that are not objects.
func TestMemberSetSameAsFields(t *testing.T) {
	docs := []string{
		`{"error":{"message":"x"},"error":"second","id":"a","id":"b"}`,
		`{"\u0069d":"escaped","model" : "m" ,"created":1.5e3,"usage":null,"choices":[]}`,
		`{"choices":[{"index":0,"delta":{"content":"a","content":"b","refusal":null},"finish_reason":"stop","stop_reason":"END"}]}`,
		`{"promptFeedback":{"blockReason":"SAFETY"},"prompt_feedback":{},"prompt_filter_results":[],"usage":{"prompt_tokens":1}}`,
		`{"reasoning_content":"r","reasoning":"s","reasoning_details":[{"text":"t"}],"tool_calls":[{"index":0}]}`,
		`{"errors":1,"ids":2,"i":3,"":4,"choice":5,"Error":6,"a_very_long_member_name_longer_than_thirty_two_bytes":7}`,
		"{\n\t\"index\"\t:\n1 , \"delta\" : { } }",
		`{}`, `[]`, `[{"error":1}]`, `"error"`, `0`, `null`, ``, `{"error":`, `{"id":"x",}`, `{"id"}`,
	}
	for _, d := range docs {
		for _, s := range memberSetsOfDecoders {
			checkMemberSetSameAsFields(t, s, gjson.Parse(d))
		}
	}
	n := 0
	for _, fx := range streamFixtures(t, OpenAIChat) {
		for _, ev := range readAllEvents(t, bytes.NewReader(fx.body)) {
			chunk := gjson.ParseBytes(ev.Data)
			checkMemberSetSameAsFields(t, chatChunkSet, chunk)
			chunk.Get("choices").ForEach(func(_, c gjson.Result) bool {
				checkMemberSetSameAsFields(t, chatChoiceSet, c)
				checkMemberSetSameAsFields(t, chatDeltaSet, c.Get("delta"))
				return true
			})
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d fixture chunks read", n)
	}
}

// TestMemberSetRefusesBadNames: a set's names are distinct, short and few.
func TestMemberSetRefusesBadNames(t *testing.T) {
	for name, names := range map[string][]string{
		"repeated": {"a", "b", "a"},
		"too long": {"a_very_long_member_name_longer_than_thirty_two_bytes"},
		"too many": make([]string, maxMembers+1),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: newMemberSet(%q) did not panic", name, names)
				}
			}()
			newMemberSet(names...)
		}()
	}
}

// FuzzMemberSet: memberSet.read agrees with fieldsInto's collection on
// any bytes, for every set the decoders read.
func FuzzMemberSet(f *testing.F) {
	for _, s := range []string{`{"id":"a","id":"b","choices":[{"index":0,"delta":{"content":"x"}}]}`, `{"\u0065rror":1}`, `{"usage" : {"a":1},"created":"1"}`, `[1,{"id":2}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		r := gjson.ParseBytes(d)
		for _, s := range memberSetsOfDecoders {
			checkMemberSetSameAsFields(t, s, r)
		}
	})
}
