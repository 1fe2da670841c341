package translate

import (
	"strconv"
	"strings"
	"testing"
)

// TestDeepNestingRejectedBeforeParsing: a body nesting arrays or objects
// deeper than MaxNesting is refused by a flat scan (no parser recursion),
// with nesting inside strings not counted.
func TestDeepNestingRejectedBeforeParsing(t *testing.T) {
	deep := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}]}`
	for _, d := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		_, _, err := RequestInfo(d, []byte(deep))
		if err == nil || !strings.Contains(err.Error(), "levels deep") {
			t.Fatalf("%v: %v", d, err)
		}
	}
	if !tooDeep([]byte(strings.Repeat("{\"a\":", MaxNesting+1)), MaxNesting) || tooDeep([]byte(strings.Repeat("[", MaxNesting)), MaxNesting) {
		t.Fatal("depth bound off by one")
	}
	// brackets inside strings, escaped quotes included, are text
	inString := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`[\"{`, 5000) + `"}]}`
	if _, _, err := RequestInfo(OpenAIChat, []byte(inString)); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	}
}

// TestManyTopLevelKeys: a body of 100 000 distinct top-level keys is
// checked for duplicates in linear time (a quadratic check took minutes),
// and a duplicate far down is still found.
func TestManyTopLevelKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[{"role":"user","content":"hi"}]`)
	for i := range 100000 {
		b.WriteString(`,"k` + strconv.Itoa(i) + `":0`)
	}
	if e := duplicateTopLevelKey([]byte(b.String() + "}")); e != nil {
		t.Fatalf("no duplicate expected, got %v", e)
	}
	if e := duplicateTopLevelKey([]byte(b.String() + `,"k99999":1}`)); e == nil || e.Param != "k99999" {
		t.Fatalf("duplicate k99999 not found: %v", e)
	}
}
