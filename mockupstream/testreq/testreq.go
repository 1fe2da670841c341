// Package testreq builds realistic client requests for the project's
// tests and benchmarks, shared by the packages that measure them
// (translate's translation benchmarks, caddymodule's handler benchmarks).
// It imports only the standard library. Only tests import it.
package testreq

import (
	"strconv"
	"strings"
)

// ClaudeCodeRequest returns a Claude Code-shaped Anthropic Messages
// request of about 80 KB (per Anthropic's Messages API reference): a long
// system prompt in 10 text blocks with cache_control, 24 tools with JSON
// Schemas, and 40 messages mixing text, tool_use and tool_result turns.
// model and stream fill the fields of the same names.
func ClaudeCodeRequest(model string, stream bool) []byte {
	var b strings.Builder
	para := strings.Repeat("You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user. ", 12)
	b.WriteString(`{"model":` + strconv.Quote(model) + `,"max_tokens":32000,"stream":` + strconv.FormatBool(stream) + `,"system":[`)
	for i := 0; i < 10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":` + strconv.Quote(para) + `,"cache_control":{"type":"ephemeral"}}`)
	}
	b.WriteString(`],"tools":[`)
	for i := 0; i < 24; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"Tool` + strconv.Itoa(i) + `","description":` + strconv.Quote(strings.Repeat("Reads a file from the local filesystem. ", 40)) +
			`,"input_schema":{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path to the file to read"},"offset":{"type":"number","description":"The line number to start reading from"},"limit":{"type":"number","description":"The number of lines to read"}},"required":["file_path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}}`)
	}
	b.WriteString(`],"messages":[`)
	for i := 0; i < 40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		id := "toolu_0" + strconv.Itoa(i/4)
		switch i % 4 {
		case 0:
			b.WriteString(`{"role":"user","content":[{"type":"text","text":` + strconv.Quote(strings.Repeat("Please fix the failing test in pkg/server. ", 8)) + `}]}`)
		case 1:
			b.WriteString(`{"role":"assistant","content":[{"type":"text","text":"Let me read the file."},{"type":"tool_use","id":"` + id + `","name":"Tool3","input":{"file_path":"/repo/pkg/server/server.go","limit":200}}]}`)
		case 2:
			b.WriteString(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":` + strconv.Quote(strings.Repeat("func main() {\n\tfmt.Println(\"hello\")\n}\n", 20)) + `}]}`)
		case 3:
			b.WriteString(`{"role":"assistant","content":[{"type":"text","text":` + strconv.Quote(strings.Repeat("The test fails because the handler returns early. ", 5)) + `}]}`)
		}
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
