package caddymodule

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"

	"github.com/llmgateway/llm_gateway/keypool"
)

// Settings are defined once, as the fields of the JSON config structs
// (Handler, PoolConfig, KeyConfig, GatewayKeyConfig): the json tag is the
// option's name in JSON and in the Caddyfile, the field's type is how it
// parses, and its doc comment is the user documentation. The Caddyfile
// parser sets a scalar option through setOption, by that name; only
// options with a syntax of their own (blocks, positional arguments,
// "refresh off", model_map's two arguments) have a hand-written case. The
// keypool settings among the PoolConfig fields reach keypool.Settings
// through poolSettings, by field name; their defaults are keypool's
// (keypool.DefaultSettings).
//
// Adding a setting therefore takes one field: for a gateway option, the
// config struct field (json tag, doc comment with its "Default:") and its
// use at provision; for a key-pool option, the same PoolConfig field named
// like the keypool.Settings field it feeds (whose default keypool
// defines). The Caddyfile subdirective, its "did you mean" suggestion, the
// JSON and the conversion follow; TestPoolSettingsOneDefinition and
// TestPoolDefaultsDocumented fail when the two sides disagree.
//
// How a field parses in the Caddyfile, by type:
//
//	encoding.TextUnmarshaler  one argument (all arguments joined by spaces
//	                          with the "words" flag); its error as is
//	caddy.Duration            one Caddy duration >= 0 ("3s", "1d")
//	int, int64                one integer >= 1 (min=N: >= N; "anyint": any)
//	*int                      as int, and an explicit 0 is kept
//	int64 with "size"         one size, e.g. 8MiB, > 0
//	string                    one argument
//	[]string                  one or more arguments, appended
//	bool                      no argument: true
//
// The optional `caddyfile:"..."` tag holds comma-separated flags: "-"
// (no generic subdirective: positional, a block, or a syntax of its own),
// "min=N", "anyint", "size", "words" and "example=..." (shown when a
// "words" option has no argument).

// optionField is one Caddyfile-settable field of a config struct.
type optionField struct {
	index   int
	min     int
	anyInt  bool
	size    bool
	words   bool
	example string
}

var (
	textUnmarshalerType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	durationType        = reflect.TypeOf(caddy.Duration(0))
	optionTables        sync.Map // reflect.Type -> map[string]optionField
)

// optionTable returns the generic options of a config struct type by JSON
// name, with the names in field order.
func optionTable(t reflect.Type) (map[string]optionField, []string) {
	type table struct {
		m     map[string]optionField
		names []string
	}
	if v, ok := optionTables.Load(t); ok {
		tb := v.(table)
		return tb.m, tb.names
	}
	tb := table{m: map[string]optionField{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		flags := strings.Split(f.Tag.Get("caddyfile"), ",")
		if slices.Contains(flags, "-") || !settable(f.Type) {
			continue
		}
		of := optionField{index: i, min: 1, anyInt: slices.Contains(flags, "anyint"),
			size: slices.Contains(flags, "size"), words: slices.Contains(flags, "words")}
		for _, flag := range flags {
			if v, ok := strings.CutPrefix(flag, "min="); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					panic(fmt.Sprintf("caddymodule: %s.%s: bad caddyfile tag %q", t.Name(), f.Name, flag))
				}
				of.min = n
			}
			if v, ok := strings.CutPrefix(flag, "example="); ok {
				of.example = v
			}
		}
		tb.m[name] = of
		tb.names = append(tb.names, name)
	}
	optionTables.Store(t, tb)
	return tb.m, tb.names
}

