package mockupstream

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// KeyBehavior programs how the mock treats requests presenting one API key.
// The zero value is a healthy, unlimited, full-speed upstream.
//
// In JSON, durations (cooldown, latency) are accepted either as a Go duration
// string ("250ms", "1.5s") or as an integer number of nanoseconds; they are
// written back as nanoseconds.
//
// Order of evaluation for the generating endpoints (chat completions,
// messages, responses, embeddings, replay): cooldown gate, concurrency gate, Status=429 (these three
// answer 429 at once, without taking a slot or restarting the cooldown), RPM
// and TPM (likewise), then
// the request takes an in-flight slot, Latency is waited, then Status (other
// codes), ResetRate, FailRate, and finally replay or the normal answer.
// GET /v1/models applies ModelsStatus, else Status, then Latency, and lists
// Models when set; POST /v1/messages/count_tokens and
// /v1/responses/input_tokens only apply Status.
type KeyBehavior struct {
	// MaxConcurrency > 0 caps the requests in flight for this key; a request
	// beyond the cap gets 429 (rate-limit error body in the path's dialect)
	// with headers Retry-After: 1 and retry-after-ms: 100.
	MaxConcurrency int `json:"max_concurrency,omitempty"`

	// Cooldown > 0 starts a window each time a request of this key finishes
	// (handler return, i.e. after the last stream event). Requests arriving
	// inside the window get 429 with Retry-After = remaining time in whole
	// seconds rounded up (minimum 1) and retry-after-ms = remaining time in
	// milliseconds rounded up (minimum 1).
	Cooldown time.Duration `json:"cooldown,omitempty"`

	// Status > 0 (and not 2xx) makes every request answer with this HTTP status
	// and a realistic error body for it in the path's dialect: 400
	// invalid_request_error, 401 invalid_api_key / authentication_error, 402
	// insufficient_quota / billing_error, 403 forbidden / permission_error, 404
	// model_not_found / not_found_error, 429 rate limit, 500 server_error /
	// api_error, 503 overloaded, 504 timeout, 529 overloaded_error.
	Status int `json:"status,omitempty"`

	// FailRate is the probability 0..1 that a request fails with FailStatus.
	FailRate float64 `json:"fail_rate,omitempty"`

	// FailStatus is the status used by FailRate; 0 means 500.
	FailStatus int `json:"fail_status,omitempty"`

	// ResetRate is the probability 0..1 that the connection is reset without
	// any response (HTTP/1.1: hijacked and closed with SO_LINGER 0, which
	// sends a TCP RST; HTTP/2: the stream is aborted).
	ResetRate float64 `json:"reset_rate,omitempty"`

	// Latency is waited before the first response byte. If the client goes
	// away meanwhile the request is counted as Canceled and nothing is
	// written.
	Latency time.Duration `json:"latency,omitempty"`

	// TokensPerSecond paces streams: the mock waits 1s/TokensPerSecond before
	// each content event (text, reasoning, thinking or tool-argument delta,
	// and each event of a replayed stream). 0 means full speed.
	TokensPerSecond float64 `json:"tokens_per_second,omitempty"`

	// StreamErrorAfter > 0 makes streams fail after this many content events:
	// an in-band error event describing FailStatus (default 500) is sent and
	// the stream ends without its normal terminator (Chat:
	// data: {"error":{...}} and no [DONE]; Messages: event: error and no
	// message_stop; Responses: event: error then response.failed, and no
	// response.completed). Counted as Failed.
	StreamErrorAfter int `json:"stream_error_after,omitempty"`

	// StreamCutAfter > 0 makes streams stop after this many content events:
	// the connection is closed (HTTP/2: the stream is aborted) with no finish
	// event, like a dropped upstream. Counted as Resets.
	StreamCutAfter int `json:"stream_cut_after,omitempty"`

	// StreamHold makes streams stop after StreamHoldAfter content events
	// (0: before the first, after the opening events such as Chat's role
	// chunk or Anthropic's message_start) and hold the response open,
	// writing nothing more, until the client goes away: a stream the
	// client abandons before it ends, whatever the timing. Counted as
	// Canceled.
	StreamHold      bool `json:"stream_hold,omitempty"`
	StreamHoldAfter int  `json:"stream_hold_after,omitempty"`

	// RetryAfter, if set, is sent verbatim as Retry-After on the 429s produced
	// by Status=429 (default "1"). The special value "none" omits the header.
	RetryAfter string `json:"retry_after,omitempty"`

	// ToolTrigger is the text whose presence in the last user message makes
	// the mock answer with a tool call (when the request offers tools);
	// case-insensitive. Default "tool".
	ToolTrigger string `json:"tool_trigger,omitempty"`

	// ToolName, if set and offered by the request, is the tool the mock
	// calls; otherwise it calls the first tool offered.
	ToolName string `json:"tool_name,omitempty"`

	// ToolArguments, if set, is the JSON object text sent as the tool
	// call's arguments; otherwise {"<first string property>":"mock"}.
	ToolArguments string `json:"tool_arguments,omitempty"`

	// Replay, if set, is the path of a recorded fixture file whose bytes are
	// returned verbatim instead of a generated answer (see the replay rules on
	// Server).
	Replay string `json:"replay,omitempty"`

	// ReplayStatus is the HTTP status used for replayed bytes; 0 means 200.
	ReplayStatus int `json:"replay_status,omitempty"`

	// ReplayBody, if non-nil, is returned verbatim instead of a generated
	// answer (it takes precedence over Replay). Content type: ReplayContentType,
	// or guessed from the bytes ("event:"/"data:" prefix means
	// text/event-stream, anything else application/json).
	ReplayBody []byte `json:"-"`

	// ReplayContentType is the Content-Type for ReplayBody; event-stream
	// content types are written event by event with a flush after each.
	ReplayContentType string `json:"-"`

	// Models, when non-nil, is the model list GET /v1/models answers for
	// this key, in this order (empty: an empty list), instead of the
	// server's Model and Models. A request with an anthropic-version
	// header gets the Anthropic list shape ({"data":[{"type":"model",
	// "id","display_name","created_at"}],"has_more":false,"first_id",
	// "last_id"}), others the OpenAI one ({"object":"list","data":[{"id",
	// "object":"model","created","owned_by"}]}).
	Models []string `json:"models,omitempty"`

	// Vendor, when set, makes the key behave like one vendor's API beyond
	// the common rules. VendorDeepSeek ("deepseek"): Chat answers always
	// start with reasoning in reasoning_content, and an assistant message
	// with tool_calls but no reasoning_content is refused with DeepSeek's
	// 400 (see ValidateDeepSeekRequest). Every key is checked on
	// /v1/messages by ValidateAnthropicRequest, whatever its Vendor.
	Vendor string `json:"vendor,omitempty"`

	// RPM > 0 limits the key to that many requests in any 60 s (an exact
	// sliding window), as a vendor's requests-per-minute limit; TPM > 0
	// to that many input tokens (the prompt as the mock counts it, charged
	// when the request arrives) in any 60 s. A request beyond either gets
	// the vendor's 429 (rate-limit error body in the path's dialect) with
	// Retry-After and retry-after-ms saying when it would fit, and is not
	// charged. While either is set, every answer of the generating
	// endpoints (success or error, streamed or not) carries both vendors'
	// rate-limit headers: x-ratelimit-{limit,remaining,reset}-
	// {requests,tokens} (reset a duration, "59.95s") and
	// anthropic-ratelimit-{requests,tokens,input-tokens}-
	// {limit,remaining,reset} (reset an RFC 3339 time, rounded up to the
	// second); reset is when the budget is full again. They are checked
	// after the cooldown, concurrency and Status=429 gates.
	RPM int   `json:"rpm,omitempty"`
	TPM int64 `json:"tpm,omitempty"`

	// Organization is the organization the vendors' rate-limit messages
	// name for this key; default "org-mock". A request whose input tokens
	// alone exceed TPM gets the vendor's own answer for it: OpenAI's
	// (and Groq's) 429 "Request too large for <model> in organization
	// <org> on tokens per min (TPM): Limit <TPM>, Requested <tokens>. ..."
	// (type "tokens", code rate_limit_exceeded, no Retry-After) on the
	// OpenAI paths; Anthropic's 429 rate_limit_error "This request would
	// exceed the rate limit for your organization (<org>) of <TPM> input
	// tokens per minute. ..." with the rate-limit headers and Retry-After
	// on /v1/messages.
	Organization string `json:"organization,omitempty"`

	// ModelsStatus > 0 (and not 2xx) makes GET /v1/models (and
	// /v1/models/{id}) answer with this status while the generating
	// endpoints keep working, e.g. 404 for an upstream without a models
	// list. It takes precedence over Status for those paths.
	ModelsStatus int `json:"models_status,omitempty"`

	// Credit is what the vendors' balance endpoints report for the key
	// (GET /api/v1/key as OpenRouter, GET /user/balance as DeepSeek; see
	// balance.go). Nil: no limit and nothing used.
	Credit *Credit `json:"credit,omitempty"`
}

