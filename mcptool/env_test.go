package mcptool

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// TestServerEnvironment starts a real server process and reads its
// environment back through a tool: the API key and other secrets of this
// process stay out of it unless they are passed on purpose.
func TestServerEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	t.Setenv("HOME", "/home/tester")
	t.Setenv("TERM", "() { :; }") // a bash function: code, not configuration
	t.Setenv("USER", "tester")
	helper := helperEnv + "=server"
	for _, tc := range []struct {
		name string
		env  []string
		want []string // of the variables this test looks at, those present, sorted
	}{
		{"default", []string{helper}, []string{"HOME=/home/tester", helper, "USER=tester"}},
		{"key passed on purpose", []string{helper, "ANTHROPIC_API_KEY=sk-ant-passed"},
			[]string{"ANTHROPIC_API_KEY=sk-ant-passed", "HOME=/home/tester", helper, "USER=tester"}},
		{"an added variable wins over the default", []string{helper, "HOME=/elsewhere"},
			[]string{"HOME=/elsewhere", helper, "USER=tester"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ConnectCommand(t.Context(), exec.Command(os.Args[0], "-test.run=^$"), &Options{Env: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			out, err := s.call(t.Context(), "env", nil)
			if err != nil || out.IsError {
				t.Fatalf("env: %+v, %v", out, err)
			}
			var got []string
			for kv := range strings.SplitSeq(llm.TextOf(out.Content), "\n") {
				name, _, _ := strings.Cut(kv, "=")
				switch name {
				case "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "HOME", "TERM", "USER", helperEnv:
					got = append(got, kv)
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("server environment (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerEnvironmentInvalid checks that a malformed entry is refused
// before anything starts, and that the error does not show its value.
func TestServerEnvironmentInvalid(t *testing.T) {
	for _, entry := range []string{"NOVALUE", "=x", "1X=y", "BAD NAME=sk-secret"} {
		_, err := ConnectCommand(t.Context(), exec.Command(os.Args[0], "-test.run=^$"), &Options{Env: []string{entry}})
		if err == nil {
			t.Errorf("Env %q: no error", entry)
			continue
		}
		if strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("Env %q: error shows the value: %v", entry, err)
		}
	}
}
