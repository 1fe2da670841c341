package mockupstream

import (
	"strconv"

	"github.com/llmgateway/llm_gateway/translate"
)

// appendString appends s as a JSON string literal (quotes included); see
// translate.AppendJSONString.
func appendString(dst []byte, s string) []byte { return translate.AppendJSONString(dst, s) }

// appendInt appends the decimal form of n.
func appendInt(dst []byte, n int64) []byte {
	return strconv.AppendInt(dst, n, 10)
}
