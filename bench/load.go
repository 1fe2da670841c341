package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// workload is a kind of request.
type workload struct {
	Name   string // "json", "stream", "paced"
	Model  string
	Stream bool
}

// The workloads of a run.
var (
	wlJSON   = workload{"json", modelJSON, false}
	wlStream = workload{"stream", modelSSE, true}
	wlPaced  = workload{"paced", modelPaced, true}
	wlSlow   = workload{"slow", modelSlow, true}
)

// runSpec is one measurement: a workload driven either by Conc closed-loop
// workers (each sends its next request when the previous one is done) or
// at a fixed Rate of requests per second.
type runSpec struct {
	W    workload
	Conc int
	Rate int
	Dur  time.Duration
}

// Level names the load level: "c=16" or "500/s".
func (s runSpec) Level() string {
	if s.Rate > 0 {
		return fmt.Sprintf("%d/s", s.Rate)
	}
	return fmt.Sprintf("c=%d", s.Conc)
}

// probe collects what vegeta does not measure: time to the first body
// byte and the delay between consecutive SSE events.
type probe struct {
	mu     sync.Mutex
	ttfb   []time.Duration
	ttft   []time.Duration
	gaps   []time.Duration
	events int
	// arrivals of text delta n of request id (unix ns), for requests
	// that carry an X-Request-Id
	arrivals map[string][]int64
}

// probeTransport wraps the client transport and times every response body.
type probeTransport struct {
	base http.RoundTripper
	p    *probe
}

// RoundTrip implements http.RoundTripper.
func (t *probeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &probeBody{rc: resp.Body, start: start, p: t.p, gaps: make([]time.Duration, 0, 256), id: req.Header.Get("X-Request-Id")}
	return resp, nil
}

// probeBody timestamps reads: the first byte, and the end of each SSE
// event (a blank line) that carries generated text. The canned streams'
// text deltas are "tok<n> " and every dialect relays each of them in an
// event of its own, so the gaps between those events compare across
// targets, translating or not (other events, such as a block start that
// one dialect has and the other has not, do not count).
type probeBody struct {
	rc        io.ReadCloser
	p         *probe
	start     time.Time
	ttfb      time.Duration
	ttft      time.Duration // to the end of the first text delta event
	lastEvent time.Time
	gaps      []time.Duration
	events    int
	prevNL    bool
	match     int  // bytes of "tok" matched so far
	content   bool // the current event carries a text delta
	tok       int  // its index n ("tok<n>")
	inNum     bool
	flushed   bool
	id        string
	arrivals  []int64 // by text delta index, when id is set
}

// Read implements io.Reader.
func (b *probeBody) Read(buf []byte) (int, error) {
	n, err := b.rc.Read(buf)
	if n > 0 {
		now := time.Now()
		if b.ttfb == 0 {
			b.ttfb = now.Sub(b.start)
		}
		for _, c := range buf[:n] {
			if b.inNum {
				if c >= '0' && c <= '9' {
					b.tok = b.tok*10 + int(c-'0')
				} else {
					b.inNum = false
				}
			}
			switch {
			case b.match == 3 && c >= '0' && c <= '9':
				if !b.content {
					b.tok, b.inNum = int(c-'0'), true
				}
				b.content = true
				b.match = 0
			case c == "tok"[min(b.match, 2)] && b.match < 3:
				b.match++
			case c == 't':
				b.match = 1
			default:
				b.match = 0
			}
			if c == '\n' && b.prevNL {
				if b.content {
					if b.events > 0 {
						b.gaps = append(b.gaps, now.Sub(b.lastEvent))
					} else {
						b.ttft = now.Sub(b.start)
					}
					if b.id != "" && b.tok < 1<<16 {
						for len(b.arrivals) <= b.tok {
							b.arrivals = append(b.arrivals, 0)
						}
						b.arrivals[b.tok] = now.UnixNano()
					}
					b.lastEvent = now
					b.events++
				}
				b.content = false
			}
			b.prevNL = c == '\n'
		}
	}
	if err != nil {
		b.flush()
	}
	return n, err
}

// Close implements io.Closer.
func (b *probeBody) Close() error {
	b.flush()
	return b.rc.Close()
}

func (b *probeBody) flush() {
	if b.flushed {
		return
	}
	b.flushed = true
	b.p.mu.Lock()
	if b.ttfb > 0 {
		b.p.ttfb = append(b.p.ttfb, b.ttfb)
	}
	if b.ttft > 0 {
		b.p.ttft = append(b.p.ttft, b.ttft)
	}
	b.p.gaps = append(b.p.gaps, b.gaps...)
	b.p.events += b.events
	if b.id != "" {
		if b.p.arrivals == nil {
			b.p.arrivals = map[string][]int64{}
		}
		b.p.arrivals[b.id] = b.arrivals
	}
	b.p.mu.Unlock()
}