// Config is the static configuration of a Server. Its JSON form is
// {"default":{...},"keys":{"<api key>":{...}},"seed":1,"model":"mock-gpt",
// "models":["..."],"replay_dir":"/path"}.
type Config struct {
	// Default applies to every key that has no entry in Keys.
	Default KeyBehavior `json:"default,omitempty"`

	// Keys holds per-API-key behaviors, keyed by the raw key string.
	Keys map[string]KeyBehavior `json:"keys,omitempty"`

	// Seed seeds the random failure and reset injection. When non-zero the
	// sequence of outcomes is deterministic per key (each key has its own
	// generator derived from Seed and the key). Zero means a time-based seed.
	Seed int64 `json:"seed,omitempty"`

	// Model is the model listed first by GET /v1/models and used in answers
	// when a request names no model; default "mock-gpt".
	Model string `json:"model,omitempty"`

	// Models are further model ids listed by GET /v1/models.
	Models []string `json:"models,omitempty"`

	// ReplayDir, if set, confines replay paths given in requests (header
	// X-Mock-Replay, POST /v1/replay) and in Replay to files inside this
	// directory. Leave it empty only where clients are trusted, because
	// otherwise a client can read any file the process can read.
	ReplayDir string `json:"replay_dir,omitempty"`
}

// DefaultModel is the model name used when Config.Model is empty.
const DefaultModel = "mock-gpt"

