package caddymodule

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmgateway/llm_gateway/keypool"
)

// Usage persistence: each key's lifetime counters, its current quota
// window and the token counts the admin API shows survive a restart. They
// are written to one JSON file under Caddy's data directory
// (caddy.AppDataDir()/llm_gateway/usage.json), atomically (temporary file
// and rename), at most every usageSaveInterval while they change, and when
// a config is cleaned up (reload or stop). A missing file starts fresh; a
// corrupt one starts fresh with a warning and is kept aside as
// usage.json.corrupt. Nothing secret is stored: keys appear by fingerprint
// and id.

// usageSaveInterval is how often changed usage is written.
var usageSaveInterval = 5 * time.Second

// usageFile is the file format.
type usageFile struct {
	Version int                             `json:"version"`
	SavedAt time.Time                       `json:"saved_at"`
	Pools   map[string][]keypool.KeyUsage   `json:"pools"`
	Tokens  map[string][numTokenKinds]int64 `json:"tokens"` // "<pool>\x00<key id>"
	// Budgets is the spend against budgets, by scope (see spendSnapshot).
	Budgets map[string]savedSpend `json:"budgets,omitempty"`
	// Spend, Hourly and Daily are the cost totals and the usage series
	// (cost.go, usage_series.go); absent in files of earlier versions.
	Spend  savedCosts  `json:"spend,omitempty"`
	Hourly []seriesRow `json:"hourly,omitempty"`
	Daily  []seriesRow `json:"daily,omitempty"`
}

var usageState struct {
	mu       sync.Mutex
	path     string // "" until the first Provision; "off" when disabled
	logger   *zap.Logger
	loaded   *usageFile      // what the file held at start
	restored map[string]bool // pools already restored in this process
	last     []byte          // last content written
	saver    bool            // the periodic saver runs
}

// initUsagePersistence loads the usage file once per process and starts
// the periodic saver. path "" means the default location, "off" disables
// persistence.
func initUsagePersistence(path string, logger *zap.Logger) {
	usageState.mu.Lock()
	defer usageState.mu.Unlock()
	if usageState.path != "" {
		return
	}
	if path == "" {
		path = filepath.Join(caddy.AppDataDir(), "llm_gateway", "usage.json")
	}
	usageState.path, usageState.logger, usageState.restored = path, logger, map[string]bool{}
	if path == "off" {
		return
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		logger.Warn("reading saved usage; starting fresh", zap.String("file", path), zap.Error(err))
	default:
		var f usageFile
		if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 {
			logger.Warn("saved usage is corrupt; starting fresh", zap.String("file", path), zap.String("kept_as", path+".corrupt"))
			_ = os.Rename(path, path+".corrupt")
		} else {
			usageState.loaded = &f
			usageState.last = b
			restoreSpend(f.Budgets)
			restoreCosts(f.Spend)
			callerUsage.restore(f.Hourly, f.Daily)
		}
	}
	if !usageState.saver {
		usageState.saver = true
		go func() {
			for range time.Tick(usageSaveInterval) {
				saveUsage()
			}
		}()
	}
}

// restoreUsage applies saved usage to a pool just created in this process.
func restoreUsage(name string, p *keypool.Pool) {
	usageState.mu.Lock()
	f := usageState.loaded
	done := usageState.restored[name]
	if usageState.restored != nil {
		usageState.restored[name] = true
	}
	usageState.mu.Unlock()
	if f == nil || done {
		return
	}
	p.RestoreUsage(f.Pools[name])
	prefix := name + "\x00"
	for k, toks := range f.Tokens {
		if id, ok := strings.CutPrefix(k, prefix); ok {
			keyStatsFor(name, id).addTokens(toks)
		}
	}
}

// saveUsage writes the usage of every live pool when it changed since the
// last write. Errors are logged, never fatal.
func saveUsage() {
	usageState.mu.Lock()
	defer usageState.mu.Unlock()
	if usageState.path == "" || usageState.path == "off" {
		return
	}
	f := usageFile{Version: 1, Pools: map[string][]keypool.KeyUsage{}, Tokens: map[string][numTokenKinds]int64{}}
	// keep what was saved for pools not (yet) configured in this process
	if usageState.loaded != nil {
		for name, u := range usageState.loaded.Pools {
			if !usageState.restored[name] {
				f.Pools[name] = u
			}
		}
		for k, t := range usageState.loaded.Tokens {
			if name, _, _ := strings.Cut(k, "\x00"); !usageState.restored[name] {
				f.Tokens[k] = t
			}
		}
	}
	var pools []*keypool.Pool
	registry.Range(func(_, v any) bool {
		pools = append(pools, v.(*poolState).pool)
		return true
	})
	for _, p := range pools {
		f.Pools[p.Name()] = p.Usage()
	}
	keyStatsMap.Range(func(k, v any) bool {
		f.Tokens[k.(string)] = v.(*keyStats).figures().tokens
		return true
	})
	f.Budgets = spendSnapshot()
	f.Spend = snapshotCosts()
	f.Hourly, f.Daily = callerUsage.snapshot()
	body, err := json.Marshal(f.withoutTime())
	if err != nil || string(body) == string(usageState.last) {
		return
	}
	f.SavedAt = time.Now().UTC()
	out, _ := json.MarshalIndent(f, "", "\t")
	if err := writeFileAtomic(usageState.path, out); err != nil {
		usageState.logger.Warn("saving usage", zap.String("file", usageState.path), zap.Error(err))
		return
	}
	usageState.last = body
}

// withoutTime is f without SavedAt, to detect changes.
func (f usageFile) withoutTime() usageFile {
	f.SavedAt = time.Time{}
	return f
}

// writeFileAtomic writes data to a temporary file beside path, syncs it
// and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".usage-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
