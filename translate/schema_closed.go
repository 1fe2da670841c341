package translate

import "github.com/tidwall/gjson"

// closedObjects returns the JSON Schema raw with "additionalProperties":false
// added to every object schema that lists its properties and does not say
// otherwise about others, for Anthropic's
// structured outputs (output_config.format), which take only closed object
// schemas, as OpenAI's strict mode does (an open one is refused; gproxy
// pull request 91, GoModel pull request 963). Object schemas are found where
// JSON Schema nests schemas (properties, patternProperties, $defs,
// definitions, items, prefixItems, anyOf, oneOf, allOf, not, if, then, else,
// contains, additionalProperties), so a property merely named "properties"
// or "type" is not taken for a keyword. An explicit additionalProperties is
// kept as sent, and so is an object schema without "properties" (closed,
// it would admit only {}). raw that is not a JSON object is returned
// unchanged, and so is one larger than closedMaxBytes. Schemas nested more
// than closedMaxDepth deep are copied as sent below that depth: each level
// rescans the bytes below it, so the work is bounded by depth times size.
func closedObjects(raw string) string {
	if len(raw) > closedMaxBytes {
		return raw
	}
	r := gjson.Parse(raw)
	if !r.IsObject() {
		return raw
	}
	return string(appendClosed(make([]byte, 0, len(raw)+64), r, 0))
}

// closedMaxBytes and closedMaxDepth bound closedObjects' work (real output
// schemas are a few KiB and a few levels deep).
const (
	closedMaxBytes = 1 << 20
	closedMaxDepth = 32
)

// appendClosed appends schema s (an object) at nesting depth d with its
// object schemas closed.
func appendClosed(b []byte, s gjson.Result, d int) []byte {
	if d >= closedMaxDepth {
		return append(b, s.Raw...)
	}
	d++
	b = append(b, '{')
	first, isObject, hasAP := true, false, false
	s.ForEach(func(k, v gjson.Result) bool {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, k.Raw...)
		b = append(b, ':')
		switch k.Str {
		case "properties":
			isObject = true
			b = appendSchemaMap(b, v, d)
		case "patternProperties", "$defs", "definitions":
			b = appendSchemaMap(b, v, d)
		case "additionalProperties":
			hasAP = true
			b = appendSchema(b, v, d)
		case "items", "not", "if", "then", "else", "contains":
			b = appendSchema(b, v, d)
		case "prefixItems", "anyOf", "oneOf", "allOf":
			b = appendSchemaList(b, v, d)
		default:
			b = append(b, v.Raw...)
		}
		return true
	})
	if isObject && !hasAP {
		if !first {
			b = append(b, ',')
		}
		b = append(b, `"additionalProperties":false`...)
	}
	return append(b, '}')
}

// appendSchema appends v closed when it is a schema object, else as sent
// (true, false, or a list of schemas for items in older drafts).
func appendSchema(b []byte, v gjson.Result, d int) []byte {
	if d >= closedMaxDepth {
		return append(b, v.Raw...)
	}
	switch {
	case v.IsObject():
		return appendClosed(b, v, d)
	case v.IsArray():
		return appendSchemaList(b, v, d+1)
	}
	return append(b, v.Raw...)
}

// appendSchemaList appends a list of schemas, each closed.
func appendSchemaList(b []byte, v gjson.Result, d int) []byte {
	if !v.IsArray() {
		return append(b, v.Raw...)
	}
	b = append(b, '[')
	i := 0
	v.ForEach(func(_, e gjson.Result) bool {
		if i > 0 {
			b = append(b, ',')
		}
		i++
		b = appendSchema(b, e, d)
		return true
	})
	return append(b, ']')
}

// appendSchemaMap appends an object of named schemas, each closed.
func appendSchemaMap(b []byte, v gjson.Result, d int) []byte {
	if !v.IsObject() {
		return append(b, v.Raw...)
	}
	b = append(b, '{')
	first := true
	v.ForEach(func(k, e gjson.Result) bool {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, k.Raw...)
		b = append(b, ':')
		b = appendSchema(b, e, d)
		return true
	})
	return append(b, '}')
}
