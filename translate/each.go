package translate

import "github.com/tidwall/gjson"

// eachObject calls fn with the index and value of each element of arr, in
// order, and returns the first error fn returns (stopping there). An
// element that is not an object is a type error at its path base[i].
// Callers pass an array or a missing value (no elements). fn gets the index
// rather than the path so that base stays on the caller's stack.
func eachObject(arr gjson.Result, base fpath, c *checker, fn func(i int, x gjson.Result) *Error) *Error {
	var err *Error
	i := 0
	arr.ForEach(func(_, x gjson.Result) bool {
		j := i
		i++
		if !x.IsObject() {
			err = c.typeErr(base.at(j), wantObj, x)
			return false
		}
		err = fn(j, x)
		return err == nil
	})
	return err
}

// roleErr is the error for a message role the dialect does not know: when
// translating (or when role is empty) a bad-value error listing allowed,
// otherwise an unsupported-request error whose message ends with detail.
func roleErr(c *checker, p fpath, role string, allowed []string, detail string) *Error {
	if c.translate || role == "" {
		return c.badValue(p, role, allowed)
	}
	return unsupportedAt(p, detail)
}
