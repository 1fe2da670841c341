package caddymodule

import (
	"net/http"
	"strings"

	"github.com/llmgateway/llm_gateway/translate"
)

// upstream is how the gateway speaks to one upstream dialect (provider
// API): its endpoint, its auth and version headers, and how its answers
// are read. There is one implementation per upstream dialect (OpenAI Chat
// Completions, Anthropic Messages, OpenAI Responses), kept in upstreamImpls;
// the request body for an upstream is the call's (call.body), built from
// the one parse of the client's request.
//
// Adding an upstream dialect means one implementation here, one entry in
// upstreamImpls and its key's endpoint in upstreamKey.target.
type upstream interface {
	// dialect is the wire format the upstream speaks.
	dialect() translate.Dialect
	// authorize sets the auth and version headers of a request sent with
	// key uk for a client speaking client; in is the client's request
	// headers (anthropic-beta is forwarded only Anthropic to Anthropic).
	authorize(h http.Header, uk *upstreamKey, client translate.Dialect, in http.Header)
	// readJSON reads a non-streamed 2xx answer (data, valid JSON) once:
	// the error object it is instead of an answer, or the answer in the
	// client's dialect with its usage; an error means the answer is
	// unreadable (the upstream's fault).
	readJSON(c *call, data []byte, o translate.ResponseOptions) passAnswer
	// newStream returns the translator of a streamed answer to the
	// client's dialect, writing client events to w.
	newStream(c *call, w translate.EventWriter) *translate.StreamTranslator
	// countTokensURL is the key's native token-counting endpoint, "" when
	// the upstream has none (the gateway then estimates).
	countTokensURL(uk *upstreamKey) string
}

// upstreamImpls holds the implementation of each upstream dialect, indexed by
// translate.Dialect (pointers: an interface of a pointer costs no
// allocation).
var upstreamImpls = [...]upstream{
	translate.OpenAIChat:        &openAIChatUpstream{upstreamBase{translate.OpenAIChat}},
	translate.AnthropicMessages: &anthropicUpstream{upstreamBase{translate.AnthropicMessages}},
	translate.OpenAIResponses:   &responsesUpstream{upstreamBase{translate.OpenAIResponses}},
}

// upstreamFor returns the implementation of an upstream dialect.
func upstreamFor(d translate.Dialect) upstream { return upstreamImpls[d] }

// upstreamBase holds what every upstream dialect does alike: translate
// dispatches the decoding of answers and streams per dialect.
type upstreamBase struct{ d translate.Dialect }

func (b *upstreamBase) dialect() translate.Dialect { return b.d }

func (b *upstreamBase) readJSON(c *call, data []byte, o translate.ResponseOptions) passAnswer {
	return readAnswer(b.d, c.dialect, data, c.responseModel(b.d), o)
}

func (b *upstreamBase) newStream(c *call, w translate.EventWriter) *translate.StreamTranslator {
	return translate.NewStreamTranslator(b.d, c.dialect, c.responseModel(b.d), w)
}

func (b *upstreamBase) countTokensURL(*upstreamKey) string { return "" }

// openAIChatUpstream speaks OpenAI Chat Completions (Bearer auth).
type openAIChatUpstream struct{ upstreamBase }

func (*openAIChatUpstream) authorize(h http.Header, uk *upstreamKey, _ translate.Dialect, _ http.Header) {
	h.Set("Authorization", uk.authHeader)
}

// responsesUpstream speaks OpenAI Responses (Bearer auth), per OpenAI's
// Responses API reference.
type responsesUpstream struct{ upstreamBase }

func (*responsesUpstream) authorize(h http.Header, uk *upstreamKey, _ translate.Dialect, _ http.Header) {
	h.Set("Authorization", uk.authHeader)
}

// anthropicUpstream speaks Anthropic Messages: x-api-key and
// anthropic-version, per Anthropic's API versioning docs; the client's
// anthropic-beta is forwarded when the client speaks Anthropic too (a beta
// names Anthropic features, meaningless to a translated request).
type anthropicUpstream struct{ upstreamBase }

func (*anthropicUpstream) authorize(h http.Header, uk *upstreamKey, client translate.Dialect, in http.Header) {
	h.Set("X-Api-Key", uk.secret)
	h.Set("Anthropic-Version", anthropicVersion)
	if client == translate.AnthropicMessages {
		if beta := in.Values("Anthropic-Beta"); len(beta) > 0 {
			h["Anthropic-Beta"] = beta
		}
	}
}

// countTokensURL is Anthropic's POST /v1/messages/count_tokens, per the
// Anthropic token counting docs.
func (*anthropicUpstream) countTokensURL(uk *upstreamKey) string {
	if uk.messageURL == "" {
		return ""
	}
	return uk.messageURL + "/count_tokens"
}

// countTokensURL is OpenAI's POST /v1/responses/input_tokens, per
// OpenAI's API reference ("Get input token counts").
func (*responsesUpstream) countTokensURL(uk *upstreamKey) string {
	if uk.responsesURL == "" {
		return ""
	}
	return uk.responsesURL + "/input_tokens"
}

// counter returns the upstream dialect that counts tokens for key uk
// (Anthropic's count_tokens first, else OpenAI's input_tokens) and its
// URL; ok is false when the key has neither.
func (k *upstreamKey) counter() (d translate.Dialect, url string, ok bool) {
	for _, d := range [...]translate.Dialect{translate.AnthropicMessages, translate.OpenAIResponses} {
		if u := upstreamFor(d).countTokensURL(k); u != "" {
			return d, u, true
		}
	}
	return 0, "", false
}

// openAIBase returns the key's OpenAI API root (".../v1"), where OpenAI's
// other endpoints (/embeddings) live: from its Chat Completions endpoint,
// else from its Responses endpoint; "" when the key speaks only Anthropic.
func (k *upstreamKey) openAIBase() string {
	if k.chatURL != "" {
		return strings.TrimSuffix(k.chatURL, "/chat/completions")
	}
	if k.responsesURL != "" {
		return strings.TrimSuffix(k.responsesURL, "/responses")
	}
	return ""
}
