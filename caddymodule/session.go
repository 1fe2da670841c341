package caddymodule

import (
	"hash/crc32"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/llmgateway/llm_gateway/translate"
)

// sessionHeaders are the request headers that name a conversation, most
// explicit first: the gateway's own, Claude Code's and Codex's.
var sessionHeaders = []string{"X-Session-Id", "X-Claude-Code-Session-Id", "Session-Id"}

// sessionID identifies the conversation a request belongs to, for session
// affinity: a session header when the client sends one, else a hash of the
// first system text and the first user message (stable across the turns of
// one conversation, different between conversations), which the one parse
// of the request found (translate.Request.SessionSeed).
func sessionID(r *http.Request, req *translate.Request) string {
	for _, h := range sessionHeaders {
		if v := r.Header.Get(h); v != "" && len(v) <= 256 {
			return "h:" + v
		}
	}
	sys, first := req.SessionSeed()
	if sys == "" && first == "" {
		return ""
	}
	const limit = 4 << 10 // a prefix identifies the conversation well enough
	return "c:" + strconv.FormatUint(seedHash(sys[:min(len(sys), limit)], first[:min(len(first), limit)]), 36)
}

// castagnoli is the CRC-32C table (hardware-assisted on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seedHash hashes a conversation's session seeds into 64 bits: the
// CRC-32C and the CRC-32 (IEEE) of sys, a 0 byte and first, side by side.
// Both run at memory speed where FNV-1a reads a byte at a time (6 µs for
// a 4 KiB prefix here), the value is the same in every process (cluster
// instances agree on a conversation's id), and a collision only lets two
// conversations share an affinity pin.
func seedHash(sys, first string) uint64 {
	b := func(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
	zero := []byte{0}
	c := crc32.Update(crc32.Update(crc32.Update(0, castagnoli, b(sys)), castagnoli, zero), castagnoli, b(first))
	i := crc32.Update(crc32.Update(crc32.ChecksumIEEE(b(sys)), crc32.IEEETable, zero), crc32.IEEETable, b(first))
	return uint64(c)<<32 | uint64(i)
}
