package caddymodule

import "github.com/redis/go-redis/v9"

// The Redis backend's scripts. They follow keypool.MemoryBackend rule for
// rule; each runs atomically on the server, so one script call is one
// round trip that checks and takes (or frees) a slot. Time is the
// server's (TIME, in milliseconds), so instances whose clocks disagree
// still agree on cooldowns; waits go back as durations.
//
// Keys of pool P and key fingerprint F (all in one hash slot, {P}, so the
// scripts also run on Redis Cluster):
//
//	<prefix>{P}:k:F   hash: cu cr ch (cooldown until, reason, computed by
//	                  a pool: an early probe may pass it), br bu bt
//	                  (breaker 0 closed 1 open 2 half-open, open until,
//	                  trips), pl pe (probe lease id, expiry), pp (probe
//	                  pending), tl ta (tpm level, at), qp qr qt (quota
//	                  period number, requests, tokens), ema (TTFB ns),
//	                  cf (the limits last asked with, to spot config drift),
//	                  on (the number of the key's latest release, Unix µs:
//	                  keypool.SharedRelease.Order)
//	<prefix>{P}:l:F   sorted set: live leases, scored by expiry
//	<prefix>{P}:r:F   sorted set: the rpm log, lease ids scored by time
//	<prefix>{P}:rr    the shared round-robin cursor
//	<prefix>{P}:a:S   the key fingerprint session S is pinned to (PX TTL)
//
// Events go out on <prefix>events as
// "pool|instance|fingerprint|flags|wait_ms|reason|ema_ns", flags being
// "c" (served: transient cooldowns end), "r" (reset by an operator) or
// "-"; a "c" event adds "|order_ns", its release's number
// (keypool.SharedEvent.Order): the server's TIME when the release script
// ran, in Unix nanoseconds, raised past the key's previous number so the
// key's releases are numbered in the order Redis applied them. An
// instance of the previous version reads it as the success's time (it
// sent its own clock's there).

