package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestChoiceMembersMatchesGet: a choice's members read in one walk
// (fieldsInto, as the Chat stream decoder reads them) are what
// c.Get("index"), c.Get("delta") and c.Get("finish_reason") find, first
// duplicate included, on well-formed, odd and hostile choices.
func TestChoiceMembersMatchesGet(t *testing.T) {
	for _, c := range []string{
		`{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}`,
		`{"delta":{"role":"assistant","content":""},"index":0}`,
		`{"index":1,"delta":{"content":"second"},"finish_reason":"stop"}`,
		`{"finish_reason":"length","index":0,"delta":{}}`,
		`{"index":0,"index":2,"delta":{"content":"a"},"delta":{"content":"b"},"finish_reason":"stop","finish_reason":null}`,
		`{"index":"0","delta":null,"finish_reason":5}`,
		`{"ind\u0065x":3,"delt\u0061":{"content":"esc"},"finish_reaso\u006e":"stop"}`,
		`{"index":1e2,"delta":"text"}`,
		`{}`,
		`[1,2]`,
		`"choice"`,
		`7`,
		`null`,
	} {
		g := gjson.Parse(c)
		f := fieldsOf(g)
		index, delta, fr := f.get("index").Int(), f.get("delta"), f.get("finish_reason")
		if want := g.Get("index").Int(); index != want {
			t.Errorf("%s: index %d, want %d", c, index, want)
		}
		if want := g.Get("delta"); delta.Raw != want.Raw || delta.Exists() != want.Exists() {
			t.Errorf("%s: delta %q, want %q", c, delta.Raw, want.Raw)
		}
		if want := g.Get("finish_reason"); fr.Raw != want.Raw || fr.Type != want.Type {
			t.Errorf("%s: finish_reason %q, want %q", c, fr.Raw, want.Raw)
		}
	}
}
