package servertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/anthropictest"
	. "github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/llm"
)

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
