package translate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// directChatStream is what an OpenAI Chat stream recorded with
// stream_options.include_usage would have been without it, built without
// the translator: the usage-only chunk (choices: [] and a usage object)
// dropped, and the top-level "usage":null member removed from every other
// chunk by text replacement of its known forms (compact, after another
// member; the one-member-per-data-line form of multi-line data). Each
// rebuilt chunk is checked against sjson's deletion of "usage" from the
// original data. It also returns the usage chunk's data ("" when none).
func directChatStream(t *testing.T, body []byte) (direct []byte, usageChunk string) {
	t.Helper()
	for _, ev := range readAllEvents(t, bytes.NewReader(body)) {
		u := gjson.GetBytes(ev.Data, "usage")
		if u.IsObject() && gjson.GetBytes(ev.Data, "choices").Raw == "[]" {
			usageChunk = string(ev.Data)
			continue
		}
		raw := ev.Raw
		if u.Type == gjson.Null && u.Exists() {
			for _, form := range []string{`,"usage":null`, ",\ndata: \"usage\":null", ",\r\ndata: \"usage\":null", ",\ndata:\"usage\":null"} {
				raw = bytes.ReplaceAll(raw, []byte(form), nil)
			}
			got := readAllEvents(t, bytes.NewReader(raw))
			want, err := sjson.DeleteBytes(bytes.Clone(ev.Data), "usage")
			if err != nil || len(got) != 1 || gjson.GetBytes(got[0].Data, "@ugly").Raw != gjson.GetBytes(want, "@ugly").Raw {
				t.Fatalf("rebuilding %q: %q is not sjson's %q (%v)", ev.Raw, raw, want, err)
			}
		}
		direct = append(direct, raw...)
	}
	return direct, usageChunk
}

// TestHideUsageChunkByteIdentical: with HideUsageChunk (the gateway added
// include_usage, the client did not ask for usage), every recorded OpenAI
// Chat stream that carries "usage":null members reaches the client as the
// upstream would have sent it without include_usage: no "usage":null
// member, no usage chunk, every other byte the same; the usage is still
// counted. With a client model, the model is the only other change.
func TestHideUsageChunkByteIdentical(t *testing.T) {
	n := 0
	for _, fx := range streamFixtures(t, OpenAIChat) {
		if !bytes.Contains(fx.body, []byte(`"usage":null`)) {
			continue
		}
		n++
		direct, usageChunk := directChatStream(t, fx.body)
		if bytes.Contains(direct, []byte(`"usage":null`)) {
			t.Fatalf("%s: the direct form still has a usage member", fx.name)
		}
		for _, hold := range []bool{false, true} {
			var out []byte
			tr := NewStreamTranslator(OpenAIChat, OpenAIChat, "", EventWriterFunc(func(p []byte) error {
				out = append(out, p...)
				return nil
			}))
			tr.HideUsageChunk()
			if hold {
				tr.HoldPreamble()
			}
			if err := tr.Run(newEventReader(fx.body)); err != nil {
				t.Fatalf("%s: %v", fx.name, err)
			}
			if !bytes.Equal(out, direct) {
				t.Fatalf("%s (hold %v): passthrough with HideUsageChunk is not the direct stream:\n%s\nwant\n%s", fx.name, hold, out, direct)
			}
			if usageChunk != "" {
				u := tr.Usage()
				in, outTok := gjson.Get(usageChunk, "usage.prompt_tokens"), gjson.Get(usageChunk, "usage.completion_tokens")
				if u.InputTokens == nil || *u.InputTokens != in.Int() || u.OutputTokens == nil || *u.OutputTokens != outTok.Int() {
					t.Errorf("%s: usage %s, the upstream reported %s / %s", fx.name, usageString(u), in.Raw, outTok.Raw)
				}
			}
		}
		// with the client's model name: the direct stream with that model
		upModel := gjson.GetBytes(firstData(t, fx.body), "model").Str
		var out []byte
		tr := NewStreamTranslator(OpenAIChat, OpenAIChat, "client-model", EventWriterFunc(func(p []byte) error {
			out = append(out, p...)
			return nil
		}))
		tr.HideUsageChunk()
		if err := tr.Run(bytes.NewReader(fx.body)); err != nil {
			t.Fatal(err)
		}
		want := bytes.ReplaceAll(direct, []byte(`"model":"`+upModel+`"`), []byte(`"model":"client-model"`))
		if !bytes.Equal(out, want) {
			t.Fatalf("%s: with a client model:\n%s\nwant\n%s", fx.name, out, want)
		}
	}
	if n == 0 {
		t.Fatal("no OpenAI Chat stream with \"usage\":null members")
	}
}

