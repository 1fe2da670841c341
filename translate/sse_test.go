package translate

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"testing"
	"testing/iotest"
)

// splitReader returns its chunks one Read at a time.
type splitReader struct{ chunks [][]byte }

func (s *splitReader) Read(p []byte) (int, error) {
	for len(s.chunks) > 0 && len(s.chunks[0]) == 0 {
		s.chunks = s.chunks[1:]
	}
	if len(s.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.chunks[0])
	s.chunks[0] = s.chunks[0][n:]
	return n, nil
}

// readAllEvents returns r's events, each cloned (Next's are views of the
// reader's buffer, valid until the next call).
func readAllEvents(t testing.TB, r io.Reader) []SSEEvent {
	t.Helper()
	sr := NewSSEReader(r)
	var evs []SSEEvent
	for {
		ev, err := sr.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		evs = append(evs, ev.Clone())
	}
}

func TestSSEReaderBasics(t *testing.T) {
	in := "\xEF\xBB\xBF: comment\r\n\r\nevent: a\r\ndata: one\r\ndata:two\r\nid: 7\r\nretry: 300\r\n\r\n" +
		"data: x\rdata: y\r\rdata: {\"k\":1}\n\nevent: ping\ndata: last"
	evs := readAllEvents(t, bytes.NewReader([]byte(in)))
	if len(evs) != 5 {
		t.Fatalf("got %d events: %+v", len(evs), evs)
	}
	if evs[0].Data != nil || string(evs[0].Raw) != ": comment\r\n\r\n" {
		t.Errorf("comment block: %+v", evs[0])
	}
	e := evs[1]
	if e.Event != "a" || string(e.Data) != "one\ntwo" || e.ID != "7" || e.Retry != 300 {
		t.Errorf("event 1: %+v", e)
	}
	if string(e.Raw) != "event: a\r\ndata: one\r\ndata:two\r\nid: 7\r\nretry: 300\r\n\r\n" {
		t.Errorf("raw 1: %q", e.Raw)
	}
	if string(evs[2].Data) != "x\ny" || string(evs[2].Raw) != "data: x\rdata: y\r\r" {
		t.Errorf("event 2: %+v", evs[2])
	}
	if string(evs[3].Data) != `{"k":1}` || evs[3].Retry != -1 {
		t.Errorf("event 3: %+v", evs[3])
	}
	if evs[4].Event != "ping" || string(evs[4].Data) != "last" || string(evs[4].Raw) != "event: ping\ndata: last\n\n" {
		t.Errorf("final unterminated event: %+v %q", evs[4], evs[4].Raw)
	}
}

func TestSSEReaderEmptyAndErrors(t *testing.T) {
	if evs := readAllEvents(t, bytes.NewReader(nil)); len(evs) != 0 {
		t.Fatal("events from empty input")
	}
	if evs := readAllEvents(t, bytes.NewReader([]byte("\n\n\r\n"))); len(evs) != 0 {
		t.Fatal("events from blank lines")
	}
	boom := errors.New("boom")
	sr := NewSSEReader(io.MultiReader(bytes.NewReader([]byte("data: a\n\ndata: b")), iotest.ErrReader(boom)))
	ev, err := sr.Next()
	if err != nil || string(ev.Data) != "a" {
		t.Fatalf("first: %v %q", err, ev.Data)
	}
	ev, err = sr.Next()
	if err != nil || string(ev.Data) != "b" {
		t.Fatalf("partial event before error: %v %q", err, ev.Data)
	}
	if _, err = sr.Next(); err != boom {
		t.Fatalf("want boom, got %v", err)
	}
}

