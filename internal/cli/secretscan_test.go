package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
)

// TestSecretScan: a secret is found however the writes split it, in
// either of its forms, and a near miss is not; what goes on is all that
// came when none is found, and never a byte of the secret when one is.
func TestSecretScan(t *testing.T) {
	const key = `sk-ant-0123456789"abcdef` // its JSON form escapes the quote
	type scanCase struct {
		name   string
		writes []string
		want   bool
	}
	tests := []scanCase{
		{"whole in one write", []string{"xx" + key + "yy"}, true},
		{"split across two", []string{"xx" + key[:7], key[7:] + "yy"}, true},
		{"a byte at a time", strings.Split("a"+key+"b", ""), true},
		{"across three, the middle short", []string{"x" + key[:3], key[3:5], key[5:]}, true},
		{"the JSON form", []string{`{"text":"sk-ant-0123456789\"ab`, `cdef"}`}, true},
		{"at the end of a long write, after a short one", []string{"z", strings.Repeat("y", 100) + key}, true},
		{"split after a long write", []string{strings.Repeat("y", 100) + key[:7], key[7:]}, true},
		{"at the very start", []string{key[:1], key[1:]}, true},
		{"a near miss", []string{key[:len(key)-1], "X" + key[1:]}, false},
		{"none", []string{"nothing here"}, false},
		{"none, a byte at a time", strings.Split("nothing here, nor here", ""), false},
		{"nothing", nil, false},
	}
	// And the secret cut in two at every byte, in a stream longer than it.
	stream := strings.Repeat("y", 30) + key + strings.Repeat("z", 30)
	for i := range len(stream) + 1 {
		tests = append(tests, scanCase{fmt.Sprintf("cut at %d", i), []string{stream[:i], stream[i:]}, true})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSecretScan([]string{key, "short"}) // the second is too short for a secret
			var out bytes.Buffer
			w := s.through(&out)
			var err error
			for _, p := range tt.writes {
				var n int
				if n, err = w.Write([]byte(p)); err != nil {
					break
				} else if n != len(p) {
					t.Fatalf("Write = %d, want %d", n, len(p))
				}
			}
			if err == nil {
				err = w.Close()
			}
			if got := errors.Is(err, errSecretSeen); got != tt.want || err != nil && !got {
				t.Fatalf("the writes and Close returned %v; want a secret seen: %v", err, tt.want)
			}
			in := strings.Join(tt.writes, "")
			if !tt.want {
				if out.String() != in {
					t.Errorf("passed on %q, want all that came, %q", out.String(), in)
				}
				return
			}
			// Nothing from where the secret starts, in either form.
			start := strings.Index(in, key)
			if start < 0 {
				start = strings.Index(in, `sk-ant-0123456789\"abcdef`)
			}
			if !strings.HasPrefix(in, out.String()) || out.Len() > start {
				t.Errorf("passed on %q, which reaches into the secret at byte %d of %q", out.String(), start, in)
			}
		})
	}
}

// TestSessionWriteSecretAcrossBuffers saves a history whose secret falls
// across the end of a buffer on its way to the file, at each of its bytes:
// the save through the scan fails at it, and the history is saved again
// scrubbed, leaving no secret in the file and no temporary file beside it.
func TestSessionWriteSecretAcrossBuffers(t *testing.T) {
	const secret = "tok-0123456789-abcdefghij"
	const head = `{"role":"user","content":[{"type":"text","text":"` // the file's first bytes
	const boundary = 4096                                            // a bufio.Writer's, as jsonl.Encode's
	s := &session{secrets: []string{secret}}
	for start := boundary - len(secret) + 1; start < boundary; start++ {
		dir := t.TempDir()
		path := filepath.Join(dir, "chat.jsonl")
		h := memory.New(memory.Config{})
		h.AppendUser(llm.Text{Text: strings.Repeat("a", start-len(head)) + secret + " and more"})
		if err := s.write(path, h); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) || !bytes.Contains(b, []byte("a[REDACTED] and more")) {
			t.Errorf("secret at byte %d: the file is not scrubbed:\n%.200s…", start, b[start-20:])
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("secret at byte %d: the directory holds %d files, want the session's alone", start, len(entries))
		}
	}
}

