package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// topKeys returns the top-level member names of a JSON object, in order,
// joined by spaces.
func topKeys(r gjson.Result) string {
	var k []string
	r.ForEach(func(key, _ gjson.Result) bool {
		k = append(k, key.String())
		return true
	})
	return strings.Join(k, " ")
}

// TestReasoningModelSampling: an Anthropic request (as Claude Code sends
// it: temperature, here with top_p and stop_sequences too) translated for
// an OpenAI model carries exactly the sampling parameters that model
// accepts, to Chat Completions and to Responses: reasoning families lose
// temperature and top_p, o3, o4-mini and the gpt-5 reasoning models stop
// too; chat models and unknown ids keep everything.
func TestReasoningModelSampling(t *testing.T) {
	const plain = `{"model":"claude-sonnet-4-5","max_tokens":16000,"temperature":0.2,"top_p":0.9,"stop_sequences":["END"],"messages":[{"role":"user","content":"hi"}]}`
	const thinking = `{"model":"claude-sonnet-4-5","max_tokens":16000,"temperature":0.2,"top_p":0.9,"stop_sequences":["END"],"thinking":{"type":"enabled","budget_tokens":4096},"messages":[{"role":"user","content":"hi"}]}`
	all := "model messages max_completion_tokens temperature top_p stop"
	noSampling := "model messages max_completion_tokens stop"
	none := "model messages max_completion_tokens"
	rsAll := "model instructions input max_output_tokens temperature top_p store"
	rsNone := "model instructions input max_output_tokens store"
	rsReasoning := "model instructions input max_output_tokens reasoning include store"
	for _, c := range []struct {
		model, body string
		chat, rs    string // the top-level members of the Chat and Responses requests
	}{
		{"gpt-4o", plain, all, rsAll},
		{"gpt-4.1", plain, all, rsAll},
		{"gpt-4.1-mini-2025-04-14", plain, all, rsAll},
		{"o1", plain, noSampling, rsNone},
		{"o1-mini", plain, noSampling, rsNone},
		{"o3-mini", plain, noSampling, rsNone},
		{"o3-mini-2025-01-31", plain, noSampling, rsNone},
		{"o3", plain, none, rsNone},
		{"o3-pro", plain, none, rsNone},
		{"o4-mini-2025-04-16", plain, none, rsNone},
		{"openai/o3", plain, none, rsNone},
		{"OpenAI/O3-2025-04-16", plain, none, rsNone},
		{"ft:o4-mini-2025-04-16:acme::abc123", plain, none, rsNone},
		{"gpt-5", plain, none, rsNone},
		{"gpt-5-mini", plain, none, rsNone},
		{"gpt-5-nano-2025-08-07", plain, none, rsNone},
		{"gpt-5-codex", plain, none, rsNone},
		{"azure/gpt-5-pro", plain, none, rsNone},
		// gpt-5-pro takes reasoning effort high only: another is left out
		{"gpt-5-pro-2025-10-06", thinking, none, rsNone},
		{"gpt-5-pro", strings.Replace(thinking, "4096", "30000", 1), "model messages max_completion_tokens reasoning_effort", rsReasoning},
		{"gpt-5.1-codex-max", plain, none, rsNone},
		{"gpt-5.1-chat-latest", plain, none, rsNone},
		{"gpt-5-chat-latest", plain, all, rsAll},
		{"openai/gpt-5-chat", plain, all, rsAll},
		// gpt-5.1 and later take sampling with reasoning effort none, their default
		{"gpt-5.1", plain, "model messages max_completion_tokens temperature top_p", rsAll},
		{"gpt-5.2-2025-12-11", plain, "model messages max_completion_tokens temperature top_p", rsAll},
		{"gpt-5.1", thinking, "model messages max_completion_tokens reasoning_effort", rsReasoning},
		// with thinking: the effort goes to reasoning models, not to chat models
		{"o3", thinking, "model messages max_completion_tokens reasoning_effort", rsReasoning},
		{"gpt-5-chat-latest", thinking, all, rsAll},
		{"gpt-4o", thinking, all, rsAll},
		// unknown ids keep every parameter
		{"my-model", plain, all, rsAll},
		{"deepseek-chat", plain, all, rsAll},
		{"o3x", plain, all, rsAll},
		{"gpt-50", plain, all, rsAll},
		{"gpt-5x", plain, all, rsAll},
		{"", plain, all, rsAll}, // the client's own model, claude-sonnet-4-5
	} {
		chat := mustTranslate(t, AnthropicMessages, OpenAIChat, c.body, c.model)
		if got := topKeys(chat); got != c.chat {
			t.Errorf("%s: Chat members %q, want %q\n%s", c.model, got, c.chat, chat.Raw)
		}
		rs := mustTranslate(t, AnthropicMessages, OpenAIResponses, c.body, c.model)
		if got := topKeys(rs); got != c.rs {
			t.Errorf("%s: Responses members %q, want %q\n%s", c.model, got, c.rs, rs.Raw)
		}
		// what is kept is the client's value
		for _, r := range []gjson.Result{chat, rs} {
			if v := r.Get("temperature"); v.Exists() && v.Raw != "0.2" {
				t.Errorf("%s: temperature %s, want 0.2", c.model, v.Raw)
			}
			if v := r.Get("top_p"); v.Exists() && v.Raw != "0.9" {
				t.Errorf("%s: top_p %s, want 0.9", c.model, v.Raw)
			}
		}
		if v := chat.Get("stop"); v.Exists() && v.Raw != `["END"]` {
			t.Errorf("%s: stop %s", c.model, v.Raw)
		}
	}
}

