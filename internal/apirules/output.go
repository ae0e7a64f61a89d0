package apirules

import "regexp"

// The structured outputs page's subset of JSON Schema: the keywords the API
// takes in output_config.format's schema, and the string formats. The fake
// API (anthropictest) rejects a schema outside it, and package typed
// rewrites a schema into it.
var (
	FormatKeywords = []string{"$ref", "$defs", "definitions", "type", "properties", "required", "additionalProperties",
		"items", "enum", "const", "anyOf", "allOf", "description", "title", "default", "format", "minItems", "pattern"}
	StringFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
	// BadPattern finds what the API's regular expressions lack:
	// lookaround, backreferences, word boundaries.
	BadPattern = regexp.MustCompile(`\(\?<?[=!]|\\[1-9bBk]`)
)
