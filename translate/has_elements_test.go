package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// hasElementsByWalk is hasElements as a walk of the array (its former
// form), kept to compare with.
func hasElementsByWalk(r gjson.Result) bool {
	if !r.IsArray() {
		return false
	}
	n := false
	r.ForEach(func(_, _ gjson.Result) bool {
		n = true
		return false
	})
	return n
}

// TestHasElementsSameAsWalk: the byte test agrees with a walk of the
// array on arrays empty and not, with white space of every kind, nested,
// and on what is not an array, read as a member of an object the way the
// stream decoders read "choices".
func TestHasElementsSameAsWalk(t *testing.T) {
	for _, v := range []string{
		`[]`, `[ ]`, "[\n\t\r ]", `[0]`, `[ {} ]`, "[\n{\"index\":0}]", `[[]]`, `[null]`, `[""]`, `["]"]`, `[ [ ] ]`,
		`{}`, `{"a":[]}`, `"[]"`, `0`, `null`, `true`,
	} {
		for _, doc := range []string{`{"choices":` + v + `}`, `{"choices": ` + v + ` ,"x":1}`} {
			if !gjson.Valid(doc) {
				t.Fatalf("test input not JSON: %s", doc)
			}
			r := gjson.Get(doc, "choices")
			if got, want := hasElements(r), hasElementsByWalk(r); got != want {
				t.Errorf("%s: hasElements %v, walk %v", doc, got, want)
			}
		}
	}
	if hasElements(gjson.Get(`{}`, "choices")) {
		t.Error("absent member has elements")
	}
}
