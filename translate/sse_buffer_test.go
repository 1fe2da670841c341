package translate

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestSSEReaderBufferSizing: the read buffer starts at 4 KiB and stays
// there for a paced stream (one small event per read), grows to 32 KiB
// when the upstream fills it in one read, grows to hold an event larger
// than that, and goes back to its pool on Release, after which Next
// fails.
func TestSSEReaderBufferSizing(t *testing.T) {
	ev := "data: " + strings.Repeat("x", 200) + "\n\n"
	paced := newEventReader([]byte(strings.Repeat(ev, 100)))
	r := NewSSEReader(paced)
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		n++
		if len(r.buf) != sseInitialBuffer {
			t.Fatalf("paced stream: buffer %d bytes after %d events", len(r.buf), n)
		}
	}
	if n != 100 || paced.reads < 100 {
		t.Fatalf("%d events in %d reads", n, paced.reads)
	}

	r = NewSSEReader(strings.NewReader(strings.Repeat(ev, 400))) // 81 KiB, read whole
	for i := 0; i < 30; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.buf) != sseBurstBuffer {
		t.Fatalf("fast upstream: buffer %d bytes, want %d", len(r.buf), sseBurstBuffer)
	}

	big := "data: " + strings.Repeat("y", 100<<10) + "\n\n"
	r = NewSSEReader(io.MultiReader(strings.NewReader(ev), newEventReader([]byte(big))))
	if e, err := r.Next(); err != nil || string(e.Raw) != ev {
		t.Fatalf("first event: %v %q", err, e.Raw)
	}
	e, err := r.Next()
	if err != nil || string(e.Raw) != big || len(e.Data) != 100<<10 {
		t.Fatalf("large event: %v, %d bytes", err, len(e.Raw))
	}
	if len(r.buf) < len(big) {
		t.Fatalf("buffer %d bytes for a %d-byte event", len(r.buf), len(big))
	}
	kept := e.Clone()
	r.Release()
	if r.buf != nil {
		t.Fatal("buffer kept after Release")
	}
	if _, err := r.Next(); err == nil || err == io.EOF {
		t.Fatalf("Next after Release: %v", err)
	}
	if !bytes.Equal(kept.Raw, []byte(big)) || len(kept.Data) != 100<<10 {
		t.Fatal("Clone does not own its bytes")
	}
}

// TestSSEReaderEOFBlockInPlace: a last block cut off at EOF gets its line
// terminators in the buffer, whatever room was left after it.
func TestSSEReaderEOFBlockInPlace(t *testing.T) {
	for _, n := range []int{1, sseInitialBuffer - 9, sseInitialBuffer - 8, sseInitialBuffer - 7, sseInitialBuffer - 6, sseInitialBuffer} {
		in := "data: " + strings.Repeat("z", n)
		evs := readAllEvents(t, newEventReader([]byte(in)))
		if len(evs) != 1 || string(evs[0].Raw) != in+"\n\n" || len(evs[0].Data) != n {
			t.Fatalf("n=%d: %d events, raw ends %q", n, len(evs), evs[0].Raw[max(0, len(evs[0].Raw)-8):])
		}
	}
}
