package caddymodule

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"golang.org/x/net/proxy"

	"github.com/llmgateway/llm_gateway/keypool"
	"github.com/llmgateway/llm_gateway/translate"
)

// egressRegistry holds every exit of the process by a hash of its resolved
// URL, so that a config reload keeps each exit's transport (its open
// connections), health and counters, as pool state is kept (registry).
var egressRegistry = caddy.NewUsagePool()

// egressExit is one exit: a proxy with its own http.Transport (connection
// reuse per exit), or the gateway host itself (direct). It holds resolved
// credentials inside its transport only; name is the masked URL.
type egressExit struct {
	name   string // masked URL (credentials as ***), for logs, admin, metrics
	regKey string // egressRegistry key
	direct bool
	client *http.Client
	tr     *http.Transport // nil for direct
	// proxyAddr is the proxy's host:port, "" for direct; scheme and
	// serverName (https) are what gone asks it in
	proxyAddr  string
	scheme     string
	serverName string
	material   [32]byte       // SHA-256 of the resolved URL, to name the exit in Redis
	forms      []*secretForms // the credentials' forms, to redact error texts

	mu        sync.Mutex
	coolUntil time.Time
	lastError string // redacted
	latency   time.Duration
	latencyN  int64

	shared egressShared // cluster-wide cooldowns (state redis), nil: local only

	requests atomic.Int64 // requests that got an answer through the exit
	failures atomic.Int64 // connect or handshake failures of the exit
	errors   atomic.Int64 // other failures through the exit (the upstream's)
}

// Destruct implements caddy.Destructor: the last config using the exit is
// gone; its idle connections are closed.
func (e *egressExit) Destruct() error {
	if e.tr != nil {
		e.tr.CloseIdleConnections()
	}
	return nil
}

// cooling reports whether the exit is cooling at now and until when.
func (e *egressExit) cooling(now time.Time) (bool, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return now.Before(e.coolUntil), e.coolUntil
}

// cool takes the exit out of use for d after a connect failure.
func (e *egressExit) cool(d time.Duration, err error) {
	e.failures.Add(1)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the upstream's URL says nothing of the exit
	}
	msg := e.redact(err.Error())
	until := time.Now().Add(d)
	e.mu.Lock()
	if until.After(e.coolUntil) {
		e.coolUntil = until
	}
	e.lastError = msg
	sh := e.shared
	e.mu.Unlock()
	egressMetricsInc(e.name, "unreachable")
	if sh != nil {
		sh.publish(e, until)
	}
}

// answered books a request that got an HTTP answer through the exit after
// d (time to response headers).
func (e *egressExit) answered(d time.Duration) {
	e.requests.Add(1)
	e.mu.Lock()
	if e.latencyN == 0 {
		e.latency = d
	} else {
		e.latency = (e.latency*4 + d) / 5 // EWMA, alpha 0.2
	}
	e.latencyN++
	e.mu.Unlock()
	egressMetricsInc(e.name, "success")
}

// redact removes the exit's credentials, in every form, from a text.
func (e *egressExit) redact(s string) string {
	b := []byte(s)
	for _, f := range e.forms {
		b = f.redact(b)
	}
	return string(b)
}

// egressPlan is the resolved exit list of a key: its exclusive exit, or
// its pool's list, or the global list.
type egressPlan struct {
	exits          []*egressExit
	strategy       string
	cooldown       time.Duration
	connectTimeout time.Duration
	next           atomic.Uint64 // rotate's turn
}

// orderInto returns the exits to try for a request, in order, appended to
// buf[:0] (a caller's array keeps a request's ranking off the heap): the
// healthy ones as the strategy ranks them, or, when every exit is cooling,
// the one whose cooldown ends first alone (tried once). Exits in tried are
// left out.
func (pl *egressPlan) orderInto(buf []*egressExit, session string, tried []*egressExit) []*egressExit {
	n := len(pl.exits)
	start := 0
	switch pl.strategy {
	case "failover":
	case "random":
		start = rand.IntN(n)
	case "sticky":
		if session != "" {
			start = int(fnv1a64(session) % uint64(n))
			break
		}
		start = int(pl.next.Add(1)-1) % n
	default: // rotate
		start = int(pl.next.Add(1)-1) % n
	}
	now := time.Now()
	out := buf[:0]
	var soonest *egressExit
	var soonestAt time.Time
	for i := 0; i < n; i++ {
		e := pl.exits[(start+i)%n]
		if containsExit(tried, e) {
			continue
		}
		if c, until := e.cooling(now); c {
			if soonest == nil || until.Before(soonestAt) {
				soonest, soonestAt = e, until
			}
			continue
		}
		out = append(out, e)
	}
	if len(out) == 0 && soonest != nil && len(tried) == 0 {
		return append(out, soonest)
	}
	return out
}

// fnv1a64 is the 64-bit FNV-1a hash of s (as hash/fnv's New64a computes
// it, without its allocation).
func fnv1a64(s string) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime64
	}
	return h
}

// exhausted reports whether every exit of the plan failed in this request.
func (pl *egressPlan) exhausted(tried []*egressExit) bool {
	for _, e := range pl.exits {
		if !containsExit(tried, e) {
			return false
		}
	}
	return true
}

