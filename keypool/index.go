package keypool

import (
	"math/bits"
	"time"
)

// This file holds the small data structures that let selection avoid
// scanning every key per request: a bitset over key slots and an indexed
// binary heap of keys. The pool keeps only ready keys (no gate closed)
// in its strategy's index; time-gated keys wait in a heap ordered by the
// time their gate opens (see Pool.timed), so a cooling key costs nothing
// per request.

// bitset is a set of small non-negative integers (key slots).
type bitset []uint64

func (b *bitset) grow(n int) {
	if w := (n + 63) / 64; len(*b) < w {
		*b = append(*b, make([]uint64, w-len(*b))...)
	}
}

func (b bitset) set(i int)   { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) clear(i int) { b[i>>6] &^= 1 << (uint(i) & 63) }
func (b bitset) has(i int) bool {
	return i>>6 < len(b) && b[i>>6]&(1<<(uint(i)&63)) != 0
}

// next returns the first member >= i, or -1.
func (b bitset) next(i int) int {
	w := i >> 6
	if w >= len(b) {
		return -1
	}
	x := b[w] &^ (1<<(uint(i)&63) - 1)
	for {
		if x != 0 {
			return w<<6 + bits.TrailingZeros64(x)
		}
		w++
		if w >= len(b) {
			return -1
		}
		x = b[w]
	}
}

// prio is a heap entry's sort key, compared lexicographically (a, then
// b, then c, then the key's index). It is stored in the entry so that
// sifting compares entries in one contiguous slice without touching the
// keys themselves (at 10 000 keys, chasing key pointers was the main cost
// of a pick).
type prio struct {
	a float64
	b int64
	c uint64
}

type heapEntry struct {
	p   prio
	idx int32 // the key's index in Pool.keys
	k   *Key
}

func (x *heapEntry) less(y *heapEntry) bool {
	switch {
	case x.p.a != y.p.a:
		return x.p.a < y.p.a
	case x.p.b != y.p.b:
		return x.p.b < y.p.b
	case x.p.c != y.p.c:
		return x.p.c < y.p.c
	}
	return x.idx < y.idx
}

// keyHeap is a binary min-heap of keys ordered by prio(k), with each
// key's position kept by key index, so a key can be removed or re-ordered
// in O(log n). A key's sort key is computed when it is pushed or updated;
// whoever changes what prio reads must call update.
type keyHeap struct {
	es   []heapEntry
	pos  []int32 // by key index; -1 when absent
	prio func(k *Key) prio
}

// newKeyHeap returns an empty heap for keys with indexes below n.
func newKeyHeap(n int, prio func(k *Key) prio) keyHeap {
	h := keyHeap{pos: make([]int32, n), prio: prio}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *keyHeap) Len() int { return len(h.es) }

func (h *keyHeap) top() *Key {
	if len(h.es) == 0 {
		return nil
	}
	return h.es[0].k
}

func (h *keyHeap) push(k *Key) {
	h.pos[k.idx] = int32(len(h.es))
	h.es = append(h.es, heapEntry{p: h.prio(k), idx: int32(k.idx), k: k})
	h.up(len(h.es) - 1)
}

func (h *keyHeap) remove(k *Key) {
	i := int(h.pos[k.idx])
	if i < 0 {
		return
	}
	last := len(h.es) - 1
	h.swap(i, last)
	h.es[last] = heapEntry{}
	h.es = h.es[:last]
	h.pos[k.idx] = -1
	if i < last {
		h.fix(i)
	}
}

// update recomputes k's sort key and restores the order (pushing k when
// absent).
func (h *keyHeap) update(k *Key) {
	i := int(h.pos[k.idx])
	if i < 0 {
		h.push(k)
		return
	}
	h.es[i].p = h.prio(k)
	h.fix(i)
}

// reorder recomputes every sort key and rebuilds the heap, O(n).
func (h *keyHeap) reorder() {
	for i := range h.es {
		h.es[i].p = h.prio(h.es[i].k)
	}
	for i := len(h.es)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *keyHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *keyHeap) swap(i, j int) {
	h.es[i], h.es[j] = h.es[j], h.es[i]
	h.pos[h.es[i].idx] = int32(i)
	h.pos[h.es[j].idx] = int32(j)
}

func (h *keyHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.es[i].less(&h.es[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *keyHeap) down(i int) bool {
	start, n := i, len(h.es)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.es[r].less(&h.es[l]) {
			j = r
		}
		if !h.es[j].less(&h.es[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > start
}

// bestWhere returns the least key for which ok holds, exploring the heap
// best-first, so it looks at only as many keys as ok rejects (plus their
// children). It does not modify the heap; the scratch slice is reused
// between calls.
func (h *keyHeap) bestWhere(ok func(*Key) bool, scratch *[]int) *Key {
	if len(h.es) == 0 {
		return nil
	}
	if ok == nil || ok(h.es[0].k) {
		return h.es[0].k
	}
	// frontier: a small min-heap of heap indexes, ordered by their entries
	fr := (*scratch)[:0]
	defer func() { *scratch = fr[:0] }()
	less := func(a, b int) bool { return h.es[a].less(&h.es[b]) }
	push := func(i int) {
		if i >= len(h.es) {
			return
		}
		fr = append(fr, i)
		for c := len(fr) - 1; c > 0; {
			p := (c - 1) / 2
			if !less(fr[c], fr[p]) {
				break
			}
			fr[c], fr[p] = fr[p], fr[c]
			c = p
		}
	}
	pop := func() int {
		top := fr[0]
		last := len(fr) - 1
		fr[0] = fr[last]
		fr = fr[:last]
		for i := 0; ; {
			l := 2*i + 1
			if l >= len(fr) {
				break
			}
			j := l
			if r := l + 1; r < len(fr) && less(fr[r], fr[l]) {
				j = r
			}
			if !less(fr[j], fr[i]) {
				break
			}
			fr[i], fr[j] = fr[j], fr[i]
			i = j
		}
		return top
	}
	push(1)
	push(2)
	for len(fr) > 0 {
		i := pop()
		if ok(h.es[i].k) {
			return h.es[i].k
		}
		push(2*i + 1)
		push(2*i + 2)
	}
	return nil
}

// newTimedHeap orders time-gated keys by the time their gate opens
// (Key.wakeAt).
func newTimedHeap(n int) keyHeap {
	return newKeyHeap(n, func(k *Key) prio { return prio{b: k.wakeAt.UnixNano()} })
}

// setWake files k in the timed heap to be re-examined at t.
func (h *keyHeap) setWake(k *Key, t time.Time) {
	if h.pos[k.idx] >= 0 && k.wakeAt.Equal(t) {
		return
	}
	k.wakeAt = t
	h.update(k)
}