// luaPrelude is shared by the scripts: the server time in ms.
const luaPrelude = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// acquireScript: KEYS = rr, affinity, then per candidate hash, leases,
// rpm log. ARGV = lease id, lease ttl ms, round robin (1/0), affinity ttl
// ms, candidate count, then per candidate: fingerprint, cap, rpm, tpm,
// tokens, quota requests, quota tokens, quota period, quota ms left,
// probe (1/0), early (1/0).
// Reply: granted index (0-based, -1 none), probe, half-open, breaker
// trips, pinned fingerprint, config drift (1: the granted key was last
// asked for with other limits), then per refusal: index, reason, wait ms.
var acquireScript = redis.NewScript(luaPrelude + `
local lease, ttl, rr, affttl, n = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4]), tonumber(ARGV[5])
local refused, elig = {}, {}
for i = 1, n do
  local a = 5 + (i - 1) * 11
  local cap, rpm, tpm = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local qreq, qtok, qper, qleft = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7]), ARGV[a + 8], tonumber(ARGV[a + 9])
  local early = ARGV[a + 11] == '1'
  local H, L, R = KEYS[3 + (i - 1) * 3], KEYS[4 + (i - 1) * 3], KEYS[5 + (i - 1) * 3]
  redis.call('ZREMRANGEBYSCORE', L, '-inf', now)
  local h = redis.call('HMGET', H, 'cu', 'cr', 'br', 'bu', 'pl', 'pe', 'pp', 'tl', 'ta', 'qp', 'qr', 'qt', 'ch', 'cf')
  local cu, br, bu = tonumber(h[1]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0
  local reason, wait = nil, 0
  if now < cu and not (early and h[13] == '1') then
    reason, wait = h[2] or 'cooldown', cu - now
  elseif not early and br == 1 and now < bu then
    reason, wait = 'breaker_open', bu - now
  end
  local probe = ARGV[a + 10] == '1' or early or br ~= 0 or h[7] == '1'
  if not reason and probe and h[5] and h[5] ~= '' and now < (tonumber(h[6]) or 0) then
    reason = 'probe_in_flight'
  end
  local load = redis.call('ZCARD', L)
  if not reason and load >= cap then
    reason = 'busy'
  end
  if not reason and rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', R, '-inf', now - 60000)
    local c = redis.call('ZCARD', R)
    if c >= rpm then
      local e = redis.call('ZRANGE', R, c - rpm, c - rpm, 'WITHSCORES')
      reason, wait = 'rpm', tonumber(e[2]) + 60000 - now
    end
  end
  local tl = tonumber(h[8]) or 0
  if tpm > 0 then
    local ta = tonumber(h[9]) or now
    if tl > 0 and now > ta then
      tl = math.max(0, tl - tpm * (now - ta) / 60000)
    end
    if not reason and tl >= tpm then
      reason, wait = 'tpm', math.floor((tl - tpm) / tpm * 60000) + 1
    end
  end
  local quota = qreq > 0 or qtok > 0
  local qr, qt = tonumber(h[11]) or 0, tonumber(h[12]) or 0
  -- a period only moves forward: an instance whose clock is behind
  -- counts against the newer period
  local fresh = quota and (tonumber(h[10]) or -1) < tonumber(qper)
  if fresh then
    qr, qt = 0, 0
  end
  if not reason and quota and ((qreq > 0 and qr >= qreq) or (qtok > 0 and qt >= qtok)) then
    reason, wait = 'quota', qleft
  end
  if reason then
    refused[#refused + 1] = i - 1
    refused[#refused + 1] = reason
    refused[#refused + 1] = math.floor(math.max(wait, 0))
  else
    elig[#elig + 1] = {i = i, load = load, probe = probe, tl = tl, fresh = fresh, br = br, bu = bu, cf = h[14]}
  end
end
local function reply(idx, probe, half, trips, pinned, drift)
  local out = {idx, probe, half, trips, pinned, drift}
  for _, v in ipairs(refused) do out[#out + 1] = v end
  return out
end
if #elig == 0 then
  return reply(-1, 0, 0, 0, '', 0)
end
local pick = elig[1]
if rr then
  local least = {}
  for _, e in ipairs(elig) do
    if #least == 0 or e.load < least[1].load then
      least = {e}
    elseif e.load == least[1].load then
      least[#least + 1] = e
    end
  end
  local cur = redis.call('INCR', KEYS[1]) - 1
  pick = least[(cur % #least) + 1]
end
local pinned = ''
if affttl > 0 then
  local pin = redis.call('GET', KEYS[2])
  if pin then
    local found = false
    for _, e in ipairs(elig) do
      if ARGV[5 + (e.i - 1) * 11 + 1] == pin then
        pick, found = e, true
      end
    end
    if not found then pinned = pin end
  end
end
local i, a = pick.i, 5 + (pick.i - 1) * 11
local H, L, R = KEYS[3 + (i - 1) * 3], KEYS[4 + (i - 1) * 3], KEYS[5 + (i - 1) * 3]
redis.call('ZADD', L, now + ttl, lease)
if redis.call('PTTL', L) < ttl * 2 then redis.call('PEXPIRE', L, ttl * 2) end
if tonumber(ARGV[a + 3]) > 0 then
  redis.call('ZADD', R, now, lease)
  redis.call('PEXPIRE', R, 61000)
end
if tonumber(ARGV[a + 4]) > 0 then
  redis.call('HSET', H, 'tl', pick.tl + tonumber(ARGV[a + 5]), 'ta', now)
end
if tonumber(ARGV[a + 6]) > 0 or tonumber(ARGV[a + 7]) > 0 then
  if pick.fresh then
    redis.call('HSET', H, 'qp', ARGV[a + 8], 'qr', 1, 'qt', 0)
  else
    redis.call('HINCRBY', H, 'qr', 1)
  end
end
local probe, half, trips = 0, 0, 0
if pick.probe then
  probe = 1
  redis.call('HSET', H, 'pl', lease, 'pe', now + ttl)
  local br = pick.br
  if br == 1 and now >= pick.bu then
    br = 2 -- the open period is over: this lease is its half-open probe
    redis.call('HSET', H, 'br', 2)
  end
  if br == 2 then half = 1 end
  trips = tonumber(redis.call('HGET', H, 'bt')) or 0
end
if affttl > 0 and pinned == '' then
  redis.call('SET', KEYS[2], ARGV[a + 1], 'PX', affttl)
end
-- the limits this instance enforces; another instance asking with other
-- ones means their configs differ
local cf = ARGV[a + 2] .. ':' .. ARGV[a + 3] .. ':' .. ARGV[a + 4] .. ':' .. ARGV[a + 6] .. ':' .. ARGV[a + 7]
local drift = 0
if pick.cf ~= cf then
  if pick.cf then drift = 1 end
  redis.call('HSET', H, 'cf', cf)
end
return reply(i - 1, probe, half, trips, pinned, drift)
`)