func containsExit(es []*egressExit, e *egressExit) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// exitError marks a failure of the exit itself (reaching the proxy, its
// handshake or authentication), as opposed to a failure of the upstream
// behind it.
type exitError struct{ err error }

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// upstreamBehindExit marks a failure of the upstream reached through an
// exit whose proxy answered (its CONNECT tunnel or SOCKS handshake was
// under way or up): the upstream's, hence the key's outcome, classified
// as the same failure without a proxy (a timeout wraps
// context.DeadlineExceeded).
type upstreamBehindExit struct{ err error }

func (e *upstreamBehindExit) Error() string { return e.err.Error() }
func (e *upstreamBehindExit) Unwrap() error { return e.err }

// Timeout reports whether the upstream was not reached in time (a
// *url.Error around it asks, as keypool.ClassifyError does).
func (e *upstreamBehindExit) Timeout() bool { return isTimeout(e.err) }

// exitsUnreachableError is the failure of a request whose every exit
// failed: the key is not charged, and the client gets 503.
type exitsUnreachableError struct {
	names []string // masked
	last  string   // redacted
	retry time.Duration
}

func (e *exitsUnreachableError) Error() string {
	return "egress exits unreachable: " + strings.Join(e.names, ", ") + " (last: " + e.last + ")"
}

// egressTry is one request through one exit, carried in the request's
// context for the transport's hooks.
type egressTry struct {
	exit           *egressExit
	connectTimeout time.Duration
	gotConn        atomic.Bool
	// tunnelUp: the dialer returned a connection through the proxy; what
	// fails after (the upstream's TLS handshake) is not the proxy's step
	tunnelUp atomic.Bool
}

type egressTryKey struct{}

// egressRootCAs, when set, replaces the system roots for upstreams reached
// through exits and for HTTPS proxies (tests set it to trust their TLS
// mock upstream and proxy); nil in production.
var egressRootCAs *x509.CertPool

// egressTransport returns a transport that leaves through the proxy u.
func egressTransport(u *url.URL) *http.Transport {
	// the shared transport's pool sizes and timeouts; the proxy and the
	// dialer are the exit's own (set below), never the environment's
	t := upstreamTransport.Clone()
	t.Proxy = nil
	t.DialContext = nil
	if egressRootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: egressRootCAs, MinVersion: tls.VersionTLS12}
	}
	fwd := exitDialer{}
	switch u.Scheme {
	case "http", "https":
		// a CONNECT tunnel for every upstream, http or https: the proxy
		// never sees the request (nor the key), TLS is end to end, and
		// the tunnel is kept alive like any connection
		t.DialContext = connectDialer(u)
	case "socks5", "socks5h":
		var auth *proxy.Auth
		if u.User != nil {
			pass, _ := u.User.Password()
			auth = &proxy.Auth{User: u.User.Username(), Password: pass}
		}
		d, _ := proxy.SOCKS5("tcp", u.Host, auth, fwd) // errors only for a bad network
		cd := d.(proxy.ContextDialer)
		localDNS := u.Scheme == "socks5"
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			pt, ut := egressTimeouts(ctx)
			ctx, cancel := context.WithTimeout(ctx, pt+ut)
			defer cancel()
			if localDNS {
				host, port, err := net.SplitHostPort(addr)
				if err == nil && net.ParseIP(host) == nil {
					lctx, lcancel := context.WithTimeout(ctx, ut)
					ips, err := net.DefaultResolver.LookupIPAddr(lctx, host)
					lcancel()
					if err != nil {
						// the upstream's name: not the exit's fault
						return nil, &upstreamBehindExit{err}
					}
					if len(ips) > 0 {
						addr = net.JoinHostPort(ips[0].IP.String(), port)
					}
				}
			}
			// the proxy's own step (reaching it, its greeting and
			// authentication) within pt; then the proxy resolves and
			// reaches the upstream, within ut as a direct dial would
			st := &socksStep{}
			dctx, dcancel := context.WithCancel(context.WithValue(ctx, socksStepKey{}, st))
			defer dcancel()
			timer := time.AfterFunc(pt, func() {
				if !st.answered.Load() {
					st.timedOut.Store(true)
					dcancel()
				}
			})
			c, err := cd.DialContext(dctx, network, addr)
			timer.Stop()
			if err != nil {
				var ee *exitError
				switch {
				case st.timedOut.Load():
					return nil, &exitError{fmt.Errorf("connect timeout (%v): the proxy did not complete its handshake", pt)}
				case errors.As(err, &ee):
					return nil, err
				case socksTargetFailure(err), st.answered.Load() && isTimeout(err):
					// the proxy answered, then could not reach the
					// upstream (a reply code) or not in time
					return nil, &upstreamBehindExit{err}
				}
				return nil, &exitError{err}
			}
			markTunnelUp(ctx)
			return c, nil
		}
	}
	return t
}

