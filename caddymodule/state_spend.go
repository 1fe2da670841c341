package caddymodule

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Shared spend (budgets in cluster mode): one Redis hash per budget scope
// and period scheme, "<prefix>spend:{<scope>:<name>}:<period>", with one
// field per bucket (budgetPeriod.bucket, decimal) holding US dollars as a
// float, added with HINCRBYFLOAT. Every instance adds its requests' cost
// as each ends; the same script publishes the hash's new figures on the
// events channel as "S|<instance>|<bucket>=<usd>,...|<name>", and every
// other instance mirrors them as they come (applySpendEvent). A request
// is admitted on figures read less than budgetFresh before it (one read
// serves the requests of that time, see budgetBook.refresh), so a budget
// is exceeded by no more than the requests in flight; a read that takes
// longer than budgetWait goes on in the background while requests are
// admitted on the figures mirrored so far. The hash expires a window
// after its last addition.

// addSpendScript: KEYS = the spend hash. ARGV = ttl ms, channel, event
// prefix ("S|<instance>|"), the hash's name, the number n of buckets
// added, n bucket/amount pairs, then the stale buckets to delete. It
// returns the hash's figures (HGETALL).
var addSpendScript = redis.NewScript(`
local n = tonumber(ARGV[5])
for i = 0, n - 1 do
  redis.call('HINCRBYFLOAT', KEYS[1], ARGV[6 + 2 * i], ARGV[7 + 2 * i])
end
local stale = {}
for i = 6 + 2 * n, #ARGV do
  stale[#stale + 1] = ARGV[i]
end
if #stale > 0 then
  redis.call('HDEL', KEYS[1], unpack(stale))
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local all = redis.call('HGETALL', KEYS[1])
local parts = {}
for i = 1, #all, 2 do
  parts[#parts + 1] = all[i] .. '=' .. all[i + 1]
end
redis.call('PUBLISH', ARGV[2], ARGV[3] .. table.concat(parts, ',') .. '|' .. ARGV[4])
return all
`)

// addSpend implements spendStore: one script call (one round trip) that
// adds, prunes, reads and publishes.
func (b *redisBackend) addSpend(ctx context.Context, name string, add map[int64]float64, ttl time.Duration, stale []int64) (map[int64]float64, error) {
	args := make([]any, 0, 5+2*len(add)+len(stale))
	args = append(args, max(ttl.Milliseconds(), 1), b.channel, "S|"+b.instance+"|", name, len(add))
	for bk, v := range add {
		args = append(args, strconv.FormatInt(bk, 10), strconv.FormatFloat(v, 'f', -1, 64))
	}
	for _, s := range stale {
		args = append(args, strconv.FormatInt(s, 10))
	}
	var all []any
	err := b.call(ctx, "spend", func(ctx context.Context) error {
		res, err := addSpendScript.Run(ctx, b.client, []string{name}, args...).Slice()
		all = res
		return err
	})
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(all)/2)
	for i := 0; i+1 < len(all); i += 2 {
		k, _ := all[i].(string)
		v, _ := all[i+1].(string)
		m[k] = v
	}
	return spendFigures(m), nil
}

// parseSpendEvent reads "S|<instance>|<bucket>=<usd>,...|<name>"; ok is
// false for any other event (a state event of a pool named S does not
// parse: its third field is no list of figures).
func parseSpendEvent(s string) (instance, name string, figures map[int64]float64, ok bool) {
	f := strings.SplitN(s, "|", 4)
	if len(f) != 4 || f[0] != "S" || f[2] == "" {
		return "", "", nil, false
	}
	figures = map[int64]float64{}
	for _, kv := range strings.Split(f[2], ",") {
		k, v, found := strings.Cut(kv, "=")
		bk, err1 := strconv.ParseInt(k, 10, 64)
		usd, err2 := strconv.ParseFloat(v, 64)
		if !found || err1 != nil || err2 != nil {
			return "", "", nil, false
		}
		figures[bk] = usd
	}
	return f[1], f[3], figures, true
}

// sharedSpends maps a spend hash's name to the process's spend of that
// scope (registered by provisionBudgets in cluster mode), for the spend
// events of other instances.
var sharedSpends sync.Map // string -> *scopeSpend

// applySpendEvent mirrors a spend event, reporting whether payload was
// one. This instance's own events are mirrored too: their figures are
// those its reply brought, and mirror keeps the higher of two.
func (b *redisBackend) applySpendEvent(payload string) bool {
	_, name, figures, ok := parseSpendEvent(payload)
	if !ok {
		return false
	}
	if v, found := sharedSpends.Load(name); found {
		v.(*scopeSpend).mirror(figures)
	}
	return true
}

// loadSpend implements spendStore: one pipelined round trip.
func (b *redisBackend) loadSpend(ctx context.Context, names []string) ([]map[int64]float64, error) {
	cmds := make([]*redis.MapStringStringCmd, len(names))
	err := b.call(ctx, "spend", func(ctx context.Context) error {
		pipe := b.client.Pipeline()
		for i, n := range names {
			cmds[i] = pipe.HGetAll(ctx, n)
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]map[int64]float64, len(names))
	for i, c := range cmds {
		out[i] = spendFigures(c.Val())
	}
	return out, nil
}

// spendFigures parses a spend hash; malformed fields are skipped.
func spendFigures(m map[string]string) map[int64]float64 {
	out := make(map[int64]float64, len(m))
	for k, v := range m {
		bk, err1 := strconv.ParseInt(k, 10, 64)
		f, err2 := strconv.ParseFloat(v, 64)
		if err1 == nil && err2 == nil {
			out[bk] = f
		}
	}
	return out
}
