package memory

import (
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/google/go-cmp/cmp"
)

// TestSnapshotRestore checks the seam a store uses: a restored snapshot is
// the history it was taken of, counts included; it shares no slice with the
// snapshot; and what a store cannot vouch for is repaired, not trusted.
func TestSnapshotRestore(t *testing.T) {
	h := New(Config{Model: "claude-sonnet-4-5"})
	h.SetPrefix("be brief", nil)
	h.AppendUser(text("add"))
	h.AppendAssistant(asst(use("t1")), llm.Usage{InputTokens: 900, OutputTokens: 10})
	h.AppendUser(result("t1", "3"))
	h.AppendAssistant(asst(text("3")), llm.Usage{InputTokens: 1000, OutputTokens: 1})

	s := h.Snapshot()
	got := Restore(s, h.Config())
	if diff := cmp.Diff(s, got.Snapshot()); diff != "" {
		t.Errorf("restored snapshot (-taken +restored):\n%s", diff)
	}
	got.SetPrefix("be brief", nil)
	if got.Tokens() != h.Tokens() || got.Tokens() != 1001 {
		t.Errorf("Tokens after Restore = %d, want %d, the exact count", got.Tokens(), h.Tokens())
	}
	s.Entries[0].Message.Content[0] = text("changed")
	if diff := cmp.Diff(h.Messages(), got.Messages()); diff != "" {
		t.Errorf("a change to the snapshot reached the restored history (-want +got):\n%s", diff)
	}

	bad := Snapshot{Entries: []Entry{
		{Message: asst(text("first"))}, // an assistant message cannot open a history
		{Message: user(text("q"))},
		{Message: asst(llm.ToolUse{ID: "t1", Name: "calc", Input: json.RawMessage(`"x"`)}), Tokens: 40},
		{Message: user(text("go on"))},
	}}
	r := Restore(bad, Config{})
	want := []llm.Message{user(text("q")), asst(llm.ToolUse{ID: "t1", Name: "calc", Input: json.RawMessage(`{}`)}),
		user(interrupted("t1"), text("go on"))}
	if diff := cmp.Diff(want, r.Messages()); diff != "" {
		t.Errorf("restored from a damaged snapshot (-want +got):\n%s", diff)
	}
	for i, e := range r.Snapshot().Entries {
		if e.Tokens != 0 {
			t.Errorf("entry %d keeps the count %d across the repair, want none", i, e.Tokens)
		}
	}
}
