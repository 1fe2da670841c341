package keypool

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// readFixture returns a recorded upstream body from /work/shared/fixtures
// when present, else the inline copy of its shape.
func readFixture(path, fallback string) string {
	if b, err := os.ReadFile("/work/shared/fixtures/" + path); err == nil {
		return string(b)
	}
	return fallback
}

func TestClassifyResponse(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	midnight := 12 * time.Hour
	insufficientQuota := readFixture("openai-responses/vercel__error-insufficient-quota.json",
		`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	anthropicModel404 := readFixture("anthropic-messages/extracted/pydantic-ai__count-tokens-404-error/00.response.json",
		`{"error":{"message":"model: claude-does-not-exist","type":"not_found_error"},"request_id":"req_011","type":"error"}`)
	openai400 := readFixture("openai-responses/extracted/pydantic-ai__responses-400-error/00.response.json",
		`{"error":{"code":"decimal_below_min_value","message":"Invalid 'temperature'","param":"temperature","type":"invalid_request_error"}}`)
	openaiParam400 := readFixture("openai-chat/vercel__reasoning-model-legacy-parameter-error.json",
		`{"error":{"message":"Unsupported parameter: 'max_tokens'","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`)
	anthropicReset := now.Add(42 * time.Second).Format(time.RFC3339)

	cases := []struct {
		name     string
		status   int
		h        http.Header
		body     string
		kind     OutcomeKind
		wait     time.Duration // expected RetryAfter; -1: no hint
		source   string
		code     string
		msgParts []string
	}{
		{"openai insufficient_quota (fixture)", 429, nil, insufficientQuota, QuotaExhausted, midnight, "utc-midnight", "insufficient_quota", []string{"quota exhausted", "UTC midnight"}},
		{"openai insufficient_quota ignores a per-minute reset header", 429,
			hdr("x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1s"), insufficientQuota, QuotaExhausted, midnight, "utc-midnight", "insufficient_quota", nil},
		{"openai rpm 429 with body wait", 429,
			hdr("x-ratelimit-limit-requests", "3", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20s"),
			`{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			RateLimited, 20 * time.Second, "body", "rate_limit_exceeded", []string{"rate limited", "20s"}},
		{"openai tpm 429, reset headers only", 429,
			hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s", "x-ratelimit-remaining-requests", "10", "x-ratelimit-reset-requests", "120ms"),
			`{"error":{"message":"Rate limit reached on tokens per min (TPM).","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			RateLimited, 6 * time.Minute, "reset-header", "rate_limit_exceeded", nil},
		{"openai 429 both limits exhausted: the later reset wins", 429,
			hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1.5s", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1m2.5s"),
			`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			RateLimited, time.Minute + 2500*time.Millisecond, "reset-header", "rate_limit_exceeded", nil},
		{"openai retry-after-ms beats the body", 429, hdr("retry-after-ms", "1500", "retry-after", "2"),
			`{"error":{"message":"Please try again in 20s.","type":"requests","code":"rate_limit_exceeded"}}`,
			RateLimited, 1500 * time.Millisecond, "retry-after", "rate_limit_exceeded", nil},
		{"anthropic rate_limit_error with retry-after", 429,
			hdr("retry-after", "42", "anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", anthropicReset),
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage."}}`,
			RateLimited, 42 * time.Second, "retry-after", "rate_limit_error", nil},
		{"anthropic rate_limit_error, reset header only", 429,
			hdr("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", anthropicReset, "anthropic-ratelimit-requests-remaining", "12", "anthropic-ratelimit-requests-reset", now.Add(time.Hour).Format(time.RFC3339)),
			`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 50,000 input tokens per minute."}}`,
			RateLimited, 42 * time.Second, "reset-header", "rate_limit_error", nil},
		{"anthropic overloaded_error 529", 529, nil,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			ServerError, -1, "", "overloaded_error", []string{"upstream overloaded"}},
		{"anthropic 529 with retry-after", 529, hdr("retry-after", "10"),
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			ServerError, 10 * time.Second, "retry-after", "overloaded_error", nil},
		{"anthropic api_error 500", 500, nil,
			`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			ServerError, -1, "", "api_error", []string{"upstream error (Internal Server Error; api_error)"}},
		{"anthropic authentication_error 401", 401, nil,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			InvalidKey, -1, "", "authentication_error", []string{"invalid key"}},
		{"anthropic permission_error 403", 403, nil,
			`{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`,
			Forbidden, -1, "", "permission_error", nil},
		{"anthropic low credit balance is a 400", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`,
			NoCredit, -1, "", "invalid_request_error", []string{"out of credit"}},
		{"anthropic model 404 (fixture)", 404, nil, anthropicModel404, ModelNotFound, -1, "", "not_found_error", []string{"model not found"}},
		{"openai model_not_found 404", 404, nil,
			`{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			ModelNotFound, -1, "", "model_not_found", nil},
		{"ollama model 404 (string error)", 404, nil, `{"error":"model \"llama9\" not found, try pulling it first"}`, ModelNotFound, -1, "", "", nil},
		{"openai unknown path 404", 404, nil,
			`{"error":{"message":"Invalid URL (POST /v1/chat/completionz)","type":"invalid_request_error","param":null,"code":null}}`,
			ClientError, -1, "", "invalid_request_error", nil},
		{"html 404 page", 404, hdr("content-type", "text/html"), `<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>`,
			ClientError, -1, "", "", nil},
		{"html 404 naming a models path", 404, hdr("content-type", "text/html"), `<!DOCTYPE html><html><body><pre>Cannot POST /v1/models/chat</pre></body></html>`,
			ClientError, -1, "", "", nil},
		{"openai invalid key 401", 401, nil,
			`{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			InvalidKey, -1, "", "invalid_api_key", nil},
		{"openai region 403", 403, nil,
			`{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`,
			Forbidden, -1, "", "unsupported_country_region_territory", nil},
		{"deepseek 402 insufficient balance", 402, nil,
			`{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`,
			NoCredit, -1, "", "invalid_request_error", []string{"out of credit"}},
		{"openrouter 402 credits", 402, nil, `{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/credits","code":402}}`,
			NoCredit, -1, "", "402", nil},
		{"groq tpm 429", 429, hdr("retry-after", "13"),
			`{"error":{"message":"Rate limit reached for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_01`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 6000, Used 5879, Requested 1324. Please try again in 12.03s. Visit https://console.groq.com/docs/rate-limits for more information.","type":"tokens","code":"rate_limit_exceeded"}}`,
			RateLimited, 13 * time.Second, "retry-after", "rate_limit_exceeded", nil},
		{"groq tpd 429 names a short wait: transient", 429, nil,
			`{"error":{"message":"Rate limit reached for model ` + "`llama3-70b-8192`" + ` in organization ` + "`org_01`" + ` on tokens per day (TPD): Limit 500000, Used 499825, Requested 1330. Please try again in 3m9.504s.","type":"tokens","code":"rate_limit_exceeded"}}`,
			RateLimited, 3*time.Minute + 9504*time.Millisecond, "body", "rate_limit_exceeded", nil},
		{"groq daily quota with no wait", 429, nil,
			`{"error":{"message":"Rate limit reached for model in organization on requests per day (RPD): Limit 14400, Used 14400, Requested 1.","type":"requests","code":"rate_limit_exceeded"}}`,
			QuotaExhausted, midnight, "utc-midnight", "rate_limit_exceeded", nil},
		{"deepseek-style plain 429", 429, nil, `{"error":{"message":"Rate Limit Reached","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`,
			RateLimited, -1, "", "rate_limit_exceeded", []string{"rate limited (429; rate_limit_exceeded)"}},
		{"mistral 429 top-level message", 429, nil, `{"message":"Requests rate limit exceeded"}`, RateLimited, -1, "", "", nil},
		{"google per-minute quota with RetryInfo", 429, nil,
			`{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. Please retry in 17.587s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"15"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`,
			RateLimited, 17 * time.Second, "body", "429", nil},
		{"google daily quota, long RetryInfo", 429, nil,
			`{"error":{"code":429,"message":"Quota exceeded for metric: generate_content_free_tier_requests, limit: 50","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"36000s"}]}}`,
			QuotaExhausted, 10 * time.Hour, "body", "429", nil},
		{"codex usage_limit_reached with resets_in_seconds", 429, nil,
			`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":1796100000,"resets_in_seconds":7200}}`,
			QuotaExhausted, 2 * time.Hour, "body", "usage_limit_reached", nil},
		{"truncated body still yields the hint", 429, nil,
			`{"error":{"message":"Rate limit reached for requests. Please try again in 1m30s. Visit https://platform.openai.com/account/rate-lim`,
			RateLimited, 90 * time.Second, "body", "", nil},
		{"words in free text are not a quota", 429, nil, `{"error":{"message":"You have used your monthly allocation for this model.","type":"rate_limit_error"}}`,
			RateLimited, -1, "", "rate_limit_error", nil},
		{"429 with an HTTP-date Retry-After", 429, hdr("Retry-After", now.Add(2*time.Minute).Format(http.TimeFormat)), ``,
			RateLimited, 2 * time.Minute, "retry-after", "", nil},
		{"429 empty body", 429, nil, ``, RateLimited, -1, "", "", []string{"rate limited (429)"}},
		{"502 html page from a proxy", 502, hdr("content-type", "text/html"),
			`<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><p>cloudflare</p></body></html>`,
			ServerError, -1, "", "", []string{"upstream error (Bad Gateway)"}},
		{"503 empty body with retry-after", 503, hdr("Retry-After", "30"), ``, ServerError, 30 * time.Second, "retry-after", "", nil},
		{"504 empty body", 504, nil, ``, ServerError, -1, "", "", nil},
		{"openai 500 server_error", 500, nil, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			ServerError, -1, "", "server_error", nil},
		{"500 context_length_exceeded is the request's", 500, nil, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 250000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			ClientError, -1, "", "context_length_exceeded", nil},
		{"503 string_above_max_length is the request's", 503, nil, `{"error":{"message":"too long","type":"string_above_max_length"}}`,
			ClientError, -1, "", "string_above_max_length", nil},
		{"500 invalid_request_error type alone stays the upstream's", 500, nil, `{"error":{"message":"boom","type":"invalid_request_error"}}`,
			ServerError, -1, "", "invalid_request_error", nil},
		{"openrouter 403 moderation flag is the request's", 403, nil, `{"error":{"code":403,"message":"openai/gpt-4o requires moderation on OpenAI. Your input was flagged for \"harassment\". No credits were charged.","metadata":{"reasons":["harassment"],"flagged_input":"...","provider_name":"OpenAI","model_slug":"openai/gpt-4o"}}}`,
			ClientError, -1, "", "403", []string{"input flagged by moderation"}},
		{"403 with reasons only", 403, nil, `{"error":{"code":403,"message":"flagged","metadata":{"reasons":["violence"]}}}`,
			ClientError, -1, "", "403", nil},
		{"403 with other metadata stays forbidden", 403, nil, `{"error":{"code":403,"message":"Key is disabled","metadata":{"provider_name":"OpenAI"}}}`,
			Forbidden, -1, "", "403", nil},
		{"408", 408, nil, ``, Timeout, -1, "", "", nil},
		{"openai 400 (fixture)", 400, nil, openai400, ClientError, -1, "", "decimal_below_min_value", nil},
		{"openai 400 unsupported parameter (fixture)", 400, nil, openaiParam400, ClientError, -1, "", "unsupported_parameter", nil},
		{"413 too large", 413, nil, `{"error":{"message":"Request too large","type":"invalid_request_error"}}`, ClientError, -1, "", "invalid_request_error", nil},
		{"422 unprocessable", 422, nil, `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`, ClientError, -1, "", "", nil},
		{"200", 200, nil, `{"id":"x"}`, Success, -1, "", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.h
			if h == nil {
				h = http.Header{}
			}
			o := ClassifyResponse(c.status, h, []byte(c.body), now)
			if o.Kind != c.kind {
				t.Fatalf("kind %s, want %s (%+v)", o.Kind, c.kind, o)
			}
			if c.wait < 0 {
				if o.HasRetryAfter {
					t.Fatalf("unexpected hint %v from %s", o.RetryAfter, o.Source)
				}
			} else if !o.HasRetryAfter || o.RetryAfter != c.wait || o.Source != c.source {
				t.Fatalf("hint %v %v %q, want %v %q", o.HasRetryAfter, o.RetryAfter, o.Source, c.wait, c.source)
			}
			if o.Code != c.code {
				t.Fatalf("code %q, want %q", o.Code, c.code)
			}
			if o.Status != c.status {
				t.Fatalf("status %d", o.Status)
			}
			for _, part := range c.msgParts {
				if !strings.Contains(o.Message, part) {
					t.Fatalf("message %q lacks %q", o.Message, part)
				}
			}
			if strings.Contains(o.Message, "sk-") || len(o.Message) > 120 {
				t.Fatalf("message not short and secret-free: %q", o.Message)
			}
		})
	}
}

func TestClassifyBodyIsBounded(t *testing.T) {
	body := `{"error":{"message":"` + strings.Repeat("x", 2*MaxClassifyBody) + ` try again in 5s"}}`
	o := ClassifyResponse(429, http.Header{}, []byte(body), time.Now())
	if o.Kind != RateLimited || o.HasRetryAfter {
		t.Fatalf("looked past MaxClassifyBody: %+v", o)
	}
}

func TestParseWait(t *testing.T) {
	cases := map[string]time.Duration{
		"20s": 20 * time.Second, "1m30s": 90 * time.Second, "12.03s.": 12030 * time.Millisecond,
		"120ms": 120 * time.Millisecond, "6m0s": 6 * time.Minute, "1d2h": 26 * time.Hour,
		"20 seconds": 20 * time.Second, "2 minutes and": 2 * time.Minute, "7": 7 * time.Second,
	}
	for in, want := range cases {
		if got, ok := parseWait(in); !ok || got != want {
			t.Errorf("parseWait(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "a few minutes", "soon"} {
		if _, ok := parseWait(in); ok {
			t.Errorf("parseWait(%q) accepted", in)
		}
	}
}

func TestClassifyErrorHostDown(t *testing.T) {
	cases := []struct {
		err      error
		kind     OutcomeKind
		hostDown bool
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, NetworkError, true},
		{&net.DNSError{Err: "no such host", Name: "api.invalid"}, NetworkError, true},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, NetworkError, true},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, NetworkError, true},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, NetworkError, true},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, NetworkError, false},
		{errors.New("unexpected EOF"), NetworkError, false},
	}
	for i, c := range cases {
		o := Classify(0, nil, c.err, nil, time.Now())
		if o.Kind != c.kind || o.HostDown != c.hostDown {
			t.Errorf("case %d %v: %+v", i, c.err, o)
		}
	}
}

func TestNextUTCMidnight(t *testing.T) {
	loc := time.FixedZone("x", 5*3600)
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, loc) // 22:00 UTC the day before
	if got := nextUTCMidnight(now); !got.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("got %v", got)
	}
}

// TestClassifyRequestTooLarge: a 429 saying the request alone exceeds the
// key's limit (OpenAI and Groq "Request too large for <model> in
// organization <org> on <limit>: Limit L, Requested R", R > L) is the
// request's answer (ClientError: no cooldown; Outcome.OverLimit is L and
// OverLimitOrg the organization, so the caller can try a larger key),
// read only past the client's model name (a model name that holds the
// organization's words yields no organization); anything short of that
// stays a rate limit.
func TestClassifyRequestTooLarge(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	body := func(msg string) []byte {
		return []byte(`{"error":{"message":"` + msg + `","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`)
	}
	cases := []struct {
		name, model, msg string
		kind             OutcomeKind
		limit            int64
		org              string
	}{
		{"openai", "gpt-4o", "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 35064. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.", ClientError, 30000, "org-abc"},
		{"openai, model unknown", "", "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30,000, Requested 1,035,064.", ClientError, 30000, "org-abc"},
		{"groq", "llama-3.3-70b-versatile", "Request too large for model `llama-3.3-70b-versatile` in organization `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7000, please reduce your message size and try again.", ClientError, 6000, "org_01"},
		{"model named after the organization", "gpt-4o in organization org-evil", "Request too large for gpt-4o in organization org-evil on tokens per min (TPM): Limit 30000, Requested 35064.", ClientError, 30000, ""},
		{"requested within the limit", "gpt-4o", "Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 20000.", RateLimited, 0, ""},
		{"figures only in the model name", "x in organization o on tokens per min (TPM): Limit 1, Requested 2", "Request too large for x in organization o on tokens per min (TPM): Limit 1, Requested 2", RateLimited, 0, ""},
		{"figures in the model name, none after", "m Limit 1, Requested 2", "Request too large for m Limit 1, Requested 2 in organization org-abc on tokens per min (TPM).", RateLimited, 0, ""},
		{"not the vendor's sentence", "gpt-4o", "Your request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 35064.", RateLimited, 0, ""},
		{"a rate limit", "gpt-4o", "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29990, Requested 35064.", RateLimited, 0, ""},
	}
	for _, c := range cases {
		o := ClassifyResponseFor(c.model, 429, http.Header{}, body(c.msg), now)
		if o.Kind != c.kind || o.Code != "rate_limit_exceeded" {
			t.Errorf("%s: %s %+v, want %s", c.name, o.Kind, o, c.kind)
		}
		if o.OverLimit != c.limit || o.OverLimitOrg != c.org {
			t.Errorf("%s: over limit %d of %q, want %d of %q", c.name, o.OverLimit, o.OverLimitOrg, c.limit, c.org)
		}
		if c.kind == ClientError && o.Message != "request larger than the key's limit (429; rate_limit_exceeded)" {
			t.Errorf("%s: message %q", c.name, o.Message)
		}
	}
}

// TestClassifyGoogleInvalidKey: Google answers a bad key with 400
// INVALID_ARGUMENT whose structured ErrorInfo reason is API_KEY_INVALID
// (its OpenAI-compatible endpoint wraps the error object in an array):
// the key's (InvalidKey, confirmed by a probe), not the request's. Words
// in the message (which may echo the client) are not evidence.
func TestClassifyGoogleInvalidKey(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const obj = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}},{"@type":"type.googleapis.com/google.rpc.LocalizedMessage","locale":"en-US","message":"API key not valid. Please pass a valid API key."}]}}`
	for _, c := range []struct {
		name, body string
		kind       OutcomeKind
	}{
		{"native", obj, InvalidKey},
		{"openai-compatible array", "[" + obj + "\n]", InvalidKey},
		{"expired", strings.Replace(obj, "API_KEY_INVALID", "API_KEY_EXPIRED", 1), InvalidKey},
		{"another reason", strings.Replace(obj, "API_KEY_INVALID", "FIELD_INVALID", 1), ClientError},
		{"the words only", `{"error":{"code":400,"message":"Invalid value API_KEY_INVALID: API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`, ClientError},
		{"reason outside details", `{"error":{"code":400,"message":"x","status":"INVALID_ARGUMENT","reason":"API_KEY_INVALID","metadata":{"reason":"API_KEY_INVALID"}}}`, ClientError},
	} {
		o := ClassifyResponseFor("gemini-2.5-flash", 400, http.Header{}, []byte(c.body), now)
		if o.Kind != c.kind {
			t.Errorf("%s: %s %+v, want %s", c.name, o.Kind, o, c.kind)
		}
	}
}
