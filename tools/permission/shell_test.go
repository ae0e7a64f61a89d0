package permission

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// bash returns a bash call of cmd.
func bash(cmd string) llm.ToolUse {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return llm.ToolUse{ID: "toolu_1", Name: "bash", Input: in}
}

// Outcomes of Approve, as parts of its error.
const (
	allowed = ""
	denied  = "the user's rule"
	doubted = "cannot be checked against the user's rule"
	asks    = "there is no one to ask"
)

// TestDenyEvasions: a deny rule holds against the shell's other spellings
// of the command it names (issue 22, item 4). Each spelling either
// matches the rule or, where the text cannot say what runs, is left to a
// person, which with nobody to ask denies it.
func TestDenyEvasions(t *testing.T) {
	p := &Policy{AllowAll: true, Deny: rules(t, "bash(git push:*)")}
	tests := []struct {
		cmd, want string
	}{
		{"git push", denied},
		{"git push origin main", denied},
		{"command git push", denied},
		{"git -C . push", denied},
		{"git -C . --git-dir=.git push", denied},
		{"nice git push", denied},
		{"nice -n 5 git push", denied},
		{"nohup git push", denied},
		{"time git push", denied},
		{"timeout 10 git push", denied},
		{"timeout -s KILL 10 git push", denied},
		{"exec git push", denied},
		{"env git push", denied},
		{"env -i FOO=1 git push", denied},
		{"FOO=1 git push", denied},
		{"sudo -u root git push", denied},
		{"git${IFS}push", doubted},
		{"if true; then git push; fi", denied},
		{"for i in 1; do git push; done", denied},
		{"f() { git push; }; f", denied},
		{"git --no-pager push", denied},
		{"'git' push", denied},
		{`"git" "push"`, denied},
		{`g\it push`, denied},
		{"$'git' push", denied},
		{"{git,push}", doubted},
		{`sh -c "git push"`, denied},
		{`bash -lc 'cd x && git push'`, denied},
		{`bash -o pipefail -c 'git push'`, denied},
		{`sh -c 'sh -c "git push"'`, denied},
		{`eval "git push"`, denied},
		{`eval git push`, denied},
		{`trap 'git push' EXIT`, denied},
		{"/usr/bin/git push", denied},
		{"./git push", denied},
		{"echo $(git push)", denied},
		{"cat <(git push)", denied},
		{"ls | xargs git push", denied},
		{"echo push | xargs git", doubted},
		{"echo push | xargs -I{} git {}", doubted},
		{"echo git | xargs -I X X push", doubted},
		{"find . -exec git push \\;", denied},
		{"find . -maxdepth 0 -execdir nice git push {} +", denied},
		{"find . -exec git {} \\;", doubted},
		{"find . -ok sh -c 'git push' \\;", denied},
		{"shopt -s expand_aliases; alias p='git push'", denied},
		{"setsid -f git push", denied},
		{"stdbuf -o0 git push", denied},
		{"git $sub", doubted},
		{"$GIT push", doubted},
		{"g* push", doubted},
		{"git -c alias.p=push p", doubted},
		{"git -c core.pager='sh -c \"git push\"' log", doubted},
		{"echo git push | bash", doubted},
		{`bash <<< "git push"`, doubted},
		{"bash -s < push.sh", doubted},
		{`bash /dev/stdin <<< "git push"`, doubted},
		{`source /dev/stdin <<< "git push"`, doubted},
		{"bash <(echo git push)", doubted},
		{`sh -c "$CMD"`, doubted},
		{"env -S 'git push'", doubted},
		{"timeout $T git push", doubted},
		{"if then fi (", doubted},
		// What the rule does not name runs.
		{"git status", allowed},
		{"git log --grep push", allowed},
		{"echo git push", allowed},
		{"git pushy", allowed},
		{"FOO=push git status", allowed},
		{"bash scripts/check.sh", allowed}, // rules do not see into scripts
	}
	for _, tt := range tests {
		err := p.Approve(t.Context(), bash(tt.cmd))
		if got := outcome(err); got != tt.want {
			t.Errorf("%s: %v; want %q", tt.cmd, err, tt.want)
		}
	}
}

// outcome names what err says, as the constants above.
func outcome(err error) string {
	if err == nil {
		return allowed
	}
	for _, o := range []string{doubted, denied, asks} {
		if strings.Contains(err.Error(), o) {
			return o
		}
	}
	return err.Error()
}

