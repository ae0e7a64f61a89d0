package agent

import (
	"encoding/json"
	"strings"
	"testing"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// On each current model, a run with a tool call, adaptive thinking shown
// and an effort, then the final-answer call at the iteration limit, sends
// requests the strict fake accepts: no budget, nothing disabled, no forced
// tool choice, and the turn's thinking replayed after its own prefix.
func TestCurrentModelRequests(t *testing.T) {
	for _, model := range []string{"claude-opus-5-5", "claude-fable-5-1", "claude-sonnet-5-5", "claude-haiku-5-5"} {
		t.Run(model, func(t *testing.T) {
			srv, client := fake(t,
				at.NewStream().Block(at.Block{Type: "thinking", Signature: "sig_" + model}, "I will echo.").
					ToolUse("toolu_1", "echo", `{"text":"hi"}`).Stop("tool_use"),
				at.NewStream().Text("Done.").Stop("end_turn"))
			a := newAgent(t, client, Config{
				History:       memory.New(memory.Config{Model: model}),
				Registry:      newTools(t).reg,
				Thinking:      &llm.ThinkingConfig{Adaptive: true, Display: "summarized"},
				Effort:        "medium",
				MaxIterations: 1,
				FinalAnswer:   true,
			})
			res, err := a.Run(t.Context(), "echo hi")
			if err != nil || res.Text != "Done." {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			var body struct {
				Thinking     struct{ Type, Display string }
				ToolChoice   *struct{ Type string }  `json:"tool_choice"`
				OutputConfig struct{ Effort string } `json:"output_config"`
			}
			json.Unmarshal(reqs[1].Body, &body)
			if body.Thinking.Type != "adaptive" || body.Thinking.Display != "summarized" || body.OutputConfig.Effort != "medium" ||
				body.ToolChoice == nil || body.ToolChoice.Type != "none" {
				t.Errorf("final-answer request = %+v", body)
			}
			if b := reqs[1].Messages()[1].Content[0]; b.Type != "thinking" || b.Signature != "sig_"+model {
				t.Errorf("the turn's thinking was not sent back: %s", b.Raw)
			}
		})
	}
}

// A refused run is taken back: the history is as before it, so the first
// run's thinking is still valid after its prefix, and the next run replays
// it to the strict fake.
func TestRefusalKeepsThinkingValid(t *testing.T) {
	srv, client := fake(t,
		at.NewStream().Block(at.Block{Type: "thinking", Signature: "sig_1"}, "Easy.").Text("4").Stop("end_turn"),
		at.NewStream().Block(at.Block{Type: "thinking", Signature: "sig_2"}).Stop("refusal"),
		at.NewStream().Block(at.Block{Type: "thinking", Signature: "sig_3"}, "Also easy.").Text("6").Stop("end_turn"))
	a := newAgent(t, client, Config{History: memory.New(memory.Config{Model: "claude-opus-5-5"}),
		Thinking: &llm.ThinkingConfig{Adaptive: true, Display: "summarized"}})
	for i, want := range []State{Finished, Refused, Finished} {
		res, err := a.Run(t.Context(), []string{"2+2?", "something declined", "3+3?"}[i])
		if res.State != want {
			t.Fatalf("run %d: %s, %v; want %s", i+1, res.State, err, want)
		}
	}
	last := srv.Requests()[2].Messages()
	if len(last) != 3 || last[1].Content[0].Signature != "sig_1" {
		t.Errorf("the third request's messages = %+v, want the first run's turn with its thinking, then the new prompt", last)
	}
}

// An effort the model does not take fails the run before any request,
// saying which levels it takes, and changes nothing.
func TestEffortChecked(t *testing.T) {
	srv, client := fake(t, at.NewStream().Text("ok"))
	a := newAgent(t, client, Config{History: memory.New(memory.Config{Model: "claude-opus-4-6"}), Effort: "xhigh"})
	res, err := a.Run(t.Context(), "hi")
	if res.State != Failed || err == nil || !strings.Contains(err.Error(), `claude-opus-4-6 takes effort low, medium, high, max, not "xhigh"`) {
		t.Errorf("Run = %s, %v; want a failure naming the levels", res.State, err)
	}
	if n := len(srv.Requests()); n != 0 || len(a.cfg.History.Messages()) != 0 {
		t.Errorf("%d requests sent, %d messages kept", n, len(a.cfg.History.Messages()))
	}
}