// luaDead lists the dead-key cooldown reasons a success does not clear.
const luaDead = `
local dead = {invalid_key = true, no_credit = true, forbidden = true, quota_exhausted = true}
`

// luaAddTokens defines addTokens(q, n): the quota's token count q (a hash
// field's value, nil for none) plus n tokens, saturating at 9e18, as an
// integer string. HINCRBY fails past int64 and on a count Redis turns
// into a float (a Lua number of 2^63 or more: keypool's figures saturate
// at math.MaxInt64): a release that fails takes the instance off shared
// state and is replayed at every re-sync (redisBackend.call), so a
// hostile usage figure would keep the instance off it.
const luaAddTokens = `
local function addTokens(q, n) return string.format('%d', math.min((tonumber(q) or 0) + n, 9e18)) end
`

// luaShut computes how long the key H stays shut and why, and publishes
// the event (needs pool, instance, fp, flags, ema, at, channel in scope;
// at is a Clear's keypool.SharedEvent.Order in Unix nanoseconds, "" for
// none). The eighth field is sent only with a number: an instance of an
// older version, which reads seven fields and drops any other event,
// still reads every event but a numbered clear.
const luaShut = `
local cu, br, bu = tonumber(redis.call('HGET', H, 'cu')) or 0, tonumber(redis.call('HGET', H, 'br')) or 0, tonumber(redis.call('HGET', H, 'bu')) or 0
local wait, why = 0, ''
if now < cu then wait, why = cu - now, redis.call('HGET', H, 'cr') or '' end
if br == 1 and bu - now > wait then wait, why = bu - now, 'breaker_open' end
local ev = pool .. '|' .. instance .. '|' .. fp .. '|' .. flags .. '|' .. math.floor(wait) .. '|' .. why .. '|' .. ema
if at ~= '' then ev = ev .. '|' .. at end
redis.call('PUBLISH', channel, ev)
`

