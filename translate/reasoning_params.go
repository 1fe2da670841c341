package translate

import (
	"strconv"
	"strings"
)

// Sampling parameters for OpenAI reasoning models.
//
// OpenAI's reasoning models refuse the sampling parameters of its chat
// models with a 400 invalid_request_error, so a translated request that
// carried them (Claude Code sends temperature on every request) would fail
// whole:
//
//   - temperature: "Unsupported value: 'temperature' does not support 0.2
//     with this model. Only the default (1) value is supported." (code
//     unsupported_value: o1, o3, o4-mini, gpt-5, gpt-5-mini, gpt-5-nano,
//     gpt-5.1 and gpt-5.2 with a reasoning effort) or "Unsupported
//     parameter: 'temperature' is not supported with this model." (o1,
//     o3-mini); temperature 1 is accepted by all of them;
//   - top_p, presence_penalty, frequency_penalty, logprobs, top_logprobs,
//     logit_bias: not supported by reasoning models (OpenAI reasoning
//     guide, "Limitations"; Azure OpenAI reasoning models, "Not supported");
//   - stop: "Unsupported parameter: 'stop' is not supported with this
//     model." on o3 and o4-mini (not o3-mini) and on the gpt-5 reasoning
//     models (the gateway then applies the stop strings itself:
//     Request.UnsentStopSequences, stop_emulation.go);
//   - max_tokens: "Use 'max_completion_tokens' instead" (the Chat encoder
//     always writes max_completion_tokens, the Responses encoder
//     max_output_tokens).
//
// gpt-5.1 and later base models take reasoning effort "none", their
// default (Azure OpenAI ReasoningEffort: "gpt-5.1 defaults to none";
// OpenAI's GPT-5.2 guide: temperature, top_p and logprobs only with
// reasoning effort none). gpt-5-chat-latest is a chat model, not a
// reasoning one: it takes every sampling parameter and no reasoning
// effort (LiteLLM's gpt-5 configuration exempts gpt-5-chat*). The
// gpt-5.x-chat-latest models that followed it reason at a fixed effort
// (medium only) and refuse a temperature other than 1, so they count as
// gpt-5 reasoning models here.
//
// What the gateway does follows LiteLLM's drop_params for its OpenAI
// o-series and gpt-5 configurations: for a model of a known reasoning
// family the refused parameters are left out of a translated request
// (temperature is kept when it is exactly 1, the one value accepted);
// any other model, unknown ones included, keeps every parameter.
// presence_penalty, frequency_penalty, logprobs, logit_bias and seed
// never reach a translated request (no canonical counterpart; see
// docs/translation-dropped-fields.md). A same-dialect passthrough is never
// touched.

// samplingRule says when a model refuses temperature (other than 1) and top_p.
type samplingRule uint8

const (
	samplingKept     samplingRule = iota // accepted (a chat model, or an unknown one)
	samplingNoEffort                     // accepted while no reasoning effort other than "none" is sent
	samplingRefused                      // never accepted
)

// modelFamily is one row of reasoningFamilies.
type modelFamily struct {
	name     string // lower-case id or prefix; a trailing '#' stands for one or more digits
	prefix   bool   // matches any id that starts with the name
	dated    bool   // matches the name alone or with a -YYYY-MM-DD snapshot suffix only
	sampling samplingRule
	noStop   bool // stop sequences refused
	noEffort bool // reasoning_effort refused (a chat model)
	// effortOnly is the one reasoning effort the model takes ("" any):
	// another one is left out, and the model reasons at its default
	effortOnly string
}

// reasoningFamilies classifies OpenAI model ids, first match wins: a name
// matches an id that is the name or the name followed by '-' or '.' and
// anything (o3 matches o3-2025-04-16 and o3-pro, not o30), with dated,
// the name alone or with a snapshot date, with prefix, any id that starts
// with it. The chat model families (noEffort) are the ones that refuse
// reasoning_effort.
var reasoningFamilies = [...]modelFamily{
	{name: "gpt-4", prefix: true, noEffort: true}, // gpt-4, gpt-4o, gpt-4.1, …
	{name: "gpt-3", prefix: true, noEffort: true}, // gpt-3.5-turbo, …
	{name: "chatgpt-", prefix: true, noEffort: true},
	{name: "gpt-5-chat", noEffort: true}, // gpt-5-chat, gpt-5-chat-latest: a chat model
	{name: "gpt-5.1", dated: true, sampling: samplingNoEffort, noStop: true},
	{name: "gpt-5.2", dated: true, sampling: samplingNoEffort, noStop: true},
	{name: "gpt-5.4", dated: true, sampling: samplingNoEffort, noStop: true},
	// gpt-5-pro "defaults to (and only supports) high reasoning effort"
	// (OpenAI API reference, Create chat completion, reasoning_effort)
	{name: "gpt-5-pro", sampling: samplingRefused, noStop: true, effortOnly: "high"},
	{name: "gpt-5", sampling: samplingRefused, noStop: true}, // gpt-5, -mini, -nano, -pro, -codex, gpt-5.x-codex, gpt-5.x-chat-latest, …
	{name: "o1", sampling: samplingRefused},                  // o1, o1-mini, o1-preview, o1-pro
	{name: "o3-mini", sampling: samplingRefused},
	{name: "o#", sampling: samplingRefused, noStop: true}, // o3, o3-pro, o4-mini and later o-series
}

