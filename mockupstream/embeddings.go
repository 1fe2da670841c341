package mockupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Embedding sizes of the mock, per the OpenAI embeddings guide's model table
// (text-embedding-3-small and ada-002: 1536; text-embedding-3-large: 3072).
const (
	embeddingDims      = 1536
	embeddingDimsLarge = 3072
	maxEmbeddingInputs = 2048 // inputs per request, as OpenAI allows
)

// embeddingsRequest is an OpenAI embeddings request (per the OpenAI API
// reference, "Create embeddings"): input is a string, an array of strings,
// an array of token ids or an array of token id arrays.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`

	inputs []embeddingInput // decoded by validate
}

// embeddingInput is one input to embed: its text (token ids are written as
// their decimal numbers separated by spaces) and its token count.
type embeddingInput struct {
	text   string
	tokens int
}

// nativeDims is the model's full embedding size.
func nativeDims(model string) int {
	if strings.Contains(model, "large") {
		return embeddingDimsLarge
	}
	return embeddingDims
}

// dims is the size of the answer's vectors.
func (req *embeddingsRequest) dims() int {
	if req.Dimensions != nil {
		return *req.Dimensions
	}
	return nativeDims(req.Model)
}

// validate decodes the input and checks the request the way OpenAI does,
// returning the message of its 400 invalid_request_error, or "".
func (req *embeddingsRequest) validate() string {
	if req.Model == "" {
		return "you must provide a model parameter"
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return "Invalid value for 'encoding_format' = " + req.EncodingFormat + ". Allowed values: 'float' and 'base64'."
	}
	if d := req.Dimensions; d != nil && (*d < 1 || *d > nativeDims(req.Model)) {
		return "Invalid value for 'dimensions' = " + strconv.Itoa(*d) + ". Must be between 1 and " + strconv.Itoa(nativeDims(req.Model)) + "."
	}
	const bad = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
	raw := bytes.TrimSpace(req.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return "'input' is a required property"
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || s == "" {
			return bad
		}
		req.inputs = []embeddingInput{{text: s, tokens: max(tokenCount(s), 1)}}
		return ""
	case '[':
	default:
		return bad
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 || len(items) > maxEmbeddingInputs {
		return bad
	}
	// an array of token ids is one input
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		req.inputs = []embeddingInput{tokenInput(ids)}
		return ""
	}
	req.inputs = make([]embeddingInput, 0, len(items))
	for _, it := range items {
		it = bytes.TrimSpace(it)
		switch {
		case len(it) > 0 && it[0] == '"':
			var s string
			if json.Unmarshal(it, &s) != nil || s == "" {
				return bad
			}
			req.inputs = append(req.inputs, embeddingInput{text: s, tokens: max(tokenCount(s), 1)})
		case len(it) > 0 && it[0] == '[':
			var ids []int64
			if json.Unmarshal(it, &ids) != nil || len(ids) == 0 {
				return bad
			}
			req.inputs = append(req.inputs, tokenInput(ids))
		default:
			return bad
		}
	}
	return ""
}

// tokenInput is the input for an array of token ids.
func tokenInput(ids []int64) embeddingInput {
	b := make([]byte, 0, len(ids)*6)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return embeddingInput{text: string(b), tokens: len(ids)}
}

// Embedding returns the deterministic vector the mock answers for an input
// text: dims float32 values drawn from a generator seeded with the FNV-1a
// hash of model and text, normalized to unit length (as OpenAI's embeddings
// are). A vector for dims below the model's size is the prefix of the full
// one, normalized again, as OpenAI shortens embeddings. The same model,
// text and dims always give the same vector, whatever the key or server.
func Embedding(model, text string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x6d6f636b656d62)) // "mockemb"
	v := make([]float32, max(dims, 0))
	var sum float64
	for i := range v {
		f := rng.Float64()*2 - 1
		v[i] = float32(f)
		sum += f * f
	}
	if sum > 0 {
		n := float32(math.Sqrt(sum))
		for i := range v {
			v[i] /= n
		}
	}
	return v
}

// serveEmbeddings answers POST /v1/embeddings: one embedding per input in
// order, as float arrays or (encoding_format "base64") the base64 of the
// little-endian float32 values; usage counts white-space separated words
// (minimum 1) or token ids.
func (c *call) serveEmbeddings(req *embeddingsRequest) {
	dims := req.dims()
	b64 := req.EncodingFormat == "base64"
	per := dims * 12
	if b64 {
		per = dims*4/3 + 8
	}
	buf := make([]byte, 0, 128+len(req.inputs)*(per+48))
	buf = append(buf, `{"object":"list","data":[`...)
	tokens := 0
	var raw []byte
	for i, in := range req.inputs {
		tokens += in.tokens
		v := Embedding(req.Model, in.text, dims)
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"object":"embedding","index":`...)
		buf = appendInt(buf, int64(i))
		buf = append(buf, `,"embedding":`...)
		if b64 {
			raw = raw[:0]
			for _, f := range v {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
			}
			buf = append(buf, '"')
			buf = base64.StdEncoding.AppendEncode(buf, raw)
			buf = append(buf, '"')
		} else {
			buf = append(buf, '[')
			for j, f := range v {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendFloat(buf, float64(f), 'g', -1, 32)
			}
			buf = append(buf, ']')
		}
		buf = append(buf, '}')
	}
	buf = append(buf, `],"model":`...)
	buf = appendString(buf, req.Model)
	buf = append(buf, `,"usage":{"prompt_tokens":`...)
	buf = appendInt(buf, int64(tokens))
	buf = append(buf, `,"total_tokens":`...)
	buf = appendInt(buf, int64(tokens))
	buf = append(buf, "}}"...)
	c.writeJSON(200, buf)
	c.ks.ok.Add(1)
}
