package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// stateRedis is the State of a target whose gateway keeps its pools'
// runtime state in Redis (`state redis`); "" is the default memory state.
const stateRedis = "redis"

// redisServer is the harness's own redis-server: loopback only, no
// persistence, stopped at the end of the run.
type redisServer struct {
	proc    *proc
	addr    string
	prefix  string // key prefix of this run's gateways
	version string
	client  *redis.Client
}

// startRedis starts redis-server on a free loopback port with its files in
// dir and waits until it answers PING.
func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no"}
	logPath := filepath.Join(dir, "redis.log")
	p, stdout, err := startProc(bin, args, nil, logPath)
	if err != nil {
		return nil, err
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	rs := &redisServer{
		proc:   p,
		addr:   fmt.Sprintf("127.0.0.1:%d", port),
		prefix: "llmgwbench:" + hex.EncodeToString(b) + ":",
	}
	rs.client = redis.NewClient(&redis.Options{Addr: rs.addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-p.done:
			rs.client.Close()
			return nil, fmt.Errorf("redis-server exited at start (see %s)", logPath)
		case <-ctx.Done():
			rs.stop()
			return nil, ctx.Err()
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := rs.client.Ping(pctx).Err()
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			rs.stop()
			return nil, fmt.Errorf("redis-server did not answer within 15 s: %v (see %s)", err, logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if info, err := rs.info(ctx, "server"); err == nil {
		rs.version = info["redis_version"]
	}
	return rs, nil
}

// Pid returns the redis-server's process id.
func (rs *redisServer) Pid() int { return rs.proc.Pid() }

// stop closes the client and ends the server.
func (rs *redisServer) stop() {
	_ = rs.client.Close()
	rs.proc.stop()
}

// info returns the fields of one INFO section.
func (rs *redisServer) info(ctx context.Context, section string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := rs.client.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out, nil
}

// commandCalls is Redis's count of calls so far by command, from INFO
// commandstats (commands a script runs are counted too).
func (rs *redisServer) commandCalls(ctx context.Context) (map[string]int64, error) {
	info, err := rs.info(ctx, "commandstats")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for k, v := range info {
		cmd, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		// calls=12,usec=...,...
		for _, f := range strings.Split(v, ",") {
			if c, ok := strings.CutPrefix(f, "calls="); ok {
				out[cmd], _ = strconv.ParseInt(c, 10, 64)
			}
		}
	}
	return out, nil
}

// scriptCommands are the commands that run a script: each call is one
// round trip (an EVALSHA that misses the script cache, then the EVAL that
// loads it, are two).
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// The gateway's metrics of state backend round trips.
const (
	stateRequestsMetric = "llm_gateway_state_backend_requests_total"
	stateDurationMetric = "llm_gateway_state_backend_duration_seconds"
)

var adminClient = &http.Client{Timeout: 5 * time.Second}

// stateSample is a reading of the gateway's state backend metrics.
type stateSample struct {
	Requests map[string]float64 // round trips by "op/result"
	DurSum   map[string]float64 // summed round-trip time by op, seconds
	DurCount map[string]float64 // round trips timed, by op
}

// readState reads the state backend metrics of the Caddy process with its
// admin endpoint on adminPort.
func readState(adminPort int) (stateSample, error) {
	s := stateSample{Requests: map[string]float64{}, DurSum: map[string]float64{}, DurCount: map[string]float64{}}
	resp, err := adminClient.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", adminPort))
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("admin /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), "{")
		if !ok {
			continue
		}
		var dst map[string]float64
		switch name {
		case stateRequestsMetric:
			dst = s.Requests
		case stateDurationMetric + "_sum":
			dst = s.DurSum
		case stateDurationMetric + "_count":
			dst = s.DurCount
		default:
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(val)[0], 64)
		if err != nil {
			continue
		}
		var op, result string
		for _, l := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(l, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "op":
				op = v
			case "result":
				result = v
			}
		}
		if name == stateRequestsMetric {
			op += "/" + result
		}
		dst[op] += v
	}
	return s, sc.Err()
}

// opTotal sums an op's counters over all results.
func opTotal(c map[string]float64, op string) float64 {
	var n float64
	for k, v := range c {
		if strings.HasPrefix(k, op+"/") {
			n += v
		}
	}
	return n
}

// diff returns the non-zero differences after - before.
func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// stateProbe counts the state round trips of one measurement: the
// gateway's metrics, Redis's command counts and the redis-server's CPU
// before and after.
type stateProbe struct {
	adminPort int
	rs        *redisServer
	state     stateSample
	calls     map[string]int64
	cpu       procSample
	err       error
}

// newStateProbe takes the "before" sample.
func newStateProbe(ctx context.Context, adminPort int, rs *redisServer) *stateProbe {
	p := &stateProbe{adminPort: adminPort, rs: rs}
	if p.state, p.err = readState(adminPort); p.err != nil {
		return p
	}
	if p.calls, p.err = rs.commandCalls(ctx); p.err != nil {
		return p
	}
	p.cpu, p.err = sampleProc(rs.Pid())
	return p
}

// finish takes the "after" sample and records the differences in m. A
// request's key is released just after the client has its answer, so it
// waits (up to a second) until every acquire has its release.
func (p *stateProbe) finish(ctx context.Context, m *measurement) error {
	if p.err != nil {
		return p.err
	}
	var after stateSample
	deadline := time.Now().Add(time.Second)
	for {
		var err error
		if after, err = readState(p.adminPort); err != nil {
			return err
		}
		acq := opTotal(after.Requests, "acquire") - opTotal(p.state.Requests, "acquire")
		rel := opTotal(after.Requests, "release") - opTotal(p.state.Requests, "release")
		if rel >= acq || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	calls, err := p.rs.commandCalls(ctx)
	if err != nil {
		return err
	}
	cpu, err := sampleProc(p.rs.Pid())
	if err != nil {
		return fmt.Errorf("redis-server gone: %v", err)
	}
	m.HasState = true
	m.State = diff(after.Requests, p.state.Requests)
	m.StateDur = diff(after.DurSum, p.state.DurSum)
	m.StateDurN = diff(after.DurCount, p.state.DurCount)
	for _, c := range scriptCommands {
		m.Scripts += calls[c] - p.calls[c]
	}
	m.Publishes = calls["publish"] - p.calls["publish"]
	m.RedisCPU = cpu.CPU - p.cpu.CPU
	return nil
}

// requests is the number of requests a measurement completed, failed ones
// included (each took and gave back a key).
func (m *measurement) requests() int { return m.OK + m.Errors }

// perReq is v per completed request.
func (m *measurement) perReq(v float64) float64 {
	if m.requests() == 0 {
		return 0
	}
	return v / float64(m.requests())
}

// roundTrips is the gateway's acquire+release round trips (result ok) per
// completed request.
func (m *measurement) roundTrips() float64 {
	return m.perReq(m.State["acquire/ok"] + m.State["release/ok"])
}

// stateDetail lists every op/result per request, acquire and release
// first, result ok unnamed: "acquire 1.00, release 1.00".
func (m *measurement) stateDetail() string {
	keys := make([]string, 0, len(m.State))
	for k := range m.State {
		keys = append(keys, k)
	}
	rank := func(k string) string {
		op, res, _ := strings.Cut(k, "/")
		r, ok := map[string]string{"acquire": "0", "release": "1"}[op]
		if !ok {
			r = "2"
		}
		if res == "ok" {
			res = ""
		}
		return r + op + "/" + res
	}
	sort.Slice(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", strings.TrimSuffix(k, "/ok"), m.perReq(m.State[k])))
	}
	return strings.Join(parts, ", ")
}

// roundTripTimes gives the mean round-trip time of acquire and release as
// the gateway timed them: "acquire 180 µs, release 150 µs".
func (m *measurement) roundTripTimes() string {
	var parts []string
	for _, op := range []string{"acquire", "release"} {
		if n := m.StateDurN[op]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f µs", op, m.StateDur[op]/n*1e6))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