// openAIModelFamily returns the row of reasoningFamilies that model
// matches, nil for any other model. The match ignores case, a provider
// prefix ("openai/o3", "azure/gpt-5") and a fine-tune's wrapping
// ("ft:o4-mini-2025-04-16:org::id").
func openAIModelFamily(model string) *modelFamily {
	id := baseModelID(model)
	for i := range reasoningFamilies {
		if f := &reasoningFamilies[i]; f.matches(id) {
			return f
		}
	}
	return nil
}

// baseModelID is model lower-cased, without what precedes its last '/'
// and without a fine-tune's "ft:" and ":…" wrapping.
func baseModelID(model string) string {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	model = strings.ToLower(model)
	if rest, ok := strings.CutPrefix(model, "ft:"); ok {
		model, _, _ = strings.Cut(rest, ":")
	}
	return model
}

// matches reports whether the lower-case model id belongs to f.
func (f *modelFamily) matches(id string) bool {
	name, digits := strings.CutSuffix(f.name, "#")
	rest, ok := strings.CutPrefix(id, name)
	if !ok || f.prefix {
		return ok
	}
	if digits {
		n := 0
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		if n == 0 {
			return false
		}
		rest = rest[n:]
	}
	if f.dated {
		return rest == "" || isSnapshotDate(rest)
	}
	return rest == "" || rest[0] == '-' || rest[0] == '.'
}

// isSnapshotDate reports whether s is "-YYYY-MM-DD".
func isSnapshotDate(s string) bool {
	if len(s) != 11 || s[0] != '-' || s[5] != '-' || s[8] != '-' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if (i != 5 && i != 8) && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// openAIParams is what a translated request to an OpenAI upstream carries
// of a canonical request's reasoning and sampling parameters.
type openAIParams struct {
	effort      string // reasoning effort to send; "" sends none
	temperature string // raw JSON number; "" leaves temperature out
	topP        string // raw JSON number; "" leaves top_p out
	stop        bool   // whether the stop sequences are sent (Chat Completions)
}

// openAIRequestParams decides, for both OpenAI encoders (Chat Completions
// and Responses), which of r's reasoning and sampling parameters the
// upstream model r.model takes (see reasoningFamilies): the reasoning
// effort as chatEffort gives it, none for a chat model family; for a reasoning
// model, temperature only when it is 1, no top_p and, where refused, no
// stop sequences. Unknown models keep everything.
func openAIRequestParams(r *canonRequest) openAIParams {
	f := openAIModelFamily(r.model)
	p := openAIParams{effort: chatEffort(r), temperature: r.temperature, topP: r.topP, stop: true}
	if f == nil {
		return p
	}
	if f.noEffort || f.effortOnly != "" && p.effort != f.effortOnly {
		p.effort = ""
	}
	if p.effort == "xhigh" && !takesXHigh(baseModelID(r.model)) {
		p.effort = "high"
	}
	p.stop = !f.noStop
	if f.sampling == samplingRefused || f.sampling == samplingNoEffort && p.effort != "" && p.effort != "none" {
		if !isOne(p.temperature) {
			p.temperature = ""
		}
		p.topP = ""
	}
	return p
}

// takesXHigh reports whether the lower-case OpenAI model id, of a known
// reasoning family, accepts reasoning effort "xhigh": gpt-5.1-codex-max
// and every model after it (gpt-5.2 and later, their -codex, -mini and
// -pro variants), per Azure OpenAI's ReasoningEffort ("xhigh is supported
// for all models after gpt-5.1-codex-max") and Codex's config docs
// ("xhigh only on gpt-5.1-codex-max" when 5.1 was current). The o-series,
// gpt-5, gpt-5-mini, gpt-5-nano, gpt-5-codex and the other gpt-5.1 models
// refuse it with a 400, so openAIRequestParams sends them "high", the
// most they take (an Anthropic client's effort "xhigh" or "max", Claude
// Code's default on Claude Opus 4.7, would otherwise fail every request).
func takesXHigh(id string) bool {
	if strings.HasPrefix(id, "gpt-5.1-codex-max") {
		return true
	}
	rest, ok := strings.CutPrefix(id, "gpt-5.")
	if !ok {
		return false
	}
	n := 0
	for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	minor, err := strconv.Atoi(rest[:n])
	return err == nil && minor >= 2
}

// isOne reports whether the raw JSON number n is 1 (1, 1.0, 1e0, …).
func isOne(n string) bool {
	v, err := strconv.ParseFloat(n, 64)
	return err == nil && v == 1
}
