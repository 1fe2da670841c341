package translate

import "github.com/tidwall/gjson"

// memberSet names the members of a JSON object that one walk reads
// (memberSet.read), each into its slot: the slot of names[i] is i. It is
// for objects read once per stream event, where collecting every member
// (fieldsInto) and then searching the collection for each name costs more
// than the walk: read keeps only the named members, found by their length
// first, and searches nothing afterwards.
type memberSet struct {
	names []string
	// byLen[n] holds the slots of the names n bytes long (names longer
	// than maxMemberName are not allowed)
	byLen [maxMemberName + 1][]uint8
}

// maxMemberName bounds the length of a memberSet's names; maxMembers
// bounds their number (read tracks the slots filled in a bit set).
const (
	maxMemberName = 32
	maxMembers    = 32
)

// newMemberSet returns the set of names, which must be distinct, at most
// maxMembers of them, each at most maxMemberName bytes long (it panics
// otherwise: the sets are package-level and fixed).
func newMemberSet(names ...string) *memberSet {
	if len(names) > maxMembers {
		panic("memberSet: too many names")
	}
	s := &memberSet{names: names}
	for i, n := range names {
		if len(n) > maxMemberName {
			panic("memberSet: name too long: " + n)
		}
		for _, j := range s.byLen[len(n)] {
			if names[j] == n {
				panic("memberSet: name repeated: " + n)
			}
		}
		s.byLen[len(n)] = append(s.byLen[len(n)], uint8(i))
	}
	return s
}

// read walks r once and sets dst[i] (len(dst) >= len(s.names)) to the
// first member of r named s.names[i], as fieldsInto(nil, r).get(names[i])
// finds it (names compared unescaped, the first of duplicates wins), or
// to the zero Result when r has none (or is not an object).
func (s *memberSet) read(r gjson.Result, dst []gjson.Result) {
	dst = dst[:len(s.names)]
	clear(dst)
	var seen uint32
	r.ForEach(func(k, v gjson.Result) bool {
		n := len(k.Str)
		if n > maxMemberName {
			return true
		}
		for _, i := range s.byLen[n] {
			if seen&(1<<i) == 0 && s.names[i] == k.Str {
				seen |= 1 << i
				dst[i] = v
				break
			}
		}
		return true
	})
}
