package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/internal/cli"
	"github.com/agentloop/agentloop/llm"
)

// TestDecidedElsewhere: a call asked about on the terminal and answered
// elsewhere (agentloop approve or deny in another terminal) withdraws the
// question, says so, and the client follows the run to its answer. A call
// answered here runs as answered.
func TestDecidedElsewhere(t *testing.T) {
	for _, tt := range []struct {
		name      string
		elsewhere bool // answered by another client, not by this one's Ask
		allow     bool
		result    string // the call's result, as shown
		note      string
	}{
		{"approved elsewhere", true, true, "42", "calculator toolu_1 was approved elsewhere"},
		{"denied elsewhere", true, false, "denied: not now", "calculator toolu_1 was decided elsewhere"},
		{"approved here", false, true, "42", ""},
		{"denied here", false, false, "denied: no", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := anthropictest.NewServer(
				anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"a":6,"b":7,"operation":"multiply"}`).Stop("tool_use"),
				anthropictest.NewStream().Text("Done.").Stop("end_turn"),
			)
			t.Cleanup(api.Close)
			env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
			queue := strings.ReplaceAll(tt.name, " ", "-")
			ts, _ := startWorker(t, env, queue, "--tools", "calculator")
			tc := cli.Temporal{HostPort: ts.GetFrontendHostPort(), Namespace: ts.GetDefaultNamespace(), TaskQueue: queue}

			var mu sync.Mutex
			var notes []string
			var withdrawn error
			p := cli.Prompt{Prompt: "what is 6*7?", Session: queue, Approve: []string{"calculator"},
				Note: func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() },
				Ask: func(ctx context.Context, call llm.ToolUse) error {
					switch {
					case !tt.elsewhere && tt.allow:
						return nil
					case !tt.elsewhere:
						return errors.New("no")
					}
					// Another terminal answers while this one asks. Not under
					// ctx: the answer's own event withdraws this question, which
					// may cancel ctx before Decide hears back.
					if err := (mode{}).Decide(t.Context(), tc, queue, call.ID, tt.allow, "not now"); err != nil {
						t.Errorf("deciding elsewhere: %v", err)
						return err
					}
					<-ctx.Done()
					mu.Lock()
					withdrawn = ctx.Err()
					mu.Unlock()
					return ctx.Err()
				}}
			var res agent.Result
			var shown []string
			for ev, err := range (mode{}).Run(context.Background(), tc, p) {
				if err != nil {
					t.Fatal(err)
				}
				switch e := ev.(type) {
				case agent.ToolDone:
					shown = append(shown, e.Content)
				case agent.Result:
					res = e
				}
			}
			if res.State != agent.Finished || res.Text != "Done." {
				t.Errorf("the run ended %s with %q, want finished with the answer", res.State, res.Text)
			}
			if !slices.Equal(shown, []string{tt.result}) {
				t.Errorf("the call's results shown: %q, want %q", shown, tt.result)
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.elsewhere && withdrawn != context.Canceled {
				t.Errorf("the question was not withdrawn (%v)", withdrawn)
			}
			if tt.note != "" && !slices.Contains(notes, tt.note) {
				t.Errorf("notes %q do not say %q", notes, tt.note)
			}
			for _, n := range notes {
				if !tt.elsewhere && strings.Contains(n, "elsewhere") || strings.HasPrefix(n, "answering") {
					t.Errorf("note %q", n)
				}
			}
		})
	}
}

// TestLateReader: a client that reads on only after the run has ended and
// gone (a question it waited on, a stalled terminal) still shows the
// answer, which the stream no longer has.
func TestLateReader(t *testing.T) {
	api := anthropictest.NewServer(
		anthropictest.NewStream().ToolUse("toolu_1", "calculator", `{"a":6,"b":7,"operation":"multiply"}`).Stop("tool_use"),
		anthropictest.NewStream().Text("It is ", "42.").Stop("end_turn"),
	)
	t.Cleanup(api.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-test"}
	ts, _ := startWorker(t, env, "late", "--tools", "calculator")
	tc := cli.Temporal{HostPort: ts.GetFrontendHostPort(), Namespace: ts.GetDefaultNamespace(), TaskQueue: "late"}
	c, err := dial(tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	p := cli.Prompt{Prompt: "what is 6*7?", Session: "late", Approve: []string{"calculator"},
		Note: func(s string) {
			if !strings.Contains(s, "waits for approval") {
				return
			}
			// Approved elsewhere, while this client stalls until the
			// run is over.
			if err := (mode{}).Decide(ctx, tc, "late", "toolu_1", true, ""); err != nil {
				t.Error(err)
			}
			if err := c.GetWorkflow(ctx, "late", "").Get(ctx, nil); err != nil {
				t.Error(err)
			}
		}}
	var text strings.Builder
	var res agent.Result
	for ev, err := range (mode{}).Run(ctx, tc, p) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case agent.TextDelta:
			text.WriteString(e.Text)
		case agent.Result:
			res = e
		}
	}
	if res.State != agent.Finished || text.String() != "It is 42." {
		t.Errorf("the run ended %s, showing %q; want finished, showing the answer", res.State, text.String())
	}
}
