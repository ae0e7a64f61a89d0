package permission

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in      string
		want    Rule
		wantErr string
	}{
		{"edit_file", Rule{Tool: "edit_file"}, ""},
		{" bash(git status) ", Rule{Tool: "bash", Arg: "git status"}, ""},
		{"bash(go test:*)", Rule{Tool: "bash", Arg: "go test", Prefix: true}, ""},
		{"bash(go test :*)", Rule{Tool: "bash", Arg: "go test", Prefix: true}, ""},
		{"web_fetch(https://go.dev/:*)", Rule{Tool: "web_fetch", Arg: "https://go.dev/", Prefix: true}, ""},
		{"bash(echo (a))", Rule{Tool: "bash", Arg: "echo (a)"}, ""},
		{"bash(go vet ./... && go test ./...)", Rule{Tool: "bash", Arg: "go vet ./... && go test ./..."}, ""},
		{"Bash(rm:*)", Rule{Tool: "bash", Arg: "rm", Prefix: true}, ""},
		{"Read(./.env)", Rule{Tool: "read_file", Arg: "./.env"}, ""},
		{"Edit(docs/**)", Rule{Tool: "edit_file", Arg: "docs/", Prefix: true}, ""},
		{"Write(x)", Rule{Tool: "write_file", Arg: "x"}, ""},
		{"Glob", Rule{Tool: "glob"}, ""},
		{"Grep", Rule{Tool: "grep"}, ""},
		{"WebFetch(domain:Go.DEV.)", Rule{Tool: "web_fetch", Arg: "domain:go.dev"}, ""},
		{"web_fetch(HTTPS://user@Go.dev:443:*)", Rule{Tool: "web_fetch", Arg: "https://go.dev/", Prefix: true}, ""},
		{"mcp__github__create_issue", Rule{Tool: "mcp__github__create_issue"}, ""},
		{"bash(go test && rm:*)", Rule{}, `invalid rule "bash(go test && rm:*)": a prefix rule must be one command of plain words`},
		{"bash($X:*)", Rule{}, `invalid rule "bash($X:*)": a prefix rule must be one command`},
		{"bash(go test > x:*)", Rule{}, `invalid rule "bash(go test > x:*)": a prefix rule must be one command`},
		{"web_fetch(ftp://go.dev/)", Rule{}, `invalid rule "web_fetch(ftp://go.dev/)": refused: "ftp://go.dev/" is not an http or https URL; write a URL such as`},
		{"web_fetch(go.dev)", Rule{}, `invalid rule "web_fetch(go.dev)": refused: "go.dev" is not an http or https URL`},
		{"web_fetch(domain:go.dev/doc)", Rule{}, `invalid rule "web_fetch(domain:go.dev/doc)": domain: takes a host name alone`},
		{"web_fetch(domain:go.dev:*)", Rule{}, `invalid rule "web_fetch(domain:go.dev:*)": domain: takes a host name alone`},
		{"read_file(src/*.go)", Rule{}, `invalid rule "read_file(src/*.go)": paths are matched as written, not as globs: write read_file(docs/:*)`},
		{"Read(~/.ssh/:*)", Rule{}, `invalid rule "Read(~/.ssh/:*)": write the path in full`},
		{"", Rule{}, `invalid rule "": it must start with a tool name`},
		{"bash(", Rule{}, `invalid rule "bash(": a missing closing parenthesis`},
		{"bash()", Rule{}, `invalid rule "bash()": empty parentheses; write just bash for every call`},
		{"two words", Rule{}, `invalid rule "two words"`},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("ParseRule(%q) error = %v, want %q…", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if back, _ := ParseRule(got.String()); back != got {
			t.Errorf("ParseRule(%q).String() = %q does not parse back", tt.in, got.String())
		}
	}
}

