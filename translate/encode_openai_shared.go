package translate

import "strconv"

// Writers shared by the two OpenAI request encoders (Chat Completions and
// Responses), which differ only in nesting.

// appendOpenAITools appends the function tools of r, its tool_choice and
// parallel_tool_calls (nothing when r has no tools). nested is the Chat
// Completions shape, {"type":"function","function":{name,description,
// parameters,strict}} and a named choice {"type":"function","function":
// {"name"}}; otherwise the Responses shape, with the members at the top
// of the tool and of the choice, and "strict":false written when the
// client did not set it (Responses makes function tools strict by default,
// which refuses most schemas written for Chat or Messages).
func appendOpenAITools(b []byte, r *canonRequest, nested bool) []byte {
	if len(r.tools) == 0 {
		return b
	}
	b = append(b, `,"tools":[`...)
	for i := range r.tools {
		t := &r.tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function",`...)
		if nested {
			b = append(b, `"function":{`...)
		}
		b = append(b, `"name":`...)
		b = appendString(b, t.name)
		if t.description != "" {
			b = appendStrField(b, "description", t.description)
		}
		b = appendRawField(b, "parameters", normSchema(t.schema))
		switch {
		case t.strict != "":
			b = appendRawField(b, "strict", t.strict)
		case !nested:
			b = appendRawField(b, "strict", "false")
		}
		if nested {
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	switch r.toolChoice {
	case "auto", "none":
		b = appendStrField(b, "tool_choice", r.toolChoice)
	case "any":
		b = appendStrField(b, "tool_choice", "required")
	case "tool":
		b = append(b, `,"tool_choice":{"type":"function",`...)
		if nested {
			b = append(b, `"function":{`...)
		}
		b = append(b, `"name":`...)
		b = appendString(b, r.toolChoiceName)
		if nested {
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if r.parallel != nil {
		b = appendRawField(b, "parallel_tool_calls", strconv.FormatBool(*r.parallel))
	}
	return b
}

// appendJSONSchemaMembers appends the members of an OpenAI json_schema
// format, name (default "output"), schema and strict, after a '{' or
// another member.
func appendJSONSchemaMembers(b []byte, r *canonRequest) []byte {
	b = appendStrField(b, "name", firstNonEmpty(r.formatName, "output"))
	if r.formatSchema != "" {
		b = appendRawField(b, "schema", r.formatSchema)
	}
	if r.formatStrict != "" {
		b = appendRawField(b, "strict", r.formatStrict)
	}
	return b
}