// connectDialer returns a DialContext that opens an HTTP/1.1 CONNECT
// tunnel to the upstream through the HTTP or HTTPS proxy u (per RFC 9110
// section 9.3.6), with Proxy-Authorization: Basic when u has
// credentials. Failing to reach the proxy, its TLS, an I/O failure or a
// refusal (any 4xx: 401 or 407 for credentials, 403, 429) during the
// exchange are the exit's (exitError); a 5xx means the proxy could not
// reach the upstream.
func connectDialer(u *url.URL) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var auth string
	if u.User != nil {
		pass, _ := u.User.Password()
		auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		pt, ut := egressTimeouts(ctx)
		ctx, cancel := context.WithTimeout(ctx, pt+ut)
		defer cancel()
		pctx, pcancel := context.WithTimeout(ctx, pt)
		defer pcancel()
		c, err := dialer.DialContext(pctx, "tcp", u.Host)
		if err != nil {
			return nil, &exitError{err}
		}
		if u.Scheme == "https" {
			tc := tls.Client(c, &tls.Config{ServerName: u.Hostname(), RootCAs: egressRootCAs, MinVersion: tls.VersionTLS12})
			if err := tc.HandshakeContext(pctx); err != nil {
				c.Close()
				return nil, &exitError{fmt.Errorf("TLS with the proxy: %w", err)}
			}
			c = tc
		}
		stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
		req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
		if auth != "" {
			req.Header.Set("Proxy-Authorization", auth)
		}
		type answer struct {
			resp *http.Response
			err  error
		}
		br := bufio.NewReader(&proxyAnswerReader{r: c, left: maxProxyAnswer})
		done := make(chan answer, 1)
		go func() {
			var a answer
			if a.err = req.Write(c); a.err == nil {
				a.resp, a.err = http.ReadResponse(br, req)
			}
			done <- a
		}()
		// the proxy answers CONNECT once it has reached the upstream: if
		// it has not within pt, a proxy that answers a request of its
		// own (proxyAnswers) is alive and the upstream is slow, given ut
		// as a direct dial; one that does not is stalled (the exit's).
		// The CONNECT answer is taken as soon as it comes, while the
		// proxy is asked too: only a failure waits for the verdict.
		alive := false
		var probe chan bool // the verdict of proxyAnswers, once asked
		var a answer
		select {
		case a = <-done:
		case <-pctx.Done():
			if ctx.Err() != nil {
				_ = c.SetDeadline(time.Unix(1, 0))
				a = <-done
				break
			}
			probe = make(chan bool, 1)
			go func() { probe <- proxyAnswers(ctx, u, pt) }() // ends with ctx, within pt
			select {
			case a = <-done:
			case alive = <-probe:
				probe = nil
				if !alive {
					_ = c.SetDeadline(time.Unix(1, 0))
				}
				a = <-done
			}
		}
		if !stop() && a.err == nil {
			a.err = ctx.Err()
		}
		if a.err != nil {
			if probe != nil {
				alive = <-probe // whose failure it is: the proxy's, or the upstream's behind it
			}
			c.Close()
			switch {
			case alive && isTimeout(a.err):
				return nil, &upstreamBehindExit{fmt.Errorf("the proxy did not reach the upstream within %v: %w", ut, context.DeadlineExceeded)}
			case !alive && pctx.Err() != nil && ctx.Err() == nil:
				return nil, &exitError{fmt.Errorf("connect timeout (%v): the proxy did not answer CONNECT", pt)}
			}
			return nil, &exitError{fmt.Errorf("proxy CONNECT: %w", a.err)}
		}
		// the answer's body is not read: a refusal's is of no use and the
		// connection is closed, and a 2xx has none (RFC 9110, 9.3.6: its
		// Content-Length and Transfer-Encoding are ignored; bytes sent
		// after its header fail below). Closing it would read it to its
		// end, and the context no longer bounds this: a proxy sending
		// less than its Content-Length held the dial for good.
		resp := a.resp
		// the status by its code and standard text: the proxy's own
		// reason phrase may echo what it was sent (Proxy-Authorization),
		// and this error reaches logs and the admin API
		status := strings.TrimSpace(strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode))
		switch {
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			// 401/407 (credentials), 403 (ACL), 405, 429: the proxy
			// refuses us, whatever the upstream
			c.Close()
			return nil, &exitError{fmt.Errorf("proxy refused CONNECT: %s", status)}
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			c.Close()
			return nil, &upstreamBehindExit{fmt.Errorf("proxy could not reach the upstream: %s", status)}
		case br.Buffered() > 0:
			c.Close()
			return nil, &exitError{errors.New("proxy sent data before the tunnel was used")}
		}
		_ = c.SetDeadline(time.Time{})
		markTunnelUp(ctx)
		return c, nil
	}
}

// maxProxyAnswer bounds the bytes read of a proxy's answer to CONNECT (or
// to proxyAnswers' OPTIONS), status line and header: a proxy that sends
// a header without end fails as the exit's instead of being read into
// memory until the connect timeout. Go's own server allows 1 MiB of
// request header; a proxy's answer is a few lines.
const maxProxyAnswer = 64 << 10

// errProxyAnswerTooLarge is the read error past maxProxyAnswer.
var errProxyAnswerTooLarge = errors.New("proxy answer too large (over 64 KiB before the end of its header)")

