package durable

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// TestParity runs the same script in process and durably and checks that
// both end in the same state with the same result and history: every stop
// reason, the limits, repeats and compaction, decided by the workflow as
// the loop decides them.
func TestParity(t *testing.T) {
	prior := priorTurns()
	tool1 := func(i int) *anthropictest.Stream {
		return anthropictest.NewStream().ToolUse(fmt.Sprintf("toolu_%d", i), "add", `{"a":1,"b":2}`).Stop("tool_use")
	}
	tests := []struct {
		name    string
		replies func() []anthropictest.Reply
		in      Input // Prompt, History and the limits; mapped onto agent.Config
	}{
		{"end_turn", func() []anthropictest.Reply {
			return []anthropictest.Reply{anthropictest.NewStream().Text("Hi.").Usage(12, 3, 0, 0).Stop("end_turn")}
		}, Input{}},
		{"max_tokens", func() []anthropictest.Reply {
			return []anthropictest.Reply{anthropictest.NewStream().Text("Cut sh").Stop("max_tokens")}
		}, Input{}},
		{"max_tokens cuts a tool call", func() []anthropictest.Reply {
			return []anthropictest.Reply{
				anthropictest.NewStream().Text("Calling.").ToolUse("toolu_1", "add", `{"a":`).Stop("max_tokens"),
				anthropictest.NewStream().Text("Sorry.").Stop("end_turn"),
			}
		}, Input{}},
		{"refusal", func() []anthropictest.Reply {
			return []anthropictest.Reply{anthropictest.NewStream().Text("I can").Stop("refusal")}
		}, Input{History: prior[:2]}},
		{"pause_turn", func() []anthropictest.Reply {
			return []anthropictest.Reply{
				// A paused turn holds a server tool's call: sent back, it is no prefill.
				anthropictest.NewStream().Text("Searching.").
					Block(anthropictest.Block{Type: "server_tool_use", ID: "srvtoolu_1", Name: "web_search"}, `{"query":"go"}`).
					Stop("pause_turn"),
				anthropictest.NewStream().Text("Found it.").Stop("end_turn"),
			}
		}, Input{}},
		{"iteration limit, final answer", func() []anthropictest.Reply {
			return []anthropictest.Reply{tool1(1), tool1(2), anthropictest.NewStream().Text("Best effort.").Stop("end_turn")}
		}, Input{MaxIterations: 2, FinalAnswer: true}},
		{"iteration limit", func() []anthropictest.Reply {
			return []anthropictest.Reply{tool1(1), tool1(2)}
		}, Input{MaxIterations: 2}},
		{"token limit", func() []anthropictest.Reply {
			return []anthropictest.Reply{anthropictest.NewStream().ToolUse("toolu_1", "add", `{"a":1,"b":2}`).Usage(500, 20, 0, 0).Stop("tool_use")}
		}, Input{MaxTotalTokens: 100}},
		{"repeats", func() []anthropictest.Reply {
			return []anthropictest.Reply{tool1(1), tool1(2), tool1(3), anthropictest.NewStream().Text("Stopping.").Stop("end_turn")}
		}, Input{}},
		{"compaction", func() []anthropictest.Reply {
			return []anthropictest.Reply{summarizing("They asked six questions and got six answers.")}
		}, Input{History: prior, ContextLimit: 400, Compaction: "client"}}, // on-demand server summaries stay in process
	}
	e := newEnv(t)
	add, _ := adder()
	e.worker(t, "parity", Config{}, add)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Prompt = "go"
			e.api.Enqueue(tt.replies()...)
			got := e.run(t, "parity-"+strings.ReplaceAll(tt.name, " ", "-"), "parity", in)
			if tt.name == "compaction" { // last: its Repeat answers every later request
				if text := llm.TextOf(got.History[0].Content); !strings.HasPrefix(text, "[This conversation was compacted") {
					t.Errorf("the history starts with %.60q, want a summary", text)
				}
			}

			api := anthropictest.NewServer(tt.replies()...)
			defer api.Close()
			h := restore(in, in.History) // as the workflow starts it
			add2, _ := adder()
			a, err := agent.New(agent.Config{Model: llm.New(llm.Config{BaseURL: api.URL}), Tools: []*tool.Tool{add2}, History: h,
				MaxIterations: in.MaxIterations, FinalAnswer: in.FinalAnswer, MaxTotalTokens: in.MaxTotalTokens})
			if err != nil {
				t.Fatal(err)
			}
			want, err := a.Run(context.Background(), in.Prompt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Result); diff != "" {
				t.Errorf("result (-in-process +durable):\n%s", diff)
			}
			if diff := cmp.Diff(h.Messages(), got.History); diff != "" {
				t.Errorf("history (-in-process +durable):\n%s", diff)
			}
			if len(api.Requests()) < 1 {
				t.Error("the in-process run sent no request")
			}
		})
	}
}

// TestNoServerSummaryInWorkflow compacts a durable run on a model whose
// history would ask the server for an on-demand summary in process: the
// workflow declines it without a request, since its activity could not
// hand the compaction block back, and the client summary compacts.
func TestNoServerSummaryInWorkflow(t *testing.T) {
	prior := priorTurns()
	e := newEnv(t, summarizing("They asked six questions and got six answers."))
	add, _ := adder()
	e.worker(t, "nosummary", Config{}, add)
	got := e.run(t, "nosummary", "nosummary", Input{Prompt: "go", Model: "claude-opus-5-5", History: prior, ContextLimit: 400})
	if text := llm.TextOf(got.History[0].Content); !strings.HasPrefix(text, "[This conversation was compacted") {
		t.Errorf("the history starts with %.60q, want the client summary", text)
	}
	for _, r := range e.api.Requests() {
		if strings.Contains(string(r.Body), `"compaction":{`) {
			t.Errorf("request %d asks for an on-demand server compaction: %.200s", r.N, r.Body)
		}
	}
}

// priorTurns is a conversation of six long questions and answers, long
// enough to compact under a small ContextLimit.
func priorTurns() []llm.Message {
	long := strings.Repeat("words and more words about the task at hand. ", 12)
	var prior []llm.Message
	for i := range 6 {
		prior = append(prior,
			llm.Message{Role: llm.User, Content: []llm.Block{llm.Text{Text: fmt.Sprintf("question %d: %s", i, long)}}},
			llm.Message{Role: llm.Assistant, Content: []llm.Block{llm.Text{Text: fmt.Sprintf("answer %d: %s", i, long)}}})
	}
	return prior
}

// summarizing answers every summary request (its system prompt asks for
// one) with summary, and every other request with "Done.".
func summarizing(summary string) anthropictest.Reply {
	return anthropictest.Repeat(anthropictest.ReplyFunc(func(r *anthropictest.Request) anthropictest.Reply {
		if p, _ := r.Params(); p != nil && strings.Contains(string(p.System), "summar") {
			return anthropictest.NewStream().Text(summary).Stop("end_turn")
		}
		return anthropictest.NewStream().Text("Done.").Stop("end_turn")
	}))
}
