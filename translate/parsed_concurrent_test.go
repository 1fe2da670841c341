package translate

import (
	"bytes"
	"reflect"
	"sync"
	"testing"
)

// TestParseScratchConcurrent: requests of every dialect parsed at once on
// several goroutines (the parse buffers shared through parseScratchPool),
// some of them failing validation midway through their content (a bad
// part type, a bad role, after other parts were read), each encode to
// the bytes (or the error) the request makes parsed alone: nothing of
// one request reaches another's upstream body. Run under -race too.
func TestParseScratchConcurrent(t *testing.T) {
	type job struct {
		d, to   Dialect
		body    []byte
		want    []byte
		wantErr error
		bad     bool // the parse fails
	}
	var jobs []job
	for _, b := range testBodies(t) {
		variants := [][]byte{b,
			bytes.Replace(b, []byte(`"type":"text"`), []byte(`"type":"bogus-part"`), -1),
			bytes.Replace(b, []byte(`"role":"assistant"`), []byte(`"role":"bogus-role"`), 1),
		}
		for _, v := range variants {
			for _, d := range parsedDialects {
				if _, err := ParseRequestFor(d, v, d); err != nil {
					jobs = append(jobs, job{d: d, to: d, body: v, bad: true})
					continue
				}
				for _, to := range parsedDialects {
					if to == d {
						continue
					}
					want, wantErr := TranslateRequest(d, to, v, "up-model")
					jobs = append(jobs, job{d: d, to: to, body: v, want: want, wantErr: wantErr})
				}
			}
		}
	}
	bad := 0
	for _, j := range jobs {
		if j.bad {
			bad++
		}
	}
	if len(jobs)-bad < 300 || bad < 50 {
		t.Fatalf("only %d good and %d failing requests", len(jobs)-bad, bad)
	}
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range jobs {
				j := jobs[(i*(2*w+1)+w*97)%len(jobs)] // each worker its own order
				r, err := ParseRequestFor(j.d, j.body, j.to)
				if j.bad {
					if err == nil {
						errs <- "parsed a failing request: " + string(j.body[:min(len(j.body), 200)])
						return
					}
					continue
				}
				if err != nil {
					errs <- "parse: " + err.Error()
					return
				}
				got, gotErr := r.Encode(j.to, "up-model")
				if !bytes.Equal(got, j.want) || !reflect.DeepEqual(gotErr, j.wantErr) {
					errs <- j.d.String() + "→" + j.to.String() + " " + string(j.body[:min(len(j.body), 300)]) + ":\n" + string(got) + "\nwant\n" + string(j.want)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	t.Logf("%d requests, %d of them failing, on %d goroutines", len(jobs), bad, workers)
}
