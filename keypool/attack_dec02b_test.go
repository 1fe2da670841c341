package keypool

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// TestAttackDec02bHugeUsageKeepsQuotaShut: two concurrent leases whose
// upstream reported the largest token count (a hostile or broken usage
// figure clamped to math.MaxInt64) leave the key's token quota used up;
// the sum must not wrap negative and open the quota again ("never stops").
func TestAttackDec02bHugeUsageKeepsQuotaShut(t *testing.T) {
	kcs := keys(1)
	kcs[0].Quota = Quota{Tokens: 1000, Period: time.Hour}
	p, _ := newPoolWith(t, Settings{MaxConcurrencyPerKey: 10}, kcs)
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: Success, Tokens: math.MaxInt64})
	b.Release(Outcome{Kind: Success, Tokens: math.MaxInt64})
	_, err := p.Acquire(context.Background(), AcquireOptions{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Keys[0].Reason != "quota" {
		t.Fatalf("after two answers of MaxInt64 tokens: %v, want the key refused for its quota", err)
	}
	if st := p.Snapshot()[0]; st.QuotaTokens < 1000 {
		t.Fatalf("quota tokens used %d, want at least the quota (1000)", st.QuotaTokens)
	}
}

// TestAttackDec02bNegativeUsageRefundsNothing: an Outcome.Tokens below
// zero (a broken usage figure) is no usage: it does not empty the key's
// tpm bucket of what other requests used, nor lower its token quota.
func TestAttackDec02bNegativeUsageRefundsNothing(t *testing.T) {
	kcs := keys(1)
	kcs[0].TPM = 1000
	kcs[0].Quota = Quota{Tokens: 5000, Period: time.Hour}
	p, _ := newPoolWith(t, Settings{MaxConcurrencyPerKey: 10}, kcs)
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release(Outcome{Kind: Success, Tokens: 1000})
	b.Release(Outcome{Kind: Success, Tokens: -1 << 40})
	if _, err := p.Acquire(context.Background(), AcquireOptions{}); err == nil {
		t.Fatal("a negative usage emptied the tpm bucket: the key was leased although 1000 of its 1000 tpm were used")
	}
	if st := p.Snapshot()[0]; st.QuotaTokens != 1000 {
		t.Fatalf("quota tokens used %d, want 1000", st.QuotaTokens)
	}
}
