// Package outputformat holds the structured outputs page's subset of JSON
// Schema, which package typed rewrites a schema into and the fake API
// (anthropictest) holds a schema to. The core applies none of it (llm
// sends output_config.format as it came), so it is not among the rules of
// internal/apirules, which the core and the fake both apply.
package outputformat

import "regexp"

// Keywords are the keywords the API takes in output_config.format's schema,
// and StringFormats the string formats.
var (
	Keywords = []string{"$ref", "$defs", "definitions", "type", "properties", "required", "additionalProperties",
		"items", "enum", "const", "anyOf", "allOf", "description", "title", "default", "format", "minItems", "pattern"}
	StringFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
	// BadPattern finds what the API's regular expressions lack:
	// lookaround, backreferences, word boundaries.
	BadPattern = regexp.MustCompile(`\(\?<?[=!]|\\[1-9bBk]`)
)