// measurement is what one runSpec against one target gave.
type measurement struct {
	Target   string
	Spec     runSpec
	OK       int
	Errors   int
	FirstErr string
	Elapsed  time.Duration
	Lat      []time.Duration // successful requests, sorted
	TTFB     []time.Duration // sorted
	TTFT     []time.Duration // streams: to the first text delta event, sorted
	Gaps     []time.Duration // sorted
	EvLat    []time.Duration // per text delta: client arrival - mock send (paced streams), sorted
	Events   int
	CPU      time.Duration // proxy process CPU during the run (0: no proxy)
	Syscalls int64         // proxy process read + write system calls during the run
	HWM      int64         // proxy process peak RSS after the run
	HasProc  bool
	// state redis targets, during the run: the gateway's state round
	// trips by "op/result", their summed time (seconds) and number by op,
	// Redis's script and PUBLISH calls, and the redis-server's CPU
	HasState  bool
	State     map[string]float64
	StateDur  map[string]float64
	StateDurN map[string]float64
	Scripts   int64
	Publishes int64
	RedisCPU  time.Duration
	// Rounds are the headline figures of each round, in the order run
	// (one per round; merge appends), for medians over rounds.
	Rounds []roundFigures
}

// RPS is the rate of successful requests.
func (m *measurement) RPS() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.OK) / m.Elapsed.Seconds()
}

// newClientTransport is the load generator's connection pool: enough idle
// connections for every worker, no compression.
func newClientTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// attack drives one runSpec against base with vegeta and samples the proxy
// process (pid 0: none) before and after.
//
// For paced streams each request carries its own X-Request-Id (which every
// target forwards upstream) and the mock at mockURL reports when it sent
// each text delta, giving each event's latency through the target.
func attack(ctx context.Context, t target, base string, spec runSpec, reqSize, pid int, mockURL string) (*measurement, error) {
	url, hdr, body := t.request(base, spec.W, reqSize)
	stamped := spec.W == wlPaced && mockURL != ""
	pr := &probe{}
	tr := newClientTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: &probeTransport{base: tr, p: pr}}
	opts := []func(*vegeta.Attacker){
		vegeta.Client(client),
		vegeta.Timeout(2 * time.Minute),
		vegeta.MaxBody(0),
		vegeta.Redirects(vegeta.NoFollow),
	}
	var pacer vegeta.Pacer
	if spec.Rate > 0 {
		pacer = vegeta.Rate{Freq: spec.Rate, Per: time.Second}
		opts = append(opts, vegeta.Workers(16), vegeta.MaxWorkers(4096))
	} else {
		pacer = vegeta.Rate{Freq: 0, Per: time.Second} // as fast as the workers go
		opts = append(opts, vegeta.Workers(uint64(spec.Conc)), vegeta.MaxWorkers(uint64(spec.Conc)))
	}
	atk := vegeta.NewAttacker(opts...)
	targeter := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: url, Body: body, Header: hdr})
	if stamped {
		_, _ = takeSent(mockURL) // forget earlier runs
		var seq atomic.Uint64
		run := time.Now().UnixNano()
		targeter = func(tgt *vegeta.Target) error {
			*tgt = vegeta.Target{Method: http.MethodPost, URL: url, Body: body, Header: hdr.Clone()}
			tgt.Header.Set("X-Request-Id", fmt.Sprintf("bench-%x-%d", run, seq.Add(1)))
			return nil
		}
	}

	m := &measurement{Target: t.Name, Spec: spec, HasProc: pid > 0}
	var before procSample
	if pid > 0 {
		before, _ = sampleProc(pid)
	}
	var first, last time.Time
	results := atk.Attack(targeter, pacer, spec.Dur, t.Name)
	for res := range results {
		if ctx.Err() != nil {
			atk.Stop()
		}
		if first.IsZero() || res.Timestamp.Before(first) {
			first = res.Timestamp
		}
		if end := res.End(); end.After(last) {
			last = end
		}
		if res.Error != "" || res.Code != http.StatusOK {
			m.Errors++
			if m.FirstErr == "" {
				m.FirstErr = fmt.Sprintf("%d %s", res.Code, res.Error)
			}
			continue
		}
		m.OK++
		m.Lat = append(m.Lat, res.Latency)
	}
	if pid > 0 {
		after, err := sampleProc(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: proxy process gone: %v", t.Name, err)
		}
		m.CPU = after.CPU - before.CPU
		m.Syscalls = after.Reads + after.Writes - before.Reads - before.Writes
		m.HWM = after.HWM
	}
	m.Elapsed = last.Sub(first)
	pr.mu.Lock()
	m.TTFB, m.TTFT, m.Gaps, m.Events = pr.ttfb, pr.ttft, pr.gaps, pr.events
	arrivals := pr.arrivals
	pr.mu.Unlock()
	if stamped {
		sent, err := takeSent(mockURL)
		if err != nil {
			return nil, fmt.Errorf("mock send times: %v", err)
		}
		for id, arr := range arrivals {
			s := sent[id]
			for n, at := range arr {
				if at > 0 && n < len(s) && s[n] > 0 {
					m.EvLat = append(m.EvLat, time.Duration(at-s[n]))
				}
			}
		}
	}
	m.sortSamples()
	m.Rounds = []roundFigures{m.figures()}
	return m, ctx.Err()
}