// TestReasoningModelDefaultTemperature: temperature 1, the one value
// reasoning models accept, is kept as the client wrote it; top_p is left
// out whatever its value.
func TestReasoningModelDefaultTemperature(t *testing.T) {
	for _, temp := range []string{"1", "1.0", "1e0"} {
		for _, from := range []struct {
			d    Dialect
			body string
		}{
			{AnthropicMessages, `{"model":"c","max_tokens":10,"temperature":` + temp + `,"top_p":1,"messages":[{"role":"user","content":"hi"}]}`},
			{OpenAIChat, `{"model":"c","temperature":` + temp + `,"top_p":1,"stop":["x"],"messages":[{"role":"user","content":"hi"}]}`},
			{OpenAIResponses, `{"model":"c","temperature":` + temp + `,"top_p":1,"input":"hi"}`},
		} {
			for _, to := range []Dialect{OpenAIChat, OpenAIResponses} {
				if to == from.d {
					continue
				}
				r := mustTranslate(t, from.d, to, from.body, "o4-mini")
				wantGet(t, r, "temperature", temp)
				wantGet(t, r, "top_p", "")
				wantGet(t, r, "stop", "")
			}
		}
	}
	// other values go, from every client dialect
	r := mustTranslate(t, OpenAIResponses, OpenAIChat, `{"model":"c","temperature":0,"top_p":0.5,"input":"hi"}`, "gpt-5-mini")
	wantGet(t, r, "temperature", "")
	wantGet(t, r, "top_p", "")
	r = mustTranslate(t, OpenAIChat, OpenAIResponses, `{"model":"c","temperature":1.5,"top_p":0.5,"messages":[{"role":"user","content":"hi"}]}`, "o3")
	wantGet(t, r, "temperature", "")
	wantGet(t, r, "top_p", "")
	// gpt-5.1 with reasoning effort none keeps them (Chat client: reasoning_effort none is sent)
	r = mustTranslate(t, OpenAIChat, OpenAIResponses, `{"model":"c","temperature":0.3,"top_p":0.5,"reasoning_effort":"none","messages":[{"role":"user","content":"hi"}]}`, "gpt-5.1")
	wantGet(t, r, "temperature", "0.3")
	wantGet(t, r, "top_p", "0.5")
	wantGet(t, r, "reasoning.effort", `"none"`)
	r = mustTranslate(t, OpenAIChat, OpenAIResponses, `{"model":"c","temperature":0.3,"top_p":0.5,"reasoning_effort":"low","messages":[{"role":"user","content":"hi"}]}`, "gpt-5.1")
	wantGet(t, r, "temperature", "")
	wantGet(t, r, "top_p", "")
}

// TestReasoningModelPassthroughUntouched: a same-dialect request to a
// reasoning model passes byte for byte apart from the model, its sampling
// parameters included (the client chose them for that API).
func TestReasoningModelPassthroughUntouched(t *testing.T) {
	for _, c := range []struct {
		d    Dialect
		body string
	}{
		{OpenAIChat, `{"model":"a","temperature":0.2,"top_p":0.9,"stop":["END"],"presence_penalty":1,"messages":[{"role":"user","content":"hi"}]}`},
		{OpenAIResponses, `{"model":"a","temperature":0.2,"top_p":0.9,"input":"hi"}`},
	} {
		out, err := TranslateRequest(c.d, c.d, []byte(c.body), "o3")
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Replace(c.body, `"model":"a"`, `"model":"o3"`, 1); string(out) != want {
			t.Errorf("%s passthrough: got %s, want %s", c.d, out, want)
		}
	}
}