// TestSSEReaderSplits checks that every fixture stream yields the same
// events however its bytes are split across reads.
func TestSSEReaderSplits(t *testing.T) {
	for _, d := range []Dialect{OpenAIChat, AnthropicMessages, OpenAIResponses} {
		for _, fx := range streamFixtures(t, d) {
			want := readAllEvents(t, bytes.NewReader(fx.body))
			if len(want) == 0 {
				t.Fatalf("%s: no events", fx.name)
			}
			var joined []byte
			for _, e := range want {
				joined = append(joined, e.Raw...)
			}
			if !bytes.Equal(joined, fx.body) && !bytes.Equal(joined, append(bytes.Clone(fx.body), '\n')) && !bytes.Equal(joined, append(bytes.Clone(fx.body), '\n', '\n')) {
				t.Errorf("%s: raw bytes do not add up to the input", fx.name)
			}
			check := func(label string, r io.Reader) {
				got := readAllEvents(t, r)
				if len(got) != len(want) {
					t.Fatalf("%s %s: %d events, want %d", fx.name, label, len(got), len(want))
				}
				for i := range got {
					if got[i].Event != want[i].Event || !bytes.Equal(got[i].Data, want[i].Data) || !bytes.Equal(got[i].Raw, want[i].Raw) {
						t.Fatalf("%s %s: event %d differs", fx.name, label, i)
					}
				}
			}
			check("one-byte", iotest.OneByteReader(bytes.NewReader(fx.body)))
			for _, at := range splitPoints(len(fx.body), 300) {
				check("split", &splitReader{chunks: [][]byte{fx.body[:at], fx.body[at:]}})
			}
		}
	}
}

// splitPoints returns every split point of an n-byte input when n <= max,
// otherwise max random ones (fixed seed) plus the ends.
func splitPoints(n, max int) []int {
	if n <= max {
		p := make([]int, n+1)
		for i := range p {
			p[i] = i
		}
		return p
	}
	rng := rand.New(rand.NewSource(int64(n)))
	p := []int{0, 1, n - 1, n}
	for len(p) < max {
		p = append(p, rng.Intn(n+1))
	}
	return p
}

// TestSSEReaderLineEndsMixed: the reader finds every line end when LF,
// CR and CRLF lines follow one another in one read, in any order, after
// long LF-only stretches, and when the reads split them anywhere: the
// events' data are those of a reference reading that splits lines at
// each terminator, and their raw bytes add up to the input.
func TestSSEReaderLineEndsMixed(t *testing.T) {
	var in []byte
	ends := []string{"\n", "\r", "\r\n"}
	for i := 0; i < 60; i++ {
		end := ends[(i/7+i)%3]
		if i%11 < 6 {
			end = "\n" // long LF-only stretches
		}
		in = append(in, "data: {\"n\":"...)
		in = append(in, byte('0'+i%10))
		in = append(in, '}')
		in = append(in, end...)
		if i%4 == 0 {
			in = append(in, "data: more"...)
			in = append(in, ends[i%3]...)
		}
		in = append(in, end...)
	}
	// the reference: lines split at CRLF, CR or LF; blocks at blank lines
	var want []string
	var data []string
	for _, l := range bytes.Split(bytes.ReplaceAll(bytes.ReplaceAll(in, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			if data != nil {
				want = append(want, string(bytes.Join(func() [][]byte {
					var b [][]byte
					for _, d := range data {
						b = append(b, []byte(d))
					}
					return b
				}(), []byte("\n"))))
			}
			data = nil
			continue
		}
		data = append(data, string(bytes.TrimPrefix(l, []byte("data: "))))
	}
	check := func(label string, r io.Reader) {
		t.Helper()
		got := readAllEvents(t, r)
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", label, len(got), len(want))
		}
		var raw []byte
		for i := range got {
			if string(got[i].Data) != want[i] {
				t.Fatalf("%s: event %d data %q, want %q", label, i, got[i].Data, want[i])
			}
			raw = append(raw, got[i].Raw...)
		}
		if !bytes.Equal(raw, in) {
			t.Fatalf("%s: raw bytes do not add up to the input", label)
		}
	}
	check("whole", bytes.NewReader(in))
	check("one-byte", iotest.OneByteReader(bytes.NewReader(in)))
	for _, at := range splitPoints(len(in), 400) {
		check("split", &splitReader{chunks: [][]byte{in[:at], in[at:]}})
	}
}