// settable reports whether setOption can parse a field of type t.
func settable(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(textUnmarshalerType) || t == durationType {
		return true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.String, reflect.Bool:
		return true
	case reflect.Pointer:
		return t.Elem().Kind() == reflect.Int
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// optionNames returns the generic Caddyfile options of a config struct
// (a pointer to one or one itself) in field order, then extra: the
// subdirectives the block accepts, for suggestions.
func optionNames(cfg any, extra ...string) []string {
	t := reflect.TypeOf(cfg)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	_, names := optionTable(t)
	return append(append([]string(nil), names...), extra...)
}

// setOption parses the subdirective at the dispenser (its name is
// d.Val()) into the field of cfg (a pointer to a config struct) with that
// JSON name. It returns false when cfg has no such generic option, so the
// caller can try its own cases or report the name as unknown.
func setOption(d *caddyfile.Dispenser, cfg any) (bool, error) {
	name := d.Val()
	v := reflect.ValueOf(cfg).Elem()
	table, _ := optionTable(v.Type())
	of, ok := table[name]
	if !ok {
		return false, nil
	}
	fv := v.Field(of.index)
	ft := fv.Type()
	switch {
	case reflect.PointerTo(ft).Implements(textUnmarshalerType):
		var text string
		if of.words {
			args := d.RemainingArgs()
			if len(args) == 0 {
				if of.example != "" {
					return true, d.Errf("%s needs a value, e.g. %s %s", name, name, of.example)
				}
				return true, d.ArgErr()
			}
			text = strings.Join(args, " ")
		} else if !d.AllArgs(&text) {
			return true, d.ArgErr()
		}
		if err := fv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			return true, d.Err(err.Error())
		}
	case ft == durationType:
		var dur caddy.Duration
		if err := durationArg(d, &dur); err != nil {
			return true, err
		}
		fv.SetInt(int64(dur))
	case of.size:
		var arg string
		if !d.AllArgs(&arg) {
			return true, d.ArgErr()
		}
		size, err := humanize.ParseBytes(arg)
		if err != nil || size == 0 || size > math.MaxInt64 {
			return true, d.Errf("%s: bad size '%s'", name, arg)
		}
		fv.SetInt(int64(size))
	case ft.Kind() == reflect.Int || ft.Kind() == reflect.Int64 || ft.Kind() == reflect.Pointer:
		var arg string
		if !d.AllArgs(&arg) {
			return true, d.ArgErr()
		}
		n, err := strconv.ParseInt(arg, 10, 64)
		switch {
		case of.anyInt && (err != nil || n != int64(int(n))):
			return true, d.Errf("%s: want an integer, got '%s'", name, arg)
		case !of.anyInt && (err != nil || n < int64(of.min) || n != int64(int(n))):
			return true, d.Errf("%s: want an integer >= %d, got '%s'", name, of.min, arg)
		}
		if ft.Kind() == reflect.Pointer {
			p := reflect.New(ft.Elem())
			p.Elem().SetInt(n)
			fv.Set(p)
		} else {
			fv.SetInt(n)
		}
	case ft.Kind() == reflect.String:
		var arg string
		if !d.AllArgs(&arg) {
			return true, d.ArgErr()
		}
		fv.SetString(arg)
	case ft.Kind() == reflect.Bool:
		if d.NextArg() {
			return true, d.ArgErr()
		}
		fv.SetBool(true)
	case ft.Kind() == reflect.Slice:
		args := d.RemainingArgs()
		if len(args) == 0 {
			return true, d.ArgErr()
		}
		fv.Set(reflect.AppendSlice(fv, reflect.ValueOf(args)))
	}
	return true, nil
}

// poolSettingFields maps each keypool.Settings field to the PoolConfig
// field of the same name (index in PoolConfig, -1 when none: a keypool
// setting the gateway does not expose).
var poolSettingFields = func() []int {
	st, pt := reflect.TypeOf(keypool.Settings{}), reflect.TypeOf(PoolConfig{})
	out := make([]int, st.NumField())
	for i := range out {
		out[i] = -1
		sf := st.Field(i)
		pf, ok := pt.FieldByName(sf.Name)
		if !ok {
			continue
		}
		if !pf.Type.ConvertibleTo(sf.Type) {
			panic(fmt.Sprintf("caddymodule: PoolConfig.%s (%s) does not convert to keypool.Settings.%s (%s)", pf.Name, pf.Type, sf.Name, sf.Type))
		}
		out[i] = pf.Index[0]
	}
	return out
}()

// poolSettings converts a pool's configuration to keypool.Settings: every
// PoolConfig field named like a Settings field is copied (caddy.Duration
// to time.Duration, typed strings to strings), and Affinity becomes
// AffinityTTL, LearnLimits "off" sets LearnLimitsOff. Zero values stay zero, so keypool applies its defaults
// (keypool.DefaultSettings). Errors: a bad Affinity, or what
// keypool.Settings.Validate reports.
func poolSettings(pc *PoolConfig) (keypool.Settings, error) {
	var s keypool.Settings
	sv, pv := reflect.ValueOf(&s).Elem(), reflect.ValueOf(pc).Elem()
	for i, j := range poolSettingFields {
		if j >= 0 {
			f := sv.Field(i)
			f.Set(pv.Field(j).Convert(f.Type()))
		}
	}
	ttl, err := pc.Affinity.TTL()
	if err != nil {
		return s, err
	}
	s.AffinityTTL = ttl
	s.LearnLimitsOff = pc.LearnLimits == LearnOff
	return s, s.Validate()
}

// durationOr returns d as a time.Duration, or def when d is not positive.
func durationOr(d caddy.Duration, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return time.Duration(d)
}