// sortSamples sorts the sample slices for percentiles.
func (m *measurement) sortSamples() {
	for _, s := range [][]time.Duration{m.Lat, m.TTFB, m.TTFT, m.Gaps, m.EvLat} {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	}
}

// merge adds the samples and counts of another round of the same
// measurement.
func (m *measurement) merge(o *measurement) {
	m.OK += o.OK
	m.Errors += o.Errors
	if m.FirstErr == "" {
		m.FirstErr = o.FirstErr
	}
	m.Elapsed += o.Elapsed
	m.Lat = append(m.Lat, o.Lat...)
	m.TTFB = append(m.TTFB, o.TTFB...)
	m.TTFT = append(m.TTFT, o.TTFT...)
	m.Gaps = append(m.Gaps, o.Gaps...)
	m.EvLat = append(m.EvLat, o.EvLat...)
	m.Events += o.Events
	m.CPU += o.CPU
	m.Syscalls += o.Syscalls
	m.Rounds = append(m.Rounds, o.Rounds...)
	if o.HasState {
		m.State = addTo(m.State, o.State)
		m.StateDur = addTo(m.StateDur, o.StateDur)
		m.StateDurN = addTo(m.StateDurN, o.StateDurN)
		m.Scripts += o.Scripts
		m.Publishes += o.Publishes
		m.RedisCPU += o.RedisCPU
	}
	m.HasState = m.HasState && o.HasState
	if o.HWM > m.HWM {
		m.HWM = o.HWM
	}
}

// addTo adds the values of src to dst (allocated when nil) and returns it.
func addTo(dst, src map[string]float64) map[string]float64 {
	if dst == nil {
		dst = map[string]float64{}
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// takeSent fetches (and clears) the mock's send times of text deltas.
func takeSent(mockURL string) (map[string][]int64, error) {
	resp, err := http.Get(mockURL + sentPath)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string][]int64
	err = json.NewDecoder(resp.Body).Decode(&m)
	return m, err
}

// memResult is one memory case: N slow streams held open through a proxy.
type memResult struct {
	Target    string
	Requested int
	N         int // streams that were open at the measurement
	Errors    int
	FirstErr  string
	Before    procSample
	During    procSample
	Note      string
}

// PerStream is the RSS growth per open stream.
func (r memResult) PerStream() float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.During.RSS-r.Before.RSS) / float64(r.N)
}

// holdStreams opens n slow streams through the target, waits until each
// has delivered its first byte, samples the proxy process and closes them.
// during, if not nil, runs while the streams are open, after the sample.
func holdStreams(ctx context.Context, t target, base string, n, reqSize, pid int, wait time.Duration, during func()) (memResult, error) {
	res := memResult{Target: t.Name, Requested: n, N: n}
	url, hdr, body := t.request(base, wlSlow, reqSize)
	tr := &http.Transport{
		DialContext:        (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	time.Sleep(200 * time.Millisecond)
	before, err := sampleProc(pid)
	if err != nil {
		return res, err
	}
	res.Before = before

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started = make(chan struct{}, n)
		sem     = make(chan struct{}, 256) // connections being set up at once
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			fail := func(err error) {
				if sctx.Err() == nil {
					mu.Lock()
					res.Errors++
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
					mu.Unlock()
				}
				started <- struct{}{}
			}
			var once sync.Once
			release := func() { once.Do(func() { <-sem }) }
			defer release()
			// the request is on the wire once it is written: let the next
			// connection start then, not when the (slow) answer comes
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { release() }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(sctx, trace), http.MethodPost, url, bytes.NewReader(body))
			req.Header = hdr.Clone()
			resp, err := client.Do(req)
			release()
			if err != nil {
				fail(err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				fail(fmt.Errorf("status %d", resp.StatusCode))
				return
			}
			one := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, one); err != nil {
				fail(err)
				return
			}
			started <- struct{}{}
			_, _ = io.Copy(io.Discard, resp.Body) // until canceled or done
		}()
	}
	deadline := time.After(wait)
	got := 0
wait:
	for got < n {
		select {
		case <-started:
			got++
		case <-deadline:
			res.Note = fmt.Sprintf("%d of %d streams started in time", got, n)
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	mu.Lock()
	res.N = got - res.Errors
	mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	res.During, err = sampleProc(pid)
	if during != nil {
		during()
	}
	cancel()
	wg.Wait()
	return res, err
}
