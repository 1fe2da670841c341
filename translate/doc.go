// Package translate converts LLM API traffic between three wire dialects:
// OpenAI Chat Completions (POST /v1/chat/completions), Anthropic Messages
// (POST /v1/messages) and OpenAI Responses (POST /v1/responses).
//
// Every dialect has a decoder into one canonical form and an encoder out of
// it, for requests, whole responses and stream events, so N dialects need 2N
// converters. When the client and upstream dialects match, bodies and stream
// events pass through byte for byte, except for the top-level "model" field.
//
// The package works on raw bytes: it reads JSON with gjson, edits it with
// sjson and builds new documents by appending to byte slices with proper JSON
// string escaping. It imports nothing beyond the standard library, gjson and
// sjson, and keeps no state between calls apart from a StreamTranslator's own
// per-stream state.
//
// The mapping rules (field tables, stop reasons, usage formulas, streaming
// recipes) follow the vendors' published API references and SDKs; the
// gateway's MAPPING.md cites them field by field, and
// docs/translation-dropped-fields.md lists the fields that have no
// counterpart and are therefore dropped.
package translate