// proxyAnswerReader reads r until left bytes are read, then fails with
// errProxyAnswerTooLarge.
type proxyAnswerReader struct {
	r    io.Reader
	left int
}

func (p *proxyAnswerReader) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, errProxyAnswerTooLarge
	}
	n, err := p.r.Read(b[:min(len(b), p.left)])
	p.left -= n
	return n, err
}

// proxyAnswers reports whether the HTTP(S) proxy u answers a request of
// its own (OPTIONS *, which needs no upstream; any status, 400 or 407
// included, is an answer) on a new connection within timeout: a proxy
// slow to answer CONNECT is then alive, waiting for its upstream.
func proxyAnswers(ctx context.Context, u *url.URL, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return false
	}
	defer c.Close()
	if u.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: u.Hostname(), RootCAs: egressRootCAs, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			return false
		}
		c = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	req := &http.Request{Method: http.MethodOptions, URL: &url.URL{Opaque: "*"}, Host: u.Host, Header: http.Header{}}
	if err := req.Write(c); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(&proxyAnswerReader{r: c, left: maxProxyAnswer}), req)
	if err != nil {
		return errors.Is(err, errProxyAnswerTooLarge) // it answered, however badly
	}
	_ = resp.Body.Close()
	return true
}

// egressTimeouts are a dial's bounds through an exit: pt for the proxy's
// own step (the exit's connect_timeout, carried by the request's
// egressTry), ut for the upstream's connection behind it (the pool's
// connect_timeout, as for a direct dial). The transport may go on dialing
// after the request that started the dial has gone, so the dial bounds
// itself.
func egressTimeouts(ctx context.Context) (pt, ut time.Duration) {
	pt, ut = DefaultEgressConnectTimeout, DefaultConnectTimeout
	if try, ok := ctx.Value(egressTryKey{}).(*egressTry); ok && try.connectTimeout > 0 {
		pt = try.connectTimeout
	}
	if d, ok := ctx.Value(connectTimeoutKey{}).(time.Duration); ok && d > 0 {
		ut = d
	}
	return pt, ut
}

// markTunnelUp records on the request's egressTry that its dial through
// the proxy succeeded.
func markTunnelUp(ctx context.Context) {
	if try, ok := ctx.Value(egressTryKey{}).(*egressTry); ok {
		try.tunnelUp.Store(true)
	}
}

// isTimeout reports whether err is a deadline or an I/O timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// socksStep follows a SOCKS5 dial (RFC 1928): answered once the proxy
// has replied to the greeting (and authentication) and the CONNECT
// request goes out; timedOut when it had not within the exit's
// connect_timeout.
type socksStep struct {
	answered atomic.Bool
	timedOut atomic.Bool
}

type socksStepKey struct{}

// socksConn is a connection to a SOCKS5 proxy that marks its dial's
// socksStep answered when, after a reply from the proxy, the CONNECT
// request (VER 5 first) is written: the greeting and the
// authentication (VER 1) come before it.
type socksConn struct {
	net.Conn
	st      *socksStep
	replied atomic.Bool
}

func (c *socksConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.replied.Load() {
		c.replied.Store(true)
	}
	return n, err
}

func (c *socksConn) Write(b []byte) (int, error) {
	if len(b) > 0 && b[0] == 5 && !c.st.answered.Load() && c.replied.Load() {
		c.st.answered.Store(true)
	}
	return c.Conn.Write(b)
}

// socksTargetFailure reports whether a SOCKS5 error is the proxy's reply
// that the upstream could not be reached (RFC 1928 reply codes 3-6),
// rather than a failure of the proxy itself.
func socksTargetFailure(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	m := err.Error()
	for _, s := range []string{"network unreachable", "host unreachable", "connection refused", "TTL expired"} {
		if strings.Contains(m, "unknown error "+s) {
			return true
		}
	}
	return false
}

// exitDialer dials a proxy; its errors are the exit's (exitError).
type exitDialer struct{}

// Dial implements proxy.Dialer.
func (d exitDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext implements proxy.ContextDialer. A dial that carries a
// socksStep gets a socksConn that follows the handshake.
func (exitDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, &exitError{err}
	}
	if st, ok := ctx.Value(socksStepKey{}).(*socksStep); ok {
		return &socksConn{Conn: c, st: st}, nil
	}
	return c, nil
}

