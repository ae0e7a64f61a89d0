package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/agentloop/agentloop/anthropictest"
	"github.com/agentloop/agentloop/durable"
	"github.com/agentloop/agentloop/internal/cli"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

type none struct{}

// TestInterrupt presses Ctrl-C while a durable run's tool runs: by default
// the run is cancelled and the command exits 130 once the run has ended
// cancelled; with --detach the command exits 130 at once and the run goes
// on to its answer.
func TestInterrupt(t *testing.T) {
	for _, tt := range []struct {
		name   string
		detach bool
		want   string // the run's end, as the workflow reports it
	}{{"cancel", false, "cancelled"}, {"detach", true, "finished"}} {
		t.Run(tt.name, func(t *testing.T) {
			api := anthropictest.NewServer(
				anthropictest.NewStream().ToolUse("toolu_1", "hold", `{}`).Stop("tool_use"),
				anthropictest.NewStream().Text("Held.").Stop("end_turn"),
			)
			defer api.Close()
			ts := temporaltest.NewServer(temporaltest.WithT(t),
				temporaltest.WithBaseClientOptions(client.Options{DataConverter: durable.DataConverter(nil)}))
			started, release := make(chan struct{}), make(chan struct{})
			hold := tool.Must(tool.New("hold", "holds until released", func(ctx context.Context, _ none) (string, error) {
				close(started)
				select {
				case <-release:
					return "released", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}))
			reg := tool.NewRegistry(tool.Config{})
			if err := reg.Register(hold); err != nil {
				t.Fatal(err)
			}
			ts.NewWorkerWithOptions("int", func(r worker.Registry) {
				if err := durable.Register(r, durable.Config{Model: llm.New(llm.Config{BaseURL: api.URL}), Registry: reg}); err != nil {
					t.Error(err)
				}
			}, worker.Options{})

			interrupts := make(chan os.Signal, 2)
			args := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "int",
				"--session", "s-" + tt.name}
			if tt.detach {
				args = append(args, "--detach")
			}
			go func() {
				<-started
				interrupts <- os.Interrupt
			}()
			var stdout, stderr bytes.Buffer
			code := cli.RunWith(context.Background(), mode{}, append(args, "hold it"), func(string) string { return "" },
				strings.NewReader(""), &stdout, &stderr, interrupts)
			if code != 130 {
				t.Fatalf("exit %d, want 130; stderr:\n%s", code, stderr.String())
			}
			if tt.detach && !strings.Contains(stderr.String(), "detached") {
				t.Errorf("stderr does not say the run goes on:\n%s", stderr.String())
			}
			close(release)
			var res durable.Result
			if err := ts.GetDefaultClient().GetWorkflow(context.Background(), "s-"+tt.name, "").Get(context.Background(), &res); err != nil {
				t.Fatal(err)
			}
			if string(res.State) != tt.want {
				t.Errorf("the run ended %s, want %s", res.State, tt.want)
			}
		})
	}
}