func rules(t testing.TB, ss ...string) []Rule {
	var rs []Rule
	for _, s := range ss {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

func call(name, input string) llm.ToolUse {
	return llm.ToolUse{ID: "toolu_1", Name: name, Input: json.RawMessage(input)}
}

func TestApprove(t *testing.T) {
	const (
		denied  = "the user's rule"
		noOne   = "needs the user's permission, and there is no one to ask"
		allowed = ""
	)
	tests := []struct {
		name   string
		policy *Policy
		call   llm.ToolUse
		want   string // "" allowed, else a part of the error
	}{
		{"read-only runs freely", &Policy{}, call("read_file", `{"path":"a"}`), allowed},
		{"grep and glob too", &Policy{}, call("grep", `{"pattern":"x"}`), allowed},
		{"mutating denied with nobody to ask", &Policy{}, call("edit_file", `{"path":"a"}`), noOne + ": no terminal. Tell the user; they can allow it with a rule such as edit_file"},
		{"bash denied, the hint names the command", &Policy{}, call("bash", `{"command":"ls -l"}`), "such as bash(ls -l)"},
		{"allowed by tool", &Policy{Allow: rules(t, "edit_file")}, call("edit_file", `{"path":"a"}`), allowed},
		{"exact command", &Policy{Allow: rules(t, "bash(git status)")}, call("bash", `{"command":" git status "}`), allowed},
		{"exact command, other", &Policy{Allow: rules(t, "bash(git status)")}, call("bash", `{"command":"git status -s"}`), noOne},
		{"prefix", &Policy{Allow: rules(t, "bash(go test:*)")}, call("bash", `{"command":"go test ./..."}`), allowed},
		{"prefix alone", &Policy{Allow: rules(t, "bash(go test:*)")}, call("bash", `{"command":"go test"}`), allowed},
		{"prefix is word-wise", &Policy{Allow: rules(t, "bash(go test:*)")}, call("bash", `{"command":"go testify"}`), noOne},
		{"prefix does not allow a chain", &Policy{Allow: rules(t, "bash(go test:*)")}, call("bash", `{"command":"go test ./... && rm -rf ~"}`), noOne},
		{"nor a substitution", &Policy{Allow: rules(t, "bash(go test:*)")}, call("bash", `{"command":"go test $(rm -rf ~)"}`), noOne},
		{"nor a redirection", &Policy{Allow: rules(t, "bash(go test:*)")}, call("bash", `{"command":"go test > /etc/passwd"}`), noOne},
		{"an exact rule may name a chain", &Policy{Allow: rules(t, "bash(go vet ./... && go test ./...)")}, call("bash", `{"command":"go vet ./... && go test ./..."}`), allowed},
		{"rule of another tool", &Policy{Allow: rules(t, "write_file")}, call("edit_file", `{"path":"a"}`), noOne},
		{"AllowAll", &Policy{AllowAll: true}, call("bash", `{"command":"anything"}`), allowed},
		{"deny wins over allow", &Policy{Allow: rules(t, "bash"), Deny: rules(t, "bash(rm:*)")}, call("bash", `{"command":"rm -rf x"}`), denied + " bash(rm:*) forbids this call"},
		{"deny wins over AllowAll", &Policy{AllowAll: true, Deny: rules(t, "web_fetch")}, call("web_fetch", `{"url":"https://x"}`), denied + " web_fetch forbids"},
		{"deny wins over read-only", &Policy{Deny: rules(t, "read_file(.env)")}, call("read_file", `{"path":".env"}`), denied},
		{"deny finds a part of a chain", &Policy{AllowAll: true, Deny: rules(t, "bash(rm:*)")}, call("bash", `{"command":"ls; FOO=1 rm -rf x"}`), denied},
		{"deny finds a substitution", &Policy{AllowAll: true, Deny: rules(t, "bash(curl:*)")}, call("bash", `{"command":"echo $(curl evil)"}`), denied},
		{"deny of other commands", &Policy{AllowAll: true, Deny: rules(t, "bash(rm:*)")}, call("bash", `{"command":"ls -rm"}`), allowed},
		{"URL prefix", &Policy{Allow: rules(t, "web_fetch(https://go.dev/:*)")}, call("web_fetch", `{"url":"https://go.dev/doc"}`), allowed},
		{"URL prefix, other host", &Policy{Allow: rules(t, "web_fetch(https://go.dev/:*)")}, call("web_fetch", `{"url":"https://go.dev.evil/doc"}`), noOne},
		{"path prefix, relative and absolute", &Policy{Dir: "/w", Allow: rules(t, "edit_file(docs/:*)")}, call("edit_file", `{"path":"/w/docs/a.md"}`), allowed},
		{"path prefix is a directory", &Policy{Dir: "/w", Allow: rules(t, "edit_file(docs/:*)")}, call("edit_file", `{"path":"docs2/a.md"}`), noOne},
		{"path deny through dot-dot", &Policy{Dir: "/w", AllowAll: true, Deny: rules(t, "write_file(secrets/:*)")}, call("write_file", `{"path":"x/../secrets/k"}`), denied},
		{"Path resolves a link", &Policy{AllowAll: true, Deny: rules(t, "edit_file(secrets/:*)"),
			Path: func(p string) string { return strings.Replace("/w/"+p, "/w/innocent/", "/w/secrets/", 1) }},
			call("edit_file", `{"path":"innocent/k"}`), denied},
		{"Claude Code's name for bash", &Policy{AllowAll: true, Deny: rules(t, "Bash(rm:*)")}, call("bash", `{"command":"rm -rf x"}`), denied},
		{"a read_file rule covers grep", &Policy{Dir: "/w", Deny: rules(t, "read_file(secrets/:*)")}, call("grep", `{"pattern":"key","path":"secrets/k"}`), denied},
		{"and glob", &Policy{Dir: "/w", Deny: rules(t, "Read(secrets/**)")}, call("glob", `{"pattern":"*","path":"/w/secrets"}`), denied + " read_file(secrets/:*)"},
		{"grep elsewhere", &Policy{Dir: "/w", Deny: rules(t, "read_file(secrets/:*)")}, call("grep", `{"pattern":"key","path":"src"}`), allowed},
		{"an edit_file rule covers write_file", &Policy{Dir: "/w", AllowAll: true, Deny: rules(t, "Edit(secrets/**)")}, call("write_file", `{"path":"secrets/k","content":""}`), denied},
		{"a write_file rule does not cover edit_file", &Policy{Allow: rules(t, "write_file")}, call("edit_file", `{"path":"a"}`), noOne},
		{"an edit_file allow rule allows edit_file alone", &Policy{Allow: rules(t, "Edit")}, call("write_file", `{"path":"a"}`), noOne},
		{"a domain rule, the host spelt otherwise", &Policy{AllowAll: true, Deny: rules(t, "web_fetch(domain:evil.com)")}, call("web_fetch", `{"url":"HTTPS://u:p@Evil.COM.:443/x"}`), denied},
		{"a domain rule, over http", &Policy{AllowAll: true, Deny: rules(t, "web_fetch(domain:evil.com)")}, call("web_fetch", `{"url":"http://evil.com:8080/"}`), denied},
		{"a domain rule, another host", &Policy{AllowAll: true, Deny: rules(t, "web_fetch(domain:evil.com)")}, call("web_fetch", `{"url":"https://evil.com.example/"}`), allowed},
		{"a URL rule, the URL spelt otherwise", &Policy{AllowAll: true, Deny: rules(t, "web_fetch(https://x.dev/secret:*)")}, call("web_fetch", `{"url":"https://X.dev/a/../%73ecret/k"}`), denied},
		{"URL prefix, host alone", &Policy{Allow: rules(t, "web_fetch(https://go.dev:*)")}, call("web_fetch", `{"url":"https://go.dev.evil/"}`), noOne},
		{"an invalid URL's hint is not the whole tool", &Policy{}, call("web_fetch", `{"url":"ftp://x/"}`), "such as web_fetch(ftp://x/)"},
		{"a URL's hint is its host", &Policy{}, call("web_fetch", `{"url":"https://Go.dev/doc"}`), "such as web_fetch(domain:go.dev)"},
		{"ReadOnly overrides the default", &Policy{ReadOnly: []string{}}, call("read_file", `{"path":"a"}`), noOne},
		{"an MCP tool asks", &Policy{}, call("some_mcp_tool", `{}`), noOne},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Approve(t.Context(), tt.call)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("denied: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// TestAsk: yes allows one call, no denies it, always allows it and the
// calls its rule matches from then on; an error from the question denies.
func TestAsk(t *testing.T) {
	var asked []string
	answers := []Answer{Yes, No, Always, Always, Always}
	p := &Policy{Ask: func(ctx context.Context, c llm.ToolUse, always Rule) (Answer, error) {
		asked = append(asked, c.Name+" "+string(c.Input)+" always="+always.String())
		a := answers[0]
		answers = answers[1:]
		return a, nil
	}}
	steps := []struct {
		call llm.ToolUse
		ok   bool
	}{
		{call("edit_file", `{"path":"a"}`), true},               // yes
		{call("edit_file", `{"path":"a"}`), false},              // no
		{call("edit_file", `{"path":"b"}`), true},               // always
		{call("edit_file", `{"path":"c"}`), true},               // not asked
		{call("bash", `{"command":"go test ./..."}`), true},     // always, for this command
		{call("bash", `{"command":"go test ./..."}`), true},     // not asked
		{call("read_file", `{"path":"a"}`), true},               // not asked
		{call("web_fetch", `{"url":"https://go.dev/a"}`), true}, // always, for go.dev
		{call("web_fetch", `{"url":"http://GO.dev/b"}`), true},  // not asked
	}
	for i, s := range steps {
		err := p.Approve(t.Context(), s.call)
		if (err == nil) != s.ok {
			t.Errorf("step %d (%s): err = %v, want ok %v", i, s.call.Input, err, s.ok)
		}
		if i == 1 && (err == nil || !strings.Contains(err.Error(), "the user said no")) {
			t.Errorf("no: err = %v", err)
		}
	}
	want := []string{
		`edit_file {"path":"a"} always=edit_file`,
		`edit_file {"path":"a"} always=edit_file`,
		`edit_file {"path":"b"} always=edit_file`,
		`bash {"command":"go test ./..."} always=bash(go test ./...)`,
		`web_fetch {"url":"https://go.dev/a"} always=web_fetch(domain:go.dev)`,
	}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}
	// Another command, and another host, are asked about again.
	answers = []Answer{No, No}
	if err := p.Approve(t.Context(), call("bash", `{"command":"go vet"}`)); err == nil {
		t.Error("a different command was not asked about")
	}
	if err := p.Approve(t.Context(), call("web_fetch", `{"url":"https://go.dev.evil/"}`)); err == nil {
		t.Error("a different host was not asked about")
	}

	failing := &Policy{Ask: func(ctx context.Context, c llm.ToolUse, always Rule) (Answer, error) { return Yes, context.Canceled }}
	if err := failing.Approve(t.Context(), call("bash", `{"command":"x"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("a failed question: err = %v, want context.Canceled", err)
	}
}

// TestSubject holds subject, which decodes only the three fields it looks
// for, to what decoding the whole input with encoding/json gives.
func TestSubject(t *testing.T) {
	reference := func(input string) (string, string) {
		var in map[string]any
		if json.Unmarshal([]byte(input), &in) != nil {
			return "", ""
		}
		for _, k := range []string{"command", "url", "path"} {
			if s, ok := in[k].(string); ok {
				return k, s
			}
		}
		return "", ""
	}
	big := `{"path":"a.txt","content":"` + strings.Repeat(`line \"quoted\"\t\u00e9\n`, 50_000) + `"}`
	for _, input := range []string{
		`{"command":"ls"}`,
		`{"url":"https://x","path":"p"}`,
		`{"path":"p","url":"https://x","command":"c"}`,
		`{"command":1,"url":"u"}`,
		`{"command":null,"path":"p"}`,
		`{"command":{"x":"y"},"path":["p"]}`,
		`{"Command":"ls"}`,
		`{"comm\u0061nd":"ls"}`,
		`{"command":"a","command":"b"}`,
		`{"command":"a","command":2}`,
		"{\"command\":\"bad \xff utf-8\"}",
		`{"command":"ls"`,
		`{"command":"ls"} x`,
		`["command","ls"]`,
		`"ls"`,
		`null`,
		``,
		`{}`,
		big,
	} {
		k, v := inputSubject(call("t", input))
		wk, wv := reference(input)
		if k != wk || v != wv {
			t.Errorf("subject(%.60q) = %q, %.40q; want %q, %.40q", input, k, v, wk, wv)
		}
	}
}

// TestDenyOnly: the deny-only policy of a policy with every field set
// allows what its Allow, ReadOnly and Ask would not, denies what its Deny
// rules match, and resolves paths as it does.
func TestDenyOnly(t *testing.T) {
	asked := 0
	p := &Policy{
		Allow:    rules(t, "bash(go test:*)"),
		Deny:     rules(t, "bash(rm:*)", "edit_file(secrets/:*)"),
		ReadOnly: []string{},
		Ask: func(context.Context, llm.ToolUse, Rule) (Answer, error) {
			asked++
			return No, nil
		},
		Dir:  "/w",
		Path: func(p string) string { return strings.Replace("/w/"+p, "/w/innocent/", "/w/secrets/", 1) },
	}
	inDir := &Policy{Deny: rules(t, "edit_file(secrets/:*)"), Dir: "/w"} // no Path: Dir resolves
	tests := []struct {
		name   string
		policy *Policy
		call   llm.ToolUse
		denied bool
	}{
		{"a call no rule allows", p, call("edit_file", `{"path":"docs/a.md"}`), false},
		{"a read-only tool that p asks about", p, call("read_file", `{"path":"a"}`), false},
		{"a chain that p's allow rule does not allow", p, call("bash", `{"command":"go test ./... && ls"}`), false},
		{"a deny rule", p, call("bash", `{"command":"rm -rf x"}`), true},
		{"a deny rule in a chain", p, call("bash", `{"command":"ls; rm -rf x"}`), true},
		{"a command a deny rule may match, approved", p, call("bash", `{"command":"$cmd -rf x"}`), false},
		{"a deny rule through p's Path", p, call("edit_file", `{"path":"innocent/k"}`), true},
		{"a deny rule through p's Dir", inDir, call("edit_file", `{"path":"/w/secrets/k"}`), true},
		{"outside the denied directory", inDir, call("edit_file", `{"path":"/w/docs/k"}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.DenyOnly().Approve(t.Context(), tt.call)
			if (err != nil) != tt.denied {
				t.Errorf("err = %v, want denied %v", err, tt.denied)
			}
			if err != nil && !strings.Contains(err.Error(), "the user's rule") {
				t.Errorf("err = %v, want it to name the deny rule", err)
			}
		})
	}
	if asked != 0 {
		t.Errorf("the deny-only policy asked %d times, want never", asked)
	}
}

// TestDenyOnlyFields names every field of Policy and what DenyOnly does
// with it, so that a field added to Policy fails here until DenyOnly
// decides whether it carries it.
func TestDenyOnlyFields(t *testing.T) {
	decided := map[string]string{
		"Allow":    "dropped: every call no deny rule matches is allowed",
		"Deny":     "carried",
		"ReadOnly": "dropped, as Allow",
		"AllowAll": "set",
		"Confirm":  "dropped: a person approved the call",
		"Ask":      "replaced: the call was approved, and nobody is asked",
		"Dir":      "carried, for the deny rules' paths",
		"Path":     "carried, for the deny rules' paths",
	}
	var missed []string
	for f := range reflect.TypeFor[Policy]().Fields() {
		if _, ok := decided[f.Name]; f.IsExported() && !ok {
			missed = append(missed, f.Name)
		}
	}
	if len(missed) > 0 {
		t.Errorf("Policy has fields that DenyOnly does not know about: %v; decide in DenyOnly whether it carries them, and list them here", missed)
	}
}

// TestUnaskedError checks that a call denied for want of someone to ask
// says so by type, with the rule that would allow it, so that a caller can
// list such calls without reading the message.
func TestUnaskedError(t *testing.T) {
	tests := []struct {
		call llm.ToolUse
		want Rule
	}{
		{call("bash", `{"command":" go test ./... "}`), Rule{Tool: "bash", Arg: "go test ./..."}},
		{call("edit_file", `{"path":"a"}`), Rule{Tool: "edit_file"}},
		{call("web_fetch", `{"url":"https://Go.dev/x"}`), Rule{Tool: "web_fetch", Arg: "domain:go.dev"}},
	}
	for _, tt := range tests {
		err := (&Policy{}).Approve(context.Background(), tt.call)
		ue, ok := errors.AsType[*UnaskedError](err)
		if !ok {
			t.Errorf("%s: Approve = %v, want an *UnaskedError", tt.call.Name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, ue.Rule); diff != "" {
			t.Errorf("%s: rule (-want +got):\n%s", tt.call.Name, diff)
		}
	}
	// A deny rule's refusal is the user's choice, not a missing question.
	err := (&Policy{Deny: rules(t, "bash")}).Approve(context.Background(), call("bash", `{"command":"ls"}`))
	if _, ok := errors.AsType[*UnaskedError](err); ok || err == nil {
		t.Errorf("a deny rule's refusal = %v, want an error that is not an *UnaskedError", err)
	}
}

// TestConfirm: an ask rule asks about a call whatever would let it run,
// each time, and denies it with nobody to ask; a deny rule wins over it.
func TestConfirm(t *testing.T) {
	tests := []struct {
		name   string
		policy *Policy
		call   llm.ToolUse
		asked  int // of two calls
		wantOK bool
	}{
		{"allowed", &Policy{Allow: rules(t, "bash(rm:*)"), Confirm: rules(t, "Bash(rm:*)")}, call("bash", `{"command":"rm a"}`), 2, true},
		{"allow all", &Policy{AllowAll: true, Confirm: rules(t, "bash(rm:*)")}, call("bash", `{"command":"rm a && ls"}`), 2, true},
		{"read-only", &Policy{Confirm: rules(t, "Read(.env)")}, call("read_file", `{"path":".env"}`), 2, true},
		{"covered", &Policy{Confirm: rules(t, "Read(.env)")}, call("grep", `{"pattern":"x","path":".env"}`), 2, true},
		{"in doubt", &Policy{AllowAll: true, Confirm: rules(t, "bash(rm:*)")}, call("bash", `{"command":"$X a"}`), 2, true},
		{"other call", &Policy{AllowAll: true, Confirm: rules(t, "bash(rm:*)")}, call("bash", `{"command":"ls"}`), 0, true},
		{"denied", &Policy{AllowAll: true, Deny: rules(t, "bash(rm:*)"), Confirm: rules(t, "bash(rm:*)")}, call("bash", `{"command":"rm a"}`), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			tt.policy.Ask = func(context.Context, llm.ToolUse, Rule) (Answer, error) { asked++; return Always, nil }
			for range 2 {
				if err := tt.policy.Approve(t.Context(), tt.call); (err == nil) != tt.wantOK {
					t.Fatalf("Approve: %v, want ok %v", err, tt.wantOK)
				}
			}
			if asked != tt.asked {
				t.Errorf("asked %d times, want %d", asked, tt.asked)
			}
			tt.policy.Ask = nil
			err := tt.policy.Approve(t.Context(), tt.call)
			if tt.asked > 0 && (err == nil || !strings.Contains(err.Error(), "asks the user about this call, and there is no one to ask")) {
				t.Errorf("nobody to ask: %v", err)
			}
		})
	}
}

func TestClaudeCodeName(t *testing.T) {
	for ours, want := range map[string]string{"bash": "Bash", "read_file": "Read", "web_fetch": "WebFetch", "calculator": ""} {
		if got := ClaudeCodeName(ours); got != want {
			t.Errorf("ClaudeCodeName(%q) = %q, want %q", ours, got, want)
		}
	}
}
