package translate

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// Bare frames: some relays (new-api#6797, new-api#6798) stream the
// upstream's events as JSON objects without the SSE "data:" field,
//
//	{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[…]}
//
// one object per line, blocks ended by blank lines or not. Per the SSE
// spec (WHATWG HTML, "Event stream interpretation") such a line is a
// field whose name SSE does not know, ignored: an SSE reader sees blocks
// without data, and the stream ended as a truncation however whole the
// answer was. A translated stream reads them: a block without data whose
// lines other than SSE fields and comments are each a whole JSON object
// is read as one data event per such line, in order, as if each had come
// with "data:" (a bare [DONE] line among them too). A block with any other line (a JSON value cut over
// several lines, text) is read as before, without data; a JSON error
// object without data is the upstream's error (stream_bare_error.go),
// read before this. A passthrough relays such blocks byte for byte, as
// the upstream sent them (its client reads them as its SDK does, and
// the gateway still judges the stream by the events its client can
// read).

// bareFrames reads t.ev, a block of a translated stream without data,
// as bare frames (see above) and reports whether it was one: each frame
// has then been handed to the upstream decoder. A block without a line
// that begins with "{" costs a scan for one.
func (t *StreamTranslator) bareFrames() bool {
	raw := t.ev.Raw
	if bytes.IndexByte(raw, '{') < 0 {
		return false
	}
	cr := bytes.IndexByte(raw, '\r') >= 0
	n := 0
	for i := 0; i < len(raw); {
		end, next := rawLine(raw, i, cr)
		switch line := raw[i:end]; {
		case len(line) == 0 || line[0] == ':' || sseFieldName(line) != "":
		case isJSONObjectLine(line):
			n++
		case bytes.Equal(bytes.TrimSpace(line), doneMarker):
			// a relay's bare end marker after its bare frames, read as
			// data: [DONE] when the block has a frame
		default:
			return false
		}
		i = next
	}
	if n == 0 {
		return false
	}
	ev := t.ev
	for i := 0; i < len(raw); {
		end, next := rawLine(raw, i, cr)
		if line := raw[i:end]; len(line) > 0 && line[0] != ':' && sseFieldName(line) == "" {
			t.ev = ev
			t.ev.Data, t.ev.dataOff = bytes.TrimSpace(line), -1
			t.decode()
			if t.werr != nil || t.stopped || t.cs.closed {
				break
			}
		}
		i = next
	}
	return true
}

// isJSONObjectLine reports whether line, but for surrounding white
// space, is one whole JSON object.
func isJSONObjectLine(line []byte) bool {
	js := bytes.TrimSpace(line)
	return len(js) >= 2 && js[0] == '{' && js[len(js)-1] == '}' && gjson.ValidBytes(js)
}
