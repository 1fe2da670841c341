package mockupstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Request headers understood by the replay feature.
const (
	// HeaderReplay names a fixture file whose bytes answer the request.
	HeaderReplay = "X-Mock-Replay"
	// HeaderReplayStatus sets the HTTP status of a replayed answer.
	HeaderReplayStatus = "X-Mock-Replay-Status"
)

// replaySource says where replayed bytes come from.
type replaySource struct {
	path        string
	body        []byte
	contentType string
	status      int
}

func (r *replaySource) set() bool { return r.path != "" || r.body != nil }

// replayRequest reads the source named by a POST /v1/replay request: a JSON
// body {"path":"...","status":N} or the query parameter path. It also
// returns the body's "model", if any. A body that is not JSON is ignored.
func (c *call) replayRequest(body []byte) (replaySource, string, error) {
	var v struct {
		Path   string `json:"path"`
		Status int    `json:"status"`
		Model  string `json:"model"`
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
		_ = json.Unmarshal(t, &v)
	}
	src := replaySource{path: v.Path, status: v.Status}
	if src.path == "" {
		src.path = c.r.URL.Query().Get("path")
	}
	return src, v.Model, nil
}

// replayOverride returns the replay source programmed by the request header
// or the key's behavior, if any.
func (c *call) replayOverride() (replaySource, bool) {
	var src replaySource
	switch {
	case c.r.Header.Get(HeaderReplay) != "":
		src.path = c.r.Header.Get(HeaderReplay)
	case c.b.ReplayBody != nil:
		src.body = c.b.ReplayBody
		src.contentType = c.b.ReplayContentType
	case c.b.Replay != "":
		src.path = c.b.Replay
	default:
		return src, false
	}
	return src, true
}

var errOutsideReplayDir = errors.New("replay path is outside the configured replay directory")

// resolveReplayPath applies Config.ReplayDir to p.
func (s *Server) resolveReplayPath(p string) (string, error) {
	if s.replayDir == "" {
		return p, nil
	}
	dir, err := filepath.Abs(s.replayDir)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	if err != nil || !filepath.IsLocal(rel) {
		return "", errOutsideReplayDir
	}
	return filepath.Join(dir, rel), nil
}

// serveReplay writes the replayed bytes.
func (c *call) serveReplay(src replaySource) {
	status := src.status
	if c.b.ReplayStatus > 0 {
		status = c.b.ReplayStatus
	}
	if h := c.r.Header.Get(HeaderReplayStatus); h != "" {
		if n, err := strconv.Atoi(h); err == nil && n >= 100 && n <= 999 {
			status = n
		}
	}
	if status == 0 {
		status = http.StatusOK
	}

	body, ctype := src.body, src.contentType
	if src.path != "" {
		p, err := c.s.resolveReplayPath(src.path)
		if err == nil {
			body, err = os.ReadFile(p)
		}
		if err != nil {
			c.ks.failed.Add(1)
			c.writeError(http.StatusInternalServerError, "replay: "+err.Error(), "")
			return
		}
		switch {
		case strings.HasSuffix(p, ".chunks.txt"):
			body = chunksToSSE(body)
			ctype = "text/event-stream; charset=utf-8"
		case strings.HasSuffix(p, ".sse"):
			ctype = "text/event-stream; charset=utf-8"
		case strings.HasSuffix(p, ".json"):
			ctype = "application/json"
		}
	}
	if ctype == "" {
		ctype = sniffContentType(body)
	}

	if !strings.HasPrefix(ctype, "text/event-stream") {
		h := c.w.Header()
		h.Set("Content-Type", ctype)
		c.setRequestID()
		c.w.WriteHeader(status)
		_, _ = c.w.Write(body)
		c.countStatus(status)
		return
	}

	h := c.w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache")
	c.setRequestID()
	c.w.WriteHeader(status)
	e := newSSEWriter(c)
	ok := true
	for rest := body; len(rest) > 0 && ok; {
		var ev []byte
		ev, rest = nextEvent(rest)
		ok = e.pace() && e.send(ev)
	}
	if !ok {
		e.done(false)
		return
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	c.countStatus(status)
}

// countStatus counts a completed answer by its status.
func (c *call) countStatus(status int) {
	switch {
	case status < 400:
		c.ks.ok.Add(1)
	default:
		c.countError(status)
	}
}

// sniffContentType guesses the type of replayed bytes.
func sniffContentType(b []byte) string {
	t := bytes.TrimLeft(b, " \t\r\n")
	if bytes.HasPrefix(t, []byte("event:")) || bytes.HasPrefix(t, []byte("data:")) || bytes.HasPrefix(t, []byte(":")) {
		return "text/event-stream; charset=utf-8"
	}
	return "application/json"
}

// nextEvent cuts the first SSE event, including the blank line that ends it
// ("\n\n", "\n\r\n"), off b. Trailing bytes without a blank line form the
// last event.
func nextEvent(b []byte) (ev, rest []byte) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return b[:i+2], b[i+2:]
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return b[:i+3], b[i+3:]
		}
	}
	return b, nil
}

// chunksToSSE rebuilds an SSE body from a recorder file holding one JSON
// event per line: "event: <type>\n" when the JSON has a "type" field, then
// "data: <line>\n\n"; "data: [DONE]\n\n" ends Chat Completions chunk files.
func chunksToSSE(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/4)
	chat := false
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v struct {
			Type   string `json:"type"`
			Object string `json:"object"`
		}
		_ = json.Unmarshal(line, &v)
		if v.Object == "chat.completion.chunk" {
			chat = true
		}
		if v.Type != "" {
			out = append(out, "event: "...)
			out = append(out, v.Type...)
			out = append(out, '\n')
		}
		out = append(out, "data: "...)
		out = append(out, line...)
		out = append(out, "\n\n"...)
	}
	if chat {
		out = append(out, doneEvent...)
	}
	return out
}
