package sandbox_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tools/sandbox"
)

// confined runs script with bash under p in dir, with env added to the
// test's environment, and returns its combined output and error.
func confined(t *testing.T, p sandbox.Policy, dir, script string, env ...string) (string, error) {
	t.Helper()
	cmd, err := sandbox.Command(p, "bash", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func supported(t *testing.T) {
	t.Helper()
	if err := sandbox.Check(); err != nil {
		t.Skip(err)
	}
}

func TestWrites(t *testing.T) {
	supported(t)
	tests := []struct {
		name   string
		script string // $IN is writable, $OUT is not
		ok     bool
	}{
		{"redirect inside", `echo x > "$IN/a" && mkdir "$IN/d" && mv "$IN/a" "$IN/d/b" && ln -s b "$IN/d/c" && rm -r "$IN/d"`, true},
		{"redirect outside", `echo x > "$OUT/a"`, false},
		{"touch outside", `touch "$OUT/a"`, false},
		{"mv out", `echo x > "$IN/f" && mv "$IN/f" "$OUT/a"`, false},
		{"hard link out", `echo x > "$IN/f" && ln "$IN/f" "$OUT/a"`, false},
		{"symlink inside pointing out", `ln -s "$OUT/a" "$IN/l" && echo x > "$IN/l"`, false},
		{"child of a child", `bash -c 'sh -c "echo x > \"$OUT/a\""'`, false},
		{"setsid", `setsid -w bash -c 'echo x > "$OUT/a"'`, false},
		{"dev null", `echo x > /dev/null && cat /dev/null`, true},
		{"read outside", `cat "$OUT/readable"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, out := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(out, "readable"), []byte("r"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := confined(t, sandbox.Policy{Write: []string{in}}, in, tt.script, "IN="+in, "OUT="+out)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v; output:\n%s", err, tt.ok, got)
			}
			if _, err := os.Lstat(filepath.Join(out, "a")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file was written outside: %v", err)
			}
			if !tt.ok && !strings.Contains(got, "ermission denied") && !strings.Contains(got, "not permitted") {
				t.Errorf("the failure is not the sandbox's: %s", got)
			}
		})
	}
}

func TestTCP(t *testing.T) {
	supported(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port)
	dir := t.TempDir()
	if out, err := confined(t, sandbox.Policy{}, dir, script); err == nil || !strings.Contains(out, "ermission denied") {
		t.Errorf("connect without Net: err = %v, output %q; want permission denied", err, out)
	}
	if out, err := confined(t, sandbox.Policy{Net: true}, dir, script); err != nil {
		t.Errorf("connect with Net: %v: %s", err, out)
	}
	// bind is denied too: a server cannot be started.
	if out, err := confined(t, sandbox.Policy{}, dir, `python3 -c 'import socket; socket.socket().bind(("127.0.0.1", 0))'`); err == nil {
		t.Errorf("bind without Net succeeded: %s", out)
	}
}

// TestGoBuild builds and tests a module inside the writable directory, the
// way a model works on a Go repository, with the build cache inside it.
func TestGoBuild(t *testing.T) {
	supported(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":       "module example.com/m\n\ngo 1.22\n",
		"main.go":      "package main\n\nfunc main() { println(add(1, 2)) }\n\nfunc add(a, b int) int { return a + b }\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := confined(t, sandbox.Policy{Write: []string{dir}}, dir, goBin+" build -o m . && ./m && "+goBin+" test -count=1 .",
		"GOCACHE="+filepath.Join(dir, ".cache"), "GOTMPDIR="+dir, "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOPROXY=off")
	if err != nil {
		t.Fatalf("go build under the sandbox: %v\n%s", err, out)
	}
	if !strings.Contains(out, "3") || !strings.Contains(out, "ok") {
		t.Errorf("output %q, want the program's 3 and the test's ok", out)
	}
}

// TestGitCommit commits in a repository inside the writable directory, as
// a model does when it finishes a change.
func TestGitCommit(t *testing.T) {
	supported(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	script := `git init -q . && echo a > a && git add a && git -c user.name=a -c user.email=a@b commit -qm first && git log --format=%s`
	out, err := confined(t, sandbox.Policy{Write: []string{dir}}, dir, script, "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
	if err != nil || strings.TrimSpace(out) != "first" {
		t.Fatalf("git commit under the sandbox: %v\n%s", err, out)
	}
}

func TestBadPolicy(t *testing.T) {
	supported(t)
	if _, err := sandbox.Command(sandbox.Policy{Write: []string{"relative"}}, "bash"); err == nil {
		t.Error("a relative writable directory was accepted")
	}
	if _, err := sandbox.Command(sandbox.Policy{}, "no-such-command-anywhere"); err == nil {
		t.Error("a missing command was accepted")
	}
}
