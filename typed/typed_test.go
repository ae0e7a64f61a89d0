package typed_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/typed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type answer struct {
	Answer int      `json:"answer"`
	Tags   []string `json:"tags,omitempty"`
}

func TestRun(t *testing.T) {
	type in struct {
		N int `json:"n"`
	}
	double := tool.Must(tool.New("double", "Double n.", func(ctx context.Context, x in) (int, error) { return 2 * x.N, nil }))
	tests := []struct {
		name    string
		replies []anthropictest.Reply
		maxIter int
		want    answer
		state   agent.State
		errIs   func(error) bool
	}{{
		name: "answer after a tool call",
		replies: []anthropictest.Reply{
			anthropictest.NewStream().ToolUse("toolu_1", "double", `{"n":21}`).Stop("tool_use"),
			anthropictest.NewStream().Text(`{"answer":42,"tags":["math"]}`).Stop("end_turn")},
		want:  answer{Answer: 42, Tags: []string{"math"}},
		state: agent.Finished,
	}, {
		name: "iteration limit before an answer",
		replies: []anthropictest.Reply{
			anthropictest.NewStream().ToolUse("toolu_1", "double", `{"n":21}`).Stop("tool_use")},
		maxIter: 1,
		state:   agent.IterationLimit,
		errIs: func(err error) bool {
			oe, ok := errors.AsType[*typed.OutputError](err)
			return ok && oe.State == agent.IterationLimit
		},
	}, {
		name:    "an API error is the run's",
		replies: []anthropictest.Reply{anthropictest.HTTPError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "bad"}},
		state:   agent.Failed,
		errIs: func(err error) bool {
			_, ok := errors.AsType[*llm.APIError](err)
			return ok
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(tt.replies...)
			defer srv.Close()
			h := memory.New(memory.Config{})
			cfg := agent.Config{Model: llm.New(llm.Config{BaseURL: srv.URL, APIKey: "test"}), Tools: []*tool.Tool{double},
				MaxIterations: tt.maxIter, History: h}
			got, res, err := typed.Run[answer](context.Background(), cfg, "What is twice 21?")
			if res.State != tt.state {
				t.Errorf("state = %s, want %s (err %v)", res.State, tt.state, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if (tt.errIs == nil) != (err == nil) || err != nil && !tt.errIs(err) {
				t.Errorf("err = %v", err)
			}
			if err != nil && len(h.Messages()) != 0 {
				t.Errorf("a failed run left %d messages in the history", len(h.Messages()))
			}
			for _, r := range srv.Requests() {
				if err := anthropictest.CheckRequest(r.Body); err != nil {
					t.Errorf("request %d: %v", r.N, err)
				}
			}
		})
	}
}

func TestRunBadType(t *testing.T) {
	_, _, err := typed.Run[chan int](context.Background(), agent.Config{}, "hi")
	if err == nil || !strings.Contains(err.Error(), "schema of chan int") {
		t.Errorf("err = %v, want one naming the type", err)
	}
}
