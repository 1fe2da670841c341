package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// TestAttackDec02bUsageHostileNumbers: usage figures from a hostile or
// broken upstream are counts: a negative figure is not a count (not
// reported), a figure beyond int64 is the largest count, and Anthropic's
// input (input_tokens plus the two cache counts) saturates instead of
// wrapping negative, so that no cost, token total or key limit downstream
// goes below zero or is undercharged by an overflow.
func TestAttackDec02bUsageHostileNumbers(t *testing.T) {
	get := func(p *int64) int64 {
		if p == nil {
			return -1 // "not reported"
		}
		return *p
	}
	cases := []struct {
		name       string
		d          Dialect
		body       string
		in, out    int64
		cacheRead  int64
		cacheWrite int64
	}{
		{"anthropic sum overflows", AnthropicMessages,
			`{"usage":{"input_tokens":9000000000000000000,"cache_read_input_tokens":9000000000000000000,"cache_creation_input_tokens":9000000000000000000,"output_tokens":1}}`,
			math.MaxInt64, 1, 9000000000000000000, 9000000000000000000},
		{"anthropic 1e308", AnthropicMessages,
			`{"usage":{"input_tokens":1e308,"cache_read_input_tokens":5,"output_tokens":1e308}}`,
			math.MaxInt64, math.MaxInt64, 5, -1},
		{"anthropic negative", AnthropicMessages,
			`{"usage":{"input_tokens":-1000000,"cache_read_input_tokens":-7,"output_tokens":-3}}`,
			-1, -1, -1, -1},
		{"anthropic negative cache only", AnthropicMessages,
			`{"usage":{"input_tokens":10,"cache_creation_input_tokens":-1000,"output_tokens":2}}`,
			10, 2, -1, -1},
		{"chat negative", OpenAIChat,
			`{"usage":{"prompt_tokens":-5,"completion_tokens":-9223372036854775808,"prompt_tokens_details":{"cached_tokens":-1}}}`,
			-1, -1, -1, -1},
		{"chat huge", OpenAIChat,
			`{"usage":{"prompt_tokens":1e400,"completion_tokens":12.9}}`,
			math.MaxInt64, 12, -1, -1},
		{"responses negative", OpenAIResponses,
			`{"usage":{"input_tokens":-1,"output_tokens":4,"input_tokens_details":{"cached_tokens":-2}}}`,
			-1, 4, -1, -1},
		{"strings are not numbers", OpenAIChat,
			`{"usage":{"prompt_tokens":"12","completion_tokens":"NaN"}}`,
			-1, -1, -1, -1},
	}
	for _, c := range cases {
		u := ResponseUsage(c.d, []byte(c.body))
		if got := [4]int64{get(u.InputTokens), get(u.OutputTokens), get(u.CacheReadTokens), get(u.CacheWriteTokens)}; got != [4]int64{c.in, c.out, c.cacheRead, c.cacheWrite} {
			t.Errorf("%s: input, output, cache read, cache write = %v, want %v", c.name, got, [4]int64{c.in, c.out, c.cacheRead, c.cacheWrite})
		}
	}
}

