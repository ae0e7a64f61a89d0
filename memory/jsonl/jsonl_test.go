package jsonl_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
	"github.com/google/go-cmp/cmp"
)

// sample returns a history with every kind of block and two turns of usage.
func sample(t *testing.T) *memory.History {
	t.Helper()
	h := memory.New(memory.Config{Model: "claude-sonnet-4-5"})
	h.SetPrefix("be brief", nil)
	h.AppendUser(text("look at this"), llm.Image{MediaType: "image/png", Data: pngBase64(t, 40, 30)})
	h.AppendAssistant(asst(
		llm.Thinking{Thinking: "let me see", Signature: "c2ln"},
		llm.RedactedThinking{Data: "ZW5j"},
		text("calling"),
		llm.RawBlock{Type: "server_tool_use", JSON: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"q":"x"}}`)},
		use("toolu_1"),
	), llm.Usage{InputTokens: 900, OutputTokens: 40, CacheCreationInputTokens: 100, ServerToolUse: llm.ServerToolUse{WebSearchRequests: 1}})
	h.AppendUser(llm.ToolResult{ToolUseID: "toolu_1", IsError: true, Content: []llm.Block{text("boom")}})
	h.AppendAssistant(asst(llm.Text{Text: "done", Citations: []json.RawMessage{json.RawMessage(`{"type":"char_location","cited_text":"x"}`)}}),
		llm.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 1000})
	return h
}

func user(blocks ...llm.Block) llm.Message { return llm.Message{Role: llm.User, Content: blocks} }
func asst(blocks ...llm.Block) llm.Message {
	return llm.Message{Role: llm.Assistant, Content: blocks}
}
func text(s string) llm.Text { return llm.Text{Text: s} }
func use(id string) llm.ToolUse {
	return llm.ToolUse{ID: id, Name: "calc", Input: json.RawMessage(`{"x":1}`)}
}

// interrupted is the result memory's repair gives a call that got none.
func interrupted(id string) llm.Block {
	return llm.ToolResult{ToolUseID: id, IsError: true, Content: []llm.Block{text("not executed: interrupted")}}
}

func pngBase64(t testing.TB, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestSaveLoadRoundTrip(t *testing.T) {
	h := sample(t)
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := jsonl.Save(path, h); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	want := h.Snapshot()
	if n := strings.Count(string(data), "\n"); n != len(want.Entries) {
		t.Errorf("file has %d lines, want one per message (%d)", n, len(want.Entries))
	}

	got, err := loadFile(path, memory.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Snapshot()); diff != "" {
		t.Errorf("messages, usage, models and counts differ after round trip (-saved +loaded):\n%s", diff)
	}
	got.SetPrefix("be brief", nil)
	if got.Tokens() != h.Tokens() || got.Tokens() != 1015 {
		t.Errorf("Tokens after load = %d, want %d (exact count kept)", got.Tokens(), h.Tokens())
	}
	// Saving the loaded history reproduces the file byte for byte.
	path2 := filepath.Join(t.TempDir(), "again.jsonl")
	if err := jsonl.Save(path2, got); err != nil {
		t.Fatal(err)
	}
	data2, _ := os.ReadFile(path2)
	if diff := cmp.Diff(string(data), string(data2)); diff != "" {
		t.Errorf("second save differs:\n%s", diff)
	}
}

// TestEncodeDecode keeps a history in memory: the same bytes as a saved
// file, and the exact token count after decoding, as a file gives.
func TestEncodeDecode(t *testing.T) {
	h := sample(t)
	var buf bytes.Buffer
	if err := jsonl.Encode(&buf, h); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := jsonl.Save(path, h); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, buf.Bytes()) {
		t.Errorf("Encode and Save wrote different bytes:\n%s\n%s", buf.Bytes(), data)
	}
	got, err := jsonl.Decode(&buf, memory.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h.Messages(), got.Messages()); diff != "" {
		t.Errorf("messages differ after round trip (-encoded +decoded):\n%s", diff)
	}
	got.SetPrefix("be brief", nil)
	if got.Tokens() != 1015 {
		t.Errorf("Tokens after Decode = %d, want 1015 (exact count kept)", got.Tokens())
	}
	if _, err := jsonl.Decode(strings.NewReader("{\"role\":\"assistant\",\"content\":[]}\n"), memory.Config{}); !errors.As(err, new(*jsonl.LineError)) {
		t.Errorf("Decode of an assistant-first history: %v, want a *jsonl.LineError", err)
	}
}

func TestLoadBadFiles(t *testing.T) {
	h := sample(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	if err := jsonl.Save(good, h); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")

	tests := []struct {
		name     string
		content  string
		badLines []int
		want     []llm.Message
	}{
		{
			name:     "truncated last line",
			content:  strings.Join(lines[:3], "") + lines[3][:len(lines[3])/2],
			badLines: []int{4},
			want:     h.Messages()[:3],
		},
		{
			name:     "crash cut mid tool turn",
			content:  strings.Join(lines[:2], "") + lines[2][:10],
			badLines: []int{3},
			// Repair answers the interrupted call.
			want: append(h.Messages()[:2], user(interrupted("toolu_1"))),
		},
		{
			name:     "corrupt middle line",
			content:  lines[0] + "{not json}\n" + strings.Join(lines[1:], ""),
			badLines: []int{2},
			want:     h.Messages(),
		},
		{
			name:     "unknown role and garbage",
			content:  lines[0] + `{"role":"system","content":"x"}` + "\n\x00\x01\n" + lines[1] + lines[2],
			badLines: []int{2, 3},
			want:     h.Messages()[:3],
		},
		{
			// An assistant message cannot open a history: it is reported,
			// not silently dropped.
			name:     "assistant-first transcript",
			content:  lines[3] + "\n" + strings.Join(lines[:3], ""),
			badLines: []int{1},
			want:     h.Messages()[:3],
		},
		{
			name:     "blank lines are fine",
			content:  "\n" + lines[0] + "\n\n" + lines[1],
			badLines: nil,
			want:     append(h.Messages()[:2], user(interrupted("toolu_1"))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := loadFile(path, memory.Config{})
			if got == nil {
				t.Fatalf("loadFile returned no history (err %v)", err)
			}
			if diff := cmp.Diff(tt.want, got.Messages()); diff != "" {
				t.Errorf("loaded messages (-want +got):\n%s", diff)
			}
			body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": got.Messages()})
			if verr := anthropictest.CheckRequest(body); verr != nil {
				t.Errorf("loaded history invalid: %v", verr)
			}
			if tt.badLines == nil {
				if err != nil {
					t.Fatalf("Decode error = %v, want nil", err)
				}
				return
			}
			if le := (*jsonl.LineError)(nil); !errors.As(err, &le) {
				t.Fatalf("Decode error = %v, want a *jsonl.LineError", err)
			}
			var lines []int
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var le *jsonl.LineError
				if errors.As(e, &le) {
					lines = append(lines, le.Line)
					if !strings.Contains(le.Error(), fmt.Sprintf("line %d:", le.Line)) {
						t.Errorf("LineError %q does not name the line", le)
					}
				}
			}
			if diff := cmp.Diff(tt.badLines, lines); diff != "" {
				t.Errorf("bad lines (-want +got):\n%s", diff)
			}
		})
	}
}

// loadFile decodes the history file at path, as the CLI resumes a session.
func loadFile(path string, cfg memory.Config) (*memory.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return jsonl.Decode(f, cfg)
}

// TestSaveAtomic checks that a failed save leaves the old file as it was
// and no temporary file behind.
func TestSaveAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.jsonl")
	if err := jsonl.Save(path, sample(t)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	bad := memory.New(memory.Config{})
	bad.AppendUser(llm.Text{Text: "hi"})
	// A raw block of invalid JSON cannot be marshalled: Save fails midway.
	bad.AppendAssistant(asst(text("ok"), llm.RawBlock{Type: "x", JSON: json.RawMessage(`{`)}), llm.Usage{})
	if err := jsonl.Save(path, bad); err == nil {
		t.Fatal("Save of an unmarshalable history succeeded")
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Error("failed Save changed the existing file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %q, want only run.jsonl", names)
	}
}

// TestSaveMode checks that a saved history is private: a new file is
// 0600, and one that exists keeps its mode only as far as that is
// narrower. A planted 0666 file, or a symbolic link to a 0644 one, lent
// the new transcript its mode.
func TestSaveMode(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, path string)
		want  os.FileMode
	}{
		{"new", func(*testing.T, string) {}, 0o600},
		{"0640", func(t *testing.T, path string) { writeMode(t, path, 0o640) }, 0o600},
		{"planted 0666", func(t *testing.T, path string) { writeMode(t, path, 0o666) }, 0o600},
		{"0400", func(t *testing.T, path string) { writeMode(t, path, 0o400) }, 0o400},
		{"a link to a 0644 file", func(t *testing.T, path string) {
			target := path + ".target"
			writeMode(t, target, 0o644)
			if err := os.Symlink(target, path); err != nil {
				t.Skip("no symbolic links here:", err)
			}
		}, 0o600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat.jsonl")
			tt.setup(t, path)
			if err := jsonl.Save(path, sample(t)); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != tt.want {
				t.Errorf("after Save: %v (err %v), want a file of mode %v", fi.Mode(), err, tt.want)
			}
		})
	}
}

// writeMode writes an empty file at path with mode perm, past the umask.
func writeMode(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, nil, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// TestSaveThrough checks that the filter sees every byte of the file
// before it does, and that an error from its Write or its Close fails the
// save, leaving the old file as it was and no temporary file behind.
func TestSaveThrough(t *testing.T) {
	veto := errors.New("vetoed")
	var want bytes.Buffer
	if err := jsonl.Encode(&want, sample(t)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name               string
		writeErr, closeErr error
		wantErr            error
	}{
		{"passes all", nil, nil, nil},
		{"vetoes in Write", veto, nil, veto},
		{"vetoes in Close", nil, veto, veto},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "run.jsonl")
			if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f := &filter{writeErr: tt.writeErr, closeErr: tt.closeErr}
			err := jsonl.SaveThrough(path, sample(t), func(w io.Writer) io.WriteCloser { f.w = w; return f })
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("SaveThrough = %v, want %v", err, tt.wantErr)
			}
			got, _ := os.ReadFile(path)
			switch {
			case tt.wantErr != nil && string(got) != "old\n":
				t.Errorf("a vetoed save changed the file to %q", got)
			case tt.wantErr == nil && (!bytes.Equal(got, want.Bytes()) || !bytes.Equal(f.seen.Bytes(), want.Bytes())):
				t.Errorf("the filter saw %d bytes and the file holds %d, want Encode's %d", f.seen.Len(), len(got), want.Len())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("the directory holds %d files, want run.jsonl alone", len(entries))
			}
		})
	}
}

// A filter records what it is given and passes it on, or fails.
type filter struct {
	w                  io.Writer
	seen               bytes.Buffer
	writeErr, closeErr error
}

func (f *filter) Write(p []byte) (int, error) {
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	f.seen.Write(p)
	return f.w.Write(p)
}

func (f *filter) Close() error { return f.closeErr }
