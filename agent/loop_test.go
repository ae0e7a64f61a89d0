package agent

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	at "github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func TestTextTurn(t *testing.T) {
	srv, client := fake(t, at.NewStream().Usage(12, 1, 0, 0).Text("Hel", "lo").Stop("end_turn"))
	a := newAgent(t, client, Config{System: "Be brief."})
	evs, res, err := collect(t, a.Stream(t.Context(), "Hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"turn_start", "text_delta", "text_delta", "usage_update", "result"}
	if diff := cmp.Diff(want, kinds(evs, true)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	wantRes := Result{Text: "Hello", State: Finished, Iterations: 1,
		Usage: llm.Usage{InputTokens: 12, OutputTokens: 2}}
	m, _ := llm.LookupModel(llm.DefaultModel)
	wantRes.CostUSD = m.Price.Cost(wantRes.Usage)
	if diff := cmp.Diff(wantRes, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	p, err := srv.Requests()[0].Params()
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != llm.DefaultModel || p.MaxTokens != llm.DefaultMaxTokens || !p.Stream {
		t.Errorf("request params = %+v", p)
	}
	msgs := a.cfg.History.Messages()
	if len(msgs) != 2 || llm.TextOf(msgs[1].Content) != "Hello" {
		t.Errorf("history = %+v", msgs)
	}
	validHistory(t, a.cfg.History)
}

func TestToolLoop(t *testing.T) {
	srv, client := fake(t,
		at.NewStream().Text("Let me add.").ToolUse("toolu_1", "calculator", `{"a": 3, "b"`, `: 5, "operation": "add"}`).Stop("tool_use"),
		at.NewStream().Text("3 + 5 = 8").Stop("end_turn"),
	)
	tt := newTools(t)
	a := newAgent(t, client, Config{Registry: tt.reg})
	evs, res, err := collect(t, a.Stream(t.Context(), "What is 3 + 5?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"turn_start", "tool_call_start", "tool_call", "tool_done", "turn_start", "result"}
	if diff := cmp.Diff(want, kinds(evs, false)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	deltas := eventsOf[ToolInputDelta](evs)
	if len(deltas) != 2 || deltas[0].ID != "toolu_1" {
		t.Errorf("tool input deltas = %+v", deltas)
	}
	call := eventsOf[ToolCall](evs)[0]
	if call.ID != "toolu_1" || call.Name != "calculator" || string(call.Input) != `{"a": 3, "b": 5, "operation": "add"}` {
		t.Errorf("tool call = %+v", call)
	}
	if r := eventsOf[ToolDone](evs)[0]; r.Content != "8" || r.IsError || r.ID != "toolu_1" || r.Name != "calculator" {
		t.Errorf("tool result = %+v", r)
	}
	if res.State != Finished || res.Text != "3 + 5 = 8" || res.Iterations != 2 {
		t.Errorf("result = %+v", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	results := reqs[1].ToolResults()
	if len(results) != 1 || results[0].ToolUseID != "toolu_1" || results[0].IsError {
		t.Errorf("tool results sent = %+v", results)
	}
	validHistory(t, a.cfg.History)
}

// TestParallelTools checks that parallel calls are keyed by index, carry
// their ids, all run, and are answered in one user message in tool_use
// order, tool_result blocks first.
func TestParallelTools(t *testing.T) {
	srv, client := fake(t,
		at.NewStream().Text("Both.").
			ToolUse("toolu_a", "echo", at.Split(`{"text":"first"}`, 4)...).
			ToolUse("toolu_b", "calculator", at.Split(`{"a":2,"b":3,"operation":"multiply"}`, 5)...).
			ToolUse("toolu_c", "echo", `{"text":"third"}`).
			Stop("tool_use"),
		at.NewStream().Text("done").Stop("end_turn"),
	)
	tt := newTools(t)
	a := newAgent(t, client, Config{Registry: tt.reg})
	_, _, err := collect(t, a.Stream(t.Context(), "go"))
	if err != nil {
		t.Fatal(err)
	}
	last := srv.Requests()[1].Messages()
	user := last[len(last)-1]
	var got []string
	for _, b := range user.Content {
		got = append(got, b.Type+":"+b.ToolUseID)
	}
	want := []string{"tool_result:toolu_a", "tool_result:toolu_b", "tool_result:toolu_c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results message (-want +got):\n%s", diff)
	}
	var texts []string
	for _, b := range user.Content {
		texts = append(texts, b.Content[0].Text)
	}
	if diff := cmp.Diff([]string{"first", "6", "third"}, texts); diff != "" {
		t.Errorf("result texts (-want +got):\n%s", diff)
	}
}

func TestErrorWrapsAPIError(t *testing.T) {
	_, client := fake(t, at.HTTPError{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"})
	a := newAgent(t, client, Config{})
	_, res, err := collect(t, a.Stream(t.Context(), "Hi"))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("err = %v, want a 401 *llm.APIError", err)
	}
	if res.State != Failed {
		t.Errorf("state = %q, want %q", res.State, Failed)
	}
	validHistory(t, a.cfg.History)
}

func TestRunIsStreamDrained(t *testing.T) {
	_, client := fake(t, at.NewStream().Text("ok").Stop("end_turn"))
	a := newAgent(t, client, Config{})
	res, err := a.Run(context.Background(), "Hi")
	if err != nil || res.Text != "ok" || res.State != Finished {
		t.Errorf("Run = %+v, %v", res, err)
	}
}

// TestToolDuration checks that a ToolResult's Duration is the call's own
// running time, not the time until the loop collected it: the tool takes
// one second, the model streams ten more seconds after the call started.
// Time is synctest's fake clock, so the durations are exact.
func TestToolDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow, err := tool.New("slow", "Take a second.", func(ctx context.Context, in struct{}) (string, error) {
			select {
			case <-time.After(time.Second): // the tool's own work, on the fake clock
				return "ok", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		reg := tool.NewRegistry(tool.Config{})
		if err := reg.Register(slow); err != nil {
			t.Fatal(err)
		}
		model := new(scripted).
			add(nil,
				llm.MessageStart{ID: "msg_1"},
				llm.ToolUseStart{Index: 0, ID: "toolu_1", Name: "slow"},
				llm.BlockStop{Index: 0},
				llm.TextDelta{Index: 1, Text: "Still writing."},
				llm.BlockStop{Index: 1},
				llm.MessageDelta{StopReason: llm.ToolUseStop},
				llm.MessageStop{}).
			add(nil, textTurn("done", llm.EndTurn)...)
		// The model keeps streaming for ten seconds after the call started.
		slowModel := llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
			return func(yield func(llm.Event, error) bool) {
				for ev, err := range model.Stream(ctx, req) {
					if _, ok := ev.(llm.TextDelta); ok {
						<-time.After(10 * time.Second)
					}
					if !yield(ev, err) {
						return
					}
				}
			}
		})
		a := newAgent(t, slowModel, Config{Registry: reg})
		evs, _, err := collect(t, a.Stream(t.Context(), "go"))
		if err != nil {
			t.Fatal(err)
		}
		res := eventsOf[ToolDone](evs)
		if len(res) != 1 || res[0].Content != "ok" || res[0].Duration != time.Second {
			t.Errorf("tool results = %+v, want one \"ok\" that took exactly 1s", res)
		}
	})
}

// TestContainer checks that the code execution container a turn reports
// is sent back, as the top-level container, in every later request of the
// run, until a turn reports another.
func TestContainer(t *testing.T) {
	// inContainer ends a tool_use turn as code execution does, with the
	// container in message_delta.
	inContainer := func(s *at.Stream, id string) *at.Stream {
		return s.EndBlock().Event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null,`+
			`"container":{"id":"`+id+`","expires_at":"2026-01-01T00:00:00Z"}},"usage":{"output_tokens":5}}`).
			Event("message_stop", `{"type":"message_stop"}`).EndWithoutStop()
	}
	srv, client := fake(t,
		inContainer(at.NewStream().ToolUse("toolu_1", "echo", `{"text":"a"}`), "container_1"),
		at.NewStream().ToolUse("toolu_2", "echo", `{"text":"b"}`).Stop("tool_use"),
		inContainer(at.NewStream().ToolUse("toolu_3", "echo", `{"text":"c"}`), "container_2"),
		at.NewStream().Text("done").Stop("end_turn"),
	)
	a := newAgent(t, client, Config{Registry: newTools(t).reg})
	if _, _, err := collect(t, a.Stream(t.Context(), "go")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range srv.Requests() {
		var body struct {
			Container *string `json:"container"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Container == nil {
			got = append(got, "(none)")
		} else {
			got = append(got, *body.Container)
		}
	}
	want := []string{"(none)", "container_1", "container_1", "container_2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("container sent per request (-want +got):\n%s", diff)
	}
}

// TestToolDoneShowsImages checks that ToolDone.Content names the images of
// a result, which have no text: an image-only result is "[image]", not a
// blank.
func TestToolDoneShowsImages(t *testing.T) {
	png := llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}
	tests := []struct {
		name    string
		content []llm.Block
		want    string
	}{
		{"image only", []llm.Block{png}, "[image]"},
		{"text and image", []llm.Block{llm.Text{Text: "a dot"}, png}, "a dot [image]"},
		{"two images", []llm.Block{png, png}, "[image] [image]"},
		{"text only", []llm.Block{llm.Text{Text: "a dot"}}, "a dot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			draw := tool.Must(tool.New("draw", "Draw.", func(context.Context, struct{}) ([]llm.Block, error) { return tt.content, nil }))
			_, client := fake(t,
				at.NewStream().ToolUse("toolu_1", "draw", `{}`).Stop("tool_use"),
				at.NewStream().Text("done").Stop("end_turn"),
			)
			a := newAgent(t, client, Config{Tools: []*tool.Tool{draw}})
			evs, _, err := collect(t, a.Stream(t.Context(), "Draw."))
			if err != nil {
				t.Fatal(err)
			}
			if got := eventsOf[ToolDone](evs)[0].Content; got != tt.want {
				t.Errorf("ToolDone.Content = %q, want %q", got, tt.want)
			}
		})
	}
}
