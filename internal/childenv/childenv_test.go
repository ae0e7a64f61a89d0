package childenv

import (
	"slices"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want string // the error, "" for none
	}{
		{nil, ""},
		{[]string{"A=1", "_B2=", "lower_case=x=y"}, ""},
		{[]string{"A=1", "NOVALUE"}, `environment entry "NOVALUE" is not NAME=VALUE`},
		{[]string{"=x"}, `environment entry "" is not NAME=VALUE`},
		{[]string{"1X=y"}, `environment entry "1X" is not NAME=VALUE`},
		{[]string{"BAD NAME=sk-secret"}, `environment entry "BAD NAME" is not NAME=VALUE`},
		{[]string{"A-B=1"}, `environment entry "A-B" is not NAME=VALUE`},
	} {
		err := Check(tt.env)
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("Check(%q) = %q, want %q", tt.env, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("Check(%q) = nil, want %q", tt.env, tt.want)
		}
	}
}

// TestDefault checks that a child gets only the listed variables that are
// set, and no bash function.
func TestDefault(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
	t.Setenv(names[0], "/somewhere")
	t.Setenv(names[1], "() { :; }")
	env := Default()
	if !slices.Contains(env, names[0]+"=/somewhere") {
		t.Errorf("Default() = %q, want %s in it", env, names[0])
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) || name == names[1] {
			t.Errorf("Default() passes %s", kv)
		}
	}
}
