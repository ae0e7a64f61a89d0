package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/apirules"
	"github.com/agentloop/agentloop/internal/testenv"
)

// TestContextManagementRequest checks the wire form of context_management
// and of the on-demand compaction parameter, and that each goes with the
// beta header its edits need, and only then: the fake refuses a request
// whose header is missing, as the API does.
func TestContextManagementRequest(t *testing.T) {
	edit := ContextEdit{Type: ClearToolUses, Trigger: &EditLimit{"input_tokens", 30000},
		Keep: &EditLimit{"tool_uses", 3}, ClearAtLeast: &EditLimit{"input_tokens", 5000}}
	compact := ContextEdit{Type: Compact, Trigger: &EditLimit{"input_tokens", 60000}}
	for _, tc := range []struct {
		name     string
		cm       []ContextEdit
		sum      bool
		wantBeta []string
		wantCM   string // context_management as sent, "" for none
		wantComp string // compaction as sent
	}{
		{name: "none"},
		{name: "editing", cm: []ContextEdit{{Type: ClearThinking, Keep: &EditLimit{"thinking_turns", 1}}, edit},
			wantBeta: []string{"context-management-2025-06-27"},
			wantCM: `{"edits":[{"type":"clear_thinking_20251015","keep":{"type":"thinking_turns","value":1}},` +
				`{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":30000},"keep":{"type":"tool_uses","value":3},"clear_at_least":{"type":"input_tokens","value":5000}}]}`},
		{name: "compact", cm: []ContextEdit{compact},
			wantBeta: []string{"compact-2026-01-12"},
			wantCM:   `{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":60000}}]}`},
		{name: "both", cm: []ContextEdit{edit, compact},
			wantBeta: []string{"context-management-2025-06-27,compact-2026-01-12"}},
		{name: "summarize", sum: true, wantBeta: []string{"compact-2026-09-04"}, wantComp: `{"type":"summarize"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := anthropictest.NewServer(anthropictest.NewStream().Text("ok"))
			defer srv.Close()
			c := New(Config{BaseURL: srv.URL, MaxAttempts: 1})
			req := Request{Model: "claude-opus-5-5", Messages: []Message{{Role: User, Content: []Block{Text{Text: "hi"}}}},
				ContextEdits: tc.cm, Summarize: tc.sum}
			for _, err := range c.Stream(context.Background(), req) {
				if err != nil {
					t.Fatal(err)
				}
			}
			got := srv.Requests()[0]
			if diff := cmp.Diff(tc.wantBeta, got.Header.Values("Anthropic-Beta")); diff != "" {
				t.Errorf("anthropic-beta (-want +got):\n%s", diff)
			}
			var body struct {
				CM   json.RawMessage `json:"context_management"`
				Comp json.RawMessage `json:"compaction"`
			}
			json.Unmarshal(got.Body, &body)
			if tc.wantCM != "" && string(body.CM) != tc.wantCM || tc.cm == nil && body.CM != nil {
				t.Errorf("context_management = %s, want %s", body.CM, tc.wantCM)
			}
			if string(body.Comp) != tc.wantComp && !(tc.wantComp == "" && body.Comp == nil) {
				t.Errorf("compaction = %s, want %s", body.Comp, tc.wantComp)
			}
			if err := anthropictest.CheckRequest(got.Body); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestCompactionBlockAssembled checks that a streamed compaction block is
// kept whole, summary, opaque metadata and signature included, so that it
// goes back as the server wrote it, and that the stop reason is known.
func TestCompactionBlockAssembled(t *testing.T) {
	stream := anthropictest.NewStream().Compaction("The user asked for X; Y is done.").
		Event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}}`).Text("Next.").Stop("compaction")
	var a Assembler
	dec := newDecoder(bytes.NewReader(stream.Bytes()), nil, nil)
	for {
		ev, err := dec.next()
		if err != nil {
			break
		}
		a.Add(ev)
	}
	if a.Turn().StopReason != CompactionStop {
		t.Errorf("stop reason %q, want %q", a.Turn().StopReason, CompactionStop)
	}
	m := a.Turn().Message
	raw, ok := m.Content[0].(RawBlock)
	if !ok || raw.Type != apirules.CompactionBlock {
		t.Fatalf("first block %#v, want a raw compaction block", m.Content[0])
	}
	var got map[string]any
	json.Unmarshal(raw.JSON, &got)
	want := map[string]any{"type": "compaction", "content": "The user asked for X; Y is done.", "signature": "sig=="}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compaction block (-want +got):\n%s", diff)
	}
}

// TestCompactionFixtures replays the recorded compaction streams: the
// block keeps the summary (and the opaque metadata) the server sent.
func TestCompactionFixtures(t *testing.T) {
	dir := testenv.Fixtures(t)
	for _, name := range []string{"vercel_compaction_block_real.sse", "pyd_compaction_cache_read_usage_real.sse", "sdkpy_HANDMADE_compaction_block.sse"} {
		t.Run(name, func(t *testing.T) {
			var a Assembler
			dec := newDecoder(bytes.NewReader(readFixture(t, dir, filepath.Base(name))), nil, nil)
			for {
				ev, err := dec.next()
				if err != nil {
					break
				}
				a.Add(ev)
			}
			m := a.Turn().Message
			raw, ok := m.Content[0].(RawBlock)
			if !ok || raw.Type != apirules.CompactionBlock {
				t.Fatalf("first block %#v, want a raw compaction block", m.Content[0])
			}
			var b struct {
				Content   *string `json:"content"`
				Encrypted *string `json:"encrypted_content"`
			}
			json.Unmarshal(raw.JSON, &b)
			if b.Content == nil || *b.Content == "" {
				t.Errorf("compaction block lost its summary: %s", raw.JSON)
			}
			if name == "sdkpy_HANDMADE_compaction_block.sse" && (b.Encrypted == nil || *b.Encrypted == "") {
				t.Errorf("compaction block lost its encrypted_content: %s", raw.JSON)
			}
			if name == "pyd_compaction_cache_read_usage_real.sse" {
				// The top-level usage is the message iteration's: the
				// compacted context, not the compaction's own tokens.
				want := Usage{InputTokens: 181, OutputTokens: 8,
					Compaction: &Usage{InputTokens: 100, OutputTokens: 83, CacheReadInputTokens: 55096}}
				if diff := cmp.Diff(want, a.Turn().Usage); diff != "" {
					t.Errorf("usage (-want +got):\n%s", diff)
				}
				// The compaction is billed: at Sonnet 4.6's prices.
				p := Price{3, 15, 3.75, 0.30}
				if got, want := p.Cost(a.Turn().Usage), (181*3+8*15+100*3+83*15+55096*0.30)/1e6; got != want {
					t.Errorf("cost %v, want %v", got, want)
				}
			}
		})
	}
}
