package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/memory/jsonl"
)

// TestCompactionFlag checks --compaction: its values, a usage error (exit
// 2, naming the flag) for a bad one or for server on a model that cannot,
// the choice in -v, and what the first request asks of the server.
func TestCompactionFlag(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		stderr    string   // a part of stderr
		wantEdits []string // the first request's edit types
	}{
		{args: []string{"--model", "claude-opus-5-5"}, stderr: "strategy=server", wantEdits: []string{llm.ClearToolUses, llm.Compact}},
		{args: []string{"--model", "claude-haiku-4-5"}, stderr: "strategy=client", wantEdits: []string{llm.ClearToolUses}},
		{args: []string{"--model", "claude-opus-4-1"}, stderr: "strategy=client"},
		{args: []string{"--model", "claude-opus-5-5", "--compaction", "client"}, stderr: "strategy=client"},
		{args: []string{"--model", "claude-opus-5-5", "--compaction", "off"}, stderr: "strategy=off"},
		{args: []string{"--model", "claude-haiku-4-5", "--compaction", "server"}, code: exitUsage, stderr: "--compaction server: claude-haiku-4-5 cannot compact on the server"},
		{args: []string{"--compaction", "smart"}, code: exitUsage, stderr: `--compaction must be server, client or off, not "smart"`},
		{args: []string{"--compaction", ""}, code: exitUsage, stderr: "--compaction needs a value, not a blank one"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			h := newHarness(t, text("ok"))
			r := h.run(strings.NewReader(""), append(append([]string{"-v"}, tc.args...), "hi")...)
			r.check(t, tc.code)
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, r.stderr)
			}
			if tc.code != 0 {
				if n := len(h.srv.Requests()); n != 0 {
					t.Errorf("%d requests made after a usage error", n)
				}
				return
			}
			if diff := cmp.Diff(tc.wantEdits, editTypes(t, h.srv.Requests()[0])); diff != "" {
				t.Errorf("edits (-want +got):\n%s", diff)
			}
		})
	}
}

