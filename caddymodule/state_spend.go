package caddymodule

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Shared spend (budgets in cluster mode): one Redis hash per budget scope
// and period scheme, "<prefix>spend:{<scope>:<name>}:<period>", with one
// field per bucket (budgetPeriod.bucket, decimal) holding US dollars as a
// float, added with HINCRBYFLOAT. Every instance adds its requests' cost
// as each ends and reads the figures before admitting a request, so a
// budget is exceeded by no more than the requests in flight. The hash
// expires a window after its last addition.

// addSpend implements spendStore: one pipelined round trip.
func (b *redisBackend) addSpend(ctx context.Context, name string, add map[int64]float64, ttl time.Duration, stale []int64) (map[int64]float64, error) {
	var all *redis.MapStringStringCmd
	err := b.call(ctx, "spend", func(ctx context.Context) error {
		pipe := b.client.TxPipeline()
		for bk, v := range add {
			pipe.HIncrByFloat(ctx, name, strconv.FormatInt(bk, 10), v)
		}
		if len(stale) > 0 {
			fields := make([]string, len(stale))
			for i, s := range stale {
				fields[i] = strconv.FormatInt(s, 10)
			}
			pipe.HDel(ctx, name, fields...)
		}
		pipe.PExpire(ctx, name, ttl)
		all = pipe.HGetAll(ctx, name)
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return spendFigures(all.Val()), nil
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
