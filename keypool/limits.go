package keypool

import (
	"math"
	"time"
)

// limits is a key's per-key rate and budget state: the rpm window, the
// tpm bucket, the quota period counters and the usage window of
// least_used. Guarded by the pool's mutex.
type limits struct {
	// rpm: times (Unix ns) of the last RPM leases, a ring; exact sliding
	// 60 s window.
	rpmLog  []int64
	rpmHead int

	// tpm: a token bucket kept as the level of tokens "owed", draining
	// at TPM per minute; the key is eligible while level < TPM.
	tpmLevel float64
	tpmAt    time.Time

	// quota: counters of the current period.
	qPeriod int64
	qInit   bool
	qFrom   int64 // current period [qFrom, qTo) in Unix ns, for a fast roll check
	qTo     int64
	qReq    int64
	qTok    int64

	// least_used: counters of the current usage window.
	winIdx int64
	winReq int64
	winTok int64
}

// rpmGate reports whether one more lease fits in the 60 s window, and
// else when it will.
func (l *limits) rpmGate(rpm int, now time.Time) (time.Time, bool) {
	if rpm <= 0 || len(l.rpmLog) < rpm {
		return time.Time{}, true
	}
	oldest := l.rpmLog[l.rpmHead] // the ring is full: head is the oldest
	free := time.Unix(0, oldest).Add(time.Minute)
	if !now.Before(free) {
		return time.Time{}, true
	}
	return free, false
}

// rpmRecord notes a lease at now.
func (l *limits) rpmRecord(rpm int, now time.Time) {
	if rpm <= 0 {
		return
	}
	if len(l.rpmLog) < rpm {
		// filling up: oldest first, so the oldest is at index 0 (= rpmHead)
		l.rpmLog = append(l.rpmLog, now.UnixNano())
		return
	}
	l.rpmLog[l.rpmHead] = now.UnixNano()
	l.rpmHead = (l.rpmHead + 1) % rpm
}

// rpmResize keeps the ring consistent after the configured rpm changes,
// keeping the newest entries.
func (l *limits) rpmResize(rpm int) {
	if len(l.rpmLog) == 0 || len(l.rpmLog) == rpm && rpm > 0 {
		return
	}
	if rpm <= 0 {
		l.rpmLog, l.rpmHead = nil, 0
		return
	}
	lin := make([]int64, 0, len(l.rpmLog)) // oldest first
	lin = append(lin, l.rpmLog[l.rpmHead:]...)
	lin = append(lin, l.rpmLog[:l.rpmHead]...)
	if len(lin) > rpm {
		lin = lin[len(lin)-rpm:]
	}
	l.rpmLog, l.rpmHead = lin, 0
}

// tpmDrain brings the bucket level to now.
func (l *limits) tpmDrain(tpm int64, now time.Time) {
	if l.tpmLevel > 0 && now.After(l.tpmAt) {
		l.tpmLevel = max(0, l.tpmLevel-float64(tpm)*float64(now.Sub(l.tpmAt))/float64(time.Minute))
	}
	l.tpmAt = now
}

// tpmGate reports whether the bucket has room, and else when it will.
func (l *limits) tpmGate(tpm int64, now time.Time) (time.Time, bool) {
	if tpm <= 0 {
		return time.Time{}, true
	}
	l.tpmDrain(tpm, now)
	if l.tpmLevel < float64(tpm) {
		return time.Time{}, true
	}
	over := l.tpmLevel - float64(tpm)
	return now.Add(time.Duration(over/float64(tpm)*float64(time.Minute)) + time.Millisecond), false
}

// tpmAdd charges n tokens (negative to refund a reservation).
func (l *limits) tpmAdd(tpm int64, n int64, now time.Time) {
	if tpm <= 0 || n == 0 {
		return
	}
	l.tpmDrain(tpm, now)
	l.tpmLevel = max(0, l.tpmLevel+float64(n))
}

// periodOf returns the index of the period containing now.
func periodOf(q *Quota, now time.Time) int64 {
	d := now.Sub(q.Anchor)
	if q.Anchor.IsZero() {
		d = time.Duration(now.UnixNano())
	}
	n := int64(d / q.Period)
	if d < 0 && d%q.Period != 0 {
		n--
	}
	return n
}

func periodStart(q *Quota, n int64) time.Time {
	a := q.Anchor
	if a.IsZero() {
		a = time.Unix(0, 0)
	}
	return a.Add(time.Duration(n) * q.Period)
}

// roll starts a new period when now has left the current one; it
// reports whether it did.
func (l *limits) roll(q *Quota, now time.Time) bool {
	if t := now.UnixNano(); l.qInit && t >= l.qFrom && t < l.qTo {
		return false
	}
	n := periodOf(q, now)
	if l.qInit && n == l.qPeriod {
		return false
	}
	l.qInit, l.qPeriod, l.qReq, l.qTok = true, n, 0, 0
	l.qFrom, l.qTo = periodStart(q, n).UnixNano(), periodStart(q, n+1).UnixNano()
	return true
}

func (l *limits) periodEnd(q *Quota) time.Time { return periodStart(q, l.qPeriod+1) }

func (l *limits) quotaSpent(q *Quota) bool {
	return q.Requests > 0 && l.qReq >= q.Requests || q.Tokens > 0 && l.qTok >= q.Tokens
}

// usedFrac is the share of the period budget spent, the larger of the
// request and token shares, in [0, 1+].
func (l *limits) usedFrac(q *Quota) float64 {
	f := 0.0
	if q.Requests > 0 {
		f = float64(l.qReq) / float64(q.Requests)
	}
	if q.Tokens > 0 {
		f = max(f, float64(l.qTok)/float64(q.Tokens))
	}
	return f
}

// elapsedFrac is the share of the current period gone by at now.
func (l *limits) elapsedFrac(q *Quota, now time.Time) float64 {
	return float64(now.Sub(periodStart(q, l.qPeriod))) / float64(q.Period)
}

// paceGate reports whether one more request keeps the key within lead of
// its budget line (budget x elapsed share of the period), and else when
// the line will have moved far enough. One request ahead of the line is
// always allowed. The gate opens at a whole nanosecond computed once, so
// the check and the reported time always agree.
func (l *limits) paceGate(q *Quota, now time.Time, lead float64) (time.Time, bool) {
	need := 0.0 // the elapsed share at which the next request is allowed
	if q.Requests > 0 {
		r := float64(q.Requests)
		need = float64(l.qReq+1)/r - max(lead, 1/r)
	}
	if q.Tokens > 0 {
		need = max(need, float64(l.qTok)/float64(q.Tokens)-lead)
	}
	if need <= 0 {
		return time.Time{}, true
	}
	end := l.periodEnd(q)
	t := end
	if need < 1 {
		t = periodStart(q, l.qPeriod).Add(time.Duration(math.Ceil(need * float64(q.Period))))
	}
	if !now.Before(t) {
		return time.Time{}, true
	}
	return t, false
}

// window rolls the least_used usage window.
func (l *limits) window(w time.Duration, now time.Time) {
	if n := now.UnixNano() / int64(w); n != l.winIdx {
		l.winIdx, l.winReq, l.winTok = n, 0, 0
	}
}