// newEgressExit builds the exit of a configured proxy URL (placeholders
// resolved with repl), or returns the one the process already has for the
// same resolved URL; the caller holds a reference (regKey) until Cleanup.
func newEgressExit(raw string, repl *caddy.Replacer) (*egressExit, error) {
	if raw == "direct" {
		val, _, err := egressRegistry.LoadOrNew("egress:direct", func() (caddy.Destructor, error) {
			return &egressExit{name: "direct", regKey: "egress:direct", direct: true, client: upstreamClient}, nil
		})
		if err != nil {
			return nil, err
		}
		return val.(*egressExit), nil
	}
	v := raw
	if strings.Contains(raw, "{") {
		var err error
		if v, err = resolveSecretValue(repl, raw); err != nil {
			return nil, fmt.Errorf("egress proxy %s: %v", maskProxyURL(raw), err)
		}
	}
	u, err := parseProxyURL(v)
	if err != nil {
		return nil, fmt.Errorf("egress proxy %s: %v", maskProxyURL(raw), err)
	}
	sum := sha256.Sum256([]byte(v))
	regKey := "egress:" + hex.EncodeToString(sum[:12]) // the registry is in memory only
	val, _, err := egressRegistry.LoadOrNew(regKey, func() (caddy.Destructor, error) {
		e := &egressExit{name: maskProxyURL(raw), regKey: regKey}
		if u.User != nil {
			e.name = u.Scheme + "://***@" + u.Host
			if user := u.User.Username(); user != "" {
				e.forms = append(e.forms, newSecretForms(user))
			}
			if pass, ok := u.User.Password(); ok && pass != "" {
				e.forms = append(e.forms, newSecretForms(pass))
			}
		} else {
			e.name = u.Scheme + "://" + u.Host
		}
		e.tr = egressTransport(u)
		e.proxyAddr, e.material = u.Host, sum
		e.scheme, e.serverName = u.Scheme, u.Hostname()
		e.client = &http.Client{Transport: e.tr, CheckRedirect: upstreamClient.CheckRedirect}
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return val.(*egressExit), nil
}

// egressSet is what a handler provisioned: the plans and the registry
// references it holds.
type egressSet struct {
	global  *egressPlan // nil: direct
	regKeys []string
	exits   []*egressExit // every exit referenced, for the admin API
}

// plan builds a plan from a config (nil config or Direct: nil, direct).
// defaults are the cooldown and connect timeout of the wider list.
func (s *egressSet) plan(ec *EgressConfig, repl *caddy.Replacer) (*egressPlan, error) {
	if ec == nil || ec.Direct {
		if ec != nil && len(ec.Proxies) > 0 {
			return nil, errors.New("egress: give either direct or proxies, not both")
		}
		return nil, nil
	}
	if len(ec.Proxies) == 0 {
		return nil, errors.New("egress: at least one proxy is required (or direct)")
	}
	if ec.Cooldown < 0 || ec.ConnectTimeout < 0 {
		return nil, errors.New("egress: cooldown and connect_timeout must not be negative")
	}
	pl := &egressPlan{strategy: ec.Strategy,
		cooldown:       durationOr(ec.Cooldown, DefaultEgressCooldown),
		connectTimeout: durationOr(ec.ConnectTimeout, DefaultEgressConnectTimeout)}
	if pl.strategy == "" {
		pl.strategy = "rotate"
	}
	if !containsWord(egressStrategies, pl.strategy) {
		return nil, fmt.Errorf("egress strategy %q: want %s", pl.strategy, strings.Join(egressStrategies, ", "))
	}
	for _, raw := range ec.Proxies {
		e, err := s.exit(raw, repl)
		if err != nil {
			return nil, err
		}
		if containsExit(pl.exits, e) {
			return nil, fmt.Errorf("egress proxy %s is listed twice", e.name)
		}
		pl.exits = append(pl.exits, e)
	}
	return pl, nil
}

// exit returns the exit of raw, taking a registry reference.
func (s *egressSet) exit(raw string, repl *caddy.Replacer) (*egressExit, error) {
	e, err := newEgressExit(raw, repl)
	if err != nil {
		return nil, err
	}
	s.regKeys = append(s.regKeys, e.regKey)
	if !containsExit(s.exits, e) {
		s.exits = append(s.exits, e)
	}
	return e, nil
}

// release drops the handler's registry references.
func (s *egressSet) release() {
	if s == nil {
		return
	}
	for _, k := range s.regKeys {
		_, _ = egressRegistry.Delete(k)
	}
	s.regKeys = nil
}

// keyPlan resolves a key's plan: its exclusive exit (with the pool's or
// the global cooldown and connect timeout), "direct", else the pool's.
func (s *egressSet) keyPlan(kc *KeyConfig, pool *egressPlan, repl *caddy.Replacer) (*egressPlan, error) {
	switch kc.Egress {
	case "":
		return pool, nil
	case "direct":
		return nil, nil
	}
	if err := (new(EgressExit)).UnmarshalText([]byte(kc.Egress)); err != nil {
		return nil, err
	}
	e, err := s.exit(string(kc.Egress), repl)
	if err != nil {
		return nil, err
	}
	pl := &egressPlan{exits: []*egressExit{e}, strategy: "failover",
		cooldown: DefaultEgressCooldown, connectTimeout: DefaultEgressConnectTimeout}
	if wider := pool; wider != nil {
		pl.cooldown, pl.connectTimeout = wider.cooldown, wider.connectTimeout
	} else if s.global != nil {
		pl.cooldown, pl.connectTimeout = s.global.cooldown, s.global.connectTimeout
	}
	return pl, nil
}

// egressDo sends req through the plan's exits (nil plan: directly):
// serially, moving to the next exit when one cannot be reached, cooling
// it. It returns the answer (or the upstream's failure) and the exit that
// carried it; *exitsUnreachableError when every exit tried failed. tried
// collects the exits that failed in this request (shared across its
// keys), so no exit is tried twice per request. attemptFailed reports
// whether the attempt itself ended (client gone, attempt timeout): the
// exit is then not blamed.
func egressDo(pl *egressPlan, req *http.Request, session string, tried *[]*egressExit, attemptFailed func() bool) (*http.Response, *egressExit, error) {
	if pl == nil {
		resp, err := upstreamClient.Do(req)
		return resp, nil, err
	}
	var buf [8]*egressExit // the ranking stays on the stack for up to 8 exits
	exits := pl.orderInto(buf[:0], session, *tried)
	if len(exits) == 0 {
		return nil, nil, unreachable(pl, *tried)
	}
	for i, e := range exits {
		r := req
		if i > 0 {
			if req.GetBody == nil {
				break
			}
			body, err := req.GetBody()
			if err != nil {
				break
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		if e.direct {
			resp, err := upstreamClient.Do(r)
			if err == nil {
				e.answered(0)
			}
			return resp, e, err
		}
		resp, err, exitFault := e.do(r, pl.connectTimeout, attemptFailed)
		if err == nil {
			return resp, e, nil
		}
		if !exitFault {
			e.errors.Add(1)
			egressMetricsInc(e.name, "error")
			return nil, e, err
		}
		e.cool(pl.cooldown, err)
		*tried = append(*tried, e)
		if attemptFailed() {
			break
		}
	}
	return nil, nil, unreachable(pl, *tried)
}

// unreachable builds the failure of a request whose exits all failed.
func unreachable(pl *egressPlan, tried []*egressExit) *exitsUnreachableError {
	eu := &exitsUnreachableError{}
	now := time.Now()
	for _, e := range pl.exits {
		eu.names = append(eu.names, e.name)
		e.mu.Lock()
		if containsExit(tried, e) && e.lastError != "" {
			eu.last = e.name + ": " + e.lastError
		}
		if d := e.coolUntil.Sub(now); d > 0 && (eu.retry == 0 || d < eu.retry) {
			eu.retry = d
		}
		e.mu.Unlock()
	}
	if eu.last == "" {
		eu.last = "every exit is cooling"
	}
	return eu
}

// do sends one request through the exit. The dialers bound the proxy's
// own step (reaching it, its handshake, its answer) by connectTimeout and
// the upstream's connection behind it as a direct dial is bounded (see
// egressTimeouts); the upstream's TLS handshake is bounded by the
// transport's TLSHandshakeTimeout, as without a proxy. exitFault says the
// failure is the exit's (the request may go through another exit); a
// failure of the upstream behind a proxy that answered is not.
func (e *egressExit) do(req *http.Request, connectTimeout time.Duration, attemptFailed func() bool) (*http.Response, error, bool) {
	try := &egressTry{exit: e, connectTimeout: connectTimeout}
	ctx, cancel := context.WithCancel(context.WithValue(req.Context(), egressTryKey{}, try))
	// composed with the caller's trace hooks, which run too
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { try.gotConn.Store(true) },
	})
	t0 := time.Now()
	resp, err := e.client.Do(req.WithContext(ctx))
	if err == nil {
		e.answered(time.Since(t0))
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil, false
	}
	cancel()
	if attemptFailed() {
		return nil, err, false
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return nil, err, true
	}
	var ue *upstreamBehindExit
	if errors.As(err, &ue) || !ioFailure(err) {
		return nil, err, false
	}
	if !try.gotConn.Load() && !try.tunnelUp.Load() {
		// the proxy dropped the connection or stalled before it was set up
		return nil, &exitError{err}, true
	}
	if e.gone(connectTimeout) {
		// a kept-alive tunnel broke because the proxy is gone
		return nil, &exitError{err}, true
	}
	return nil, &exitJudged{err}, false
}

// exitJudged is a failure through an exit that was found not to be the
// exit's (its proxy was asked, see gone): exitLost does not ask again.
type exitJudged struct{ err error }

func (e *exitJudged) Error() string { return e.err.Error() }
func (e *exitJudged) Unwrap() error { return e.err }

// reachable reports whether the exit's proxy accepts a TCP connection
// within timeout: it tells a broken tunnel of a dead proxy from an
// upstream that dropped the connection.
func (e *egressExit) reachable(timeout time.Duration) bool {
	if e.proxyAddr == "" {
		return true
	}
	c, err := net.DialTimeout("tcp", e.proxyAddr, min(timeout, 2*time.Second))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// gone reports whether the exit's proxy, after a connection through it
// dropped or stalled, is gone. A proxy that answers a request of its own
// on a new connection (see answers) is not: a live one does so in one
// round trip, and the request waits no longer. One that refuses the
// connection is. Otherwise (the new connection dropped, or not answered
// within exitRecheckDelay) it is judged as before: a proxy that is going
// away may still accept a connection for a few milliseconds after it
// dropped this one (its listener closes last), so it is gone unless it
// still accepts one exitRecheckDelay after the first.
func (e *egressExit) gone(timeout time.Duration) bool {
	if e.proxyAddr == "" {
		return false
	}
	t0 := time.Now()
	switch e.answers(timeout) {
	case proxyAnswered:
		return false
	case proxyRefused:
		return true
	}
	time.Sleep(exitRecheckDelay - time.Since(t0))
	return !e.reachable(timeout)
}

// proxyProbe is what asking a proxy found (see answers).
type proxyProbe int

const (
	proxyAnswered proxyProbe = iota // it answered
	proxyRefused                    // it refused the connection
	proxySilent                     // it took the connection, then dropped it or said nothing in time
)

// answers asks the exit's proxy a request that needs no upstream on a
// new connection (dialed within timeout, at most 2s), and waits for the
// first bytes of its answer exitRecheckDelay at most: OPTIONS * for an
// HTTP(S) proxy (any status is an answer, 400 or 407 included; over TLS
// for https), the greeting for a SOCKS5 one (RFC 1928: version 5,
// methods "none" and "username/password"; any reply is an answer).
func (e *egressExit) answers(timeout time.Duration) proxyProbe {
	c, err := net.DialTimeout("tcp", e.proxyAddr, min(timeout, 2*time.Second))
	if err != nil {
		return proxyRefused
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(exitRecheckDelay))
	conn := c
	if e.scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: e.serverName, RootCAs: egressRootCAs, MinVersion: tls.VersionTLS12})
		if tc.Handshake() != nil {
			return proxySilent
		}
		conn = tc
	}
	q := []byte("OPTIONS * HTTP/1.1\r\nHost: " + e.proxyAddr + "\r\n\r\n")
	if e.scheme == "socks5" || e.scheme == "socks5h" {
		q = []byte{5, 2, 0, 2}
	}
	if _, err := conn.Write(q); err != nil {
		return proxySilent
	}
	var first [2]byte
	if _, err := io.ReadFull(conn, first[:]); err != nil {
		return proxySilent
	}
	return proxyAnswered
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// ioFailure reports whether err is a dropped or stalled connection.
func ioFailure(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// egressView is an exit in the admin API.
type egressView struct {
	Exit            string  `json:"exit"` // masked URL
	State           string  `json:"state"`
	CooldownSeconds int     `json:"cooldown_seconds_left,omitempty"`
	Requests        int64   `json:"requests"`
	Failures        int64   `json:"failures"`
	Errors          int64   `json:"upstream_errors"`
	LatencyMS       float64 `json:"latency_ms,omitempty"`
	LastError       string  `json:"last_error,omitempty"`
}

// egressViews lists every exit of the process, by name.
func egressViews() []egressView {
	var exits []*egressExit
	egressRegistry.Range(func(_, v any) bool {
		exits = append(exits, v.(*egressExit))
		return true
	})
	sort.Slice(exits, func(i, j int) bool { return exits[i].name < exits[j].name })
	now := time.Now()
	out := make([]egressView, 0, len(exits))
	for _, e := range exits {
		c, until := e.cooling(now)
		v := egressView{Exit: e.name, State: "healthy", Requests: e.requests.Load(), Failures: e.failures.Load(), Errors: e.errors.Load()}
		if c {
			v.State, v.CooldownSeconds = "cooling", secondsLeft(until.Sub(now))
		}
		e.mu.Lock()
		v.LatencyMS, v.LastError = millis(e.latency), e.lastError
		e.mu.Unlock()
		out = append(out, v)
	}
	return out
}

// provisionEgress builds the handler's global exit list (h.egress is set
// even without one, so pools and keys can add theirs).
func (h *Handler) provisionEgress(repl *caddy.Replacer) error {
	h.egress = &egressSet{}
	pl, err := h.egress.plan(h.Egress, repl)
	if err != nil {
		return err
	}
	h.egress.global = pl
	return nil
}

// logEgress logs the handler's exits at provision (masked), and warns of
// proxy credentials written literally: GET /config/ and autosave show
// them, as they would a literal key.
func (h *Handler) logEgress() {
	if h.logger == nil || h.egress == nil || len(h.egress.exits) == 0 {
		return
	}
	h.logger.Info("egress exits", zap.Strings("exits", (&egressPlan{exits: h.egress.exits}).names()))
	var literal []string
	check := func(raw string) {
		scheme, rest, _ := strings.Cut(raw, "://")
		if i := strings.LastIndexByte(rest, '@'); i >= 0 && scheme != "" {
			// the password is the secret; a user alone is a token
			secret, pass, hasPass := strings.Cut(rest[:i], ":")
			if hasPass {
				secret = pass
			}
			if !strings.Contains(secret, "{") {
				literal = append(literal, maskProxyURL(raw))
			}
		}
	}
	lists := []*EgressConfig{h.Egress}
	for _, pc := range h.Pools {
		if pc == nil {
			continue
		}
		lists = append(lists, pc.Egress)
		for _, kc := range pc.Keys {
			if kc != nil {
				check(string(kc.Egress))
			}
		}
	}
	for _, ec := range lists {
		if ec != nil {
			for _, raw := range ec.Proxies {
				check(raw)
			}
		}
	}
	if len(literal) > 0 {
		h.logger.Warn("proxy credentials written literally in the config are shown by the admin API (GET /config/) and saved in autosave.json; write them as {env.NAME} or {file./path}",
			zap.Strings("exits", literal))
	}
}

// poolEgress sets a pool's exit list: its own, else the global one.
func (h *Handler) poolEgress(p *pool, pc *PoolConfig, repl *caddy.Replacer) error {
	if pc.Egress == nil {
		p.egress = h.egress.global
		return nil
	}
	pl, err := h.egress.plan(pc.Egress, repl)
	if err != nil {
		return err
	}
	p.egress = pl
	return nil
}

// label is the exit's name for logs and headers, "" for none (nil).
func (e *egressExit) label() string {
	if e == nil {
		return ""
	}
	return e.name
}

// routedVia is the attempt's X-Routed-Via: "<pool>/<key>", followed by
// " via <exit>" (masked URL) when it left through an egress exit.
func (x *exchange) routedVia() string {
	if x.exit == nil {
		return x.p.name + "/" + x.uk.public
	}
	return x.p.name + "/" + x.uk.public + " via " + x.exit.name
}

// attemptEnded reports whether the attempt itself is over (the client went
// away or the attempt timed out): a connect failure is then not the exit's.
func (x *exchange) attemptEnded() bool {
	return x.timedOut.Load() || x.r.Context().Err() != nil
}

// exitsUnreachable ends an attempt whose every exit failed: the key is not
// charged (its lease is released as if the attempt never happened), the
// log names the failure, and the loop moves on to keys whose exits are
// not exhausted.
func (x *exchange) exitsUnreachable(eu *exitsUnreachableError) attemptResult {
	x.lease.Release(keypool.Outcome{Kind: keypool.Canceled})
	x.rl.attempts = append(x.rl.attempts, attemptLog{key: x.uk.id, outcome: "exit_unreachable",
		dur: time.Since(x.t0)})
	if x.r.Context().Err() != nil {
		x.rl.status = 499
		return attemptResult{done: true}
	}
	return attemptResult{outcome: keypool.Outcome{Kind: keypool.Canceled, Message: eu.Error()}, exitsDown: eu}
}

// exitsFailure is the client's answer when the last attempt found every
// exit of its key unreachable: 503 naming the exits (masked), with
// Retry-After the soonest end of their cooldowns.
func exitsFailure(last *attemptResult) *loopFailure {
	if last == nil || last.exitsDown == nil {
		return nil
	}
	return &loopFailure{status: http.StatusServiceUnavailable, class: translate.ErrUpstreamUnavailable,
		msg: last.exitsDown.Error(), retryAfter: max(last.exitsDown.retry, time.Second)}
}

// do sends a request the gateway makes for key uk itself (a diagnose
// probe, a models list) through the key's exits, as client requests go.
func (k *upstreamKey) do(req *http.Request) (*http.Response, error) {
	var tried []*egressExit
	resp, exit, err := egressDo(k.egress, req, "", &tried, func() bool { return req.Context().Err() != nil })
	if exit != nil {
		k.exitSeen.Store(exit)
	}
	return resp, err
}

// lastExit names the exit of the key's last gateway-made request ("" for
// none or direct).
func (k *upstreamKey) lastExit() string {
	if e, ok := k.exitSeen.Load().(*egressExit); ok && k.egress != nil {
		return e.name
	}
	return ""
}

// egressProbeFailed fills a diagnose result whose probe found every exit
// of the key unreachable, and reports whether it did: the key's state is
// then kept (verifyKey), since the failure is not the key's.
func egressProbeFailed(err error, res *probeResult) bool {
	var eu *exitsUnreachableError
	if !errors.As(err, &eu) {
		return false
	}
	res.Error, res.Hint = "egress_unreachable", eu.Error()
	res.outcome = keypool.Outcome{Kind: keypool.Canceled}
	return true
}

// names lists the plan's exits (masked), nil for none (direct).
func (pl *egressPlan) names() []string {
	if pl == nil {
		return nil
	}
	out := make([]string, len(pl.exits))
	for i, e := range pl.exits {
		out[i] = e.name
	}
	return out
}

// exitLost reports whether a dropped connection of the attempt is its
// egress exit's doing: the answer came through a proxy that no longer
// accepts connections. The exit then cools, and the key is not charged
// (the answer is lost all the same: a stream that had begun ends with an
// error event).
func (x *exchange) exitLost(err error) bool {
	pl := x.uk.egress
	if x.exit == nil || x.exit.direct || pl == nil || err == nil || !ioFailure(err) {
		return false
	}
	var judged *exitJudged
	var behind *upstreamBehindExit
	if errors.As(err, &judged) || errors.As(err, &behind) {
		return false // the proxy answered for this failure already (egressExit.do)
	}
	if !x.exit.gone(pl.connectTimeout) {
		return false
	}
	x.exit.cool(pl.cooldown, &exitError{err})
	return true
}

// exitRecheckDelay bounds how long gone waits for a proxy's own answer,
// and is how long after its first connection it checks a second time
// that a proxy which did not answer still accepts new ones.
const exitRecheckDelay = 100 * time.Millisecond
