package translate

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// readMembers are the top-level members the gateway itself acts on: the
// model it routes and scope-checks, whether the answer streams, and the
// stream options it sets for its usage accounting. A member whose name
// differs from one of them only in letter case is refused even alone
// (nameSet.add): an upstream that matches names case-insensitively
// would read it as the member the gateway did not.
var readMembers = [...]string{"model", "stream", "stream_options"}

// nameSet finds, among the member names of one JSON object added in
// order, the first that repeats an earlier one exactly or up to letter
// case (strings.EqualFold, Unicode simple folding: "MODEL", "Model" and
// "model" are one name, and so are "ſtream" and "stream"), or that folds
// to one of readMembers without being it. Go's encoding/json, the decoder
// of many OpenAI-compatible relays and local servers, matches member names
// that way and lets the last match win, while the gateway reads the exact
// name: {"model":"cheap-1","MODEL":"expensive"} would route and be
// scope-checked as one model and run as the other.
//
// The first 32 names are compared pairwise in a small array; past that, a
// map of folded names keeps the cost linear in the number of members (a
// body of 100 000 members must not cost 10^10 comparisons).
type nameSet struct {
	small [32]string
	n     int
	set   map[string]string // foldKey(name) -> the first name that folds to it
}

// add records name and reports the earlier name (or the member of
// readMembers) it repeats exactly or up to letter case, and whether it
// does.
func (s *nameSet) add(name string) (string, bool) {
	for _, m := range readMembers {
		if name != m && strings.EqualFold(name, m) {
			return m, true
		}
	}
	if s.set != nil {
		k := foldKey(name)
		if prev, ok := s.set[k]; ok {
			return prev, true
		}
		s.set[k] = name
		return "", false
	}
	for _, prev := range s.small[:s.n] {
		if strings.EqualFold(prev, name) {
			return prev, true
		}
	}
	s.small[s.n] = name
	s.n++
	if s.n == len(s.small) {
		s.set = make(map[string]string, 2*s.n)
		for _, prev := range s.small[:s.n] {
			if _, ok := s.set[foldKey(prev)]; !ok {
				s.set[foldKey(prev)] = prev
			}
		}
	}
	return "", false
}

// foldKey maps a name to one representative of its class under
// strings.EqualFold: each rune becomes the smallest rune of its
// unicode.SimpleFold orbit (ASCII letters their upper case), so two names
// are EqualFold exactly when their foldKeys are equal.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// repeatedMember is the error for a member name that repeats prev, an
// earlier member's name or one of readMembers, exactly or up to letter
// case (nameSet).
func repeatedMember(name, prev string) *Error {
	if name == prev {
		// decoders disagree on which copy wins (gjson: the first, most
		// others: the last), so a duplicate could route by one model and
		// run another
		return invalid(clip(name), "request body has the field %q more than once", clip(name))
	}
	return invalid(clip(name), "request body has the field %q, which differs from %q only in letter case", clip(name), clip(prev))
}

// repeatedUsageMember returns the error for a member of so, an OpenAI
// Chat request's stream_options object, that repeats "include_usage"
// exactly or up to letter case (nameSet's rule, one level down), nil when
// none does. The gateway reads the first exact "include_usage" and sets
// it to true for its own usage accounting (AddStreamUsage, which leaves
// the other members alone), while an upstream that decodes with Go's
// encoding/json reads the last match up to letter case: with
// {"include_usage":true,"Include_Usage":false} the upstream sent no usage
// chunk and the stream's tokens went unbooked.
func repeatedUsageMember(so gjson.Result) *Error {
	const member = "include_usage"
	var e *Error
	seen := false
	so.ForEach(func(k, _ gjson.Result) bool {
		name := k.String()
		switch {
		case !strings.EqualFold(name, member):
			return true
		case name != member:
			e = invalid("stream_options."+clip(name), "request body has the field %q in stream_options, which differs from %q only in letter case", clip(name), member)
		case seen:
			e = invalid("stream_options."+member, "request body has the field %q in stream_options more than once", member)
		default:
			seen = true
			return true
		}
		return false
	})
	return e
}