// releaseScript: KEYS = hash, leases. ARGV = lease id, tpm, token delta,
// quota tokens, quota period, clear (1/0), cooldown ms, reason, breaker
// open ms, breaker trips, probe pending (1/0), ttfb ns, alpha, channel,
// pool, instance, fingerprint, heuristic (1/0), learned limits
// (encodeLearned; "" for none: kept per model in the hash field
// "lr:<model>" as "<now ms>|<encoded>" and published as
// "L|pool|instance|fp|<encoded>").
// Reply: the release's number (keypool.SharedRelease.Order) in Unix
// nanoseconds, as a string: the server's TIME in microseconds (exact in a
// Lua number, as nanoseconds would not be), at least one more than the
// key's previous number (hash field "on"), and "000".
var releaseScript = redis.NewScript(luaPrelude + luaDead + luaAddTokens + `
local H, L = KEYS[1], KEYS[2]
local lease = ARGV[1]
local tpm, delta, qtok, qper = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local clear, cool, reason, bopen, trips, pp = ARGV[6] == '1', tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9]), ARGV[10], ARGV[11] == '1'
local ttfb, alpha = tonumber(ARGV[12]), tonumber(ARGV[13])
local channel, pool, instance, fp, heur = ARGV[14], ARGV[15], ARGV[16], ARGV[17], ARGV[18]
redis.call('ZREM', L, lease)
local h = redis.call('HMGET', H, 'pl', 'cr', 'tl', 'ta', 'qp', 'ema', 'cu', 'qt')
if h[1] == lease then redis.call('HDEL', H, 'pl', 'pe') end
if tpm > 0 and delta ~= 0 then
  local tl, ta = tonumber(h[3]) or 0, tonumber(h[4]) or now
  if tl > 0 and now > ta then tl = math.max(0, tl - tpm * (now - ta) / 60000) end
  redis.call('HSET', H, 'tl', math.max(0, tl + delta), 'ta', now)
end
if qtok > 0 and h[5] == qper then redis.call('HSET', H, 'qt', addTokens(h[8], qtok)) end
local flags = '-'
if clear then
  flags = 'c'
  if not dead[h[2] or ''] then redis.call('HDEL', H, 'cu', 'cr', 'ch') end
  redis.call('HSET', H, 'br', 0, 'bt', 0)
  redis.call('HDEL', H, 'pp')
end
if cool > 0 then
  local cu = tonumber(redis.call('HGET', H, 'cu')) or 0
  if now + cool > cu then redis.call('HSET', H, 'cu', now + cool, 'cr', reason, 'ch', heur) end
end
if bopen > 0 then redis.call('HSET', H, 'br', 1, 'bu', now + bopen, 'bt', trips) end
if pp then redis.call('HSET', H, 'pp', 1) end
local learned = ARGV[19] or ''
local on = tonumber(t[1]) * 1000000 + tonumber(t[2])
local prev = tonumber(redis.call('HGET', H, 'on')) or 0
if on <= prev then on = prev + 1 end
on = string.format('%.0f', on)
redis.call('HSET', H, 'on', on)
local at = ''
if clear then at = on .. '000' end
if learned ~= '' then
  local model = string.match(learned, '^[^;]*;[^;]*;[^;]*;[^;]*;(.*)$') or ''
  redis.call('HSET', H, 'lr:' .. model, now .. '|' .. learned)
  redis.call('PUBLISH', channel, 'L|' .. pool .. '|' .. instance .. '|' .. fp .. '|' .. learned)
end
local ema = 0
if ttfb > 0 then
  ema = tonumber(h[6]) or 0
  if ema == 0 then ema = ttfb else ema = alpha * ttfb + (1 - alpha) * ema end
  ema = math.floor(ema)
  redis.call('HSET', H, 'ema', ema)
end
` + luaShut + `
return on .. '000'
`)

// syncScript: KEYS = hash, leases. ARGV = lease ttl ms, cooldown ms,
// reason, breaker open ms, breaker trips, probe pending (1/0), quota
// period, quota requests, quota tokens, heuristic (1/0), then lease ids.
var syncScript = redis.NewScript(luaPrelude + luaAddTokens + `
local H, L = KEYS[1], KEYS[2]
local ttl, cool, reason, bopen, trips = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5]
local qper, qreq, qtok, heur = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
for i = 11, #ARGV do redis.call('ZADD', L, now + ttl, ARGV[i]) end
if #ARGV >= 11 and redis.call('PTTL', L) < ttl * 2 then redis.call('PEXPIRE', L, ttl * 2) end
if cool > 0 then
  local cu = tonumber(redis.call('HGET', H, 'cu')) or 0
  if now + cool > cu then redis.call('HSET', H, 'cu', now + cool, 'cr', reason, 'ch', heur) end
end
if bopen > 0 then redis.call('HSET', H, 'br', 1, 'bu', now + bopen, 'bt', trips) end
if ARGV[6] == '1' then redis.call('HSET', H, 'pp', 1) end
if qreq > 0 or qtok > 0 then
  local cur = tonumber(redis.call('HGET', H, 'qp')) or -1
  if cur < tonumber(qper) then redis.call('HSET', H, 'qp', qper, 'qr', 0, 'qt', 0) end
  if cur <= tonumber(qper) then
    redis.call('HINCRBY', H, 'qr', qreq)
    redis.call('HSET', H, 'qt', addTokens(redis.call('HGET', H, 'qt'), qtok))
  end
end
return 1
`)

