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

// scan calls f on members in cyclic order starting at from (from, from+1,
// ..., wrapping past n to 0 ... from-1) until f returns true; it returns
// that member or -1.
func (b bitset) scan(from, n int, f func(i int) bool) int {
	if from >= n {
		from = 0
	}
	for i := b.next(from); i >= 0 && i < n; i = b.next(i + 1) {
		if f(i) {
			return i
		}
	}
	for i := b.next(0); i >= 0 && i < from; i = b.next(i + 1) {
		if f(i) {
			return i
		}
	}
	return -1
}

// keyHeap is a binary min-heap of keys under less, with each key's
// position kept in the field pos returns (-1 when absent), so a key can be
// removed or re-ordered in O(log n).
type keyHeap struct {
	ks   []*Key
	less func(a, b *Key) bool
	pos  func(k *Key) *int
}

func (h *keyHeap) Len() int { return len(h.ks) }

func (h *keyHeap) top() *Key {
	if len(h.ks) == 0 {
		return nil
	}
	return h.ks[0]
}

func (h *keyHeap) contains(k *Key) bool { return *h.pos(k) >= 0 }

func (h *keyHeap) push(k *Key) {
	*h.pos(k) = len(h.ks)
	h.ks = append(h.ks, k)
	h.up(len(h.ks) - 1)
}

func (h *keyHeap) remove(k *Key) {
	i := *h.pos(k)
	if i < 0 {
		return
	}
	last := len(h.ks) - 1
	h.swap(i, last)
	h.ks[last] = nil
	h.ks = h.ks[:last]
	*h.pos(k) = -1
	if i < last {
		h.fix(i)
	}
}

// pop removes and returns the minimum.
func (h *keyHeap) pop() *Key {
	k := h.top()
	if k != nil {
		h.remove(k)
	}
	return k
}

// update restores the order after k's sort key changed (pushing it when
// absent).
func (h *keyHeap) update(k *Key) {
	if i := *h.pos(k); i >= 0 {
		h.fix(i)
	} else {
		h.push(k)
	}
}

func (h *keyHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *keyHeap) swap(i, j int) {
	h.ks[i], h.ks[j] = h.ks[j], h.ks[i]
	*h.pos(h.ks[i]) = i
	*h.pos(h.ks[j]) = j
}

func (h *keyHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.ks[i], h.ks[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *keyHeap) down(i int) bool {
	start, n := i, len(h.ks)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(h.ks[r], h.ks[l]) {
			j = r
		}
		if !h.less(h.ks[j], h.ks[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > start
}

// bestWhere returns the least key for which ok holds, exploring the heap
// best-first, so it looks at only as many keys as ok rejects (plus their
// children). It does not modify the heap. limit bounds the keys examined
// (0: no bound); the scratch slice is reused between calls.
func (h *keyHeap) bestWhere(ok func(*Key) bool, scratch *[]int) *Key {
	if len(h.ks) == 0 {
		return nil
	}
	if ok == nil || ok(h.ks[0]) {
		return h.ks[0]
	}
	// frontier: a small min-heap of heap indexes, ordered by their keys
	fr := (*scratch)[:0]
	defer func() { *scratch = fr[:0] }()
	less := func(a, b int) bool { return h.less(h.ks[a], h.ks[b]) }
	push := func(i int) {
		if i >= len(h.ks) {
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
		if ok(h.ks[i]) {
			return h.ks[i]
		}
		push(2*i + 1)
		push(2*i + 2)
	}
	return nil
}

// timedHeap orders time-gated keys by the time their gate opens.
func newTimedHeap() keyHeap {
	return keyHeap{
		less: func(a, b *Key) bool { return a.wakeAt.Before(b.wakeAt) },
		pos:  func(k *Key) *int { return &k.tpos },
	}
}

// setWake files k in the timed heap to be re-examined at t.
func (h *keyHeap) setWake(k *Key, t time.Time) {
	if k.tpos >= 0 && k.wakeAt.Equal(t) {
		return
	}
	k.wakeAt = t
	h.update(k)
}