// TestAllowPrefix: a prefix allow rule allows its program with any words,
// but not those that run another program or write a file of the model's
// choosing, nor anything the parse of the whole line does not show to
// be allowed (issue 22, item 3).
func TestAllowPrefix(t *testing.T) {
	p := &Policy{Dir: "/w", Allow: rules(t, "bash(go test:*)", "bash(git status:*)", "bash(find:*)",
		"bash(npm:*)", "bash(rg:*)", "bash(ls)", "bash(tail:*)", "bash(git rebase:*)")}
	tests := []struct {
		cmd, want string
	}{
		{"go test ./...", allowed},
		{"go test -run TestX -v ./pkg/", allowed},
		{"go test ./... 2>&1", allowed},
		{"go test ./... > /dev/null 2>&1", allowed},
		{"go test ./... | tail -20", allowed},
		{"go vet ./... && go test ./...", asks},
		{"timeout 60 go test ./...", allowed},
		{"nice go test", allowed},
		{`sh -c "go test ./..."`, allowed},
		{"ls", allowed},
		{"ls -l", asks},
		{"git status", allowed},
		{"git --no-pager status", allowed},
		{"git -C sub status", allowed},
		{"find . -name '*.go'", allowed},
		{"npm test", allowed},
		{"rg TODO", allowed},
		// Exec and write options.
		{"go test -exec 'sh -c id' ./...", asks},
		{"go test -exec=/tmp/x ./...", asks},
		{"go test --toolexec /tmp/x ./...", asks},
		{"go test -c -o ~/.bashrc", asks},
		{"go test -coverprofile=/etc/x ./...", asks},
		{"go -C /tmp/evil test", asks},
		{"go test -vettool=/tmp/x", asks},
		{"git -c core.pager=sh status", asks},
		{"git --exec-path=/tmp status", asks},
		{"git -C /etc status", asks},
		{"git -C ../other status", asks},
		{"git -C ~ status", asks},
		{"git --git-dir=/tmp/evil/.git status", asks},
		{"git rebase main", allowed},
		{"git rebase -x 'rm -rf ~' main", asks},
		{"git rebase --exec=x main", asks},
		{"find . -exec rm {} +", asks},
		{"find . -delete", asks},
		{"find . -fprint /etc/x", asks},
		{"npm exec evil", asks},
		{"npm x evil", asks},
		{"rg --pre ./evil x", asks},
		// The rest of the line.
		{"go test; rm -rf ~", asks},
		{"go test && rm -rf ~", asks},
		{"go test $(rm -rf ~)", asks},
		{"go test `rm -rf ~`", asks},
		{"go test > /etc/passwd", asks},
		{"go test >> x", asks},
		{"go test &> x", asks},
		{"go test >& x", asks},
		{"go test $FLAGS", asks},
		{"GOFLAGS=-toolexec=/tmp/x go test", asks},
		{"PATH=/tmp/evil:$PATH; go test", asks},
		{"export GOFLAGS=x; go test", asks},
		{"env GOFLAGS=x go test", asks},
		{"sudo go test", asks},
		{"echo x | xargs go test", asks},
		{"go test *", asks},
		{"./go test", asks},
		{"/tmp/go test", asks},
		{"go() { rm -rf ~; }; go test", asks},
		{`sh -c "go test; rm -rf ~"`, asks},
		{"bash go-test.sh", asks},
		{"mkdir -p a/{b,c}", asks},
		{"(( x[$(id)] )); go test", asks},
		{"[[ $x -eq 1 ]] && go test", asks},
		{"go test <<EOF\n$(rm -rf ~)\nEOF", asks},
		{"go testify", asks},
		{"", asks},
		{"go test (", asks},
	}
	for _, tt := range tests {
		err := p.Approve(t.Context(), bash(tt.cmd))
		if got := outcome(err); got != tt.want {
			t.Errorf("%s: %v; want %q", tt.cmd, err, tt.want)
		}
	}
}

