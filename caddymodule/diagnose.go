package caddymodule

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/tidwall/gjson"

	"github.com/llmgateway/llm_gateway/keypool"
)

// probeTimeout bounds each diagnose probe.
var probeTimeout = 5 * time.Second

// probeParallelism is how many keys diagnose probes at once.
const probeParallelism = 4

// probeResult is one row of POST /llm_gateway/diagnose.
type probeResult struct {
	// Pool and Key name the key (by id, never by secret); Host is its
	// upstream's host:port.
	Pool string `json:"pool"`
	Key  string `json:"key"`
	Host string `json:"host,omitempty"`
	// Probe is what was asked: "GET /models", "GET /v1/models", or the
	// one-token completion used when the upstream has no models list.
	Probe string `json:"probe,omitempty"`
	// Exit is the egress exit the probe left through (masked URL), ""
	// when direct.
	Exit string `json:"exit,omitempty"`
	// OK is true for a 2xx answer; Status is the answer's HTTP status (0:
	// none) and LatencyMS the probe's duration.
	OK        bool    `json:"ok"`
	Status    int     `json:"status,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
	// Error classifies a failure: "http_<status>", "connection_refused",
	// "dns", "tls", "timeout", "network" or "not_provisioned"; Hint says
	// what to check, for a person.
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
	// State is the key's state before the probe; Action is what "clear
	// and verify" did: "cleared", "recooled" or "kept".
	State  keypool.KeyState `json:"state,omitempty"`
	Action string           `json:"action,omitempty"`
	// Balance is the key's balance or credit as its vendor reports it,
	// for keys on a host with a balance endpoint (OpenRouter, DeepSeek;
	// see balanceAPIs); absent otherwise.
	Balance *balanceView `json:"balance,omitempty"`

	outcome keypool.Outcome
}

// handleDiagnose serves POST /llm_gateway/diagnose[?pool=&key=&clear=1].
// It probes every selected key and answers one row per key. With clear=1
// ("clear and verify"), keys that are cooling or whose breaker is open are
// cleared when their probe passes and cooled again, for what the probe
// found, when it fails; other keys are only probed.
func (adminAPI) handleDiagnose(w http.ResponseWriter, r *http.Request) error {
	if err := requireMethod(r, http.MethodPost); err != nil {
		return err
	}
	q := r.URL.Query()
	pools, err := findPools(q.Get("pool"))
	if err != nil {
		return err
	}
	onlyKey := q.Get("key")
	verify := q.Get("clear") == "1" || q.Get("clear") == "true"
	for _, kp := range pools {
		if prov := publishedPool(kp.Name()); prov != nil {
			prov.disc.wakeUp() // the models lists are fetched again too
		}
	}

	type job struct {
		kp  *keypool.Pool
		p   *pool
		st  keypool.KeyStatus
		res *probeResult
	}
	var jobs []job
	for _, kp := range pools {
		prov := publishedPool(kp.Name())
		for _, st := range kp.Snapshot() {
			if onlyKey != "" && st.ID != onlyKey {
				continue
			}
			jobs = append(jobs, job{kp: kp, p: prov, st: st, res: &probeResult{Pool: kp.Name(), Key: st.ID, State: st.State}})
		}
	}
	if onlyKey != "" && len(jobs) == 0 {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("unknown key %q", onlyKey)}
	}

	sem := make(chan struct{}, probeParallelism)
	var wg sync.WaitGroup
	for _, j := range jobs {
		uk := j.p.keyByID(j.st.ID)
		if uk == nil {
			j.res.Error, j.res.Hint = "not_provisioned", "the key is not in the running configuration"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// a key cooled for its credentials is verified with a real
			// (one-token) request: many relays list models without
			// checking the key
			generate := verify && credentialReason(j.st.Reason)
			probeKey(r.Context(), j.p, uk, j.res, generate)
			j.res.Balance = probeBalance(r.Context(), uk)
		}()
	}
	wg.Wait()

	out := make([]probeResult, 0, len(jobs))
	for _, j := range jobs {
		if verify && (j.st.State == keypool.StateCooling || j.st.State == keypool.StateBreakerOpen) && j.res.Error != "not_provisioned" {
			j.res.Action = verifyKey(j.kp, j.st, j.res)
		}
		out = append(out, *j.res)
	}
	return writeAdminJSON(w, out)
}

// verifyKey applies a probe's result to a cooled key: a pass clears it, a
// failure cools it again through the pool's normal outcome handling (the
// cooldown is cleared and the failure released on a lease of that key
// alone). A failing key with requests in flight is left as it is: those
// requests will settle its state.
func verifyKey(kp *keypool.Pool, st keypool.KeyStatus, res *probeResult) string {
	id := st.ID
	if res.OK {
		kp.ClearCooldown(id)
		return "cleared"
	}
	if st.InFlight > 0 || res.Error == "egress_unreachable" {
		return "kept" // an unreachable exit says nothing of the key
	}
	kp.ClearCooldown(id)
	lease, err := kp.Acquire(context.Background(), keypool.AcquireOptions{
		Skip: func(k *keypool.Key) bool { return k.ID() != id },
	})
	if err != nil {
		// a request took the key in between; it settles the key's state
		res.Hint += " (the key was cleared: a request took it before the failure could be applied)"
		return "cleared"
	}
	o := res.outcome
	if o.Kind == keypool.Success || o.Kind == keypool.ClientError || o.Kind == keypool.Canceled || o.Kind == keypool.ModelNotFound {
		// a failure keypool would not cool for (e.g. a 404 from a
		// missing models list): cool it as a server error
		o = keypool.Outcome{Kind: keypool.ServerError, Status: res.Status, Message: "diagnose probe failed"}
	}
	lease.Release(o)
	return "recooled"
}

// probeKey probes one key: its models list (GET <base>/models with Bearer
// for OpenAI-compatible keys, GET <root>/v1/models with x-api-key for
// Anthropic ones), and when that answers 404 or 405, a one-token
// completion.
func probeKey(ctx context.Context, p *pool, uk *upstreamKey, res *probeResult, generate bool) {
	res.Host, _ = uk.hostAndDialect()
	anthropic := uk.chatURL == "" || (uk.messageURL != "" && uk.prefer == PreferAnthropic)
	var listURL, genURL string
	responses := uk.chatURL == "" && uk.messageURL == "" // a responses key
	if responses {
		anthropic = false
		genURL = uk.responsesURL
		listURL = strings.TrimSuffix(genURL, "/responses") + "/models"
		res.Probe = "GET /models"
	} else if anthropic {
		genURL = uk.messageURL
		listURL = strings.TrimSuffix(genURL, "/v1/messages") + "/v1/models"
		res.Probe = "GET /v1/models"
	} else {
		genURL = uk.chatURL
		listURL = strings.TrimSuffix(genURL, "/chat/completions") + "/models"
		res.Probe = "GET /models"
	}
	start := time.Now()
	status, hdr, errBody, err := http.StatusNotFound, http.Header(nil), []byte(nil), error(nil)
	if !generate {
		status, hdr, errBody, err = probeOnce(ctx, uk, anthropic, http.MethodGet, listURL, nil)
	}
	if err == nil && (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) {
		body := probeBody(p, anthropic)
		if responses {
			// per OpenAI Responses: max_output_tokens is at least 16
			body = []byte(`{"model":` + strconv.Quote(gjson.GetBytes(body, "model").String()) + `,"max_output_tokens":16,"input":"ping"}`)
			res.Probe = "POST /responses (max_output_tokens 16)"
		} else if anthropic {
			res.Probe = "POST /v1/messages (max_tokens 1)"
		} else {
			res.Probe = "POST /chat/completions (max_tokens 1)"
		}
		start = time.Now()
		status, hdr, errBody, err = probeOnce(ctx, uk, anthropic, http.MethodPost, genURL, body)
	}
	res.LatencyMS = millis(time.Since(start))
	res.Exit = uk.lastExit()
	if egressProbeFailed(err, res) {
		return
	}
	if err != nil {
		res.Error, res.Hint = networkHint(err, res.Host)
		res.outcome = keypool.ClassifyError(err, nil)
		switch {
		case res.Error == "timeout":
			res.outcome = keypool.Outcome{Kind: keypool.Timeout, Message: "diagnose probe timed out"}
		case res.outcome.Kind == keypool.Success || res.outcome.Kind == keypool.Canceled:
			res.outcome = keypool.Outcome{Kind: keypool.NetworkError, Message: "diagnose probe: " + res.Error}
		}
		return
	}
	res.Status = status
	res.OK = status >= 200 && status < 300
	if !res.OK {
		res.Error = "http_" + strconv.Itoa(status)
		res.Hint = statusHint(status, hdr)
		res.outcome = keypool.ClassifyResponseFor("", status, hdr, errBody, time.Now())
	}
}

// probeOnce sends one probe request and returns the status, the headers
// and, for a non-2xx answer, the start of the error body (at most
// keypool.MaxClassifyBody bytes, the key redacted) for classification;
// the rest is drained.
func probeOnce(ctx context.Context, uk *upstreamKey, anthropic bool, method, target string, body []byte) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := newUpstreamRequest(ctx, method, target, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	uk.authorize(req.Header, anthropic)
	resp, err := uk.do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, nil, nil, context.DeadlineExceeded
		}
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var errBody []byte
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		errBody, _ = io.ReadAll(io.LimitReader(resp.Body, keypool.MaxClassifyBody))
		errBody = uk.forms.redact(errBody)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, errBody, nil
}

// probeBody is the smallest completion request the pool can make.
func probeBody(p *pool, anthropic bool) []byte {
	model := p.defaultModel
	for _, m := range p.modelMap {
		if model == "" {
			model = m.Model
		}
	}
	for _, m := range p.rawModelNames {
		if model == "" {
			model = m
		}
	}
	if model == "" {
		model = "gpt-4o-mini"
		if anthropic {
			model = "claude-3-5-haiku-latest"
		}
	}
	b, _ := json.Marshal(map[string]any{
		"model":      model,
		"max_tokens": 1,
		"messages":   []map[string]string{{"role": "user", "content": "ping"}},
	})
	return b
}

// networkHint names a transport failure and says what to check. The
// error text itself is not passed on: it is not needed, and keeps the
// answer free of anything an upstream put into it.
func networkHint(err error, host string) (class, hint string) {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return "timeout", fmt.Sprintf("no answer from %s within %v: the upstream is overloaded or a firewall drops the packets", host, probeTimeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused", fmt.Sprintf("connection refused by %s: nothing listens there; check the port in base_url and that the upstream is running", host)
	case errors.As(err, &dnsErr):
		return "dns", fmt.Sprintf("DNS lookup of %s failed: check the host name in base_url and the resolver", hostOnly(host))
	case errors.As(err, &recErr) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "tls", fmt.Sprintf("%s did not answer TLS: use http:// instead of https:// in base_url, or the right port", host)
	case errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr):
		return "tls", fmt.Sprintf("the TLS certificate of %s was not accepted: check the host name, or install the issuing CA", host)
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:"):
		return "tls", fmt.Sprintf("TLS handshake with %s failed: check https:// versus http:// and the certificate", host)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "network", fmt.Sprintf("%s closed the connection: a proxy or firewall in between, or the wrong protocol", host)
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "network", fmt.Sprintf("%s is unreachable: check routing and firewalls", host)
	}
	return "network", fmt.Sprintf("could not reach %s", host)
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// statusHint explains an upstream HTTP status for a probe.
func statusHint(status int, h http.Header) string {
	switch {
	case status == http.StatusUnauthorized:
		return "401: the upstream rejected the key; check the secret and that it belongs to this base_url"
	case status == http.StatusPaymentRequired:
		return "402: the account has no credit left"
	case status == http.StatusForbidden:
		return "403: the key is valid but not allowed here (permissions, organisation, region or tier)"
	case status == http.StatusNotFound:
		return "404: nothing at this URL; check base_url (OpenAI-compatible APIs usually end in /v1)"
	case status == http.StatusTooManyRequests:
		if ra := h.Get("Retry-After"); ra != "" {
			return "429: rate limited or out of quota; the upstream asks to retry after " + ra + "s"
		}
		return "429: rate limited or out of quota"
	case status >= 500:
		return strconv.Itoa(status) + ": the upstream has trouble of its own; try again later"
	case status >= 300 && status < 400:
		return strconv.Itoa(status) + ": the upstream redirects; base_url is probably not the API root"
	}
	return strconv.Itoa(status) + ": unexpected answer"
}

// credentialReason reports whether a cooldown reason is about the key's
// credentials or account (401, 402, 403, spent quota).
func credentialReason(reason keypool.Reason) bool {
	switch reason {
	case keypool.InvalidKey.Reason(), keypool.NoCredit.Reason(), keypool.Forbidden.Reason(), keypool.QuotaExhausted.Reason():
		return true
	}
	return false
}

// authorize sets the key's credentials on an upstream request's headers:
// x-api-key and anthropic-version for an Anthropic endpoint (per
// Anthropic's API versioning docs), else Authorization as configured.
func (uk *upstreamKey) authorize(h http.Header, anthropic bool) {
	if anthropic {
		h.Set("X-Api-Key", uk.secret)
		h.Set("Anthropic-Version", anthropicVersion)
		return
	}
	h.Set("Authorization", uk.authHeader)
}
