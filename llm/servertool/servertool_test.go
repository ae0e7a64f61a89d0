package servertool

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDeclare checks the declarations the API takes: the name defaulted
// from the type, only the fields set, a location typed "approximate".
func TestDeclare(t *testing.T) {
	got, err := Declare(Tool{Type: "tool_search_tool_regex_20251119"},
		Tool{Type: WebSearch, MaxUses: 5, AllowedDomains: []string{"go.dev"}, UserLocation: &UserLocation{City: "Paris", Country: "FR"}},
		Tool{Type: WebFetch, Name: "fetch", BlockedDomains: []string{"example.com"}, MaxContentTokens: 10_000},
		Tool{Type: CodeExecution})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`,
		`{"type":"web_search_20250305","name":"web_search","max_uses":5,"allowed_domains":["go.dev"],"user_location":{"type":"approximate","city":"Paris","country":"FR"}}`,
		`{"type":"web_fetch_20250910","name":"fetch","blocked_domains":["example.com"],"max_content_tokens":10000}`,
		`{"type":"code_execution_20250825","name":"code_execution"}`,
	}
	var gotS []string
	for _, d := range got {
		gotS = append(gotS, string(d))
	}
	if diff := cmp.Diff(want, gotS); diff != "" {
		t.Errorf("declarations (-want +got):\n%s", diff)
	}
}

// TestDeclareErrors checks that a tool the API would refuse is an error
// naming what is wrong, and that no declarations come back with it.
func TestDeclareErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tools []Tool
		want  string
	}{
		{"no type", []Tool{{Type: WebFetch}, {Name: "x"}}, "tool 1 has no type"},
		{"both domain lists", []Tool{{Type: WebSearch, AllowedDomains: []string{"a"}, BlockedDomains: []string{"b"}}}, "not both"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Declare(tt.tools...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || got != nil {
				t.Errorf("Declare = %s, %v; want nil and an error containing %q", got, err, tt.want)
			}
		})
	}
}