// TestDoubtAsks: a command a deny rule may match is asked about even
// under AllowAll and an allow rule for the whole tool; an Always answer
// allows that very text again, and nothing else.
func TestDoubtAsks(t *testing.T) {
	var asked []string
	p := &Policy{AllowAll: true, Allow: rules(t, "bash"), Deny: rules(t, "bash(git push:*)"),
		Ask: func(ctx context.Context, c llm.ToolUse, always Rule) (Answer, error) {
			asked = append(asked, always.String())
			return Always, nil
		}}
	for _, cmd := range []string{"git $sub", "git $sub", "git $other", "git push"} {
		p.Approve(t.Context(), bash(cmd))
	}
	if diff := cmp.Diff([]string{"bash(git $sub)", "bash(git $other)"}, asked); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}
}

// TestDenyNamesWrapper: a deny rule may name a wrapper or a shell itself,
// and an allow rule a script a shell runs.
func TestDenyNamesWrapper(t *testing.T) {
	tests := []struct {
		rule, cmd, want string
	}{
		{"bash(sudo:*)", "sudo rm -rf /", denied},
		{"bash(sudo:*)", "nice sudo -u root ls", denied},
		{"bash(xargs:*)", "ls | xargs rm", denied},
		{"bash(bash:*)", `bash -c "ls"`, denied},
		{"bash(bash:*)", "echo ls | bash", denied},
		{"bash(bash:*)", "/bin/bash x.sh", denied},
		{"bash(bash:*)", "sh x.sh", allowed},
		{"bash(rm -rf /)", "sudo rm -rf /", denied},
		{"bash(rm -rf /)", "rm -rf / x", allowed},
		{"bash(rm -rf /)", "rm -rf / $x", doubted},
	}
	for _, tt := range tests {
		p := &Policy{AllowAll: true, Deny: rules(t, tt.rule)}
		if got := outcome(p.Approve(t.Context(), bash(tt.cmd))); got != tt.want {
			t.Errorf("%s, %s: %q; want %q", tt.rule, tt.cmd, got, tt.want)
		}
	}
	p := &Policy{Allow: rules(t, "bash(bash scripts/check.sh:*)")}
	for cmd, want := range map[string]string{"bash scripts/check.sh -v": allowed, "bash other.sh": asks, "scripts/check.sh": asks} {
		if got := outcome(p.Approve(t.Context(), bash(cmd))); got != want {
			t.Errorf("allow bash scripts/check.sh:*, %s: %q; want %q", cmd, got, want)
		}
	}
}

// TestLiteral: words become what bash makes of them, with ~ left as
// written, and words only bash can know are not literal.
func TestLiteral(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{`'a b' "c\"d" e\ f $'g\th'`, []string{"a b", `c"d`, "e f", "g\th"}},
		{`~ ~/x ~root/y`, []string{"~", "~/x", "~root/y"}},
		{`\* "*" '?'`, []string{"*", "*", "?"}},
		{`a$b`, nil},
		{`"$b"`, nil},
		{`*.go`, nil},
		{`{a,b}`, nil},
		{`$(x)`, nil},
	}
	for _, tt := range tests {
		var got []string
		l := parseLine("cmd " + tt.src)
		for _, w := range l.cmds[0].argv()[1:] {
			if w != dyn {
				got = append(got, w)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tt.src, diff)
		}
	}
}

// TestApproveConcurrent: a Policy parses commands from many goroutines at
// once (the registry runs calls in parallel); run with -race.
func TestApproveConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := &Policy{AllowAll: true, Deny: rules(t, "bash(git push:*)")}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = p.Approve(t.Context(), bash(`'git' "push" ~/x`)) })
	}
	wg.Wait()
	for i, err := range errs {
		if outcome(err) != denied {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

// FuzzApprove: no command line makes Approve panic, and each is allowed,
// denied by the rule, or (with nobody to ask) denied as unknowable.
func FuzzApprove(f *testing.F) {
	for _, s := range []string{"git push", "a{b,c}d $(x) `y` <(z)", "find . -exec {} +", "xargs -0I{} sh -c '{}'",
		"f() { g; }; f", "[[ a =~ b ]] && (( x++ ))", "cat <<'EOF'\n$x\nEOF", "eval 'eval \"git push\"'"} {
		f.Add(s)
	}
	p := &Policy{AllowAll: true, Deny: rules(f, "bash(git push:*)")}
	f.Fuzz(func(t *testing.T, cmd string) {
		err := p.Approve(t.Context(), bash(cmd))
		if o := outcome(err); o != allowed && o != denied && o != doubted {
			t.Errorf("%q: %v", cmd, err)
		}
	})
}