func editTypes(t *testing.T, r *anthropictest.Request) []string {
	t.Helper()
	var body struct {
		CM *struct{ Edits []struct{ Type string } } `json:"context_management"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.CM == nil {
		return nil
	}
	var out []string
	for _, e := range body.CM.Edits {
		out = append(out, e.Type)
	}
	return out
}

// bigFiles writes n files of about 15,000 tokens each, big1.txt…, into a
// new directory.
func bigFiles(t *testing.T, n int) string {
	dir := t.TempDir()
	for i := 1; i <= n; i++ {
		line := fmt.Sprintf("file %d: %s\n", i, strings.Repeat("lorem ipsum ", 5))
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("big%d.txt", i)), []byte(strings.Repeat(line, 1000)), 0o600)
	}
	return dir
}

// longSession scripts a model that reads a big file again and again, then
// answers, against a fake that does what the API does with the request's
// compaction edit: once the prompt it reads reaches the trigger, the reply
// opens with a compaction block, and the usage is the compacted context's.
// It also answers the client's summary calls, and counts both kinds.
type longSession struct {
	dir                          string // where big1.txt, big2.txt… are
	reads                        int    // how many reads before the answer
	issued                       int    // reads asked for so far
	mu                           sync.Mutex
	serverCompactions, summaries int
	blocks                       []string // the summaries the server wrote
}

const summaryText = "The user asked to read big1.txt to big6.txt; files read so far: read %d"

// promptTokens is what the fake bills: four bytes a token of the prompt
// the model reads, p.Prompt.
func promptTokens(p *anthropictest.Params) int {
	n := 0
	for _, m := range p.Prompt {
		for _, b := range m.Content {
			n += len(b.Raw)
		}
	}
	return n/4 + 200 // system and tools
}

func (s *longSession) reply(r *anthropictest.Request) anthropictest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := r.Params()
	if err != nil {
		return anthropictest.HTTPError{Status: 400, Message: err.Error()}
	}
	if len(p.Tools) == 0 { // the client's summary call
		s.summaries++
		return anthropictest.NewStream().Usage(promptTokens(p), 1, 0, 0).Text("## Task\nRead big1.txt to big6.txt.").Stop("end_turn", 50)
	}
	done := 0 // reads the model can see: answered in its prompt, or noted in the summary
	for _, m := range p.Prompt {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_result":
				done++
			case "compaction":
				var c struct{ Content string }
				json.Unmarshal(b.Raw, &c)
				var n int
				fmt.Sscanf(c.Content[strings.LastIndex(c.Content, "read ")+5:], "%d", &n)
				done += n
			}
		}
	}
	tokens := promptTokens(p)
	st := anthropictest.NewStream()
	if trigger := p.CompactionTrigger; trigger > 0 && tokens >= trigger {
		s.serverCompactions++
		summary := fmt.Sprintf(summaryText, done)
		s.blocks = append(s.blocks, summary)
		st.Compaction(summary, tokens, 60, 0, 0)
		tokens = 200 + len(summary)/4 // the message iteration reads the summary
	}
	st.Usage(tokens, 1, 0, 0)
	last := p.Messages[len(p.Messages)-1]
	if last.Role == "user" && last.Text != "" && !strings.Contains(last.Text, "read big1.txt") {
		return st.Text(fmt.Sprintf("I read it %d times.", done)).Stop("end_turn", 8)
	}
	if s.issued >= s.reads {
		return st.Text("Read it enough.").Stop("end_turn", 5)
	}
	s.issued++
	input, _ := json.Marshal(map[string]string{"path": filepath.Join(s.dir, fmt.Sprintf("big%d.txt", s.issued))})
	return st.ToolUse(fmt.Sprintf("toolu_%02d", r.N), "read_file", string(input)).Stop("tool_use", 20)
}

// TestServerCompactionSession is the long session on Opus 5.5: the history
// outgrows the compaction trigger, the server compacts, the run goes on
// from the summary, the session file keeps the compaction block exactly,
// and a second run resumes from it. Every request passes the API's rules
// and carries the beta headers its edits need (the fake refuses it
// otherwise).
func TestServerCompactionSession(t *testing.T) {
	dir := bigFiles(t, 6)
	s := &longSession{dir: dir, reads: 6}
	h := newHarness(t, anthropictest.Repeat(anthropictest.ReplyFunc(s.reply)))
	session := filepath.Join(dir, "chat.jsonl")
	args := []string{"--model", "claude-opus-5-5", "--tools", "files", "--add-dir", dir, "--context-limit", "70000", "--session", session}

	r := h.run(strings.NewReader(""), append(args, "read big1.txt to big6.txt, then say so")...)
	r.check(t, 0)
	if !strings.Contains(r.stdout, "Read it enough.") {
		t.Errorf("stdout = %q, want the final answer", r.stdout)
	}
	if !strings.Contains(r.stderr, "tokens (on the server)") {
		t.Errorf("stderr does not report the server's compaction:\n%s", r.stderr)
	}
	if s.serverCompactions != 1 || s.summaries != 0 {
		t.Fatalf("%d server compactions and %d client summaries, want 1 and 0", s.serverCompactions, s.summaries)
	}
	reqs := h.srv.Requests()
	for _, rq := range reqs {
		if err := anthropictest.CheckRequest(rq.Body); err != nil {
			t.Errorf("request %d: %v", rq.N, err)
		}
		got := editTypes(t, rq)
		if len(got) > 0 && got[0] == llm.ClearThinking {
			got = got[1:] // Opus 5.5 always thinks, and the CLI asks for its text: its old turns' thinking may go too
		}
		if !cmp.Equal(got, []string{llm.ClearToolUses, llm.Compact}) {
			t.Errorf("request %d edits %v", rq.N, got)
		}
	}
	// After the compaction, requests open with the note and the block: the
	// reads it summarised are no longer sent.
	after := reqs[len(reqs)-1]
	msgs := after.Messages()
	if msgs[0].Role != "user" || msgs[1].Role != "assistant" || msgs[1].Content[0].Type != "compaction" {
		t.Errorf("request after the compaction opens with %s, then %s", msgs[0].Content[0].Raw, msgs[1].Content[0].Raw)
	}
	if strings.Contains(string(after.Body), "file 1: lorem") {
		t.Errorf("request after the compaction still sends the first file's content")
	}

	// The session file keeps the block as it came.
	f, err := os.Open(session)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved, err := jsonl.Decode(f, memory.Config{Model: "claude-opus-5-5"})
	if err != nil {
		t.Fatal(err)
	}
	block, ok := saved.Messages()[1].Content[0].(llm.RawBlock)
	var kept struct{ Type, Content string }
	if !ok || json.Unmarshal(block.JSON, &kept) != nil || kept.Type != "compaction" || kept.Content != s.blocks[0] {
		t.Fatalf("saved session's second message opens with %#v, want the compaction block", saved.Messages()[1].Content[0])
	}

	// A second run resumes from the file, after the compaction.
	n := len(reqs)
	r = h.run(strings.NewReader(""), append(args, "how many times did you read it?")...)
	r.check(t, 0)
	resumed := h.srv.Requests()[n]
	if p, _ := resumed.Params(); p.Prompt[0].Content[0].Type != "compaction" || string(p.Prompt[0].Content[0].Raw) != string(block.JSON) {
		t.Errorf("resumed request's prompt opens with %s, want the saved block %s", p.Prompt[0].Content[0].Raw, block.JSON)
	}
	if !strings.Contains(r.stdout, "I read it 6 times.") {
		t.Errorf("resumed answer %q, want the count carried by the summary", r.stdout)
	}
	if err := anthropictest.CheckRequest(resumed.Body); err != nil {
		t.Error(err)
	}
}

// TestClientCompactionFallback checks a model without server compaction:
// the requests ask only for context editing, and the client summarises
// the history when it outgrows the limit, as before.
func TestClientCompactionFallback(t *testing.T) {
	dir := bigFiles(t, 6)
	s := &longSession{dir: dir, reads: 6}
	h := newHarness(t, anthropictest.Repeat(anthropictest.ReplyFunc(s.reply)))
	r := h.run(strings.NewReader(""), "--model", "claude-haiku-4-5", "--tools", "files", "--add-dir", dir,
		"--context-limit", "40000", "read big1.txt to big6.txt, then say so")
	r.check(t, 0)
	if s.serverCompactions != 0 || s.summaries == 0 {
		t.Errorf("%d server compactions and %d client summaries, want none and some", s.serverCompactions, s.summaries)
	}
	for _, rq := range h.srv.Requests() {
		if p, _ := rq.Params(); len(p.Tools) == 0 {
			continue
		}
		if got := editTypes(t, rq); !cmp.Equal(got, []string{llm.ClearToolUses}) {
			t.Errorf("request %d edits %v, want context editing alone", rq.N, got)
		}
	}
}
