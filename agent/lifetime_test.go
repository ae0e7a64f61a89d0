package agent

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// TestNoHandlerOutlivesRun runs a tool whose handler ignores its context
// and so outlasts its one-second timeout. The run must not end while the
// handler runs: it waits up to toolGrace for it, and if the handler is
// still running then, the run ends and a warning names the call. Time is
// synctest's fake clock, so the waits are exact.
func TestNoHandlerOutlivesRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name     string
		work     time.Duration // how long the handler runs, ignoring ctx
		wantDone time.Duration // when the run ends
		wantWarn bool
	}{
		{"returns within the grace period", 3 * time.Second, 3 * time.Second, false},
		{"still running after it", time.Hour, time.Second + toolGrace, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var alive atomic.Int32
				release := make(chan struct{}) // ends the handler after the run, so that the bubble can end
				stuck := tool.Must(tool.New("stuck", "Work, ignoring ctx.", func(ctx context.Context, in struct{}) (string, error) {
					alive.Add(1)
					defer alive.Add(-1)
					select {
					case <-time.After(tt.work): // the tool's own work, on the fake clock
					case <-release:
					}
					return "late", nil
				}))
				stuck.Timeout = time.Second
				reg := tool.NewRegistry(tool.Config{})
				if err := reg.Register(stuck); err != nil {
					t.Fatal(err)
				}
				model := new(scripted).
					add(nil,
						llm.MessageStart{ID: "msg_1"},
						llm.ToolUseStart{Index: 0, ID: "toolu_1", Name: "stuck"},
						llm.BlockStop{Index: 0},
						llm.MessageDelta{StopReason: llm.ToolUseStop},
						llm.MessageStop{}).
					add(nil, textTurn("done", llm.EndTurn)...)
				var logs bytes.Buffer
				a := newAgent(t, model, Config{Registry: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				start := time.Now()
				for ev, err := range a.Stream(t.Context(), "go") {
					if d, ok := ev.(ToolDone); ok && (!d.IsError || !strings.Contains(d.Content, "timed out")) {
						t.Errorf("ToolDone = %+v, want the timeout result", d)
					}
					if _, ok := ev.(Result); !ok {
						continue
					}
					if err != nil {
						t.Fatalf("run failed: %v", err)
					}
					if elapsed := time.Since(start); elapsed != tt.wantDone {
						t.Errorf("the run ended after %v, want %v", elapsed, tt.wantDone)
					}
					if n, want := alive.Load(), map[bool]int32{false: 0, true: 1}[tt.wantWarn]; n != want {
						t.Errorf("%d handlers still running when the run ended, want %d", n, want)
					}
				}
				close(release)
				const warning = "still running: stuck (toolu_1)"
				if got := strings.Contains(logs.String(), warning); got != tt.wantWarn {
					t.Errorf("log has %q: %v, want %v; log:\n%s", warning, got, tt.wantWarn, logs.String())
				}
			})
		})
	}
}