// firstData returns the data of body's first event that has data.
func firstData(t *testing.T, body []byte) []byte {
	for _, ev := range readAllEvents(t, bytes.NewReader(body)) {
		if len(ev.Data) > 0 {
			return ev.Data
		}
	}
	return nil
}

// TestHideUsageNullMemberForms: the member is removed wherever it sits in
// the chunk (first, middle, last, alone; with and without white space);
// a "usage" member below the top level, or a usage object, is kept; and
// nothing changes without HideUsageChunk.
func TestHideUsageNullMemberForms(t *testing.T) {
	const ch = `"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]`
	cases := []struct{ in, want string }{
		{`{"id":"a",` + ch + `,"usage":null}`, `{"id":"a",` + ch + `}`},
		{`{"usage":null,"id":"a",` + ch + `}`, `{"id":"a",` + ch + `}`},
		{`{"id":"a","usage":null,` + ch + `}`, `{"id":"a",` + ch + `}`},
		{`{"id": "a", "usage": null, ` + ch + `}`, `{"id": "a", ` + ch + `}`},
		{`{ "usage" : null , "id": "a", ` + ch + `}`, `{ "id": "a", ` + ch + `}`},
		{`{"id": "a", ` + ch + `, "usage": null}`, `{"id": "a", ` + ch + `}`},
		{"{\"id\":\"a\",\t\"usage\":\tnull,\t" + ch + "}", "{\"id\":\"a\",\t" + ch + "}"},
		{`{"usage":null}`, `{}`},
		// below the top level: kept; the top-level one removed
		{`{"id":"a","choices":[{"index":0,"delta":{"content":"x","usage":null},"finish_reason":null}],"usage":null}`,
			`{"id":"a","choices":[{"index":0,"delta":{"content":"x","usage":null},"finish_reason":null}]}`},
		{`{"id":"a","choices":[{"index":0,"delta":{"content":"x","usage":null},"finish_reason":null}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{"content":"x","usage":null},"finish_reason":null}]}`},
		// a string that looks like the member: kept
		{`{"id":"a","choices":[{"index":0,"delta":{"content":"\"usage\":null"},"finish_reason":null}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{"content":"\"usage\":null"},"finish_reason":null}]}`},
		// usage reported next to a choice: kept as it came
		{`{"id":"a",` + ch + `,"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			`{"id":"a",` + ch + `,"usage":{"prompt_tokens":1,"completion_tokens":2}}`},
	}
	for _, c := range cases {
		for _, hide := range []bool{true, false} {
			body := "data: " + c.in + "\n\ndata: [DONE]\n\n"
			var out []byte
			tr := NewStreamTranslator(OpenAIChat, OpenAIChat, "", EventWriterFunc(func(p []byte) error {
				out = append(out, p...)
				return nil
			}))
			if hide {
				tr.HideUsageChunk()
			}
			_ = tr.Run(strings.NewReader(body))
			want := "data: " + c.in + "\n\n"
			if hide {
				want = "data: " + c.want + "\n\n"
			}
			if got, _, _ := strings.Cut(string(out), "data: [DONE]"); !strings.HasPrefix(string(out), want) {
				t.Errorf("hide %v: %s\n got %s\nwant %s", hide, c.in, got, want)
			}
		}
	}
	// multi-line data: the member on a line of its own, or after a comma
	// that ends the previous line
	for _, c := range []struct{ in, want string }{
		{"data: {\"id\":\"a\",\ndata: " + ch + ",\ndata: \"usage\":null}\n\n", "data: {\"id\":\"a\",\ndata: " + ch + "}\n\n"},
		{"data: {\"id\":\"a\"," + ch + ",\r\ndata:\"usage\":null}\r\n\r\n", "data: {\"id\":\"a\"," + ch + "}\r\n\r\n"},
		{"data: {\"id\":\"a\"," + ch + ",\nid: 7\ndata: \"usage\":null}\n\n", "data: {\"id\":\"a\"," + ch + "}\n\n"},
	} {
		var out []byte
		tr := NewStreamTranslator(OpenAIChat, OpenAIChat, "", EventWriterFunc(func(p []byte) error {
			out = append(out, p...)
			return nil
		}))
		tr.HideUsageChunk()
		_ = tr.Run(strings.NewReader(c.in + "data: [DONE]\n\n"))
		if !strings.HasPrefix(string(out), c.want) {
			t.Errorf("%q\n got %q\nwant %q", c.in, out, c.want)
		}
	}
}

// FuzzHideUsageMember: an OpenAI Chat chunk (one data line) through a
// passthrough with HideUsageChunk. Whatever the bytes, nothing panics; a
// chunk that is valid JSON with a top-level "usage": null (and no error
// or usage object) comes out as valid JSON equal to sjson's deletion of
// "usage".
func FuzzHideUsageMember(f *testing.F) {
	f.Add([]byte(`{"id":"a","choices":[],"usage":null}`))
	f.Add([]byte(`{ "usage" : null , "id": "a"}`))
	f.Add([]byte(`{"usage":null}`))
	for _, fx := range streamsIn(f, []string{testdataDir(f)}, OpenAIChat) {
		for _, ev := range readAllEvents(f, bytes.NewReader(fx.body)) {
			if len(ev.Data) > 0 {
				f.Add(bytes.Clone(ev.Data))
			}
		}
	}
	f.Fuzz(func(t *testing.T, chunk []byte) {
		if bytes.ContainsAny(chunk, "\r\n") {
			return // one data line
		}
		var out []byte
		tr := NewStreamTranslator(OpenAIChat, OpenAIChat, "", EventWriterFunc(func(p []byte) error {
			if out == nil {
				out = bytes.Clone(p)
			}
			return nil
		}))
		tr.HideUsageChunk()
		_ = tr.Run(bytes.NewReader([]byte("data: " + string(chunk) + "\n\ndata: [DONE]\n\n")))
		u := gjson.GetBytes(chunk, "usage")
		if !gjson.ValidBytes(chunk) || u.Type != gjson.Null || !u.Exists() || gjson.GetBytes(chunk, "error").Exists() ||
			!gjson.ParseBytes(chunk).IsObject() || !bytes.Contains(chunk, keyUsage) {
			return // not a chunk with the member (a name with \u escapes is left alone)
		}
		evs := readAllEvents(t, bytes.NewReader(out))
		if len(evs) == 0 {
			t.Fatalf("%q: nothing relayed", chunk)
		}
		got := evs[0].Data
		want, err := sjson.DeleteBytes(bytes.Clone(chunk), "usage")
		if err != nil {
			return
		}
		if !gjson.ValidBytes(got) || gjson.GetBytes(got, "@ugly").Raw != gjson.GetBytes(want, "@ugly").Raw {
			t.Fatalf("%q\n got %q\nwant %q", chunk, got, want)
		}
	})
}

// TestChatChunkMembersAsHasMember: the one-pass test of a Chat chunk's
// members answers as the three hasMember searches do, on every event of
// the recorded and written Chat streams and on hand-made edge cases
// (white space around the colon, escaped quotes, names ending in the
// searched ones, nested members, values of the wrong type, truncation).
func TestChatChunkMembersAsHasMember(t *testing.T) {
	datas := [][]byte{
		[]byte(`{"error":{"message":"x"}}`), []byte(`{"error" :  "boom"}`), []byte(`{"error":`), []byte(`{"error": `),
		[]byte(`{"usage":null}`), []byte(`{"usage" : {"prompt_tokens":1}}`), []byte(`{"x":{"usage":{}}}`),
		[]byte(`{"finish_reason":null}`), []byte(`{"finish_reason":"stop"}`), []byte("{\"finish_reason\"\t:\n\"length\"}"),
		[]byte(`{"content":"\"error\": not a member"}`), []byte(`{"content":"a:b \"usage\":{"}`), []byte(`{"my\"error":1}`),
		[]byte(`{"xerror":1,"xusage":{},"xfinish_reason":"s"}`), []byte(`:`), []byte(`"error":`), []byte(``), []byte(`::"usage":{`),
		[]byte(`{"a":1,"usage":null}`), []byte(`{"usage":null,"a":1}`), []byte(`{"usage" : null , "obfuscation":"x"}`), []byte(`{"usage":null,"x":{"usage":1}}`),
		[]byte(`{"usage":null,"t":"usage"}`), []byte(`{"t":"usage","usage":null}`), []byte(`{"usage":null}`), []byte(`{"c":"\"usage\":null"}`),
	}
	for _, fx := range streamsIn(t, fixtureDirs(t), OpenAIChat) {
		r := NewSSEReader(bytes.NewReader(fx.body))
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			datas = append(datas, bytes.Clone(ev.Data))
		}
	}
	if len(datas) < 80 {
		t.Fatalf("only %d chunks to compare", len(datas))
	}
	for _, d := range datas {
		e, u, f, at := chatChunkMembers(d)
		we, wu, wf := hasMember(d, keyError, 0), hasMember(d, keyUsage, '{'), hasMember(d, keyFinishReason, '"')
		if e != we || u != wu || f != wf {
			t.Errorf("%q: chatChunkMembers = %v %v %v, hasMember = %v %v %v", d, e, u, f, we, wu, wf)
		}
		a1, b1, ok1 := usageNullMemberAt(d, at)
		a2, b2, ok2 := usageNullMember(d)
		if a1 != a2 || b1 != b2 || ok1 != ok2 {
			t.Errorf("%q: usageNullMemberAt(%d) = %d %d %v, usageNullMember = %d %d %v", d, at, a1, b1, ok1, a2, b2, ok2)
		}
	}
}

// FuzzChatChunkMembers: chatChunkMembers answers as the three hasMember
// searches on any bytes.
func FuzzChatChunkMembers(f *testing.F) {
	for _, s := range []string{`{"error":{}}`, `{"usage" : {}}`, `{"finish_reason":"stop"}`, `{"a":"\"usage\":{"}`, `"finish_reason"` + "\t:" + `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		e, u, fr, at := chatChunkMembers(d)
		if we, wu, wf := hasMember(d, keyError, 0), hasMember(d, keyUsage, '{'), hasMember(d, keyFinishReason, '"'); e != we || u != wu || fr != wf {
			t.Fatalf("%q: chatChunkMembers = %v %v %v, hasMember = %v %v %v", d, e, u, fr, we, wu, wf)
		}
		a1, b1, ok1 := usageNullMemberAt(d, at)
		a2, b2, ok2 := usageNullMember(d)
		if a1 != a2 || b1 != b2 || ok1 != ok2 {
			t.Fatalf("%q: usageNullMemberAt(%d) = %d %d %v, usageNullMember = %d %d %v", d, at, a1, b1, ok1, a2, b2, ok2)
		}
	})
}

// FuzzChunkLead: a chunk read after another through chunkLead answers as
// chatChunkMembers on the chunk alone, whatever the two chunks share.
func FuzzChunkLead(f *testing.F) {
	f.Add([]byte(`{"id":"x","choices":[{"delta":{"content":"a"},"finish_reason":null}]}`), []byte(`{"id":"x","choices":[{"delta":{"content":"b"},"finish_reason":"stop"}]}`))
	f.Add([]byte(`{"id":"x","usage":null}`), []byte(`{"id":"x","usage":{"a":1}}`))
	f.Add([]byte(`{"a":"b","error":`), []byte(`{"a":"b","error":{}}`))
	f.Add([]byte(`{"a":1,"finish_reason" :`), []byte(`{"a":1,"finish_reason" : "x"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var l chunkLead
		for _, d := range [][]byte{a, b, a, b} {
			e, u, fr, at := l.members(d)
			we, wu, wf, wat := chatChunkMembers(d)
			if e != we || u != wu || fr != wf || at != wat {
				t.Fatalf("%q after %q: members = %v %v %v %d, chatChunkMembers = %v %v %v %d", d, l.b, e, u, fr, at, we, wu, wf, wat)
			}
		}
	})
}

// TestChunkLeadFixtures: every OpenAI Chat stream of the corpus, read
// chunk after chunk through one chunkLead, answers as chatChunkMembers on
// each chunk alone, and the lead skips at least 40% of their colons.
func TestChunkLeadFixtures(t *testing.T) {
	chunks, skipped, total := 0, 0, 0
	for _, fx := range streamsIn(t, fixtureDirs(t), OpenAIChat) {
		var l chunkLead
		r := NewSSEReader(bytes.NewReader(fx.body))
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			d := ev.Data
			from := commonPrefix(d, l.b)
			e, u, fr, at := l.members(d)
			we, wu, wf, wat := chatChunkMembers(d)
			if e != we || u != wu || fr != wf || at != wat {
				t.Fatalf("%s: %q: members = %v %v %v %d, chatChunkMembers = %v %v %v %d", fx.name, d, e, u, fr, at, we, wu, wf, wat)
			}
			chunks++
			total += bytes.Count(d, []byte(":"))
			skipped += bytes.Count(d[:from], []byte(":"))
		}
	}
	if chunks < 50 {
		t.Fatalf("only %d chunks read", chunks)
	}
	if skipped*5 < total*2 {
		t.Errorf("the lead skipped %d of %d colons in %d chunks; want at least 40%%", skipped, total, chunks)
	}
	t.Logf("%d chunks: %d of %d colons skipped", chunks, skipped, total)
}

// BenchmarkChunkMembers compares, per chunk of the recorded OpenAI Chat
// streams, chatChunkMembers on each chunk alone (scan) with the same read
// through a chunkLead kept over each stream (lead); run both in one
// process and compare the ratio.
func BenchmarkChunkMembers(b *testing.B) {
	var streams [][][]byte
	for _, fx := range streamsIn(b, fixtureDirs(b), OpenAIChat) {
		var chunks [][]byte
		r := NewSSEReader(bytes.NewReader(fx.body))
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if !bytes.Equal(ev.Data, doneMarker) {
				chunks = append(chunks, bytes.Clone(ev.Data))
			}
		}
		streams = append(streams, chunks)
	}
	n := 0
	for _, s := range streams {
		n += len(s)
	}
	b.Run("scan", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, s := range streams {
				for _, d := range s {
					chatChunkMembers(d)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
	})
	b.Run("lead", func(b *testing.B) {
		var l chunkLead
		for i := 0; i < b.N; i++ {
			for _, s := range streams {
				l = chunkLead{b: l.b[:0]}
				for _, d := range s {
					l.members(d)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
	})
}

// closesObjectSearches is closesObject as it was, a trim and a search
// per bracket: the reference TestCloseObjectSameAsSearches and
// BenchmarkClosesObject compare the one pass with.
func closesObjectSearches(tail []byte) bool {
	t := bytes.TrimRight(tail, " \t\r\n")
	return len(t) > 0 && t[len(t)-1] == '}' && bytes.IndexByte(t[:len(t)-1], '}') < 0 &&
		bytes.IndexByte(t, '{') < 0 && bytes.IndexByte(t, '[') < 0 && bytes.IndexByte(t, ']') < 0
}

// TestClosesObjectSameAsSearches: the one pass answers as the trim and
// searches do, on tails with and without brackets, white space and
// strings.
func TestClosesObjectSameAsSearches(t *testing.T) {
	for _, s := range []string{"", "}", " } \n", "}}", `,"obfuscation":"kP2"}`, `,"obfuscation":"kP2"} ` + "\r\n",
		`,"a":[1]}`, `,"a":{}}`, `,"a":"]"}`, `{`, `,"x":1`, "\t", `,"x":"{"}`, `] }`, `,"o":"x"}}`} {
		if got, want := closesObject([]byte(s)), closesObjectSearches([]byte(s)); got != want {
			t.Errorf("closesObject(%q) = %v, the searches say %v", s, got, want)
		}
	}
}

// FuzzClosesObject: the one pass agrees with the searches on any tail.
func FuzzClosesObject(f *testing.F) {
	f.Add([]byte(`,"obfuscation":"kP2"}`))
	f.Add([]byte(`,"a":[1]} `))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := closesObject(b), closesObjectSearches(b); got != want {
			t.Fatalf("closesObject(%q) = %v, the searches say %v", b, got, want)
		}
	})
}

// BenchmarkClosesObject: the test on what follows "usage":null in an
// OpenAI chunk (every chunk of a stream whose usage the gateway hides),
// as one pass and as the searches, in one run.
func BenchmarkClosesObject(b *testing.B) {
	tail := []byte(`,"obfuscation":"kP2"}`)
	for _, c := range []struct {
		name string
		f    func([]byte) bool
	}{{"searches", closesObjectSearches}, {"one-pass", closesObject}} {
		b.Run(c.name, func(b *testing.B) {
			m := startCPU()
			for b.Loop() {
				if !c.f(tail) {
					b.Fatal("not closing")
				}
			}
			m.report(b)
		})
	}
}
