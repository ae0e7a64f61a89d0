package files

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// benchTree makes a source tree of 2,000 files of 200 lines (about 8 MB),
// a .gitignore with 20 patterns, and an ignored directory of 2,000 more
// files that a search must skip.
func benchTree(b *testing.B) string {
	dir := b.TempDir()
	var ignore strings.Builder
	for i := range 19 {
		fmt.Fprintf(&ignore, "*.gen%d\n", i)
	}
	ignore.WriteString("vendor/\n")
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(ignore.String()), 0o644)
	var content strings.Builder
	for i := range 200 {
		fmt.Fprintf(&content, "func f%d(x int) int { return x * %d } // some ordinary source text\n", i, i)
	}
	for _, top := range []string{"src", "vendor"} {
		for d := range 40 {
			sub := filepath.Join(dir, top, fmt.Sprintf("pkg%d", d))
			os.MkdirAll(sub, 0o755)
			for f := range 50 {
				text := content.String()
				if f%10 == 0 {
					text += "// NEEDLE here\n" // in 200 files
				}
				os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.go", f)), []byte(text), 0o644)
			}
		}
	}
	return dir
}

// BenchmarkSearch compares grep and glob with the system's grep -rn and
// find on the same tree, each skipping the ignored directory.
func BenchmarkSearch(b *testing.B) {
	dir := benchTree(b)
	ws, err := Open(Config{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	b.Run("tool=grep", func(b *testing.B) {
		for b.Loop() {
			out, err := ws.grep(b.Context(), GrepInput{Pattern: "NEEDLE", MaxResults: 1000})
			if err != nil || strings.Count(out, "\n") != 200 {
				b.Fatalf("%v: %d lines", err, strings.Count(out, "\n"))
			}
		}
	})
	b.Run("tool=grep-rn", func(b *testing.B) {
		if _, err := exec.LookPath("grep"); err != nil {
			b.Skip("no grep")
		}
		for b.Loop() {
			out, _ := exec.Command("grep", "-rn", "--exclude-dir=vendor", "NEEDLE", dir).Output()
			if strings.Count(string(out), "\n") != 200 {
				b.Fatal("grep -rn found", strings.Count(string(out), "\n"))
			}
		}
	})
	b.Run("tool=glob", func(b *testing.B) {
		for b.Loop() {
			out, err := ws.glob(b.Context(), GlobInput{Pattern: "**/f7.go"})
			if err != nil || strings.Count(out, "\n") != 40 {
				b.Fatalf("%v: %q", err, out)
			}
		}
	})
	b.Run("tool=find", func(b *testing.B) {
		for b.Loop() {
			out, _ := exec.Command("find", dir, "-path", filepath.Join(dir, "vendor"), "-prune", "-o", "-name", "f7.go", "-print").Output()
			if strings.Count(string(out), "\n") != 40 {
				b.Fatal("find found", strings.Count(string(out), "\n"))
			}
		}
	})
}

// BenchmarkWriteFileOverwrite overwrites a 5 MiB file with 5 MiB of new
// text through the registry, as a model's write_file call arrives: what a
// user waits for after the model has streamed the input.
func BenchmarkWriteFileOverwrite(b *testing.B) {
	dir := b.TempDir()
	text := strings.Repeat("line with \"quotes\" and a tab\t and é\n", 5<<20/40)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := Open(Config{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	reg := tool.NewRegistry(tool.Config{})
	if err := reg.Register(ws.WriteFile()); err != nil {
		b.Fatal(err)
	}
	input, _ := json.Marshal(WriteInput{Path: "big.txt", Content: strings.ToUpper(text)})
	call := []llm.ToolUse{{ID: "toolu_1", Name: "write_file", Input: input}}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if res := reg.Run(b.Context(), call); res[0].IsError {
			b.Fatalf("write_file: %+v", res[0])
		}
	}
}
