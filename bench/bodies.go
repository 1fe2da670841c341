package main

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Model names the load generator asks for; each selects a workload (a pool
// in the gateway's config, a behavior in the mock).
const (
	modelJSON  = "bench-json"  // non-streaming, canned JSON answer
	modelSSE   = "bench-sse"   // stream at the mock's full speed
	modelPaced = "bench-paced" // stream paced at -paced-rate events/s
	modelSlow  = "bench-slow"  // slow stream held open for the memory case
)

// workloadKeyPrefix maps a model to the prefix of the upstream keys that the
// mock answers with that workload's canned bytes.
var workloadKeyPrefix = map[string]string{
	modelJSON:  "json",
	modelSSE:   "sse",
	modelPaced: "paced",
	modelSlow:  "slow",
}

// filler returns n bytes of plain ASCII words.
func filler(n int) string {
	const words = "the quick brown fox jumps over the lazy dog while a gateway relays tokens "
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words)
	}
	return b.String()[:n]
}

// padded builds a JSON document of about size bytes: build is called once
// with an empty filler to measure the fixed part, then with the filler that
// brings the whole to size.
func padded(size int, build func(fill string) any) []byte {
	base, _ := json.Marshal(build(""))
	n := size - len(base)
	if n < 0 {
		n = 0
	}
	b, _ := json.Marshal(build(filler(n)))
	return b
}

// chatRequest is an OpenAI Chat Completions request of about size bytes.
func chatRequest(model string, stream bool, size int) []byte {
	return padded(size, func(fill string) any {
		return map[string]any{
			"model": model,
			"messages": []map[string]any{
				{"role": "system", "content": "You are a terse assistant."},
				{"role": "user", "content": "Summarise: " + fill},
			},
			"max_tokens":  1024,
			"temperature": 0.2,
			"stream":      stream,
		}
	})
}

// messagesRequest is an Anthropic Messages request of about size bytes.
func messagesRequest(model string, stream bool, size int) []byte {
	return padded(size, func(fill string) any {
		return map[string]any{
			"model":       model,
			"system":      "You are a terse assistant.",
			"messages":    []map[string]any{{"role": "user", "content": "Summarise: " + fill}},
			"max_tokens":  1024,
			"temperature": 0.2,
			"stream":      stream,
		}
	})
}

// chatResponse is an OpenAI chat.completion object of about size bytes.
func chatResponse(size int) []byte {
	return padded(size, func(fill string) any {
		return map[string]any{
			"id":      "chatcmpl-bench",
			"object":  "chat.completion",
			"created": 1700000000,
			"model":   "bench-upstream",
			"choices": []map[string]any{{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": fill},
				"finish_reason": "stop",
			}},
			"usage": map[string]any{"prompt_tokens": 512, "completion_tokens": 200, "total_tokens": 712},
		}
	})
}

// messagesResponse is an Anthropic message object of about size bytes.
func messagesResponse(size int) []byte {
	return padded(size, func(fill string) any {
		return map[string]any{
			"id":            "msg_bench",
			"type":          "message",
			"role":          "assistant",
			"model":         "bench-upstream",
			"content":       []map[string]any{{"type": "text", "text": fill}},
			"stop_reason":   "end_turn",
			"stop_sequence": nil,
			"usage":         map[string]any{"input_tokens": 512, "output_tokens": 200},
		}
	})
}

// chatStream is an OpenAI Chat Completions SSE body of exactly events
// events (at least 4): a role chunk, content chunks, a finish chunk with
// usage, and [DONE].
func chatStream(events int) []byte {
	if events < 4 {
		events = 4
	}
	const head = `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-upstream","choices":[{"index":0,"delta":`
	var b strings.Builder
	b.WriteString(head + `{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := 0; i < events-3; i++ {
		b.WriteString(head + `{"content":"tok` + strconv.Itoa(i) + ` "},"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(head + `{},"finish_reason":"stop"}],"usage":{"prompt_tokens":512,"completion_tokens":` +
		strconv.Itoa(events-3) + `,"total_tokens":` + strconv.Itoa(512+events-3) + "}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// messagesStream is an Anthropic Messages SSE body of exactly events events
// (at least 6): message_start, one text block of content_block_delta
// events, message_delta and message_stop.
func messagesStream(events int) []byte {
	if events < 6 {
		events = 6
	}
	var b strings.Builder
	ev := func(name, data string) {
		b.WriteString("event: " + name + "\ndata: " + data + "\n\n")
	}
	ev("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"bench-upstream","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":512,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for i := 0; i < events-5; i++ {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok`+strconv.Itoa(i)+` "}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(events-5)+`}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return []byte(b.String())
}
