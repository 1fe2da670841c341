package keypool

import "time"

// affinityTable pins sessions to the key that served them last. It is an
// LRU map bounded to max entries; an entry expires ttl after the
// session's last request. Guarded by the pool's mutex.
type affinityTable struct {
	m          map[string]*affEntry
	head, tail *affEntry // most recently used first
	max        int
}

type affEntry struct {
	session    string
	fp         string // key fingerprint: survives reloads
	at         time.Time
	hits       int64 // requests placed on the session's key (fp) since it was pinned to it (put calls; a learned pin starts at 0)
	prev, next *affEntry
}

// get returns the fingerprint session is pinned to, "" when none or
// expired.
func (t *affinityTable) get(session string, now time.Time, ttl time.Duration) string {
	e := t.m[session]
	if e == nil {
		return ""
	}
	if now.Sub(e.at) >= ttl {
		t.unlink(e)
		delete(t.m, session)
		return ""
	}
	return e.fp
}

// put pins session to fp at now for a request placed on fp, counting it
// as a hit, evicting the least recently used entry when the table is full.
func (t *affinityTable) put(session, fp string, now time.Time, max int) {
	t.pin(session, fp, now, max).hits++
}

// pin pins session to fp at now without counting a hit (a pin learned from
// another instance, before any request of ours went to fp), evicting the
// least recently used entry when the table is full.
func (t *affinityTable) pin(session, fp string, now time.Time, max int) *affEntry {
	if t.m == nil {
		t.m = map[string]*affEntry{}
	}
	t.max = max
	e := t.m[session]
	if e != nil {
		t.unlink(e)
	} else {
		for len(t.m) >= t.max && t.tail != nil {
			old := t.tail
			t.unlink(old)
			delete(t.m, old.session)
		}
		e = &affEntry{session: session}
		t.m[session] = e
	}
	if e.fp != fp {
		e.hits = 0 // pinned to another key: its count starts afresh
	}
	e.fp, e.at = fp, now
	e.next = t.head
	if t.head != nil {
		t.head.prev = e
	}
	t.head = e
	if t.tail == nil {
		t.tail = e
	}
	return e
}

func (t *affinityTable) unlink(e *affEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// len returns the number of entries (expired ones included until
// touched or evicted).
func (t *affinityTable) len() int { return len(t.m) }