// TestSecretScanEscapes: a secret is found however a JSON string spells
// it, as a tool call's input, saved as the model streamed it, may: any of
// its characters escaped, in either case of hex, a character beyond the
// BMP as a surrogate pair; and wherever the writes cut an escape. An
// escape that is not one (\\u0061 is a backslash, then "u0061") is none.
func TestSecretScanEscapes(t *testing.T) {
	secrets := []string{`sk-ant-0123456789"abcdef`, "tok/0123456789", "pass\U0001F600word-1234"}
	type scanCase struct {
		name   string
		writes []string
		want   bool
		start  int // the first byte of the secret's spelling, when want
	}
	tests := []scanCase{
		{"a letter as \\u", []string{`{"x":"sk-ant-0123456789\"\u0061bcdef"}`}, true, 6},
		{"the first letter as \\u", []string{`{"x":"\u0073k-ant-0123456789\"abcdef"}`}, true, 6},
		{"upper-case hex", []string{`{"x":"sk\u002Dant-0123456789\"abcdef"}`}, true, 6},
		{"the quote as \\u", []string{`{"x":"sk-ant-0123456789\u0022abcdef"}`}, true, 6},
		{"the slash escaped", []string{`{"x":"tok\/0123456789"}`}, true, 6},
		{"a surrogate pair", []string{`{"x":"pass\ud83d\ude00word-1234"}`}, true, 6},
		{"a surrogate pair, upper case", []string{`{"x":"pass\uD83D\uDE00word-1234"}`}, true, 6},
		{"every letter as \\u", []string{`{"x":"` + uEscape("tok/0123456789") + `"}`}, true, 6},
		{"an escaped backslash, then u0061", []string{`{"x":"sk-ant-0123456789\"\\u0061bcdef"}`}, false, 0},
		{"a lone high surrogate", []string{`{"x":"pass\ud83dword-1234"}`}, false, 0},
		{"a surrogate pair of another character", []string{`{"x":"pass\ud83d\ude01word-1234"}`}, false, 0},
		{"a near miss escaped", []string{`{"x":"tok\/012345678"}`}, false, 0},
	}
	// And each spelling cut in two at every byte.
	for _, stream := range []string{`{"x":"sk-ant-0123456789\"\u0061bcdef"}`, `{"x":"pass\ud83d\ude00word-1234"}`, `{"x":"` + uEscape("tok/0123456789") + `"}`} {
		for i := range len(stream) + 1 {
			tests = append(tests, scanCase{fmt.Sprintf("%.12s… cut at %d", stream[6:], i), []string{stream[:i], stream[i:]}, true, 6})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newSecretScan(secrets).through(&out)
			var err error
			for _, p := range tt.writes {
				if _, err = w.Write([]byte(p)); err != nil {
					break
				}
			}
			if err == nil {
				err = w.Close()
			}
			if got := errors.Is(err, errSecretSeen); got != tt.want || err != nil && !got {
				t.Fatalf("the writes and Close returned %v; want a secret seen: %v", err, tt.want)
			}
			in := strings.Join(tt.writes, "")
			switch {
			case !tt.want && out.String() != in:
				t.Errorf("passed on %q, want all that came, %q", out.String(), in)
			case tt.want && (!strings.HasPrefix(in, out.String()) || out.Len() > tt.start):
				t.Errorf("passed on %q, which reaches into the secret at byte %d of %q", out.String(), tt.start, in)
			}
		})
	}
}

// uEscape spells each byte of s, ASCII, as a \u escape.
func uEscape(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	return b.String()
}

// TestSessionWriteEscapedSecret saves a history whose tool call's input,
// kept as the model streamed it, spells a secret with escapes, or holds it
// as a key: the file holds it in no spelling, is a valid session, and says
// where the secret was.
func TestSessionWriteEscapedSecret(t *testing.T) {
	const secret = "sk-ant-0123456789abcdef"
	tests := []struct {
		name  string
		input string
	}{
		{"a letter as \\u", `{"command":"curl -H 'x-api-key: sk-ant-0123456789\u0061bcdef'"}`},
		{"every letter as \\u", `{"command":"` + uEscape(secret) + `"}`},
		{"a dash as \\u, in a nested value", `{"env":[{"KEY":"sk\u002dant-0123456789abcdef"}]}`},
		{"as a key", `{"sk-ant-0123456789abcdef":"the key"}`},
	}
	s := &session{secrets: []string{secret}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat.jsonl")
			h := memory.New(memory.Config{})
			h.AppendUser(llm.Text{Text: "run it"})
			h.AppendAssistant(llm.Message{Content: []llm.Block{
				llm.ToolUse{ID: "toolu_1", Name: "bash", Input: json.RawMessage(tt.input)},
			}}, llm.Usage{})
			if err := s.write(path, h); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := jsonl.Decode(bytes.NewReader(b), memory.Config{}); err != nil {
				t.Fatalf("the saved file is not a session: %v", err)
			}
			// The file as its strings read, every escape decoded.
			var plain strings.Builder
			for line := range bytes.Lines(b) {
				var v any
				if err := json.Unmarshal(line, &v); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&plain, "%v\n", v)
			}
			if strings.Contains(plain.String(), secret) || !strings.Contains(plain.String(), "[REDACTED]") {
				t.Errorf("the file is not scrubbed; its strings read:\n%s", plain.String())
			}
		})
	}
}

// TestSessionWriteShortSecret: a secret shorter than a real key, which
// logs scrub only as a word, is scrubbed inside a word too from a
// transcript; one the scrub cannot reach, a JSON number, fails the save,
// and the file keeps what it held.
func TestSessionWriteShortSecret(t *testing.T) {
	tests := []struct {
		name, secret string
		block        llm.Block
		fails        bool
	}{
		{"inside a word", "hunter2-pass", llm.Text{Text: "log in as my-hunter2-passport"}, false},
		{"as a word", "hunter2-pass", llm.Text{Text: "the password is hunter2-pass."}, false},
		{"a number", "12345678", llm.ToolUse{ID: "toolu_1", Name: "unlock", Input: json.RawMessage(`{"pin":12345678}`)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat.jsonl")
			s := &session{secrets: []string{tt.secret}}
			h := memory.New(memory.Config{})
			h.AppendUser(llm.Text{Text: "go"})
			if err := s.write(path, h); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			h.AppendAssistant(llm.Message{Content: []llm.Block{tt.block}}, llm.Usage{})
			err := s.write(path, h)
			after, _ := os.ReadFile(path)
			switch {
			case tt.fails && err == nil:
				t.Fatalf("the save of a secret it cannot scrub succeeded:\n%s", after)
			case tt.fails && !bytes.Equal(after, before):
				t.Errorf("a failed save changed the file:\n%s", after)
			case !tt.fails && err != nil:
				t.Fatal(err)
			case bytes.Contains(after, []byte(tt.secret)):
				t.Errorf("the file holds the secret:\n%s", after)
			case !tt.fails && !bytes.Contains(after, []byte(redacted)):
				t.Errorf("the file is not scrubbed:\n%s", after)
			}
		})
	}
}
