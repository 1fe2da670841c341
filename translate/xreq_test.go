package translate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// This file checks the translated request path's rework (a buffer sized
// to the translation, appendEscaped's eight-byte runs, no copy of a user
// turn's parts in appendChatMessages, the system prompt's parts cut from
// the pass's chunks, the canonical form allocated with its Request)
// against the code it replaced: the former appendEscaped and
// appendChatMessages are kept below, verbatim but for their names.

// translateCorpus is every request body of testBodies (this package's
// test literals, the recorded fixtures of testdata and ../shared/fixtures,
// their truncations) with BenchmarkTranslateRequest's bodies, the 80 KB
// requests and the 50 KB multi-turn Responses one.
func translateCorpus(t *testing.T) [][]byte {
	bodies := testBodies(t)
	for _, c := range translateCases(t) {
		bodies = append(bodies, c.body)
	}
	return append(bodies, responsesMultiTurn(50<<10))
}

// TestTranslatedEncodeSameAsFresh: for every body of the corpus and every
// pair of different dialects, what ParseRequestFor the upstream's dialect
// encodes (the canonical form built by the validation pass, allocated
// with the Request, its system parts cut from the pass's chunks) is byte
// for byte what a fresh translation (TranslateRequest) gives, and what a
// parse for the client's own dialect translates on demand.
func TestTranslatedEncodeSameAsFresh(t *testing.T) {
	n := 0
	for _, body := range translateCorpus(t) {
		for _, from := range parsedDialects {
			for _, to := range parsedDialects {
				if from == to {
					continue
				}
				r, err := ParseRequestFor(from, body, to)
				if err != nil {
					continue
				}
				got, gotErr := r.Encode(to, "up-model")
				want, wantErr := TranslateRequest(from, to, body, "up-model")
				if !bytes.Equal(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
					t.Fatalf("%s→%s %.200s:\ngot  %.300s %v\nwant %.300s %v", from, to, body, got, gotErr, want, wantErr)
				}
				if own, err := ParseRequestFor(from, body, from); err == nil {
					again, againErr := own.Encode(to, "up-model")
					if !bytes.Equal(again, want) || !reflect.DeepEqual(againErr, wantErr) {
						t.Fatalf("%s→%s via a passthrough parse differs: %.200s", from, to, body)
					}
				}
				if gotErr == nil {
					n++
				}
			}
		}
	}
	if n < 500 {
		t.Fatalf("only %d translations compared", n)
	}
}

// TestOutputSizeFits: every translation of the corpus fits the buffer
// outputSize gives it, so none is regrown (the measurement outputSize's
// comment quotes).
func TestOutputSizeFits(t *testing.T) {
	for _, body := range translateCorpus(t) {
		for _, from := range parsedDialects {
			r, err := ParseRequest(from, body)
			if err != nil {
				continue
			}
			for _, to := range parsedDialects {
				if to == from {
					continue
				}
				out, err := r.Encode(to, "up-model")
				if err != nil {
					continue
				}
				if limit := len(body) + len(body)/16 + 512; len(out) > limit {
					t.Errorf("%s→%s: %d bytes from %d, past outputSize's %d: %.200s", from, to, len(out), len(body), limit, body)
				}
			}
		}
	}
}

// TestAppendEscapedSameAsOld: appendEscaped writes what the former one
// (byte by byte) wrote, for every string and key of every body of the
// corpus, every byte value at every offset of an eight-byte word, and
// the runes it escapes or replaces placed across word boundaries.
func TestAppendEscapedSameAsOld(t *testing.T) {
	check := func(s string) {
		t.Helper()
		got, want := appendEscaped([]byte("x"), s), appendEscapedOld([]byte("x"), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, want)
		}
	}
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			check(v.Str)
		case v.IsObject() || v.IsArray():
			v.ForEach(func(k, x gjson.Result) bool {
				check(k.Str)
				walk(x)
				return true
			})
		}
	}
	n := 0
	for _, body := range translateCorpus(t) {
		if gjson.ValidBytes(body) {
			walk(gjson.ParseBytes(body))
			n++
		}
		check(string(body)) // raw bytes too: quotes, backslashes, invalid UTF-8
	}
	if n < 200 {
		t.Fatalf("only %d valid bodies", n)
	}
	for c := 0; c < 256; c++ {
		for off := 0; off < 17; off++ {
			check(strings.Repeat("a", off) + string([]byte{byte(c)}) + strings.Repeat("b", 17-off))
		}
	}
	for _, r := range []string{"\u2028", "\u2029", "é", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80", "\t", "\"", "\\", "\x7f"} {
		for off := 0; off < 17; off++ {
			check(strings.Repeat("a", off) + r + strings.Repeat("z", 9))
			check(strings.Repeat("a", off) + r)
		}
	}
	for i := 0; i < 2000; i++ {
		b := make([]byte, i%40)
		for j := range b {
			b[j] = byte((i*131 + j*197 + j*j) % 256)
		}
		check(string(b))
	}
	if !utf8.ValidString(string(appendEscaped(nil, "a\xffb"))) {
		t.Fatal("invalid UTF-8 kept")
	}
}