// UnmarshalJSON implements json.Unmarshaler, accepting durations as strings
// ("250ms") or integer nanoseconds.
func (b *KeyBehavior) UnmarshalJSON(data []byte) error {
	type plain KeyBehavior
	aux := struct {
		*plain
		Cooldown json.RawMessage `json:"cooldown,omitempty"`
		Latency  json.RawMessage `json:"latency,omitempty"`
	}{plain: (*plain)(b)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	var err error
	if b.Cooldown, err = parseDuration(aux.Cooldown, b.Cooldown); err != nil {
		return fmt.Errorf("cooldown: %w", err)
	}
	if b.Latency, err = parseDuration(aux.Latency, b.Latency); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	return nil
}

func parseDuration(raw json.RawMessage, def time.Duration) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return def, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		if s == "" {
			return 0, nil
		}
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(raw), 64)
		if ferr != nil {
			return 0, err
		}
		return time.Duration(f), nil
	}
	return time.Duration(n), nil
}

// failStatus returns the status used for injected failures.
func (b *KeyBehavior) failStatus() int {
	if b.FailStatus > 0 {
		return b.FailStatus
	}
	return 500
}

// statusError reports whether Status programs an error answer.
func (b *KeyBehavior) statusError() bool {
	return b.Status > 0 && (b.Status < 200 || b.Status > 299)
}

// behaviors is an immutable snapshot of the programmed behaviors.
type behaviors struct {
	def  KeyBehavior
	keys map[string]*KeyBehavior
}

// get returns the behavior for key; the result must not be modified.
func (t *behaviors) get(key string) *KeyBehavior {
	if b, ok := t.keys[key]; ok {
		return b
	}
	return &t.def
}
