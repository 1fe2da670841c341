package caddymodule

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
)

// fingerprintSalt returns a random salt mixed into key fingerprints, so
// that a fingerprint (kept in the usage file and in memory) cannot be used
// to test guesses of a weak secret. It is created once per installation
// under Caddy's data directory, so fingerprints, and with them the saved
// usage, stay stable across restarts; where that directory is not
// writable, a salt for this process only is used.
var fingerprintSalt = sync.OnceValue(func() string {
	path := filepath.Join(caddy.AppDataDir(), "llm_gateway", "fingerprint.salt")
	if b, err := os.ReadFile(path); err == nil {
		if s := strings.TrimSpace(string(b)); len(s) >= 32 {
			return s
		}
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	salt := hex.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
		if err := writeFileAtomic(path, []byte(salt+"\n")); err == nil {
			return salt
		}
	}
	return salt
})
