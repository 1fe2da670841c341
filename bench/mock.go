package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llm_gateway/mockupstream"
)

// mockConfig sizes the canned answers of the mock upstream.
type mockConfig struct {
	RespSize    int     // bytes of a non-streamed answer
	Events      int     // events of a full-speed stream
	PacedEvents int     // events of a paced stream
	PacedRate   float64 // events/s of a paced stream
	SlowEvents  int     // events of a slow (memory case) stream
	SlowRate    float64 // events/s of a slow stream
	Spread      int     // upstream keys each client key is spread over (0: none)
}

// args renders the configuration as command-line flags of -mode=mock.
func (c mockConfig) args() []string {
	return []string{
		"-resp-size", fmt.Sprint(c.RespSize),
		"-events", fmt.Sprint(c.Events),
		"-paced-events", fmt.Sprint(c.PacedEvents),
		"-paced-rate", fmt.Sprint(c.PacedRate),
		"-slow-events", fmt.Sprint(c.SlowEvents),
		"-slow-rate", fmt.Sprint(c.SlowRate),
		"-mock-spread", fmt.Sprint(c.Spread),
	}
}

// mockMux sends each request to the mockupstream.Server programmed for its
// workload (the upstream key's prefix, up to the first '-') and dialect
// (path ending in /messages: Anthropic, else OpenAI).
//
// The mock keeps per-key state under a per-key mutex; so that one busy key
// does not make the mock the bottleneck, requests are spread round robin
// over Spread keys of the same workload.
type mockMux struct {
	servers map[string]*mockupstream.Server
	spread  uint64
	next    atomic.Uint64
	sent    sentLog
}

func newMockMux(c mockConfig) *mockMux {
	replay := func(body []byte, ctype string, rate float64) *mockupstream.Server {
		return mockupstream.New(mockupstream.Config{
			Seed: 1,
			Default: mockupstream.KeyBehavior{
				ReplayBody:        body,
				ReplayContentType: ctype,
				TokensPerSecond:   rate,
			},
		})
	}
	const sse, js = "text/event-stream; charset=utf-8", "application/json"
	return &mockMux{spread: uint64(max(c.Spread, 0)), servers: map[string]*mockupstream.Server{
		"json/openai":     replay(chatResponse(c.RespSize), js, 0),
		"json/anthropic":  replay(messagesResponse(c.RespSize), js, 0),
		"sse/openai":      replay(chatStream(c.Events), sse, 0),
		"sse/anthropic":   replay(messagesStream(c.Events), sse, 0),
		"paced/openai":    replay(chatStream(c.PacedEvents), sse, c.PacedRate),
		"paced/anthropic": replay(messagesStream(c.PacedEvents), sse, c.PacedRate),
		"slow/openai":     replay(chatStream(c.SlowEvents), sse, c.SlowRate),
		"slow/anthropic":  replay(messagesStream(c.SlowEvents), sse, c.SlowRate),
	}}
}

// ServeHTTP implements http.Handler.
func (m *mockMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == sentPath {
		m.sent.serve(w)
		return
	}
	key, bearer := r.Header.Get("X-Api-Key"), false
	if a := r.Header.Get("Authorization"); len(a) > 7 {
		key, bearer = a[7:], true
	}
	workload, _, _ := strings.Cut(key, "-")
	dialect := "openai"
	if strings.HasSuffix(r.URL.Path, "/messages") {
		dialect = "anthropic"
	}
	s := m.servers[workload+"/"+dialect]
	if s == nil {
		http.Error(w, "bench mock: unknown workload key "+key, http.StatusNotFound)
		return
	}
	if m.spread > 0 {
		key = workload + "-s" + strconv.FormatUint(m.next.Add(1)%m.spread, 10)
		if bearer {
			r.Header.Set("Authorization", "Bearer "+key)
		} else {
			r.Header.Set("X-Api-Key", key)
		}
	}
	if id := r.Header.Get("X-Request-Id"); workload == "paced" && id != "" {
		// paced streams: note when each text delta leaves, so that the
		// client can tell each event's latency through the target
		w = &stampWriter{ResponseWriter: w, log: &m.sent, id: id}
	}
	s.ServeHTTP(w, r)
}

// sentPath answers (and forgets) the send times noted so far, as JSON
// {"<X-Request-Id>": [unix ns of text delta 0, 1, ...]}.
const sentPath = "/_bench/sent"

// sentLog holds the send time of each text delta per request id.
type sentLog struct {
	mu sync.Mutex
	m  map[string][]int64
}

func (l *sentLog) note(id string, n int, t int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string][]int64{}
	}
	s := l.m[id]
	for len(s) <= n {
		s = append(s, 0)
	}
	s[n] = t
	l.m[id] = s
}

func (l *sentLog) serve(w http.ResponseWriter) {
	l.mu.Lock()
	m := l.m
	l.m = nil
	l.mu.Unlock()
	b, _ := json.Marshal(m)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// stampWriter notes the time at which each event carrying a text delta
// ("tok<n> ") is flushed.
type stampWriter struct {
	http.ResponseWriter
	log     *sentLog
	id      string
	pending int // text delta index written but not flushed, or -1
	set     bool
}

// Write implements http.ResponseWriter.
func (s *stampWriter) Write(p []byte) (int, error) {
	if n, ok := tokIndex(p); ok {
		s.pending, s.set = n, true
	}
	return s.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (s *stampWriter) Flush() {
	if s.set {
		s.log.note(s.id, s.pending, time.Now().UnixNano())
		s.set = false
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *stampWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// tokIndex finds the first "tok<digits>" in p and returns the number.
func tokIndex(p []byte) (int, bool) {
	for i := 0; i+3 < len(p); i++ {
		if p[i] != 't' || p[i+1] != 'o' || p[i+2] != 'k' || p[i+3] < '0' || p[i+3] > '9' {
			continue
		}
		n := 0
		for j := i + 3; j < len(p) && p[j] >= '0' && p[j] <= '9'; j++ {
			n = n*10 + int(p[j]-'0')
		}
		return n, true
	}
	return 0, false
}

// runMock serves the mock upstream on addr (127.0.0.1:0 picks a port),
// prints "listening <addr>" on stdout and serves until stdin is closed
// (the parent went away).
func runMock(addr string, c mockConfig) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newMockMux(c), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		// the parent holds our stdin open; EOF means it is gone
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