// TestOpenAIModelFamily: the classifier's matching rules, row by row.
func TestOpenAIModelFamily(t *testing.T) {
	for _, c := range []struct {
		model, family string // "" = not a known family
	}{
		{"o1", "o1"}, {"o1-preview", "o1"}, {"o1-2024-12-17", "o1"},
		{"o3-mini", "o3-mini"}, {"O3-MINI-2025-01-31", "o3-mini"},
		{"o3", "o#"}, {"o4-mini", "o#"}, {"o5", "o#"}, {"openrouter/openai/o3", "o#"},
		{"gpt-5", "gpt-5"}, {"gpt-5.1-codex", "gpt-5"}, {"gpt-5.3", "gpt-5"}, {"gpt-5.2-pro", "gpt-5"},
		{"gpt-5.1", "gpt-5.1"}, {"gpt-5.1-2025-11-13", "gpt-5.1"}, {"gpt-5.4", "gpt-5.4"},
		{"gpt-5-chat-latest", "gpt-5-chat"},
		{"gpt-4o", "gpt-4"}, {"gpt-4.1", "gpt-4"}, {"openai/GPT-4o-mini", "gpt-4"}, {"gpt-3.5-turbo", "gpt-3"}, {"chatgpt-4o-latest", "chatgpt-"},
		{"gpt-40x", "gpt-4"}, {"gpt4o", ""}, {"o", ""}, {"o3x", ""}, {"oz", ""},
		{"gpt-5x", ""}, {"gpt-5.1-2025-11", "gpt-5"}, {"gpt-5.1x", "gpt-5"}, {"claude-opus-4-1", ""}, {"", ""}, {"ft:", ""}, {"/", ""},
	} {
		got := ""
		if f := openAIModelFamily(c.model); f != nil {
			got = f.name
		}
		if got != c.family {
			t.Errorf("openAIModelFamily(%q) = %q, want %q", c.model, got, c.family)
		}
	}
}

// An Anthropic client's effort "xhigh" (Claude Code's default on Claude
// Opus 4.7) or "max" reaches an OpenAI model as "xhigh" only where the
// model takes it (gpt-5.1-codex-max and every model after it); the models
// before refuse it with a 400 and get "high", the most they take. A model
// of no known family keeps "xhigh" (a relay's own model may take it).
func TestXHighEffortPerModel(t *testing.T) {
	const body = `{"model":"claude-opus-4-7","max_tokens":1000,"thinking":{"type":"adaptive"},"output_config":{"effort":"EFFORT"},"messages":[{"role":"user","content":"hi"}]}`
	want := map[string]string{
		"gpt-5":                 "high",
		"gpt-5-mini":            "high",
		"gpt-5-codex":           "high",
		"gpt-5.1":               "high",
		"gpt-5.1-2025-11-13":    "high",
		"gpt-5.1-codex":         "high",
		"gpt-5.1-codex-mini":    "high",
		"o3":                    "high",
		"o4-mini":               "high",
		"openai/o1":             "high",
		"gpt-5.1-codex-max":     "xhigh",
		"gpt-5.2":               "xhigh",
		"gpt-5.2-2025-12-11":    "xhigh",
		"azure/gpt-5.2-codex":   "xhigh",
		"gpt-5.4-mini":          "xhigh",
		"gpt-5.5-pro":           "xhigh",
		"deepseek-reasoner":     "xhigh",
		"some-relay-model-name": "xhigh",
	}
	for _, effort := range []string{"xhigh", "max"} {
		b := strings.Replace(body, "EFFORT", effort, 1)
		for model, w := range want {
			for to, path := range map[Dialect]string{OpenAIChat: "reasoning_effort", OpenAIResponses: "reasoning.effort"} {
				out, err := TranslateRequest(AnthropicMessages, to, []byte(b), model)
				if err != nil {
					t.Fatalf("%s %s to %s: %v", effort, model, to, err)
				}
				if got := gjson.GetBytes(out, path).Str; got != w {
					t.Errorf("effort %s, model %s, to %s: %s = %q, want %q", effort, model, to, path, got, w)
				}
			}
		}
	}
	// an effort below xhigh is never changed
	out, err := TranslateRequest(AnthropicMessages, OpenAIChat, []byte(strings.Replace(body, "EFFORT", "high", 1)), "gpt-5.2")
	if err != nil || gjson.GetBytes(out, "reasoning_effort").Str != "high" {
		t.Errorf("high to gpt-5.2: %v %s", err, out)
	}
}