// TestAttackDec02bUsageTotalSaturates: the total_tokens a translated
// answer writes (Chat usage, Responses usage) is the saturated sum of
// the input and output counts: an upstream's 1e308 input with 5 output
// tokens totals math.MaxInt64, never a sum wrapped negative.
func TestAttackDec02bUsageTotalSaturates(t *testing.T) {
	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1e308,"output_tokens":5}}`)
	for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
		out, _, err := TranslateResponseWith(AnthropicMessages, to, body, "", ResponseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", to, err)
		}
		if got := gjson.GetBytes(out, "usage.total_tokens").Raw; got != "9223372036854775807" {
			t.Errorf("%s: usage.total_tokens = %s, want 9223372036854775807\n%s", to, got, out)
		}
	}
}

// repeatReader yields head, then body repeated until limit bytes in all,
// then EOF; n counts the bytes read.
type repeatReader struct {
	head, body []byte
	limit, n   int
	tr         *StreamTranslator // when set, peak is the most it held
	peak       int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.tr != nil {
		r.peak = max(r.peak, len(r.tr.held))
	}
	if r.n >= r.limit {
		return 0, io.EOF
	}
	w := 0
	for w < len(p) && r.n < r.limit {
		var src []byte
		if r.n < len(r.head) {
			src = r.head[r.n:]
		} else {
			off := (r.n - len(r.head)) % len(r.body)
			src = r.body[off:]
		}
		c := copy(p[w:], src[:min(len(src), r.limit-r.n)])
		w += c
		r.n += c
	}
	return w, nil
}

// TestAttackDec02bEndlessPreamble: an upstream that, before any content,
// sends comments or pings without end: with HoldPreamble the translator
// holds at most MaxHeldPreambleEvents of them and then fails the stream before
// its commit point (nothing written, Run's error wraps ErrNotCommitted),
// instead of holding every byte until the attempt timeout (at loopback
// speed, gigabytes). A translated stream that drops them holds nothing
// and reads on (the attempt timeout ends it); a Responses passthrough
// relays an unknown event type, which commits it.
func TestAttackDec02bEndlessPreamble(t *testing.T) {
	const sent = 4 << 20
	heads := map[Dialect]string{
		OpenAIChat:        "",
		AnthropicMessages: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n",
		OpenAIResponses:   "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\n\n",
	}
	bodies := map[string]string{
		"comments": ": keep-alive\n\n",
		"pings":    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
	}
	for _, from := range allDialects {
		for bname, body := range bodies {
			for _, to := range allDialects {
				written := 0
				tr := NewStreamTranslator(from, to, "m", EventWriterFunc(func(p []byte) error { written += len(p); return nil }))
				tr.HoldPreamble()
				r := &repeatReader{head: []byte(heads[from]), body: []byte(body), limit: sent, tr: tr}
				err := tr.Run(r)
				if r.peak > (MaxHeldPreambleEvents+1)*len(body)+len(heads[from]) {
					t.Errorf("%s %s -> %s: held %d KiB of preamble, want at most %d events", from, bname, to, r.peak>>10, MaxHeldPreambleEvents)
				}
				if tr.Committed() {
					if from != OpenAIResponses || from != to || bname != "pings" {
						t.Errorf("%s %s -> %s: committed by a preamble", from, bname, to)
					}
					continue
				}
				if written != 0 {
					t.Errorf("%s %s -> %s: %d bytes written before content", from, bname, to, written)
				}
				if !errors.Is(err, ErrNotCommitted) || from == to && !errors.Is(err, ErrPreambleTooLarge) {
					t.Errorf("%s %s -> %s: Run = %v, want ErrNotCommitted (and ErrPreambleTooLarge for a passthrough, which holds them)", from, bname, to, err)
				}
			}
		}
	}
}

// TestAttackDec02bHostileStreamBytes: streams of every upstream dialect
// with CR-only line ends, NUL (raw and escaped) and invalid UTF-8 in text
// deltas, an "event:" line without data and comments, translated to every
// client dialect: read one byte at a time they give the same bytes as
// read whole, every event written is valid UTF-8 and its data valid JSON,
// and the text reaches the client (invalid bytes as U+FFFD).
func TestAttackDec02bHostileStreamBytes(t *testing.T) {
	// raw NUL (invalid JSON, relayed escaped) and invalid UTF-8 (as
	// U+FFFD); with an escape sequence in the same string gjson's
	// unescape would cut the text at the raw control byte (see the report)
	bad := "A\x00B\xff\xfeC"
	streams := map[Dialect]string{
		OpenAIChat: "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\r\r" +
			"event: \r\r: c\r\r" +
			"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + bad + "\"},\"finish_reason\":null}]}\r\r" +
			"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\r" +
			"data: [DONE]\r\r",
		AnthropicMessages: "event: message_start\rdata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\r\r" +
			"event: content_block_delta\r\r: c\r\r" +
			"event: content_block_start\rdata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\r" +
			"event: content_block_delta\rdata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + bad + "\"}}\r\r" +
			"event: content_block_stop\rdata: {\"type\":\"content_block_stop\",\"index\":0}\r\r" +
			"event: message_delta\rdata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\r\r" +
			"event: message_stop\rdata: {\"type\":\"message_stop\"}\r\r",
		OpenAIResponses: "event: response.created\rdata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\r\r" +
			"event: response.output_text.delta\r\r: c\r\r" +
			"event: response.output_item.added\rdata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"m1\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\r\r" +
			"event: response.output_text.delta\rdata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"" + bad + "\"}\r\r" +
			"event: response.output_item.done\rdata: {\"type\":\"response.output_item.done\",\"sequence_number\":3,\"output_index\":0,\"item\":{\"id\":\"m1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"" + bad + "\",\"annotations\":[]}]}}\r\r" +
			"event: response.completed\rdata: {\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"m\",\"output\":[{\"id\":\"m1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"" + bad + "\",\"annotations\":[]}]}],\"usage\":{\"input_tokens\":1,\"output_tokens\":3,\"total_tokens\":4}}}\r\r",
	}
	run := func(from, to Dialect, r io.Reader) ([]byte, [][]byte, error) {
		var all []byte
		var evs [][]byte
		tr := NewStreamTranslator(from, to, "m", EventWriterFunc(func(p []byte) error {
			all = append(all, p...)
			evs = append(evs, bytes.Clone(p))
			return nil
		}))
		tr.HoldPreamble()
		err := tr.Run(r)
		return all, evs, err
	}
	for from, s := range streams {
		for _, to := range allDialects {
			whole, evs, err := run(from, to, strings.NewReader(s))
			if err != nil {
				t.Errorf("%s -> %s: %v", from, to, err)
				continue
			}
			bytewise, _, err := run(from, to, iotest.OneByteReader(strings.NewReader(s)))
			if err != nil || !bytes.Equal(whole, bytewise) {
				t.Errorf("%s -> %s: one byte at a time: %v\n%q\nwhole:\n%q", from, to, err, bytewise, whole)
			}
			if from == to {
				continue // passthrough: byte for byte, the upstream's bytes are the client's
			}
			text := false
			for _, ev := range evs {
				if !utf8.Valid(ev) {
					t.Errorf("%s -> %s: event not valid UTF-8: %q", from, to, ev)
				}
				for _, line := range strings.Split(string(ev), "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" && !json.Valid([]byte(d)) {
						t.Errorf("%s -> %s: data not valid JSON: %q", from, to, d)
					}
				}
				if bytes.Contains(ev, []byte(`A\u0000B\ufffd\ufffdC`)) || bytes.Contains(ev, []byte("A\\u0000B\uFFFD\uFFFDC")) {
					text = true
				}
			}
			if !text {
				t.Errorf("%s -> %s: the text delta did not reach the client as A NUL B U+FFFD U+FFFD C:\n%q", from, to, whole)
			}
		}
	}
}

// TestAttackDec02bLargeLegitPreamble: a Responses stream whose
// response.created and response.in_progress echo 3 MiB of instructions
// each (a request within the default 8 MiB body limit) is held and
// relayed whole at its first content, not failed as an endless preamble.
func TestAttackDec02bLargeLegitPreamble(t *testing.T) {
	instr := strings.Repeat("i", 3<<20)
	resp := `{"id":"resp_1","object":"response","status":"in_progress","model":"m","instructions":"` + instr + `","output":[]}`
	s := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":" + resp + "}\n\n" +
		"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":" + resp + "}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n"
	written := 0
	tr := NewStreamTranslator(OpenAIResponses, OpenAIResponses, "m", EventWriterFunc(func(p []byte) error { written += len(p); return nil }))
	tr.HoldPreamble()
	err := tr.Run(strings.NewReader(s))
	if !tr.Committed() || written < 6<<20 || errors.Is(err, ErrPreambleTooLarge) {
		t.Fatalf("committed %v, %d bytes written, err %v; want the 6 MiB preamble relayed", tr.Committed(), written, err)
	}
}