// clearScript: KEYS = hash. ARGV = channel, pool, instance, fingerprint.
var clearScript = redis.NewScript(luaPrelude + `
local H = KEYS[1]
local channel, pool, instance, fp = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
redis.call('HDEL', H, 'cu', 'cr', 'ch', 'pp', 'bu')
redis.call('HSET', H, 'br', 0, 'bt', 0)
local flags, ema, at = 'r', 0, ''
` + luaShut + `
return 1
`)

// renewScript: KEYS = hash, leases. ARGV = lease id, ttl ms. Extends a
// live lease (and the probe token it holds); 0 when it is gone.
var renewScript = redis.NewScript(luaPrelude + `
local H, L, lease, ttl = KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])
if not redis.call('ZSCORE', L, lease) then return 0 end
redis.call('ZADD', L, 'XX', now + ttl, lease)
if redis.call('PTTL', L) < ttl * 2 then redis.call('PEXPIRE', L, ttl * 2) end
if redis.call('HGET', H, 'pl') == lease then redis.call('HSET', H, 'pe', now + ttl) end
return 1
`)

// snapshotScript: KEYS = hash, leases, rpm log. Reply: in flight,
// cooldown ms left, reason, breaker, breaker ms left, probe held (1/0),
// rpm used, tpm level, quota period, quota requests, quota tokens, ema,
// now ms, then the learned limits stored per model ("<ms>|<encoded>").
var snapshotScript = redis.NewScript(luaPrelude + `
local H, L, R = KEYS[1], KEYS[2], KEYS[3]
local h = redis.call('HMGET', H, 'cu', 'cr', 'br', 'bu', 'pl', 'pe', 'tl', 'qp', 'qr', 'qt', 'ema')
local cu, br, bu = tonumber(h[1]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0
local left, why, bleft = 0, '', 0
if now < cu then left, why = cu - now, h[2] or '' end
if br == 1 and now < bu then bleft = bu - now end
local probe = 0
if h[5] and h[5] ~= '' and now < (tonumber(h[6]) or 0) then probe = 1 end
local out = {redis.call('ZCOUNT', L, '(' .. now, '+inf'), left, why, br, bleft, probe,
  redis.call('ZCOUNT', R, '(' .. (now - 60000), '+inf'), math.floor(tonumber(h[7]) or 0),
  h[8] or '', tonumber(h[9]) or 0, tonumber(h[10]) or 0, math.floor(tonumber(h[11]) or 0), now}
local all = redis.call('HGETALL', H)
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 3) == 'lr:' then out[#out + 1] = all[i + 1] end
end
return out
`)

// abortScript: KEYS = per candidate hash, leases, rpm log. ARGV = lease
// id. Takes back whatever the id holds (a slot, an rpm entry, the probe
// token): for an acquisition whose answer was lost, or a release that
// may have been overtaken by a re-registration.
var abortScript = redis.NewScript(`
for i = 1, #KEYS, 3 do
  redis.call('ZREM', KEYS[i + 1], ARGV[1])
  redis.call('ZREM', KEYS[i + 2], ARGV[1])
  if redis.call('HGET', KEYS[i], 'pl') == ARGV[1] then redis.call('HDEL', KEYS[i], 'pl', 'pe') end
end
return 1
`)