// TestChatMessagesSameAsOld: appendChatMessages writes what the former
// one (which copied a user turn's parts) wrote, for every canonical
// message of every body of the corpus decoded in every dialect.
func TestChatMessagesSameAsOld(t *testing.T) {
	n := 0
	for _, body := range translateCorpus(t) {
		for _, d := range parsedDialects {
			up := OpenAIChat
			if d == OpenAIChat {
				up = AnthropicMessages
			}
			r, err := ParseRequestFor(d, body, up) // builds the canonical form

			if err != nil || r.canon == nil {
				continue
			}
			for i := range r.canon.messages {
				m := &r.canon.messages[i]
				got, want := appendChatMessages([]byte("["), m), appendChatMessagesOld([]byte("["), m)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s message %d: %s\nwant %s", d, i, got, want)
				}
				n++
			}
		}
	}
	if n < 500 {
		t.Fatalf("only %d messages compared", n)
	}
}

// appendEscapedOld is appendEscaped before its eight-byte runs.
func appendEscapedOld(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// appendChatMessagesOld is appendChatMessages before it stopped copying a
// user turn's parts.
func appendChatMessagesOld(b []byte, m *canonMessage) []byte {
	switch m.role {
	case "system":
		b = appendComma(b)
		b = append(b, `{"role":"system","content":`...)
		b = appendTextOf(b, "", m.parts, "\n")
		return append(b, '}')
	case "assistant":
		return appendChatAssistant(b, m.parts, false)
	}
	var extra []canonPart // user-visible parts: tool-result images, then the turn's own parts
	for i := range m.parts {
		p := &m.parts[i]
		if p.kind != partToolResult {
			continue
		}
		b = appendComma(b)
		b = append(b, `{"role":"tool","tool_call_id":`...)
		b = appendString(b, openAIToolID(p.id, chatToolIDMax))
		b = append(b, `,"content":`...)
		hasMedia, hasText := false, false
		for j := range p.content {
			if k := p.content[j].kind; k == partImage || k == partDocument {
				if !hasMedia {
					extra = append(extra, canonPart{kind: partText, text: "Attachments returned by tool call " + p.id + ":"})
					hasMedia = true
				}
				extra = append(extra, p.content[j])
			}
		}
		prefix := ""
		if p.isError {
			prefix = "Error: "
		}
		// the joined text is "" only with no text part or one empty one
		nText := 0
		for j := range p.content {
			if p.content[j].kind == partText {
				nText++
				hasText = hasText || p.content[j].text != "" || nText > 1
			}
		}
		if hasMedia && !hasText && !p.isError {
			b = appendString(b, "(see the attachments in the next message)")
		} else {
			b = appendTextOf(b, prefix, p.content, "\n")
		}
		b = append(b, '}')
	}
	for i := range m.parts {
		if m.parts[i].kind != partToolResult {
			extra = append(extra, m.parts[i])
		}
	}
	if len(extra) == 0 {
		return b
	}
	b = appendComma(b)
	b = append(b, `{"role":"user","content":`...)
	if len(extra) == 1 && extra[0].kind == partText {
		b = appendString(b, extra[0].text)
		return append(b, '}')
	}
	b = append(b, '[')
	for i := range extra {
		b = appendChatPart(b, &extra[i])
	}
	return append(b, "]}"...)
}

// BenchmarkAppendEscaped compares appendEscaped with the former one on
// plain prose (the load harness's text) and on source code dense with
// escapes (a coding agent's tool results).
func BenchmarkAppendEscaped(b *testing.B) {
	code := strings.Repeat("func main() {\n\tfmt.Println(\"hello\")\n}\n", 100)
	prose := strings.Repeat("the quick brown fox jumps over the lazy dog while a gateway relays tokens ", 30)
	buf := make([]byte, 0, 1<<16)
	for _, c := range []struct{ name, s string }{{"code", code}, {"prose", prose}} {
		b.Run(c.name+"/old", func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for i := 0; i < b.N; i++ {
				buf = appendEscapedOld(buf[:0], c.s)
			}
		})
		b.Run(c.name+"/new", func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for i := 0; i < b.N; i++ {
				buf = appendEscaped(buf[:0], c.s)
			}
		})
	}
}
